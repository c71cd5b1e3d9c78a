//! cronshard-worker: a replica's runtime around the sync rules of `cronshard-sync`.
//!
//! [`bucket`] runs the CronJobs of one bucket (its watches, timers, rounds of syncs and
//! status writes); [`api`] is the replica's way to the API server (the instrumented client,
//! the write fence, the limiter with its adaptive rate and herd reservations); [`objects`]
//! keeps and converts what the watches deliver; [`watches`] are the replica-wide watches
//! (labellers, leftovers, Namespace spread defaults); [`events`] writes Kubernetes Events.
//! [`Context`] is what all of them share, built once per replica.

pub mod api;
pub mod bucket;
pub mod clock;
pub mod context;
mod error;
pub mod events;
pub mod metrics;
pub mod objects;
pub mod sharding;
mod stop;
pub mod watches;

pub use bucket::set::BucketSet;
pub use clock::Clock;
pub use context::{Context, Settings};
pub use error::{Error, Result};
