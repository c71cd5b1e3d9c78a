//! The spec's rules end to end against the in-process simulator, with its clock offset:
//! the Job a run creates, suspend, missed runs after downtime, startingDeadlineSeconds,
//! history limits (never in front of a due create), the AlreadyExists repair, and the Job labelling pass surviving a 410
//! in the middle of its paginated list.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{
    before_boundary, cronjob, event_reasons, get, job_names, load, objects, owned_job, rfc3339, serve, wait_for,
};
use cronshard_sim::{Config, Resource, SimState};
use cronshard_types::Timestamp;
use cronshard_worker::Clock;
use jiff::SignedDuration;
use serde_json::{Value, json};

fn sim() -> SimState {
    SimState::new(Config { runner: None, ..Config::default() })
}

fn minute(t: Timestamp) -> i64 {
    t.as_second() / 60
}

fn ago(sim: &SimState, seconds: i64) -> Timestamp {
    sim.store().clock().now().checked_sub(SignedDuration::from_secs(seconds)).expect("time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_creates_the_right_job_and_suspend_holds() {
    let sim = sim();
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    let boundary = before_boundary(&sim, &clock, 3);
    let created = sim.store().clock().now();
    load(
        &sim,
        &[
            cronjob(
                "fire",
                "uid-fire",
                created,
                json!({"jobTemplate": {"metadata": {"labels": {"team": "a"}}, "spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}),
            ),
            cronjob("paused", "uid-paused", created, json!({"suspend": true})),
        ],
    );
    let (stop, worker) = common::start(common::context(config, &clock));

    let name = format!("fire-{}", minute(boundary));
    wait_for("the run", || get(&sim, Resource::Jobs, &name).is_some()).await;
    let job = get(&sim, Resource::Jobs, &name).expect("job");
    let meta = &job["metadata"];
    assert_eq!(meta["labels"]["cronshard.io/bucket"], "0");
    assert_eq!(meta["labels"]["team"], "a", "template labels are kept");
    assert_eq!(meta["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"], rfc3339(boundary));
    assert_eq!(meta["annotations"]["cronshard.io/created-by"], "replica-test/0/0");
    assert_eq!(
        meta["ownerReferences"],
        json!([{"apiVersion": "batch/v1", "kind": "CronJob", "name": "fire", "uid": "uid-fire",
            "controller": true, "blockOwnerDeletion": true}])
    );
    wait_for("the status write", || {
        get(&sim, Resource::CronJobs, "fire").is_some_and(|cj| cj["status"]["lastScheduleTime"] == rfc3339(boundary))
    })
    .await;
    let status = &get(&sim, Resource::CronJobs, "fire").expect("cronjob")["status"];
    assert_eq!(status["active"][0]["name"], name.as_str());
    // Events go out at a lower priority than status writes, so one may still be queued here.
    wait_for("the SuccessfulCreate Event", || event_reasons(&sim, "fire").contains(&"SuccessfulCreate".to_owned()))
        .await;

    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(job_names(&sim), vec![name], "the suspended CronJob started nothing");
    let _ = stop.send(true);
    worker.await.expect("joins");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_downtime_only_the_latest_run_starts_and_every_other_is_counted_missed() {
    let sim = sim();
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    // 30 s past a minute, with the next boundary far enough away not to interfere.
    let next = before_boundary(&sim, &clock, 30);
    let latest = minute(next) - 1;
    load(
        &sim,
        &[
            // Three hours of missed runs: more than 100.
            cronjob("long", "uid-long", ago(&sim, 3 * 3600), json!({})),
            // Thirty minutes: fewer than 100.
            cronjob("short", "uid-short", ago(&sim, 30 * 60), json!({})),
            // The latest run was 30 s ago, outside a 10 s starting deadline: it never starts.
            cronjob("deadline", "uid-deadline", ago(&sim, 30 * 60), json!({"startingDeadlineSeconds": 10})),
        ],
    );
    let ctx = common::context(config, &clock);
    let (stop, worker) = common::start(ctx.clone());

    wait_for("the catch-up runs", || job_names(&sim).len() >= 2).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut names = job_names(&sim);
    names.sort();
    assert_eq!(names, vec![format!("long-{latest}"), format!("short-{latest}")]);
    wait_for("the warning", || event_reasons(&sim, "long").contains(&"TooManyMissedTimes".to_owned())).await;
    assert!(!event_reasons(&sim, "short").contains(&"TooManyMissedTimes".to_owned()));
    // Upstream does not even see a run older than the deadline window (it is outside
    // `earliest`): cronshard counts it missed and says so.
    wait_for("the MissSchedule Events", || {
        event_reasons(&sim, "deadline").contains(&"MissSchedule".to_owned())
            && event_reasons(&sim, "short").contains(&"MissSchedule".to_owned())
    })
    .await;
    // Every run of the downtime but the one that started: 180 - 1, 30 - 1, and all 30.
    let metrics = ctx.metrics.encode();
    for (reason, count) in [("TooManyMissedTimes", 179), ("Superseded", 29), ("MissSchedule", 30)] {
        let line = format!(r#"cronshard_missed_runs_total{{reason="{reason}"}} {count}"#);
        assert!(metrics.contains(&line), "{line} in {metrics}");
    }
    let _ = stop.send(true);
    worker.await.expect("joins");
}

fn finished(condition: &str, start_minute: i64) -> Value {
    let start = rfc3339(Timestamp::from_second(1_700_000_000 + start_minute * 60).expect("time"));
    json!({"startTime": start, "completionTime": start,
        "conditions": [{"type": condition, "status": "True"}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_limits_delete_the_oldest_finished_jobs() {
    let sim = sim();
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    before_boundary(&sim, &clock, 30);
    let created = sim.store().clock().now();
    // Never due in this test: only the history cleanup acts.
    let spec = json!({"schedule": "0 0 1 1 *", "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1});
    load(
        &sim,
        &[
            cronjob("hist", "uid-hist", created, spec),
            owned_job("hist-a", "hist", "uid-hist", true, finished("Complete", 3)),
            owned_job("hist-b", "hist", "uid-hist", true, finished("Complete", 1)),
            owned_job("hist-c", "hist", "uid-hist", true, finished("Complete", 2)),
            owned_job("hist-d", "hist", "uid-hist", true, finished("Failed", 5)),
            owned_job("hist-e", "hist", "uid-hist", true, finished("Failed", 4)),
        ],
    );
    let (stop, worker) = common::start(common::context(config, &clock));

    wait_for("the cleanup", || job_names(&sim).len() == 2).await;
    let mut names = job_names(&sim);
    names.sort();
    assert_eq!(names, vec!["hist-a", "hist-d"], "the newest of each kind stays");
    let deleted: Vec<String> = sim
        .0
        .audit
        .since(0)
        .iter()
        .filter(|r| r.verb == "delete" && r.resource == "jobs" && r.code == 200)
        .map(|r| r.name.clone())
        .collect();
    assert_eq!(deleted.len(), 3, "each deleted once: {deleted:?}");
    let _ = stop.send(true);
    worker.await.expect("joins");
}

/// History cleanup waits at the lowest priority, after the sync: a due create never queues
/// behind it, even while Events hold the background queue for minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_due_create_never_waits_for_history_cleanup() {
    let sim = sim();
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    let boundary = before_boundary(&sim, &clock, 4);
    let created = sim.store().clock().now();
    let spec = json!({"schedule": "* * * * *", "successfulJobsHistoryLimit": 0});
    load(
        &sim,
        &[
            cronjob("busy", "uid-busy", created, spec),
            owned_job("busy-old", "busy", "uid-busy", true, finished("Complete", 1)),
        ],
    );
    let settings = cronshard_worker::Settings {
        identity: "replica-test".into(),
        buckets: std::num::NonZeroU32::MIN,
        selector: None,
        dst_policy: Default::default(),
        bucket_function: cronshard_types::BucketFunction::Uid,
        server_side_sharding: Default::default(),
    };
    let limiter = cronshard_worker::api::limiter::Limiter::new(20.0, 1);
    let ctx =
        cronshard_worker::Context::new(config, limiter, settings, clock.clone(), Default::default()).expect("context");
    // 2,000 background calls ahead of the cleanup: 100 s of the budget.
    let flood: Vec<_> = (0..2000)
        .map(|_| {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                drop(ctx.limiter.acquire(cronshard_worker::api::limiter::Priority::Background).await)
            })
        })
        .collect();
    let (stop, worker) = common::start(ctx);

    let run = cronshard_types::cronjob::job_name("busy", boundary);
    wait_for("the due run", || job_names(&sim).contains(&run)).await;
    assert!(job_names(&sim).contains(&"busy-old".to_owned()), "the cleanup is still queued behind the flood");
    for task in &flood {
        task.abort();
    }
    wait_for("the cleanup, once the background queue is free", || job_names(&sim) == [run.clone()]).await;
    wait_for("its Event", || event_reasons(&sim, "busy").contains(&"SuccessfulDelete".to_owned())).await;
    let _ = stop.send(true);
    worker.await.expect("joins");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_job_for_the_run_is_adopted_not_duplicated() {
    let sim = sim();
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    let boundary = before_boundary(&sim, &clock, 4);
    let name = format!("repair-{}", minute(boundary));
    load(&sim, &[cronjob("repair", "uid-repair", sim.store().clock().now(), json!({}))]);
    let ctx = common::context(config, &clock);
    let (stop, worker) = common::start(ctx.clone());
    // After the start-up labelling pass (which would label and so reveal them):
    tokio::time::sleep(Duration::from_secs(1)).await;
    load(
        &sim,
        &[
            // Created for this run before the status write landed (a crash, a handover) and not
            // yet labelled: the bucket's watch cannot see it, only the create's 409 can.
            owned_job(&name, "repair", "uid-repair", false, json!({})),
            // Someone else's Job with the next run's name.
            owned_job(&format!("repair-{}", minute(boundary) + 1), "other", "uid-other", false, json!({})),
        ],
    );

    wait_for("the repaired status", || {
        get(&sim, Resource::CronJobs, "repair").is_some_and(|cj| cj["status"]["lastScheduleTime"] == rfc3339(boundary))
    })
    .await;
    let status = &get(&sim, Resource::CronJobs, "repair").expect("cronjob")["status"];
    assert_eq!(status["active"][0]["name"], name.as_str());
    // (A refused create's audit record has no name: the object was never stored.)
    let creates: Vec<u16> =
        sim.0.audit.since(0).iter().filter(|r| r.verb == "create" && r.resource == "jobs").map(|r| r.code).collect();
    assert_eq!(creates, vec![409], "one attempt, answered AlreadyExists");
    assert!(ctx.metrics.encode().contains("cronshard_duplicates_avoided_total 1"));

    // The next run's name is taken by a Job this CronJob does not control: a Warning, no adoption.
    before_boundary(&sim, &clock, 2);
    wait_for("the refusal", || {
        objects(&sim, Resource::Events).iter().any(|e| {
            e["regarding"]["name"] == "repair"
                && e["reason"] == "FailedCreate"
                && e["note"].as_str().is_some_and(|n| n.contains("not controlled by this CronJob"))
        })
    })
    .await;
    let status = &get(&sim, Resource::CronJobs, "repair").expect("cronjob")["status"];
    assert_eq!(status["lastScheduleTime"], rfc3339(boundary), "a run it did not start is not recorded");
    let _ = stop.send(true);
    worker.await.expect("joins");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_job_labelling_pass_starts_over_after_a_410_mid_list() {
    let sim = sim();
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    let created = sim.store().clock().now();
    let mut seed = vec![cronjob("legacy", "uid-legacy", created, json!({"suspend": true}))];
    for i in 0..30 {
        // Left by the in-tree controller: owned, unlabelled.
        seed.push(owned_job(&format!("legacy-{i:02}"), "legacy", "uid-legacy", false, finished("Complete", i)));
    }
    // Not a CronJob's: never labelled.
    seed.push(
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "standalone", "namespace": "default"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
    );
    load(&sim, &seed);
    // Slow reads, so the pass is still paging when history is compacted under it.
    sim.0.faults.update(|f| f.latency.read_ms = 800);
    let ctx = common::context(config, &clock);

    let pass = tokio::spawn({
        let ctx = ctx.clone();
        async move { cronshard_worker::watches::labeller::label_orphan_jobs(&ctx, &|_| true, 10).await }
    });
    wait_for("the first labels", || sim.0.audit.since(0).iter().any(|r| r.verb == "patch")).await;
    sim.store().compact_now();
    let labelled = tokio::time::timeout(Duration::from_secs(60), pass).await.expect("ends").expect("joins");
    assert_eq!(labelled.expect("the pass recovers"), 30);

    let audit = sim.0.audit.since(0);
    assert!(audit.iter().any(|r| r.verb == "list" && r.code == 410), "the continue token expired");
    let labels: HashMap<String, Value> = objects(&sim, Resource::Jobs)
        .into_iter()
        .map(|j| (j["metadata"]["name"].as_str().unwrap_or_default().to_owned(), j["metadata"]["labels"].clone()))
        .collect();
    for i in 0..30 {
        assert_eq!(labels[&format!("legacy-{i:02}")]["cronshard.io/bucket"], "0");
    }
    assert!(labels["standalone"].get("cronshard.io/bucket").is_none());
    assert!(ctx.metrics.encode().contains("cronshard_api_expired_total 1"));
    let patches = audit.iter().filter(|r| r.verb == "patch" && r.code == 200).count();
    assert_eq!(patches, 30, "no Job was labelled twice");
}

/// A CronJob the client cannot decode (its schedule is a number) sits in the same bucket as
/// a good one: the bad one is skipped with a Warning and a metric, the good one fires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_cronjob_does_not_stall_its_bucket() {
    let sim = sim();
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    let boundary = before_boundary(&sim, &clock, 3);
    let created = sim.store().clock().now();
    load(
        &sim,
        &[cronjob("good", "uid-good", created, json!({})), cronjob("bad", "uid-bad", created, json!({"schedule": 5}))],
    );
    let ctx = common::context(config, &clock);
    let (stop, worker) = common::start(ctx.clone());
    let name = format!("good-{}", minute(boundary));
    wait_for("the good CronJob's run", || get(&sim, Resource::Jobs, &name).is_some()).await;
    wait_for("the Warning on the bad one", || event_reasons(&sim, "bad").contains(&"Undecodable".to_owned())).await;
    let metrics = ctx.metrics.encode();
    assert!(metrics.contains(r#"cronshard_undecodable_objects_total{kind="CronJob"} 1"#), "{metrics}");
    let _ = stop.send(true);
    worker.await.expect("joins");
}

/// A CronJob stored before a validation rule existed cannot be labelled (the server
/// validates the whole object on the label patch: 422). Its bucket's worker manages it
/// unlabelled: the same Warning Event and metric as a labelled invalid CronJob.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_cronjob_that_cannot_be_labelled_still_gets_its_warning() {
    let sim = sim();
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    let created = sim.store().clock().now();
    let mut broken = cronjob("broken", "uid-broken", created, json!({"schedule": "61 * * * *"}));
    broken["metadata"]["labels"] = json!({});
    load(&sim, &[broken]);
    let ctx = common::context(config, &clock);
    let (stop, worker) = common::start(ctx.clone());
    wait_for("the Warning", || event_reasons(&sim, "broken").contains(&"UnparseableSchedule".to_owned())).await;
    let metrics = ctx.metrics.encode();
    let counted = metrics
        .lines()
        .find_map(|l| l.strip_prefix(r#"cronshard_invalid_cronjobs_total{reason="UnparseableSchedule"} "#))
        .and_then(|n| n.parse::<u64>().ok());
    assert!(counted.is_some_and(|n| n >= 1), "{metrics}");
    let stored = get(&sim, Resource::CronJobs, "broken").expect("still there");
    assert!(stored["metadata"]["labels"].get("cronshard.io/bucket").is_none(), "never written to");
    let _ = stop.send(true);
    worker.await.expect("joins");
}
