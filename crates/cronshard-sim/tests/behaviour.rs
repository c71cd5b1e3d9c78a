//! The simulator's own features over HTTP: flow control, watch errors and bookmarks, RBAC,
//! faults, the job runner, the audit log, the clock offset, bulk load and metrics.

use std::time::Duration;

use axum::http::Request;
use cronshard_sim::auth::{Rbac, User};
use cronshard_sim::runner::RunnerConfig;
use cronshard_sim::{AuditRecord, Config, SimState};
use serde_json::{Value, json};

/// The app served in-process, called directly: no client library in between, so nothing
/// retries a 429 behind the test's back (kube-rs does).
async fn start(config: Config) -> (SimState, SimState) {
    let state = SimState::new(config);
    state.spawn_background();
    (state.clone(), state)
}

/// Sends a request; returns code, headers and body text.
async fn send(
    state: &SimState,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> (u16, axum::http::HeaderMap, String) {
    let mut request = Request::builder().method(method).uri(path).header("content-type", "application/json");
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let bytes = if body.is_null() { Vec::new() } else { body.to_string().into_bytes() };
    let request = request.body(axum::body::Body::from(bytes)).expect("request");
    let response = tower::ServiceExt::oneshot(cronshard_sim::app(state.clone()), request).await.expect("infallible");
    let code = response.status().as_u16();
    let headers = response.headers().clone();
    let collected = http_body_util::BodyExt::collect(response.into_body()).await.expect("body").to_bytes();
    (code, headers, String::from_utf8_lossy(&collected).into_owned())
}

fn cronjob(name: &str) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}
    })
}

fn job(name: &str) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}
    })
}

const CRONJOBS: &str = "/apis/batch/v1/namespaces/default/cronjobs";
const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";

#[tokio::test]
async fn writes_beyond_the_admitted_rate_get_429_with_retry_after() {
    let mut config = Config::default();
    config.flow.admitted_writes_per_s = 5.0;
    config.flow.max_queue_wait = Duration::from_millis(300);
    let (_state, client) = start(config).await;
    let sends = (0..20).map(|i| {
        let client = client.clone();
        async move { send(&client, "POST", CRONJOBS, &[], cronjob(&format!("cj-{i}"))).await }
    });
    let results = futures::future::join_all(sends).await;
    let throttled: Vec<_> = results.iter().filter(|(code, ..)| *code == 429).collect();
    let created = results.iter().filter(|(code, ..)| *code == 201).count();
    // One second of burst (5) plus what the 300 ms queue admits.
    assert!((5..=8).contains(&created), "created {created}");
    assert_eq!(created + throttled.len(), 20);
    let (_, headers, body) = throttled[0];
    assert!(
        headers.get("retry-after").is_some_and(|v| v.to_str().is_ok_and(|s| s.parse::<u64>().is_ok_and(|n| n >= 1)))
    );
    let status: Value = serde_json::from_str(body).expect("status");
    assert_eq!(status["reason"], "TooManyRequests");
}

/// kube-apiserver's `timeout`: a write whose turn in the queue comes after its deadline is
/// rejected at the deadline (429) and never written; one whose storage step would end past
/// it gets 504; a malformed one is a 400.
#[tokio::test]
async fn a_write_queued_past_its_timeout_is_rejected_and_not_written() {
    let mut config = Config::default();
    config.flow.admitted_writes_per_s = 2.0;
    config.flow.max_queue_wait = Duration::from_secs(5);
    let (state, client) = start(config).await;
    // A second of burst (2 slots) and a slot now; then one every 500 ms: at 500 ms (inside
    // the 700 ms timeout) and at 1 s (outside).
    let sends =
        (0..6).map(|i| {
            let client = client.clone();
            async move {
                send(&client, "POST", &format!("{CRONJOBS}?timeout=700ms"), &[], cronjob(&format!("cj-{i}"))).await
            }
        });
    let codes: Vec<u16> = futures::future::join_all(sends).await.into_iter().map(|(code, ..)| code).collect();
    let created = codes.iter().filter(|c| **c == 201).count();
    assert_eq!(codes.iter().filter(|c| **c == 429).count() + created, 6, "{codes:?}");
    assert_eq!(created, 4, "{codes:?}");
    let listed: Value = serde_json::from_str(&send(&client, "GET", CRONJOBS, &[], Value::Null).await.2).expect("list");
    assert_eq!(listed["items"].as_array().expect("items").len(), created, "the rejected were not written");

    // Storage past the deadline, on a server with room in its queue.
    drop(state);
    let mut config = Config::default();
    config.latency.write_ms = 300;
    let (state, client) = start(config).await;
    let (code, _, body) = send(&client, "POST", &format!("{CRONJOBS}?timeout=100ms"), &[], cronjob("slow")).await;
    let status: Value = serde_json::from_str(&body).expect("status");
    assert_eq!((code, status["reason"].as_str()), (504, Some("Timeout")), "{body}");
    assert!(state.store().get(cronshard_sim::Resource::CronJobs, "default", "slow").is_none());

    let (code, _, body) = send(&client, "POST", &format!("{CRONJOBS}?timeout=soon"), &[], cronjob("bad")).await;
    let status: Value = serde_json::from_str(&body).expect("status");
    assert_eq!(code, 400);
    assert_eq!(status["message"], "invalid timeout specified in the request URL - time: invalid duration \"soon\"");
}

#[tokio::test]
async fn a_user_beyond_its_seats_gets_429() {
    let mut config = Config::default();
    config.flow.seats_per_user = 1;
    config.latency.read_ms = 300;
    let (_state, client) = start(config).await;
    let gets = (0..2).map(|_| {
        let client = client.clone();
        async move { send(&client, "GET", CRONJOBS, &[], Value::Null).await.0 }
    });
    let mut codes = futures::future::join_all(gets).await;
    codes.sort_unstable();
    assert_eq!(codes, [200, 429]);
}

#[tokio::test]
async fn watch_from_a_compacted_revision_gets_an_error_event() {
    let (state, client) = start(Config::default()).await;
    for i in 0..3 {
        send(&client, "POST", CRONJOBS, &[], cronjob(&format!("cj-{i}"))).await;
    }
    let compacted = state.store().compact_now();
    let (code, _, body) =
        send(&client, "GET", &format!("{CRONJOBS}?watch=true&resourceVersion=2"), &[], Value::Null).await;
    assert_eq!(code, 200);
    let event: Value = serde_json::from_str(body.lines().next().expect("one event")).expect("json");
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["code"], 410);
    assert_eq!(event["object"]["reason"], "Expired");
    assert_eq!(event["object"]["message"], format!("too old resource version: 2 ({compacted})"));
}

#[tokio::test]
async fn watches_send_bookmarks_and_end_at_their_timeout() {
    let config = Config { bookmark_interval: Duration::from_millis(200), ..Config::default() };
    let (_state, client) = start(config).await;
    send(&client, "POST", CRONJOBS, &[], cronjob("cj")).await;
    let started = std::time::Instant::now();
    let path = format!("{CRONJOBS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=1");
    let (code, _, body) = send(&client, "GET", &path, &[], Value::Null).await;
    assert_eq!(code, 200);
    assert!(started.elapsed() >= Duration::from_secs(1) && started.elapsed() < Duration::from_secs(5));
    let types: Vec<String> = body
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("event")["type"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(types[0], "ADDED");
    assert!(types.iter().filter(|t| *t == "BOOKMARK").count() >= 3, "{types:?}");
}

const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: default}
rules:
- apiGroups: [batch]
  resources: [cronjobs]
  verbs: [list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects:
- {kind: User, name: alice}
"#;

#[tokio::test]
async fn rbac_answers_403_like_the_real_authorizer() {
    let mut rbac = Rbac::default();
    rbac.load_yaml(RBAC).expect("rbac");
    let mut config = Config { rbac: Some(rbac), ..Config::default() };
    config
        .tokens
        .insert("alice-token".into(), User { name: "alice".into(), groups: vec!["system:authenticated".into()] });
    let (_state, client) = start(config).await;
    let alice = [("authorization", "Bearer alice-token")];
    assert_eq!(send(&client, "GET", CRONJOBS, &alice, Value::Null).await.0, 200);
    let (code, _, body) = send(&client, "POST", CRONJOBS, &alice, cronjob("x")).await;
    assert_eq!(code, 403);
    let status: Value = serde_json::from_str(&body).expect("status");
    assert_eq!(
        status["message"],
        "cronjobs.batch is forbidden: User \"alice\" cannot create resource \"cronjobs\" in API group \"batch\" in the namespace \"default\""
    );
    let (code, _, body) = send(&client, "GET", "/apis/batch/v1/cronjobs", &alice, Value::Null).await;
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("at the cluster scope"));
    assert_eq!(send(&client, "GET", CRONJOBS, &[("authorization", "Bearer wrong")], Value::Null).await.0, 401);
    // The scheme is case-insensitive, as kube-apiserver reads it.
    assert_eq!(send(&client, "GET", CRONJOBS, &[("authorization", "bearer alice-token")], Value::Null).await.0, 200);
    assert_eq!(send(&client, "GET", CRONJOBS, &[("authorization", "Basic alice-token")], Value::Null).await.0, 401);
    assert_eq!(send(&client, "GET", CRONJOBS, &[], Value::Null).await.0, 403, "anonymous has no binding");
}

#[tokio::test]
async fn partition_and_pause_hold_requests_back() {
    let (_state, client) = start(Config::default()).await;
    let partition = json!({"user": "system:anonymous", "mode": "fail"});
    assert_eq!(send(&client, "POST", "/sim/partition", &[], partition).await.0, 200);
    assert_eq!(send(&client, "GET", CRONJOBS, &[], Value::Null).await.0, 503);
    send(&client, "POST", "/sim/heal", &[], json!({"user": "system:anonymous"})).await;
    assert_eq!(send(&client, "GET", CRONJOBS, &[], Value::Null).await.0, 200);

    send(&client, "POST", "/sim/pause", &[], Value::Null).await;
    let held = tokio::time::timeout(Duration::from_millis(300), send(&client, "GET", CRONJOBS, &[], Value::Null)).await;
    assert!(held.is_err(), "a paused server does not answer");
    send(&client, "POST", "/sim/resume", &[], Value::Null).await;
    assert_eq!(send(&client, "GET", CRONJOBS, &[], Value::Null).await.0, 200);

    let rate = json!({"verb": "list", "rate": 1.0});
    send(&client, "PUT", "/sim/error-rate", &[], rate).await;
    assert_eq!(send(&client, "GET", CRONJOBS, &[], Value::Null).await.0, 500);
}

async fn wait_for_condition(client: &SimState, name: &str) -> Value {
    for _ in 0..100 {
        let (_, _, body) = send(client, "GET", &format!("{JOBS}/{name}"), &[], Value::Null).await;
        let job: Value = serde_json::from_str(&body).expect("job");
        if job["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Complete" || c["type"] == "Failed"))
        {
            return job;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("job {name} never finished");
}

#[tokio::test]
async fn the_job_runner_completes_and_fails_jobs() {
    for (ratio, condition) in [(1.0, "Complete"), (0.0, "Failed")] {
        let runner = RunnerConfig {
            start_delay: Duration::from_millis(20),
            duration_min: Duration::from_millis(50),
            duration_max: Duration::from_millis(100),
            success_ratio: ratio,
        };
        let (_state, client) = start(Config { runner: Some(runner), ..Config::default() }).await;
        let (code, _, created) = send(&client, "POST", JOBS, &[], job("j")).await;
        assert_eq!(code, 201, "{created}");
        let created: Value = serde_json::from_str(&created).expect("job");
        assert_eq!(created["spec"]["backoffLimit"], 6, "defaults");
        let done = wait_for_condition(&client, "j").await;
        let conditions = done["status"]["conditions"].as_array().expect("conditions");
        assert!(conditions.iter().any(|c| c["type"] == condition && c["status"] == "True"), "{done}");
        assert!(done["status"]["startTime"].is_string());
        assert_eq!(done["status"]["completionTime"].is_string(), condition == "Complete");
    }
}

#[tokio::test]
async fn status_subresource_and_main_resource_are_separate() {
    let (_state, client) = start(Config::default()).await;
    let (_, _, body) = send(&client, "POST", CRONJOBS, &[], cronjob("cj")).await;
    let mut object: Value = serde_json::from_str(&body).expect("cj");
    object["status"] = json!({"lastScheduleTime": "2026-01-01T00:00:00Z"});
    object["spec"]["suspend"] = json!(true);
    let (code, _, body) = send(&client, "PUT", &format!("{CRONJOBS}/cj/status"), &[], object.clone()).await;
    assert_eq!(code, 200, "{body}");
    let after_status: Value = serde_json::from_str(&body).expect("cj");
    assert_eq!(after_status["status"]["lastScheduleTime"], "2026-01-01T00:00:00Z");
    assert_eq!(after_status["spec"]["suspend"], false, "a status write ignores spec");
    let mut main = after_status.clone();
    main["status"] = json!({});
    main["spec"]["suspend"] = json!(true);
    let (_, _, body) = send(&client, "PUT", &format!("{CRONJOBS}/cj"), &[], main).await;
    let after_main: Value = serde_json::from_str(&body).expect("cj");
    assert_eq!(after_main["spec"]["suspend"], true);
    assert_eq!(after_main["status"]["lastScheduleTime"], "2026-01-01T00:00:00Z", "a main write ignores status");
    assert_eq!(after_main["metadata"]["generation"], 2);
}

#[tokio::test]
async fn audit_log_records_who_wrote_what() {
    let (state, client) = start(Config::default()).await;
    let mut labelled = cronjob("audited");
    labelled["metadata"]["labels"] = json!({"cronshard.io/bucket": "3"});
    send(&client, "POST", CRONJOBS, &[("user-agent", "cronshard/replica-a")], labelled).await;
    let (_, _, body) = send(&client, "GET", "/sim/audit", &[], Value::Null).await;
    let records: Vec<AuditRecord> = body.lines().map(|l| serde_json::from_str(l).expect("record")).collect();
    let create = records.iter().find(|r| r.verb == "create").expect("create recorded");
    assert_eq!(
        (
            create.user.as_str(),
            create.user_agent.as_str(),
            create.resource.as_str(),
            create.namespace.as_str(),
            create.name.as_str(),
            create.code
        ),
        ("system:anonymous", "cronshard/replica-a", "cronjobs", "default", "audited", 201)
    );
    assert_eq!(create.bucket.as_deref(), Some("3"));
    let stored = state.store().get(cronshard_sim::Resource::CronJobs, "default", "audited").expect("stored");
    assert_eq!(create.resource_version, Some(stored.rv.to_string()));
}

#[tokio::test]
async fn clock_offset_moves_server_time() {
    let (_state, client) = start(Config::default()).await;
    let (code, _, _) = send(&client, "PUT", "/sim/clock", &[], json!({"offsetSeconds": 7200})).await;
    assert_eq!(code, 200);
    let (_, _, body) = send(&client, "POST", CRONJOBS, &[], cronjob("later")).await;
    let created: Value = serde_json::from_str(&body).expect("cj");
    let stamp: jiff::Timestamp =
        created["metadata"]["creationTimestamp"].as_str().expect("timestamp").parse().expect("rfc3339");
    let ahead = stamp.duration_since(jiff::Timestamp::now()).as_secs();
    assert!((7190..=7210).contains(&ahead), "{ahead}");
}

#[tokio::test]
async fn bulk_load_skips_validation() {
    let (state, client) = start(Config::default()).await;
    let mut bad_schedule = cronjob("bad-schedule");
    bad_schedule["spec"]["schedule"] = json!("61 * * * *");
    bad_schedule["metadata"]["namespace"] = json!("team-a");
    let long = cronjob(&"n".repeat(60));
    let lines = format!("{bad_schedule}\n{long}\n{}\n", cronjob("fine"));
    let response = state.load(lines.as_bytes()).expect("loaded");
    assert_eq!(response, 3);
    let (code, _, body) =
        send(&client, "GET", "/apis/batch/v1/namespaces/team-a/cronjobs/bad-schedule", &[], Value::Null).await;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("61 * * * *"));
    // A status write does not validate the spec again, as kube-apiserver's status strategy.
    let path = "/apis/batch/v1/namespaces/team-a/cronjobs/bad-schedule/status";
    let mut stored: Value = serde_json::from_str(&body).expect("cronjob");
    stored["status"] = json!({"lastScheduleTime": "2026-01-01T00:00:00Z"});
    let (code, _, body) = send(&client, "PUT", path, &[], stored).await;
    assert_eq!(code, 200, "{body}");
    let (_, _, metrics) = send(&client, "GET", "/metrics", &[], Value::Null).await;
    assert!(metrics.contains("cronshard_sim_requests_total"), "{metrics}");
    assert!(metrics.contains("cronshard_sim_objects{resource=\"cronjobs.batch\"} 3"), "{metrics}");
}

#[tokio::test]
async fn routes_the_real_server_lacks_are_405() {
    let (state, _) = start(Config::default()).await;
    send(&state, "POST", CRONJOBS, &[], cronjob("cj")).await;
    for (method, path) in [
        ("POST", "/apis/batch/v1/cronjobs"),
        ("DELETE", "/apis/batch/v1/cronjobs"),
        ("DELETE", "/api/v1/namespaces"),
        ("DELETE", "/apis/batch/v1/namespaces/default/cronjobs/cj/status"),
        ("POST", "/apis/batch/v1/namespaces/default/cronjobs/cj/status"),
    ] {
        assert_eq!(send(&state, method, path, &[], cronjob("x")).await.0, 405, "{method} {path}");
    }
    assert!(state.store().get(cronshard_sim::Resource::CronJobs, "default", "cj").is_some(), "nothing was deleted");
}

#[tokio::test]
async fn leases_are_created_by_put_and_need_a_resource_version_to_update() {
    let (state, _) = start(Config::default()).await;
    let path = "/apis/coordination.k8s.io/v1/namespaces/default/leases/cronshard-bucket-3";
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "cronshard-bucket-3"}, "spec": {"holderIdentity": "replica-a"}});
    let (code, _, body) = send(&state, "PUT", path, &[], lease.clone()).await;
    assert_eq!(code, 201, "{body}");
    let (code, _, body) = send(&state, "PUT", path, &[], lease).await;
    assert_eq!(code, 422, "an unconditional lease update is refused: {body}");
    let mut current: Value = serde_json::from_str(&send(&state, "GET", path, &[], Value::Null).await.2).expect("lease");
    current["spec"]["holderIdentity"] = json!("replica-b");
    assert_eq!(send(&state, "PUT", path, &[], current).await.0, 200);
}

#[tokio::test]
async fn deleting_a_namespace_deletes_what_is_in_it() {
    let (state, _) = start(Config::default()).await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}});
    assert_eq!(send(&state, "POST", "/api/v1/namespaces", &[], ns).await.0, 201);
    assert_eq!(send(&state, "POST", "/apis/batch/v1/namespaces/team-b/cronjobs", &[], cronjob("cj")).await.0, 201);
    assert_eq!(send(&state, "DELETE", "/api/v1/namespaces/team-b", &[], Value::Null).await.0, 200);
    assert!(state.store().get(cronshard_sim::Resource::CronJobs, "team-b", "cj").is_none());
    assert_eq!(send(&state, "POST", "/apis/batch/v1/namespaces/team-b/cronjobs", &[], cronjob("cj")).await.0, 404);
}

#[tokio::test]
async fn requests_refused_before_a_handler_are_audited_too() {
    let (state, _) = start(Config { allow_anonymous: false, ..Config::default() }).await;
    assert_eq!(send(&state, "GET", CRONJOBS, &[], Value::Null).await.0, 401);
    assert_eq!(send(&state, "GET", "/apis/nothing/v9/things", &[], Value::Null).await.0, 404);
    let codes: Vec<u16> = state.0.audit.since(0).iter().map(|r| r.code).collect();
    assert_eq!(codes, [401, 404]);
}
