//! A spread run (`cronshard.io/spread`), one test per rule: it starts at T + offset and keeps
//! T's meaning everywhere else. Time passed in, Jobs in memory.

mod fake;

use cronshard_sync::*;
use fake::*;
use futures::executor::block_on;

/// The offset of these tests' CronJob: 37 s.
const OFFSET: u64 = 37;

async fn run_spread(cj: &CronJobState, now: &str, jobs: &mut FakeJobs) -> Outcome {
    sync_spread(cj, &[], t(now), OFFSET, jobs).await
}

#[test]
fn a_spread_run_waits_for_its_offset() {
    block_on(async {
        let cj = cronjob("0 * * * *");
        let mut jobs = FakeJobs::default();
        let out = run_spread(&cj, "2026-11-30T09:00:20Z", &mut jobs).await;
        assert!(jobs.calls.is_empty(), "not before T + 37 s: {:?}", jobs.calls);
        assert!(out.created.is_none());
        assert_eq!(out.requeue_at, Some(t("2026-11-30T09:00:37.1Z")), "the next sync is at T + offset");
    })
}

#[test]
fn a_spread_run_keeps_its_scheduled_times_name_and_last_schedule_time() {
    block_on(async {
        let cj = cronjob("0 * * * *");
        let mut jobs = FakeJobs::default();
        let out = run_spread(&cj, "2026-11-30T09:00:37.2Z", &mut jobs).await;
        let name = name_at("nightly", "2026-11-30T09:00:00Z");
        assert_eq!(jobs.calls, [format!("create {name}")]);
        assert_eq!(out.status.last_schedule_time, Some(t("2026-11-30T09:00:00Z")));
        assert_eq!(out.created.as_ref().map(|(_, at)| *at), Some(t("2026-11-30T09:00:00Z")));
        assert_eq!(out.requeue_at, Some(t("2026-11-30T10:00:37.1Z")), "the next run's T + offset");
    })
}

#[test]
fn the_starting_deadline_counts_from_t_plus_offset() {
    block_on(async {
        let mut cj = cronjob("0 * * * *");
        cj.spec.starting_deadline_seconds = Some(30);
        let mut jobs = FakeJobs::default();
        // 60 s after T: too late without a spread, 23 s after T + 37 s with it.
        let out = run_spread(&cj, "2026-11-30T09:01:00Z", &mut jobs).await;
        assert_eq!(jobs.calls.len(), 1, "{:?}", jobs.calls);
        assert!(out.missed.is_empty());
        // 70 s after T + 37 s: missed.
        let mut jobs = FakeJobs::default();
        let out = run_spread(&cj, "2026-11-30T09:01:48Z", &mut jobs).await;
        assert!(jobs.calls.is_empty(), "{:?}", jobs.calls);
        assert_eq!(reasons(&out), ["MissSchedule"]);
    })
}

#[test]
fn concurrency_policies_see_the_same_runs() {
    block_on(async {
        let mut cj = cronjob("0 * * * *");
        cj.spec.concurrency_policy = ConcurrencyPolicy::Forbid;
        let running = job(&name_at("nightly", "2026-11-30T08:00:00Z"), None, Some("2026-11-30T08:00:37Z"));
        cj.status.active = vec![active(&running)];
        cj.status.last_schedule_time = Some(t("2026-11-30T08:00:00Z"));
        let mut jobs = FakeJobs::default();
        let out = sync_spread(&cj, &[running], t("2026-11-30T09:00:40Z"), OFFSET, &mut jobs).await;
        assert!(jobs.calls.is_empty(), "Forbid with a run active: {:?}", jobs.calls);
        assert!(out.created.is_none());
    })
}

#[test]
fn no_offset_is_an_ordinary_sync() {
    block_on(async {
        let cj = cronjob("0 * * * *");
        let (mut spread, mut plain) = (FakeJobs::default(), FakeJobs::default());
        let at = t("2026-11-30T09:00:00.5Z");
        let a = sync_spread(&cj, &[], at, 0, &mut spread).await;
        let b = sync(&cj, &[], at, &mut plain).await;
        assert_eq!((a.requeue_at, a.status), (b.requeue_at, b.status));
        assert_eq!(spread.calls, plain.calls);
    })
}
