//! Daylight saving under the default policy (cron's), against golden vectors from an
//! independent implementation (scripts/dst_golden.py: a minute-by-minute walk with Python's
//! zoneinfo), the examples under both policies, and properties over many zones.

use std::collections::{BTreeMap, BTreeSet};

use cronshard_types::{CronJobSchedule, DstPolicy, Timestamp, Zone};
use jiff::SignedDuration;
use proptest::prelude::*;
use serde::Deserialize;

#[derive(Deserialize)]
struct Golden {
    policy: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    why: String,
    schedule: String,
    time_zone: Option<String>,
    after: Timestamp,
    expected: Vec<Timestamp>,
}

fn fire_times(cronjob: &CronJobSchedule, after: Timestamp, count: usize) -> Vec<Timestamp> {
    cronjob.schedule().iter_after(after).take(count).collect()
}

fn formatted(cronjob: &CronJobSchedule, after: &str, count: usize) -> Vec<String> {
    let after: Timestamp = after.parse().expect("time");
    fire_times(cronjob, after, count).into_iter().map(|t| cronjob.scheduled_timestamp(t)).collect()
}

#[test]
fn cron_policy_matches_the_independent_implementation() {
    let golden: Golden = serde_json::from_str(include_str!("golden/dst.json")).expect("golden json");
    assert_eq!(golden.policy, "cron");
    for case in golden.cases {
        let cronjob = CronJobSchedule::new(&case.schedule, case.time_zone.as_deref()).expect("valid");
        assert_eq!(cronjob.schedule().dst_policy(), DstPolicy::Cron, "the default");
        let actual = fire_times(&cronjob, case.after, case.expected.len());
        assert_eq!(
            actual, case.expected,
            "{} ({:?} in {:?} after {})",
            case.why, case.schedule, case.time_zone, case.after
        );
    }
}

#[test]
fn a_nightly_job_runs_once_when_clocks_go_back_and_right_after_the_gap_when_they_go_forward() {
    let ny = Some("America/New_York");
    let back = CronJobSchedule::new("30 1 * * *", ny).expect("valid");
    assert_eq!(formatted(&back, "2026-10-31T12:00:00Z", 2), ["2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"]);
    let forward = CronJobSchedule::new("30 2 * * *", ny).expect("valid");
    assert_eq!(
        formatted(&forward, "2026-03-07T12:00:00Z", 2),
        ["2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"]
    );
}

#[test]
fn upstream_policy_keeps_robfigs_answers() {
    let ny = Some("America/New_York");
    let back = CronJobSchedule::new("30 1 * * *", ny).expect("valid").with_dst_policy(DstPolicy::Upstream);
    assert_eq!(formatted(&back, "2026-10-31T12:00:00Z", 2), ["2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00"]);
    let forward = CronJobSchedule::new("30 2 * * *", ny).expect("valid").with_dst_policy(DstPolicy::Upstream);
    assert_eq!(formatted(&forward, "2026-03-07T12:00:00Z", 1), ["2026-03-09T02:30:00-04:00"]);
    // robfig's own test: a yearly run in the gap next fires a year later.
    let yearly = CronJobSchedule::new("30 2 11 3 *", ny).expect("valid").with_dst_policy(DstPolicy::Upstream);
    assert_eq!(formatted(&yearly, "2012-03-11T05:00:00Z", 1), ["2013-03-11T02:30:00-04:00"]);
    let yearly = CronJobSchedule::new("30 2 11 3 *", ny).expect("valid");
    assert_eq!(formatted(&yearly, "2012-03-11T05:00:00Z", 1), ["2012-03-11T03:00:00-04:00"], "cron: that very day");
}

#[test]
fn the_run_due_in_a_gap_is_the_gaps_end_for_due_and_its_name() {
    let cronjob = CronJobSchedule::new("30 2 * * *", Some("America/New_York")).expect("valid");
    let t = |s: &str| s.parse::<Timestamp>().expect("time");
    let due = cronjob.due(t("2026-03-07T07:30:00Z"), t("2026-03-08T07:00:30Z"), None).expect("due");
    assert_eq!(due.due, Some(t("2026-03-08T07:00:00Z")));
    assert_eq!(cronjob.scheduled_timestamp(t("2026-03-08T07:00:00Z")), "2026-03-08T03:00:00-04:00");
    assert_eq!(cronshard_types::cronjob::job_name("nightly", t("2026-03-08T07:00:00Z")), "nightly-29549220");
}

/// Zones with daylight saving on both hemispheres, with 30-minute and one-hour shifts.
const ZONES: &[&str] = &[
    "America/New_York",
    "America/Santiago",
    "Europe/London",
    "Europe/Berlin",
    "Australia/Sydney",
    "Australia/Lord_Howe",
    "America/Havana",
    "Pacific/Auckland",
];

fn restricted_hours() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u8..24).prop_map(|h| h.to_string()),
        (0u8..22, 1u8..3).prop_map(|(h, n)| format!("{h}-{}", h + n)),
        (0u8..12, 12u8..24).prop_map(|(a, b)| format!("{a},{b}")),
        (2u8..5).prop_map(|n| format!("*/{n}")),
    ]
}

fn minutes() -> impl Strategy<Value = String> {
    prop_oneof![(0u8..60).prop_map(|m| m.to_string()), Just("0,30".to_owned()), Just("*/15".to_owned())]
}

fn start() -> impl Strategy<Value = Timestamp> {
    (1_767_225_600i64..1_893_456_000).prop_map(|s| Timestamp::from_second(s).expect("in range"))
}

fn local_wall(zone: &Zone, t: Timestamp) -> String {
    zone.time_zone().to_datetime(t).to_string()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, ..ProptestConfig::default() })]

    /// Under the default, no wall-clock time of an hour-restricted schedule fires twice.
    #[test]
    fn no_wall_clock_time_fires_twice(minute in minutes(), hour in restricted_hours(), zone in 0..ZONES.len(), from in start()) {
        let expr = format!("{minute} {hour} * * *");
        let cronjob = CronJobSchedule::new(&expr, Some(ZONES[zone])).expect("valid");
        let zone = Zone::load(ZONES[zone]).expect("zone");
        let until = from.checked_add(SignedDuration::from_hours(24 * 400)).expect("in range");
        let mut seen = BTreeSet::new();
        for t in cronjob.schedule().iter_after(from).take_while(|t| *t < until) {
            prop_assert!(seen.insert(local_wall(&zone, t)), "{} in {}: {} fires twice", expr, zone, local_wall(&zone, t));
        }
    }

    /// Under the default, no day loses the run of a daily schedule to a transition of at most
    /// three hours (every zone here shifts by an hour or half an hour).
    #[test]
    fn no_day_loses_its_daily_run(minute in 0u8..60, hour in 0u8..24, zone in 0..ZONES.len(), from in start()) {
        let expr = format!("{minute} {hour} * * *");
        let cronjob = CronJobSchedule::new(&expr, Some(ZONES[zone])).expect("valid");
        let tz = Zone::load(ZONES[zone]).expect("zone");
        let until = from.checked_add(SignedDuration::from_hours(24 * 400)).expect("in range");
        let mut per_day: BTreeMap<jiff::civil::Date, usize> = BTreeMap::new();
        for t in cronjob.schedule().iter_after(from).take_while(|t| *t < until) {
            *per_day.entry(tz.time_zone().to_datetime(t).date()).or_default() += 1;
        }
        let first = tz.time_zone().to_datetime(from).date().tomorrow().expect("date");
        let last = tz.time_zone().to_datetime(until).date().yesterday().expect("date");
        let mut day = first;
        while day < last {
            prop_assert_eq!(per_day.get(&day).copied().unwrap_or(0), 1, "{} in {} on {}", expr, tz, day);
            day = day.tomorrow().expect("date");
        }
    }
}
