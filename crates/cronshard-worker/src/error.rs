//! The worker's own error type (a sync reports its failures as `cronshard_sync::SyncError`).

/// Failures of the worker's own machinery. The variant's name is its metric or log label.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr)]
pub enum Error {
    #[error("cannot build the client: {source}")]
    Client {
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}

impl Error {
    /// The variant as a metric or log label.
    pub fn metric_label(&self) -> &'static str {
        self.into()
    }

    pub(crate) fn client(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Client { source: Box::new(error) }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
