//! The bucket worker's API calls: one bounded sync, one status write, and the report of an
//! object that does not decode.

use std::sync::Arc;

use k8s_openapi::api::batch::v1::CronJob;
use kube::api::{Api, PostParams};
use tracing::Instrument;

use super::SYNC_TIMEOUT;
use super::index::Due;
use crate::SyncError;
use crate::cached::CachedCronJob;
use crate::context::Context;
use crate::convert::status_to_k8s;
use crate::decoded::Undecodable;
use crate::kube_jobs::KubeJobs;
use crate::limiter::Priority;
use crate::sync::{CronJobStatus, EventType, Outcome, sync_spread};

/// An object the client cannot decode: counted, logged (throttled) and, for CronJobs, a
/// Warning Event on it, so its owner learns why it does not run.
pub(super) fn report_undecodable(ctx: &Arc<Context>, kind: &'static str, bad: Undecodable) {
    ctx.metrics.undecodable.get_or_create(&crate::metrics::KindLabels { kind: kind.into() }).inc();
    let name =
        format!("{}/{}", bad.metadata.namespace.as_deref().unwrap_or(""), bad.metadata.name.as_deref().unwrap_or(""));
    ctx.log_warn("undecodable", &format!("{kind} {name} cannot be decoded; skipped: {}", bad.error));
    if kind != "CronJob" {
        return;
    }
    let reference = k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some("batch/v1".into()),
        kind: Some("CronJob".into()),
        namespace: bad.metadata.namespace.clone(),
        name: bad.metadata.name.clone(),
        uid: bad.metadata.uid.clone(),
        ..Default::default()
    };
    let event = crate::sync::Event {
        kind: EventType::Warning,
        reason: "Undecodable",
        message: format!("cronshard cannot read this CronJob and does not run it: {}", bad.error),
    };
    crate::events::publish(ctx.clone(), reference, vec![event]);
}

/// A status write's result: the object as written, or after a 409 the fresh object (if
/// it still exists) to sync again from.
pub(super) enum WriteResult {
    Written(Box<CronJob>),
    Conflict(Option<Box<CronJob>>),
}

pub(super) type StatusWrite = Result<WriteResult, SyncError>;

/// One sync of one CronJob, bounded in time: a hung API call must not hold the bucket.
pub(super) async fn sync_with_timeout(ctx: &Arc<Context>, bucket: u32, epoch: i32, due: &Due) -> Outcome {
    let (state, children) = (&due.state, due.children.as_slice());
    let mut io = KubeJobs::new(ctx, &due.cronjob, &due.state, bucket, epoch, due.spread_offset);
    let span = tracing::info_span!("reconcile", cronjob = %due.key, bucket);
    let now = ctx.clock.now();
    let sync = sync_spread(state, children, now, due.spread_offset.unwrap_or(0), &mut io);
    match tokio::time::timeout(SYNC_TIMEOUT, sync.instrument(span)).await {
        Ok(outcome) => outcome,
        Err(_) => Outcome {
            status: state.status.clone(),
            status_changed: false,
            events: Vec::new(),
            requeue_at: None,
            created: None,
            error: Some(SyncError::Timeout { what: "sync", after: SYNC_TIMEOUT }),
            invalid: None,
            missed: Vec::new(),
            reported_through: state.reported_through,
        },
    }
}

/// One status write with the object's resourceVersion; a 409 re-reads the object.
///
/// Thousands of writes may wait for the budget after a herd, so what waits is kept small:
/// the object is decoded, and the client's request future allocated, only once it allows
/// the write.
pub(super) async fn write_status(ctx: &Context, cj: &CachedCronJob, status: &CronJobStatus) -> StatusWrite {
    ctx.limiter.acquire(Priority::Status).await;
    Box::pin(replace_status(ctx, cj, status)).await
}

async fn replace_status(ctx: &Context, cj: &CachedCronJob, status: &CronJobStatus) -> StatusWrite {
    let mut updated =
        cj.decode().map_err(|e| SyncError::StatusWrite(format!("the cached object does not decode: {e}")))?;
    let namespace = updated.metadata.namespace.clone().unwrap_or_default();
    let name = updated.metadata.name.clone().unwrap_or_default();
    let api: Api<CronJob> = Api::namespaced(ctx.client.clone(), &namespace);
    updated.status = Some(status_to_k8s(&namespace, status));
    match api.replace_status(&name, &PostParams::default(), &updated).await {
        Ok(fresh) => Ok(WriteResult::Written(Box::new(fresh))),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            ctx.limiter.acquire(Priority::Status).await;
            match api.get_opt(&name).await {
                Ok(fresh) => Ok(WriteResult::Conflict(fresh.map(Box::new))),
                Err(e) => Err(SyncError::StatusReread(e.to_string())),
            }
        }
        Err(e) => Err(SyncError::StatusWrite(e.to_string())),
    }
}
