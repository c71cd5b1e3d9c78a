//! The error type of the binary's plan and shadow mode.

/// What `cronshard plan` and `cronshard shadow` fail with; each message names the flag or file at fault.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The CronJobs file cannot be read or holds no CronJobs.
    #[error("{0}")]
    Input(String),
    /// A flag's value cannot work.
    #[error("{0}")]
    Setting(String),
    /// A chart could not be drawn.
    #[error("drawing the chart: {0}")]
    Chart(String),
    /// Shadow mode's report could not be written.
    #[error("writing the shadow report: {0}")]
    Report(String),
}

/// `Result` with [`Error`].
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;
