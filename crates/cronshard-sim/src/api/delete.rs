//! delete and deletecollection, with preconditions and the propagation policies.

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::header;
use axum::response::IntoResponse;
use serde_json::{Value, json};

use super::outcome::Outcome;
use super::read::selector_filter;
use crate::SimState;
use crate::error::{ApiError, Cause, Result};
use crate::request::{ListParams, Target, name_of, namespace_of};
use crate::resource::Resource;
use crate::store::{Object, ReadAt};

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
            // As kube-apiserver's ValidateDeleteOptions: 422 on the DeleteOptions themselves.
            let cause = Cause {
                field: "propagationPolicy".to_owned(),
                reason: "FieldValueNotSupported",
                message: format!(
                    "Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                ),
            };
            return Err(ApiError::Invalid {
                kind: "DeleteOptions",
                group: "meta.k8s.io",
                name: String::new(),
                causes: vec![cause],
            });
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
        for inner in Resource::stored().filter(|r| r.namespaced()) {
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

/// The finalizer kube-apiserver adds for the garbage collector when a delete orphans or
/// waits for the dependents (a Namespace is finalized by its own controller instead).
fn garbage_collector_finalizer(resource: Resource, propagation: Propagation) -> Option<&'static str> {
    match (resource, propagation) {
        (Resource::Namespaces, _) | (_, Propagation::Background) => None,
        (_, Propagation::Orphan) => Some("orphan"),
        (_, Propagation::Foreground) => Some("foregroundDeletion"),
    }
}

/// What kube-apiserver answers to a delete the garbage collector must finish: not a Status
/// but the object as that delete left it (deletionTimestamp, a grace period of 0, the
/// finalizer, and its generation bumped). The simulator has done the collector's work
/// already, so the object is gone when the answer comes, as it is a moment later there.
fn marked_for_deletion(state: &SimState, deleted: &Object, finalizer: &str) -> Value {
    let mut value = deleted.value();
    let metadata = &mut value["metadata"];
    metadata["deletionTimestamp"] = json!(state.store().clock().now_rfc3339());
    metadata["deletionGracePeriodSeconds"] = json!(0);
    if let Some(generation) = metadata["generation"].as_i64().filter(|g| *g > 0) {
        metadata["generation"] = json!(generation + 1);
    }
    let mut finalizers: Vec<Value> = metadata["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| *f != "orphan" && *f != "foregroundDeletion")
        .cloned()
        .collect();
    finalizers.push(json!(finalizer));
    metadata["finalizers"] = Value::Array(finalizers);
    value
}

fn success_status(resource: Resource, object: &Object) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
        "details": {"name": object.name, "group": resource.group(), "kind": resource.plural(), "uid": object.uid}
    })
}

pub(super) fn delete(
    state: &SimState,
    target: &Target,
    query: &HashMap<String, String>,
    body: &[u8],
) -> Result<Outcome> {
    let (propagation, rv, uid) = delete_options(target.resource, query, body)?;
    let deleted =
        delete_one(state, target.resource, namespace_of(target), name_of(target), propagation, rv, uid.as_deref())?;
    let answer = match garbage_collector_finalizer(target.resource, propagation) {
        Some(finalizer) => marked_for_deletion(state, &deleted, finalizer),
        None => success_status(target.resource, &deleted),
    };
    let response = ([(header::CONTENT_TYPE, "application/json")], answer.to_string()).into_response();
    Ok(Outcome { response, object: Some(deleted) })
}

pub(super) fn delete_collection(
    state: &SimState,
    target: &Target,
    query: &HashMap<String, String>,
    body: &[u8],
) -> Result<Outcome> {
    let params = ListParams::parse(query, target.resource)?;
    let (propagation, _, _) = delete_options(target.resource, query, body)?;
    // A delete collection is not sharded.
    let filter = selector_filter(target, &params, None);
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
