//! Simulator fidelity, measured: one scripted sequence of requests goes to `cronshard-sim`
//! and to a real kube-apiserver (`scripts/kube-testbed`), and the answers are compared: the
//! status code, the Status `reason`, the `details.causes` (field and reason), and the body
//! with uid, resourceVersion and timestamps masked, and managedFields dropped but where a
//! step compares them (sorted by manager, their times masked). Code, reason and causes
//! must be identical at every step; body differences the simulator has on purpose are listed
//! in `KNOWN` with why (and in docs/simulator.md); any other difference fails the test, as
//! does a known one that is gone. It prints a table (request, the simulator's answer,
//! kube-apiserver's, same or not) and the fidelity figure: checks identical of all checks.

mod common;
#[path = "sim_vs_kube/protobuf.rs"]
mod protobuf;
#[path = "sim_vs_kube/script.rs"]
mod script;

use std::collections::BTreeSet;
use std::io::Write;

use common::real::{Options, Testbed};
use http::{Method, Request};
use serde_json::{Value, json};

use script::{Step, script, step};

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
    /// The answer's resourceVersion (each server's own), for `{rv}` after a `remember` step.
    resource_version: String,
}

/// What each server gave earlier steps to refer to.
#[derive(Default)]
struct Kept {
    continue_token: String,
    resource_version: String,
}

const MASKED: &[&str] =
    &["uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "continue", "selfLink", "time"];

/// Drops every managedFields, or (`keep`) sorts each by manager: the servers' entries are
/// ordered by their times, which differ between two servers in the same second.
fn managed_fields(value: &mut Value, keep: bool) {
    match value {
        Value::Object(map) => {
            if !keep {
                map.remove("managedFields");
            } else if let Some(Value::Array(entries)) = map.get_mut("managedFields") {
                entries.sort_by_key(|e| e["manager"].as_str().unwrap_or_default().to_owned());
            }
            map.values_mut().for_each(|v| managed_fields(v, keep));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| managed_fields(v, keep)),
        _ => {}
    }
}

fn mask(value: &mut Value) {
    match value {
        Value::Object(map) => {
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

async fn send(client: &kube::Client, ns: &str, s: &Step, kept: &Kept) -> Answer {
    let body = match (&s.raw, &s.body) {
        (Some(raw), _) => raw.clone(),
        (None, Some(json)) => json.to_string().replace("{ns}", ns).into_bytes(),
        (None, None) => Vec::new(),
    };
    let request = Request::builder()
        .method(s.method.clone())
        .uri(
            s.path
                .replace("{ns}", ns)
                .replace("{continue}", &kept.continue_token)
                .replace("{rv}", &kept.resource_version),
        )
        .header("content-type", s.content_type)
        .header("accept", "application/json")
        .body(body)
        .expect("request");
    let response = client.send(request.map(kube::client::Body::from)).await.expect("a response");
    let code = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body()).await.expect("body").to_bytes();
    let watching = s.path.contains("watch=true") && code == 200;
    let mut body: Value =
        if watching { watch_events(&bytes) } else { serde_json::from_slice(&bytes).unwrap_or(Value::Null) };
    let continue_token = body["metadata"]["continue"].as_str().unwrap_or_default().to_owned();
    let resource_version = body["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned();
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
    managed_fields(&mut body, s.managed);
    mask(&mut body);
    Answer { code, reason, causes, body, continue_token, resource_version }
}

/// A watch's answer: one event a line, as a JSON array (not JSON at all: `null`).
fn watch_events(bytes: &[u8]) -> Value {
    let events: Result<Vec<Value>, _> =
        bytes.split(|b| *b == b'\n').filter(|line| !line.is_empty()).map(serde_json::from_slice).collect();
    events.map_or(Value::Null, Value::Array)
}

/// Compacts each server's history up to now: the simulator through its admin API,
/// kube-apiserver's etcd through etcd's own JSON API, at its current revision.
async fn compact(sim: &kube::Client, testbed: &Testbed) {
    let request = Request::post("/sim/compact").body(Vec::new()).expect("request");
    sim.request_text(request).await.expect("the simulator compacts");
    let pid = testbed.pid("etcd").expect("etcd runs");
    let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).expect("etcd's command line");
    let args: Vec<&str> = cmdline.split('\0').collect();
    let at = args.iter().position(|a| *a == "--listen-client-urls").expect("etcd's client URL");
    let etcd = kube::Client::try_from(kube::Config::new(args[at + 1].parse().expect("URL"))).expect("client");
    let post = |path: &'static str, body: String| {
        let etcd = etcd.clone();
        async move {
            let request = Request::post(path).body(body.into_bytes()).expect("request");
            let answer = etcd.request_text(request).await.unwrap_or_else(|e| panic!("etcd {path}: {e}"));
            serde_json::from_str::<Value>(&answer).expect("etcd answers JSON")
        }
    };
    // Any range answers with the store's revision in its header.
    let range = post("/v3/kv/range", json!({"key": "AA==", "limit": 1}).to_string()).await;
    let revision = range["header"]["revision"].as_str().expect("a revision").to_owned();
    post("/v3/kv/compaction", json!({"revision": revision, "physical": true}).to_string()).await;
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
        assert_eq!(send(&sim, "", &create, &Kept::default()).await.code, 201);
        ns.clone()
    };

    let steps = script();
    let requests = steps.iter().filter(|s| !s.compact).count();
    let (mut from_sim_kept, mut from_kube_kept) = (Kept::default(), Kept::default());
    let mut tally = Tally::default();
    for s in &steps {
        if s.compact {
            compact(&sim, testbed).await;
            tally.table.push(format!("{:<64} {:<22} {:<22} -", s.name, "compacted", "compacted"));
            continue;
        }
        let from_sim = send(&sim, &sim_ns, s, &from_sim_kept).await;
        let from_kube = send(&kube, &ns, s, &from_kube_kept).await;
        keep(&mut from_sim_kept, &from_sim, s.remember);
        keep(&mut from_kube_kept, &from_kube, s.remember);
        tally.record(s.name, &from_sim, &from_kube);
    }
    let gone: Vec<&str> =
        KNOWN.iter().enumerate().filter(|(i, _)| !tally.seen.contains(i)).map(|(_, (path, _))| *path).collect();
    // Printed before the verdict, so a failure shows the whole comparison.
    let _ = writeln!(
        std::io::stderr(),
        "{:<64} {:<22} {:<22} same\n{}\nfidelity: {} of {} checks identical (code, reason and causes; body), over {requests} requests",
        "request",
        "sim",
        "kube",
        tally.table.join("\n"),
        tally.identical,
        2 * requests
    );
    assert!(tally.unexplained.is_empty(), "differences not in KNOWN: {:#?}", tally.unexplained);
    assert!(gone.is_empty(), "KNOWN differences no longer seen (the simulator was fixed: remove them): {gone:?}");
}

/// What the comparison found so far: a table row per step, the differences not in `KNOWN`,
/// the `KNOWN` ones seen, and how many checks (two a request) were identical.
#[derive(Default)]
struct Tally {
    table: Vec<String>,
    unexplained: Vec<String>,
    seen: BTreeSet<usize>,
    identical: usize,
}

impl Tally {
    fn record(&mut self, name: &str, from_sim: &Answer, from_kube: &Answer) {
        let mut diffs = Vec::new();
        differences(&from_sim.body, &from_kube.body, "", &mut diffs);
        let status = |a: &Answer| (a.code, a.reason.clone(), a.causes.clone());
        let same_status = status(from_sim) == status(from_kube);
        let verdict = match (same_status, diffs.is_empty()) {
            (true, true) => "same",
            (true, false) => "body differs",
            (false, _) => "DIFFERENT",
        };
        self.table.push(format!("{name:<64} {:<22} {:<22} {verdict}", summary(from_sim), summary(from_kube)));
        if !same_status {
            let (sim, kube) = (status(from_sim), status(from_kube));
            self.unexplained.push(format!("{name}: code, reason and causes: sim {sim:?}, kube {kube:?}"));
        }
        self.identical += usize::from(diffs.is_empty()) + usize::from(same_status);
        for (path, detail) in diffs {
            let path = item_path(&path);
            match KNOWN.iter().position(|(prefix, _)| path.starts_with(prefix)) {
                Some(i) => {
                    self.seen.insert(i);
                }
                None => self.unexplained.push(format!("{name}: {path}: {detail}")),
            }
        }
    }
}

/// A continue token is kept until a later list gives another (writes in between must not
/// lose it); a resourceVersion only from a step that asks.
fn keep(kept: &mut Kept, answer: &Answer, remember: bool) {
    if !answer.continue_token.is_empty() {
        kept.continue_token.clone_from(&answer.continue_token);
    }
    if remember {
        kept.resource_version.clone_from(&answer.resource_version);
    }
}

/// An answer in a table cell: its code and reason, or the events of a watch.
fn summary(answer: &Answer) -> String {
    match (&answer.reason, answer.body.as_array()) {
        (Some(reason), _) => format!("{} {reason}", answer.code),
        (None, Some(events)) => {
            let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
            format!("{} [{}]", answer.code, kinds.join(","))
        }
        (None, None) => answer.code.to_string(),
    }
}

/// A list item's path without its `/items/N` prefix, and a watch event's object's path
/// without its `/N/object` prefix.
fn item_path(path: &str) -> String {
    let in_item = |rest: &str| rest.find('/').map_or_else(String::new, |i| rest[i..].to_owned());
    if let Some(rest) = path.strip_prefix("/items/") {
        return in_item(rest);
    }
    let event = path.strip_prefix('/').and_then(|p| p.split_once('/')).filter(|(n, _)| n.parse::<usize>().is_ok());
    match event.and_then(|(_, rest)| rest.strip_prefix("object")) {
        Some(rest) => rest.to_owned(),
        None => path.to_owned(),
    }
}
