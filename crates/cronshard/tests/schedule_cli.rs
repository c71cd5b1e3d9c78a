//! `cronshard schedule next|due` as a process: output shapes, exit codes, and agreement with
//! the library on every ported robfig and Kubernetes vector.

use std::process::{Command, Output};

use cronshard_types::{CronJobSchedule, DstPolicy, Timestamp};
use serde::Deserialize;

fn cronshard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cronshard")).args(args).output().expect("cronshard runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("utf-8")
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).expect("utf-8")
}

#[derive(Deserialize)]
struct NextCase {
    source: String,
    schedule: String,
    time_zone: String,
    after: String,
    expected: Option<Timestamp>,
}

#[derive(Deserialize)]
struct Robfig {
    next: Vec<NextCase>,
}

#[derive(Deserialize)]
struct DueCase {
    source: String,
    schedule: String,
    creation: String,
    last_schedule: Option<String>,
    starting_deadline_seconds: Option<i64>,
    now: String,
    #[serde(default = "yes")]
    include_starting_deadline: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
struct Kubernetes {
    most_recent: Vec<DueCase>,
    next_schedule_time: Vec<DueCase>,
}

#[test]
fn next_agrees_with_the_library_on_robfig_vectors() {
    let golden: Robfig =
        serde_json::from_str(include_str!("../../cronshard-types/tests/golden/robfig.json")).expect("golden");
    for case in golden.next {
        // robfig's vectors, under upstream's daylight-saving behaviour.
        let out = cronshard(&[
            "schedule",
            "next",
            &case.schedule,
            "--time-zone",
            &case.time_zone,
            "--after",
            &case.after,
            "--dst-policy",
            "upstream",
        ]);
        let library = CronJobSchedule::new(&case.schedule, Some(&case.time_zone)).expect("valid");
        match case.expected {
            Some(expected) => {
                assert_eq!(out.status.code(), Some(0), "{}: {}", case.source, stderr(&out));
                let line = library.schedule().zone().format_rfc3339(expected);
                assert_eq!(stdout(&out), format!("{line}\n"), "{}", case.source);
            }
            None => {
                assert_eq!(out.status.code(), Some(1), "{}", case.source);
                assert_eq!(stdout(&out), "", "{}", case.source);
            }
        }
    }
}

#[test]
fn due_agrees_with_the_library_on_kubernetes_vectors() {
    let golden: Kubernetes =
        serde_json::from_str(include_str!("../../cronshard-types/tests/golden/kubernetes.json")).expect("golden");
    for case in golden.most_recent.into_iter().chain(golden.next_schedule_time) {
        let earliest = case.last_schedule.clone().unwrap_or(case.creation.clone());
        let mut args = vec![
            "schedule",
            "due",
            &case.schedule,
            "--earliest",
            &earliest,
            "--now",
            &case.now,
            "--dst-policy",
            "upstream",
        ];
        let deadline = case.starting_deadline_seconds.filter(|_| case.include_starting_deadline).map(|s| s.to_string());
        if let Some(deadline) = &deadline {
            args.extend(["--starting-deadline-seconds", deadline]);
        }
        let out = cronshard(&args);
        let library =
            CronJobSchedule::new(&case.schedule, None).expect("valid").with_dst_policy(DstPolicy::Upstream).due(
                earliest.parse().expect("ts"),
                case.now.parse().expect("ts"),
                case.starting_deadline_seconds.filter(|_| case.include_starting_deadline),
            );
        match library {
            Ok(due) => {
                assert_eq!(out.status.code(), Some(0), "{}: {}", case.source, stderr(&out));
                let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
                let expected = serde_json::json!({
                    "due": due.due.map(|t| t.to_string()),
                    "too_many_missed": due.too_many_missed,
                });
                assert_eq!(json, expected, "{}", case.source);
            }
            Err(_) => {
                assert_eq!(out.status.code(), Some(1), "{}", case.source);
                assert_eq!(stdout(&out), "", "{}", case.source);
                assert_eq!(stderr(&out).lines().count(), 1, "{}", case.source);
            }
        }
    }
}

#[test]
fn next_prints_n_times_in_the_zone_offset() {
    let out = cronshard(&[
        "schedule",
        "next",
        "30 2 * * *",
        "--time-zone",
        "America/New_York",
        "--after",
        "2026-03-07T12:00:00Z",
        "-n",
        "3",
        "--dst-policy",
        "upstream",
    ]);
    assert_eq!(out.status.code(), Some(0));
    // 2026-03-08 02:30 does not exist in New York (DST starts): robfig skips that day.
    assert_eq!(stdout(&out), "2026-03-09T02:30:00-04:00\n2026-03-10T02:30:00-04:00\n2026-03-11T02:30:00-04:00\n");
}

#[test]
fn by_default_a_nightly_job_runs_once_when_clocks_go_back_and_after_the_gap_when_they_go_forward() {
    let next = |schedule: &str, after: &str, extra: &[&str]| {
        let mut args =
            vec!["schedule", "next", schedule, "--time-zone", "America/New_York", "--after", after, "-n", "2"];
        args.extend(extra);
        let out = cronshard(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };
    assert_eq!(
        next("30 1 * * *", "2026-10-31T12:00:00Z", &[]),
        "2026-11-01T01:30:00-04:00\n2026-11-02T01:30:00-05:00\n"
    );
    assert_eq!(
        next("30 2 * * *", "2026-03-07T12:00:00Z", &[]),
        "2026-03-08T03:00:00-04:00\n2026-03-09T02:30:00-04:00\n"
    );
    let upstream = ["--dst-policy", "upstream"];
    assert_eq!(
        next("30 1 * * *", "2026-10-31T12:00:00Z", &upstream),
        "2026-11-01T01:30:00-04:00\n2026-11-01T01:30:00-05:00\n",
        "upstream runs it twice"
    );
    let out = cronshard(&["schedule", "next", "* * * * *", "--dst-policy", "summer"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("give cron or upstream"), "{}", stderr(&out));
}

#[test]
fn next_defaults_to_now() {
    let before = Timestamp::now();
    let out = cronshard(&["schedule", "next", "* * * * *"]);
    assert_eq!(out.status.code(), Some(0));
    let line = stdout(&out);
    assert!(line.ends_with("Z\n"), "{line}");
    let next: Timestamp = line.trim().parse().expect("rfc3339");
    assert!(next > before && next.as_second() - before.as_second() <= 61, "{next} vs {before}");
    assert_eq!(next.as_second() % 60, 0);
}

#[test]
fn due_prints_json_with_the_deadline_applied() {
    let out = cronshard(&[
        "schedule",
        "due",
        "*/5 * * * *",
        "--earliest",
        "2026-11-29T08:00:00Z",
        "--now",
        "2026-11-30T10:03:10Z",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "{\"due\":\"2026-11-30T10:00:00Z\",\"too_many_missed\":true}\n");
    let with_deadline = cronshard(&[
        "schedule",
        "due",
        "*/5 * * * *",
        "--earliest",
        "2026-11-29T08:00:00Z",
        "--now",
        "2026-11-30T10:03:10Z",
        "--starting-deadline-seconds",
        "120",
    ]);
    assert_eq!(stdout(&with_deadline), "{\"due\":null,\"too_many_missed\":false}\n");
}

#[test]
fn invalid_input_exits_2_with_one_line() {
    let cases: &[(&[&str], &str)] = &[
        (&["schedule", "next", "61 * * * *"], "minute field \"61\""),
        (&["schedule", "next", "* * * * 7"], "day-of-week field \"7\""),
        (&["schedule", "next", "* * * *"], "expected exactly 5 fields"),
        (&["schedule", "next", "0 0 L * *"], "day-of-month field \"L\""),
        (&["schedule", "next", "@every 5 minutes"], "@every"),
        (&["schedule", "next", "@reboot"], "unrecognized descriptor"),
        (&["schedule", "next", "* * * * *", "--time-zone", "Mars/Olympus"], "Mars/Olympus"),
        (&["schedule", "next", "TZ=Nowhere/Land * * * * *"], "Nowhere/Land"),
        (
            &[
                "schedule",
                "due",
                "* * * * *",
                "--earliest",
                "2026-01-01T00:00:00Z",
                "--now",
                "2026-01-01T00:10:00Z",
                "--starting-deadline-seconds",
                "-5",
            ],
            "must not be negative",
        ),
    ];
    for (args, needle) in cases {
        let out = cronshard(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(stdout(&out), "", "{args:?}");
    }
    // Timestamps that are not RFC 3339 are usage errors (clap's exit code 2 too).
    let out = cronshard(&["schedule", "next", "* * * * *", "--after", "yesterday"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_schedule_that_never_fires_prints_nothing_and_exits_1() {
    for schedule in ["0 0 30 2 *", "0 0 31 4 *", ", * * * *"] {
        let out = cronshard(&["schedule", "next", schedule, "-n", "3"]);
        assert_eq!(out.status.code(), Some(1), "{schedule}");
        assert_eq!(stdout(&out), "", "{schedule}");
    }
}
