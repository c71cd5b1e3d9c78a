//! The library's error type.

/// What the library's commands fail with; each message names the flag or file at fault.
#[derive(Debug, thiserror::Error)]
pub enum Error {
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

impl Error {
    /// The variant as a metric or log label.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Input(_) => "Input",
            Error::Setting(_) => "Setting",
            Error::Chart(_) => "Chart",
            Error::Report(_) => "Report",
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
