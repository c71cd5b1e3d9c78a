//! History cleanup in the background: the finished Jobs a sync named are deleted at the
//! lowest priority, a bounded number at once, so a due create never waits behind one.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, DeleteParams};
use tokio::task::JoinSet;

use crate::context::Context;
use crate::kube_jobs::sent_within;
use crate::limiter::Priority;
use crate::metrics::ReasonLabels;
use crate::sync::history_deleted;

/// How a deletion task ended.
pub(super) type Ended = Result<(Deletion, Result<(), String>), tokio::task::JoinError>;

/// One Job to delete, and the CronJob whose Events say so.
#[derive(Debug)]
pub(super) struct Deletion {
    namespace: String,
    name: String,
    cronjob: ObjectReference,
}

/// The bucket's history deletions: queued, in flight, each Job at most once at a time.
#[derive(Debug)]
pub(super) struct HistoryDeletes {
    queue: VecDeque<Deletion>,
    /// `namespace/name` of every Job queued or in flight.
    pending: HashSet<String>,
    running: JoinSet<(Deletion, Result<(), String>)>,
    /// Deletions waiting for the budget or in flight at most.
    limit: usize,
}

impl HistoryDeletes {
    pub(super) fn new(limit: usize) -> Self {
        HistoryDeletes { queue: VecDeque::new(), pending: HashSet::new(), running: JoinSet::new(), limit: limit.max(1) }
    }

    /// A sync named `names` (Jobs of `cronjob`'s namespace) for deletion; a Job already
    /// queued or in flight is not named twice.
    pub(super) fn queue(&mut self, cronjob: &ObjectReference, names: &[String]) {
        let namespace = cronjob.namespace.clone().unwrap_or_default();
        for name in names {
            if self.pending.insert(format!("{namespace}/{name}")) {
                let (namespace, name) = (namespace.clone(), name.clone());
                self.queue.push_back(Deletion { namespace, name, cronjob: cronjob.clone() });
            }
        }
    }

    /// Starts queued deletions while there is a free slot.
    pub(super) fn start(&mut self, ctx: &Arc<Context>) {
        while self.running.len() < self.limit {
            let Some(deletion) = self.queue.pop_front() else { return };
            let ctx = ctx.clone();
            self.running.spawn(async move {
                let result = delete_finished_job(&ctx, &deletion.namespace, &deletion.name).await;
                (deletion, result)
            });
        }
    }

    pub(super) fn is_idle(&self) -> bool {
        self.running.is_empty()
    }

    /// Waits for the next deletion in flight to end (pending forever when none is).
    pub(super) async fn next_done(&mut self) -> Option<Ended> {
        self.running.join_next().await
    }

    /// A deletion ended: its Event on the CronJob (a failure is also counted and logged, and
    /// the CronJob's next sync names the Job again), then the next one starts.
    pub(super) fn done(&mut self, ctx: &Arc<Context>, ended: Option<Ended>) {
        // A task only ends early when the bucket is being aborted (fencing).
        let Some(Ok((deletion, result))) = ended else { return };
        self.pending.remove(&format!("{}/{}", deletion.namespace, deletion.name));
        if let Err(e) = &result {
            let job = format!("{}/{}", deletion.namespace, deletion.name);
            ctx.log_warn("sync", &format!("history cleanup of Job {job} failed; retried on the next sync: {e}"));
            ctx.metrics.sync_errors.get_or_create(&ReasonLabels { reason: "DeleteJob".into() }).inc();
        }
        crate::events::publish(ctx.clone(), deletion.cronjob, vec![history_deleted(&deletion.name, result)]);
        self.start(ctx);
    }
}

/// DELETE with Background propagation, at the lowest priority; already gone is success.
/// The request's future is allocated only once the budget allows it.
async fn delete_finished_job(ctx: &Context, namespace: &str, name: &str) -> Result<(), String> {
    ctx.limiter.acquire(Priority::Background).await;
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), namespace);
    match Box::pin(sent_within(api.delete(name, &DeleteParams::background()))).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}
