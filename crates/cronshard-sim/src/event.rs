//! The one Event store, served through core `v1` and `events.k8s.io/v1` as kube-apiserver
//! serves it: Events are kept in the core form, and converted for events.k8s.io as upstream's
//! `pkg/apis/events/v1/conversion.go` converts; validation and field selectors work on the
//! stored form, as upstream's work on its internal type.

use serde_json::{Map, Value, json};

use crate::error::Cause;
use crate::resource::qualified_name_problem;

/// events.k8s.io/v1 names of the fields that core v1 names otherwise; the rest (`metadata`,
/// `eventTime`, `series`, `reportingInstance`, `action`, `reason`, `related`, `type`) are the
/// same in both.
const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// An events.k8s.io/v1 Event in the stored (core v1) form.
pub fn to_core(mut event: Value) -> Value {
    if let Some(map) = event.as_object_mut() {
        for (from, to) in RENAMED {
            rename(map, from, to);
        }
        map.insert("apiVersion".into(), json!("v1"));
    }
    core_shape(event)
}

/// A stored (core v1) Event as events.k8s.io/v1 serves it.
pub fn from_core(mut event: Value) -> Value {
    if let Some(map) = event.as_object_mut() {
        for (to, from) in RENAMED {
            rename(map, from, to);
        }
        map.insert("apiVersion".into(), json!("events.k8s.io/v1"));
        // Go writes these structs even when empty; the other strings are `omitempty`.
        for field in ["regarding", "deprecatedSource"] {
            map.entry(field).or_insert_with(|| json!({}));
        }
        omit_zero(map, &["reportingController", "reportingInstance", "action", "reason", "note", "type"]);
    }
    event
}

/// A core v1 Event as Go writes it: `involvedObject` and `source` even when empty,
/// `reportingComponent` and `reportingInstance` even when `""` (they are not `omitempty`),
/// the other empty strings and a zero count left out.
pub fn core_shape(mut event: Value) -> Value {
    if let Some(map) = event.as_object_mut() {
        for field in ["involvedObject", "source"] {
            map.entry(field).or_insert_with(|| json!({}));
        }
        for field in ["reportingComponent", "reportingInstance"] {
            if !map.get(field).is_some_and(Value::is_string) {
                map.insert(field.into(), json!(""));
            }
        }
        omit_zero(map, &["reason", "message", "type", "action", "count"]);
    }
    event
}

fn rename(map: &mut Map<String, Value>, from: &str, to: &str) {
    match map.remove(from) {
        Some(value) => {
            map.insert(to.to_owned(), value);
        }
        None => {
            map.remove(to);
        }
    }
}

/// Drops `omitempty` fields holding Go's zero value (and nulls, which mean "unset" here).
fn omit_zero(map: &mut Map<String, Value>, fields: &[&str]) {
    for field in fields {
        if map.get(*field).is_some_and(|v| v.is_null() || *v == json!("") || *v == json!(0)) {
            map.remove(*field);
        }
    }
    map.retain(|_, v| !v.is_null());
}

/// The fields a core Event is selected by (upstream's `ToSelectableFields`), besides
/// `metadata.name` and `metadata.namespace`.
pub const SELECTABLE: [&str; 11] = [
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

/// The values of [`SELECTABLE`] for a stored Event, in that order.
pub fn selectable_fields(core: &Value) -> Vec<String> {
    let text = |path: &str| core.pointer(path).and_then(Value::as_str).unwrap_or("").to_owned();
    SELECTABLE
        .iter()
        .map(|field| match *field {
            // An Event written through events.k8s.io has no source: its controller stands in.
            "source" => {
                Some(text("/source/component")).filter(|c| !c.is_empty()).unwrap_or(text("/reportingComponent"))
            }
            other => text(&format!("/{}", other.replace('.', "/"))),
        })
        .collect()
}

/// The stored field a field selector label names, for core v1 (`core`) or events.k8s.io/v1
/// (upstream's `AddFieldLabelConversionsForEvent` of each); `None` if that API has no such
/// label. `metadata.name` and `metadata.namespace` are not handled here.
pub fn field_label(core: bool, label: &str) -> Option<usize> {
    let stored = if core {
        label
    } else {
        match label {
            "reason" | "type" => label,
            "reportingController" => "reportingComponent",
            other => {
                let rest = other.strip_prefix("regarding.")?;
                return SELECTABLE.iter().position(|f| f.strip_prefix("involvedObject.") == Some(rest));
            }
        }
    };
    SELECTABLE.iter().position(|f| *f == stored)
}

/// kube-apiserver's Event validation, on the stored form: the legacy rules for every write,
/// and on a create through events.k8s.io/v1 (`via_events`) the rules of the new API. Fields
/// carry the internal type's names (`involvedObject`, `message`), as the real server reports
/// them.
pub fn validate(core: &Value, via_events: bool, creating: bool, causes: &mut Vec<Cause>) {
    let text = |path: &str| core.pointer(path).and_then(Value::as_str).unwrap_or("");
    let set = |field: &str| core.get(field).is_some_and(|v| !v.is_null());
    let namespace = text("/metadata/namespace");
    let involved_namespace = text("/involvedObject/namespace");
    if !set("eventTime") {
        let matches = if involved_namespace.is_empty() {
            matches!(namespace, "" | "default")
        } else {
            namespace == involved_namespace
        };
        if !matches {
            causes.push(Cause::invalid(
                "involvedObject.namespace",
                involved_namespace,
                "does not match event.namespace",
            ));
        }
    } else {
        validate_reporting(core, via_events, causes);
    }
    if !(via_events && creating) {
        return;
    }
    if let Some(series) = core.get("series").filter(|s| !s.is_null()) {
        if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
            causes.push(Cause::invalid("series.count", "", "should be at least 2"));
        }
        if series.get("lastObservedTime").is_none_or(Value::is_null) {
            causes.push(Cause::required("series.lastObservedTime"));
        }
    }
    if !set("eventTime") {
        causes.push(Cause::required("eventTime"));
    }
    let kind = text("/type");
    if kind != "Normal" && kind != "Warning" {
        causes.push(Cause::invalid("type", "", &format!("has invalid value: {kind}")));
    }
    for field in ["firstTimestamp", "lastTimestamp"] {
        if set(field) {
            causes.push(Cause::invalid(field, "", "needs to be unset"));
        }
    }
    if core.get("count").and_then(Value::as_i64).is_some_and(|c| c != 0) {
        causes.push(Cause::invalid("count", "", "needs to be unset"));
    }
    if !text("/source/component").is_empty() || !text("/source/host").is_empty() {
        causes.push(Cause::invalid("source", "", "needs to be unset"));
    }
}

/// The legacy rules for an Event with an `eventTime`: who reported it, and the lengths.
fn validate_reporting(core: &Value, via_events: bool, causes: &mut Vec<Cause>) {
    let text = |path: &str| core.pointer(path).and_then(Value::as_str).unwrap_or("");
    let namespace = text("/metadata/namespace");
    if text("/involvedObject/namespace").is_empty() && !matches!(namespace, "default" | "kube-system") {
        causes.push(Cause::invalid("involvedObject.namespace", "", "does not match event.namespace"));
    }
    // Upstream names the field as the API it was written through calls it.
    let controller_field = if via_events { "reportingController" } else { "reportingComponent" };
    let controller = text("/reportingComponent");
    if controller.is_empty() {
        causes.push(Cause::required(controller_field));
    }
    if let Some(problem) = qualified_name_problem(controller) {
        causes.push(Cause::invalid(controller_field, controller, &problem));
    }
    for (field, limit) in [("reportingInstance", 128), ("action", 128), ("reason", 128)] {
        let value = text(&format!("/{field}"));
        if value.is_empty() {
            causes.push(Cause::required(field));
        } else if value.len() > limit {
            causes.push(Cause::invalid(field, "", &format!("can have at most {limit} characters")));
        }
    }
    if text("/message").len() > 1024 {
        causes.push(Cause::invalid("message", "", "can have at most 1024 characters"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_forms_convert_both_ways() {
        let events = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"kind": "CronJob", "name": "n"}, "note": "hi", "reportingController": "c",
            "reportingInstance": "i", "deprecatedSource": {}, "deprecatedCount": 3, "action": "A",
            "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:00.000000Z"}});
        let core = to_core(events.clone());
        assert_eq!(core["involvedObject"], json!({"kind": "CronJob", "name": "n"}));
        assert_eq!(
            (&core["message"], &core["reportingComponent"], &core["count"]),
            (&json!("hi"), &json!("c"), &json!(3))
        );
        assert_eq!((&core["apiVersion"], &core["source"]), (&json!("v1"), &json!({})));
        assert!(core.get("note").is_none() && core.get("regarding").is_none());
        assert_eq!(from_core(core), events);
    }

    #[test]
    fn events_labels_map_to_the_stored_fields() {
        let name = field_label(false, "regarding.name").map(|i| SELECTABLE[i]);
        assert_eq!(name, Some("involvedObject.name"));
        assert_eq!(field_label(false, "reportingController").map(|i| SELECTABLE[i]), Some("reportingComponent"));
        assert_eq!(field_label(false, "involvedObject.name"), None);
        assert_eq!(field_label(false, "source"), None);
        assert_eq!(field_label(true, "regarding.name"), None);
        let core = json!({"involvedObject": {"name": "n"}, "reportingComponent": "c", "source": {}});
        let fields = selectable_fields(&core);
        assert_eq!((fields[2].as_str(), fields[9].as_str()), ("n", "c"));
    }
}
