//! What the store holds and reports: objects with their index, and the changes to them.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};

use crate::resource::Resource;

/// One stored object: the indexed metadata plus its JSON, shared by every list and watch.
#[derive(Debug)]
pub struct Object {
    pub resource: Resource,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub rv: u64,
    pub labels: BTreeMap<String, String>,
    pub owner_uids: Vec<String>,
    /// An Event's values of [`crate::event::SELECTABLE`], for field selectors; empty for
    /// other kinds.
    pub fields: Vec<String>,
    pub body: Bytes,
}

impl Object {
    pub(super) fn new(resource: Resource, mut value: Value, rv: u64) -> Arc<Object> {
        value["metadata"]["resourceVersion"] = json!(rv.to_string());
        let meta = &value["metadata"];
        let text = |key: &str| meta.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let labels = meta
            .get("labels")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned())).collect())
            .unwrap_or_default();
        let owner_uids = meta
            .get("ownerReferences")
            .and_then(Value::as_array)
            .map(|refs| refs.iter().filter_map(|r| r.get("uid").and_then(Value::as_str)).map(str::to_owned).collect())
            .unwrap_or_default();
        let fields =
            if resource == Resource::CoreEvents { crate::event::selectable_fields(&value) } else { Vec::new() };
        Arc::new(Object {
            resource,
            namespace: text("namespace"),
            name: text("name"),
            uid: text("uid"),
            rv,
            labels,
            owner_uids,
            fields,
            body: Bytes::from(serde_json::to_vec(&value).unwrap_or_default()),
        })
    }

    /// A stored object as `served` serves it (an Event through events.k8s.io/v1 is converted);
    /// its index (labels, selectable fields) stays the stored one's, so selectors match alike.
    pub fn presented(self: &Arc<Self>, served: Resource) -> Arc<Object> {
        if served == self.resource {
            return self.clone();
        }
        let value = served.from_storage(self.value());
        Arc::new(Object {
            resource: served,
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            rv: self.rv,
            labels: self.labels.clone(),
            owner_uids: self.owner_uids.clone(),
            fields: self.fields.clone(),
            body: Bytes::from(serde_json::to_vec(&value).unwrap_or_default()),
        })
    }

    /// The object as JSON.
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    pub fn key(&self) -> String {
        key(&self.namespace, &self.name)
    }

    /// The same object stamped with another resourceVersion (for DELETED events).
    pub(super) fn restamped(&self, rv: u64) -> Arc<Object> {
        Object::new(self.resource, self.value(), rv)
    }
}

/// Storage key: `namespace/name`, or `name` for cluster-scoped objects. Sorted like etcd keys.
pub fn key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() { name.to_owned() } else { format!("{namespace}/{name}") }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as etcd's watch reports it: the new state (for DELETED, the last state
/// stamped with the deletion revision) and the state before.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    pub kind: EventType,
    pub object: Arc<Object>,
    pub prev: Option<Arc<Object>>,
}

impl Event {
    /// This change as a watch of `served` sees it: `None` for another resource's table, the
    /// objects converted when `served` is not the table's own resource.
    pub fn presented(self: &Arc<Self>, served: Resource) -> Option<Arc<Event>> {
        if self.object.resource != served.storage() {
            return None;
        }
        if served == self.object.resource {
            return Some(self.clone());
        }
        Some(Arc::new(Event {
            rv: self.rv,
            kind: self.kind,
            object: self.object.presented(served),
            prev: self.prev.as_ref().map(|p| p.presented(served)),
        }))
    }
}
