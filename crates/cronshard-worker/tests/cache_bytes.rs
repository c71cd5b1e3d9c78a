//! Bytes of heap per object in a bucket's cache, counted by dhat's allocator: a CronJob
//! decoded as k8s-openapi holds it against the cache's JSON form, and a Job decoded against
//! its projection. Printed for the README, and bounded so a regression fails.

use std::io::Write;

use cronshard_sync::ChildJob;
use cronshard_worker::objects::cached::CachedCronJob;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use serde_json::{Value, json};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const OBJECTS: usize = 1000;

/// A CronJob as kube-apiserver returns it: defaults applied, managedFields, one container
/// with env, resources and a volume.
fn cronjob(i: usize) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": format!("report-{i}"), "namespace": "team-a", "uid": format!("6f1c2a1e-0000-4000-8000-{i:012}"),
            "resourceVersion": "123456", "generation": 1, "creationTimestamp": "2026-11-30T00:00:00Z",
            "labels": {"app": "report", "cronshard.io/bucket": "17"},
            "managedFields": [{"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "batch/v1",
                "time": "2026-11-30T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:schedule": {}, "f:jobTemplate": {"f:spec": {"f:template": {"f:spec": {"f:containers": {}}}}}}}}]},
        "spec": {"schedule": "0 * * * *", "concurrencyPolicy": "Forbid", "suspend": false,
            "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
            "jobTemplate": {"metadata": {"labels": {"app": "report"}}, "spec": {"backoffLimit": 6, "template": {
                "metadata": {"labels": {"app": "report"}},
                "spec": {"restartPolicy": "OnFailure", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
                    "terminationGracePeriodSeconds": 30, "securityContext": {},
                    "containers": [{"name": "report", "image": "registry.example.com/report:1.4.2",
                        "args": ["--since", "1h"], "imagePullPolicy": "IfNotPresent",
                        "env": [{"name": "DB_HOST", "value": "db.team-a"}, {"name": "MODE", "value": "hourly"}],
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                        "volumeMounts": [{"name": "config", "mountPath": "/etc/report"}],
                        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
                    "volumes": [{"name": "config", "configMap": {"name": "report", "defaultMode": 420}}]}}}}},
        "status": {"lastScheduleTime": "2026-11-30T23:00:00Z", "lastSuccessfulTime": "2026-11-30T23:00:41Z"}})
}

/// A finished Job of that CronJob, as kube-apiserver returns it.
fn job(i: usize) -> Value {
    let mut template = cronjob(i)["spec"]["jobTemplate"].clone();
    template["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"] =
        json!(format!("report-{i}-29400180"));
    json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": format!("report-{i}-29400180"), "namespace": "team-a", "uid": format!("9a0b-{i:012}"),
            "resourceVersion": "123999", "creationTimestamp": "2026-11-30T23:00:00Z",
            "labels": {"app": "report", "cronshard.io/bucket": "17", "batch.kubernetes.io/job-name": format!("report-{i}-29400180")},
            "annotations": {"batch.kubernetes.io/cronjob-scheduled-timestamp": "2026-11-30T23:00:00Z",
                "cronshard.io/created-by": "cronshard-7d9f-abcde/17/3"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": format!("report-{i}"),
                "uid": format!("6f1c2a1e-0000-4000-8000-{i:012}"), "controller": true, "blockOwnerDeletion": true}]},
        "spec": template["spec"],
        "status": {"startTime": "2026-11-30T23:00:00Z", "completionTime": "2026-11-30T23:00:41Z", "succeeded": 1,
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True",
                "lastProbeTime": "2026-11-30T23:00:41Z", "lastTransitionTime": "2026-11-30T23:00:41Z"}]}})
}

/// Heap bytes per object that `make` leaves allocated, over [`OBJECTS`] objects.
fn bytes_per_object<T>(make: impl Fn(usize) -> T) -> usize {
    let before = dhat::HeapStats::get().curr_bytes;
    let held: Vec<T> = (0..OBJECTS).map(make).collect();
    let after = dhat::HeapStats::get().curr_bytes;
    drop(held);
    (after - before) / OBJECTS
}

#[test]
fn the_cache_holds_a_fraction_of_the_decoded_objects() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let decode_cronjob = |i| serde_json::from_value::<CronJob>(cronjob(i)).expect("a valid CronJob");
    let decode_job = |i| serde_json::from_value::<Job>(job(i)).expect("a valid Job");
    let cronjob_decoded = bytes_per_object(decode_cronjob);
    let cronjob_cached = bytes_per_object(|i| CachedCronJob::new(decode_cronjob(i)));
    let job_decoded = bytes_per_object(decode_job);
    let job_projected =
        bytes_per_object(|i| -> ChildJob { cronshard_worker::objects::convert::child_job(&decode_job(i)) });
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "heap bytes per object (dhat), {OBJECTS} objects:");
    let _ = writeln!(out, "  CronJob decoded {cronjob_decoded:>6}   cached as JSON  {cronjob_cached:>6}");
    let _ = writeln!(out, "  Job     decoded {job_decoded:>6}   projected       {job_projected:>6}");
    assert!(cronjob_cached * 3 < cronjob_decoded, "{cronjob_cached} vs {cronjob_decoded}");
    assert!(job_projected * 8 < job_decoded, "{job_projected} vs {job_decoded}");
}
