//! Why one sync of one CronJob failed.

use std::sync::Arc;
use std::time::Duration;

/// The error a request failed with, kept whole as a [`SyncError`]'s source (shared, so an
/// outcome can be cloned).
pub type Cause = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// Why one sync of one CronJob failed: it is retried with backoff, never later than its
/// next run. The variant's name is the `reason` label of `cronshard_sync_errors_total`.
#[derive(Clone, Debug, thiserror::Error, strum::IntoStaticStr, strum::VariantNames)]
pub enum SyncError {
    /// A live GET of a Job failed.
    #[error("get job {name}: {source}")]
    GetJob { name: String, source: Cause },
    /// Replace could not delete the running Job.
    #[error("could not replace job {name}: {source}")]
    DeleteJob { name: String, source: Cause },
    /// The create call failed (a transport error or a 5xx).
    #[error("create job {name}: {source}")]
    CreateJob { name: String, source: Cause },
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
    #[error("status update: {source}")]
    StatusWrite { source: Cause },
    /// After a 409 on the status write, the fresh object could not be read.
    #[error("re-read after conflict: {source}")]
    StatusReread { source: Cause },
    /// A status write had no answer in time after it was sent (a sync's own requests that
    /// time out fail as `GetJob`, `DeleteJob` or `CreateJob`).
    #[error("{what} did not finish within {after:?}")]
    Timeout { what: &'static str, after: Duration },
}

impl SyncError {
    /// The `reason` label of `cronshard_sync_errors_total`: the variant's name.
    pub fn metric_label(&self) -> &'static str {
        self.into()
    }

    /// Every label, so dashboards see every series from the start.
    pub fn labels() -> &'static [&'static str] {
        <Self as strum::VariantNames>::VARIANTS
    }

    /// Wraps the error a request failed with.
    pub fn cause(error: impl std::error::Error + Send + Sync + 'static) -> Cause {
        Arc::new(error)
    }
}

/// Two errors are equal when they are the same kind and say the same (the sources are
/// compared by their text: an outcome is compared in tests, a request error has no equality).
impl PartialEq for SyncError {
    fn eq(&self, other: &Self) -> bool {
        self.metric_label() == other.metric_label() && self.to_string() == other.to_string()
    }
}

impl Eq for SyncError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("m")]
    struct Failed;

    #[test]
    fn every_sync_error_has_a_label_present_from_the_start() {
        let name = String::from("j");
        let all = [
            SyncError::GetJob { name: name.clone(), source: SyncError::cause(Failed) },
            SyncError::DeleteJob { name: name.clone(), source: SyncError::cause(Failed) },
            SyncError::CreateJob { name: name.clone(), source: SyncError::cause(Failed) },
            SyncError::CreateRefused { name: name.clone(), message: "m".into() },
            SyncError::ExistingJobUnreadable { name: name.clone() },
            SyncError::NameTaken { name },
            SyncError::StatusWrite { source: SyncError::cause(Failed) },
            SyncError::StatusReread { source: SyncError::cause(Failed) },
            SyncError::Timeout { what: "status write", after: Duration::from_secs(30) },
        ];
        let labels: Vec<&str> = all.iter().map(SyncError::metric_label).collect();
        assert_eq!(labels, SyncError::labels());
    }

    #[test]
    fn a_request_error_is_kept_as_the_source() {
        let error = SyncError::GetJob { name: "j".into(), source: SyncError::cause(Failed) };
        let source = std::error::Error::source(&error).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("m"));
        assert_eq!(error.to_string(), "get job j: m");
    }
}
