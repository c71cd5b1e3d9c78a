//! The worker's error types: its machinery's, and one sync's.

use std::time::Duration;

/// Failures of the worker's own machinery (syncs report theirs as [`SyncError`]).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot build the client: {0}")]
    Client(String),
}

impl Error {
    /// The variant as a metric or log label.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Client(_) => "Client",
        }
    }
}

/// Why one sync of one CronJob failed: it is retried with backoff, never later than its
/// next run. The variant is the `reason` label of `cronshard_sync_errors_total`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SyncError {
    /// A live GET of a Job failed.
    #[error("get job {name}: {message}")]
    GetJob { name: String, message: String },
    /// Replace could not delete the running Job.
    #[error("could not replace job {name}: {message}")]
    DeleteJob { name: String, message: String },
    /// The create call failed (a transport error or a 5xx).
    #[error("create job {name}: {message}")]
    CreateJob { name: String, message: String },
    /// The API server refused the create (a quota, RBAC, an admission webhook).
    #[error("create job {name} refused: {message}")]
    CreateRefused { name: String, message: String },
    /// The run's Job exists (AlreadyExists) but a GET does not find it.
    #[error("job {name} already exists but cannot be read")]
    ExistingJobUnreadable { name: String },
    /// The run's Job name is taken by a Job this CronJob does not control.
    #[error("job {name} exists and is not controlled by this CronJob")]
    NameTaken { name: String },
    /// The status write failed.
    #[error("status update: {0}")]
    StatusWrite(String),
    /// After a 409 on the status write, the fresh object could not be read.
    #[error("re-read after conflict: {0}")]
    StatusReread(String),
    /// A status write had no answer in time after it was sent (a sync's own requests that
    /// time out fail as `GetJob`, `DeleteJob` or `CreateJob`).
    #[error("{what} did not finish within {after:?}")]
    Timeout { what: &'static str, after: Duration },
}

impl SyncError {
    /// All labels, so dashboards see every series from the start.
    pub const LABELS: [&'static str; 9] = [
        "GetJob",
        "DeleteJob",
        "CreateJob",
        "CreateRefused",
        "ExistingJobUnreadable",
        "NameTaken",
        "StatusWrite",
        "StatusReread",
        "Timeout",
    ];

    /// The `reason` label of `cronshard_sync_errors_total`.
    pub fn metric_label(&self) -> &'static str {
        match self {
            SyncError::GetJob { .. } => "GetJob",
            SyncError::DeleteJob { .. } => "DeleteJob",
            SyncError::CreateJob { .. } => "CreateJob",
            SyncError::CreateRefused { .. } => "CreateRefused",
            SyncError::ExistingJobUnreadable { .. } => "ExistingJobUnreadable",
            SyncError::NameTaken { .. } => "NameTaken",
            SyncError::StatusWrite(_) => "StatusWrite",
            SyncError::StatusReread(_) => "StatusReread",
            SyncError::Timeout { .. } => "Timeout",
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sync_error_has_a_label_present_from_the_start() {
        let (name, message) = (String::from("j"), String::from("m"));
        let all = [
            SyncError::GetJob { name: name.clone(), message: message.clone() },
            SyncError::DeleteJob { name: name.clone(), message: message.clone() },
            SyncError::CreateJob { name: name.clone(), message: message.clone() },
            SyncError::CreateRefused { name: name.clone(), message: message.clone() },
            SyncError::ExistingJobUnreadable { name: name.clone() },
            SyncError::NameTaken { name },
            SyncError::StatusWrite(message.clone()),
            SyncError::StatusReread(message),
            SyncError::Timeout { what: "status write", after: Duration::from_secs(30) },
        ];
        let labels: Vec<&str> = all.iter().map(SyncError::metric_label).collect();
        assert_eq!(labels, SyncError::LABELS);
    }
}
