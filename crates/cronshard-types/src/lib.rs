//! cronshard's pure core: everything cronshard computes about time, with no I/O and no clock reads.
//!
//! Time is always a parameter ([`jiff::Timestamp`], or an `Instant` for the log throttle); nothing here reads a clock, talks to
//! Kubernetes or spawns tasks, so every rule can be tested as a pure function.

pub mod bucket;
mod civil;
pub mod cronjob;
mod error;
pub mod keys;
pub mod schedule;
pub mod selector;
pub mod spread;
pub mod throttle;
pub mod zone;

pub use bucket::{BucketFunction, bucket_of_name, bucket_of_uid, shard_selector};
pub use cronjob::{CronJobSchedule, Due};
pub use error::{Error, FieldError, Result};
pub use jiff::Timestamp;
pub use schedule::{DstPolicy, Field, Schedule};
pub use zone::Zone;
