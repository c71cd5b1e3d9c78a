//! The start delay users feel, against the in-process simulator: a run whose Job reports a
//! ready pod 7 s after its due time lands in `cronshard_run_start_delay_seconds`' 8 s bucket.

mod common;

use common::{before_boundary, cronjob, get, load, serve, wait_for};
use cronshard_sim::{Config, Resource, SimState};
use cronshard_worker::Clock;
use jiff::SignedDuration;
use serde_json::json;

/// The histogram's cumulative count at bound `le`, from the worker's exposition.
fn bucket(metrics: &str, le: &str) -> Option<u64> {
    let line = format!("cronshard_run_start_delay_seconds_bucket{{le=\"{le}\"}} ");
    metrics.lines().find_map(|l| l.strip_prefix(line.as_str())?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_ready_seven_seconds_after_its_due_time_lands_in_the_eight_second_bucket() {
    let sim = SimState::new(Config { runner: None, ..Config::default() });
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    let due = before_boundary(&sim, &clock, 2);
    load(&sim, &[cronjob("every", "uid-every", sim.store().clock().now(), json!({"schedule": "* * * * *"}))]);
    let ctx = common::context(config, &clock);
    let (stop, worker) = common::start(ctx.clone());
    let name = format!("every-{}", due.as_second() / 60);
    wait_for("the run's Job", || get(&sim, Resource::Jobs, &name).is_some()).await;
    // The Job controller made a pod, the scheduler bound it, the node ran it: 7 s after the
    // due time its Job reports it ready.
    let later = due.checked_add(SignedDuration::from_secs(7)).expect("time");
    let offset = sim.store().clock().offset() + later.duration_since(sim.store().clock().now());
    sim.store().clock().set_offset(offset);
    clock.set_offset(offset);
    sim.store()
        .update(Resource::Jobs, "default", &name, |job| {
            let mut value = job.value();
            value["status"] = json!({"active": 1, "ready": 1, "startTime": sim.store().clock().now_rfc3339()});
            Ok(Some(value))
        })
        .expect("ready");
    wait_for("the start delay observed", || bucket(&ctx.metrics.encode(), "+Inf") == Some(1)).await;
    let metrics = ctx.metrics.encode();
    assert_eq!(bucket(&metrics, "4.0"), Some(0), "{metrics}");
    assert_eq!(bucket(&metrics, "8.0"), Some(1), "{metrics}");
    let _ = stop.send(true);
    worker.await.expect("joins");
}
