//! cronshard-worker: the reconciler for the CronJobs of one bucket.
//!
//! [`sync`] is one sync of one CronJob, exactly as the in-tree controller (v2) does it, with
//! the fixes docs/design.md ("CronJob semantics") marks. It sees the cluster only through the
//! narrow [`Jobs`] trait and plain structs, so every rule is tested without a server.
//! [`bucket::run`] drives it for one bucket against a real API server.

pub mod aimd;
pub mod bucket;
pub mod cached;
pub mod client;
pub mod context;
pub mod convert;
pub mod decoded;
mod error;
pub mod events;
pub mod fence;
pub mod kube_jobs;
pub mod labeller;
pub mod leftovers;
pub mod limiter;
pub mod metrics;
pub mod namespaces;
pub mod reserve;
pub mod sync;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

pub use context::{Clock, Context, Settings};
pub use error::{Error, Result, SyncError};
pub use sync::{
    ChildJob, ConcurrencyPolicy, CreateResult, CronJobSpec, CronJobState, CronJobStatus, Event, EventType, Finished,
    Invalid, JobRef, JobRequest, Jobs, MissReason, Outcome, history_deleted, sync, sync_spread,
};

/// Resolves once `stop` is true, or its sender is gone: nothing can say stop any more, so
/// whoever started the task is tearing it down. (Waiting for `changed()` alone would be ready
/// at once, again and again, after the sender is dropped: a loop around it would spin.)
pub(crate) async fn stop_signal(stop: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

/// How often the slow pass labels CronJob-owned Jobs that lack the bucket label.
pub const JOB_LABEL_PASS_EVERY: Duration = Duration::from_secs(600);

/// The bucket workers a replica runs now, started and stopped as ownership moves.
#[derive(Debug)]
pub struct BucketSet {
    ctx: Arc<Context>,
    ready: Arc<AtomicUsize>,
    running: HashMap<u32, (tokio::sync::watch::Sender<bool>, tokio::task::JoinHandle<()>)>,
}

impl BucketSet {
    /// `ready` counts running buckets whose initial lists are in.
    pub fn new(ctx: Arc<Context>, ready: Arc<AtomicUsize>) -> Self {
        BucketSet { ctx, ready, running: HashMap::new() }
    }

    fn count(&self) {
        self.ctx.metrics.buckets_owned.set(self.running.len() as i64);
    }

    /// Starts `bucket`'s worker; `epoch` goes into every Job's audit annotation.
    pub fn start(&mut self, bucket: u32, epoch: i32) {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(bucket::run(self.ctx.clone(), bucket, epoch, stopped, self.ready.clone()));
        if let Some((old_stop, old)) = self.running.insert(bucket, (stop, task)) {
            let _ = old_stop.send(true);
            old.abort();
        }
        self.count();
    }

    /// Stops `bucket`'s worker; resolves when its in-flight syncs have finished.
    pub fn stop(&mut self, bucket: u32) -> impl Future<Output = ()> + Send + 'static {
        let running = self.running.remove(&bucket);
        self.count();
        async move {
            if let Some((stop, task)) = running {
                let _ = stop.send(true);
                let _ = task.await;
            }
        }
    }

    /// Stops every worker now, in-flight calls abandoned (fencing).
    pub fn abort_all(&mut self) {
        for (_, (stop, task)) in self.running.drain() {
            let _ = stop.send(true);
            task.abort();
        }
        self.count();
    }
}

/// What a replica runs beside its buckets, until `stop` turns true: the labellers for the
/// buckets in `owned` (as the coordinator publishes them), and the watch of the Namespaces'
/// spread defaults (buckets are not ready before its first list).
pub async fn run_replica_watches(
    ctx: Arc<Context>,
    owned: tokio::sync::watch::Receiver<BTreeSet<u32>>,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    let new = labeller::label_new_cronjobs(ctx.clone(), owned.clone(), stop.clone());
    let old = labeller::label_orphan_jobs_periodically(ctx.clone(), owned, JOB_LABEL_PASS_EVERY, stop.clone());
    let namespaces = namespaces::run_namespace_watch(ctx, stop);
    futures::join!(new, old, namespaces);
}
