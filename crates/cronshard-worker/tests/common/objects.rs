//! A CronJob and one of its Jobs as kube-apiserver returns them, for the tests and benchmarks
//! that count what decoding them costs.
#![allow(dead_code, unreachable_pub)]

use serde_json::{Value, json};

/// A CronJob as kube-apiserver returns it: defaults applied, managedFields, one container
/// with env, resources and a volume.
pub fn cronjob(i: usize) -> Value {
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
pub fn job(i: usize) -> Value {
    let mut template = cronjob(i)["spec"]["jobTemplate"].clone();
    template["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"] =
        json!(format!("report-{i}-29400180"));
    json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": format!("report-{i}-29400180"), "namespace": "team-a", "uid": format!("9a0b-{i:012}"),
            "resourceVersion": "123999", "creationTimestamp": "2026-11-30T23:00:00Z",
            "labels": {"app": "report", "cronshard.io/bucket": "17", "batch.kubernetes.io/job-name": format!("report-{i}-29400180")},
            "annotations": {"batch.kubernetes.io/cronjob-scheduled-timestamp": "2026-11-30T23:00:00Z",
                "cronshard.io/created-by": "cronshard-7d9f-abcde/17/3"},
            "managedFields": [
                {"manager": "cronshard", "operation": "Update", "apiVersion": "batch/v1", "time": "2026-11-30T23:00:00Z",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:annotations": {
                        "f:batch.kubernetes.io/cronjob-scheduled-timestamp": {}, "f:cronshard.io/created-by": {}},
                        "f:labels": {"f:app": {}, "f:cronshard.io/bucket": {}}, "f:ownerReferences": {}},
                    "f:spec": {"f:backoffLimit": {}, "f:template": {"f:metadata": {"f:labels": {"f:app": {}}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"report\"}": {"f:args": {}, "f:env": {}, "f:image": {},
                            "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {"f:limits": {"f:memory": {}},
                            "f:requests": {"f:cpu": {}, "f:memory": {}}}, "f:terminationMessagePath": {},
                            "f:terminationMessagePolicy": {}, "f:volumeMounts": {}}},
                        "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {},
                        "f:terminationGracePeriodSeconds": {}, "f:volumes": {}}}}}},
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "batch/v1",
                    "time": "2026-11-30T23:00:41Z", "fieldsType": "FieldsV1", "subresource": "status",
                    "fieldsV1": {"f:status": {"f:completionTime": {}, "f:conditions": {}, "f:ready": {},
                        "f:startTime": {}, "f:succeeded": {}, "f:terminating": {}, "f:uncountedTerminatedPods": {}}}}],
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": format!("report-{i}"),
                "uid": format!("6f1c2a1e-0000-4000-8000-{i:012}"), "controller": true, "blockOwnerDeletion": true}]},
        "spec": template["spec"],
        "status": {"startTime": "2026-11-30T23:00:00Z", "completionTime": "2026-11-30T23:00:41Z", "succeeded": 1,
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True",
                "lastProbeTime": "2026-11-30T23:00:41Z", "lastTransitionTime": "2026-11-30T23:00:41Z"}]}})
}

/// One line of a watch as kube-apiserver writes it: the type before the object (a `json!`
/// map would sort "object" first, which makes serde buffer the whole object).
pub fn watch_event(kind: &str, object: &Value) -> String {
    format!(r#"{{"type":"{kind}","object":{object}}}"#)
}
