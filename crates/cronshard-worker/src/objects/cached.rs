//! The compact form in which a bucket's cache keeps a CronJob between syncs.
//!
//! A decoded k8s-openapi `CronJob` takes about 6 KB of heap however small its JSON: every
//! optional field of the pod template is laid out inline, and one container alone is 2 KB.
//! The cache keeps the CronJob's JSON instead (without `managedFields`, of which it keeps
//! only when the schedule last changed) and decodes it when a sync or a status write needs the object: that happens per
//! run and per change, not per CronJob held. Jobs are kept as [`crate::ChildJob`]
//! projections, which is all a sync reads of them.

use std::sync::Arc;

use k8s_openapi::api::batch::v1::CronJob;

/// A CronJob as the cache holds it.
#[derive(Clone, Debug)]
pub struct CachedCronJob {
    /// The object's JSON; shared by the cache and the status writes in flight.
    json: Arc<str>,
    /// `namespace/name`.
    key: String,
    uid: Option<String>,
    resource_version: Option<u64>,
    /// When `spec.schedule` or `spec.timeZone` last changed (from the managedFields).
    schedule_changed_at: Option<cronshard_types::Timestamp>,
}

impl CachedCronJob {
    /// Keeps `cj` without its managedFields (but with when its schedule last changed).
    pub fn new(mut cj: CronJob) -> Self {
        let schedule_changed_at = crate::objects::convert::schedule_changed_at(&cj.metadata);
        cj.metadata.managed_fields = None;
        let key = crate::objects::convert::key(&cj.metadata);
        let uid = cj.metadata.uid.clone();
        let resource_version = cj.metadata.resource_version.as_deref().and_then(|v| v.parse().ok());
        // Serializing a k8s-openapi object cannot fail: every field is a plain JSON value.
        let json = serde_json::to_string(&cj).unwrap_or_default();
        CachedCronJob { json: json.into(), key, uid, resource_version, schedule_changed_at }
    }

    /// When `spec.schedule` or `spec.timeZone` last changed, as the managedFields said.
    pub fn schedule_changed_at(&self) -> Option<cronshard_types::Timestamp> {
        self.schedule_changed_at
    }

    /// The object, as it was given to [`CachedCronJob::new`] less its managedFields.
    pub fn decode(&self) -> Result<CronJob, serde_json::Error> {
        serde_json::from_str(&self.json)
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    /// The resourceVersion as a number (kube-apiserver's and the simulator's are etcd
    /// revisions), to tell which of two copies is newer.
    pub fn resource_version(&self) -> Option<u64> {
        self.resource_version
    }

    /// Bytes of heap this entry holds (its JSON, key and uid).
    pub fn heap_bytes(&self) -> usize {
        self.json.len() + self.key.len() + self.uid.as_ref().map_or(0, String::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cronjob_comes_back_whole_without_its_managed_fields() {
        let cj: CronJob = serde_json::from_value(serde_json::json!({
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": "a", "uid": "u1", "resourceVersion": "42",
                "labels": {"cronshard.io/bucket": "3"},
                "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:schedule": {}}}}]},
            "spec": {"schedule": "0 3 * * *", "timeZone": "Europe/Berlin",
                "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "args": ["date"]}]}}}}},
            "status": {"lastScheduleTime": "2026-11-30T02:00:00Z"}}))
        .expect("a valid CronJob");
        let cached = CachedCronJob::new(cj.clone());
        assert_eq!((cached.key(), cached.uid(), cached.resource_version()), ("a/nightly", Some("u1"), Some(42)));
        let back = cached.decode().expect("decodes");
        let mut expected = cj;
        expected.metadata.managed_fields = None;
        assert_eq!(back, expected);
        assert!(!cached.json.contains("managedFields") && cached.heap_bytes() < 600, "{}", cached.json);
    }
}
