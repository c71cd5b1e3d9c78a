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
    })
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
