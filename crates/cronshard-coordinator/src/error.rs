//! The coordinator's error type.

/// What stops the coordinator before it runs, or a status read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Leases could not be listed (`cronshard status`).
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// A setting that cannot work: timings out of order, an identity that cannot name a
    /// Lease, a namespace that does not exist.
    #[error("invalid setting: {0}")]
    Settings(String),
}

impl Error {
    /// The variant as a metric or log label.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(_) => "Kube",
            Error::Settings(_) => "Settings",
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
