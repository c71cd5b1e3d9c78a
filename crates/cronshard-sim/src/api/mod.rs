//! The Kubernetes API paths: authentication, faults, authorization and flow control, then
//! get, list, watch, create, update, patch, delete and deletecollection.

use std::collections::HashMap;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, Request, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::time::Instant;

use crate::SimState;
use crate::audit::AuditRecord;
use crate::auth::{self, User};
use crate::discovery;
use crate::error::{ApiError, Result};
use crate::faults::PartitionMode;
use crate::managed;
use crate::metrics::{RequestLabels, ResourceLabels};
use crate::request::{self, Target};
use crate::resource::Resource;

mod delete;
mod outcome;
mod read;
mod watch;
mod write;

use self::delete::{delete, delete_collection};
use self::outcome::Outcome;
use self::read::{get, list};
use self::watch::watch;
use self::write::{create, patch, update};

const BUCKET_LABEL: &str = cronshard_types::keys::BUCKET_LABEL;

/// Entry point for every path that is not `/sim/...`.
pub(crate) async fn handle(State(state): State<SimState>, request: Request<Body>) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    if parts.method == Method::GET
        && let Some(response) = discovery::answer(&path)
    {
        return response;
    }
    if parts.method == Method::GET && matches!(path.as_str(), "/healthz" | "/readyz" | "/livez") {
        return "ok".into_response();
    }
    if parts.method == Method::GET && path == "/metrics" {
        return metrics(&state).into_response();
    }
    let user_agent = header_text(&parts.headers, header::USER_AGENT);
    // Requests refused before they reach a handler are audited too, under what is known.
    let refuse = |user: &str, verb: &str, resource: &str, e: ApiError| {
        let response = e.into_response();
        state.0.audit.record(AuditRecord {
            seq: 0,
            time: audit_time(&state),
            user: user.to_owned(),
            user_agent: user_agent.clone(),
            verb: verb.to_owned(),
            resource: resource.to_owned(),
            namespace: String::new(),
            name: path.clone(),
            code: response.status().as_u16(),
            resource_version: None,
            bucket: None,
            holder: None,
        });
        response
    };
    let method = parts.method.as_str().to_lowercase();
    let target = match request::parse_path(&path) {
        None => return refuse("", &method, "", ApiError::PathNotFound),
        Some(Err(e)) => return refuse("", &method, "", e),
        Some(Ok(t)) => t,
    };
    let query: HashMap<String, String> =
        Query::try_from_uri(&parts.uri).map(|q: Query<HashMap<String, String>>| q.0).unwrap_or_default();
    let user = match authenticate(&state, &parts.headers) {
        Ok(u) => u,
        Err(e) => return refuse("", &method, target.resource.plural(), e),
    };
    let verb = match verb(&parts.method, &target, &query) {
        Ok(v) => v,
        Err(e) => return refuse(&user.name, &method, target.resource.plural(), e),
    };
    let outcome = match serve(&state, &user, verb, &target, &query, &parts.headers, body).await {
        Ok(o) => o,
        Err(e) => Outcome::plain(e.into_response()),
    };
    record(&state, &user, &user_agent, verb, &target, &outcome);
    outcome.response
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> String {
    headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

fn verb(method: &Method, target: &Target, query: &HashMap<String, String>) -> Result<&'static str> {
    let watch = matches!(query.get("watch").map(String::as_str), Some("true" | "1"));
    // `/status` takes get, update and patch; the all-namespaces path of a namespaced
    // resource only lists and watches; namespaces have no deletecollection.
    let subresource = target.subresource.is_some();
    let all_namespaces = target.resource.namespaced() && target.namespace.is_none();
    let allowed = match method.as_str() {
        "GET" => true,
        "PUT" | "PATCH" => !all_namespaces,
        "POST" | "DELETE" => !subresource && !all_namespaces,
        _ => false,
    };
    if !allowed || (method == Method::DELETE && target.name.is_none() && target.resource == Resource::Namespaces) {
        return Err(ApiError::MethodNotAllowed);
    }
    Ok(match (method.as_str(), target.name.is_some()) {
        ("GET", true) => "get",
        ("GET", false) if watch => "watch",
        ("GET", false) => "list",
        ("POST", false) => "create",
        ("PUT", true) => "update",
        ("PATCH", true) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => return Err(ApiError::MethodNotAllowed),
    })
}

fn authenticate(state: &SimState, headers: &HeaderMap) -> Result<User> {
    let config = &state.0.config;
    match headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        Some(value) => {
            // The scheme is case-insensitive, as kube-apiserver reads it.
            let (scheme, token) = value.split_once(' ').ok_or(ApiError::Unauthorized)?;
            if !scheme.eq_ignore_ascii_case("bearer") {
                return Err(ApiError::Unauthorized);
            }
            let token = token.trim();
            config.tokens.get(token).cloned().ok_or(ApiError::Unauthorized)
        }
        None if config.allow_anonymous => Ok(User::anonymous()),
        None => Err(ApiError::Unauthorized),
    }
}

fn is_write(verb: &str) -> bool {
    matches!(verb, "create" | "update" | "patch" | "delete" | "deletecollection")
}

async fn serve(
    state: &SimState,
    user: &User,
    verb: &'static str,
    target: &Target,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
    body: Body,
) -> Result<Outcome> {
    let shared = &state.0;
    if shared.faults.snapshot().partitions.get(&user.name) == Some(&PartitionMode::Fail) {
        return Err(ApiError::ServiceUnavailable);
    }
    // A partitioned user's request reaches the server when the partition heals.
    shared.faults.wait_until_released(&user.name).await;
    let deadline = if verb == "watch" { None } else { Some(crate::deadline::deadline(query, Instant::now())?) };
    if let Some(rbac) = &shared.config.rbac {
        let resource = match &target.subresource {
            Some(sub) => format!("{}/{sub}", target.resource.plural()),
            None => target.resource.plural().to_owned(),
        };
        let group = target.resource.group();
        if !rbac.allows(user, verb, group, &resource, target.namespace.as_deref(), target.name.as_deref()) {
            return Err(ApiError::Forbidden(auth::forbidden_message(
                &user.name,
                verb,
                group,
                target.resource.plural(),
                target.subresource.as_deref(),
                target.namespace.as_deref(),
                target.name.as_deref(),
            )));
        }
    }
    // Leases are served in their own priority level, as kube-apiserver's `leader-election`
    // level serves lease traffic that a FlowSchema routes there (cronshard's chart ships one):
    // a replica's renewals never queue behind its own herd of Job creates.
    let seat = if target.resource == Resource::Leases {
        None
    } else {
        Some(shared.flow.admit(&user.name, is_write(verb), deadline).await?)
    };
    if shared.faults.should_fail(verb) {
        return Err(ApiError::InternalError(format!("injected failure for {verb}")));
    }
    let latency = shared.faults.snapshot().latency;
    let delay = if is_write(verb) { latency.write_ms } else { latency.read_ms };
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(ApiError::RequestTimeout);
    }
    let body = if matches!(verb, "create" | "update" | "patch" | "delete" | "deletecollection") {
        axum::body::to_bytes(body, shared.config.max_body_bytes)
            .await
            .map_err(|_| ApiError::RequestEntityTooLarge(shared.config.max_body_bytes))?
    } else {
        Bytes::new()
    };
    let content_type = header_text(headers, header::CONTENT_TYPE);
    let manager =
        managed::manager_name(query.get("fieldManager").map(String::as_str), &header_text(headers, header::USER_AGENT));
    if query.get("dryRun").is_some_and(|d| !d.is_empty()) {
        // Better an explicit refusal than a dry run that writes.
        return Err(ApiError::BadRequest("dryRun is not supported by cronshard-sim".into()));
    }
    match verb {
        "get" => get(state, target),
        "list" => list(state, target, query).await,
        "watch" => {
            // A watch holds no seat once it is established, as with APF.
            drop(seat);
            watch(state, target, query)
        }
        "create" => create(state, target, query, &content_type, &body, &manager),
        "update" => update(state, target, query, &content_type, &body, &manager),
        "patch" => patch(state, target, query, &content_type, &body, &manager),
        "delete" => delete(state, target, query, &body),
        _ => delete_collection(state, target, query, &body),
    }
}

fn record(state: &SimState, user: &User, user_agent: &str, verb: &str, target: &Target, outcome: &Outcome) {
    let shared = &state.0;
    let code = outcome.response.status().as_u16();
    let resource = match &target.subresource {
        Some(sub) => format!("{}/{sub}", target.resource.plural()),
        None => target.resource.plural().to_owned(),
    };
    shared
        .metrics
        .requests
        .get_or_create(&RequestLabels { verb: verb.to_owned(), resource: resource.clone(), code: code.to_string() })
        .inc();
    let object = outcome.object.as_deref();
    shared.audit.record(AuditRecord {
        seq: 0,
        time: audit_time(state),
        user: user.name.clone(),
        user_agent: user_agent.to_owned(),
        verb: verb.to_owned(),
        resource,
        namespace: target.namespace.clone().or_else(|| object.map(|o| o.namespace.clone())).unwrap_or_default(),
        name: target.name.clone().or_else(|| object.map(|o| o.name.clone())).unwrap_or_default(),
        code,
        resource_version: object.map(|o| o.rv.to_string()),
        bucket: object.and_then(|o| o.labels.get(BUCKET_LABEL).cloned()),
        holder: object.filter(|o| o.resource == Resource::Leases).map(lease_holder),
    });
}

/// A Lease's holder, for the audit log (tests judge holder intervals from it).
fn lease_holder(object: &crate::store::Object) -> String {
    serde_json::from_slice::<Value>(&object.body)
        .ok()
        .and_then(|v| v["spec"]["holderIdentity"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Server time (with the clock offset), RFC 3339 in UTC with milliseconds.
fn audit_time(state: &SimState) -> String {
    state.store().clock().now().strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

fn metrics(state: &SimState) -> impl IntoResponse {
    let shared = &state.0;
    for resource in Resource::stored() {
        let label = ResourceLabels { resource: format!("{}.{}", resource.plural(), resource.group()) };
        shared.metrics.objects.get_or_create(&label).set(shared.store.count(resource) as i64);
    }
    shared.metrics.revision.set(shared.store.revision() as i64);
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], shared.metrics.encode())
}
