//! Simulator fidelity, measured: one scripted sequence of requests goes to `cronshard-sim`
//! and to a real kube-apiserver (`scripts/kube-testbed`), and the answers are compared: the
//! status code, the Status `reason`, the `details.causes` (field and reason), and the body
//! with uid, resourceVersion, timestamps and managedFields masked. Code, reason and causes
//! must be identical at every step; body differences the simulator has on purpose are listed
//! in `KNOWN` with why (and in docs/simulator.md); any other difference fails the test, as
//! does a known one that is gone.

mod common;
#[path = "sim_vs_kube/protobuf.rs"]
mod protobuf;

use std::collections::BTreeSet;
use std::io::Write;

use common::real::{Options, Testbed};
use http::{Method, Request};
use serde_json::{Value, json};

/// One request of the script: a name, a method, a path and JSON body (`{ns}` in either is the
/// test's namespace) or a body of raw bytes, and its content type.
struct Step {
    name: &'static str,
    method: Method,
    path: String,
    body: Option<Value>,
    raw: Option<Vec<u8>>,
    content_type: &'static str,
}

fn step(name: &'static str, method: Method, path: &str, body: Option<Value>) -> Step {
    Step { name, method, path: path.to_owned(), body, raw: None, content_type: "application/json" }
}

fn cronjob(name: &str, schedule: &str, extra: Value) -> Value {
    let mut cj = json!({"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": name, "labels": {"team": "a"}},
        "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}});
    if let (Some(spec), Some(extra)) = (cj["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    cj
}

fn lease(holder: &str) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "cronshard-bucket-7", "labels": {"cronshard.io/role": "bucket"}},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "leaseTransitions": 0,
            "acquireTime": "2026-01-01T00:00:00.000000Z", "renewTime": "2026-01-01T00:00:00.000000Z"}})
}

const CRONJOBS: &str = "/apis/batch/v1/namespaces/{ns}/cronjobs";
const NIGHTLY: &str = "/apis/batch/v1/namespaces/{ns}/cronjobs/nightly";

/// The whole sequence, in order: each step may depend on the ones before it.
fn script() -> Vec<Step> {
    let mut steps: Vec<Step> =
        [creates_and_reads(), protobuf_bodies(), writes(), leases_and_events(), one_event_store()]
            .into_iter()
            .flatten()
            .collect();
    for step in &mut steps {
        if step.method == Method::PATCH && step.content_type == "application/json" {
            step.content_type = "application/merge-patch+json";
        }
    }
    steps
}

/// Creates (valid and invalid) and reads with pages and selectors.
fn creates_and_reads() -> Vec<Step> {
    let (cronjobs, one) = (CRONJOBS, NIGHTLY);
    vec![
        step("create", Method::POST, cronjobs, Some(cronjob("nightly", "0 3 * * *", json!({})))),
        step("create a second", Method::POST, cronjobs, Some(cronjob("hourly", "0 * * * *", json!({})))),
        step("create again: AlreadyExists", Method::POST, cronjobs, Some(cronjob("nightly", "0 3 * * *", json!({})))),
        step("get", Method::GET, one, None),
        step("get a missing one: NotFound", Method::GET, "/apis/batch/v1/namespaces/{ns}/cronjobs/nope", None),
        step("invalid schedule", Method::POST, cronjobs, Some(cronjob("bad-schedule", "61 * * * *", json!({})))),
        step(
            "unknown time zone",
            Method::POST,
            cronjobs,
            Some(cronjob("bad-zone", "0 3 * * *", json!({"timeZone": "Mars/Olympus"}))),
        ),
        step("TZ= in the schedule", Method::POST, cronjobs, Some(cronjob("tz-prefix", "TZ=UTC 0 3 * * *", json!({})))),
        step("a 53-character name", Method::POST, cronjobs, Some(cronjob(&"n".repeat(53), "0 3 * * *", json!({})))),
        step(
            "a Job named with 64 characters: Invalid",
            Method::POST,
            "/apis/batch/v1/namespaces/{ns}/jobs",
            Some(json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j".repeat(64)},
                "spec": {"template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}]}}}})),
        ),
        step("list with limit 1", Method::GET, &format!("{cronjobs}?limit=1"), None),
        step("the next page: continue", Method::GET, &format!("{cronjobs}?limit=1&continue={{continue}}"), None),
        step("list at resourceVersion 0", Method::GET, &format!("{cronjobs}?resourceVersion=0"), None),
        step(
            "list not older than resourceVersion 0",
            Method::GET,
            &format!("{cronjobs}?resourceVersion=0&resourceVersionMatch=NotOlderThan"),
            None,
        ),
        step(
            "resourceVersionMatch without a resourceVersion: BadRequest",
            Method::GET,
            &format!("{cronjobs}?resourceVersionMatch=NotOlderThan"),
            None,
        ),
        step("get at resourceVersion 0", Method::GET, &format!("{one}?resourceVersion=0"), None),
        step("list by label", Method::GET, &format!("{cronjobs}?labelSelector=team%3Da"), None),
        step("list by field", Method::GET, &format!("{cronjobs}?fieldSelector=metadata.name%3Dhourly"), None),
    ]
}

/// Protobuf bodies, as kubectl's generator commands send them.
fn protobuf_bodies() -> Vec<Step> {
    let media = "application/vnd.kubernetes.protobuf";
    vec![
        Step {
            content_type: media,
            raw: Some(protobuf::cronjob_protobuf()),
            ..step("create from protobuf (kubectl create cronjob)", Method::POST, CRONJOBS, None)
        },
        step("get the CronJob created from protobuf", Method::GET, &format!("{CRONJOBS}/from-protobuf"), None),
        Step {
            content_type: media,
            raw: Some(b"{\"kind\":\"CronJob\"}".to_vec()),
            ..step("a protobuf body without the protobuf prefix: BadRequest", Method::POST, CRONJOBS, None)
        },
    ]
}

/// Updates, patches, the status subresource, strict validation and deletes.
fn writes() -> Vec<Step> {
    let (cronjobs, one) = (CRONJOBS, NIGHTLY);
    vec![
        step(
            "update with a stale resourceVersion: Conflict",
            Method::PUT,
            one,
            Some({
                let mut cj = cronjob("nightly", "0 4 * * *", json!({}));
                cj["metadata"]["resourceVersion"] = json!("1");
                cj
            }),
        ),
        step(
            "merge patch",
            Method::PATCH,
            one,
            Some(json!({"metadata": {"labels": {"patched": "yes"}}, "spec": {"suspend": true}})),
        ),
        Step {
            content_type: "application/json-patch+json",
            ..step(
                "JSON patch",
                Method::PATCH,
                one,
                Some(json!([{"op": "replace", "path": "/spec/schedule", "value": "0 5 * * *"}])),
            )
        },
        Step {
            content_type: "application/merge-patch+json",
            ..step(
                "status patch ignores spec",
                Method::PATCH,
                &format!("{one}/status"),
                Some(json!({"spec": {"schedule": "0 6 * * *"},
                    "status": {"lastScheduleTime": "2026-01-01T03:00:00Z"}})),
            )
        },
        step(
            "strict field validation: unknown field",
            Method::POST,
            &format!("{cronjobs}?fieldValidation=Strict"),
            Some(cronjob("strict", "0 3 * * *", json!({"bogus": 1}))),
        ),
        step(
            "delete, background",
            Method::DELETE,
            "/apis/batch/v1/namespaces/{ns}/cronjobs/hourly",
            Some(json!({
            "kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})),
        ),
        step("delete a missing one: NotFound", Method::DELETE, "/apis/batch/v1/namespaces/{ns}/cronjobs/nope", None),
    ]
}

/// Leases (as the coordinator claims them) and events.k8s.io Events.
fn leases_and_events() -> Vec<Step> {
    vec![
        step("create a Lease", Method::POST, "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", Some(lease("1"))),
        step(
            "update a Lease without a resourceVersion",
            Method::PUT,
            "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/cronshard-bucket-7",
            Some(lease("1")),
        ),
        step(
            "claim a Lease with a stale resourceVersion: Conflict",
            Method::PUT,
            "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/cronshard-bucket-7",
            Some({
                let mut l = lease("2");
                l["metadata"]["resourceVersion"] = json!("1");
                l
            }),
        ),
        step(
            "an Event",
            Method::POST,
            "/apis/events.k8s.io/v1/namespaces/{ns}/events",
            Some(json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "nightly.1"}, "eventTime": "2026-01-01T03:00:00.000000Z",
                "reportingController": "cronshard", "reportingInstance": "replica-a", "action": "Create",
                "reason": "SuccessfulCreate", "note": "Created job nightly-29400180", "type": "Normal",
                "regarding": {"apiVersion": "batch/v1", "kind": "CronJob", "namespace": "{ns}", "name": "nightly"}})),
        ),
        step(
            "a repeat of the Event: its series (merge patch)",
            Method::PATCH,
            "/apis/events.k8s.io/v1/namespaces/{ns}/events/nightly.1",
            Some(json!({"series": {"count": 2, "lastObservedTime": "2026-01-01T03:01:00.000000Z"}})),
        ),
        step(
            "an Event without its reporting controller: Invalid",
            Method::POST,
            "/apis/events.k8s.io/v1/namespaces/{ns}/events",
            Some(json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "nightly.2"},
                "eventTime": "2026-01-01T03:00:00.000000Z", "reason": "SuccessfulCreate", "type": "Normal",
                "regarding": {"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly"}})),
        ),
    ]
}

const CORE_EVENTS: &str = "/api/v1/namespaces/{ns}/events";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/{ns}/events";

/// Core v1 and events.k8s.io/v1 Events are one store: each API reads, lists and selects what
/// the other wrote, converted.
fn one_event_store() -> Vec<Step> {
    let legacy = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "nightly-1.1"},
        "involvedObject": {"kind": "Job", "namespace": "{ns}", "name": "nightly-1", "apiVersion": "batch/v1"},
        "reason": "Completed", "message": "Job completed", "type": "Normal",
        "source": {"component": "job-controller", "host": "node-1"},
        "firstTimestamp": "2026-01-01T03:00:00Z", "lastTimestamp": "2026-01-01T03:05:00Z", "count": 4});
    let mut elsewhere = legacy.clone();
    elsewhere["metadata"]["name"] = json!("nightly-1.2");
    elsewhere["involvedObject"]["namespace"] = json!("kube-system");
    vec![
        step("the events.k8s.io Event through core v1", Method::GET, &format!("{CORE_EVENTS}/nightly.1"), None),
        step("a core v1 Event", Method::POST, CORE_EVENTS, Some(legacy)),
        step("the core v1 Event through events.k8s.io", Method::GET, &format!("{EVENTS}/nightly-1.1"), None),
        step("a core v1 Event about another namespace's object: Invalid", Method::POST, CORE_EVENTS, Some(elsewhere)),
        step("list Events through core v1", Method::GET, CORE_EVENTS, None),
        step("list Events through events.k8s.io", Method::GET, EVENTS, None),
        step(
            "core v1 Events by involvedObject (kubectl describe)",
            Method::GET,
            &format!("{CORE_EVENTS}?fieldSelector=involvedObject.kind%3DCronJob%2CinvolvedObject.name%3Dnightly"),
            None,
        ),
        step("core v1 Events by source", Method::GET, &format!("{CORE_EVENTS}?fieldSelector=source%3Dcronshard"), None),
        step(
            "events.k8s.io Events by regarding and reason",
            Method::GET,
            &format!("{EVENTS}?fieldSelector=regarding.name%3Dnightly-1%2Creason%3DCompleted"),
            None,
        ),
        step(
            "events.k8s.io Events by reportingController",
            Method::GET,
            &format!("{EVENTS}?fieldSelector=reportingController%3Dcronshard%2Cregarding.kind%3DCronJob"),
            None,
        ),
        step(
            "events.k8s.io Events by a core field: BadRequest",
            Method::GET,
            &format!("{EVENTS}?fieldSelector=involvedObject.name%3Dnightly"),
            None,
        ),
        step(
            "delete the events.k8s.io Event through core v1",
            Method::DELETE,
            &format!("{CORE_EVENTS}/nightly.1"),
            None,
        ),
        step("it is gone from events.k8s.io: NotFound", Method::GET, &format!("{EVENTS}/nightly.1"), None),
    ]
}

/// Body differences the simulator has on purpose: a path in the body (a list item's path
/// without its `/items/N` prefix), and why. Codes, reasons and causes have no exceptions.
const KNOWN: &[(&str, &str)] = &[
    (
        "/spec/jobTemplate/spec/template/spec/",
        "the simulator does not apply the pod template's defaults (dnsPolicy, schedulerName, \
         securityContext, terminationGracePeriodSeconds, a container's imagePullPolicy, \
         resources, terminationMessagePath and -Policy); cronshard copies the template as stored",
    ),
    ("/spec/jobTemplate/metadata", "nor does it add an empty template metadata"),
    ("/spec/jobTemplate/spec/template/metadata", "nor an empty pod template metadata"),
    ("/apiVersion", "the simulator's list items carry apiVersion and kind; kube-apiserver's do not"),
    ("/kind", "as above"),
    ("/metadata/remainingItemCount", "the simulator does not count the items after a limited page"),
];

/// What is compared of one answer.
#[derive(Debug, PartialEq)]
struct Answer {
    code: u16,
    /// The Status reason and its causes (field, reason), for an error.
    reason: Option<String>,
    causes: BTreeSet<(String, String)>,
    /// The body, masked.
    body: Value,
    /// A list's continue token (each server's own), for a next step's `{continue}`.
    continue_token: String,
}

const MASKED: &[&str] = &["uid", "resourceVersion", "creationTimestamp", "continue", "selfLink"];

fn mask(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("managedFields");
            for (key, v) in map.iter_mut() {
                if MASKED.contains(&key.as_str()) && !v.is_null() {
                    *v = json!("*");
                } else {
                    mask(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask),
        _ => {}
    }
}

async fn send(client: &kube::Client, ns: &str, s: &Step, continue_token: &str) -> Answer {
    let body = match (&s.raw, &s.body) {
        (Some(raw), _) => raw.clone(),
        (None, Some(json)) => json.to_string().replace("{ns}", ns).into_bytes(),
        (None, None) => Vec::new(),
    };
    let request = Request::builder()
        .method(s.method.clone())
        .uri(s.path.replace("{ns}", ns).replace("{continue}", continue_token))
        .header("content-type", s.content_type)
        .header("accept", "application/json")
        .body(body)
        .expect("request");
    let response = client.send(request.map(kube::client::Body::from)).await.expect("a response");
    let code = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body()).await.expect("body").to_bytes();
    let mut body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let continue_token = body["metadata"]["continue"].as_str().unwrap_or_default().to_owned();
    let (reason, causes) = if body["kind"] == "Status" && code >= 400 {
        let causes = body["details"]["causes"].as_array().into_iter().flatten();
        let causes = causes
            .map(|c| (c["field"].as_str().unwrap_or("").to_owned(), c["reason"].as_str().unwrap_or("").to_owned()))
            .collect();
        (body["reason"].as_str().map(str::to_owned), causes)
    } else {
        (None, BTreeSet::new())
    };
    // Messages are worded by each server; the code, reason and causes carry the meaning.
    if body["kind"] == "Status" {
        body = json!({"kind": "Status", "code": body["code"], "reason": body["reason"]});
    }
    mask(&mut body);
    Answer { code, reason, causes, body, continue_token }
}

/// Paths (`/a/b/0`) where two JSON values differ, with both values.
fn differences(a: &Value, b: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                differences(
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    &format!("{path}/{k}"),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                differences(p, q, &format!("{path}/{i}"), out);
            }
        }
        _ if a != b => out.push((path.to_owned(), format!("sim {a} vs kube {b}"))),
        _ => {}
    }
}

async fn serve_sim() -> kube::Client {
    let state = cronshard_sim::SimState::new(cronshard_sim::Config { runner: None, ..Default::default() });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let app = cronshard_sim::app(state);
    tokio::spawn(async move { axum::serve(listener, app).await });
    kube::Client::try_from(kube::Config::new(url.parse().expect("url"))).expect("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_answers_like_kube_apiserver() {
    let testbed = tokio::task::spawn_blocking(|| Testbed::shared(&Options::default())).await.expect("testbed");
    let kube = testbed.client().await;
    let ns = testbed.namespace("fidelity").await;
    let sim = serve_sim().await;
    let sim_ns = {
        let ns_body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        let create = step("namespace", Method::POST, "/api/v1/namespaces", Some(ns_body));
        assert_eq!(send(&sim, "", &create, "").await.code, 201);
        ns.clone()
    };

    let mut unexplained = Vec::new();
    let mut seen = BTreeSet::new();
    let mut identical = 0;
    let steps = script();
    let (mut sim_continue, mut kube_continue) = (String::new(), String::new());
    for s in &steps {
        let from_sim = send(&sim, &sim_ns, s, &sim_continue).await;
        let from_kube = send(&kube, &ns, s, &kube_continue).await;
        (sim_continue, kube_continue) = (from_sim.continue_token.clone(), from_kube.continue_token.clone());
        assert_eq!(
            (from_sim.code, &from_sim.reason, &from_sim.causes),
            (from_kube.code, &from_kube.reason, &from_kube.causes),
            "{}: code, reason and causes (sim, then kube)",
            s.name
        );
        let mut diffs = Vec::new();
        differences(&from_sim.body, &from_kube.body, "", &mut diffs);
        identical += usize::from(diffs.is_empty());
        for (path, detail) in diffs {
            let path = item_path(&path);
            match KNOWN.iter().position(|(prefix, _)| path.starts_with(prefix)) {
                Some(i) => {
                    seen.insert(i);
                }
                None => unexplained.push(format!("{}: {path}: {detail}", s.name)),
            }
        }
    }
    let gone: Vec<&str> =
        KNOWN.iter().enumerate().filter(|(i, _)| !seen.contains(i)).map(|(_, (path, _))| *path).collect();
    assert!(unexplained.is_empty(), "differences not in KNOWN: {unexplained:#?}");
    assert!(gone.is_empty(), "KNOWN differences no longer seen (the simulator was fixed: remove them): {gone:?}");
    let _ = writeln!(
        std::io::stderr(),
        "{} steps: code, reason and causes identical in all; bodies identical in {identical}, \
         the others only by KNOWN paths",
        steps.len()
    );
}

/// A list item's path without its `/items/N` prefix.
fn item_path(path: &str) -> String {
    match path.strip_prefix("/items/") {
        Some(rest) => rest.find('/').map_or_else(String::new, |i| rest[i..].to_owned()),
        None => path.to_owned(),
    }
}
