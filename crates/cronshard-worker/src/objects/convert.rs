//! Between Kubernetes objects and the plain structs [`cronshard_sync`] works on, and the Job a run creates.

use std::collections::BTreeMap;

use cronshard_types::keys::{
    BUCKET_LABEL, CREATED_BY_ANNOTATION, INSTANTIATE_ANNOTATION, SCHEDULED_TIMESTAMP_ANNOTATION,
};
use cronshard_types::{DstPolicy, Timestamp};
use k8s_openapi::api::batch::v1::{CronJob, Job, JobStatus};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};

use cronshard_sync::{
    ChildJob, ConcurrencyPolicy, CronJobSpec, CronJobState, CronJobStatus, Finished, JobRef, JobRequest,
};

/// k8s-openapi keeps its own jiff; times cross over as seconds and nanoseconds.
pub fn from_k8s(time: &Time) -> Timestamp {
    Timestamp::new(time.0.as_second(), time.0.subsec_nanosecond()).unwrap_or(Timestamp::UNIX_EPOCH)
}

pub fn to_k8s(time: Timestamp) -> Time {
    Time(
        k8s_openapi::jiff::Timestamp::new(time.as_second(), time.subsec_nanosecond())
            .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
    )
}

/// `namespace/name` of an object.
pub fn key(meta: &ObjectMeta) -> String {
    format!("{}/{}", meta.namespace.as_deref().unwrap_or(""), meta.name.as_deref().unwrap_or(""))
}

/// The CronJob as [`cronshard_sync::sync`] sees it; `None` without name, uid or creation time.
pub fn cronjob_state(cj: &CronJob) -> Option<CronJobState> {
    let meta = &cj.metadata;
    let status = cj.status.clone().unwrap_or_default();
    Some(CronJobState {
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone()?,
        uid: meta.uid.clone()?,
        creation_timestamp: from_k8s(meta.creation_timestamp.as_ref()?),
        deleting: meta.deletion_timestamp.is_some(),
        spec: CronJobSpec {
            schedule: cj.spec.schedule.clone(),
            time_zone: cj.spec.time_zone.clone(),
            starting_deadline_seconds: cj.spec.starting_deadline_seconds,
            concurrency_policy: match cj.spec.concurrency_policy.as_deref() {
                Some("Forbid") => ConcurrencyPolicy::Forbid,
                Some("Replace") => ConcurrencyPolicy::Replace,
                _ => ConcurrencyPolicy::Allow,
            },
            suspend: cj.spec.suspend.unwrap_or(false),
            successful_jobs_history_limit: cj.spec.successful_jobs_history_limit,
            failed_jobs_history_limit: cj.spec.failed_jobs_history_limit,
        },
        status: CronJobStatus {
            active: status
                .active
                .unwrap_or_default()
                .into_iter()
                .map(|r| JobRef {
                    name: r.name.unwrap_or_default(),
                    uid: r.uid.unwrap_or_default(),
                    resource_version: r.resource_version.unwrap_or_default(),
                })
                .collect(),
            last_schedule_time: status.last_schedule_time.as_ref().map(from_k8s),
            last_successful_time: status.last_successful_time.as_ref().map(from_k8s),
        },
        reported_through: None,
        // The replica's policy is set where the sync is prepared (it is not in the object).
        dst_policy: DstPolicy::default(),
        schedule_changed_at: schedule_changed_at(&cj.metadata),
    })
}

/// When `spec.schedule` or `spec.timeZone` last changed, from `metadata.managedFields`: the
/// latest `time` of the entries for the object itself (not a subresource) whose fields hold
/// either. kube-apiserver updates an entry's time when its manager sets a field value it owns,
/// so this is the schedule's change or a later change by the same manager. `None` when the
/// server keeps no managedFields, or the fields have not changed since the object was
/// created (then `lastScheduleTime`, else the creation, counts as upstream's does).
pub fn schedule_changed_at(meta: &ObjectMeta) -> Option<Timestamp> {
    let created = meta.creation_timestamp.as_ref().map(from_k8s);
    meta.managed_fields
        .as_ref()?
        .iter()
        .filter(|entry| entry.subresource.as_deref().is_none_or(str::is_empty))
        .filter(|entry| {
            let spec = entry.fields_v1.as_ref().map(|f| &f.0["f:spec"]);
            spec.is_some_and(|spec| spec.get("f:schedule").is_some() || spec.get("f:timeZone").is_some())
        })
        .filter_map(|entry| entry.time.as_ref().map(from_k8s))
        .max()
        .filter(|changed| created.is_none_or(|created| *changed > created))
}

/// The controller owner's uid, from the ownerReference with `controller: true`.
pub fn controller_uid(meta: &ObjectMeta) -> Option<String> {
    meta.owner_references.as_ref()?.iter().find(|r| r.controller == Some(true)).map(|r| r.uid.clone())
}

fn finished(status: &JobStatus) -> Option<Finished> {
    status.conditions.as_ref()?.iter().find_map(|c| match (c.type_.as_str(), c.status.as_str()) {
        ("Complete", "True") => Some(Finished::Complete),
        ("Failed", "True") => Some(Finished::Failed),
        _ => None,
    })
}

/// Whether the Job has started as its user sees it: a pod ready, or the Job already done
/// (a pod that ran to its end before it was seen ready).
pub fn job_started(job: &Job) -> bool {
    job.status.as_ref().is_some_and(|s| {
        s.ready.unwrap_or(0) > 0 || s.succeeded.unwrap_or(0) > 0 || s.failed.unwrap_or(0) > 0 || finished(s).is_some()
    })
}

pub fn child_job(job: &Job) -> ChildJob {
    let status = job.status.clone().unwrap_or_default();
    ChildJob {
        name: job.metadata.name.clone().unwrap_or_default(),
        uid: job.metadata.uid.clone().unwrap_or_default(),
        resource_version: job.metadata.resource_version.clone().unwrap_or_default(),
        controller_uid: controller_uid(&job.metadata),
        creation_timestamp: job.metadata.creation_timestamp.as_ref().map(from_k8s).unwrap_or(Timestamp::UNIX_EPOCH),
        start_time: status.start_time.as_ref().map(from_k8s),
        completion_time: status.completion_time.as_ref().map(from_k8s),
        finished: finished(&status),
        manual: job
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(INSTANTIATE_ANNOTATION))
            .is_some_and(|v| v == "manual"),
    }
}

/// The Job for one run: `spec.jobTemplate` with upstream's annotation and owner reference,
/// plus cronshard's bucket label and audit annotation (`<replica>/<bucket>/<epoch>`).
pub fn build_job(cj: &CronJob, request: &JobRequest, bucket: u32, created_by: &str) -> Job {
    let template = cj.spec.job_template.clone();
    let template_meta = template.metadata.unwrap_or_default();
    let mut labels: BTreeMap<String, String> = template_meta.labels.unwrap_or_default();
    labels.insert(BUCKET_LABEL.to_owned(), bucket.to_string());
    let mut annotations: BTreeMap<String, String> = template_meta.annotations.unwrap_or_default();
    annotations.insert(SCHEDULED_TIMESTAMP_ANNOTATION.to_owned(), request.scheduled_timestamp.clone());
    annotations.insert(CREATED_BY_ANNOTATION.to_owned(), created_by.to_owned());
    Job {
        metadata: ObjectMeta {
            name: Some(request.name.clone()),
            namespace: cj.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: "batch/v1".into(),
                kind: "CronJob".into(),
                name: cj.metadata.name.clone().unwrap_or_default(),
                uid: cj.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    }
}

/// `status` as the API wants it; active references carry kind, apiVersion, namespace,
/// name, uid and resourceVersion, as upstream's do.
pub fn status_to_k8s(namespace: &str, status: &CronJobStatus) -> k8s_openapi::api::batch::v1::CronJobStatus {
    k8s_openapi::api::batch::v1::CronJobStatus {
        active: (!status.active.is_empty()).then(|| {
            status
                .active
                .iter()
                .map(|r| ObjectReference {
                    api_version: Some("batch/v1".into()),
                    kind: Some("Job".into()),
                    namespace: Some(namespace.to_owned()),
                    name: Some(r.name.clone()),
                    uid: Some(r.uid.clone()),
                    resource_version: Some(r.resource_version.clone()),
                    ..ObjectReference::default()
                })
                .collect()
        }),
        last_schedule_time: status.last_schedule_time.map(to_k8s),
        last_successful_time: status.last_successful_time.map(to_k8s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// managedFields as kube-apiserver writes them: created by `kubectl apply`, the schedule
    /// edited with `kubectl edit`, then cronshard's label patch and status write.
    #[test]
    fn the_schedule_changed_when_the_entry_that_owns_it_last_changed() {
        let cj: CronJob = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "nightly", "namespace": "default", "uid": "u",
                "creationTimestamp": "2026-11-01T00:00:00Z",
                "managedFields": [
                    {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "batch/v1",
                     "time": "2026-11-01T00:00:00Z", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:spec": {"f:concurrencyPolicy": {}, "f:jobTemplate": {"f:spec": {}}}}},
                    {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "batch/v1",
                     "time": "2026-12-03T10:00:00Z", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:spec": {"f:schedule": {}}}},
                    {"manager": "cronshard", "operation": "Update", "apiVersion": "batch/v1",
                     "time": "2026-12-03T10:05:00Z", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:metadata": {"f:labels": {"f:cronshard.io/bucket": {}}}}},
                    {"manager": "cronshard", "operation": "Update", "apiVersion": "batch/v1",
                     "time": "2026-12-03T11:00:00Z", "fieldsType": "FieldsV1", "subresource": "status",
                     "fieldsV1": {"f:status": {"f:lastScheduleTime": {}}}}
                ]},
            "spec": {"schedule": "0 5 * * *", "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}}
        }))
        .expect("a valid CronJob");
        let at = |s: &str| s.parse::<Timestamp>().expect("time");
        assert_eq!(schedule_changed_at(&cj.metadata), Some(at("2026-12-03T10:00:00Z")));
        assert_eq!(cronjob_state(&cj).and_then(|s| s.schedule_changed_at), Some(at("2026-12-03T10:00:00Z")));
        let mut without = cj.clone();
        without.metadata.managed_fields = None;
        assert_eq!(schedule_changed_at(&without.metadata), None, "a server that keeps none");
        let mut unedited = cj.clone();
        if let Some(entries) = unedited.metadata.managed_fields.as_mut() {
            entries.retain(|e| e.manager.as_deref() != Some("kubectl-edit"));
            entries[0].fields_v1 = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1(
                serde_json::json!({"f:spec": {"f:schedule": {}}}),
            ));
        }
        assert_eq!(schedule_changed_at(&unedited.metadata), None, "set at creation: not a change");
        let cached = crate::objects::cached::CachedCronJob::new(cj);
        assert_eq!(cached.schedule_changed_at(), Some(at("2026-12-03T10:00:00Z")), "kept past the cache");
    }
}
