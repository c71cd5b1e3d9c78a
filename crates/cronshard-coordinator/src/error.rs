//! The coordinator's error type.

/// What stops the coordinator; its variants double as log and metric labels.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("invalid setting: {0}")]
    Settings(String),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
