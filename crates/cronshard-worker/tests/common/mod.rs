//! Helpers shared by the worker's simulator tests: an in-process server, clock moves to just
//! before a minute boundary, seeding and polling.
#![allow(dead_code, unreachable_pub)]

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use cronshard_sim::{Resource, SimState};
use cronshard_types::Timestamp;
use cronshard_worker::api::limiter::Limiter;
use cronshard_worker::{Clock, Context, Settings};
use jiff::SignedDuration;
use serde_json::{Value, json};

/// Serves `state` on a free port; returns a client config for it.
pub async fn serve(state: SimState) -> kube::Config {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(axum::serve(listener, cronshard_sim::app(state)).into_future());
    kube::Config::new(format!("http://{addr}").parse().expect("url"))
}

/// A single-bucket replica's context (every CronJob is in bucket 0), unlimited client.
pub fn context(config: kube::Config, clock: &Clock) -> Arc<Context> {
    let settings = Settings {
        identity: "replica-test".into(),
        buckets: NonZeroU32::MIN,
        selector: None,
        dst_policy: Default::default(),
        bucket_function: cronshard_types::BucketFunction::Uid,
        server_side_sharding: Default::default(),
    };
    Context::new(config, Limiter::new(0.0, 1), settings, clock.clone(), Default::default()).expect("context")
}

/// Moves both clocks so that the next minute boundary is `lead` seconds away; returns it.
pub fn before_boundary(sim: &SimState, worker: &Clock, lead: i64) -> Timestamp {
    let now = sim.store().clock().now();
    let current = sim.store().clock().offset().as_secs();
    let to_boundary = 60 - now.as_second().rem_euclid(60);
    let shift = (to_boundary - lead).rem_euclid(60);
    let offset = SignedDuration::from_secs(current + shift);
    sim.store().clock().set_offset(offset);
    worker.set_offset(offset);
    Timestamp::from_second((sim.store().clock().now().as_second() / 60 + 1) * 60).expect("boundary")
}

pub fn rfc3339(t: Timestamp) -> String {
    cronshard_types::Zone::utc().format_rfc3339(t)
}

/// A CronJob in bucket 0 running busybox; `spec` fields override the defaults.
pub fn cronjob(name: &str, uid: &str, created: Timestamp, spec: Value) -> Value {
    let mut cj = json!({"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": name, "namespace": "default", "uid": uid,
            "creationTimestamp": rfc3339(created), "labels": {"cronshard.io/bucket": "0"}},
        "spec": {"schedule": "* * * * *", "concurrencyPolicy": "Allow", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}});
    if let (Some(target), Some(extra)) = (cj["spec"].as_object_mut(), spec.as_object()) {
        for (k, v) in extra {
            target.insert(k.clone(), v.clone());
        }
    }
    cj
}

/// A Job controlled by the CronJob `owner`/`owner_uid`, with `status` as given.
pub fn owned_job(name: &str, owner: &str, owner_uid: &str, labelled: bool, status: Value) -> Value {
    let labels = if labelled { json!({"cronshard.io/bucket": "0"}) } else { json!({}) };
    json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "labels": labels,
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": owner, "uid": owner_uid,
                "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
        "status": status})
}

pub fn load(sim: &SimState, objects: &[Value]) {
    let mut body = String::new();
    for o in objects {
        body.push_str(&o.to_string());
        body.push('\n');
    }
    sim.load(body.as_bytes()).expect("load");
}

pub fn objects(sim: &SimState, resource: Resource) -> Vec<Value> {
    let all = |_: &cronshard_sim::store::Object| true;
    let page = sim.store().list(resource, None, cronshard_sim::store::ReadAt::Latest, None, 0, &all).expect("list");
    page.items.iter().map(|o| o.value()).collect()
}

/// Reasons of the Events recorded about `name` (events.k8s.io).
pub fn event_reasons(sim: &SimState, name: &str) -> Vec<String> {
    objects(sim, Resource::Events)
        .iter()
        .filter(|e| e["regarding"]["name"] == name)
        .filter_map(|e| e["reason"].as_str().map(str::to_owned))
        .collect()
}

pub fn job_names(sim: &SimState) -> Vec<String> {
    objects(sim, Resource::Jobs).iter().filter_map(|j| j["metadata"]["name"].as_str().map(str::to_owned)).collect()
}

pub fn get(sim: &SimState, resource: Resource, name: &str) -> Option<Value> {
    sim.store().get(resource, "default", name).map(|o| o.value())
}

pub async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..300 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Runs every bucket of `ctx` (as a single replica that owns them all) and the replica's
/// watches (labellers, Namespace spread defaults) in the background; send `true` to stop.
pub fn start(ctx: Arc<Context>) -> (tokio::sync::watch::Sender<bool>, tokio::task::JoinHandle<()>) {
    let (stop, all, _listed) = start_counting_listed(ctx);
    (stop, all)
}

/// [`start`], with the count of buckets that have both their lists in.
pub fn start_counting_listed(
    ctx: Arc<Context>,
) -> (tokio::sync::watch::Sender<bool>, tokio::task::JoinHandle<()>, Arc<std::sync::atomic::AtomicUsize>) {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let ready = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let listed = ready.clone();
    let all = tokio::spawn(async move {
        let buckets = ctx.settings.buckets.get();
        let mut tasks: Vec<_> = (0..buckets)
            .map(|b| tokio::spawn(cronshard_worker::bucket::run(ctx.clone(), b, 0, stopped.clone(), ready.clone())))
            .collect();
        let (_all, owned) = tokio::sync::watch::channel((0..buckets).collect());
        tasks.push(tokio::spawn(cronshard_worker::watches::run_replica_watches(ctx, owned, stopped)));
        for task in tasks {
            task.await.expect("worker task");
        }
    });
    (stop, all, listed)
}
