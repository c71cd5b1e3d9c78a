use k8s_openapi::api::batch::v1::Job;
use serde_json::json;

use super::*;

fn cronjob(name: &str, uid: &str, rv: &str) -> CachedCronJob {
    CachedCronJob::new(cronjob_object(name, uid, rv))
}

fn cronjob_object(name: &str, uid: &str, rv: &str) -> CronJob {
    serde_json::from_value(json!({
        "metadata": {"namespace": "ns", "name": name, "uid": uid, "resourceVersion": rv,
                     "creationTimestamp": "2026-11-30T00:00:00Z"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {}}}},
    }))
    .expect("a valid object")
}

fn job(name: &str, uid: &str, owner: &str) -> ChildJob {
    let job: Job = serde_json::from_value(json!({
        "metadata": {"namespace": "ns", "name": name, "uid": uid, "ownerReferences": [
            {"apiVersion": "batch/v1", "kind": "CronJob", "name": "x", "uid": owner, "controller": true}]},
    }))
    .expect("a valid object");
    crate::objects::convert::child_job(&job)
}

fn child_names(index: &Index, k: &str) -> Vec<String> {
    let mut names: Vec<String> = index.due(k).expect("cached").0.children.into_iter().map(|c| c.name).collect();
    names.sort();
    names
}

#[test]
fn jobs_are_found_by_their_controlling_cronjob() {
    let mut index = Index::default();
    assert_eq!(index.apply_job(job("a-1", "j1", "u-a")), None, "owner not cached yet");
    assert_eq!(index.apply_cronjob(cronjob("a", "u-a", "1")), "ns/a");
    assert_eq!(index.apply_job(job("a-2", "j2", "u-a")).as_deref(), Some("ns/a"));
    index.apply_cronjob(cronjob("b", "u-b", "1"));
    index.apply_job(job("b-1", "j3", "u-b"));
    assert_eq!(child_names(&index, "ns/a"), ["a-1", "a-2"]);
    assert_eq!(child_names(&index, "ns/b"), ["b-1"]);
    assert_eq!(index.counts(), (2, 3));
}

#[test]
fn a_deleted_job_leaves_its_owner() {
    let mut index = Index::default();
    index.apply_cronjob(cronjob("a", "u-a", "1"));
    index.apply_job(job("a-1", "j1", "u-a"));
    index.apply_job(job("a-2", "j2", "u-a"));
    assert_eq!(index.delete_job(&job("a-1", "j1", "u-a")).as_deref(), Some("ns/a"));
    assert_eq!(child_names(&index, "ns/a"), ["a-2"]);
    assert_eq!(index.counts(), (1, 1));
}

#[test]
fn a_deleted_cronjob_is_gone_with_its_reported_runs() {
    let mut index = Index::default();
    index.apply_cronjob(cronjob("a", "u-a", "1"));
    let at = Timestamp::from_second(1_800_000_000).expect("in range");
    index.set_reported("ns/a", at);
    assert_eq!(index.due("ns/a").expect("cached").0.state.reported_through, Some(at));
    index.delete_cronjob("ns/a");
    assert!(index.due("ns/a").is_none());
    // Its Jobs no longer lead to it.
    assert_eq!(index.apply_job(job("a-1", "j1", "u-a")), None);
    index.apply_cronjob(cronjob("a", "u-a", "2"));
    assert_eq!(index.due("ns/a").expect("cached").0.state.reported_through, None);
    index.set_reported("ns/gone", at);
    assert!(index.due("ns/gone").is_none());
}

#[test]
fn a_reset_replaces_everything_and_keeps_what_was_reported() {
    let mut index = Index::default();
    index.apply_cronjob(cronjob("a", "u-a", "1"));
    index.apply_cronjob(cronjob("b", "u-b", "1"));
    index.apply_job(job("a-1", "j1", "u-a"));
    let at = Timestamp::from_second(1_800_000_000).expect("in range");
    index.set_reported("ns/a", at);
    index.set_reported("ns/b", at);
    let mut keys = index.reset_cronjobs([cronjob("a", "u-a", "5"), cronjob("c", "u-c", "5")]);
    keys.sort();
    assert_eq!(keys, ["ns/a", "ns/c"]);
    assert!(index.due("ns/b").is_none());
    assert_eq!(index.due("ns/a").expect("cached").0.state.reported_through, Some(at));
    index.reset_jobs([job("c-1", "j9", "u-c")]);
    assert!(child_names(&index, "ns/a").is_empty());
    assert_eq!(child_names(&index, "ns/c"), ["c-1"]);
    assert_eq!(index.counts(), (2, 1));
}

#[test]
fn a_written_copy_replaces_the_cached_one_only_if_not_older() {
    let mut index = Index::default();
    index.apply_cronjob(cronjob("a", "u-a", "10"));
    index.apply_fresh(cronjob_object("a", "u-a", "9"));
    assert_eq!(index.cronjob("ns/a").expect("cached").resource_version(), Some(10));
    index.apply_fresh(cronjob_object("a", "u-a", "12"));
    assert_eq!(index.cronjob("ns/a").expect("cached").resource_version(), Some(12));
}

#[test]
fn a_listing_buffers_until_done_and_stays_listed_through_a_relist() {
    let mut listing = Listing::Unlisted;
    listing.add(1);
    assert!(!listing.listed());
    listing.begin();
    listing.add(2);
    listing.add(3);
    assert!(!listing.listed());
    assert_eq!(listing.done(), [2, 3]);
    assert!(listing.listed());
    listing.begin();
    listing.add(4);
    assert!(listing.listed(), "the previous list still serves while a relist arrives");
    assert_eq!(listing.done(), [4]);
}
