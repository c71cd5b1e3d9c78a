//! Spread end to end against the in-process simulator: a spread run starts at its offset and
//! keeps its scheduled time's name and status; a spread that cannot apply gets a Warning
//! `InvalidSpread` saying why and changes nothing else.

mod common;

use common::{before_boundary, cronjob, get, load, objects, rfc3339, serve, wait_for};
use cronshard_sim::{Config, Resource, SimState};
use cronshard_types::Timestamp;
use cronshard_worker::Clock;
use serde_json::{Value, json};

/// The note of the Warning Event `reason` about `name`, if there is one.
fn warning(sim: &SimState, name: &str, reason: &str) -> Option<String> {
    objects(sim, Resource::Events)
        .into_iter()
        .find(|e| e["regarding"]["name"] == name && e["reason"] == reason && e["type"] == "Warning")
        .map(|e| e["note"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spread_run_starts_at_its_offset_and_a_bad_spread_changes_nothing() {
    let sim = SimState::new(Config { runner: None, ..Config::default() });
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    let boundary = before_boundary(&sim, &clock, 3);
    let created = sim.store().clock().now();
    let annotated = |name: &str, spread: &str, spec: Value| {
        let mut cj = cronjob(name, &format!("uid-{name}"), created, spec);
        cj["metadata"]["annotations"] = json!({"cronshard.io/spread": spread});
        cj
    };
    load(
        &sim,
        &[
            annotated("late-by-design", "30s", json!({})),
            annotated("unparsable", "abc", json!({})),
            annotated("negative", "-5m", json!({})),
            annotated("a-year", "1y", json!({})),
            annotated("as-long-as-a-minute", "1m", json!({})),
            annotated("every", "5m", json!({"schedule": "@every 1h"})),
        ],
    );
    let offset = cronshard_types::spread::offset("default", "late-by-design", 30);
    assert_eq!(offset, 8, "pinned: the same on every replica and in every version");
    let ctx = common::context(config, &clock);
    let (stop, worker) = common::start(ctx.clone());

    let minute = boundary.as_second() / 60;
    for name in ["unparsable", "negative", "a-year", "as-long-as-a-minute"] {
        let job = format!("{name}-{minute}");
        wait_for(&job, || get(&sim, Resource::Jobs, &job).is_some()).await;
    }
    for (name, says) in [
        ("unparsable", "\"abc\" is not a duration"),
        ("negative", "\"-5m\" is negative"),
        ("a-year", "unknown unit"),
        ("as-long-as-a-minute", "interval of 60 s"),
        ("every", "@every"),
    ] {
        wait_for("an InvalidSpread Warning", || warning(&sim, name, "InvalidSpread").is_some()).await;
        let note = warning(&sim, name, "InvalidSpread").unwrap_or_default();
        assert!(note.contains(says) && note.contains("start at their scheduled times"), "{name}: {note}");
    }

    let name = format!("late-by-design-{minute}");
    wait_for("the spread run", || get(&sim, Resource::Jobs, &name).is_some()).await;
    let job = get(&sim, Resource::Jobs, &name).expect("job");
    let meta = &job["metadata"];
    let created_at: Timestamp = meta["creationTimestamp"].as_str().expect("creationTimestamp").parse().expect("time");
    assert!(created_at.as_second() >= boundary.as_second() + 8, "created at {created_at}, due {boundary} + 8 s");
    assert_eq!(meta["annotations"]["cronshard.io/spread-offset"], "8s");
    assert_eq!(meta["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"], rfc3339(boundary));
    wait_for("lastScheduleTime of the scheduled time", || {
        get(&sim, Resource::CronJobs, "late-by-design")
            .is_some_and(|cj| cj["status"]["lastScheduleTime"] == rfc3339(boundary))
    })
    .await;
    let metrics = ctx.metrics.encode();
    assert!(metrics.contains("cronshard_spread_runs_total 1\n"), "{metrics}");
    for reason in ["SpreadUnparsable", "SpreadNegative", "SpreadTooLong", "SpreadOnEvery"] {
        let zero = format!("cronshard_spread_ignored_total{{reason=\"{reason}\"}} 0\n");
        assert!(
            metrics.contains(r#"cronshard_spread_ignored_total{reason=""#) && !metrics.contains(&zero),
            "{reason}: {metrics}"
        );
    }
    let _ = stop.send(true);
    worker.await.expect("joins");
}

/// Sets (or with `None` removes) the spread default of Namespace `default`.
fn namespace_spread(sim: &SimState, spread: Option<&str>) {
    sim.store()
        .update(Resource::Namespaces, "", "default", |o| {
            let mut ns = o.value();
            ns["metadata"]["annotations"] = match spread {
                Some(s) => json!({"cronshard.io/spread": s}),
                None => json!({}),
            };
            Ok(Some(ns))
        })
        .expect("the Namespace is updated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_default_spreads_its_cronjobs_unless_their_own_annotation_says_otherwise() {
    let sim = SimState::new(Config { runner: None, ..Config::default() });
    namespace_spread(&sim, Some("30s"));
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    let boundary = before_boundary(&sim, &clock, 3);
    let created = sim.store().clock().now();
    let mut opted_out = cronjob("opted-out", "uid-opted-out", created, json!({}));
    opted_out["metadata"]["annotations"] = json!({"cronshard.io/spread": "0"});
    load(&sim, &[cronjob("from-namespace", "uid-from-namespace", created, json!({})), opted_out]);
    let offset = cronshard_types::spread::offset("default", "from-namespace", 30);
    assert_eq!(offset, 3, "pinned");
    let ctx = common::context(config, &clock);
    let (stop, worker) = common::start(ctx.clone());

    let minute = boundary.as_second() / 60;
    let plain = format!("opted-out-{minute}");
    wait_for(&plain, || get(&sim, Resource::Jobs, &plain).is_some()).await;
    let annotations = &get(&sim, Resource::Jobs, &plain).expect("job")["metadata"]["annotations"];
    assert!(annotations.get("cronshard.io/spread-offset").is_none(), "\"0\" on the CronJob wins: {annotations}");
    let spread = format!("from-namespace-{minute}");
    wait_for(&spread, || get(&sim, Resource::Jobs, &spread).is_some()).await;
    let job = get(&sim, Resource::Jobs, &spread).expect("job");
    assert_eq!(job["metadata"]["annotations"]["cronshard.io/spread-offset"], format!("{offset}s"));
    let created_at: Timestamp = job["metadata"]["creationTimestamp"].as_str().expect("time").parse().expect("time");
    assert!(created_at.as_second() >= boundary.as_second() + offset as i64, "created at {created_at}");

    // The default goes: the next run starts at its scheduled time.
    namespace_spread(&sim, None);
    let next = before_boundary(&sim, &clock, 3);
    let unspread = format!("from-namespace-{}", next.as_second() / 60);
    wait_for(&unspread, || get(&sim, Resource::Jobs, &unspread).is_some()).await;
    let job = get(&sim, Resource::Jobs, &unspread).expect("job");
    assert!(job["metadata"]["annotations"].get("cronshard.io/spread-offset").is_none(), "{job}");
    let _ = stop.send(true);
    worker.await.expect("joins");
}
