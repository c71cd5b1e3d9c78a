//! Writing the bucket label: on new CronJobs through a metadata-only watch of
//! `!cronshard.io/bucket`, and on CronJob-owned Jobs that lack it through a slow, paginated,
//! rate-limited metadata-only pass (never a permanent watch on all unlabelled Jobs).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use cronshard_types::keys::BUCKET_LABEL;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

use crate::api::limiter::Priority;
use crate::api::request::sent_within;
use crate::context::Context;
use crate::sharding::Filtering;

/// Label patches in flight at once.
const LABEL_CONCURRENCY: usize = 16;

/// Page size of the Job pass.
const PAGE: u32 = 500;

fn selector(ctx: &Context) -> String {
    let own = format!("!{BUCKET_LABEL}");
    match &ctx.settings.selector {
        Some(extra) if !extra.trim().is_empty() => format!("{own},{extra}"),
        _ => own,
    }
}

/// The metadata patch that writes bucket `bucket` into an object's label.
pub(crate) fn label_patch(bucket: u32) -> Patch<serde_json::Value> {
    Patch::Merge(json!({"metadata": {"labels": {BUCKET_LABEL: bucket.to_string()}}}))
}

/// Labels new CronJobs whose bucket is in `owned` while buckets select their CronJobs by
/// label (never while the API server selects them), until `stop`.
pub async fn label_new_cronjobs(
    ctx: Arc<Context>,
    owned: tokio::sync::watch::Receiver<BTreeSet<u32>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut filtering = ctx.sharding.subscribe();
    loop {
        if *filtering.borrow_and_update() == Filtering::Labels {
            let labelling = label_while_on_labels(ctx.clone(), owned.clone(), stop.clone());
            tokio::select! {
                () = labelling => return,
                changed = filtering.changed() => if changed.is_err() { return },
            }
        } else {
            tokio::select! {
                () = crate::stop::stop_signal(&mut stop) => return,
                changed = filtering.changed() => if changed.is_err() { return },
            }
        }
    }
}

/// Labels new CronJobs whose bucket is in `owned`, until `stop`. Unlabelled CronJobs of
/// buckets owned elsewhere are remembered and labelled if their bucket moves here.
async fn label_while_on_labels(
    ctx: Arc<Context>,
    mut owned: tokio::sync::watch::Receiver<BTreeSet<u32>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let config = watcher::Config::default().labels(&selector(&ctx));
    let api: Api<PartialObjectMeta<CronJob>> = Api::all(ctx.client.clone());
    let mut events = watcher(api, config).default_backoff().boxed();
    let mut waiting = Waiting::default();
    loop {
        let todo = tokio::select! {
            () = crate::stop::stop_signal(&mut stop) => return,
            changed = owned.changed() => {
                if changed.is_err() {
                    return; // the coordinator is gone
                }
                let now_owned = owned.borrow_and_update().clone();
                ctx.leftovers.retain(&now_owned);
                waiting.now_owned(&now_owned)
            }
            next = events.next() => {
                let Some(first) = next else { return };
                // Take whatever else the watch has ready, so a list's worth is labelled together.
                let mut batch = vec![first];
                while batch.len() < 1000 {
                    match events.next().now_or_never() {
                        Some(Some(event)) => batch.push(event),
                        Some(None) => return,
                        None => break,
                    }
                }
                let owned_now = owned.borrow().clone();
                batch.into_iter().filter_map(|event| waiting.on_event(&ctx, event, &owned_now)).collect()
            }
        };
        // Several at once: a migration labels every CronJob of the cluster in one go.
        futures::stream::iter(todo)
            .for_each_concurrent(LABEL_CONCURRENCY, |cronjob| label_cronjob(ctx.clone(), cronjob))
            .await;
    }
}

/// An unlabelled CronJob, with its bucket and the resourceVersion seen.
struct Unlabelled {
    namespace: String,
    name: String,
    bucket: u32,
    resource_version: String,
}

/// Unlabelled CronJobs of buckets owned elsewhere, by namespace/name: labelled here if
/// their bucket moves here.
#[derive(Default)]
struct Waiting(BTreeMap<(String, String), (u32, String)>);

impl Waiting {
    /// Those whose bucket is now owned here leave the wait, to be labelled.
    fn now_owned(&mut self, owned: &BTreeSet<u32>) -> Vec<Unlabelled> {
        let mut todo = Vec::new();
        self.0.retain(|(namespace, name), (bucket, rv)| {
            if !owned.contains(bucket) {
                return true;
            }
            let (namespace, name, bucket, resource_version) = (namespace.clone(), name.clone(), *bucket, rv.clone());
            todo.push(Unlabelled { namespace, name, bucket, resource_version });
            false
        });
        todo
    }

    /// One event of the unlabelled-CronJob watch: a CronJob to label now, or none.
    fn on_event(
        &mut self,
        ctx: &Context,
        event: Result<watcher::Event<PartialObjectMeta<CronJob>>, watcher::Error>,
        owned: &BTreeSet<u32>,
    ) -> Option<Unlabelled> {
        match event {
            Ok(watcher::Event::Apply(meta) | watcher::Event::InitApply(meta)) => {
                let resource_version = meta.metadata.resource_version.unwrap_or_default();
                let uid = meta.metadata.uid.unwrap_or_default();
                let (namespace, name) = (meta.metadata.namespace?, meta.metadata.name?);
                let b = ctx.bucket_of(&namespace, &name, &uid);
                if owned.contains(&b) {
                    return Some(Unlabelled { namespace, name, bucket: b, resource_version });
                }
                self.0.insert((namespace, name), (b, resource_version));
            }
            // Labelled (by us or a peer) or deleted: no longer waiting.
            Ok(watcher::Event::Delete(meta)) => {
                if let (Some(namespace), Some(name)) = (meta.metadata.namespace, meta.metadata.name) {
                    ctx.leftovers.delete(&format!("{namespace}/{name}"));
                    self.0.remove(&(namespace, name));
                }
            }
            Ok(watcher::Event::Init) => self.0.clear(),
            Ok(watcher::Event::InitDone) => {}
            Err(e) => tracing::warn!(error = %e, "watch of unlabelled CronJobs failed; retrying"),
        }
        None
    }
}

/// Writes the bucket label on one CronJob (a metadata-only merge patch).
async fn label_cronjob(ctx: Arc<Context>, cronjob: Unlabelled) {
    let Unlabelled { namespace, name, bucket: b, resource_version } = cronjob;
    let _place = ctx.limiter.acquire(Priority::Status).await;
    let api: Api<CronJob> = Api::namespaced(ctx.client.clone(), &namespace);
    let key = format!("{namespace}/{name}");
    match sent_within(api.patch_metadata(&name, &PatchParams::default(), &label_patch(b))).await {
        Ok(_) => ctx.leftovers.delete(&key),
        // The server validates the whole object on the patch: an invalid one (stored before a
        // rule existed) can never be labelled. Its bucket's worker manages it unlabelled.
        Err(kube::Error::Api(status)) if status.code == 422 => {
            ctx.log_warn(
                "label",
                &format!("CronJob {key} cannot be labelled, managed unlabelled in bucket {b}: {}", status.message),
            );
            ctx.leftovers.apply(key, b, resource_version);
        }
        Err(e) => ctx.log_warn("label", &format!("could not label CronJob {key}: {e}")),
    }
}

/// One pass over Jobs without the label, `page` at a time: those controlled by a CronJob
/// in a bucket `owns` says is ours get the label. Returns how many were labelled.
///
/// A pass that outlives compaction gets 410 on its continue token. It starts over: Jobs
/// labelled so far have left the `!label` selector, so no work is repeated (the in-tree v1
/// controller abandoned its whole sweep here, which is how runs went missing for days).
pub async fn label_orphan_jobs(ctx: &Context, owns: &impl Fn(u32) -> bool, page: u32) -> Result<usize, kube::Error> {
    const RESTARTS: usize = 3;
    let api: Api<Job> = Api::all(ctx.client.clone());
    // Jobs do not carry their CronJob's labels: the migration selector is not applied here
    // (a Job of an unmanaged CronJob labelled by mistake is only cached, never acted on).
    let first = ListParams::default().labels(&format!("!{BUCKET_LABEL}")).limit(page);
    let mut params = first.clone();
    let mut labelled = 0;
    let mut restarts = 0;
    loop {
        let place = ctx.limiter.acquire(Priority::Background).await;
        let listed = sent_within(api.list_metadata(&params)).await;
        drop(place);
        let list = match listed {
            Ok(list) => list,
            Err(kube::Error::Api(status))
                if status.code == 410 && params.continue_token.is_some() && restarts < RESTARTS =>
            {
                restarts += 1;
                tracing::info!(labelled, restarts, "Job labelling pass expired mid-list (410); starting over");
                params = first.clone();
                continue;
            }
            Err(e) => return Err(e),
        };
        for job in &list.items {
            let Some(owner) = job.metadata.owner_references.as_ref().and_then(|refs| {
                refs.iter().find(|r| r.controller == Some(true) && r.kind == "CronJob" && r.api_version == "batch/v1")
            }) else {
                continue;
            };
            let (Some(namespace), Some(name)) = (&job.metadata.namespace, &job.metadata.name) else { continue };
            let b = ctx.bucket_of(namespace, &owner.name, &owner.uid);
            if !owns(b) {
                continue;
            }
            let _place = ctx.limiter.acquire(Priority::Background).await;
            let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), namespace);
            sent_within(jobs.patch_metadata(name, &PatchParams::default(), &label_patch(b))).await?;
            labelled += 1;
        }
        match list.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(labelled),
        }
    }
}

/// Runs [`label_orphan_jobs`] every `every`, and soon after this replica gains a bucket (a
/// replica starts owning nothing, and orphans of a bucket it takes over should not wait a
/// whole period), until `stop`.
pub async fn label_orphan_jobs_periodically(
    ctx: Arc<Context>,
    mut owned: tokio::sync::watch::Receiver<BTreeSet<u32>>,
    every: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    /// Claims come one by one after a start or a takeover: one pass for the lot.
    const SETTLE: Duration = Duration::from_secs(2);
    loop {
        let mut covered = owned.borrow_and_update().clone();
        if !covered.is_empty() {
            let owns = |b: u32| owned.borrow().contains(&b);
            match label_orphan_jobs(&ctx, &owns, PAGE).await {
                Ok(n) if n > 0 => tracing::info!(labelled = n, "labelled CronJob-owned Jobs"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "labelling pass over Jobs failed"),
            }
        }
        let period = tokio::time::sleep(every);
        tokio::pin!(period);
        loop {
            tokio::select! {
                () = &mut period => break,
                changed = owned.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let now = owned.borrow_and_update().clone();
                    if now.is_subset(&covered) {
                        covered = now;
                        continue;
                    }
                    tokio::select! {
                        () = tokio::time::sleep(SETTLE) => break,
                        () = crate::stop::stop_signal(&mut stop) => return,
                    }
                }
                () = crate::stop::stop_signal(&mut stop) => return,
            }
        }
    }
}
