//! Golden vectors from robfig/cron v3's own test suite (spec_test.go, parser_test.go), as
//! extracted into tests/golden/robfig.json: inputs and expected outputs only.

use cronshard_types::schedule::Kind;
use cronshard_types::{DstPolicy, Field, Schedule, Timestamp, Zone};
use serde::Deserialize;

#[derive(Deserialize)]
struct NextCase {
    source: String,
    schedule: String,
    time_zone: String,
    after: Timestamp,
    expected: Option<Timestamp>,
}

#[derive(Deserialize)]
struct ActivationCase {
    source: String,
    schedule: String,
    time_zone: String,
    time: Timestamp,
    expected: bool,
}

#[derive(Deserialize)]
struct StandardCase {
    source: String,
    input: String,
    ok: bool,
    error: Option<String>,
    minute: Vec<u8>,
    hour: Vec<u8>,
    dom: Vec<u8>,
    month: Vec<u8>,
    dow: Vec<u8>,
    dom_star: bool,
    dow_star: bool,
    every_seconds: Option<i64>,
    time_zone: Option<String>,
}

#[derive(Deserialize)]
struct Golden {
    next: Vec<NextCase>,
    activation: Vec<ActivationCase>,
    standard: Vec<StandardCase>,
}

fn golden() -> Golden {
    serde_json::from_str(include_str!("golden/robfig.json")).expect("golden json")
}

fn parse(schedule: &str, zone: &str) -> Schedule {
    // robfig's own vectors: its behaviour around DST, bit for bit.
    Schedule::parse(schedule, &Zone::load(zone).expect("zone")).expect("schedule").with_dst_policy(DstPolicy::Upstream)
}

#[test]
fn next_matches_robfig() {
    let cases = golden().next;
    assert_eq!(cases.len(), 52);
    for case in cases {
        let actual = parse(&case.schedule, &case.time_zone).next_after(case.after);
        assert_eq!(
            actual, case.expected,
            "{}: {} in {} after {}",
            case.source, case.schedule, case.time_zone, case.after
        );
    }
}

#[test]
fn activation_matches_robfig() {
    let cases = golden().activation;
    assert_eq!(cases.len(), 29);
    for case in cases {
        // robfig's TestActivation asks whether Next(t - 1s) is t.
        let before = case.time.checked_sub(jiff::SignedDuration::from_secs(1)).expect("in range");
        let fires = parse(&case.schedule, &case.time_zone).next_after(before) == Some(case.time);
        assert_eq!(fires, case.expected, "{}: {} at {}", case.source, case.schedule, case.time);
    }
}

#[test]
fn standard_parser_matches_robfig() {
    let cases = golden().standard;
    assert_eq!(cases.len(), 25);
    for case in cases {
        let result = Schedule::parse(&case.input, &Zone::utc());
        let schedule = match (case.ok, result) {
            (true, Ok(s)) => s,
            (false, Err(err)) => {
                if let Some(expected) = &case.error {
                    assert!(err.to_string().contains(expected.as_str()), "{}: {err} lacks {expected}", case.source);
                }
                continue;
            }
            (ok, got) => panic!("{}: {:?} expected ok={ok}, got {got:?}", case.source, case.input),
        };
        assert_eq!(schedule.zone().name(), case.time_zone.as_deref().unwrap_or("UTC"), "{}", case.source);
        match schedule.kind() {
            Kind::Every { seconds } => assert_eq!(Some(*seconds), case.every_seconds, "{}", case.source),
            Kind::Spec(spec) => {
                assert_eq!(case.every_seconds, None, "{}", case.source);
                let expected = [&case.minute, &case.hour, &case.dom, &case.month, &case.dow];
                for (field, values) in Field::ALL.into_iter().zip(expected) {
                    assert_eq!(&spec.values(field), values, "{}: {field}", case.source);
                }
                assert_eq!(spec.is_star(Field::DayOfMonth), case.dom_star, "{}", case.source);
                assert_eq!(spec.is_star(Field::DayOfWeek), case.dow_star, "{}", case.source);
            }
        }
    }
}
