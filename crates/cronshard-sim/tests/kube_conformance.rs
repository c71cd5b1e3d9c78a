//! kube-rs against the in-process simulator: the list/watch/concurrency behaviour cronshard
//! depends on, checked with the same client library cronshard uses.

use std::time::Duration;

use axum::http::Request;
use cronshard_sim::{Config, SimState};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::json;

async fn start(config: Config) -> (SimState, kube::Client) {
    let state = SimState::new(config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(axum::serve(listener, cronshard_sim::app(state.clone())).into_future());
    let url = format!("http://{addr}").parse().expect("url");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("client");
    (state, client)
}

fn cronjob(name: &str) -> CronJob {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}
    }))
    .expect("cronjob")
}

fn job_owned_by(name: &str, owner: &CronJob) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "CronJob", "name": owner.metadata.name, "uid": owner.metadata.uid,
            "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}
    }))
    .expect("job")
}

fn api_error(err: kube::Error) -> Box<kube::core::Status> {
    match err {
        kube::Error::Api(status) => status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn create_many(api: &Api<CronJob>, names: impl IntoIterator<Item = String>) {
    for name in names {
        api.create(&PostParams::default(), &cronjob(&name)).await.expect("create");
    }
}

#[tokio::test]
async fn paginated_list_is_consistent_across_pages() {
    let (_state, client) = start(Config::default()).await;
    let api: Api<CronJob> = Api::default_namespaced(client);
    create_many(&api, (0..7).map(|i| format!("cj-{i}"))).await;

    let first = api.list(&ListParams::default().limit(3)).await.expect("page 1");
    let token = first.metadata.continue_.clone().expect("continue token");
    let rv = first.metadata.resource_version.clone().expect("rv");
    // Written between pages: a consistent list must not show it.
    api.create(&PostParams::default(), &cronjob("cj-00-late")).await.expect("create");
    api.delete("cj-5", &DeleteParams::default()).await.expect("delete");

    let second = api.list(&ListParams::default().limit(3).continue_token(&token)).await.expect("page 2");
    let third = api
        .list(&ListParams::default().limit(3).continue_token(second.metadata.continue_.as_deref().expect("more")))
        .await
        .expect("page 3");
    assert_eq!(third.metadata.continue_.as_deref().unwrap_or(""), "");
    for page in [&second, &third] {
        assert_eq!(
            page.metadata.resource_version.as_ref(),
            Some(&rv),
            "every page is read at the first page's revision"
        );
    }
    let names: Vec<String> = [first, second, third]
        .iter()
        .flat_map(|p| p.items.iter().map(|c| c.metadata.name.clone().unwrap_or_default()))
        .collect();
    assert_eq!(names, (0..7).map(|i| format!("cj-{i}")).collect::<Vec<_>>());
}

#[tokio::test]
async fn continue_token_expired_by_compaction_is_410_with_the_exact_message() {
    let (state, client) = start(Config::default()).await;
    let api: Api<CronJob> = Api::default_namespaced(client);
    create_many(&api, (0..5).map(|i| format!("cj-{i}"))).await;
    let first = api.list(&ListParams::default().limit(2)).await.expect("page 1");
    api.create(&PostParams::default(), &cronjob("newer")).await.expect("create");
    state.store().compact_now();
    let err = api
        .list(&ListParams::default().limit(2).continue_token(first.metadata.continue_.as_deref().expect("token")))
        .await
        .expect_err("compacted");
    let status = api_error(err);
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    assert_eq!(
        status.message,
        "The provided continue parameter is too old to display a consistent list result. You can start a new list \
         without the continue parameter, or use the continue token in this response to retrieve the remainder of the \
         results. Continuing with the provided token results in an inconsistent list - objects that were created, \
         modified, or deleted between the time the first chunk was returned and now may show up in the list."
    );
    let inconsistent = status.metadata.and_then(|m| m.continue_).expect("inconsistent continue token");
    let rest = api.list(&ListParams::default().limit(10).continue_token(&inconsistent)).await.expect("remainder");
    let names: Vec<_> = rest.items.iter().filter_map(|c| c.metadata.name.clone()).collect();
    assert_eq!(names, ["cj-2", "cj-3", "cj-4", "newer"]);
}

#[tokio::test]
async fn watcher_recovers_from_410_and_ends_with_a_correct_store() {
    let (state, client) = start(Config::default()).await;
    let api: Api<CronJob> = Api::default_namespaced(client);
    create_many(&api, (0..4).map(|i| format!("cj-{i}"))).await;
    let (reader, writer) = reflector::store();
    let stream = reflector(writer, watcher(api.clone(), watcher::Config::default())).applied_objects();
    let watching = tokio::spawn(stream.for_each(|_| async {}));
    reader.wait_until_ready().await.expect("initial list");

    // While the server is paused the watch ends; changes land and history is compacted,
    // so the re-watch from the old resourceVersion gets 410 and the watcher must relist.
    state.0.faults.update(|f| f.paused = true);
    state.drop_watches();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let store = state.store();
    store.delete(cronshard_sim::Resource::CronJobs, "default", "cj-0", None).expect("delete");
    let mut changed = serde_json::to_value(cronjob("cj-1")).expect("json");
    changed["metadata"]["namespace"] = json!("default");
    changed["metadata"]["labels"] = json!({"changed": "yes"});
    store.update(cronshard_sim::Resource::CronJobs, "default", "cj-1", |_| Ok(Some(changed))).expect("update");
    let mut added = serde_json::to_value(cronjob("cj-9")).expect("json");
    added["metadata"]["namespace"] = json!("default");
    store.create(cronshard_sim::Resource::CronJobs, added).expect("create");
    store.compact_now();
    state.0.faults.update(|f| f.paused = false);

    let expected = vec!["cj-1".to_owned(), "cj-2".into(), "cj-3".into(), "cj-9".into()];
    let converged = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let mut names: Vec<String> = reader.state().iter().filter_map(|c| c.metadata.name.clone()).collect();
            names.sort();
            let labelled = reader
                .state()
                .iter()
                .any(|c| c.metadata.labels.as_ref().is_some_and(|l| l.get("changed").is_some_and(|v| v == "yes")));
            if names == expected && labelled {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        converged.is_ok(),
        "store: {:?}",
        reader.state().iter().map(|c| c.metadata.name.clone()).collect::<Vec<_>>()
    );
    let relisted = state.0.audit.since(0).iter().filter(|r| r.verb == "list").count();
    assert!(relisted >= 2, "the watcher relisted after the 410");
    watching.abort();
}

#[tokio::test]
async fn stale_resource_version_on_put_is_409() {
    let (_state, client) = start(Config::default()).await;
    let api: Api<CronJob> = Api::default_namespaced(client);
    let created = api.create(&PostParams::default(), &cronjob("cj")).await.expect("create");
    let mut first = created.clone();
    first.spec.suspend = Some(true);
    api.replace("cj", &PostParams::default(), &first).await.expect("first update");
    let mut stale = created;
    stale.spec.schedule = "0 * * * *".into();
    let status = api_error(api.replace("cj", &PostParams::default(), &stale).await.expect_err("stale"));
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        status.message,
        "Operation cannot be fulfilled on cronjobs.batch \"cj\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let dup = api_error(api.create(&PostParams::default(), &cronjob("cj")).await.expect_err("exists"));
    assert_eq!(
        (dup.code, dup.reason.as_str(), dup.message.as_str()),
        (409, "AlreadyExists", "cronjobs.batch \"cj\" already exists")
    );
}

#[tokio::test]
async fn selector_transitions_are_added_and_deleted() {
    let (_state, client) = start(Config::default()).await;
    let api: Api<CronJob> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &cronjob("cj")).await.expect("create");
    let list = api.list(&ListParams::default()).await.expect("list");
    let rv = list.metadata.resource_version.expect("rv");
    let mut events =
        api.watch(&WatchParams::default().labels("cronshard.io/bucket=7"), &rv).await.expect("watch").boxed();
    let label =
        |value: serde_json::Value| Patch::Merge(json!({"metadata": {"labels": {"cronshard.io/bucket": value}}}));
    api.patch("cj", &PatchParams::default(), &label(json!("7"))).await.expect("enter");
    api.patch("cj", &PatchParams::default(), &label(json!("8"))).await.expect("leave");
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(5), events.try_next()).await.expect("event in time");
        match event.expect("stream ok").expect("not ended") {
            WatchEvent::Added(cj) => {
                seen.push(("ADDED", cj.metadata.labels.unwrap_or_default()["cronshard.io/bucket"].clone()))
            }
            WatchEvent::Deleted(cj) => {
                seen.push(("DELETED", cj.metadata.labels.unwrap_or_default()["cronshard.io/bucket"].clone()))
            }
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    // DELETED carries the last state that matched, as the watch cache sends it.
    assert_eq!(seen, [("ADDED", "7".to_owned()), ("DELETED", "7".to_owned())]);
}

#[tokio::test]
async fn send_initial_events_ends_with_the_initial_events_end_bookmark() {
    let (_state, client) = start(Config::default()).await;
    let api: Api<CronJob> = Api::default_namespaced(client);
    create_many(&api, (0..3).map(|i| format!("cj-{i}"))).await;
    let mut events = api.watch(&WatchParams::streaming_lists(), "").await.expect("watch").boxed();
    let mut added = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(5), events.try_next()).await.expect("in time");
        match event.expect("ok").expect("not ended") {
            WatchEvent::Added(cj) => added.push(cj.metadata.name.unwrap_or_default()),
            WatchEvent::Bookmark(b) => {
                assert_eq!(b.metadata.annotations.get("k8s.io/initial-events-end").map(String::as_str), Some("true"));
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(added, ["cj-0", "cj-1", "cj-2"]);
    // The watcher's streaming-list mode works end to end.
    let (reader, writer) = reflector::store();
    let config = watcher::Config::default().streaming_lists();
    let task = tokio::spawn(reflector(writer, watcher(api, config)).applied_objects().for_each(|_| async {}));
    tokio::time::timeout(Duration::from_secs(5), reader.wait_until_ready()).await.expect("ready").expect("store");
    assert_eq!(reader.state().len(), 3);
    task.abort();
}

#[tokio::test]
async fn deleting_a_cronjob_garbage_collects_its_jobs() {
    let (state, client) = start(Config::default()).await;
    let cronjobs: Api<CronJob> = Api::default_namespaced(client.clone());
    let jobs: Api<Job> = Api::default_namespaced(client);
    let owner = cronjobs.create(&PostParams::default(), &cronjob("nightly")).await.expect("create");
    let kept = cronjobs.create(&PostParams::default(), &cronjob("kept")).await.expect("create");
    for name in ["nightly-1", "nightly-2"] {
        jobs.create(&PostParams::default(), &job_owned_by(name, &owner)).await.expect("job");
    }
    jobs.create(&PostParams::default(), &job_owned_by("kept-1", &kept)).await.expect("job");
    cronjobs.delete("nightly", &DeleteParams::default()).await.expect("delete");
    let left: Vec<String> = jobs
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|j| j.metadata.name)
        .collect();
    assert_eq!(left, ["kept-1"]);
    // Orphan keeps the Jobs and removes the owner reference.
    cronjobs.delete("kept", &DeleteParams::orphan()).await.expect("orphan delete");
    let orphan = jobs.get("kept-1").await.expect("still there");
    assert!(orphan.metadata.owner_references.unwrap_or_default().is_empty());
    assert_eq!(state.store().count(cronshard_sim::Resource::CronJobs), 0);
}

/// Raw requests for the error paths, answered with the Status the real server gives.
async fn raw(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, serde_json::Value) {
    let request =
        Request::builder().method(method).uri(path).header("content-type", content_type).body(body).expect("request");
    match client.request_text(request).await {
        Ok(text) => (200, serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)),
        Err(e) => {
            let status = api_error(e);
            (status.code, json!({"reason": status.reason, "message": status.message}))
        }
    }
}

/// Method, path, content type, body, expected code, expected reason.
type BadCase<'a> = (&'a str, String, &'a str, Vec<u8>, u16, &'a str);

/// The CronJob `name` as JSON, with `field` (under `spec`) set to `value`.
fn cronjob_with(name: &str, field: &str, value: serde_json::Value) -> Vec<u8> {
    let mut v = serde_json::to_value(cronjob(name)).expect("v");
    v["spec"][field] = value;
    serde_json::to_vec(&v).expect("json")
}

const CRONJOBS: &str = "/apis/batch/v1/namespaces/default/cronjobs";

fn bad_cases() -> Vec<BadCase<'static>> {
    let base = CRONJOBS;
    let good = serde_json::to_vec(&cronjob("ok")).expect("json");
    let job = br#"{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"x"}}"#.to_vec();
    let elsewhere = "/apis/batch/v1/namespaces/nowhere/cronjobs".to_owned();
    vec![
        ("POST", base.into(), "application/json", b"{not json".to_vec(), 400, "BadRequest"),
        ("POST", base.into(), "application/json", job, 400, "BadRequest"),
        (
            "POST",
            format!("{base}?fieldValidation=Strict"),
            "application/json",
            cronjob_with("u", "bogus", json!(1)),
            400,
            "BadRequest",
        ),
        ("POST", base.into(), "application/json", vec![b' '; 4 * 1024 * 1024], 413, "RequestEntityTooLarge"),
        ("POST", base.into(), "application/yaml", good.clone(), 415, "UnsupportedMediaType"),
        ("POST", elsewhere, "application/json", good, 404, "NotFound"),
        (
            "POST",
            base.into(),
            "application/json",
            cronjob_with("bad-schedule", "schedule", json!("* * * * 7")),
            422,
            "Invalid",
        ),
        (
            "POST",
            base.into(),
            "application/json",
            serde_json::to_vec(&cronjob(&"x".repeat(53))).expect("json"),
            422,
            "Invalid",
        ),
        ("GET", format!("{base}?labelSelector=a%20b"), "", vec![], 400, "BadRequest"),
        ("GET", format!("{base}?fieldSelector=spec.schedule%3Dx"), "", vec![], 400, "BadRequest"),
        ("GET", format!("{base}?resourceVersion=abc"), "", vec![], 400, "BadRequest"),
        ("GET", format!("{base}?continue=garbage!!"), "", vec![], 400, "BadRequest"),
        ("GET", format!("{base}?resourceVersionMatch=Exact"), "", vec![], 422, "Invalid"),
        ("GET", format!("{base}/missing"), "", vec![], 404, "NotFound"),
        ("GET", "/apis/batch/v2/cronjobs".into(), "", vec![], 404, "NotFound"),
        ("PATCH", format!("{base}/missing"), "application/apply-patch+yaml", vec![], 415, "UnsupportedMediaType"),
    ]
}

#[tokio::test]
async fn bad_input_gets_the_real_status_codes() {
    let (_state, client) = start(Config::default()).await;
    for (method, path, content_type, body, code, reason) in bad_cases() {
        let (got, status) = raw(&client, method, &path, content_type, body).await;
        assert_eq!((got, status["reason"].as_str().unwrap_or("")), (code, reason), "{method} {path}: {status}");
    }
}

#[tokio::test]
async fn unknown_fields_are_dropped_with_a_warning_and_unknown_zones_are_invalid() {
    let (_state, client) = start(Config::default()).await;
    let body = cronjob_with("warned", "bogus", json!(1));
    let (code, created) = raw(&client, "POST", CRONJOBS, "application/json", body).await;
    assert_eq!(code, 200);
    assert!(created["spec"].get("bogus").is_none());
    let body = cronjob_with("tz", "timeZone", json!("Mars/Olympus"));
    let (_, invalid) = raw(&client, "POST", CRONJOBS, "application/json", body).await;
    assert!(
        invalid["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("CronJob.batch \"tz\" is invalid: spec.timeZone: Invalid value: \"Mars/Olympus\""),
        "{invalid}"
    );
}
