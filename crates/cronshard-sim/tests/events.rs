//! One Event store behind two APIs: an Event written through core v1 or events.k8s.io/v1 is
//! read, listed, watched and field-selected through the other, converted as kube-apiserver
//! converts it.

use axum::http::Request;
use cronshard_sim::{Config, SimState};
use serde_json::{Value, json};

const CORE: &str = "/api/v1/namespaces/default/events";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

async fn send(state: &SimState, method: &str, path: &str, content_type: &str, body: Value) -> (u16, String) {
    let bytes = if body.is_null() { Vec::new() } else { body.to_string().into_bytes() };
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(axum::body::Body::from(bytes))
        .expect("request");
    let response = tower::ServiceExt::oneshot(cronshard_sim::app(state.clone()), request).await.expect("infallible");
    let code = response.status().as_u16();
    let collected = http_body_util::BodyExt::collect(response.into_body()).await.expect("body").to_bytes();
    (code, String::from_utf8_lossy(&collected).into_owned())
}

async fn get(state: &SimState, path: &str) -> Value {
    let (code, body) = send(state, "GET", path, "application/json", Value::Null).await;
    assert_eq!(code, 200, "{path}: {body}");
    serde_json::from_str(&body).expect("json")
}

async fn write(state: &SimState, method: &str, path: &str, body: Value) -> Value {
    let content_type = if method == "PATCH" { "application/merge-patch+json" } else { "application/json" };
    let (code, answer) = send(state, method, path, content_type, body).await;
    assert!(code == 200 || code == 201, "{method} {path}: {code} {answer}");
    serde_json::from_str(&answer).expect("json")
}

/// An Event as cronshard writes it (events.k8s.io/v1).
fn cronshard_event(name: &str) -> Value {
    json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name},
        "eventTime": "2026-01-01T03:00:00.123456Z", "reportingController": "cronshard",
        "reportingInstance": "replica-a", "action": "Sync", "reason": "SuccessfulCreate",
        "note": "Created job nightly-29400180", "type": "Normal",
        "regarding": {"apiVersion": "batch/v1", "kind": "CronJob", "namespace": "default", "name": "nightly",
            "uid": "u-1"}})
}

/// An Event as an old client writes it (core v1, no eventTime).
fn legacy_event(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
        "involvedObject": {"kind": "Job", "namespace": "default", "name": "nightly-1"},
        "reason": "Completed", "message": "Job completed", "type": "Normal",
        "source": {"component": "job-controller", "host": "node-1"},
        "firstTimestamp": "2026-01-01T03:00:00Z", "lastTimestamp": "2026-01-01T03:05:00Z", "count": 4})
}

fn names(list: &Value) -> Vec<&str> {
    list["items"].as_array().into_iter().flatten().filter_map(|e| e["metadata"]["name"].as_str()).collect()
}

#[tokio::test]
async fn an_event_written_through_one_api_is_read_through_the_other() {
    let state = SimState::new(Config::default());
    let created = write(&state, "POST", EVENTS, cronshard_event("nightly.1")).await;
    assert_eq!(created["note"], "Created job nightly-29400180");
    let core = get(&state, &format!("{CORE}/nightly.1")).await;
    assert_eq!((&core["apiVersion"], &core["kind"]), (&json!("v1"), &json!("Event")));
    assert_eq!(core["involvedObject"], created["regarding"]);
    assert_eq!(core["message"], "Created job nightly-29400180");
    assert_eq!((&core["reportingComponent"], &core["reportingInstance"]), (&json!("cronshard"), &json!("replica-a")));
    assert_eq!((&core["source"], &core["eventTime"]), (&json!({}), &json!("2026-01-01T03:00:00.123456Z")));
    for gone in ["note", "regarding", "reportingController", "deprecatedSource"] {
        assert!(core.get(gone).is_none(), "{gone} in {core}");
    }
    assert_eq!(core["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"], "one object");

    write(&state, "POST", CORE, legacy_event("nightly-1.1")).await;
    let event = get(&state, &format!("{EVENTS}/nightly-1.1")).await;
    assert_eq!(event["apiVersion"], "events.k8s.io/v1");
    assert_eq!((&event["note"], &event["regarding"]["name"]), (&json!("Job completed"), &json!("nightly-1")));
    assert_eq!(event["deprecatedSource"], json!({"component": "job-controller", "host": "node-1"}));
    assert_eq!(event["deprecatedFirstTimestamp"], "2026-01-01T03:00:00Z");
    assert_eq!(
        (&event["deprecatedLastTimestamp"], &event["deprecatedCount"]),
        (&json!("2026-01-01T03:05:00Z"), &json!(4))
    );
    assert!(event.get("reportingController").is_none(), "an empty reportingComponent is left out: {event}");

    // A repeat, as cronshard writes it (a merge patch of the series), seen through core v1.
    let series = json!({"series": {"count": 2, "lastObservedTime": "2026-01-01T03:01:00.000000Z"}});
    write(&state, "PATCH", &format!("{EVENTS}/nightly.1"), series).await;
    let core = get(&state, &format!("{CORE}/nightly.1")).await;
    assert_eq!(core["series"]["count"], 2);

    let core_list = get(&state, CORE).await;
    let events_list = get(&state, "/apis/events.k8s.io/v1/events").await;
    assert_eq!((&core_list["kind"], &events_list["apiVersion"]), (&json!("EventList"), &json!("events.k8s.io/v1")));
    assert_eq!(names(&core_list), ["nightly-1.1", "nightly.1"]);
    assert_eq!(names(&events_list), names(&core_list));
    assert!(events_list["items"].as_array().into_iter().flatten().all(|e| e.get("involvedObject").is_none()));

    let (code, _) = send(&state, "DELETE", &format!("{CORE}/nightly.1"), "application/json", Value::Null).await;
    assert_eq!(code, 200);
    let (code, _) = send(&state, "GET", &format!("{EVENTS}/nightly.1"), "application/json", Value::Null).await;
    assert_eq!(code, 404, "deleted through core v1, gone from events.k8s.io");
}

#[tokio::test]
async fn field_selectors_use_each_apis_names() {
    let state = SimState::new(Config::default());
    write(&state, "POST", EVENTS, cronshard_event("nightly.1")).await;
    write(&state, "POST", CORE, legacy_event("nightly-1.1")).await;
    let selected = |path: &str, selector: &str| {
        let path = format!("{path}?fieldSelector={}", selector.replace('=', "%3D").replace(',', "%2C"));
        let state = state.clone();
        async move { names(&get(&state, &path).await).into_iter().map(str::to_owned).collect::<Vec<_>>() }
    };
    // What `kubectl describe cronjob nightly` asks for.
    let describe = "involvedObject.name=nightly,involvedObject.namespace=default,involvedObject.kind=CronJob,involvedObject.uid=u-1";
    assert_eq!(selected(CORE, describe).await, ["nightly.1"]);
    assert_eq!(
        selected(CORE, "source=cronshard").await,
        ["nightly.1"],
        "an events.k8s.io Event's source is its controller"
    );
    assert_eq!(selected(CORE, "source=job-controller").await, ["nightly-1.1"]);
    assert_eq!(selected(CORE, "reportingComponent=cronshard").await, ["nightly.1"]);
    assert_eq!(selected(CORE, "type!=Normal").await, Vec::<String>::new());
    assert_eq!(selected(EVENTS, "regarding.name=nightly-1").await, ["nightly-1.1"]);
    assert_eq!(selected(EVENTS, "reportingController=cronshard,reason=SuccessfulCreate").await, ["nightly.1"]);
    assert_eq!(selected(EVENTS, "regarding.kind=CronJob,metadata.name=nightly.1").await, ["nightly.1"]);
    for (path, label) in
        [(CORE, "regarding.name"), (EVENTS, "involvedObject.name"), (EVENTS, "source"), (EVENTS, "note")]
    {
        let (code, body) = send(&state, "GET", &format!("{path}?fieldSelector={label}%3Dx"), "", Value::Null).await;
        assert_eq!(code, 400, "{path} {label}: {body}");
        assert!(body.contains(&format!("field label not supported: {label}")), "{body}");
    }
}

#[tokio::test]
async fn watches_through_either_api_see_writes_through_the_other() {
    let state = SimState::new(Config::default());
    let start = state.store().revision();
    write(&state, "POST", EVENTS, cronshard_event("nightly.1")).await;
    write(&state, "POST", CORE, legacy_event("nightly-1.1")).await;
    let series = json!({"series": {"count": 2, "lastObservedTime": "2026-01-01T03:01:00.000000Z"}});
    write(&state, "PATCH", &format!("{EVENTS}/nightly.1"), series).await;
    let watch = |path: &str, selector: &str| {
        let path = format!("{path}?watch=true&resourceVersion={start}&timeoutSeconds=1&fieldSelector={selector}");
        let state = state.clone();
        async move {
            let (code, body) = send(&state, "GET", &path, "", Value::Null).await;
            assert_eq!(code, 200, "{body}");
            body.lines().map(|l| serde_json::from_str::<Value>(l).expect("event")).collect::<Vec<_>>()
        }
    };
    let core = watch(CORE, "").await;
    let kinds: Vec<&str> = core.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds, ["ADDED", "ADDED", "MODIFIED"]);
    assert_eq!(core[0]["object"]["involvedObject"]["name"], "nightly");
    assert_eq!(core[2]["object"]["series"]["count"], 2);
    let events = watch(EVENTS, "regarding.name%3Dnightly-1").await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!((&events[0]["type"], &events[0]["object"]["note"]), (&json!("ADDED"), &json!("Job completed")));
    assert_eq!(events[0]["object"]["apiVersion"], "events.k8s.io/v1");
    // A live watch sees a write made after it started.
    let live = tokio::spawn({
        let state = state.clone();
        async move {
            let path = format!("{EVENTS}?watch=true&resourceVersion={}&timeoutSeconds=1", state.store().revision());
            send(&state, "GET", &path, "", Value::Null).await.1
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    write(&state, "POST", CORE, legacy_event("late")).await;
    let line = live.await.expect("watch");
    let event: Value = serde_json::from_str(line.lines().next().expect("one event")).expect("event");
    assert_eq!(
        (&event["object"]["metadata"]["name"], &event["object"]["note"]),
        (&json!("late"), &json!("Job completed"))
    );
}

#[tokio::test]
async fn both_apis_validate_as_kube_apiserver_does() {
    let state = SimState::new(Config::default());
    // Legacy rule, through core v1: without an eventTime the namespaces must agree.
    let mut elsewhere = legacy_event("x");
    elsewhere["involvedObject"]["namespace"] = json!("kube-system");
    let (code, body) = send(&state, "POST", CORE, "application/json", elsewhere).await;
    assert_eq!(code, 422, "{body}");
    assert!(body.contains("\"field\":\"involvedObject.namespace\""), "{body}");
    // Through core v1 an Event with an eventTime names its controller `reportingComponent`.
    let reported = cronshard_event("y");
    let unreported = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "y"},
        "eventTime": reported["eventTime"], "involvedObject": reported["regarding"], "action": "Sync",
        "reason": "R", "reportingInstance": "i"});
    let (code, body) = send(&state, "POST", CORE, "application/json", unreported).await;
    assert_eq!(code, 422, "{body}");
    assert!(body.contains("\"field\":\"reportingComponent\""), "{body}");
    // The strict rules of events.k8s.io/v1 on create: a legacy source must be unset.
    let mut sourced = cronshard_event("z");
    sourced["deprecatedSource"] = json!({"component": "c"});
    let (code, body) = send(&state, "POST", EVENTS, "application/json", sourced).await;
    assert_eq!(code, 422, "{body}");
    assert!(body.contains("\"field\":\"source\""), "{body}");
    // ... and a series must count at least two.
    let mut series = cronshard_event("w");
    series["series"] = json!({"count": 1, "lastObservedTime": "2026-01-01T03:01:00.000000Z"});
    let (code, body) = send(&state, "POST", EVENTS, "application/json", series).await;
    assert_eq!(code, 422, "{body}");
    assert!(body.contains("\"field\":\"series.count\""), "{body}");
}
