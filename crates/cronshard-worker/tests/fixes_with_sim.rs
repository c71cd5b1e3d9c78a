//! The CronJob bugs users hit most, end to end against the in-process simulator: a nightly
//! job across New York's real daylight-saving transitions of 2026 (the clocks moved there),
//! under the default policy and under upstream's; a run started by hand; a finished Job
//! deleted by its TTL; a schedule edited through the API (the simulator records managedFields).

mod common;

use std::num::NonZeroU32;
use std::time::Duration;

use common::{cronjob, event_reasons, get, job_names, load, owned_job, serve, wait_for};
use cronshard_sim::{Config, Resource, SimState};
use cronshard_types::{DstPolicy, Timestamp};
use cronshard_worker::api::limiter::Limiter;
use cronshard_worker::{Clock, Context, Settings};
use serde_json::{Value, json};

fn sim() -> SimState {
    SimState::new(Config { runner: None, ..Config::default() })
}

fn t(s: &str) -> Timestamp {
    s.parse().expect("time")
}

/// Moves the simulator's clock and the replica's so that it is `at` now.
fn move_clocks_to(sim: &SimState, clock: &Clock, at: &str) {
    let offset = t(at).duration_since(Timestamp::now());
    sim.store().clock().set_offset(offset);
    clock.set_offset(offset);
}

fn replica(config: kube::Config, clock: &Clock, dst_policy: DstPolicy) -> std::sync::Arc<Context> {
    let settings = Settings {
        identity: "replica-test".into(),
        buckets: NonZeroU32::MIN,
        selector: None,
        dst_policy,
        bucket_function: cronshard_types::BucketFunction::Uid,
        server_side_sharding: Default::default(),
    };
    Context::new(config, Limiter::new(0.0, 1), settings, clock.clone(), Default::default()).expect("context")
}

/// A nightly CronJob in New York that last ran at `last` (RFC 3339).
fn nightly(schedule: &str, last: &str) -> Value {
    let mut cj = cronjob(
        "nightly",
        "uid-nightly",
        t("2026-01-01T00:00:00Z"),
        json!({"schedule": schedule, "timeZone": "America/New_York"}),
    );
    cj["status"] = json!({"lastScheduleTime": last});
    cj
}

fn job_name_at(at: &str) -> String {
    format!("nightly-{}", t(at).as_second() / 60)
}

/// Runs one replica under `policy` from `now` for as long as the simulator's clock takes to
/// pass `until`; returns the Jobs it created.
async fn run_across(policy: DstPolicy, cronjob: Value, now: &str, until: &str) -> (SimState, Vec<String>) {
    let sim = sim();
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    move_clocks_to(&sim, &clock, now);
    load(&sim, &[cronjob]);
    let (stop, worker) = common::start(replica(config, &clock, policy));
    let until = t(until);
    wait_for("the clock to pass the fire time", || sim.store().clock().now() > until).await;
    // A sync due at the fire time has had its moment; give its create a little longer.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _ = stop.send(true);
    worker.await.expect("joins");
    let names = job_names(&sim);
    (sim, names)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nightly_job_runs_once_when_new_york_falls_back_and_upstreams_policy_runs_it_twice() {
    // 01:30 EDT ran (05:30Z); at 06:30Z the wall clock reads 01:30 again, now EST.
    let cj = nightly("30 1 * * *", "2026-11-01T05:30:00Z");
    let (_, cron) = run_across(DstPolicy::Cron, cj.clone(), "2026-11-01T06:29:57Z", "2026-11-01T06:30:01Z").await;
    assert!(cron.is_empty(), "cron's policy: once per wall-clock time, got {cron:?}");
    let (_, upstream) = run_across(DstPolicy::Upstream, cj, "2026-11-01T06:29:57Z", "2026-11-01T06:30:01Z").await;
    assert_eq!(upstream, [job_name_at("2026-11-01T06:30:00Z")], "upstream's policy runs it again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nightly_job_in_the_skipped_hour_runs_right_after_new_york_springs_forward() {
    let cj = nightly("30 2 * * *", "2026-03-07T07:30:00Z");
    let (sim, names) = run_across(DstPolicy::Cron, cj.clone(), "2026-03-08T06:59:57Z", "2026-03-08T07:00:01Z").await;
    let name = job_name_at("2026-03-08T07:00:00Z");
    assert_eq!(names, std::slice::from_ref(&name), "03:00 EDT, the first instant after the gap");
    let job = get(&sim, Resource::Jobs, &name).expect("job");
    assert_eq!(
        job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"],
        "2026-03-08T03:00:00-04:00"
    );
    let status = &get(&sim, Resource::CronJobs, "nightly").expect("cronjob")["status"];
    assert_eq!(status["lastScheduleTime"], "2026-03-08T07:00:00Z");
    let (_, upstream) = run_across(DstPolicy::Upstream, cj, "2026-03-08T06:59:57Z", "2026-03-08T07:00:01Z").await;
    assert!(upstream.is_empty(), "upstream's policy skips the day: {upstream:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_started_by_hand_is_counted_not_warned_about_and_its_success_recorded() {
    let sim = sim();
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    // A yearly schedule: nothing of the schedule's own runs in this test.
    load(&sim, &[cronjob("yearly", "uid-yearly", sim.store().clock().now(), json!({"schedule": "0 0 1 1 *"}))]);
    let ctx = replica(config, &clock, DstPolicy::Cron);
    let (stop, worker, listed) = common::start_counting_listed(ctx.clone());
    // A Job already there when the bucket lists is not seen starting (nor counted).
    wait_for("the bucket's lists", || listed.load(std::sync::atomic::Ordering::Relaxed) == 1).await;
    // What `kubectl create job --from=cronjob/yearly` makes (labelled here; the labelling pass
    // would label it within its period).
    let mut by_hand = owned_job("yearly-manual-7xk", "yearly", "uid-yearly", true, json!({}));
    by_hand["metadata"]["annotations"] = json!({"cronjob.kubernetes.io/instantiate": "manual"});
    sim.store().create(Resource::Jobs, by_hand).expect("create");
    wait_for("the manual run counted", || ctx.metrics.encode().contains("cronshard_manual_runs_total 1")).await;
    let done = sim.store().clock().now_rfc3339();
    let complete = json!({"startTime": done, "completionTime": done, "succeeded": 1,
        "conditions": [{"type": "Complete", "status": "True"}]});
    sim.store()
        .update(Resource::Jobs, "default", "yearly-manual-7xk", |job| {
            let mut value = job.value();
            value["status"] = complete.clone();
            Ok(Some(value))
        })
        .expect("complete it");
    wait_for("lastSuccessfulTime", || {
        get(&sim, Resource::CronJobs, "yearly").is_some_and(|cj| cj["status"]["lastSuccessfulTime"] == done.as_str())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let reasons = event_reasons(&sim, "yearly");
    assert!(!reasons.contains(&"UnexpectedJob".to_owned()), "{reasons:?}");
    assert!(get(&sim, Resource::CronJobs, "yearly").expect("cronjob")["status"]["active"].is_null());
    let _ = stop.send(true);
    worker.await.expect("joins");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_job_deleted_by_its_ttl_is_never_run_again() {
    let sim = sim();
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    let boundary = common::before_boundary(&sim, &clock, 2);
    load(&sim, &[cronjob("every", "uid-every", sim.store().clock().now(), json!({"schedule": "* * * * *"}))]);
    let (stop, worker) = common::start(replica(config, &clock, DstPolicy::Cron));
    let name = format!("every-{}", boundary.as_second() / 60);
    wait_for("the run", || get(&sim, Resource::Jobs, &name).is_some()).await;
    // It finishes, and its TTL deletes it before the controller has seen it finish.
    sim.store().delete(Resource::Jobs, "default", &name, None).expect("delete");
    wait_for("the sync that sees it gone", || event_reasons(&sim, "every").contains(&"MissingJob".to_owned())).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(get(&sim, Resource::Jobs, &name).is_none(), "{name} was created again");
    let creates = sim.0.audit.since(0).iter().filter(|r| r.verb == "create" && r.name == name).count();
    assert_eq!(creates, 1, "one create of the run, ever");
    let _ = stop.send(true);
    worker.await.expect("joins");
}

/// The Jobs of CronJob `name`.
fn runs_of(sim: &SimState, name: &str) -> Vec<String> {
    job_names(sim).into_iter().filter(|n| n.starts_with(&format!("{name}-"))).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_schedule_starts_no_run_by_itself_the_day_new_york_falls_back() {
    let sim = sim();
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    // 10:00 EST on 1 November 2026, hours after the clocks went back. Both CronJobs last ran
    // at 23:00 EDT the evening before; 05:00 EST today lies between then and now.
    move_clocks_to(&sim, &clock, "2026-11-01T14:59:50Z");
    let last = "2026-11-01T03:00:00Z";
    let mut untouched = nightly("0 5 * * *", last);
    untouched["metadata"]["name"] = json!("untouched");
    untouched["metadata"]["uid"] = json!("uid-untouched");
    load(&sim, &[untouched, nightly("0 23 * * *", last)]);
    // The user's edit goes through the API, as `kubectl edit` sends it: the server records
    // when its manager changed the schedule.
    let api: kube::Api<k8s_openapi::api::batch::v1::CronJob> =
        kube::Api::namespaced(kube::Client::try_from(config.clone()).expect("client"), "default");
    let edit = json!({"spec": {"schedule": "0 5 * * *"}});
    let params = kube::api::PatchParams { field_manager: Some("kubectl-edit".into()), ..Default::default() };
    api.patch("nightly", &params, &kube::api::Patch::Merge(&edit)).await.expect("edit the schedule");

    let (stop, worker) = common::start(replica(config.clone(), &clock, DstPolicy::Cron));
    // The untouched CronJob's missed 05:00 run starts at once, as upstream's would.
    wait_for("the untouched CronJob's missed run", || runs_of(&sim, "untouched").len() == 1).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(runs_of(&sim, "nightly"), Vec::<String>::new(), "the edit started a run");
    let _ = stop.send(true);
    worker.await.expect("joins");

    // A new replica (the bucket changed hands) knows the edit from the server alone; the
    // edited CronJob's first run is the new schedule's first time after the edit.
    move_clocks_to(&sim, &clock, "2026-11-02T09:59:57Z");
    let (stop, worker) = common::start(replica(config, &clock, DstPolicy::Cron));
    wait_for("the edited schedule's first run", || !runs_of(&sim, "nightly").is_empty()).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(runs_of(&sim, "nightly"), [job_name_at("2026-11-02T10:00:00Z")], "05:00 EST on 2 November, once");
    let reasons = event_reasons(&sim, "nightly");
    assert!(!reasons.iter().any(|r| r == "MissSchedule" || r == "TooManyMissedTimes"), "counted missed: {reasons:?}");
    let _ = stop.send(true);
    worker.await.expect("joins");
}
