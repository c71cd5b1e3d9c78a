//! The bucket worker against the in-process simulator, across two minute boundaries reached
//! through the shared clock offset: Allow, Forbid and Replace; a burst of 429s; history
//! compacted and every watch dropped in between. Every run is checked in the audit log.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{before_boundary, job_names, serve, wait_for};
use cronshard_sim::{Config, SimState};
use cronshard_types::Timestamp;
use cronshard_worker::Clock;
use serde_json::json;

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

    let (stop, worker) = common::start(common::context(client, &clock));

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
