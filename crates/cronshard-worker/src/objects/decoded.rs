//! Objects as the watches deliver them, decodable or not. One object the client cannot
//! decode (stored before a schema change, or by a buggy writer) would otherwise fail its
//! whole list, and the bucket's watch with it, forever; here it is set aside and reported,
//! and its bucket keeps working. What the controller never reads of it ([`Unread`]) is
//! skipped on the way.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::watcher;
use serde::de::{DeserializeOwned, DeserializeSeed};
use serde::{Deserialize, Deserializer};

use super::unread::{Trimmed, Unread};

/// An object of kind `K`, or what could be read of one that does not decode.
#[derive(Clone, Debug)]
pub enum Decoded<K> {
    Ok(K),
    Undecodable { metadata: Box<ObjectMeta>, error: String },
}

impl<'de, K: DeserializeOwned + Unread> Deserialize<'de> for Decoded<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Trimmed { unread: K::UNREAD }.deserialize(deserializer)?;
        Ok(match K::deserialize(&value) {
            Ok(object) => Decoded::Ok(object),
            Err(e) => Decoded::Undecodable {
                metadata: Box::new(ObjectMeta::deserialize(&value["metadata"]).unwrap_or_default()),
                error: e.to_string(),
            },
        })
    }
}

impl<K: kube::Resource<DynamicType = ()>> kube::Resource for Decoded<K> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        match self {
            Decoded::Ok(object) => object.meta(),
            Decoded::Undecodable { metadata, .. } => metadata,
        }
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Decoded::Ok(object) => object.meta_mut(),
            Decoded::Undecodable { metadata, .. } => metadata,
        }
    }
}

/// An object that does not decode, for the report.
#[derive(Clone, Debug)]
pub struct Undecodable {
    pub metadata: ObjectMeta,
    pub error: String,
}

/// The event with decodable objects only: an undecodable object in the initial list is left
/// out, and one changed later is dropped from the caches (as a deletion); either way it goes
/// to `report`.
pub fn decodable<K: kube::Resource + Default>(
    event: watcher::Event<Decoded<K>>,
    mut report: impl FnMut(Undecodable),
) -> Option<watcher::Event<K>> {
    let mut take = |object: Decoded<K>| match object {
        Decoded::Ok(object) => Ok(object),
        Decoded::Undecodable { metadata, error } => {
            report(Undecodable { metadata: (*metadata).clone(), error });
            let mut gone = K::default();
            *gone.meta_mut() = *metadata;
            Err(gone)
        }
    };
    Some(match event {
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
        watcher::Event::InitApply(object) => watcher::Event::InitApply(take(object).ok()?),
        watcher::Event::Apply(object) => match take(object) {
            Ok(object) => watcher::Event::Apply(object),
            Err(gone) => watcher::Event::Delete(gone),
        },
        watcher::Event::Delete(object) => watcher::Event::Delete(take(object).unwrap_or_else(|gone| gone)),
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::batch::v1::{CronJob, Job};

    use super::*;

    #[test]
    fn a_bad_object_is_set_aside_with_its_name_and_a_good_one_decodes() {
        let good: Decoded<CronJob> = serde_json::from_value(serde_json::json!({
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "ok", "namespace": "a"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {}}}))
        .expect("never fails");
        assert!(matches!(good, Decoded::Ok(_)));
        let bad: Decoded<CronJob> = serde_json::from_value(serde_json::json!({
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "bad", "namespace": "a"},
            "spec": {"schedule": 5, "jobTemplate": {}}}))
        .expect("never fails");
        let mut reported = Vec::new();
        let event = decodable(watcher::Event::Apply(bad.clone()), |u| reported.push(u));
        assert!(matches!(event, Some(watcher::Event::Delete(cj)) if cj.metadata.name.as_deref() == Some("bad")));
        assert!(decodable(watcher::Event::InitApply(bad), |u| reported.push(u)).is_none());
        assert_eq!(reported.len(), 2);
        assert!(reported[0].error.contains("invalid type"), "{}", reported[0].error);
    }

    #[test]
    fn a_job_decodes_without_what_is_never_read_from_a_watch_event_and_from_a_list() {
        let job = serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "a", "managedFields": [{"manager": "m"}],
                "annotations": {"batch.kubernetes.io/cronjob-scheduled-timestamp": "2026-11-30T23:00:00Z"}},
            "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}, "status": {"ready": 1}});
        let check = |decoded: &Decoded<Job>| {
            let Decoded::Ok(job) = decoded else { panic!("decodes: {decoded:?}") };
            assert!(job.spec.is_none() && job.metadata.managed_fields.is_none());
            assert_eq!(job.status.as_ref().and_then(|s| s.ready), Some(1));
            assert_eq!(job.metadata.annotations.as_ref().map(|a| a.len()), Some(1));
        };
        // Watch events decode straight from the text; lists through serde's buffered content
        // (kube's ObjectList flattens its type fields).
        let event = serde_json::json!({"type": "ADDED", "object": job}).to_string();
        match serde_json::from_str::<kube::api::WatchEvent<Decoded<Job>>>(&event).expect("an event") {
            kube::api::WatchEvent::Added(decoded) => check(&decoded),
            other => panic!("an ADDED event: {other:?}"),
        }
        let list =
            serde_json::json!({"apiVersion": "batch/v1", "kind": "JobList", "metadata": {"resourceVersion": "5"},
            "items": [job]})
            .to_string();
        let list: kube::core::ObjectList<Decoded<Job>> = serde_json::from_str(&list).expect("a list");
        check(&list.items[0]);
    }
}
