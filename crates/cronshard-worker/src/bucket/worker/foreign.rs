//! The range guard: every object a bucket's watch delivers is checked against the bucket
//! before anything is done with it. One of another bucket (a server that stopped filtering,
//! a label copied from another object) is dropped and counted, never acted on.

use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PatchParams};
use kube::runtime::watcher;

use super::Worker;
use crate::api::limiter::Priority;
use crate::api::request::sent_within;
use crate::metrics::KindLabels;
use crate::sharding::Filtering;
use crate::watches::labeller::label_patch;

/// What decides an object's bucket: a CronJob's own namespace, name and uid; a Job's
/// controlling CronJob's. `None` for a Job no CronJob controls (never synced, kept as is).
fn bucket_identity<'a>(kind: &str, meta: &'a ObjectMeta) -> Option<(&'a str, &'a str, &'a str)> {
    let namespace = meta.namespace.as_deref()?;
    if kind == "CronJob" {
        return Some((namespace, meta.name.as_deref()?, meta.uid.as_deref()?));
    }
    let owner = meta
        .owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true) && r.kind == "CronJob" && r.api_version == "batch/v1")?;
    Some((namespace, &owner.name, &owner.uid))
}

impl Worker {
    /// `event` unless it brings another bucket's object.
    pub(super) fn own<K: kube::Resource>(
        &mut self,
        kind: &'static str,
        event: watcher::Event<K>,
    ) -> Option<watcher::Event<K>> {
        let object = match &event {
            watcher::Event::Apply(object) | watcher::Event::InitApply(object) => object,
            _ => return Some(event),
        };
        let meta = object.meta();
        let Some((namespace, name, uid)) = bucket_identity(kind, meta) else { return Some(event) };
        let actual = self.ctx.bucket_of(namespace, name, uid);
        if actual == self.bucket {
            return Some(event);
        }
        self.ctx.metrics.foreign.get_or_create(&KindLabels { kind: kind.to_owned() }).inc();
        let object_name = meta.name.clone().unwrap_or_default();
        let what = format!("{kind} {namespace}/{object_name} of bucket {actual} in bucket {}'s watch", self.bucket);
        match self.ctx.sharding.filtering() {
            Filtering::Server => self.ctx.sharding.not_filtering(&what),
            // Its label is wrong (copied from another object, or written under another
            // function): moving it to its bucket is the one write made for it here.
            Filtering::Labels => {
                self.ctx.log_warn("foreign", &format!("{what}: dropped, and labelled with its bucket"));
                tokio::spawn(relabel(self.ctx.clone(), kind, namespace.to_owned(), object_name, actual));
            }
        }
        None
    }
}

/// Writes bucket `bucket` into the label of `kind` `namespace/name` (a metadata-only patch).
async fn relabel(
    ctx: std::sync::Arc<crate::Context>,
    kind: &'static str,
    namespace: String,
    name: String,
    bucket: u32,
) {
    let _place = ctx.limiter.acquire(Priority::Status).await;
    let patch = label_patch(bucket);
    let params = PatchParams::default();
    let written = if kind == "CronJob" {
        sent_within(Api::<CronJob>::namespaced(ctx.client.clone(), &namespace).patch_metadata(&name, &params, &patch))
            .await
            .map(drop)
    } else {
        sent_within(Api::<Job>::namespaced(ctx.client.clone(), &namespace).patch_metadata(&name, &params, &patch))
            .await
            .map(drop)
    };
    if let Err(e) = written {
        ctx.log_warn("foreign", &format!("could not label {kind} {namespace}/{name} with bucket {bucket}: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn meta(name: &str, uid: &str, owners: Vec<OwnerReference>) -> ObjectMeta {
        ObjectMeta {
            namespace: Some("team-a".into()),
            name: Some(name.into()),
            uid: Some(uid.into()),
            owner_references: Some(owners),
            ..ObjectMeta::default()
        }
    }

    fn owner(kind: &str, controller: bool) -> OwnerReference {
        OwnerReference {
            api_version: "batch/v1".into(),
            kind: kind.into(),
            name: "nightly".into(),
            uid: "uid-nightly".into(),
            controller: Some(controller),
            ..OwnerReference::default()
        }
    }

    #[test]
    fn an_object_belongs_where_its_cronjob_does() {
        let cronjob = meta("nightly", "uid-nightly", Vec::new());
        assert_eq!(bucket_identity("CronJob", &cronjob), Some(("team-a", "nightly", "uid-nightly")));
        let run = meta("nightly-29000000", "uid-run", vec![owner("CronJob", true)]);
        assert_eq!(
            bucket_identity("Job", &run),
            Some(("team-a", "nightly", "uid-nightly")),
            "its CronJob's, not its own"
        );
        // Not controlled by a CronJob: no bucket of its own, never dropped by the guard.
        assert_eq!(bucket_identity("Job", &meta("adopted", "uid-a", vec![owner("CronJob", false)])), None);
        assert_eq!(bucket_identity("Job", &meta("plain", "uid-p", Vec::new())), None);
    }
}
