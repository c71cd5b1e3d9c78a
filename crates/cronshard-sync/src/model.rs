//! What a sync reads and returns: plain structs of a CronJob, its Jobs and the outcome, and
//! the narrow [`Jobs`] trait through which it reaches the cluster.

use cronshard_types::{DstPolicy, Timestamp};

use crate::error::SyncError;

/// `spec.concurrencyPolicy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConcurrencyPolicy {
    #[default]
    Allow,
    Forbid,
    Replace,
}

/// The parts of `spec` a sync reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CronJobSpec {
    pub schedule: String,
    pub time_zone: Option<String>,
    pub starting_deadline_seconds: Option<i64>,
    pub concurrency_policy: ConcurrencyPolicy,
    pub suspend: bool,
    /// `None` keeps every successful Job (the apiserver defaults it to 3).
    pub successful_jobs_history_limit: Option<i32>,
    /// `None` keeps every failed Job (the apiserver defaults it to 1).
    pub failed_jobs_history_limit: Option<i32>,
}

/// A reference in `status.active`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRef {
    pub name: String,
    pub uid: String,
    pub resource_version: String,
}

/// `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CronJobStatus {
    pub active: Vec<JobRef>,
    pub last_schedule_time: Option<Timestamp>,
    pub last_successful_time: Option<Timestamp>,
}

/// What the controller knows of one CronJob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronJobState {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub creation_timestamp: Timestamp,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    pub spec: CronJobSpec,
    pub status: CronJobStatus,
    /// Runs at or before this time have been reported (as missed, or as skipped on purpose)
    /// by this controller already; the worker remembers it between syncs, so a miss is
    /// counted once.
    pub reported_through: Option<Timestamp>,
    /// How the replica reads schedules around daylight-saving transitions (`--dst-policy`).
    pub dst_policy: DstPolicy,
    /// When `spec.schedule` or `spec.timeZone` last changed, as far as the API server says
    /// (the `managedFields` entry that owns them): fire times before it are not runs of this
    /// schedule, so they are neither started nor counted missed.
    pub schedule_changed_at: Option<Timestamp>,
}

/// How a Job ended: a `Complete` or `Failed` condition with status True.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finished {
    Complete,
    Failed,
}

/// A Job, as far as a sync cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildJob {
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    /// The uid in the controller ownerReference, if any.
    pub controller_uid: Option<String>,
    pub creation_timestamp: Timestamp,
    pub start_time: Option<Timestamp>,
    pub completion_time: Option<Timestamp>,
    pub finished: Option<Finished>,
    /// Started by hand (`kubectl create job --from=cronjob/NAME`, annotated
    /// `cronjob.kubernetes.io/instantiate: manual`): not one of the schedule's runs.
    pub manual: bool,
}

impl ChildJob {
    pub(crate) fn job_ref(&self) -> JobRef {
        JobRef { name: self.name.clone(), uid: self.uid.clone(), resource_version: self.resource_version.clone() }
    }
}

/// A Job to create for a run; the caller builds it from `spec.jobTemplate`, with the owner
/// reference, the bucket label and the audit annotation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRequest {
    pub name: String,
    pub scheduled: Timestamp,
    /// Value of `batch.kubernetes.io/cronjob-scheduled-timestamp`.
    pub scheduled_timestamp: String,
}

/// The answer to a create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CreateResult {
    Created(ChildJob),
    AlreadyExists,
    /// Refused for good (422 Invalid, 403): retrying the same request cannot help.
    Rejected(String),
}

/// The narrow I/O a sync needs. Errors are transient (the sync is retried with backoff).
pub trait Jobs {
    type Error: std::error::Error + Send + Sync + 'static;
    /// A live GET; `None` is NotFound.
    fn get(&mut self, name: &str) -> impl Future<Output = Result<Option<ChildJob>, Self::Error>>;
    /// DELETE with Background propagation.
    fn delete(&mut self, name: &str) -> impl Future<Output = Result<(), Self::Error>>;
    fn create(&mut self, request: &JobRequest) -> impl Future<Output = Result<CreateResult, Self::Error>>;
}

/// Why a scheduled run did not start (the `reason` of `cronshard_missed_runs_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::VariantArray)]
pub enum MissReason {
    /// Its `startingDeadlineSeconds` passed before it could start (upstream's Event reason).
    MissSchedule,
    /// A later run was due too, and only the most recent missed run starts (upstream's rule).
    Superseded,
    /// As `Superseded`, with more than 100 missed at once (upstream's Event reason).
    TooManyMissedTimes,
}

impl MissReason {
    /// Every reason, so dashboards see every series from the start.
    pub const ALL: &'static [MissReason] = <Self as strum::VariantArray>::VARIANTS;

    /// The `reason` label: the variant's name.
    pub fn label(self) -> &'static str {
        self.into()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

/// A Kubernetes Event to record on the CronJob, with upstream's reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventType,
    pub reason: &'static str,
    pub message: String,
}

/// Why a CronJob cannot run at all (counted by a metric, labelled by variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::IntoStaticStr, strum::VariantArray)]
pub enum Invalid {
    UnknownTimeZone,
    UnparseableSchedule,
    /// Parses, but never fires (`0 0 30 2 *`).
    InvalidSchedule,
}

impl Invalid {
    /// Every reason, so dashboards see every series from the start.
    pub const ALL: &'static [Invalid] = <Self as strum::VariantArray>::VARIANTS;

    /// The `reason` label: the variant's name.
    pub fn label(self) -> &'static str {
        self.into()
    }
}

/// What one sync did and wants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The status to write (only if `status_changed`), at most once per sync.
    pub status: CronJobStatus,
    pub status_changed: bool,
    pub events: Vec<Event>,
    /// When to sync again; `None` when only a change to the object can help.
    pub requeue_at: Option<Timestamp>,
    /// The Job created by this sync and its scheduled time (for the skew histogram).
    pub created: Option<(ChildJob, Timestamp)>,
    /// A failure: retry with backoff, but no later than `requeue_at`.
    pub error: Option<SyncError>,
    pub invalid: Option<Invalid>,
    /// Runs this sync found missed, by reason (counted once: see `reported_through`).
    pub missed: Vec<(MissReason, u64)>,
    /// The new `reported_through` for the worker to remember.
    pub reported_through: Option<Timestamp>,
    /// Finished Jobs beyond the history limits, oldest first: the caller deletes them after
    /// the sync, as upstream cleans up after its create, and in the background, so that a
    /// due create never waits for history cleanup (see [`history_deleted`]). Each with its
    /// uid, so a later delete can only remove this very Job.
    pub history: Vec<JobRef>,
}

/// The Event upstream records for a Job that history cleanup deleted (`Ok`), or failed to
/// delete (`Err` with the error; retried on the CronJob's next sync).
pub fn history_deleted(name: &str, result: Result<(), String>) -> Event {
    match result {
        Ok(()) => Event { kind: EventType::Normal, reason: "SuccessfulDelete", message: format!("Deleted job {name}") },
        Err(e) => Event { kind: EventType::Warning, reason: "FailedDelete", message: format!("Deleted job: {e}") },
    }
}
