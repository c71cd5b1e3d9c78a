//! watch: replay from a resourceVersion or the initial events, then follow the store, with
//! bookmarks, timeouts, and an end when the client is too slow or the watches are dropped.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::IntoResponse;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::outcome::Outcome;
use super::read::selector_filter;
use crate::SimState;
use crate::error::Result;
use crate::request::{ListParams, Target};
use crate::resource::Resource;
use crate::store::{self, Event, EventType, Object};

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
    let mut object = zero_object(resource);
    object["kind"] = json!(resource.kind());
    object["apiVersion"] = json!(resource.api_version());
    object["metadata"] = metadata;
    event_line("BOOKMARK", object.to_string().as_bytes())
}

/// A bookmark's object as kube-apiserver writes it: the kind's Go zero value encoded as JSON
/// (its struct fields without `omitempty` are there, empty), with only the metadata set.
fn zero_object(resource: Resource) -> Value {
    let pod_template = json!({"metadata": {}, "spec": {"containers": null}});
    match resource {
        Resource::CronJobs => {
            json!({"spec": {"schedule": "", "jobTemplate": {"metadata": {}, "spec": {"template": pod_template}}},
            "status": {}})
        }
        Resource::Jobs => json!({"spec": {"template": pod_template}, "status": {}}),
        Resource::Leases => json!({"spec": {}}),
        Resource::Namespaces => json!({"spec": {}, "status": {}}),
        Resource::Events => json!({"eventTime": null}),
        Resource::CoreEvents => {
            json!({"involvedObject": {}, "source": {}, "firstTimestamp": null, "lastTimestamp": null,
            "eventTime": null, "reportingComponent": "", "reportingInstance": ""})
        }
    }
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
        fields: o.fields.clone(),
        body: o.body.clone(),
    }
}

type WatchSender = tokio::sync::mpsc::Sender<std::result::Result<Bytes, std::io::Error>>;

/// Answers a watch with a 200 whose body streams the events; the stream runs in its own task.
pub(super) fn watch(state: &SimState, target: &Target, query: &HashMap<String, String>) -> Result<Outcome> {
    let params = ListParams::parse(query, target.resource)?;
    let shard = super::read::shard_selector(state, &params)?;
    let resource = target.resource;
    let initial = params.send_initial_events || params.resource_version.is_none_or(|rv| rv == 0);
    let from = if initial { None } else { params.resource_version };
    let (tx, rx) = tokio::sync::mpsc::channel::<std::result::Result<Bytes, std::io::Error>>(256);
    let response = (
        [(header::CONTENT_TYPE, "application/json"), (header::CACHE_CONTROL, "no-cache, private")],
        Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx)),
    )
        .into_response();
    let start = match state.store().watch(resource, from) {
        Ok(start) => start,
        Err(e) => {
            // Too old: the real server answers 200 and sends one ERROR event.
            let line = event_line("ERROR", e.status().to_string().as_bytes());
            tokio::spawn(async move {
                let _ = tx.send(Ok(line)).await;
            });
            return Ok(Outcome::plain(response));
        }
    };
    let shared = state.0.clone();
    // 0 means "not set", as in kube-apiserver.
    let timeout = params
        .timeout_seconds
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
        .unwrap_or(shared.config.default_watch_timeout);
    let stream = WatchStream {
        matches: Box::new(selector_filter(target, &params, shard)),
        tx,
        epoch: shared.watch_epoch.subscribe(),
        deadline: tokio::time::Instant::now() + timeout,
        resource,
        initial,
        params,
        bookmark_every: shared.config.bookmark_interval,
    };
    shared.metrics.watchers.inc();
    tokio::spawn(async move {
        // Err: the watch was cut short (dropped, client gone, too slow); either way it ends.
        let _ = stream.run(start).await;
        shared.metrics.watchers.dec();
    });
    Ok(Outcome::plain(response))
}

/// One watch's stream of lines, from its replay to its end.
struct WatchStream {
    tx: WatchSender,
    /// Changes when the simulator drops every watch.
    epoch: tokio::sync::watch::Receiver<u64>,
    deadline: tokio::time::Instant,
    resource: Resource,
    matches: Box<dyn Fn(&Object) -> bool + Send + Sync>,
    params: ListParams,
    /// The client asked for the current state first (no resourceVersion, 0, or
    /// sendInitialEvents).
    initial: bool,
    bookmark_every: Duration,
}

/// The watch ended early: dropped, the client gone or too slow.
struct Cut;

impl WatchStream {
    async fn run(mut self, start: store::WatchStart) -> std::result::Result<(), Cut> {
        let progress = self.replay(&start.replay, start.revision).await?;
        self.follow(start.receiver, progress).await
    }

    /// Sends one line unless the watch must end first (dropped, timed out, client gone): a
    /// client that stops reading cannot hold a watch open past those.
    async fn send(&mut self, line: Bytes) -> std::result::Result<(), Cut> {
        tokio::select! {
            sent = self.tx.send(Ok(line)) => sent.map_err(|_| Cut),
            _ = self.epoch.changed() => Err(Cut),
            _ = tokio::time::sleep_until(self.deadline) => Err(Cut),
        }
    }

    /// The initial events (as ADDED) or the history since the resourceVersion asked for;
    /// returns the revision the watch has reached.
    async fn replay(&mut self, replay: &[Arc<Event>], snapshot_rv: u64) -> std::result::Result<u64, Cut> {
        let mut progress = if self.initial { snapshot_rv } else { self.params.resource_version.unwrap_or(0) };
        for event in replay {
            progress = progress.max(event.rv);
            let converted = if self.initial {
                (self.matches)(&event.object).then(|| (EventType::Added, event.object.clone()))
            } else {
                convert(event, &self.matches)
            };
            if let Some((kind, object)) = converted {
                self.send(event_line(kind.as_str(), &object.body)).await?;
            }
        }
        if self.initial {
            progress = snapshot_rv;
        }
        // kube-apiserver marks the end of the initial events only for a client that takes
        // bookmarks.
        if self.params.send_initial_events && self.params.allow_bookmarks {
            self.send(bookmark_line(self.resource, progress, true)).await?;
        }
        Ok(progress)
    }

    /// New events as they happen, with bookmarks, until the timeout.
    async fn follow(
        &mut self,
        mut events: tokio::sync::broadcast::Receiver<Arc<Event>>,
        mut progress: u64,
    ) -> std::result::Result<(), Cut> {
        let every = self.bookmark_every;
        let mut bookmarks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        loop {
            let line = tokio::select! {
                received = events.recv() => match received {
                    Ok(event) if event.rv > progress => {
                        progress = event.rv;
                        let Some(event) = event.presented(self.resource) else { continue };
                        match convert(&event, &self.matches) {
                            Some((kind, object)) => event_line(kind.as_str(), &object.body),
                            None => continue,
                        }
                    }
                    Ok(_) => continue,
                    // Too slow to keep up, or the store is gone: end the watch.
                    Err(RecvError::Lagged(_) | RecvError::Closed) => return Err(Cut),
                },
                _ = bookmarks.tick(), if self.params.allow_bookmarks => bookmark_line(self.resource, progress, false),
                () = tokio::time::sleep_until(self.deadline) => return Ok(()),
                _ = self.epoch.changed() => return Err(Cut),
                () = self.tx.closed() => return Err(Cut),
            };
            self.send(line).await?;
        }
    }
}
