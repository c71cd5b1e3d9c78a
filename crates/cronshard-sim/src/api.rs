//! The Kubernetes API paths: authentication, faults, authorization and flow control, then
//! get, list, watch, create, update, patch, delete and deletecollection.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::SimState;
use crate::audit::AuditRecord;
use crate::auth::{self, User};
use crate::discovery;
use crate::error::{ApiError, Result};
use crate::faults::PartitionMode;
use crate::metrics::{RequestLabels, ResourceLabels};
use crate::request::{self, ContinueToken, ListParams, Match, Target};
use crate::resource::Resource;
use crate::store::{self, Event, EventType, Object, ReadAt};

const BUCKET_LABEL: &str = cronshard_types::keys::BUCKET_LABEL;

/// What a handler produced, with what the audit log needs to know.
struct Outcome {
    response: Response,
    object: Option<Arc<Object>>,
}

impl Outcome {
    fn object(code: StatusCode, object: Arc<Object>, warnings: &[String]) -> Self {
        let mut response = (code, [(header::CONTENT_TYPE, "application/json")], object.body.clone()).into_response();
        for warning in warnings {
            let text = format!("299 - {}", json!(warning));
            if let Ok(value) = HeaderValue::from_str(&text) {
                response.headers_mut().append(header::WARNING, value);
            }
        }
        Outcome { response, object: Some(object) }
    }

    fn plain(response: Response) -> Self {
        Outcome { response, object: None }
    }
}

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
            let token = value.strip_prefix("Bearer ").ok_or(ApiError::Unauthorized)?.trim();
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
    shared.faults.wait_until_released(&user.name).await;
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
        Some(shared.flow.admit(&user.name, is_write(verb)).await?)
    };
    if shared.faults.should_fail(verb) {
        return Err(ApiError::InternalError(format!("injected failure for {verb}")));
    }
    let latency = shared.faults.snapshot().latency;
    let delay = if is_write(verb) { latency.write_ms } else { latency.read_ms };
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let body = if matches!(verb, "create" | "update" | "patch" | "delete" | "deletecollection") {
        axum::body::to_bytes(body, shared.config.max_body_bytes)
            .await
            .map_err(|_| ApiError::RequestEntityTooLarge(shared.config.max_body_bytes))?
    } else {
        Bytes::new()
    };
    let content_type = header_text(headers, header::CONTENT_TYPE);
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
        "create" => create(state, target, query, &content_type, &body),
        "update" => update(state, target, query, &content_type, &body),
        "patch" => patch(state, target, query, &content_type, &body),
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
    for resource in Resource::ALL {
        let label = ResourceLabels { resource: format!("{}.{}", resource.plural(), resource.group()) };
        shared.metrics.objects.get_or_create(&label).set(shared.store.count(resource) as i64);
    }
    shared.metrics.revision.set(shared.store.revision() as i64);
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], shared.metrics.encode())
}

fn namespace_of(target: &Target) -> &str {
    target.namespace.as_deref().unwrap_or("")
}

fn name_of(target: &Target) -> &str {
    target.name.as_deref().unwrap_or("")
}

fn get(state: &SimState, target: &Target) -> Result<Outcome> {
    let object = state
        .store()
        .get(target.resource, namespace_of(target), name_of(target))
        .ok_or_else(|| ApiError::NotFound { resource: target.resource, name: name_of(target).to_owned() })?;
    Ok(Outcome::object(StatusCode::OK, object, &[]))
}

fn selector_filter(target: &Target, params: &ListParams) -> impl Fn(&Object) -> bool + Send + Sync + 'static {
    let labels = params.labels.clone();
    let fields = params.fields.clone();
    let namespace = target.namespace.clone();
    move |o: &Object| {
        namespace.as_deref().is_none_or(|ns| o.namespace == ns) && labels.matches(&o.labels) && fields.matches(o)
    }
}

async fn list(state: &SimState, target: &Target, query: &HashMap<String, String>) -> Result<Outcome> {
    let params = ListParams::parse(query)?;
    let store = state.store();
    let filter = selector_filter(target, &params);
    // Which revision, and whether from storage (paginated, costs per object) or the watch
    // cache (newest state, `limit` ignored), follows kube-apiserver's rules.
    let (at, from_storage) = match (&params.continue_token, params.resource_version, params.rv_match) {
        (Some(token), _, _) => (ReadAt::Exact(token.rv), true),
        (None, None, _) => (ReadAt::Latest, true),
        (None, Some(0), _) => (ReadAt::Latest, false),
        (None, Some(rv), Some(Match::Exact)) => (ReadAt::Exact(rv), true),
        (None, Some(rv), None) if params.limit > 0 => (ReadAt::Exact(rv), true),
        (None, Some(rv), _) => {
            wait_for_revision(state, rv).await?;
            (ReadAt::Latest, false)
        }
    };
    let limit = if from_storage { params.limit } else { 0 };
    let after = params.continue_token.as_ref().map(|t| t.after.as_str());
    let page =
        store.list(target.resource, target.namespace.as_deref(), at, after, limit, &filter).map_err(|e| {
            match (e, &params.continue_token) {
                (ApiError::ResourceVersionTooOld { .. }, Some(token)) => ApiError::ContinueExpired {
                    inconsistent_continue: ContinueToken { rv: store.revision(), after: token.after.clone() }.encode(),
                },
                (ApiError::ResourceVersionTooOld { .. }, None) => ApiError::ListTooOld,
                (other, _) => other,
            }
        })?;
    if from_storage {
        let per_object = state.0.faults.snapshot().latency.list_per_object_us;
        let cost = Duration::from_micros(per_object.saturating_mul(page.scanned as u64));
        if !cost.is_zero() {
            tokio::time::sleep(cost).await;
        }
    }
    let mut metadata = json!({"resourceVersion": page.revision.to_string()});
    if let Some(after) = page.continue_after {
        metadata["continue"] = json!(ContinueToken { rv: page.revision, after }.encode());
    }
    let head = format!(
        "{{\"kind\":\"{}List\",\"apiVersion\":\"{}\",\"metadata\":{metadata},\"items\":[",
        target.resource.kind(),
        target.resource.api_version()
    );
    let mut body = Vec::with_capacity(head.len() + page.items.iter().map(|o| o.body.len() + 1).sum::<usize>() + 2);
    body.extend_from_slice(head.as_bytes());
    for (i, item) in page.items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(&item.body);
    }
    body.extend_from_slice(b"]}");
    Ok(Outcome::plain(([(header::CONTENT_TYPE, "application/json")], body).into_response()))
}

/// A NotOlderThan read of a revision the server has not reached waits up to 3 s, then 504.
async fn wait_for_revision(state: &SimState, rv: u64) -> Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while state.store().revision() < rv {
        if tokio::time::Instant::now() >= deadline {
            return Err(ApiError::ResourceVersionTooLarge { requested: rv, current: state.store().revision() });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

fn event_line(kind: &str, body: &[u8]) -> Bytes {
    let mut line = Vec::with_capacity(body.len() + 32);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    line.extend_from_slice(body);
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

fn bookmark_line(resource: Resource, rv: u64, initial_events_end: bool) -> Bytes {
    let mut metadata = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
    if initial_events_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let object = json!({"kind": resource.kind(), "apiVersion": resource.api_version(), "metadata": metadata});
    event_line("BOOKMARK", object.to_string().as_bytes())
}

/// What one watcher sees of a change, given its selector: a change that makes an object
/// match is ADDED, one that makes it stop matching is DELETED (with the previous content at
/// the event's resourceVersion), as the watch cache does.
fn convert(event: &Event, matches: &dyn Fn(&Object) -> bool) -> Option<(EventType, Arc<Object>)> {
    let current = event.kind != EventType::Deleted && matches(&event.object);
    let previous = event.prev.as_deref().is_some_and(matches);
    match (event.kind, current, previous) {
        (EventType::Deleted, _, true) => Some((EventType::Deleted, event.object.clone())),
        (EventType::Deleted, _, false) => None,
        (_, true, true) => Some((EventType::Modified, event.object.clone())),
        (_, true, false) => Some((EventType::Added, event.object.clone())),
        (_, false, true) => {
            let prev = event.prev.as_ref()?;
            let mut value = prev.value();
            value["metadata"]["resourceVersion"] = json!(event.rv.to_string());
            Some((
                EventType::Deleted,
                Arc::new(Object { rv: event.rv, body: Bytes::from(value.to_string()), ..clone_meta(prev) }),
            ))
        }
        (_, false, false) => None,
    }
}

fn clone_meta(o: &Object) -> Object {
    Object {
        resource: o.resource,
        namespace: o.namespace.clone(),
        name: o.name.clone(),
        uid: o.uid.clone(),
        rv: o.rv,
        labels: o.labels.clone(),
        owner_uids: o.owner_uids.clone(),
        body: o.body.clone(),
    }
}

type WatchSender = tokio::sync::mpsc::Sender<std::result::Result<Bytes, std::io::Error>>;

/// Sends one line unless the watch must end first (dropped, timed out, client gone): a
/// client that stops reading cannot hold a watch open past those.
async fn deliver(
    tx: &WatchSender,
    line: Bytes,
    epoch: &mut tokio::sync::watch::Receiver<u64>,
    deadline: tokio::time::Instant,
) -> std::result::Result<(), ()> {
    tokio::select! {
        sent = tx.send(Ok(line)) => sent.map_err(|_| ()),
        _ = epoch.changed() => Err(()),
        _ = tokio::time::sleep_until(deadline) => Err(()),
    }
}

fn watch(state: &SimState, target: &Target, query: &HashMap<String, String>) -> Result<Outcome> {
    let params = ListParams::parse(query)?;
    let resource = target.resource;
    let initial = params.send_initial_events || params.resource_version.is_none_or(|rv| rv == 0);
    let from = if initial { None } else { params.resource_version };
    let (tx, rx) = tokio::sync::mpsc::channel::<std::result::Result<Bytes, std::io::Error>>(256);
    let response = (
        [(header::CONTENT_TYPE, "application/json"), (header::CACHE_CONTROL, "no-cache, private")],
        Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx)),
    )
        .into_response();
    let started = state.store().watch(resource, from);
    let store::WatchStart { replay, receiver: mut events, revision: snapshot_rv } = match started {
        Ok(s) => s,
        Err(e) => {
            // Too old: the real server answers 200 and sends one ERROR event.
            let line = event_line("ERROR", e.status().to_string().as_bytes());
            tokio::spawn(async move {
                let _ = tx.send(Ok(line)).await;
            });
            return Ok(Outcome::plain(response));
        }
    };
    let matches = selector_filter(target, &params);
    let shared = state.0.clone();
    // 0 means "not set", as in kube-apiserver.
    let timeout = params
        .timeout_seconds
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
        .unwrap_or(shared.config.default_watch_timeout);
    let bookmark_every = shared.config.bookmark_interval;
    let mut epoch = shared.watch_epoch.subscribe();
    shared.metrics.watchers.inc();
    tokio::spawn(async move {
        let deadline_at = tokio::time::Instant::now() + timeout;
        let mut progress = if initial { snapshot_rv } else { params.resource_version.unwrap_or(0) };
        let result: std::result::Result<(), ()> = async {
            for event in &replay {
                progress = progress.max(event.rv);
                let converted = if initial {
                    matches(&event.object).then(|| (EventType::Added, event.object.clone()))
                } else {
                    convert(event, &matches)
                };
                if let Some((kind, object)) = converted {
                    deliver(&tx, event_line(kind.as_str(), &object.body), &mut epoch, deadline_at).await?;
                }
            }
            if initial {
                progress = snapshot_rv;
            }
            if params.send_initial_events {
                deliver(&tx, bookmark_line(resource, progress, true), &mut epoch, deadline_at).await?;
            }
            let deadline = tokio::time::sleep_until(deadline_at);
            tokio::pin!(deadline);
            let mut bookmarks = tokio::time::interval_at(tokio::time::Instant::now() + bookmark_every, bookmark_every);
            loop {
                tokio::select! {
                    received = events.recv() => match received {
                        Ok(event) => {
                            if event.rv <= progress {
                                continue;
                            }
                            progress = event.rv;
                            if event.object.resource != resource {
                                continue;
                            }
                            if let Some((kind, object)) = convert(&event, &matches) {
                                deliver(&tx, event_line(kind.as_str(), &object.body), &mut epoch, deadline_at).await?;
                            }
                        }
                        // Too slow to keep up, or the store is gone: end the watch.
                        Err(RecvError::Lagged(_) | RecvError::Closed) => return Err(()),
                    },
                    _ = bookmarks.tick(), if params.allow_bookmarks => {
                        deliver(&tx, bookmark_line(resource, progress, false), &mut epoch, deadline_at).await?;
                    }
                    _ = &mut deadline => return Ok(()),
                    _ = epoch.changed() => return Err(()),
                    _ = tx.closed() => return Err(()),
                }
            }
        }
        .await;
        let _ = result;
        shared.metrics.watchers.dec();
    });
    Ok(Outcome::plain(response))
}

/// `fieldValidation`: Strict, Warn (the default) or Ignore.
fn field_validation(query: &HashMap<String, String>) -> Result<&'static str> {
    match query.get("fieldValidation").map(String::as_str).unwrap_or("") {
        "" | "Warn" => Ok("Warn"),
        "Strict" => Ok("Strict"),
        "Ignore" => Ok("Ignore"),
        other => Err(ApiError::BadRequest(format!(
            "fieldValidation: Unsupported value: {other:?}: supported values: \"Ignore\", \"Strict\", \"Warn\""
        ))),
    }
}

fn parse_json(body: &[u8]) -> Result<Value> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::BadRequest(format!("couldn't get version/kind; json parse error: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::BadRequest("couldn't get version/kind; json parse error: expected an object".into()));
    }
    Ok(value)
}

fn require_json(content_type: &str) -> Result<()> {
    let media = content_type.split(';').next().unwrap_or("").trim();
    if media.is_empty() || media == "application/json" || media == "*/*" {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType("application/json"))
    }
}

/// Decodes a body as the apiserver's decoder would: type check, typed round trip, unknown
/// fields handled by `fieldValidation`. Returns the object and any warnings.
fn decode(resource: Resource, value: Value, validation: &str) -> Result<(Value, Vec<String>)> {
    resource.check_type(&value)?;
    let (object, unknown) = resource.decode(value)?;
    let messages: Vec<String> = unknown.iter().map(|path| format!("unknown field {}", json!(path))).collect();
    match validation {
        "Strict" if !messages.is_empty() => {
            Err(ApiError::BadRequest(format!("strict decoding error: {}", messages.join(", "))))
        }
        "Warn" => Ok((object, messages)),
        _ => Ok((object, Vec::new())),
    }
}

fn resource_version_of(value: &Value) -> Result<Option<u64>> {
    match value["metadata"].get("resourceVersion").and_then(Value::as_str) {
        None | Some("") => Ok(None),
        Some(rv) => rv.parse().map(Some).map_err(|_| ApiError::BadRequest(format!("invalid resource version: {rv:?}"))),
    }
}

fn ensure_namespace(state: &SimState, resource: Resource, namespace: &str) -> Result<()> {
    if resource.namespaced() && state.store().get(Resource::Namespaces, "", namespace).is_none() {
        return Err(ApiError::NotFound { resource: Resource::Namespaces, name: namespace.to_owned() });
    }
    Ok(())
}

fn create(
    state: &SimState,
    target: &Target,
    query: &HashMap<String, String>,
    content_type: &str,
    body: &[u8],
) -> Result<Outcome> {
    require_json(content_type)?;
    let validation = field_validation(query)?;
    let (mut object, warnings) = decode(target.resource, parse_json(body)?, validation)?;
    if resource_version_of(&object)?.is_some() {
        return Err(ApiError::InternalError("resourceVersion should not be set on objects to be created".into()));
    }
    let meta = &mut object["metadata"];
    if !target.resource.namespaced()
        && let Some(m) = meta.as_object_mut()
    {
        m.remove("namespace");
    }
    if let Some(ns) = &target.namespace {
        match meta.get("namespace").and_then(Value::as_str) {
            Some(body_ns) if !body_ns.is_empty() && body_ns != ns => {
                return Err(ApiError::BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request".into(),
                ));
            }
            _ => meta["namespace"] = json!(ns),
        }
    }
    if meta.get("name").and_then(Value::as_str).is_none_or(str::is_empty)
        && let Some(prefix) = meta.get("generateName").and_then(Value::as_str)
    {
        let suffix: String =
            (0..5).map(|_| (b"bcdfghjklmnpqrstvwxz2456789"[rand::random_range(0..27)]) as char).collect();
        meta["name"] = json!(format!("{prefix}{suffix}"));
    }
    let uid = uuid::Uuid::new_v4().to_string();
    meta["uid"] = json!(uid);
    if let Some(m) = meta.as_object_mut() {
        m.remove("creationTimestamp");
        m.remove("deletionTimestamp");
        m.remove("generation");
    }
    if target.resource.has_status()
        && target.resource != Resource::Namespaces
        && let Some(o) = object.as_object_mut()
    {
        o.remove("status");
    }
    target.resource.apply_defaults(&mut object, &uid);
    target.resource.validate(&object, true)?;
    ensure_namespace(state, target.resource, object["metadata"]["namespace"].as_str().unwrap_or(""))?;
    let stored = state.store().create(target.resource, object)?;
    Ok(Outcome::object(StatusCode::CREATED, stored, &warnings))
}

/// The new state after an update or patch of the object or its `/status`: a write to the
/// object keeps the stored status; a write to `/status` changes only the status.
fn merge_subresource(target: &Target, old: &Value, mut new: Value) -> Value {
    if target.subresource.as_deref() == Some("status") {
        let mut merged = old.clone();
        merged["status"] = new.get("status").cloned().unwrap_or(Value::Null);
        if merged["status"].is_null()
            && let Some(o) = merged.as_object_mut()
        {
            o.remove("status");
        }
        merged["metadata"]["resourceVersion"] = new["metadata"]["resourceVersion"].clone();
        return merged;
    }
    if target.resource.has_status() {
        match old.get("status") {
            Some(status) => new["status"] = status.clone(),
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("status");
                }
            }
        }
    }
    new
}

fn write_existing(
    state: &SimState,
    target: &Target,
    validation: &'static str,
    make: impl FnOnce(&Value) -> Result<Value>,
) -> Result<Outcome> {
    let mut warnings = Vec::new();
    let stored = state.store().update(target.resource, namespace_of(target), name_of(target), |current| {
        let old = current.value();
        let proposed = make(&old)?;
        let (decoded, w) = decode(target.resource, proposed, validation)?;
        warnings = w;
        if resource_version_of(&decoded)?.is_some_and(|rv| rv != current.rv) {
            return Err(ApiError::Conflict { resource: target.resource, name: current.name.clone() });
        }
        let mut new = merge_subresource(target, &old, decoded);
        let uid = current.uid.clone();
        target.resource.apply_defaults(&mut new, &uid);
        target.resource.validate(&new, false)?;
        Ok(Some(new))
    })?;
    Ok(Outcome::object(StatusCode::OK, stored, &warnings))
}

fn update(
    state: &SimState,
    target: &Target,
    query: &HashMap<String, String>,
    content_type: &str,
    body: &[u8],
) -> Result<Outcome> {
    require_json(content_type)?;
    let validation = field_validation(query)?;
    let value = parse_json(body)?;
    let body_name = value["metadata"].get("name").and_then(Value::as_str).unwrap_or("");
    if body_name != name_of(target) {
        return Err(ApiError::BadRequest(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({})",
            name_of(target)
        )));
    }
    if let (Some(ns), Some(body_ns)) = (&target.namespace, value["metadata"].get("namespace").and_then(Value::as_str))
        && !body_ns.is_empty()
        && body_ns != ns
    {
        return Err(ApiError::BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request".into(),
        ));
    }
    let exists = state.store().get(target.resource, namespace_of(target), name_of(target)).is_some();
    if !exists && target.subresource.is_none() && target.resource.allow_create_on_update() {
        let collection = Target { name: None, ..target.clone() };
        return create(state, &collection, query, content_type, body);
    }
    if target.resource == Resource::Leases && resource_version_of(&value)?.is_none() {
        return Err(ApiError::Invalid {
            kind: target.resource.kind(),
            group: target.resource.group(),
            name: name_of(target).to_owned(),
            causes: vec![crate::error::Cause::invalid(
                "metadata.resourceVersion",
                "0x0",
                "must be specified for an update",
            )],
        });
    }
    write_existing(state, target, validation, |_| Ok(value))
}

fn patch(
    state: &SimState,
    target: &Target,
    query: &HashMap<String, String>,
    content_type: &str,
    body: &[u8],
) -> Result<Outcome> {
    let validation = field_validation(query)?;
    let media = content_type.split(';').next().unwrap_or("").trim().to_owned();
    let json_patch = match media.as_str() {
        // Strategic merge patch is treated as a JSON merge patch: for the fields of these
        // types (no lists merged by key that cronshard relies on) the results agree.
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => false,
        "application/json-patch+json" => true,
        _ => {
            return Err(ApiError::UnsupportedMediaType(
                "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json",
            ));
        }
    };
    let patch_body: Value =
        serde_json::from_slice(body).map_err(|e| ApiError::BadRequest(format!("error decoding patch: {e}")))?;
    write_existing(state, target, validation, move |old| {
        let mut patched = old.clone();
        if json_patch {
            let operations: json_patch::Patch = serde_json::from_value(patch_body)
                .map_err(|e| ApiError::BadRequest(format!("error decoding patch: {e}")))?;
            json_patch::patch(&mut patched, &operations).map_err(|e| ApiError::Invalid {
                kind: "",
                group: "",
                name: String::new(),
                causes: vec![crate::error::Cause {
                    field: String::new(),
                    reason: "FieldValueInvalid",
                    message: e.to_string(),
                }],
            })?;
        } else {
            if !patch_body.is_object() {
                return Err(ApiError::BadRequest("error decoding patch: a merge patch must be a JSON object".into()));
            }
            json_patch::merge(&mut patched, &without_directives(patch_body.clone()));
        }
        if patched["metadata"]["resourceVersion"] == old["metadata"]["resourceVersion"] {
            // No precondition in the patch: the server applies it to the current version.
            if let Some(m) = patched["metadata"].as_object_mut() {
                m.remove("resourceVersion");
            }
        }
        Ok(patched)
    })
}

/// Drops strategic-merge-patch directives (`$patch`, `$setElementOrder/...`, `$retainKeys`),
/// which a JSON merge patch would otherwise store as unknown fields.
fn without_directives(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter().filter(|(k, _)| !k.starts_with('$')).map(|(k, v)| (k, without_directives(v))).collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_directives).collect()),
        other => other,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Propagation {
    Orphan,
    Background,
    Foreground,
}

fn delete_options(
    resource: Resource,
    query: &HashMap<String, String>,
    body: &[u8],
) -> Result<(Propagation, Option<u64>, Option<String>)> {
    let options: Value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::BadRequest(format!("unable to decode DeleteOptions: {e}")))?
    };
    let policy = query
        .get("propagationPolicy")
        .map(String::as_str)
        .or_else(|| options.get("propagationPolicy").and_then(Value::as_str));
    let orphan = options.get("orphanDependents").and_then(Value::as_bool);
    let propagation = match (policy, orphan) {
        (Some("Orphan"), _) | (None, Some(true)) => Propagation::Orphan,
        (Some("Background"), _) | (None, Some(false)) => Propagation::Background,
        (Some("Foreground"), _) => Propagation::Foreground,
        (Some(other), _) => {
            return Err(ApiError::BadRequest(format!(
                "propagationPolicy: Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
            )));
        }
        // batch/v1 Jobs orphan by default, for compatibility; everything else cascades.
        (None, None) if resource == Resource::Jobs => Propagation::Orphan,
        (None, None) => Propagation::Background,
    };
    let preconditions = options.get("preconditions");
    let rv = match preconditions.and_then(|p| p.get("resourceVersion")).and_then(Value::as_str) {
        Some(rv) => Some(rv.parse().map_err(|_| ApiError::BadRequest(format!("invalid resource version: {rv:?}")))?),
        None => None,
    };
    let uid = preconditions.and_then(|p| p.get("uid")).and_then(Value::as_str).map(str::to_owned);
    Ok((propagation, rv, uid))
}

/// Deletes one object and garbage-collects its dependents according to the propagation.
fn delete_one(
    state: &SimState,
    resource: Resource,
    namespace: &str,
    name: &str,
    propagation: Propagation,
    precondition_rv: Option<u64>,
    precondition_uid: Option<&str>,
) -> Result<Arc<Object>> {
    let store = state.store();
    if let Some(uid) = precondition_uid {
        let current = store
            .get(resource, namespace, name)
            .ok_or_else(|| ApiError::NotFound { resource, name: name.to_owned() })?;
        if current.uid != uid {
            return Err(ApiError::Conflict { resource, name: name.to_owned() });
        }
    }
    let deleted = store.delete(resource, namespace, name, precondition_rv)?;
    if resource == Resource::Namespaces {
        // The namespace controller's job, done at once: nothing outlives its namespace.
        let everything = |_: &Object| true;
        for inner in Resource::ALL.into_iter().filter(|r| r.namespaced()) {
            let page = store.list(inner, Some(name), ReadAt::Latest, None, 0, &everything)?;
            for object in page.items {
                match delete_one(state, inner, name, &object.name, Propagation::Background, None, None) {
                    Ok(_) | Err(ApiError::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    for (dep_resource, dep_ns, dep_name) in store.dependents(&deleted.uid) {
        let result = match propagation {
            Propagation::Orphan => store
                .update(dep_resource, &dep_ns, &dep_name, |o| {
                    let mut value = o.value();
                    if let Some(refs) = value["metadata"]["ownerReferences"].as_array_mut() {
                        refs.retain(|r| r["uid"] != deleted.uid.as_str());
                    }
                    Ok(Some(value))
                })
                .map(drop),
            Propagation::Background | Propagation::Foreground => {
                delete_one(state, dep_resource, &dep_ns, &dep_name, Propagation::Background, None, None).map(drop)
            }
        };
        // A dependent deleted concurrently is already gone: that is the goal.
        if let Err(e) = result
            && !matches!(e, ApiError::NotFound { .. })
        {
            return Err(e);
        }
    }
    Ok(deleted)
}

fn success_status(resource: Resource, object: &Object) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
        "details": {"name": object.name, "group": resource.group(), "kind": resource.plural(), "uid": object.uid}
    })
}

fn delete(state: &SimState, target: &Target, query: &HashMap<String, String>, body: &[u8]) -> Result<Outcome> {
    let (propagation, rv, uid) = delete_options(target.resource, query, body)?;
    let deleted =
        delete_one(state, target.resource, namespace_of(target), name_of(target), propagation, rv, uid.as_deref())?;
    let response =
        ([(header::CONTENT_TYPE, "application/json")], success_status(target.resource, &deleted).to_string())
            .into_response();
    Ok(Outcome { response, object: Some(deleted) })
}

fn delete_collection(
    state: &SimState,
    target: &Target,
    query: &HashMap<String, String>,
    body: &[u8],
) -> Result<Outcome> {
    let params = ListParams::parse(query)?;
    let (propagation, _, _) = delete_options(target.resource, query, body)?;
    let filter = selector_filter(target, &params);
    let page = state.store().list(target.resource, target.namespace.as_deref(), ReadAt::Latest, None, 0, &filter)?;
    let mut deleted = Vec::new();
    for object in page.items {
        match delete_one(state, target.resource, &object.namespace, &object.name, propagation, None, None) {
            Ok(gone) => deleted.push(gone),
            Err(ApiError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let items: Vec<Value> = deleted.iter().map(|o| o.value()).collect();
    let list = json!({
        "kind": format!("{}List", target.resource.kind()), "apiVersion": target.resource.api_version(),
        "metadata": {"resourceVersion": state.store().revision().to_string()}, "items": items,
    });
    Ok(Outcome::plain(([(header::CONTENT_TYPE, "application/json")], list.to_string()).into_response()))
}
