//! The worker's bucket set and write fence behind the coordinator's `Buckets`.

use cronshard_coordinator::Buckets;
use cronshard_worker::BucketSet;
use cronshard_worker::api::fence::Fence;
use futures::FutureExt;
use futures::future::BoxFuture;

/// The worker's bucket set and write fence, driven by the coordinator.
#[derive(Debug)]
pub(crate) struct Workers(pub(crate) BucketSet, pub(crate) Fence);

impl Buckets for Workers {
    fn start(&mut self, bucket: u32, epoch: i32) {
        self.0.start(bucket, epoch);
    }
    fn stop(&mut self, bucket: u32) -> BoxFuture<'static, ()> {
        self.0.stop(bucket).boxed()
    }
    fn abort_all(&mut self) {
        self.1.close();
        self.0.abort_all();
    }
    fn writes_until(&mut self, deadline: tokio::time::Instant) {
        // The fence is checked in the HTTP layer against the process clock.
        self.1.open_until(deadline.into_std());
    }
}
