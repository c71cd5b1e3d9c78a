//! The NEXT column (schedule, `@every`, spread, daylight saving), the bucket and its holder, the
//! ages and the table's layout.

use super::*;
use serde_json::json;

fn t(s: &str) -> Timestamp {
    s.parse().expect("timestamp")
}

fn cronjob(spec: serde_json::Value, status: serde_json::Value, annotations: serde_json::Value) -> CronJob {
    let mut spec_json =
        json!({"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}});
    for (k, v) in spec.as_object().expect("spec object") {
        spec_json[k] = v.clone();
    }
    serde_json::from_value(json!({
        "metadata": {"name": "report", "namespace": "team-a", "uid": "9b1c2a3e-0000-4000-8000-000000000001",
            "creationTimestamp": "2026-03-01T00:00:00Z", "annotations": annotations},
        "spec": spec_json,
        "status": status,
    }))
    .expect("cronjob")
}

fn at(now: &str) -> (Timestamp, BTreeMap<String, String>) {
    (t(now), BTreeMap::new())
}

fn clock<'a>(now: Timestamp, spreads: &'a BTreeMap<String, String>, policy: DstPolicy) -> Clock<'a> {
    Clock { now, policy, namespace_spreads: spreads }
}

#[test]
fn next_is_the_first_scheduled_time_after_now() {
    let (now, spreads) = at("2026-03-02T10:00:20Z");
    let cj = cronjob(json!({}), json!({"lastScheduleTime": "2026-03-02T10:00:00Z"}), json!({}));
    let r = row(&cj, &clock(now, &spreads, DstPolicy::Cron), &Placement::default());
    assert_eq!((r.next.as_str(), r.next_at.as_str()), ("in 40s", "2026-03-02T10:01:00Z"));
    assert_eq!((r.last_schedule.as_str(), r.age.as_str()), ("20s", "34h"));
}

#[test]
fn an_every_schedule_counts_from_its_last_run() {
    let (now, spreads) = at("2026-03-02T10:00:00Z");
    let cj = cronjob(json!({"schedule": "@every 7m"}), json!({"lastScheduleTime": "2026-03-02T09:58:00Z"}), json!({}));
    let r = row(&cj, &clock(now, &spreads, DstPolicy::Cron), &Placement::default());
    assert_eq!(r.next_at, "2026-03-02T10:05:00Z");
}

#[test]
fn a_spread_moves_the_start_by_the_cronjobs_own_offset() {
    let (now, mut spreads) = at("2026-03-02T10:00:05Z");
    let offset = spread::offset("team-a", "report", 1800);
    assert!(offset > 5, "the golden offset is past the first seconds of the hour ({offset})");
    let hourly = json!({"schedule": "0 * * * *"});
    let last = json!({"lastScheduleTime": "2026-03-02T09:00:00Z"});
    // The run due at 10:00 has not started yet: it starts at 10:00 + offset.
    let own = cronjob(hourly.clone(), last.clone(), json!({"cronshard.io/spread": "30m"}));
    let r = row(&own, &clock(now, &spreads, DstPolicy::Cron), &Placement::default());
    let expected = t("2026-03-02T10:00:00Z").checked_add(jiff::SignedDuration::from_secs(offset as i64)).expect("t");
    assert_eq!(r.next_at, expected.to_string());
    // The Namespace's default applies to a CronJob without its own; "0" turns it off.
    spreads.insert("team-a".into(), "30m".into());
    let plain = cronjob(hourly.clone(), last.clone(), json!({}));
    assert_eq!(row(&plain, &clock(now, &spreads, DstPolicy::Cron), &Placement::default()).next_at, r.next_at);
    let off = cronjob(hourly, last, json!({"cronshard.io/spread": "0"}));
    assert_eq!(
        row(&off, &clock(now, &spreads, DstPolicy::Cron), &Placement::default()).next_at,
        "2026-03-02T11:00:00Z"
    );
}

#[test]
fn a_time_skipped_by_daylight_saving_follows_the_policy() {
    // New York springs forward at 02:00 on 2026-03-08: 02:30 does not exist that day.
    let (now, spreads) = at("2026-03-08T05:00:00Z");
    let cj = cronjob(
        json!({"schedule": "30 2 * * *", "timeZone": "America/New_York"}),
        json!({"lastScheduleTime": "2026-03-07T07:30:00Z"}),
        json!({}),
    );
    let cron = row(&cj, &clock(now, &spreads, DstPolicy::Cron), &Placement::default());
    assert_eq!(cron.next_at, "2026-03-08T03:00:00-04:00", "cron runs it right after the gap");
    let upstream = row(&cj, &clock(now, &spreads, DstPolicy::Upstream), &Placement::default());
    assert_eq!(upstream.next_at, "2026-03-09T02:30:00-04:00", "upstream skips the day");
    assert_eq!(cron.time_zone, "America/New_York");
}

#[test]
fn schedules_that_cannot_run_say_so() {
    let (now, spreads) = at("2026-03-02T10:00:00Z");
    let bad = cronjob(json!({"schedule": "61 * * * *"}), json!({}), json!({}));
    assert_eq!(row(&bad, &clock(now, &spreads, DstPolicy::Cron), &Placement::default()).next, "<invalid schedule>");
    let never = cronjob(json!({"schedule": "0 0 30 2 *"}), json!({}), json!({}));
    assert_eq!(row(&never, &clock(now, &spreads, DstPolicy::Cron), &Placement::default()).next, "<never>");
}

#[test]
fn the_bucket_is_the_recorded_functions_and_the_replica_its_holder() {
    let (now, spreads) = at("2026-03-02T10:00:00Z");
    let cj = cronjob(json!({"suspend": true}), json!({"active": [{"name": "a"}, {"name": "b"}]}), json!({}));
    let none = row(&cj, &clock(now, &spreads, DstPolicy::Cron), &Placement::default());
    assert_eq!((none.bucket.as_str(), none.replica.as_str(), none.last_schedule.as_str()), (NONE, NONE, NONE));
    assert_eq!((none.suspend.as_str(), none.active), ("True", 2));
    let count = NonZeroU32::new(4).expect("count");
    let bucket = cronshard_types::bucket_of_uid("9b1c2a3e-0000-4000-8000-000000000001", count);
    let held =
        Placement { layout: Some((BucketFunction::Uid, count)), holders: BTreeMap::from([(bucket, "r-1".into())]) };
    let r = row(&cj, &clock(now, &spreads, DstPolicy::Cron), &held);
    assert_eq!((r.bucket, r.replica.as_str()), (bucket.to_string(), "r-1"));
    let unheld = Placement { layout: Some((BucketFunction::Name, count)), holders: BTreeMap::new() };
    let r = row(&cj, &clock(now, &spreads, DstPolicy::Cron), &unheld);
    assert_eq!(r.bucket, cronshard_types::bucket_of_name("team-a", "report", count).to_string());
    assert_eq!(r.replica, NONE);
}

#[test]
fn ages_read_like_kubectls() {
    let cases = [(0, "0s"), (119, "119s"), (130, "2m10s"), (600, "10m"), (3 * 3600 + 60, "3h1m"), (9 * 3600, "9h")];
    for (secs, text) in cases.into_iter().chain([(50 * 3600, "2d2h"), (10 * 86_400, "10d"), (800 * 86_400, "2y")]) {
        assert_eq!(human(jiff::SignedDuration::from_secs(secs)), text, "{secs} s");
    }
}

#[test]
fn the_table_aligns_its_columns() {
    let (now, spreads) = at("2026-03-02T10:00:20Z");
    let cj = cronjob(json!({}), json!({"lastScheduleTime": "2026-03-02T10:00:00Z"}), json!({}));
    let r = row(&cj, &clock(now, &spreads, DstPolicy::Cron), &Placement::default());
    let text = render(std::slice::from_ref(&r), true, false);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0].starts_with("NAMESPACE   NAME     SCHEDULE    TIMEZONE   SUSPEND   ACTIVE   LAST SCHEDULE   NEXT")
    );
    assert_eq!(lines[0].find("NEXT"), lines[1].find("in 40s"));
    assert!(!render(std::slice::from_ref(&r), false, false).contains("NAMESPACE"));
    assert!(render(&[r], false, true).contains("NEXT AT"));
}
