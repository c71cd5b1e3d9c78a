//! What a replica watches beside its buckets: new CronJobs and orphan Jobs to label, the
//! CronJobs that cannot be labelled, and the Namespaces' spread defaults.

pub mod labeller;
pub mod leftovers;
pub mod namespaces;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crate::context::Context;

/// How often the slow pass labels CronJob-owned Jobs that lack the bucket label.
pub const JOB_LABEL_PASS_EVERY: Duration = Duration::from_secs(600);

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
