//! cronshard-worker: the reconciler for the CronJobs of one bucket.
//!
//! [`sync`] is one sync of one CronJob, exactly as the in-tree controller (v2) does it, with
//! the fixes shared/spec/cronjob-semantics.md marks. It sees the cluster only through the
//! narrow [`Jobs`] trait and plain structs, so every rule is tested without a server.

pub mod sync;

pub use sync::{
    ChildJob, ConcurrencyPolicy, CreateResult, CronJobSpec, CronJobState, CronJobStatus, Event, EventType, Finished,
    Invalid, JobRef, JobRequest, Jobs, Outcome, sync,
};
