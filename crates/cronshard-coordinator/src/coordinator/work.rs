//! What the coordinator drives and tells: the bucket work it starts and stops, and the
//! ownership it publishes after every step.

use std::collections::BTreeSet;

use futures::future::BoxFuture;
use tokio::time::Instant;

/// The work the coordinator starts and stops: one bucket worker per owned bucket.
pub trait Buckets: Send {
    /// Starts work on `bucket`, claimed at `epoch` (the Lease's leaseTransitions).
    fn start(&mut self, bucket: u32, epoch: i32);
    /// Stops work on `bucket`; the future resolves once its in-flight calls have finished.
    fn stop(&mut self, bucket: u32) -> BoxFuture<'static, ()>;
    /// Stops all work at once without waiting (fencing: the renew deadline has passed).
    fn abort_all(&mut self);
    /// The member Lease was renewed: bucket work may write until `deadline` (the renew
    /// deadline of that renewal) and must not write after it, whatever the loop is doing.
    fn writes_until(&mut self, deadline: Instant) {
        let _ = deadline;
    }
}

/// What the coordinator publishes after every step: for the labellers (`owned`) and for
/// `/readyz` (caught up with the assignment, renewing, not refusing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ownership {
    /// Buckets whose workers run here.
    pub owned: BTreeSet<u32>,
    /// Buckets the assignment gives this replica.
    pub desired: BTreeSet<u32>,
    /// The member Lease was renewed within the renew deadline.
    pub healthy: bool,
    pub refused: Option<String>,
}

impl Ownership {
    /// Caught up: renewing, not refusing, owning exactly what the assignment says.
    pub fn settled(&self) -> bool {
        self.healthy && self.refused.is_none() && self.owned == self.desired
    }
}
