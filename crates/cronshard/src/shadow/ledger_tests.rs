//! One test per rule of the ledger, time passed in.

use std::collections::HashSet;

use cronshard_types::CronJobSchedule;

use super::*;
use crate::shadow::report::Report;
use crate::shadow::views::created_estimate;

const HOUR: i64 = 1_800_000_000; // an hour boundary

fn at(s: f64) -> Timestamp {
    Timestamp::from_millisecond(((HOUR as f64 + s) * 1000.0) as i64).expect("ts")
}

fn settings() -> Settings {
    Settings { started: at(-30.0), until: None, late_after_s: 10.0, grace_s: 5.0, herd_min_runs: 2 }
}

fn cronjob(name: &str, schedule: &str) -> CronJobView {
    CronJobView {
        namespace: "n".into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        creation: at(-3600.0),
        schedule: Some(CronJobSchedule::new(schedule, None).expect("schedule")),
        suspend: false,
        forbid: false,
        starting_deadline_s: None,
        own_spread: None,
        spread_offset_s: 0,
        last_schedule_time: None,
    }
}

/// A Job of `cj` for the run scheduled at `scheduled` (seconds from HOUR), created at `created`.
fn job(cj: &CronJobView, scheduled: f64, created: f64) -> JobView {
    JobView {
        owner_uid: cj.uid.clone(),
        uid: format!("{}-{scheduled}-{created}", cj.name),
        name: cronshard_types::cronjob::job_name(&cj.name, at(scheduled)),
        scheduled: Some(at(scheduled)),
        created_s: HOUR as f64 + created,
        ended_s: None,
        started: false,
    }
}

fn verdicts(judged: &[Judged]) -> Vec<Verdict> {
    judged.iter().map(|j| j.verdict).collect()
}

fn ledger_with(cjs: &[&CronJobView]) -> Ledger {
    let mut l = Ledger::new(settings());
    for cj in cjs {
        assert!(l.apply_cronjob((*cj).clone(), at(-1.0)).is_empty());
    }
    l
}

#[test]
fn a_run_is_on_time_within_late_after_and_late_beyond_it() {
    let hourly = cronjob("h", "0 * * * *");
    let mut l = ledger_with(&[&hourly]);
    let j = l.apply_job(job(&hourly, 0.0, 2.5), at(2.6));
    assert_eq!(j, vec![Judged { verdict: Verdict::OnTime, skew_s: Some(2.5) }]);
    let j = l.apply_job(job(&hourly, 3600.0, 3612.0), at(3612.1));
    assert_eq!(j, vec![Judged { verdict: Verdict::Late, skew_s: Some(12.0) }]);
    assert_eq!(l.tally().count(Verdict::OnTime) + l.tally().count(Verdict::Late), 2);
}

#[test]
fn a_runs_start_delay_counts_from_its_due_time_to_the_first_ready_pod_once() {
    let hourly = cronjob("h", "0 * * * *");
    let mut l = ledger_with(&[&hourly]);
    let created = job(&hourly, 0.0, 0.5);
    l.apply_job(created.clone(), at(0.6));
    assert!(l.take_start_delays().is_empty(), "no pod ready yet");
    let ready = JobView { started: true, ..created };
    l.apply_job(ready.clone(), at(7.0));
    assert_eq!(l.take_start_delays(), vec![7.0]);
    l.apply_job(ready, at(9.0));
    assert!(l.take_start_delays().is_empty(), "counted once");
    // A duplicate's start is not the run's; a Job seen started at once counts at once.
    l.apply_job(JobView { started: true, uid: "dup".into(), ..job(&hourly, 0.0, 1.0) }, at(8.0));
    assert!(l.take_start_delays().is_empty());
    l.apply_job(JobView { started: true, ..job(&hourly, 3600.0, 3601.0) }, at(3604.0));
    assert_eq!(l.take_start_delays(), vec![4.0]);
}

#[test]
fn a_run_without_a_job_is_pending_until_the_next_run_and_grace_then_missed() {
    let every = cronjob("e", "* * * * *");
    let mut l = ledger_with(&[&every]);
    assert!(l.tick(at(30.0)).is_empty());
    assert_eq!(l.pending(), 1, "the :00 run is due and has no Job");
    assert!(l.tick(at(64.0)).is_empty(), "the next run at 60 s plus 5 s of grace has not passed");
    assert_eq!(verdicts(&l.tick(at(65.5))), vec![Verdict::Missed]);
    assert_eq!(l.pending(), 1, "the :01 run waits now");
}

#[test]
fn starting_deadline_seconds_ends_a_run_before_the_next_one() {
    let mut hourly = cronjob("h", "0 * * * *");
    hourly.starting_deadline_s = Some(30);
    let mut l = ledger_with(&[&hourly]);
    assert!(l.tick(at(34.0)).is_empty());
    assert_eq!(verdicts(&l.tick(at(36.0))), vec![Verdict::Missed]);
}

#[test]
fn a_second_job_for_one_time_is_a_duplicate() {
    let hourly = cronjob("h", "0 * * * *");
    let mut l = ledger_with(&[&hourly]);
    l.apply_job(job(&hourly, 0.0, 1.0), at(1.0));
    let mut second = job(&hourly, 0.0, 4.0);
    second.name = "h-other".into();
    assert_eq!(verdicts(&l.apply_job(second, at(4.0))), vec![Verdict::Duplicate]);
    assert!(l.apply_job(job(&hourly, 0.0, 1.0), at(9.0)).is_empty(), "an update of a Job is not a new Job");
}

#[test]
fn a_job_the_semantics_forbid_is_unexpected() {
    let hourly = cronjob("h", "0 * * * *");
    let mut suspended = cronjob("s", "0 * * * *");
    suspended.suspend = true;
    let mut l = ledger_with(&[&hourly, &suspended]);
    assert_eq!(
        verdicts(&l.apply_job(job(&hourly, 60.0, 61.0), at(61.0))),
        vec![Verdict::Unexpected],
        "not in the schedule"
    );
    assert_eq!(verdicts(&l.apply_job(job(&suspended, 0.0, 1.0), at(1.0))), vec![Verdict::Unexpected], "suspended");
    // Missed at the next run plus grace, then a Job after all: started past its deadline.
    assert_eq!(verdicts(&l.tick(at(3606.0))), vec![Verdict::Missed]);
    assert_eq!(verdicts(&l.apply_job(job(&hourly, 0.0, 3606.0), at(3606.0))), vec![Verdict::Unexpected]);
}

#[test]
fn forbid_skips_a_run_while_one_is_active_and_a_job_then_is_unexpected() {
    let mut forbid = cronjob("f", "* * * * *");
    forbid.forbid = true;
    let mut l = ledger_with(&[&forbid]);
    assert_eq!(verdicts(&l.apply_job(job(&forbid, 0.0, 0.5), at(0.5))), vec![Verdict::OnTime]);
    // Still running at :01: that run is rightly skipped.
    assert!(l.tick(at(61.0)).is_empty());
    assert_eq!(verdicts(&l.tick(at(126.0))), vec![Verdict::Skipped]);
    // A Job at :03 while the first still runs breaks Forbid.
    assert_eq!(verdicts(&l.apply_job(job(&forbid, 180.0, 180.5), at(180.5))), vec![Verdict::Unexpected]);
    // Once the first ended, a run is expected again.
    let mut ended = job(&forbid, 0.0, 0.5);
    ended.ended_s = Some(HOUR as f64 + 200.0);
    l.apply_job(ended, at(200.0));
    assert_eq!(
        verdicts(&l.apply_job(job(&forbid, 240.0, 241.0), at(241.0))),
        vec![Verdict::Unexpected],
        "the :03 Job still runs"
    );
    l.delete_job(&forbid.uid, &job(&forbid, 180.0, 180.5).uid, at(250.0));
    l.delete_job(&forbid.uid, &job(&forbid, 240.0, 241.0).uid, at(250.0));
    assert_eq!(verdicts(&l.apply_job(job(&forbid, 300.0, 300.5), at(300.5))), vec![Verdict::OnTime]);
}

#[test]
fn runs_before_shadow_mode_started_or_after_until_are_not_judged() {
    let hourly = cronjob("h", "0 * * * *");
    let mut s = settings();
    s.until = Some(at(1800.0));
    let mut l = Ledger::new(s);
    l.apply_cronjob(hourly.clone(), at(-1.0));
    assert!(l.apply_job(job(&hourly, -3600.0, -3599.0), at(0.0)).is_empty(), "scheduled before the start");
    assert!(l.apply_job(job(&hourly, 3600.0, 3601.0), at(3601.0)).is_empty(), "scheduled after until");
    assert_eq!(verdicts(&l.tick(at(7300.0))), vec![Verdict::Missed], "only the :00 run, before until, is judged");
}

#[test]
fn a_spread_run_is_due_at_its_offset() {
    let mut spread = cronjob("s", "0 * * * *");
    spread.spread_offset_s = 40;
    let mut l = ledger_with(&[&spread]);
    assert!(l.tick(at(39.0)).is_empty());
    assert_eq!(l.pending(), 0, "not due before T + offset");
    let j = l.apply_job(job(&spread, 0.0, 41.5), at(41.5));
    assert_eq!(j, vec![Judged { verdict: Verdict::OnTime, skew_s: Some(1.5) }]);
    let early = l.apply_job(job(&spread, 3600.0, 3600.2), at(3600.2));
    assert_eq!(
        early,
        vec![Judged { verdict: Verdict::OnTime, skew_s: Some(0.0) }],
        "a controller without spread is not late"
    );
}

#[test]
fn a_job_without_the_annotation_is_matched_by_its_names_minute() {
    let every90 = cronjob("e", "@every 90s");
    let mut l = ledger_with(&[&every90]);
    let mut j = job(&every90, -3600.0 + 5490.0, 1890.5);
    j.scheduled = None;
    j.name = cronshard_types::cronjob::job_name("e", at(1890.0));
    let judged = l.apply_job(j, at(1890.5));
    assert_eq!(verdicts(&judged), vec![Verdict::OnTime], "@every 90s from creation at -3600 fires at 1890");
}

#[test]
fn a_job_that_comes_before_its_cronjob_is_matched_when_the_cronjob_comes() {
    let hourly = cronjob("h", "0 * * * *");
    let mut l = Ledger::new(settings());
    assert!(l.apply_job(job(&hourly, 0.0, 1.0), at(1.0)).is_empty());
    assert_eq!(verdicts(&l.apply_cronjob(hourly, at(1.1))), vec![Verdict::OnTime]);
}

#[test]
fn a_cronjob_missing_from_a_fresh_list_is_forgotten() {
    let (a, b) = (cronjob("a", "0 * * * *"), cronjob("b", "0 * * * *"));
    let mut l = ledger_with(&[&a, &b]);
    l.retain_cronjobs(&HashSet::from([a.uid.clone()]));
    assert_eq!(l.cronjobs(), 1);
    l.tick(at(1.0));
    assert_eq!(l.pending(), 1);
}

#[test]
fn the_creation_estimate_is_within_half_a_second() {
    assert_eq!(created_estimate(100.0, 100.2), 100.1, "a prompt watch narrows it");
    assert_eq!(created_estimate(100.0, 130.0), 100.5, "a late one leaves the second");
    assert_eq!(created_estimate(100.0, 99.0), 100.0, "a clock behind the server's");
}

#[test]
fn a_herd_drains_when_its_last_run_has_its_job() {
    let cjs: Vec<CronJobView> = (0..3).map(|i| cronjob(&format!("h{i}"), "0 * * * *")).collect();
    let mut l = ledger_with(&cjs.iter().collect::<Vec<_>>());
    l.tick(at(0.5));
    l.apply_job(job(&cjs[0], 0.0, 1.0), at(1.0));
    l.apply_job(job(&cjs[1], 0.0, 2.0), at(2.0));
    let report = Report::new(&l, at(3.0), None);
    assert_eq!((report.herds[0].runs_due, report.herds[0].created, report.herds[0].drain_s), (3, 2, None));
    l.apply_job(job(&cjs[2], 0.0, 4.25), at(4.25));
    let report = Report::new(&l, at(5.0), None);
    assert_eq!(report.herds[0].drain_s, Some(4.25));
    assert_eq!((report.totals["created"], report.totals["pending"]), (3, 0));
    assert!((report.skew_s.p50 - 2.0).abs() < 0.01 && (report.skew_s.max - 4.25).abs() < 0.01, "{:?}", report.skew_s);
}

#[test]
fn a_namespace_default_moves_the_next_runs_of_cronjobs_without_a_spread_of_their_own() {
    let plain = cronjob("plain", "0 * * * *");
    let mut own = cronjob("own", "0 * * * *");
    own.own_spread = Some("0".into());
    let mut l = ledger_with(&[&plain, &own]);
    l.apply_namespace_spread("n", Some("30m"), at(-1.0));
    let offset = cronshard_types::spread::offset("n", "plain", 1800) as f64;
    assert!(offset > 0.0, "pinned offset of n/plain in 30 min");
    let j = l.apply_job(job(&plain, 0.0, offset + 1.0), at(offset + 1.0));
    assert_eq!(j, vec![Judged { verdict: Verdict::OnTime, skew_s: Some(1.0) }], "due at T + offset");
    let j = l.apply_job(job(&own, 0.0, 12.0), at(12.0));
    assert_eq!(j, vec![Judged { verdict: Verdict::Late, skew_s: Some(12.0) }], "its own \"0\" wins");
}
