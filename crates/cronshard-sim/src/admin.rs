//! The `/sim/...` admin API: faults, clock offset, bulk load, compaction and the audit log.
//! Never on Kubernetes paths, never authenticated (bind the simulator to loopback).

use std::collections::HashMap;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::SimState;
use crate::error::ApiError;
use crate::faults::{Latency, PartitionMode};
use crate::resource::Resource;

pub(crate) fn routes() -> Router<SimState> {
    Router::new()
        .route("/sim/compact", post(compact))
        .route("/sim/drop-watches", post(drop_watches))
        .route("/sim/error-rate", put(error_rate))
        .route("/sim/latency", put(latency))
        .route("/sim/pause", post(pause))
        .route("/sim/feature-gates", put(feature_gates))
        .route("/sim/resume", post(resume))
        .route("/sim/partition", post(partition))
        .route("/sim/heal", post(heal))
        .route("/sim/clock", get(clock).put(set_clock))
        // Seeds are large (100,000 CronJobs is ~100 MB); the default 2 MB extractor limit is for the API.
        .route("/sim/load", post(load).layer(axum::extract::DefaultBodyLimit::max(4 << 30)))
        .route("/sim/audit", get(audit))
        .route("/sim/stats", get(stats))
}

async fn compact(State(state): State<SimState>) -> Json<Value> {
    Json(json!({"compacted": state.store().compact_now()}))
}

async fn drop_watches(State(state): State<SimState>) -> Json<Value> {
    state.drop_watches();
    Json(json!({"dropped": true}))
}

#[derive(Deserialize)]
struct ErrorRate {
    verb: String,
    rate: f64,
}

async fn error_rate(State(state): State<SimState>, Json(body): Json<ErrorRate>) -> Response {
    if !(0.0..=1.0).contains(&body.rate) {
        return ApiError::BadRequest("rate must be between 0 and 1".into()).into_response();
    }
    state.0.faults.update(|f| {
        f.error_rates.insert(body.verb, body.rate);
    });
    Json(state.0.faults.snapshot()).into_response()
}

async fn latency(State(state): State<SimState>, Json(body): Json<Latency>) -> Response {
    state.0.faults.update(|f| f.latency = body);
    Json(state.0.faults.snapshot()).into_response()
}

async fn pause(State(state): State<SimState>) -> Response {
    // Like an apiserver restart: open watches end, new requests wait until it is back.
    state.0.faults.update(|f| f.paused = true);
    state.drop_watches();
    Json(state.0.faults.snapshot()).into_response()
}

/// The feature gates the simulator has (kube-apiserver's names).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FeatureGates {
    #[serde(rename = "ShardedListAndWatch")]
    sharded_list_and_watch: bool,
}

async fn feature_gates(State(state): State<SimState>, Json(body): Json<FeatureGates>) -> Response {
    // Switching a gate takes a restart of kube-apiserver: open watches end.
    state.0.faults.update(|f| f.sharded_list_and_watch = body.sharded_list_and_watch);
    state.drop_watches();
    Json(state.0.faults.snapshot()).into_response()
}

async fn resume(State(state): State<SimState>) -> Response {
    state.0.faults.update(|f| f.paused = false);
    Json(state.0.faults.snapshot()).into_response()
}

#[derive(Deserialize)]
struct Partition {
    user: String,
    #[serde(default = "hang")]
    mode: PartitionMode,
}

fn hang() -> PartitionMode {
    PartitionMode::Hang
}

async fn partition(State(state): State<SimState>, Json(body): Json<Partition>) -> Response {
    state.0.faults.update(|f| {
        f.partitions.insert(body.user, body.mode);
    });
    // The partitioned user's open watches are cut too (all are dropped; others re-watch).
    state.drop_watches();
    Json(state.0.faults.snapshot()).into_response()
}

#[derive(Deserialize)]
struct Heal {
    user: String,
}

async fn heal(State(state): State<SimState>, Json(body): Json<Heal>) -> Response {
    state.0.faults.update(|f| {
        f.partitions.remove(&body.user);
    });
    Json(state.0.faults.snapshot()).into_response()
}

fn clock_body(state: &SimState) -> Value {
    let clock = state.store().clock();
    json!({"offsetSeconds": clock.offset().as_secs_f64(), "now": clock.now().to_string()})
}

async fn clock(State(state): State<SimState>) -> Json<Value> {
    Json(clock_body(&state))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SetClock {
    offset_seconds: f64,
}

async fn set_clock(State(state): State<SimState>, Json(body): Json<SetClock>) -> Response {
    if !body.offset_seconds.is_finite() || body.offset_seconds.abs() > 1e9 {
        return ApiError::BadRequest("offsetSeconds must be a finite number of seconds".into()).into_response();
    }
    state.store().clock().set_offset(jiff::SignedDuration::from_secs_f64(body.offset_seconds));
    Json(clock_body(&state)).into_response()
}

/// Bulk load: a JSON array, a `List`, or JSON Lines of objects. No validation, as for
/// objects stored before a validation rule existed; defaults and metadata are filled in.
/// JSON Lines are read in chunks, so a 100,000-object seed never sits in memory twice.
pub(crate) fn load_objects(state: &SimState, body: &[u8]) -> Result<usize, ApiError> {
    let text = std::str::from_utf8(body).map_err(|_| ApiError::BadRequest("body is not UTF-8".into()))?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let objects: Vec<Value> =
            serde_json::from_str(trimmed).map_err(|e| ApiError::BadRequest(format!("invalid JSON array: {e}")))?;
        return load_chunk(state, objects, 0);
    }
    if trimmed.starts_with('{')
        && let Ok(list) = serde_json::from_str::<Value>(trimmed)
        && let Some(items) = list.get("items").and_then(Value::as_array)
    {
        return load_chunk(state, items.clone(), 0);
    }
    const CHUNK: usize = 2000;
    let mut loaded = 0;
    let mut chunk = Vec::with_capacity(CHUNK);
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        chunk.push(serde_json::from_str(line).map_err(|e| ApiError::BadRequest(format!("line {}: {e}", i + 1)))?);
        if chunk.len() == CHUNK {
            loaded += load_chunk(state, std::mem::take(&mut chunk), loaded)?;
        }
    }
    Ok(loaded + load_chunk(state, chunk, loaded)?)
}

/// Loads one batch; `offset` numbers the objects in error messages.
fn load_chunk(state: &SimState, objects: Vec<Value>, offset: usize) -> Result<usize, ApiError> {
    let mut by_resource: HashMap<Resource, Vec<Value>> = HashMap::new();
    for (i, mut object) in objects.into_iter().enumerate() {
        let i = offset + i;
        let api_version = object["apiVersion"].as_str().unwrap_or_default().to_owned();
        let kind = object["kind"].as_str().unwrap_or_default().to_owned();
        let resource =
            Resource::ALL.into_iter().find(|r| r.api_version() == api_version && r.kind() == kind).ok_or_else(
                || ApiError::BadRequest(format!("object {i}: unsupported apiVersion/kind {api_version}/{kind}")),
            )?;
        if object["metadata"]["name"].as_str().is_none_or(str::is_empty) {
            return Err(ApiError::BadRequest(format!("object {i}: metadata.name is required")));
        }
        if resource.namespaced() && object["metadata"]["namespace"].as_str().is_none_or(str::is_empty) {
            object["metadata"]["namespace"] = json!("default");
        }
        let uid =
            object["metadata"]["uid"].as_str().map(str::to_owned).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        object["metadata"]["uid"] = json!(uid);
        resource.apply_defaults(&mut object);
        resource.prepare_for_create(&mut object);
        by_resource.entry(resource).or_default().push(object);
    }
    let mut loaded = 0;
    for resource in Resource::ALL {
        let Some(objects) = by_resource.remove(&resource) else { continue };
        if resource.namespaced() {
            // Objects need their namespace to exist, as they would in a real cluster.
            let mut missing: Vec<String> = Vec::new();
            for object in &objects {
                let ns = object["metadata"]["namespace"].as_str().unwrap_or_default();
                if state.store().get(Resource::Namespaces, "", ns).is_none() && !missing.iter().any(|m| m == ns) {
                    missing.push(ns.to_owned());
                }
            }
            let namespaces = missing
                .into_iter()
                .map(|ns| {
                    let mut n = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
                    Resource::Namespaces.apply_defaults(&mut n);
                    Resource::Namespaces.prepare_for_create(&mut n);
                    n
                })
                .collect();
            state.store().load(Resource::Namespaces, namespaces);
        }
        loaded += state.store().load(resource, objects);
    }
    Ok(loaded)
}

async fn load(State(state): State<SimState>, body: Bytes) -> Response {
    match load_objects(&state, &body) {
        Ok(loaded) => Json(json!({"loaded": loaded, "revision": state.store().revision()})).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn audit(State(state): State<SimState>, Query(query): Query<HashMap<String, String>>) -> Response {
    let since = query.get("since").and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut out = String::new();
    for record in state.0.audit.since(since) {
        out.push_str(&serde_json::to_string(&record).unwrap_or_default());
        out.push('\n');
    }
    ([(header::CONTENT_TYPE, "application/jsonl")], out).into_response()
}

async fn stats(State(state): State<SimState>) -> Json<Value> {
    let store = state.store();
    let objects: HashMap<String, usize> = Resource::stored().map(|r| (r.to_string(), store.count(r))).collect();
    Json(json!({
        "revision": store.revision(),
        "compacted": store.compacted(),
        "objects": objects,
        "auditRecords": state.0.audit.len(),
        "faults": state.0.faults.snapshot(),
    }))
}
