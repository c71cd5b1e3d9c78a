//! History cleanup in the background: the finished Jobs a sync named are deleted at the
//! lowest priority, a bounded number at once, so a due create never waits behind one.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, DeleteParams, Preconditions};
use tokio::task::JoinSet;

use crate::api::limiter::Priority;
use crate::api::request::sent_within;
use crate::context::Context;
use crate::metrics::ReasonLabels;
use cronshard_sync::{JobRef, history_deleted};

/// How a deletion task ended: deleted (`Ok(true)`), already gone or replaced by another
/// Job of that name (`Ok(false)`), or failed.
pub(super) type Ended = Result<(Deletion, Result<bool, String>), tokio::task::JoinError>;

/// One Job to delete, and the CronJob whose Events say so.
#[derive(Debug)]
pub(super) struct Deletion {
    namespace: String,
    job: JobRef,
    /// The CronJob's `namespace/name`.
    cronjob_key: String,
    cronjob: ObjectReference,
}

/// The bucket's history deletions: queued, in flight, each Job at most once at a time.
#[derive(Debug)]
pub(super) struct HistoryDeletes {
    queue: VecDeque<Deletion>,
    /// `namespace/name` of every Job queued or in flight.
    pending: HashSet<String>,
    running: JoinSet<(Deletion, Result<bool, String>)>,
    /// Deletions waiting for the budget or in flight at most.
    limit: usize,
}

impl HistoryDeletes {
    pub(super) fn new(limit: usize) -> Self {
        HistoryDeletes { queue: VecDeque::new(), pending: HashSet::new(), running: JoinSet::new(), limit: limit.max(1) }
    }

    /// A sync of `cronjob_key` named `jobs` (in `cronjob`'s namespace) for deletion; a Job
    /// already queued or in flight is not named twice.
    pub(super) fn queue(&mut self, cronjob_key: &str, cronjob: &ObjectReference, jobs: &[JobRef]) {
        let namespace = cronjob.namespace.clone().unwrap_or_default();
        for job in jobs {
            if self.pending.insert(format!("{namespace}/{}", job.name)) {
                self.queue.push_back(Deletion {
                    namespace: namespace.clone(),
                    job: job.clone(),
                    cronjob_key: cronjob_key.to_owned(),
                    cronjob: cronjob.clone(),
                });
            }
        }
    }

    /// The CronJob left the bucket (deleted, relabelled, out of the selector): nothing more
    /// is deleted for it here (a deletion already sent finishes).
    pub(super) fn forget(&mut self, cronjob_key: &str) {
        let pending = &mut self.pending;
        self.queue.retain(|d| {
            let keep = d.cronjob_key != cronjob_key;
            if !keep {
                pending.remove(&format!("{}/{}", d.namespace, d.job.name));
            }
            keep
        });
    }

    /// Starts queued deletions while there is a free slot.
    pub(super) fn start(&mut self, ctx: &Arc<Context>) {
        while self.running.len() < self.limit {
            let Some(deletion) = self.queue.pop_front() else { return };
            let ctx = ctx.clone();
            self.running.spawn(async move {
                let result = delete_finished_job(&ctx, &deletion.namespace, &deletion.job).await;
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
        self.pending.remove(&format!("{}/{}", deletion.namespace, deletion.job.name));
        let event = match result {
            Ok(true) => Some(history_deleted(&deletion.job.name, Ok(()))),
            Ok(false) => None,
            Err(e) => {
                let job = format!("{}/{}", deletion.namespace, deletion.job.name);
                ctx.log_warn("sync", &format!("history cleanup of Job {job} failed; retried on the next sync: {e}"));
                ctx.metrics.sync_errors.get_or_create(&ReasonLabels { reason: "DeleteJob".into() }).inc();
                Some(history_deleted(&deletion.job.name, Err(e)))
            }
        };
        crate::events::publish(ctx.clone(), deletion.cronjob, event.into_iter().collect());
        self.start(ctx);
    }
}

/// DELETE with Background propagation and the Job's uid as a precondition (it was named a
/// while ago: a new Job of the same name is not this one), at the lowest priority. Gone
/// already (404) or replaced (409) is not a failure, and no Event: nothing was deleted.
/// The request's future is allocated only once the budget allows it.
async fn delete_finished_job(ctx: &Context, namespace: &str, job: &JobRef) -> Result<bool, String> {
    let _place = ctx.limiter.acquire(Priority::Background).await;
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), namespace);
    let mut params = DeleteParams::background();
    params.preconditions = Some(Preconditions { uid: Some(job.uid.clone()), resource_version: None });
    match Box::pin(sent_within(api.delete(&job.name, &params))).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if matches!(status.code, 404 | 409) => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}
