//! Runs per minute: every fire time of every valid, unsuspended CronJob in the window, found
//! exactly as the controller finds them.

use std::collections::HashMap;

use cronshard_types::schedule::Kind;
use cronshard_types::{CronJobSchedule, Error};
use serde_json::Value;

use super::input::{anchor, item_name, read_spec};
use super::settings::Window;

/// A CronJob that will not run, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Invalid {
    pub(super) name: String,
    pub(super) reason: String,
}

/// What the items add up to over the window. `valid`, `suspended` and `invalid` partition
/// `total`: a suspended CronJob is not counted as valid.
#[derive(Clone, Debug)]
pub(super) struct Load {
    pub(super) total: u64,
    pub(super) valid: u64,
    pub(super) suspended: u64,
    pub(super) invalid: Vec<Invalid>,
    pub(super) per_minute: Vec<u64>,
}

/// A schedule and zone as written: CronJobs that share them share the parse and the runs.
type Key<'a> = (&'a str, Option<&'a str>);

/// Every run of every valid, unsuspended CronJob in the window, counted per minute.
pub(super) fn count_runs(items: &[Value], window: &Window) -> Load {
    let mut load =
        Load { total: 0, valid: 0, suspended: 0, invalid: Vec::new(), per_minute: vec![0; window.minutes()] };
    let mut parsed: HashMap<Key<'_>, Result<CronJobSchedule, Error>> = HashMap::new();
    // Five-field schedules do not depend on the object: count their CronJobs, walk each once.
    let mut shared: HashMap<Key<'_>, u64> = HashMap::new();
    for (index, item) in items.iter().enumerate() {
        load.total += 1;
        let name = item_name(item, index);
        let spec = match read_spec(item) {
            Ok(spec) => spec,
            Err(reason) => {
                load.invalid.push(Invalid { name, reason });
                continue;
            }
        };
        let key = (spec.schedule, spec.time_zone);
        let result: &Result<CronJobSchedule, Error> =
            parsed.entry(key).or_insert_with(|| parse(spec.schedule, spec.time_zone, window));
        // The controller's order: an unknown zone is reported even when suspended; a bad
        // schedule only when the CronJob would run.
        let cronjob = match result {
            Err(e @ Error::UnknownTimeZone { .. }) => {
                load.invalid.push(Invalid { name, reason: format!("UnknownTimeZone: {e}") });
                continue;
            }
            _ if spec.suspend => {
                load.suspended += 1;
                continue;
            }
            Err(e @ Error::NoFireTime { .. }) => {
                load.invalid.push(Invalid { name, reason: format!("InvalidSchedule: {e}") });
                continue;
            }
            Err(e) => {
                load.invalid.push(Invalid { name, reason: format!("UnparseableSchedule: {e}") });
                continue;
            }
            Ok(cronjob) => cronjob,
        };
        load.valid += 1;
        match cronjob.schedule().kind() {
            Kind::Every { seconds } => add_every(&mut load.per_minute, window, *seconds, anchor(item)),
            Kind::Spec(_) => *shared.entry(key).or_insert(0) += 1,
        }
    }
    for (key, count) in &shared {
        let Some(Ok(cronjob)) = parsed.get(key) else { continue };
        // Exactly `cronshard schedule next`: successive fire times after a start.
        for t in cronjob.schedule().iter_after(window.after) {
            let Some(minute) = window.minute_of(t.as_second()) else { break };
            if let Some(slot) = load.per_minute.get_mut(minute) {
                *slot += *count;
            }
        }
    }
    load
}

/// Parses like the controller, and also rejects a schedule that never fires (the
/// controller's `InvalidSchedule` Warning).
fn parse(schedule: &str, time_zone: Option<&str>, window: &Window) -> Result<CronJobSchedule, Error> {
    let cronjob = CronJobSchedule::new(schedule, time_zone)?.with_dst_policy(window.dst);
    if cronjob.schedule().next_after(window.after).is_none() {
        return Err(Error::NoFireTime { after: window.start });
    }
    Ok(cronjob)
}

/// An `@every` schedule fires at anchor + k · interval (k ≥ 1), a phase set by the object, not
/// the clock; without an anchor the runs start at the window's start.
fn add_every(per_minute: &mut [u64], window: &Window, seconds: i64, anchor: Option<i64>) {
    let seconds = seconds.max(1);
    let anchor = anchor.unwrap_or(window.start_s - seconds);
    let behind = window.start_s - anchor;
    // The first k with anchor + k · interval at or after the start: ceil(behind / interval).
    let k = if behind <= 0 { 1 } else { behind.div_euclid(seconds) + i64::from(behind.rem_euclid(seconds) > 0) };
    let mut t = anchor + k * seconds;
    while let Some(minute) = window.minute_of(t) {
        if let Some(slot) = per_minute.get_mut(minute) {
            *slot += 1;
        }
        t += seconds;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plan::testkit::{cronjob, window};

    #[test]
    fn runs_are_counted_per_minute() {
        let items = [cronjob("five", "*/5 * * * *"), cronjob("hourly", "0 * * * *")];
        let load = count_runs(&items, &window("2026-12-01T00:00:00Z", 2));
        assert_eq!(load.per_minute.len(), 120);
        for (minute, &runs) in load.per_minute.iter().enumerate() {
            let expected = match minute {
                0 | 60 => 2,
                m if m.is_multiple_of(5) => 1,
                _ => 0,
            };
            assert_eq!(runs, expected, "minute {minute}");
        }
        assert_eq!(load.per_minute.iter().sum::<u64>(), 26);
        assert_eq!((load.total, load.valid, load.suspended, load.invalid.len()), (2, 2, 0, 0));
    }

    #[test]
    fn the_window_starts_on_a_minute_and_excludes_its_end() {
        // 00:00:30 floors to 00:00, which is in; 01:00 is the end, which is out.
        let load = count_runs(&[cronjob("hourly", "0 * * * *")], &window("2026-12-01T00:00:30Z", 1));
        assert_eq!(load.per_minute.len(), 60);
        assert_eq!(load.per_minute.first(), Some(&1));
        assert_eq!(load.per_minute.iter().sum::<u64>(), 1);
    }

    #[test]
    fn time_zones_follow_daylight_saving_time() {
        let mut ny = cronjob("ny", "0 9 * * *");
        ny["spec"]["timeZone"] = json!("America/New_York");
        let items = [ny];
        // 09:00 EST (UTC-5) in January, 09:00 EDT (UTC-4) in July.
        let winter = count_runs(&items, &window("2026-01-15T00:00:00Z", 24));
        assert_eq!(winter.per_minute.iter().position(|&n| n > 0), Some(14 * 60));
        let summer = count_runs(&items, &window("2026-07-15T00:00:00Z", 24));
        assert_eq!(summer.per_minute.iter().position(|&n| n > 0), Some(13 * 60));
        assert_eq!(summer.per_minute.iter().sum::<u64>(), 1);
    }

    #[test]
    fn invalid_cronjobs_are_counted_with_reasons() {
        let mut mars = cronjob("mars", "0 * * * *");
        mars["spec"]["timeZone"] = json!("Mars/Olympus");
        let mut no_schedule = cronjob("none", "");
        let _ = no_schedule["spec"].as_object_mut().expect("spec").remove("schedule");
        let mut job = cronjob("job", "0 * * * *");
        job["kind"] = json!("Job");
        let items = [
            cronjob("minute", "61 * * * *"),
            mars,
            no_schedule,
            cronjob("never", "0 0 30 2 *"),
            job,
            cronjob("ok", "0 * * * *"),
        ];
        let load = count_runs(&items, &window("2026-12-01T00:00:00Z", 2));
        assert_eq!((load.total, load.valid, load.suspended), (6, 1, 0));
        let reasons: Vec<(&str, &str)> = load.invalid.iter().map(|i| (i.name.as_str(), i.reason.as_str())).collect();
        assert_eq!(reasons.len(), 5, "{reasons:?}");
        assert_eq!(reasons[0].0, "default/minute");
        assert!(reasons[0].1.starts_with("UnparseableSchedule: invalid minute field \"61\""), "{reasons:?}");
        assert!(reasons[1].1.starts_with("UnknownTimeZone: unknown time zone \"Mars/Olympus\""), "{reasons:?}");
        assert_eq!(reasons[2].1, "spec.schedule is missing or not a string");
        assert!(reasons[3].1.starts_with("InvalidSchedule: schedule has no fire time"), "{reasons:?}");
        assert_eq!(reasons[4].1, "kind Job, not CronJob");
        assert_eq!(load.per_minute.iter().sum::<u64>(), 2);
    }

    #[test]
    fn suspended_cronjobs_have_no_runs() {
        let mut paused = cronjob("paused", "* * * * *");
        paused["spec"]["suspend"] = json!(true);
        // Like the controller: a suspended CronJob's bad schedule is not reported, its bad zone is.
        let mut paused_bad = cronjob("paused-bad", "61 * * * *");
        paused_bad["spec"]["suspend"] = json!(true);
        let mut paused_zone = cronjob("paused-zone", "* * * * *");
        paused_zone["spec"]["suspend"] = json!(true);
        paused_zone["spec"]["timeZone"] = json!("Nowhere/Else");
        let load = count_runs(&[paused, paused_bad, paused_zone], &window("2026-12-01T00:00:00Z", 1));
        assert_eq!((load.total, load.valid, load.suspended, load.invalid.len()), (3, 0, 2, 1));
        assert_eq!(load.invalid[0].name, "default/paused-zone");
        assert_eq!(load.per_minute.iter().sum::<u64>(), 0);
    }

    #[test]
    fn every_is_phased_from_the_object() {
        // Created at 00:03, every 7 minutes: 00:10, 00:17, ... 01:55 in the first two hours.
        let created = cronjob("every", "@every 7m");
        let load = count_runs(std::slice::from_ref(&created), &window("2026-11-01T00:00:00Z", 2));
        assert_eq!(load.per_minute[3], 0);
        assert_eq!(load.per_minute[10], 1);
        assert_eq!(load.per_minute[17], 1);
        assert_eq!(load.per_minute.iter().sum::<u64>(), 16);
        // status.lastScheduleTime wins over the creation time.
        let mut scheduled = created;
        scheduled["status"]["lastScheduleTime"] = json!("2026-11-01T00:05:00Z");
        let load = count_runs(&[scheduled], &window("2026-11-01T00:00:00Z", 1));
        assert_eq!(load.per_minute[12], 1);
        assert_eq!(load.per_minute[10], 0);
    }
}
