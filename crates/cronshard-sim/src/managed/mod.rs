//! `metadata.managedFields` as kube-apiserver keeps them for creates, updates and patches
//! (the Update operation of its field manager): which manager set which fields, and when.

mod fieldset;

use serde_json::{Value, json};

pub use self::fieldset::{FieldSet, Shape, compare};
use crate::resource::Resource;

/// The longest manager name kube-apiserver keeps (`validation.FieldManagerMaxLength`).
const MAX_MANAGER_LEN: usize = 128;

/// Who writes: the `fieldManager` query parameter, else the User-Agent up to its first `/`
/// (printable characters only, at most 128 bytes), as kube-apiserver's `managerOrUserAgent`.
pub fn manager_name(field_manager: Option<&str>, user_agent: &str) -> String {
    if let Some(manager) = field_manager.filter(|m| !m.is_empty()) {
        return manager.to_owned();
    }
    let mut name = String::new();
    for c in user_agent.split('/').next().unwrap_or("").chars().filter(|c| !c.is_control()) {
        if name.len() + c.len_utf8() > MAX_MANAGER_LEN {
            break;
        }
        name.push(c);
    }
    name
}

/// One write to record: by whom, through which version and subresource, at what time.
#[derive(Debug)]
pub struct Write<'a> {
    pub resource: Resource,
    pub manager: &'a str,
    pub subresource: Option<&'a str>,
    pub time: String,
}

/// One entry of `metadata.managedFields`.
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    subresource: String,
    time: Option<String>,
    fields: FieldSet,
}

impl Entry {
    fn parse(value: &Value) -> Entry {
        let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        Entry {
            manager: text("manager"),
            operation: text("operation"),
            api_version: text("apiVersion"),
            subresource: text("subresource"),
            time: value.get("time").and_then(Value::as_str).map(str::to_owned),
            fields: FieldSet::from_fields_v1(value.get("fieldsV1").unwrap_or(&Value::Null)),
        }
    }

    fn to_json(&self) -> Value {
        let mut entry = json!({"operation": self.operation, "apiVersion": self.api_version,
            "fieldsType": "FieldsV1", "fieldsV1": self.fields.to_fields_v1()});
        // As the Go type's omitempty fields.
        for (key, value) in [("manager", &self.manager), ("subresource", &self.subresource)] {
            if !value.is_empty() {
                entry[key] = json!(value);
            }
        }
        if let Some(time) = &self.time {
            entry["time"] = json!(time);
        }
        entry
    }
}

/// Records `write` of `new` over `old` (`None` for a create) in `new`'s managedFields, as
/// kube-apiserver's field manager does: the managers other than the writer lose the fields
/// it changed or removed, the writer gains the fields it changed and, when it changed any,
/// its entry's time is now. Entries left with no field go.
pub fn record(write: &Write<'_>, old: Option<&Value>, new: &mut Value) {
    let entries = previous_entries(write, old, new);
    let mut entries: Vec<Entry> = entries.iter().map(Entry::parse).collect();
    let baseline = zero_value(write.resource);
    let mut cmp = compare(&stripped(old.unwrap_or(&baseline)), &stripped(new), &|names| shape(write.resource, names));
    cmp.exclude(&reset_fields(write.resource, write.subresource));
    let changed = cmp.changed();
    for entry in &mut entries {
        entry.fields.difference(&changed);
        entry.fields.difference(&cmp.removed);
    }
    let mut mine = changed;
    mine.difference(&identity_fields());
    let api_version = write.resource.api_version();
    let subresource = write.subresource.unwrap_or_default();
    let is_writer = |e: &Entry| {
        e.manager == write.manager
            && e.operation == "Update"
            && e.api_version == api_version
            && e.subresource == subresource
    };
    if !mine.is_empty() {
        match entries.iter_mut().find(|e| is_writer(e)) {
            Some(entry) => {
                entry.fields.union(&mine);
                entry.time = Some(write.time.clone());
            }
            None => entries.push(Entry {
                manager: write.manager.to_owned(),
                operation: "Update".into(),
                api_version: api_version.to_owned(),
                subresource: subresource.to_owned(),
                time: Some(write.time.clone()),
                fields: mine,
            }),
        }
    }
    entries.retain(|e| !e.fields.is_empty());
    entries.sort_by(|a, b| {
        (&a.operation, &a.time, &a.manager, &a.api_version, &a.subresource).cmp(&(
            &b.operation,
            &b.time,
            &b.manager,
            &b.api_version,
            &b.subresource,
        ))
    });
    let list: Vec<Value> = entries.iter().map(Entry::to_json).collect();
    if let Some(meta) = new["metadata"].as_object_mut() {
        if list.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(list));
        }
    }
}

/// The entries the write starts from: the stored object's for a subresource, for a body
/// without any, or one whose entries cannot be read; the body's own otherwise (a client may
/// set them), and none when the body resets them with `[{}]`.
fn previous_entries(write: &Write<'_>, old: Option<&Value>, new: &Value) -> Vec<Value> {
    let stored = || old.and_then(|o| o["metadata"]["managedFields"].as_array()).cloned().unwrap_or_default();
    if write.subresource.is_some() {
        return stored();
    }
    match new["metadata"]["managedFields"].as_array() {
        Some(given) if given.len() == 1 && given[0].as_object().is_some_and(serde_json::Map::is_empty) => Vec::new(),
        Some(given) if !given.is_empty() && given.iter().all(|e| e.get("fieldsV1").is_some()) => given.clone(),
        _ => stored(),
    }
}

/// The object without its managedFields (never part of what is compared).
fn stripped(value: &Value) -> Value {
    let mut value = value.clone();
    if let Some(meta) = value["metadata"].as_object_mut() {
        meta.remove("managedFields");
    }
    value
}

/// What no manager owns: the type, the object's identity and what the server sets
/// (kube-apiserver's strip-meta step).
fn identity_fields() -> FieldSet {
    let mut set = FieldSet::default();
    for path in [
        &["f:apiVersion"][..],
        &["f:kind"],
        &["f:metadata"],
        &["f:metadata", "f:name"],
        &["f:metadata", "f:namespace"],
        &["f:metadata", "f:creationTimestamp"],
        &["f:metadata", "f:selfLink"],
        &["f:metadata", "f:uid"],
        &["f:metadata", "f:clusterName"],
        &["f:metadata", "f:generation"],
        &["f:metadata", "f:managedFields"],
        &["f:metadata", "f:resourceVersion"],
    ] {
        set.insert(&path.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
    }
    set
}

/// The fields a write through this endpoint cannot set (the strategies' reset fields): the
/// status through the object, the spec through `/status`.
fn reset_fields(resource: Resource, subresource: Option<&str>) -> FieldSet {
    let mut set = FieldSet::default();
    match subresource {
        Some("status") => set.insert(&["f:spec".to_owned()]),
        _ if resource.has_status() => set.insert(&["f:status".to_owned()]),
        _ => {}
    }
    set
}

/// A new object of the kind as Go zero values convert: structs present and empty, lists
/// without `omitempty` present and null, everything else absent. A create compares with
/// it, so a struct that is always there is never "added" but a map or list is.
fn zero_value(resource: Resource) -> Value {
    let pod_template = json!({"metadata": {}, "spec": {"containers": null}});
    match resource {
        Resource::CronJobs => json!({"metadata": {}, "spec": {"jobTemplate": {"metadata": {},
            "spec": {"template": pod_template}}}, "status": {}}),
        Resource::Jobs => json!({"metadata": {}, "spec": {"template": pod_template}, "status": {}}),
        Resource::Namespaces => json!({"metadata": {}, "spec": {}, "status": {}}),
        Resource::Leases => json!({"metadata": {}, "spec": {}}),
        Resource::Events => json!({"metadata": {}, "eventTime": null, "regarding": {}, "deprecatedSource": {},
            "deprecatedFirstTimestamp": null, "deprecatedLastTimestamp": null}),
        Resource::CoreEvents => json!({"metadata": {}, "involvedObject": {}, "source": {},
            "firstTimestamp": null, "lastTimestamp": null, "eventTime": null}),
    }
}

/// The list types and atomic structs of the fields cronshard's objects use (from the
/// `+listType`, `+listMapKey` and `+structType` markers of Kubernetes' Go types); every
/// other list is atomic and every other struct or map granular, as there. A list item is
/// the list's name followed by `[]`.
pub fn shape(resource: Resource, names: &[&str]) -> Shape {
    match names {
        ["metadata", "ownerReferences"] => Shape::Keyed(&["uid"]),
        ["metadata", "ownerReferences", "[]"] => Shape::Atomic,
        ["metadata", "finalizers"] => Shape::Set,
        ["status", "conditions"] if resource == Resource::Namespaces => Shape::Keyed(&["type"]),
        // LabelSelector and ObjectReference are atomic structs.
        [.., "spec", "selector"] | ["regarding" | "related" | "involvedObject"] => Shape::Atomic,
        [.., "containers" | "initContainers" | "env" | "volumes" | "imagePullSecrets"] => Shape::Keyed(&["name"]),
        [.., "containers" | "initContainers", "[]", "ports"] => Shape::Keyed(&["containerPort", "protocol"]),
        [.., "containers" | "initContainers", "[]", "volumeMounts"] => Shape::Keyed(&["mountPath"]),
        _ => Shape::Granular,
    }
}
