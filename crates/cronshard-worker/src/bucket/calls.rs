//! The bucket worker's API calls: one sync, one status write, and the report of an object
//! that does not decode.

use std::sync::Arc;

use k8s_openapi::api::batch::v1::CronJob;
use kube::api::{Api, PostParams};
use tracing::Instrument;

use super::index::Due;
use super::jobs::KubeJobs;
use crate::api::limiter::Priority;
use crate::api::request::{REQUEST_TIMEOUT, sent_within};
use crate::context::Context;
use crate::objects::cached::CachedCronJob;
use crate::objects::convert::status_to_k8s;
use crate::objects::decoded::Undecodable;
use cronshard_sync::SyncError;
use cronshard_sync::{CronJobStatus, EventType, Outcome, sync_spread};

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
    let event = cronshard_sync::Event {
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

/// One sync of one CronJob. Each of its requests is bounded in time once sent (a hung call
/// must not hold the bucket); its waits for the budget are not.
pub(super) async fn sync_due(ctx: &Arc<Context>, bucket: u32, epoch: i32, due: &Due) -> Outcome {
    let (state, children) = (&due.state, due.children.as_slice());
    let mut io = KubeJobs::new(ctx, &due.cronjob, &due.state, bucket, epoch, due.spread_offset);
    let span = tracing::info_span!("reconcile", cronjob = %due.key, bucket);
    let now = ctx.clock.now();
    sync_spread(state, children, now, due.spread_offset.unwrap_or(0), &mut io).instrument(span).await
}

/// One status write with the object's resourceVersion; a 409 re-reads the object.
///
/// Thousands of writes may wait for the budget after a herd, so what waits is kept small:
/// the object is decoded, and the client's request future allocated, only once it allows
/// the write. Each request is bounded in time once sent, never its wait for the budget.
pub(super) async fn write_status(ctx: &Context, cj: &CachedCronJob, status: &CronJobStatus) -> StatusWrite {
    let place = ctx.limiter.acquire(Priority::Status).await;
    let written = match Box::pin(tokio::time::timeout(REQUEST_TIMEOUT, replace_status(ctx, cj, status))).await {
        Ok(written) => written?,
        Err(_) => return Err(SyncError::Timeout { what: "status write", after: REQUEST_TIMEOUT }),
    };
    drop(place);
    match written {
        Some(fresh) => Ok(WriteResult::Written(fresh)),
        None => {
            let _place = ctx.limiter.acquire(Priority::Status).await;
            // The key is `namespace/name`, and neither part may contain a slash.
            let (namespace, name) = cj.key().split_once('/').unwrap_or(("", cj.key()));
            let api: Api<CronJob> = Api::namespaced(ctx.client.clone(), namespace);
            match Box::pin(sent_within(api.get_opt(name))).await {
                Ok(fresh) => Ok(WriteResult::Conflict(fresh.map(Box::new))),
                Err(e) => Err(SyncError::StatusReread { source: SyncError::cause(e) }),
            }
        }
    }
}

/// The write itself: the object as written, or `None` on a 409 Conflict.
async fn replace_status(
    ctx: &Context,
    cj: &CachedCronJob,
    status: &CronJobStatus,
) -> Result<Option<Box<CronJob>>, SyncError> {
    let mut updated = cj.decode().map_err(|e| SyncError::StatusWrite { source: SyncError::cause(e) })?;
    let namespace = updated.metadata.namespace.clone().unwrap_or_default();
    let name = updated.metadata.name.clone().unwrap_or_default();
    let api: Api<CronJob> = Api::namespaced(ctx.client.clone(), &namespace);
    updated.status = Some(status_to_k8s(&namespace, status));
    match api.replace_status(&name, &PostParams::default(), &updated).await {
        Ok(fresh) => Ok(Some(Box::new(fresh))),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(None),
        Err(e) => Err(SyncError::StatusWrite { source: SyncError::cause(e) }),
    }
}
