//! The CronJob bugs users hit most, one test per rule: daylight saving (cron's behaviour by
//! default, upstream's on request), schedule edits, runs started by hand, and finished Jobs
//! deleted by their TTL or by hand. Time passed in, Jobs in memory.

use cronshard_sync::*;
use cronshard_types::DstPolicy;
use futures::executor::block_on;

mod fake;

use fake::*;

/// A nightly CronJob at 01:30 in New York, created long before.
fn nightly_in_new_york(schedule: &str) -> CronJobState {
    let mut cj = cronjob(schedule);
    cj.spec.time_zone = Some("America/New_York".into());
    cj.creation_timestamp = t("2026-10-01T00:00:00Z");
    cj
}

#[test]
fn a_nightly_run_in_the_repeated_hour_starts_once() {
    block_on(async {
        let mut cj = nightly_in_new_york("30 1 * * *");
        // 01:30 EDT ran; an hour later the wall clock reads 01:30 again (EST).
        cj.status.last_schedule_time = Some(t("2026-11-01T05:30:00Z"));
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[], "2026-11-01T06:30:05Z", &mut jobs).await;
        assert!(jobs.calls.is_empty(), "not twice: {:?}", jobs.calls);
        assert!(out.missed.is_empty(), "and nothing is missed");
        assert_eq!(out.requeue_at, Some(t("2026-11-02T06:30:00.1Z")), "next: 01:30 EST on 2 November");
    })
}

#[test]
fn upstreams_policy_starts_the_repeated_hours_run_again() {
    block_on(async {
        let mut cj = nightly_in_new_york("30 1 * * *");
        cj.dst_policy = DstPolicy::Upstream;
        cj.status.last_schedule_time = Some(t("2026-11-01T05:30:00Z"));
        let mut jobs = FakeJobs::default();
        run(&cj, &[], "2026-11-01T06:30:05Z", &mut jobs).await;
        assert_eq!(jobs.calls, [format!("create {}", name_at("nightly", "2026-11-01T06:30:00Z"))]);
    })
}

#[test]
fn a_nightly_run_in_the_skipped_hour_starts_right_after_the_gap_named_for_that_instant() {
    block_on(async {
        let mut cj = nightly_in_new_york("30 2 * * *");
        cj.status.last_schedule_time = Some(t("2026-03-07T07:30:00Z"));
        let mut jobs = FakeJobs::default();
        let before = run(&cj, &[], "2026-03-08T06:59:59Z", &mut jobs).await;
        assert!(jobs.calls.is_empty());
        assert_eq!(before.requeue_at, Some(t("2026-03-08T07:00:00.1Z")), "03:00 EDT, the gap's end");
        let out = run(&cj, &[], "2026-03-08T07:00:00.2Z", &mut jobs).await;
        assert_eq!(jobs.calls, [format!("create {}", name_at("nightly", "2026-03-08T07:00:00Z"))]);
        assert_eq!(out.status.last_schedule_time, Some(t("2026-03-08T07:00:00Z")));
        assert!(out.missed.is_empty(), "the run is not missed: {:?}", out.missed);
    })
}

#[test]
fn the_gaps_run_carries_its_instant_in_the_scheduled_timestamp() {
    block_on(async {
        let mut cj = nightly_in_new_york("30 2 * * *");
        cj.status.last_schedule_time = Some(t("2026-03-07T07:30:00Z"));
        let mut capture = FakeJobs::default();
        sync(&cj, &[], t("2026-03-08T07:00:01Z"), &mut capture).await;
        let request = capture.requests.pop().expect("created");
        assert_eq!(request.scheduled_timestamp, "2026-03-08T03:00:00-04:00");
    })
}

#[test]
fn upstreams_policy_skips_the_day_whose_run_falls_in_the_gap() {
    block_on(async {
        let mut cj = nightly_in_new_york("30 2 * * *");
        cj.dst_policy = DstPolicy::Upstream;
        cj.status.last_schedule_time = Some(t("2026-03-07T07:30:00Z"));
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[], "2026-03-08T07:00:00.2Z", &mut jobs).await;
        assert!(jobs.calls.is_empty());
        assert_eq!(out.requeue_at, Some(t("2026-03-09T06:30:00.1Z")), "next: 9 March");
    })
}

#[test]
fn an_edited_schedule_never_starts_a_run_by_itself() {
    block_on(async {
        // Last run yesterday at 23:00; at 10:00 today the schedule became 05:00.
        let mut cj = cronjob("0 5 * * *");
        cj.creation_timestamp = t("2026-11-01T00:00:00Z");
        cj.status.last_schedule_time = Some(t("2026-12-02T23:00:00Z"));
        cj.schedule_changed_at = Some(t("2026-12-03T10:00:00Z"));
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[], "2026-12-03T10:00:05Z", &mut jobs).await;
        assert!(jobs.calls.is_empty(), "FIX: today's 05:00 is not started: {:?}", jobs.calls);
        assert!(out.missed.is_empty() && out.events.is_empty(), "nor counted missed: {:?}", out.missed);
        assert_eq!(out.requeue_at, Some(t("2026-12-04T05:00:00.1Z")), "the new schedule's first time after the edit");
        let out = run(&cj, &[], "2026-12-04T05:00:00.2Z", &mut jobs).await;
        assert_eq!(jobs.calls, [format!("create {}", name_at("nightly", "2026-12-04T05:00:00Z"))]);
        assert!(out.missed.is_empty());
        // Without the moment of the edit (a server that keeps no managedFields): as upstream.
        cj.schedule_changed_at = None;
        let mut jobs = FakeJobs::default();
        run(&cj, &[], "2026-12-03T10:00:05Z", &mut jobs).await;
        assert_eq!(jobs.calls, [format!("create {}", name_at("nightly", "2026-12-03T05:00:00Z"))]);
    })
}

#[test]
fn a_schedule_changed_before_the_last_run_changes_nothing() {
    block_on(async {
        let mut cj = cronjob("0 * * * *");
        cj.status.last_schedule_time = Some(t("2026-11-30T09:00:00Z"));
        cj.schedule_changed_at = Some(t("2026-11-30T08:30:00Z"));
        let mut jobs = FakeJobs::default();
        run(&cj, &[], "2026-11-30T10:00:00.2Z", &mut jobs).await;
        assert_eq!(jobs.calls, [format!("create {}", name_at("nightly", "2026-11-30T10:00:00Z"))]);
    })
}

/// A Job `kubectl create job --from=cronjob/nightly` made.
fn manual(name: &str, finished: Option<Finished>, start: Option<&str>) -> ChildJob {
    ChildJob { manual: true, ..job(name, finished, start) }
}

#[test]
fn a_run_started_by_hand_is_not_unexpected() {
    block_on(async {
        let cj = cronjob("0 * * * *");
        let by_hand = manual("nightly-manual-x7k", None, Some("2026-11-30T08:10:00Z"));
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[by_hand], "2026-11-30T08:20:00Z", &mut jobs).await;
        assert!(out.events.is_empty(), "FIX: no UnexpectedJob Warning: {:?}", reasons(&out));
        assert!(out.status.active.is_empty(), "not a scheduled run");
        // A Job of unknown origin still is.
        let unknown = job("nightly-other", None, Some("2026-11-30T08:10:00Z"));
        let out = run(&cj, &[unknown], "2026-11-30T08:20:00Z", &mut jobs).await;
        assert_eq!(reasons(&out), ["UnexpectedJob"]);
    })
}

#[test]
fn a_run_started_by_hand_does_not_hold_back_forbid() {
    block_on(async {
        let mut cj = cronjob("0 * * * *");
        cj.spec.concurrency_policy = ConcurrencyPolicy::Forbid;
        cj.status.last_schedule_time = Some(t("2026-11-30T08:00:00Z"));
        let by_hand = manual("nightly-manual-x7k", None, Some("2026-11-30T08:50:00Z"));
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[by_hand], "2026-11-30T09:00:00.2Z", &mut jobs).await;
        assert_eq!(jobs.calls, [format!("create {}", name_at("nightly", "2026-11-30T09:00:00Z"))]);
        assert_eq!(reasons(&out), ["SuccessfulCreate"]);
    })
}

#[test]
fn a_run_started_by_hand_that_succeeds_sets_last_successful_time() {
    block_on(async {
        let mut cj = cronjob("0 0 1 1 *");
        cj.status.last_successful_time = Some(t("2026-11-29T00:00:00Z"));
        let done = manual("nightly-manual-x7k", Some(Finished::Complete), Some("2026-11-30T08:10:00Z"));
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[done], "2026-11-30T08:20:00Z", &mut jobs).await;
        assert!(out.status_changed);
        assert_eq!(out.status.last_successful_time, Some(t("2026-11-30T08:10:00Z")));
        assert!(out.events.is_empty(), "{:?}", reasons(&out));
    })
}

#[test]
fn a_finished_job_deleted_by_its_ttl_is_not_run_again() {
    block_on(async {
        let mut cj = cronjob("0 * * * *");
        // 09:00 ran and finished; its TTL deleted it before this sync saw it finish.
        let gone =
            job(&name_at("nightly", "2026-11-30T09:00:00Z"), Some(Finished::Complete), Some("2026-11-30T09:00:00Z"));
        cj.status.active = vec![active(&gone)];
        cj.status.last_schedule_time = Some(t("2026-11-30T09:00:00Z"));
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[], "2026-11-30T09:30:00Z", &mut jobs).await;
        assert_eq!(jobs.calls, [format!("get {}", gone.name)], "confirmed gone, never created again");
        assert_eq!(reasons(&out), ["MissingJob"]);
        assert!(out.status.active.is_empty());
        assert_eq!(out.requeue_at, Some(t("2026-11-30T10:00:00.1Z")));
    })
}

#[test]
fn a_finished_job_deleted_by_hand_after_it_was_seen_is_not_run_again() {
    block_on(async {
        let mut cj = cronjob("0 * * * *");
        // 09:00 finished and left status.active; then someone deleted it.
        cj.status.last_schedule_time = Some(t("2026-11-30T09:00:00Z"));
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[], "2026-11-30T09:45:00Z", &mut jobs).await;
        assert!(jobs.calls.is_empty(), "{:?}", jobs.calls);
        assert!(out.events.is_empty() && !out.status_changed);
        assert_eq!(out.requeue_at, Some(t("2026-11-30T10:00:00.1Z")));
    })
}
