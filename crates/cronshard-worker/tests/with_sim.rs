//! The bucket worker against the in-process simulator, across two minute boundaries reached
//! through the shared clock offset: Allow, Forbid and Replace; a burst of 429s; history
//! compacted and every watch dropped in between. Every run is checked in the audit log.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use cronshard_sim::{Config, Resource, SimState};
use cronshard_types::Timestamp;
use cronshard_worker::limiter::Limiter;
use cronshard_worker::{Clock, Context, Settings};
use jiff::SignedDuration;
use serde_json::json;

async fn serve(state: SimState) -> kube::Client {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(axum::serve(listener, cronshard_sim::app(state)).into_future());
    kube::Client::try_from(kube::Config::new(format!("http://{addr}").parse().expect("url"))).expect("client")
}

/// Moves both clocks so that the next minute boundary is `lead` away; returns that boundary.
fn before_boundary(sim: &SimState, worker: &Clock, lead: i64) -> Timestamp {
    let now = sim.store().clock().now();
    let current = sim.store().clock().offset().as_secs();
    let to_boundary = 60 - now.as_second().rem_euclid(60);
    let shift = (to_boundary - lead).rem_euclid(60);
    let offset = SignedDuration::from_secs(current + shift);
    sim.store().clock().set_offset(offset);
    worker.set_offset(offset);
    Timestamp::from_second((sim.store().clock().now().as_second() / 60 + 1) * 60).expect("boundary")
}

fn job_names(sim: &SimState) -> Vec<String> {
    let all = |_: &cronshard_sim::store::Object| true;
    let page =
        sim.store().list(Resource::Jobs, None, cronshard_sim::store::ReadAt::Latest, None, 0, &all).expect("list");
    page.items.iter().map(|o| o.name.clone()).collect()
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..300 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_across_boundaries_with_429s_compaction_and_dropped_watches() {
    let mut config = Config { runner: None, ..Config::default() };
    // A tight write budget with no queue: bursts get 429 + Retry-After.
    config.flow.admitted_writes_per_s = 40.0;
    config.flow.max_queue_wait = Duration::ZERO;
    let sim = SimState::new(config);
    let client = serve(sim.clone()).await;
    let clock = Clock::default();
    let first = before_boundary(&sim, &clock, 3);

    let created = cronshard_types::Zone::utc().format_rfc3339(sim.store().clock().now());
    let mut seed = String::new();
    for (policy, n) in [("Allow", 10), ("Forbid", 10), ("Replace", 10)] {
        for i in 0..n {
            let cj = json!({"apiVersion": "batch/v1", "kind": "CronJob",
                "metadata": {"name": format!("{}-{i}", policy.to_lowercase()), "namespace": "default",
                    "creationTimestamp": created, "labels": {"cronshard.io/bucket": "0"}},
                "spec": {"schedule": "* * * * *", "concurrencyPolicy": policy, "jobTemplate": {"spec": {"template": {"spec": {
                    "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}});
            seed.push_str(&cj.to_string());
            seed.push('\n');
        }
    }
    sim.load(seed.as_bytes()).expect("seed");

    let settings = Settings { identity: "replica-test".into(), buckets: NonZeroU32::MIN, selector: None };
    let ctx = Context::new(client, Limiter::new(0.0, 1), settings, clock.clone());
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let worker = tokio::spawn(cronshard_worker::run_all_buckets(ctx, stopped, Arc::new(AtomicUsize::new(0))));

    let minute = |t: Timestamp| t.as_second() / 60;
    wait_for("the first runs", || job_names(&sim).len() == 30).await;
    assert!(job_names(&sim).iter().all(|n| n.ends_with(&format!("-{}", minute(first)))));

    // Lose history and every watch, then cross the next boundary.
    sim.store().compact_now();
    sim.drop_watches();
    let second = before_boundary(&sim, &clock, 2);
    let suffix = format!("-{}", minute(second));
    wait_for("the second runs", || {
        let names = job_names(&sim);
        names.iter().filter(|n| n.starts_with("allow-") && n.ends_with(&suffix)).count() == 10
            && names.iter().filter(|n| n.starts_with("replace-") && n.ends_with(&suffix)).count() == 10
            && !names.iter().any(|n| n.starts_with("replace-") && !n.ends_with(&suffix))
    })
    .await;
    // Give Forbid every chance to misbehave.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let names = job_names(&sim);
    assert_eq!(names.iter().filter(|n| n.starts_with("allow-")).count(), 20, "Allow runs alongside");
    assert_eq!(names.iter().filter(|n| n.starts_with("forbid-")).count(), 10, "Forbid waits for the running Job");
    assert!(names.iter().filter(|n| n.starts_with("forbid-")).all(|n| !n.ends_with(&suffix)));

    let audit = sim.0.audit.since(0);
    let mut creates: HashMap<&str, usize> = HashMap::new();
    for record in audit.iter().filter(|r| r.verb == "create" && r.resource == "jobs" && r.code == 201) {
        *creates.entry(record.name.as_str()).or_default() += 1;
    }
    assert!(creates.values().all(|n| *n == 1), "no run was created twice: {creates:?}");
    assert_eq!(creates.len(), 50);
    assert!(audit.iter().any(|r| r.code == 429), "the write budget pushed back");
    assert!(
        audit
            .iter()
            .any(|r| r.verb == "delete" && r.resource == "jobs" && r.name.starts_with("replace-") && r.code == 200),
        "Replace deleted the running Job"
    );
    let _ = stop.send(true);
    tokio::time::timeout(Duration::from_secs(10), worker).await.expect("stops").expect("joins");
}
