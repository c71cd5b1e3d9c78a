//! create, update and patch: decoding, validation, resourceVersion preconditions, the status
//! subresource.

use std::collections::HashMap;

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::outcome::Outcome;
use crate::SimState;
use crate::error::{ApiError, Result};
use crate::managed::{self, Write};
use crate::protobuf;
use crate::request::{Target, name_of, namespace_of};
use crate::resource::Resource;

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

/// A create or update body as JSON: JSON as it is, protobuf converted (see `protobuf`).
fn body_value(resource: Resource, content_type: &str, body: &[u8]) -> Result<Value> {
    match content_type.split(';').next().unwrap_or("").trim() {
        "" | "application/json" | "*/*" => parse_json(body),
        protobuf::MEDIA_TYPE => protobuf::decode(resource, body),
        _ => Err(ApiError::UnsupportedMediaType("application/json, application/vnd.kubernetes.protobuf")),
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

pub(super) fn create(
    state: &SimState,
    target: &Target,
    query: &HashMap<String, String>,
    content_type: &str,
    body: &[u8],
    manager: &str,
) -> Result<Outcome> {
    let validation = field_validation(query)?;
    let (mut object, warnings) = decode(target.resource, body_value(target.resource, content_type, body)?, validation)?;
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
    target.resource.apply_defaults(&mut object);
    let write =
        Write { resource: target.resource, manager, subresource: None, time: state.store().clock().now_rfc3339() };
    managed::record(&write, None, &mut object);
    target.resource.prepare_for_create(&mut object);
    target.resource.validate(&object, true)?;
    ensure_namespace(state, target.resource, object["metadata"]["namespace"].as_str().unwrap_or(""))?;
    let stored = state.store().create(target.resource, object)?;
    Ok(Outcome::object(StatusCode::CREATED, stored, &warnings))
}

/// The new state after an update or patch of the object or its `/status`: a write to the
/// object keeps the stored status (and a Namespace its finalizers, which only `/finalize`
/// changes); a write to `/status` changes only the status.
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
    if target.resource == Resource::Namespaces {
        let finalizers = old["spec"].get("finalizers").cloned();
        if !new["spec"].is_object() {
            new["spec"] = json!({});
        }
        if let (Some(spec), Some(finalizers)) = (new["spec"].as_object_mut(), finalizers) {
            spec.insert("finalizers".into(), finalizers);
        }
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
    manager: &str,
    make: impl FnOnce(&Value) -> Result<Value>,
) -> Result<Outcome> {
    let time = state.store().clock().now_rfc3339();
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
        target.resource.apply_defaults(&mut new);
        let write = Write { resource: target.resource, manager, subresource: target.subresource.as_deref(), time };
        managed::record(&write, Some(&old), &mut new);
        // kube-apiserver's status strategies do not validate the spec again: an object stored
        // before a rule existed can still get its status written.
        if target.subresource.as_deref() != Some("status") {
            target.resource.validate(&new, false)?;
        }
        Ok(Some(new))
    })?;
    Ok(Outcome::object(StatusCode::OK, stored, &warnings))
}

pub(super) fn update(
    state: &SimState,
    target: &Target,
    query: &HashMap<String, String>,
    content_type: &str,
    body: &[u8],
    manager: &str,
) -> Result<Outcome> {
    let validation = field_validation(query)?;
    let value = body_value(target.resource, content_type, body)?;
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
        return create(state, &collection, query, content_type, body, manager);
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
    write_existing(state, target, validation, manager, |_| Ok(value))
}

pub(super) fn patch(
    state: &SimState,
    target: &Target,
    query: &HashMap<String, String>,
    content_type: &str,
    body: &[u8],
    manager: &str,
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
    write_existing(state, target, validation, manager, move |old| {
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
