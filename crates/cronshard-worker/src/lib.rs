//! cronshard-worker: the reconciler for the CronJobs of one bucket.
//!
//! [`sync`] is one sync of one CronJob, exactly as the in-tree controller (v2) does it, with
//! the fixes shared/spec/cronjob-semantics.md marks. It sees the cluster only through the
//! narrow [`Jobs`] trait and plain structs, so every rule is tested without a server.
//! [`bucket::run`] drives it for one bucket against a real API server.

pub mod bucket;
pub mod client;
pub mod context;
pub mod convert;
mod error;
mod kube_jobs;
pub mod labeller;
pub mod limiter;
pub mod metrics;
pub mod sync;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

pub use context::{Clock, Context, Settings};
pub use error::{Error, Result};
pub use sync::{
    ChildJob, ConcurrencyPolicy, CreateResult, CronJobSpec, CronJobState, CronJobStatus, Event, EventType, Finished,
    Invalid, JobRef, JobRequest, Jobs, Outcome, sync,
};

/// How often the slow pass labels CronJob-owned Jobs that lack the bucket label.
pub const JOB_LABEL_PASS_EVERY: Duration = Duration::from_secs(600);

/// Runs every bucket of this replica (a single replica owns them all) plus the labellers,
/// until `stop` turns true. `ready` counts buckets whose initial lists are in.
pub async fn run_all_buckets(ctx: Arc<Context>, stop: tokio::sync::watch::Receiver<bool>, ready: Arc<AtomicUsize>) {
    let buckets = ctx.settings.buckets.get();
    ctx.metrics.buckets_owned.set(i64::from(buckets));
    let mut tasks = Vec::new();
    for b in 0..buckets {
        tasks.push(tokio::spawn(bucket::run(ctx.clone(), b, 0, stop.clone(), ready.clone())));
    }
    tasks.push(tokio::spawn(labeller::label_new_cronjobs(ctx.clone(), |_| true, stop.clone())));
    tasks.push(tokio::spawn(labeller::label_orphan_jobs_periodically(
        ctx.clone(),
        |_| true,
        JOB_LABEL_PASS_EVERY,
        stop,
    )));
    for task in tasks {
        if let Err(e) = task.await {
            tracing::error!(error = %e, "worker task failed");
        }
    }
    ctx.metrics.buckets_owned.set(0);
}
