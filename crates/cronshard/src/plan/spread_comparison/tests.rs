//! The spread comparison: who is moved, and how a herd drains with and without it.

use serde_json::{Value, json};

use super::*;
use crate::plan::testkit::{cronjob, window};

fn in_namespace(namespace: &str, name: &str, schedule: &str) -> Value {
    let mut item = cronjob(name, schedule);
    item["metadata"]["namespace"] = json!(namespace);
    item
}

fn hourly_herd(namespace: &str, count: usize) -> Vec<Value> {
    (0..count).map(|i| in_namespace(namespace, &format!("report-{i}"), "0 * * * *")).collect()
}

fn settings(text: &str, selector: Option<&str>) -> SpreadSettings {
    SpreadSettings::new(text, selector).expect("settings")
}

#[test]
fn without_a_spread_a_herd_drains_at_the_rate() {
    let items = hourly_herd("a", 60);
    let c = compare(&items, &window("2026-12-01T00:00:00Z", 1), &settings("0", None), 10.0);
    assert_eq!(c.without, c.with, "a spread of 0 is off");
    assert_eq!(c.without.peak_due_per_s, 60);
    assert!((c.without.max_skew_s - 6.0).abs() < 1e-9, "{:?}", c.without);
    assert!((c.without.p99_skew_s - 5.94).abs() < 1e-6, "0.99 * 60 / 10: {:?}", c.without);
}

#[test]
fn a_spread_flattens_the_herd() {
    let items = hourly_herd("a", 600);
    let c = compare(&items, &window("2026-12-01T00:00:00Z", 1), &settings("5m", None), 10.0);
    assert_eq!(c.spread_by_flag, 600);
    assert_eq!(c.without.peak_due_per_s, 600);
    assert!(c.with.peak_due_per_s < 20, "600 runs over 300 s: {:?}", c.with);
    assert!(c.without.p99_skew_s > 59.0, "{:?}", c.without);
    assert!(c.with.p99_skew_s < c.without.p99_skew_s / 4.0, "{:?} against {:?}", c.with, c.without);
}

#[test]
fn a_cronjobs_own_spread_applies_in_both_and_wins_over_the_flag() {
    let mut items = hourly_herd("a", 10);
    items[0]["metadata"]["annotations"] = json!({"cronshard.io/spread": "30s"});
    let c = compare(&items, &window("2026-12-01T00:00:00Z", 1), &settings("5m", None), 10.0);
    assert_eq!((c.own_annotation, c.spread_by_flag), (1, 9));
    let alone = compare(&items, &window("2026-12-01T00:00:00Z", 1), &settings("0", None), 10.0);
    let own = spread::offset("a", "report-0", 30);
    assert_eq!(alone.without.peak_due_per_s, if own == 0 { 10 } else { 9 }, "the annotated run is already moved");
}

#[test]
fn the_selector_picks_namespaces_by_name() {
    let mut items = hourly_herd("batch", 5);
    items.extend(hourly_herd("web", 5));
    let s = settings("5m", Some("kubernetes.io/metadata.name in (batch)"));
    let c = compare(&items, &window("2026-12-01T00:00:00Z", 1), &s, 10.0);
    assert_eq!(c.spread_by_flag, 5);
}

#[test]
fn a_spread_too_long_for_a_schedule_moves_nothing() {
    let items = vec![cronjob("every-minute", "* * * * *"), cronjob("every-hour", "@every 1h")];
    let c = compare(&items, &window("2026-12-01T00:00:00Z", 1), &settings("2m", None), 10.0);
    assert_eq!((c.spread_by_flag, c.unsuited), (0, 2));
    assert_eq!(c.with, c.without);
}

#[test]
fn bad_flags_are_refused_with_their_name() {
    for (spread, selector, says) in [
        ("-5m", None, "--spread: spread \"-5m\" is negative"),
        ("abc", None, "--spread: spread \"abc\" is not a duration"),
        ("1y", None, "--spread:"),
        ("5m", Some("team=a"), "only kubernetes.io/metadata.name"),
        ("5m", Some("a b"), "--spread-selector: unable to parse"),
    ] {
        let err = SpreadSettings::new(spread, selector).expect_err(spread).to_string();
        assert!(err.contains(says), "{spread} {selector:?}: {err}");
    }
}
