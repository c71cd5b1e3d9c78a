//! Property tests that drive the request parsers and the whole HTTP surface with arbitrary
//! input: no panic, no hang, and only status codes the real server could give.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use axum::http::Request;
use cronshard_sim::request::{ContinueToken, ListParams, parse_path};
use cronshard_sim::selector::{FieldSelector, LabelSelector};
use cronshard_sim::{Config, Resource, SimState};
use proptest::prelude::*;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
    })
}

fn state() -> &'static SimState {
    static STATE: OnceLock<SimState> = OnceLock::new();
    STATE.get_or_init(|| {
        let mut config = Config::default();
        config.flow.admitted_writes_per_s = 0.0;
        config.flow.seats_per_user = 0;
        config.latency = cronshard_sim::faults::Latency { read_ms: 0, write_ms: 0, list_per_object_us: 0 };
        SimState::new(config)
    })
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("api".to_owned()),
        Just("apis".to_owned()),
        Just("v1".to_owned()),
        Just("batch".to_owned()),
        Just("coordination.k8s.io".to_owned()),
        Just("namespaces".to_owned()),
        Just("default".to_owned()),
        Just("cronjobs".to_owned()),
        Just("jobs".to_owned()),
        Just("leases".to_owned()),
        Just("events".to_owned()),
        Just("status".to_owned()),
        Just("sim".to_owned()),
        "[a-z0-9.%-]{0,12}",
    ]
}

/// Mostly well-formed resource paths, so requests reach the handlers.
fn resource_path() -> impl Strategy<Value = Vec<String>> {
    let prefix_and_plural = prop_oneof![
        Just((vec!["apis", "batch", "v1"], "cronjobs")),
        Just((vec!["apis", "batch", "v1"], "jobs")),
        Just((vec!["apis", "coordination.k8s.io", "v1"], "leases")),
        Just((vec!["apis", "events.k8s.io", "v1"], "events")),
        Just((vec!["api", "v1"], "events")),
        Just((vec!["api", "v1"], "namespaces")),
    ];
    let name = prop_oneof![Just("f".to_owned()), Just("default".to_owned()), "[a-z0-9-]{1,8}"];
    let namespace = prop_oneof![4 => Just("default".to_owned()), 1 => Just("nowhere".to_owned())];
    (prefix_and_plural, prop::bool::weighted(0.8), namespace, proptest::option::of(name), prop::bool::weighted(0.2))
        .prop_map(|((prefix, plural), namespaced, ns, name, status)| {
            let mut path: Vec<String> = prefix.into_iter().map(str::to_owned).collect();
            if namespaced && plural != "namespaces" {
                path.extend(["namespaces".to_owned(), ns]);
            }
            path.push(plural.to_owned());
            if let Some(name) = name {
                path.push(name);
                if status {
                    path.push("status".to_owned());
                }
            }
            path
        })
}

fn query() -> impl Strategy<Value = Vec<(String, String)>> {
    let key = prop_oneof![
        Just("labelSelector"),
        Just("fieldSelector"),
        Just("limit"),
        Just("continue"),
        Just("resourceVersion"),
        Just("resourceVersionMatch"),
        Just("watch"),
        Just("allowWatchBookmarks"),
        Just("sendInitialEvents"),
        Just("propagationPolicy"),
        Just("fieldValidation"),
        Just("timeoutSeconds"),
    ];
    let value = prop_oneof![
        Just("true".to_owned()),
        Just("0".to_owned()),
        Just("NotOlderThan".to_owned()),
        Just("Exact".to_owned()),
        Just("a in (b,c)".to_owned()),
        Just("metadata.name=x".to_owned()),
        any::<String>(),
    ];
    prop::collection::vec((key.prop_map(str::to_owned), value), 0..5)
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(Vec::new()),
        any::<Vec<u8>>(),
        Just(br#"{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"f"},"spec":{"schedule":"* * * * *","jobTemplate":{"spec":{"template":{"spec":{"containers":[]}}}}}}"#.to_vec()),
        Just(br#"{"metadata":{"name":"f","resourceVersion":"x"},"spec":{"schedule":7}}"#.to_vec()),
        Just(br#"[{"op":"replace","path":"/spec/suspend","value":true}]"#.to_vec()),
        Just(br#"{"propagationPolicy":"Nope","preconditions":{"resourceVersion":"-1"}}"#.to_vec()),
    ]
}

const POSSIBLE: [u16; 15] = [200, 201, 400, 401, 403, 404, 405, 409, 410, 413, 415, 422, 429, 500, 504];

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn parsers_never_panic(text in any::<String>(), pairs in query()) {
        let _ = parse_path(&text);
        let _ = LabelSelector::parse(&text);
        let _ = FieldSelector::parse(&text, Resource::CoreEvents);
        let _ = ContinueToken::decode(&text);
        let map: HashMap<String, String> = pairs.into_iter().collect();
        let _ = ListParams::parse(&map, Resource::Events);
    }

    #[test]
    fn http_surface_answers_like_an_apiserver(
        method in prop_oneof![Just("GET"), Just("POST"), Just("PUT"), Just("PATCH"), Just("DELETE"), Just("OPTIONS")],
        segments in prop_oneof![1 => prop::collection::vec(segment(), 0..7), 4 => resource_path()],
        pairs in query(),
        content_type in prop_oneof![Just("application/json"), Just("application/merge-patch+json"),
            Just("application/json-patch+json"), Just("application/strategic-merge-patch+json"), Just("text/plain"), Just("")],
        body in body(),
    ) {
        let mut uri = format!("/{}", segments.join("/"));
        // Watches must end: give every request a short timeout.
        let mut pairs = pairs;
        pairs.retain(|(k, _)| k != "timeoutSeconds");
        pairs.push(("timeoutSeconds".into(), "1".into()));
        let query: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={}", percent_encode(v))).collect();
        uri.push('?');
        uri.push_str(&query.join("&"));
        let Ok(request) = Request::builder().method(method).uri(&uri).header("content-type", content_type).body(axum::body::Body::from(body)) else {
            return Ok(());
        };
        if uri.starts_with("/sim/") {
            return Ok(());
        }
        let response = runtime().block_on(async {
            let response = tower::ServiceExt::oneshot(cronshard_sim::app(state().clone()), request).await.expect("infallible");
            let code = response.status().as_u16();
            // Read the body too (watch streams end at their timeout).
            let read = tokio::time::timeout(Duration::from_secs(5), http_body_util::BodyExt::collect(response.into_body())).await;
            (code, read.is_ok())
        });
        prop_assert!(POSSIBLE.contains(&response.0), "{method} {uri}: {}", response.0);
        prop_assert!(response.1, "{method} {uri}: body did not end");
    }
}
