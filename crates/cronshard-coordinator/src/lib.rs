//! cronshard-coordinator: replicas share the buckets through `coordination.k8s.io/v1` Leases.
//!
//! [`assign`] is the pure assignment (bounded-load rendezvous), [`membership`] the index of
//! Leases that feeds it (time passed in), [`lease`] the objects, and [`coordinator`] the loop
//! that renews this replica's member Lease, claims and releases bucket Leases with
//! resourceVersion preconditions, hands buckets over in two phases and fences itself when it
//! cannot renew.

pub mod assign;
pub mod coordinator;
mod error;
pub mod lease;
pub mod membership;
pub mod metrics;
pub mod status;

pub use coordinator::{Buckets, Ownership, Settings, WallClock, run};
pub use error::{Error, Result};
pub use membership::{Membership, Timing, View};
pub use metrics::Metrics;
