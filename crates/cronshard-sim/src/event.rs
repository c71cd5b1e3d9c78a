//! The one Event store, served through core `v1` and `events.k8s.io/v1` as kube-apiserver
//! serves it: Events are kept in the core form, and converted for events.k8s.io as upstream's
//! `pkg/apis/events/v1/conversion.go` converts; field selectors (and validation, in
//! `validation.rs`) work on the stored form, as upstream's work on its internal type.

use serde_json::{Map, Value, json};

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
