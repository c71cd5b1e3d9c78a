//! Golden vectors from Kubernetes' pkg/controller/cronjob/utils_test.go, as extracted into
//! tests/golden/kubernetes.json: the in-tree controller's answers for due times, requeue
//! delays, Job names and the scheduled-timestamp annotation.

use cronshard_types::cronjob::job_name;
use cronshard_types::{CronJobSchedule, DstPolicy, Error, Timestamp};
use serde::Deserialize;

#[derive(Deserialize)]
struct MostRecent {
    source: String,
    schedule: String,
    time_zone: Option<String>,
    creation: Timestamp,
    last_schedule: Option<Timestamp>,
    starting_deadline_seconds: Option<i64>,
    include_starting_deadline: bool,
    now: Timestamp,
    expected_earliest: Option<Timestamp>,
    expected_most_recent: Option<Timestamp>,
    expected_too_many_missed: Option<bool>,
    expected_error: bool,
}

#[derive(Deserialize)]
struct Duration {
    source: String,
    schedule: String,
    time_zone: Option<String>,
    creation: Timestamp,
    last_schedule: Option<Timestamp>,
    now: Timestamp,
    expected_duration_ms: i64,
}

#[derive(Deserialize)]
struct NextTime {
    source: String,
    schedule: String,
    time_zone: Option<String>,
    creation: Timestamp,
    last_schedule: Option<Timestamp>,
    starting_deadline_seconds: Option<i64>,
    now: Timestamp,
    expected: Option<Timestamp>,
    expected_error: bool,
}

#[derive(Deserialize)]
struct JobName {
    source: String,
    cronjob_name: String,
    scheduled: Timestamp,
    expected: String,
}

#[derive(Deserialize)]
struct Annotation {
    source: String,
    time_zone: Option<String>,
    scheduled: Timestamp,
    expected: String,
}

#[derive(Deserialize)]
struct Golden {
    most_recent: Vec<MostRecent>,
    next_schedule_duration: Vec<Duration>,
    next_schedule_time: Vec<NextTime>,
    job_name: Vec<JobName>,
    scheduled_annotation: Vec<Annotation>,
}

fn golden() -> Golden {
    serde_json::from_str(include_str!("golden/kubernetes.json")).expect("golden json")
}

/// Where upstream's estimate is wrong, cronshard gives the exact answer (a FIX in
/// docs/design.md, "Deliberate differences from upstream"). Each entry: case, cronshard's answer, why.
const FIXED_UPSTREAM_BUGS: &[(&str, Option<&str>, &str)] = &[(
    "utils_test.go TestMostRecentScheduleTime/another complex schedule",
    Some("2016-05-20T12:30:00Z"),
    "30 10,11,12 * * 1-5 fired Fri 10:30, 11:30 and 12:30 before now (Fri 16:30); upstream assumes a \
     uniform 1h gap, starts its walk at 15:30 and reports nothing due",
)];

fn schedule(schedule: &str, time_zone: Option<&str>) -> Result<CronJobSchedule, Error> {
    // Upstream's table: upstream's behaviour around DST.
    CronJobSchedule::new(schedule, time_zone).map(|s| s.with_dst_policy(DstPolicy::Upstream))
}

#[test]
fn most_recent_schedule_time() {
    let cases = golden().most_recent;
    assert_eq!(cases.len(), 13);
    for case in cases {
        let earliest = case.last_schedule.unwrap_or(case.creation);
        let deadline = case.starting_deadline_seconds.filter(|_| case.include_starting_deadline);
        let result =
            schedule(&case.schedule, case.time_zone.as_deref()).and_then(|s| s.due(earliest, case.now, deadline));
        if case.expected_error {
            assert!(matches!(result, Err(Error::NoFireTime { .. })), "{}: {result:?}", case.source);
            continue;
        }
        let due = result.unwrap_or_else(|e| panic!("{}: {e}", case.source));
        let expected = match FIXED_UPSTREAM_BUGS.iter().find(|(source, ..)| *source == case.source) {
            Some((_, ours, _)) => ours.map(|t| t.parse().expect("timestamp")),
            None => case.expected_most_recent,
        };
        assert_eq!(due.due, expected, "{}", case.source);
        if let Some(earliest) = case.expected_earliest {
            assert_eq!(due.earliest, earliest, "{}", case.source);
        }
        if let Some(many) = case.expected_too_many_missed {
            assert_eq!(due.too_many_missed, many, "{}", case.source);
        }
    }
}

#[test]
fn next_schedule_time_duration() {
    let cases = golden().next_schedule_duration;
    assert_eq!(cases.len(), 4);
    for case in cases {
        let s = schedule(&case.schedule, case.time_zone.as_deref()).expect("schedule");
        let at = s.requeue_at(case.last_schedule.unwrap_or(case.creation), case.now).expect("requeue");
        let ms = at.duration_since(case.now).as_millis();
        assert_eq!(ms, i128::from(case.expected_duration_ms), "{}", case.source);
    }
}

#[test]
fn next_schedule_time() {
    let cases = golden().next_schedule_time;
    assert_eq!(cases.len(), 8);
    for case in cases {
        let earliest = case.last_schedule.unwrap_or(case.creation);
        let result = schedule(&case.schedule, case.time_zone.as_deref())
            .and_then(|s| s.due(earliest, case.now, case.starting_deadline_seconds));
        match result {
            Err(err) => assert!(case.expected_error, "{}: {err}", case.source),
            Ok(due) => {
                assert!(!case.expected_error, "{}: expected an error", case.source);
                assert_eq!(due.due, case.expected, "{}", case.source);
            }
        }
    }
}

#[test]
fn job_names_and_annotations() {
    let golden = golden();
    for case in golden.job_name {
        assert_eq!(job_name(&case.cronjob_name, case.scheduled), case.expected, "{}", case.source);
    }
    for case in golden.scheduled_annotation {
        let s = schedule("0 * * * *", case.time_zone.as_deref()).expect("schedule");
        assert_eq!(s.scheduled_timestamp(case.scheduled), case.expected, "{}", case.source);
    }
}
