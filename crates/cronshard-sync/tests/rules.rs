//! One test per rule of the CronJob semantics in docs/design.md, FIXes included, with time passed
//! in and the cluster replaced by an in-memory [`Jobs`].

use cronshard_sync::*;
use futures::executor::block_on;

mod fake;

use fake::*;

/// The names of the Jobs a sync named for history cleanup.
fn history(out: &Outcome) -> Vec<String> {
    out.history.iter().map(|j| j.name.clone()).collect()
}

#[test]
fn a_due_run_is_created_with_its_deterministic_name_and_recorded() {
    block_on(async {
        let cj = cronjob("*/5 * * * *");
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[], "2026-11-30T08:05:00.3Z", &mut jobs).await;
        let name = name_at("nightly", "2026-11-30T08:05:00Z");
        assert_eq!(jobs.calls, [format!("create {name}")]);
        assert_eq!(reasons(&out), ["SuccessfulCreate"]);
        assert_eq!(out.events[0].message, format!("Created job {name}"));
        assert!(out.status_changed);
        assert_eq!(out.status.last_schedule_time, Some(t("2026-11-30T08:05:00Z")));
        assert_eq!(out.status.active.iter().map(|r| r.name.clone()).collect::<Vec<_>>(), [name]);
        assert_eq!(out.created.as_ref().map(|(_, at)| *at), Some(t("2026-11-30T08:05:00Z")));
        assert_eq!(out.requeue_at, Some(t("2026-11-30T08:10:00.1Z")));
    })
}

#[test]
fn nothing_is_due_before_the_first_fire_time() {
    block_on(async {
        let cj = cronjob("*/5 * * * *");
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[], "2026-11-30T08:04:59Z", &mut jobs).await;
        assert!(jobs.calls.is_empty() && out.events.is_empty() && !out.status_changed);
        assert_eq!(out.requeue_at, Some(t("2026-11-30T08:05:00.1Z")));
    })
}

#[test]
fn only_the_latest_missed_run_starts_and_more_than_100_missed_warns() {
    block_on(async {
        let cj = cronjob("* * * * *");
        let mut jobs = FakeJobs::default();
        // Down for three hours: 180 missed minutes, only 11:00 runs.
        let out = run(&cj, &[], "2026-11-30T11:00:30Z", &mut jobs).await;
        assert_eq!(jobs.calls, [format!("create {}", name_at("nightly", "2026-11-30T11:00:00Z"))]);
        assert_eq!(reasons(&out), ["TooManyMissedTimes", "SuccessfulCreate"]);
        assert_eq!(out.events[0].kind, EventType::Warning);
        assert_eq!(out.missed, [(MissReason::TooManyMissedTimes, 179)], "every run but the one that starts");
        // Ninety missed minutes do not earn TooManyMissedTimes, but are missed all the same.
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[], "2026-11-30T09:30:30Z", &mut jobs).await;
        assert_eq!(reasons(&out), ["MissSchedule", "SuccessfulCreate"]);
        assert_eq!(out.missed, [(MissReason::Superseded, 89)]);
    })
}

#[test]
fn starting_deadline_seconds_skips_runs_outside_the_window() {
    block_on(async {
        let mut cj = cronjob("0 * * * *");
        cj.spec.starting_deadline_seconds = Some(60);
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[], "2026-11-30T09:02:00Z", &mut jobs).await;
        assert!(jobs.calls.is_empty(), "09:00 is more than 60 s ago");
        assert_eq!(out.requeue_at, Some(t("2026-11-30T10:00:00.1Z")));
        let out = run(&cj, &[], "2026-11-30T09:00:59Z", &mut jobs).await;
        assert_eq!(reasons(&out), ["SuccessfulCreate"]);
    })
}

#[test]
fn time_zones_decide_the_run_and_the_annotation() {
    block_on(async {
        let mut cj = cronjob("30 9 * * *");
        cj.spec.time_zone = Some("Asia/Tokyo".into());
        let mut capture = FakeJobs::default();
        cj.creation_timestamp = t("2026-11-29T00:00:00Z");
        // 09:30 in Tokyo is 00:30 UTC.
        sync(&cj, &[], t("2026-11-30T00:30:10Z"), &mut capture).await;
        let request = capture.requests.pop().expect("created");
        assert_eq!(request.scheduled, t("2026-11-30T00:30:00Z"));
        assert_eq!(request.scheduled_timestamp, "2026-11-30T09:30:00+09:00");
    })
}

#[test]
fn suspend_stops_new_runs_but_not_status_or_history_work() {
    block_on(async {
        let mut cj = cronjob("*/5 * * * *");
        cj.spec.suspend = true;
        let done = job("nightly-1", Some(Finished::Complete), Some("2026-11-30T08:00:00Z"));
        cj.status.active = vec![active(&done)];
        cj.spec.successful_jobs_history_limit = Some(0);
        let mut jobs = FakeJobs::default();
        jobs.live.insert(done.name.clone(), done.clone());
        cj.status.last_schedule_time = Some(t("2026-11-30T08:00:00Z"));
        let out = run(&cj, &[done], "2026-11-30T09:00:00Z", &mut jobs).await;
        assert!(!jobs.calls.iter().any(|c| c.starts_with("create")));
        assert_eq!(reasons(&out), ["SawCompletedJob"]);
        assert_eq!(history(&out), ["nightly-1"], "history is cleaned up while suspended");
        assert!(out.status.active.is_empty() && out.status_changed);
        assert_eq!(out.requeue_at, None);
    })
}

#[test]
fn forbid_waits_and_does_not_advance_last_schedule_time() {
    block_on(async {
        let mut cj = cronjob("*/5 * * * *");
        cj.spec.concurrency_policy = ConcurrencyPolicy::Forbid;
        let running = job("nightly-old", None, Some("2026-11-30T08:00:00Z"));
        cj.status.active = vec![active(&running)];
        let mut jobs = FakeJobs::default();
        let out = run(&cj, std::slice::from_ref(&running), "2026-11-30T08:05:10Z", &mut jobs).await;
        assert_eq!(reasons(&out), ["JobAlreadyActive"]);
        assert!(out.status.last_schedule_time.is_none() && !out.status_changed);
        // The blocker finishes inside the window: the same due time fires at once.
        let finished = ChildJob { finished: Some(Finished::Failed), ..running };
        let out = run(&cj, &[finished], "2026-11-30T08:06:00Z", &mut jobs).await;
        assert_eq!(reasons(&out), ["SawCompletedJob", "SuccessfulCreate"]);
        assert_eq!(out.status.last_schedule_time, Some(t("2026-11-30T08:05:00Z")));
    })
}

#[test]
fn allow_runs_alongside_active_jobs() {
    block_on(async {
        let mut cj = cronjob("*/5 * * * *");
        let running = job("nightly-old", None, Some("2026-11-30T08:00:00Z"));
        cj.status.active = vec![active(&running)];
        let out = run(&cj, &[running], "2026-11-30T08:05:10Z", &mut FakeJobs::default()).await;
        assert_eq!(reasons(&out), ["SuccessfulCreate"]);
        assert_eq!(out.status.active.len(), 2);
    })
}

#[test]
fn replace_deletes_the_running_job_then_creates() {
    block_on(async {
        let mut cj = cronjob("*/5 * * * *");
        cj.spec.concurrency_policy = ConcurrencyPolicy::Replace;
        let running = job("nightly-old", None, Some("2026-11-30T08:00:00Z"));
        cj.status.active = vec![active(&running)];
        let mut jobs = FakeJobs::default();
        jobs.live.insert(running.name.clone(), running.clone());
        let out = run(&cj, std::slice::from_ref(&running), "2026-11-30T08:05:10Z", &mut jobs).await;
        let name = name_at("nightly", "2026-11-30T08:05:00Z");
        assert_eq!(jobs.calls, ["get nightly-old".to_owned(), "delete nightly-old".into(), format!("create {name}")]);
        assert_eq!(reasons(&out), ["SuccessfulDelete", "SuccessfulCreate"]);
        assert_eq!(out.status.active.iter().map(|r| r.name.clone()).collect::<Vec<_>>(), [name]);

        // A failed delete means no create.
        let mut failing = FakeJobs { fail_delete: true, ..FakeJobs::default() };
        failing.live.insert(running.name.clone(), running.clone());
        let out = run(&cj, std::slice::from_ref(&running), "2026-11-30T08:05:10Z", &mut failing).await;
        assert_eq!(reasons(&out), ["FailedDelete"]);
        assert!(!failing.calls.iter().any(|c| c.starts_with("create")) && out.error.is_some());

        // A failed get too.
        let mut failing = FakeJobs { fail_get: true, ..FakeJobs::default() };
        let out = run(&cj, &[running], "2026-11-30T08:05:10Z", &mut failing).await;
        assert_eq!(reasons(&out), ["FailedGet"]);
        assert!(out.error.is_some());
    })
}

#[test]
fn a_due_time_already_handled_is_not_started_again() {
    block_on(async {
        let mut cj = cronjob("*/5 * * * *");
        cj.status.last_schedule_time = Some(t("2026-11-30T08:05:00Z"));
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[], "2026-11-30T08:05:30Z", &mut jobs).await;
        assert!(jobs.calls.is_empty());
        assert_eq!(out.requeue_at, Some(t("2026-11-30T08:10:00.1Z")));
        // Or its Job is in status.active under the computed name.
        let mut cj = cronjob("*/5 * * * *");
        let mine = job(&name_at("nightly", "2026-11-30T08:05:00Z"), None, None);
        cj.status.active = vec![active(&mine)];
        let out = run(&cj, &[mine], "2026-11-30T08:05:30Z", &mut jobs).await;
        assert!(jobs.calls.is_empty() && out.events.is_empty());
    })
}

#[test]
fn already_exists_repairs_status_when_the_job_is_ours() {
    block_on(async {
        let cj = cronjob("*/5 * * * *");
        let name = name_at("nightly", "2026-11-30T08:05:00Z");
        let mut jobs = FakeJobs::default();
        // Created before a crash, status never written; not yet in the cache.
        jobs.live.insert(name.clone(), job(&name, None, None));
        let out = run(&cj, &[], "2026-11-30T08:05:10Z", &mut jobs).await;
        assert_eq!(jobs.calls, [format!("create {name}"), format!("get {name}")]);
        assert!(out.events.is_empty(), "no SuccessfulCreate for a Job this sync did not create");
        assert_eq!(out.status.active.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), [name.as_str()]);
        assert_eq!(out.status.last_schedule_time, Some(t("2026-11-30T08:05:00Z")));
        assert!(out.created.is_none() && out.error.is_none());
    })
}

#[test]
fn already_exists_owned_by_someone_else_warns_and_retries() {
    block_on(async {
        let cj = cronjob("*/5 * * * *");
        let name = name_at("nightly", "2026-11-30T08:05:00Z");
        let mut jobs = FakeJobs::default();
        jobs.live
            .insert(name.clone(), ChildJob { controller_uid: Some("someone-else".into()), ..job(&name, None, None) });
        let out = run(&cj, &[], "2026-11-30T08:05:10Z", &mut jobs).await;
        assert_eq!(reasons(&out), ["FailedCreate"]);
        assert!(out.events[0].message.contains("not controlled by this CronJob"));
        assert!(out.error.is_some(), "FIX: requeued with backoff instead of dropped");
        assert!(out.status.active.is_empty() && out.status.last_schedule_time.is_none());
    })
}

#[test]
fn children_are_reconciled_against_status_active() {
    block_on(async {
        let mut cj = cronjob("0 0 1 1 *");
        let done = job("nightly-a", Some(Finished::Complete), Some("2026-11-30T08:01:00Z"));
        let stray = job("nightly-b", None, None);
        let gone = job("nightly-c", None, None);
        let slow_cache = job("nightly-d", None, None);
        cj.status.active = vec![active(&done), active(&gone), active(&slow_cache)];
        let mut jobs = FakeJobs::default();
        jobs.live.insert(slow_cache.name.clone(), slow_cache.clone());
        let out = run(&cj, &[done, stray], "2026-11-30T09:00:00Z", &mut jobs).await;
        assert_eq!(reasons(&out), ["SawCompletedJob", "UnexpectedJob", "MissingJob"]);
        assert_eq!(out.events[0].message, "Saw completed job: nightly-a, condition: Complete");
        assert_eq!(out.events[2].message, "Active job went missing: nightly-c");
        let names: Vec<_> = out.status.active.iter().map(|r| r.name.clone()).collect();
        assert_eq!(names, ["nightly-d"], "the stray is not adopted; the one the cache missed stays");
        assert_eq!(out.status.last_successful_time, Some(t("2026-11-30T08:01:00Z")));
    })
}

#[test]
fn history_limits_name_the_oldest_by_start_time_for_the_caller_to_delete() {
    block_on(async {
        let mut cj = cronjob("0 0 1 1 *");
        cj.status.last_schedule_time = Some(t("2026-11-30T08:00:00Z"));
        let ok = |n: &str, start: Option<&str>| job(n, Some(Finished::Complete), start);
        let children = vec![
            ok("nightly-e", Some("2026-11-30T05:00:00Z")),
            ok("nightly-b", Some("2026-11-30T02:00:00Z")),
            ok("nightly-x", None),
            ok("nightly-a2", Some("2026-11-30T01:00:00Z")),
            ok("nightly-a1", Some("2026-11-30T01:00:00Z")),
            job("nightly-f1", Some(Finished::Failed), Some("2026-11-30T03:00:00Z")),
            job("nightly-f2", Some(Finished::Failed), Some("2026-11-30T04:00:00Z")),
        ];
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &children, "2026-11-30T09:00:00Z", &mut jobs).await;
        // Five successes, limit 3: the two oldest (equal start times, by name). Two failures,
        // limit 1: the older one. The sync itself sends nothing: the worker deletes them later.
        assert_eq!(history(&out), ["nightly-a1", "nightly-a2", "nightly-f1"]);
        assert!(jobs.calls.is_empty() && out.events.is_empty());
        // Limit 0 names every one of that kind; unset start times go last.
        cj.spec.successful_jobs_history_limit = Some(4);
        cj.spec.failed_jobs_history_limit = Some(0);
        let out = run(&cj, &children, "2026-11-30T09:00:00Z", &mut FakeJobs::default()).await;
        assert_eq!(history(&out), ["nightly-a1", "nightly-f1", "nightly-f2"]);
        let mut many = children.clone();
        many.push(ok("nightly-y", None));
        cj.spec.successful_jobs_history_limit = Some(5);
        let out = run(&cj, &many, "2026-11-30T09:00:00Z", &mut FakeJobs::default()).await;
        assert_eq!(history(&out), ["nightly-a1", "nightly-f1", "nightly-f2"], "unset start times are the newest");
        // Upstream's Events for what the worker's deletes did.
        assert_eq!(history_deleted("nightly-a1", Ok(())).message, "Deleted job nightly-a1");
        let failed = history_deleted("nightly-a1", Err("etcdserver: request timed out".into()));
        assert_eq!((failed.kind, failed.reason), (EventType::Warning, "FailedDelete"));
        assert_eq!(failed.message, "Deleted job: etcdserver: request timed out");
    })
}

#[test]
fn fix_the_job_of_an_unrecorded_run_is_never_deleted_by_history_cleanup() {
    block_on(async {
        let mut cj = cronjob("*/5 * * * *");
        cj.spec.successful_jobs_history_limit = Some(0);
        cj.status.last_schedule_time = Some(t("2026-11-30T08:00:00Z"));
        // Created for 08:05 and already finished, but the status write was lost.
        let name = name_at("nightly", "2026-11-30T08:05:00Z");
        let fast = job(&name, Some(Finished::Complete), Some("2026-11-30T08:05:01Z"));
        let older =
            job(&name_at("nightly", "2026-11-30T08:00:00Z"), Some(Finished::Complete), Some("2026-11-30T08:00:01Z"));
        let mut jobs = FakeJobs::default();
        jobs.live.insert(name.clone(), fast.clone());
        let out = run(&cj, &[fast, older.clone()], "2026-11-30T08:05:30Z", &mut jobs).await;
        assert_eq!(
            history(&out),
            std::slice::from_ref(&older.name),
            "recorded runs are cleaned up, the unrecorded one is not"
        );
        // The create finds the Job and records the run instead of starting it twice; no
        // deletion comes before it.
        assert_eq!(jobs.calls, [format!("create {name}"), format!("get {name}")]);
        assert_eq!(out.status.last_schedule_time, Some(t("2026-11-30T08:05:00Z")));
    })
}

#[test]
fn a_cronjob_being_deleted_only_gets_its_status_reconciled() {
    block_on(async {
        let mut cj = cronjob("*/5 * * * *");
        cj.deleting = true;
        cj.spec.successful_jobs_history_limit = Some(0);
        let done = job("nightly-1", Some(Finished::Complete), Some("2026-11-30T08:00:00Z"));
        cj.status.active = vec![active(&done)];
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[done], "2026-11-30T09:00:00Z", &mut jobs).await;
        assert!(jobs.calls.is_empty() && out.history.is_empty(), "no deletes, no creates");
        assert_eq!(reasons(&out), ["SawCompletedJob"]);
        assert!(out.status.active.is_empty());
    })
}

#[test]
fn invalid_cronjobs_warn_and_stop() {
    block_on(async {
        let cases = [
            ("61 * * * *", None, "UnparseableSchedule", Invalid::UnparseableSchedule),
            ("* * * * *", Some("Mars/Olympus"), "UnknownTimeZone", Invalid::UnknownTimeZone),
            ("0 0 30 2 *", None, "InvalidSchedule", Invalid::InvalidSchedule),
        ];
        for (schedule, zone, reason, invalid) in cases {
            let mut cj = cronjob(schedule);
            cj.spec.time_zone = zone.map(str::to_owned);
            let mut jobs = FakeJobs::default();
            let out = run(&cj, &[], "2026-11-30T09:00:00Z", &mut jobs).await;
            assert_eq!(reasons(&out), [reason], "{schedule}");
            assert_eq!(out.events[0].kind, EventType::Warning);
            assert_eq!((out.invalid, out.requeue_at, out.error.clone()), (Some(invalid), None, None), "{schedule}");
            assert!(jobs.calls.is_empty());
        }
        let out = run(&cronjob("61 * * * *"), &[], "2026-11-30T09:00:00Z", &mut FakeJobs::default()).await;
        assert_eq!(
            out.events[0].message,
            "unparseable schedule: \"61 * * * *\" : invalid minute field \"61\": end of range (61) above maximum (59)"
        );
    })
}

#[test]
fn a_zone_inside_the_schedule_still_runs_but_warns_every_sync() {
    block_on(async {
        let cj = cronjob("CRON_TZ=Asia/Tokyo 30 17 * * *");
        let out = run(&cj, &[], "2026-11-30T08:30:20Z", &mut FakeJobs::default()).await;
        assert_eq!(reasons(&out), ["UnsupportedSchedule", "SuccessfulCreate"]);
    })
}

#[test]
fn refused_creates_are_retried_with_backoff_until_the_next_run() {
    block_on(async {
        let mut cj = cronjob("*/5 * * * *");
        cj.name = "n".repeat(52);
        let mut jobs = FakeJobs { reject_create: true, ..FakeJobs::default() };
        let out = run(&cj, &[], "2026-11-30T08:05:10Z", &mut jobs).await;
        assert_eq!(reasons(&out), ["FailedCreate"]);
        assert!(out.error.is_some(), "retried with backoff (a quota may free up), as upstream does");
        assert_eq!(out.requeue_at, Some(t("2026-11-30T08:10:00.1Z")), "and no later than the next run");
        assert!(out.missed.is_empty() && !out.status_changed);
        // Still refused when the next run comes: the refused one is counted as missed, once.
        let cj = CronJobState { reported_through: out.reported_through, ..cj };
        let out = run(&cj, &[], "2026-11-30T08:10:00.1Z", &mut jobs).await;
        assert_eq!(out.missed, [(MissReason::Superseded, 1)]);
        let cj = CronJobState { reported_through: out.reported_through, ..cj };
        let out = run(&cj, &[], "2026-11-30T08:10:30Z", &mut jobs).await;
        assert!(out.missed.is_empty(), "not counted twice");
        // A transient failure is retried with backoff.
        let mut jobs = FakeJobs { fail_create: true, ..FakeJobs::default() };
        let out = run(&cronjob("*/5 * * * *"), &[], "2026-11-30T08:05:10Z", &mut jobs).await;
        assert_eq!(reasons(&out), ["FailedCreate"]);
        assert!(out.error.is_some() && !out.status_changed);
    })
}

#[test]
fn runs_past_the_starting_deadline_are_counted_missed_once_with_a_warning() {
    block_on(async {
        // An outage from 08:00 to 08:30: thirty every-minute runs, a 30 s deadline.
        let mut cj = cronjob("* * * * *");
        cj.spec.starting_deadline_seconds = Some(30);
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[], "2026-11-30T08:30:40Z", &mut jobs).await;
        assert!(jobs.calls.is_empty(), "08:30 is 40 s late: outside its deadline too");
        assert_eq!(out.missed, [(MissReason::MissSchedule, 30)]);
        assert_eq!(reasons(&out), ["MissSchedule"]);
        assert!(out.events[0].message.contains("Mon, 30 Nov 2026 08:30:00 +0000 (and 29 earlier)"), "{:?}", out.events);
        // The next sync reports nothing again.
        let cj = CronJobState { reported_through: out.reported_through, ..cj };
        let out = run(&cj, &[], "2026-11-30T08:30:50Z", &mut jobs).await;
        assert!(out.missed.is_empty() && out.events.is_empty());
        // And the next run is on time.
        let out = run(&cj, &[], "2026-11-30T08:31:01Z", &mut jobs).await;
        assert_eq!(jobs.calls, [format!("create {}", name_at("nightly", "2026-11-30T08:31:00Z"))]);
        assert!(out.missed.is_empty());
    })
}

#[test]
fn a_zero_starting_deadline_misses_every_run_and_says_so() {
    block_on(async {
        let mut cj = cronjob("*/5 * * * *");
        cj.spec.starting_deadline_seconds = Some(0);
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[], "2026-11-30T08:05:00.2Z", &mut jobs).await;
        assert!(jobs.calls.is_empty(), "as upstream: never inside a zero-second window");
        assert_eq!(out.missed, [(MissReason::MissSchedule, 1)]);
        assert_eq!(reasons(&out), ["MissSchedule"]);
    })
}

#[test]
fn runs_skipped_on_purpose_are_not_missed() {
    block_on(async {
        // Suspended through three runs, then resumed: the latest starts (as upstream), none is
        // counted missed.
        let mut cj = cronjob("*/5 * * * *");
        cj.spec.suspend = true;
        let out = run(&cj, &[], "2026-11-30T08:16:00Z", &mut FakeJobs::default()).await;
        assert!(out.missed.is_empty());
        cj.spec.suspend = false;
        let cj = CronJobState { reported_through: out.reported_through, ..cj };
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[], "2026-11-30T08:16:01Z", &mut jobs).await;
        assert_eq!(jobs.calls, [format!("create {}", name_at("nightly", "2026-11-30T08:15:00Z"))]);
        assert!(out.missed.is_empty(), "{:?}", out.missed);
        // Forbid with an active run: the run is skipped by the CronJob's own policy.
        let mut cj = cronjob("*/5 * * * *");
        cj.spec.concurrency_policy = ConcurrencyPolicy::Forbid;
        let running = job(&name_at("nightly", "2026-11-30T08:05:00Z"), None, Some("2026-11-30T08:05:01Z"));
        cj.status.active = vec![active(&running)];
        cj.status.last_schedule_time = Some(t("2026-11-30T08:05:00Z"));
        let out = run(&cj, std::slice::from_ref(&running), "2026-11-30T08:10:01Z", &mut FakeJobs::default()).await;
        assert_eq!(reasons(&out), ["JobAlreadyActive"]);
        let cj = CronJobState { reported_through: out.reported_through, ..cj };
        let out = run(&cj, std::slice::from_ref(&running), "2026-11-30T08:15:01Z", &mut FakeJobs::default()).await;
        assert!(out.missed.is_empty(), "{:?}", out.missed);
    })
}

#[test]
fn a_schedule_faster_than_a_minute_runs_once_a_minute_without_requests_in_between() {
    block_on(async {
        let mut cj = cronjob("@every 10s");
        cj.status.last_schedule_time = Some(t("2026-11-30T08:05:00Z"));
        let mut jobs = FakeJobs::default();
        let out = run(&cj, &[], "2026-11-30T08:05:10.2Z", &mut jobs).await;
        assert!(jobs.calls.is_empty(), "08:05:10 would reuse the Job name of 08:05:00");
        assert!(!out.status_changed && out.missed.is_empty() && out.events.is_empty());
        assert_eq!(out.requeue_at, Some(t("2026-11-30T08:06:00.1Z")), "back when the minute turns");
        // A sync later in the minute (a Job changed) does nothing either.
        let cj = CronJobState { reported_through: out.reported_through, ..cj };
        let out = run(&cj, &[], "2026-11-30T08:05:41Z", &mut jobs).await;
        assert!(jobs.calls.is_empty() && out.missed.is_empty());
        let cj = CronJobState { reported_through: out.reported_through, ..cj };
        let out = run(&cj, &[], "2026-11-30T08:06:00.1Z", &mut jobs).await;
        assert_eq!(jobs.calls, [format!("create {}", name_at("nightly", "2026-11-30T08:06:00Z"))]);
        assert!(out.created.is_some());
        assert!(out.missed.is_empty() && out.events.iter().all(|e| e.reason != "MissSchedule"), "not missed: {out:?}");
    })
}
