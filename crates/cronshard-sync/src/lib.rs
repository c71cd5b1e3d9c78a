//! cronshard-sync: one sync of one CronJob, exactly as the in-tree controller (v2) does it,
//! with the fixes docs/design.md ("CronJob semantics") marks.
//!
//! A sync sees the cluster only through the narrow [`Jobs`] trait and plain structs, with
//! the time passed in, so every rule is tested without a server, a runtime or a clock.

mod error;
mod history;
mod missed;
mod model;
mod rules;

pub use error::{Cause, SyncError};
pub use missed::MISSED_COUNT_CAP;
pub use model::{
    ChildJob, ConcurrencyPolicy, CreateResult, CronJobSpec, CronJobState, CronJobStatus, Event, EventType, Finished,
    Invalid, JobRef, JobRequest, Jobs, MissReason, Outcome, history_deleted,
};
pub use rules::{sync, sync_spread};
