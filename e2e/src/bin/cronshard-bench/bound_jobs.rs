//! The plain client's Jobs: what a client that does nothing else achieves against the server.

use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};

/// The name of the suspended CronJob that owns the bound's Jobs.
const OWNER: &str = "bound-owner";

/// What the bound's Jobs carry besides their pod: what cronshard's Jobs carry besides the
/// template, the bucket label, the scheduled-timestamp and audit annotations and an owner
/// reference (to a suspended CronJob of the bound's namespace, as a non-controller owner, so
/// that no CronJob controller adopts the Jobs and the garbage collector keeps them). A
/// create's cost grows with what the server stores and tracks in managedFields: in
/// back-to-back rounds of 10,000 creates on the real control plane, Jobs with these went about
/// 9% slower than Jobs with a name and a pod only.
#[derive(Clone, Debug)]
pub(crate) struct Shape {
    pub scheduled_timestamp: String,
    pub buckets: u32,
}

/// Creates Jobs number `jobs.start` to `jobs.end` of `shape` whose pod runs `container`,
/// `in_flight` POSTs at a time (the first call also creates their owner). Returns (Jobs
/// created, creates per second).
pub(crate) async fn create(
    api: &Api<Job>,
    jobs: std::ops::Range<usize>,
    (container, shape): (&Value, &Shape),
    in_flight: usize,
) -> Result<(usize, f64), String> {
    let owner = owner_uid(api, container).await?;
    let started = Instant::now();
    let created = futures::stream::iter(jobs)
        .map(|i| {
            let job = job(i, container, shape, &owner);
            async move { api.create(&PostParams::default(), &job.ok()?).await.ok() }
        })
        .buffer_unordered(in_flight)
        .filter(|j| futures::future::ready(j.is_some()))
        .count()
        .await;
    Ok((created, created as f64 / started.elapsed().as_secs_f64().max(1e-3)))
}

/// The `i`th Job of the bound, owned by the CronJob whose uid is `owner`.
fn job(i: usize, container: &Value, shape: &Shape, owner: &str) -> serde_json::Result<Job> {
    let bucket = i % shape.buckets.max(1) as usize;
    // "x" before the number: the analysis must not read it as a run's minute.
    let metadata = json!({"name": format!("bound-x{i}"),
        "labels": { cronshard_types::keys::BUCKET_LABEL: bucket.to_string() },
        "annotations": {
            cronshard_types::keys::SCHEDULED_TIMESTAMP_ANNOTATION: shape.scheduled_timestamp,
            cronshard_types::keys::CREATED_BY_ANNOTATION: format!("bench-bound/{bucket}/1"),
        },
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": OWNER,
            "uid": owner, "controller": false, "blockOwnerDeletion": true}]});
    serde_json::from_value(json!({"metadata": metadata,
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}}))
}

/// The uid of the suspended CronJob that owns the bound's Jobs, created if missing.
async fn owner_uid(jobs: &Api<Job>, container: &Value) -> Result<String, String> {
    let api: Api<CronJob> = Api::namespaced(jobs.clone().into_client(), jobs.namespace().unwrap_or("default"));
    let owner = match api.get_opt(OWNER).await.map_err(|e| format!("{OWNER}: {e}"))? {
        Some(owner) => owner,
        None => {
            let cronjob: CronJob = serde_json::from_value(json!({"metadata": {"name": OWNER},
                "spec": {"schedule": "0 0 1 1 *", "suspend": true, "jobTemplate": {"spec": {"template": {"spec":
                    {"restartPolicy": "Never", "containers": [container]}}}}}}))
            .map_err(|e| e.to_string())?;
            api.create(&PostParams::default(), &cronjob).await.map_err(|e| format!("{OWNER}: {e}"))?
        }
    };
    owner.metadata.uid.ok_or_else(|| format!("{OWNER}: the server gave it no uid"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_job_carries_cronshards_label_and_annotations_and_a_non_controller_owner() {
        let shape = Shape { scheduled_timestamp: "2026-12-07T11:24:00Z".into(), buckets: 64 };
        let job = job(70, &json!({"name": "c", "image": "busybox"}), &shape, "u1").expect("job");
        let meta = job.metadata;
        assert_eq!(meta.name.as_deref(), Some("bound-x70"));
        assert_eq!(meta.labels.expect("labels")[cronshard_types::keys::BUCKET_LABEL], "6");
        let annotations = meta.annotations.expect("annotations");
        assert_eq!(annotations[cronshard_types::keys::SCHEDULED_TIMESTAMP_ANNOTATION], "2026-12-07T11:24:00Z");
        assert_eq!(annotations[cronshard_types::keys::CREATED_BY_ANNOTATION], "bench-bound/6/1");
        let owner = &meta.owner_references.expect("owner")[0];
        assert_eq!((owner.uid.as_str(), owner.controller), ("u1", Some(false)));
        assert_eq!(job.spec.expect("spec").template.spec.expect("pod").containers[0].name, "c");
    }
}
