//! MVCC storage like etcd's: one global revision, per-resource tables, an event history for
//! watches and consistent paginated lists, compaction, and ownerReference garbage collection.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::clock::Clock;
use crate::error::{ApiError, Result};
use crate::resource::Resource;

mod object;

pub use self::object::{Event, EventType, Object, key};

/// How many events a watcher may fall behind before its watch is closed (it then re-watches
/// from its last resourceVersion, as clients do after any closed watch).
const WATCH_BUFFER: usize = 1 << 16;

/// A watch's beginning: events to send first, the live feed after them, and the revision the
/// replay brings the watcher to.
#[derive(Debug)]
pub struct WatchStart {
    pub replay: Vec<Arc<Event>>,
    pub receiver: broadcast::Receiver<Arc<Event>>,
    pub revision: u64,
}

/// What revision a list reads at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadAt {
    /// The newest state.
    Latest,
    /// Exactly this revision (410 if compacted).
    Exact(u64),
}

/// A page of a list.
#[derive(Debug)]
pub struct Page {
    pub items: Vec<Arc<Object>>,
    pub revision: u64,
    /// Key to continue after, when more objects may follow.
    pub continue_after: Option<String>,
    /// Objects examined (the cost of a list served from storage).
    pub scanned: usize,
}

#[derive(Debug, Default)]
struct Inner {
    revision: u64,
    tables: HashMap<Resource, BTreeMap<String, Arc<Object>>>,
    /// owner uid -> dependents, for garbage collection.
    dependents: HashMap<String, HashSet<(Resource, String)>>,
    history: VecDeque<Arc<Event>>,
    /// History before this revision has been compacted away; the state at it remains readable.
    compacted: u64,
    /// The revision seen at the previous periodic compaction: the next one compacts to it.
    next_compaction_target: u64,
}

/// The simulated etcd.
#[derive(Debug)]
pub struct Store {
    inner: Mutex<Inner>,
    events: broadcast::Sender<Arc<Event>>,
    clock: Clock,
}

impl Store {
    pub fn new(clock: Clock) -> Self {
        Store { inner: Mutex::new(Inner::default()), events: broadcast::channel(WATCH_BUFFER).0, clock }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock is a bug; the data is still consistent per write.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every change from now on, across all resources.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.events.subscribe()
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    pub fn revision(&self) -> u64 {
        self.lock().revision
    }

    pub fn compacted(&self) -> u64 {
        self.lock().compacted
    }

    /// Objects in `resource`'s table (both Event APIs count the one store).
    pub fn count(&self, resource: Resource) -> usize {
        self.lock().tables.get(&resource.storage()).map_or(0, BTreeMap::len)
    }

    /// Every method takes the resource a request is served as, keeps its objects in that
    /// resource's table ([`Resource::storage`]) and returns them as it serves them.
    pub fn get(&self, resource: Resource, namespace: &str, name: &str) -> Option<Arc<Object>> {
        let object = self.lock().tables.get(&resource.storage())?.get(&key(namespace, name)).cloned()?;
        Some(object.presented(resource))
    }

    /// Creates an object. The caller has defaulted and validated it; this stamps uid,
    /// creationTimestamp, generation and resourceVersion.
    pub fn create(&self, served: Resource, value: Value) -> Result<Arc<Object>> {
        let (resource, mut value) = (served.storage(), served.to_storage(value));
        let mut inner = self.lock();
        let meta = &mut value["metadata"];
        let name = meta["name"].as_str().unwrap_or_default().to_owned();
        let namespace = meta["namespace"].as_str().unwrap_or_default().to_owned();
        if inner.tables.get(&resource).is_some_and(|t| t.contains_key(&key(&namespace, &name))) {
            return Err(ApiError::AlreadyExists { resource, name });
        }
        if meta.get("uid").and_then(Value::as_str).is_none_or(str::is_empty) {
            meta["uid"] = json!(uuid::Uuid::new_v4().to_string());
        }
        if meta.get("creationTimestamp").is_none_or(Value::is_null) {
            meta["creationTimestamp"] = json!(self.clock.now_rfc3339());
        }
        // As kube-apiserver's strategies: Events, Leases and Namespaces have no generation.
        if !matches!(resource, Resource::CoreEvents | Resource::Leases | Resource::Namespaces) {
            meta["generation"] = json!(1);
        }
        Ok(self.commit(&mut inner, resource, value, None).presented(served))
    }

    /// Replaces an object. `expected_rv` is the caller's precondition (409 if stale).
    /// `change` gets the current state and returns the new one (or an error, or `None` for
    /// "no change", which keeps the resourceVersion as the apiserver does).
    pub fn update(
        &self,
        served: Resource,
        namespace: &str,
        name: &str,
        change: impl FnOnce(&Object) -> Result<Option<Value>>,
    ) -> Result<Arc<Object>> {
        let resource = served.storage();
        let mut inner = self.lock();
        let Some(current) = inner.tables.get(&resource).and_then(|t| t.get(&key(namespace, name))).cloned() else {
            return Err(ApiError::NotFound { resource: served, name: name.to_owned() });
        };
        let shown = current.presented(served);
        let Some(value) = change(&shown)? else { return Ok(shown) };
        let mut value = served.to_storage(value);
        let old = current.value();
        // Identity and creation metadata are the server's, never the client's.
        for field in ["uid", "creationTimestamp", "namespace", "name"] {
            value["metadata"][field] = old["metadata"][field].clone();
        }
        if let Some(generation) = old["metadata"].get("generation").and_then(Value::as_i64) {
            let bumped = if old.get("spec") != value.get("spec") { generation + 1 } else { generation };
            value["metadata"]["generation"] = json!(bumped);
        }
        let mut unchanged = value.clone();
        unchanged["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
        if unchanged == old {
            return Ok(shown);
        }
        Ok(self.commit(&mut inner, resource, value, Some(current)).presented(served))
    }

    /// Deletes an object; `precondition_rv` as in DeleteOptions.preconditions.
    pub fn delete(
        &self,
        served: Resource,
        namespace: &str,
        name: &str,
        precondition_rv: Option<u64>,
    ) -> Result<Arc<Object>> {
        let resource = served.storage();
        let mut inner = self.lock();
        let k = key(namespace, name);
        let Some(current) = inner.tables.get(&resource).and_then(|t| t.get(&k)).cloned() else {
            return Err(ApiError::NotFound { resource: served, name: name.to_owned() });
        };
        if precondition_rv.is_some_and(|rv| rv != current.rv) {
            return Err(ApiError::Conflict { resource: served, name: name.to_owned() });
        }
        inner.revision += 1;
        let rv = inner.revision;
        if let Some(table) = inner.tables.get_mut(&resource) {
            table.remove(&k);
        }
        for owner in &current.owner_uids {
            if let Some(set) = inner.dependents.get_mut(owner) {
                set.remove(&(resource, k.clone()));
            }
        }
        let gone = current.restamped(rv);
        self.publish(&mut inner, Event { rv, kind: EventType::Deleted, object: gone.clone(), prev: Some(current) });
        Ok(gone.presented(served))
    }

    /// Dependents of an owner uid (objects whose ownerReferences name it).
    pub fn dependents(&self, owner_uid: &str) -> Vec<(Resource, String, String)> {
        let inner = self.lock();
        let Some(set) = inner.dependents.get(owner_uid) else { return Vec::new() };
        set.iter()
            .filter_map(|(resource, k)| {
                inner.tables.get(resource)?.get(k).map(|o| (*resource, o.namespace.clone(), o.name.clone()))
            })
            .collect()
    }

    /// Inserts objects without validation (bulk load), each at its own revision.
    pub fn load(&self, served: Resource, values: Vec<Value>) -> usize {
        let resource = served.storage();
        let mut inner = self.lock();
        let mut loaded = 0;
        for value in values {
            let mut value = served.to_storage(value);
            let meta = &mut value["metadata"];
            if meta.get("uid").and_then(Value::as_str).is_none_or(str::is_empty) {
                meta["uid"] = json!(uuid::Uuid::new_v4().to_string());
            }
            if meta.get("creationTimestamp").is_none_or(Value::is_null) {
                meta["creationTimestamp"] = json!(self.clock.now_rfc3339());
            }
            let k = key(meta["namespace"].as_str().unwrap_or_default(), meta["name"].as_str().unwrap_or_default());
            let prev = inner.tables.get(&resource).and_then(|t| t.get(&k)).cloned();
            self.commit(&mut inner, resource, value, prev);
            loaded += 1;
        }
        loaded
    }

    fn commit(&self, inner: &mut Inner, resource: Resource, value: Value, prev: Option<Arc<Object>>) -> Arc<Object> {
        inner.revision += 1;
        let rv = inner.revision;
        let object = Object::new(resource, value, rv);
        let k = object.key();
        if let Some(prev) = &prev {
            for owner in &prev.owner_uids {
                if let Some(set) = inner.dependents.get_mut(owner) {
                    set.remove(&(resource, k.clone()));
                }
            }
        }
        for owner in &object.owner_uids {
            inner.dependents.entry(owner.clone()).or_default().insert((resource, k.clone()));
        }
        inner.tables.entry(resource).or_default().insert(k, object.clone());
        let kind = if prev.is_some() { EventType::Modified } else { EventType::Added };
        self.publish(inner, Event { rv, kind, object: object.clone(), prev });
        object
    }

    fn publish(&self, inner: &mut Inner, event: Event) {
        let event = Arc::new(event);
        inner.history.push_back(event.clone());
        // No receivers is fine: nobody is watching.
        let _ = self.events.send(event);
    }

    /// Lists `limit` objects (0 = all) of a resource, optionally in one namespace, with keys
    /// after `start_after`, at a revision. `filter` selects objects (label/field selectors);
    /// like etcd, every object in the range is examined, selected or not.
    pub fn list(
        &self,
        served: Resource,
        namespace: Option<&str>,
        at: ReadAt,
        start_after: Option<&str>,
        limit: usize,
        filter: &dyn Fn(&Object) -> bool,
    ) -> Result<Page> {
        let resource = served.storage();
        let inner = self.lock();
        let revision = match at {
            ReadAt::Latest => inner.revision,
            ReadAt::Exact(rv) if rv < inner.compacted => {
                return Err(ApiError::ResourceVersionTooOld { requested: rv, compacted: inner.compacted });
            }
            ReadAt::Exact(rv) if rv > inner.revision => {
                return Err(ApiError::ResourceVersionTooLarge { requested: rv, current: inner.revision });
            }
            ReadAt::Exact(rv) => rv,
        };
        let empty = BTreeMap::new();
        let table = inner.tables.get(&resource).unwrap_or(&empty);
        let prefix = namespace.map(|ns| format!("{ns}/"));
        let lower = match (start_after, &prefix) {
            (Some(after), _) => std::ops::Bound::Excluded(after.to_owned()),
            (None, Some(p)) => std::ops::Bound::Included(p.clone()),
            (None, None) => std::ops::Bound::Unbounded,
        };
        let in_range = |k: &str| prefix.as_ref().is_none_or(|p| k.starts_with(p.as_str()));
        // The state at `revision` differs from the newest only in keys changed since.
        let mut overlay: BTreeMap<String, Option<Arc<Object>>> = BTreeMap::new();
        for event in inner.history.iter().rev().take_while(|e| e.rv > revision) {
            if event.object.resource == resource {
                overlay.insert(event.object.key(), event.prev.clone());
            }
        }
        let current =
            table.range((lower.clone(), std::ops::Bound::Unbounded)).map(|(k, v)| (k.clone(), Some(v.clone())));
        let old = overlay.range((lower, std::ops::Bound::Unbounded)).map(|(k, v)| (k.clone(), v.clone()));
        let mut items = Vec::new();
        let mut scanned = 0;
        let mut continue_after = None;
        for (k, object) in merge_by_key(current, old, &overlay) {
            if !in_range(&k) {
                break;
            }
            let Some(object) = object else { continue };
            scanned += 1;
            if limit > 0 && items.len() == limit {
                continue_after = items.last().map(|o: &Arc<Object>| o.key());
                break;
            }
            if filter(&object) {
                items.push(object.presented(served));
            }
        }
        Ok(Page { items, revision, continue_after, scanned })
    }

    /// Starts a watch: the events after `from` (410 if compacted) or, with `None`, the
    /// current objects as ADDED events; then every new event through the receiver.
    pub fn watch(&self, served: Resource, from: Option<u64>) -> Result<WatchStart> {
        let inner = self.lock();
        let receiver = self.events.subscribe();
        let replay = match from {
            Some(rv) if rv < inner.compacted => {
                return Err(ApiError::ResourceVersionTooOld { requested: rv, compacted: inner.compacted });
            }
            Some(rv) => {
                let start = inner.history.partition_point(|e| e.rv <= rv);
                inner.history.range(start..).filter_map(|e| e.presented(served)).collect()
            }
            None => inner
                .tables
                .get(&served.storage())
                .map(|t| {
                    t.values()
                        .map(|o| {
                            let object = o.presented(served);
                            Arc::new(Event { rv: o.rv, kind: EventType::Added, object, prev: None })
                        })
                        .collect()
                })
                .unwrap_or_default(),
        };
        Ok(WatchStart { replay, receiver, revision: inner.revision })
    }

    /// Periodic compaction, like kube-apiserver's: drop history up to the revision seen at
    /// the previous run, then remember the current revision for the next.
    pub fn compact_periodic(&self) -> u64 {
        let mut inner = self.lock();
        let target = inner.next_compaction_target;
        inner.next_compaction_target = inner.revision;
        Self::compact_to(&mut inner, target)
    }

    /// Compacts everything up to the current revision now (the fault-injection lever).
    pub fn compact_now(&self) -> u64 {
        let mut inner = self.lock();
        let target = inner.revision;
        inner.next_compaction_target = target;
        Self::compact_to(&mut inner, target)
    }

    fn compact_to(inner: &mut Inner, target: u64) -> u64 {
        if target > inner.compacted {
            inner.compacted = target;
            while inner.history.front().is_some_and(|e| e.rv <= target) {
                inner.history.pop_front();
            }
        }
        inner.compacted
    }
}

/// Merges the newest state with the overlay of older states, in key order; a key present in
/// the overlay takes the overlay's value.
fn merge_by_key<'a>(
    current: impl Iterator<Item = (String, Option<Arc<Object>>)> + 'a,
    old: impl Iterator<Item = (String, Option<Arc<Object>>)> + 'a,
    overlay: &'a BTreeMap<String, Option<Arc<Object>>>,
) -> impl Iterator<Item = (String, Option<Arc<Object>>)> + 'a {
    let mut current = current.filter(move |(k, _)| !overlay.contains_key(k)).peekable();
    let mut old = old.peekable();
    std::iter::from_fn(move || match (current.peek(), old.peek()) {
        (Some((a, _)), Some((b, _))) => {
            if a < b {
                current.next()
            } else {
                old.next()
            }
        }
        (Some(_), None) => current.next(),
        (None, Some(_)) => old.next(),
        (None, None) => None,
    })
}
