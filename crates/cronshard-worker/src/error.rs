//! The worker's error type.

/// Failures of the worker's own machinery (syncs report theirs in [`crate::Outcome`]).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("cannot build the client: {0}")]
    Client(String),
    #[error("invalid setting: {0}")]
    Settings(String),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
