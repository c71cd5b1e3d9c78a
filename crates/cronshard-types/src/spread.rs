//! Opt-in spread (`cronshard.io/spread`): a run scheduled at T starts at T + an offset of the
//! CronJob's own, stable and pinned, so that CronJobs sharing a minute spread over seconds.

use std::hash::Hasher;

use jiff::Timestamp;

use crate::cronjob::CronJobSchedule;
use crate::error::{Error, Result};
use crate::schedule::Kind;

/// The annotation that asks for a spread, on a CronJob: a duration such as `"5m"` or `"90s"`;
/// `"0"` turns it off.
pub const SPREAD_ANNOTATION: &str = "cronshard.io/spread";
/// The annotation on a Job started with a spread: its offset, such as `"143s"`.
pub const SPREAD_OFFSET_ANNOTATION: &str = "cronshard.io/spread-offset";

/// The [`Error::metric_label`] of every reason a spread is ignored.
pub const IGNORED_REASONS: [&str; 4] = ["SpreadUnparsable", "SpreadNegative", "SpreadOnEvery", "SpreadTooLong"];

/// How many runs [`check`] looks at, at most, for the shortest interval (a year of hourly runs;
/// an every-five-minutes schedule shows its shortest interval long before).
const RUNS_CHECKED: usize = 10_000;

/// A spread's length in whole seconds (0: off), from Go duration syntax (`"5m"`, `"1m30s"`),
/// as Kubernetes users write durations elsewhere. Fractions of a second are dropped.
pub fn parse(text: &str) -> Result<u64> {
    let nanos = crate::schedule::parse_go_duration(text.trim())
        .map_err(|reason| Error::SpreadUnparsable { text: text.to_owned(), reason })?;
    if nanos < 0 {
        return Err(Error::SpreadNegative { text: text.to_owned() });
    }
    Ok(u64::try_from(nanos / 1_000_000_000).unwrap_or(0))
}

/// The spread `text` gives the runs of `schedule`, in seconds (0: off), or why it cannot
/// apply: [`parse`], then [`check`] against the runs after `from`.
pub fn seconds_for(schedule: &CronJobSchedule, text: &str, from: Timestamp) -> Result<u64> {
    let spread_s = parse(text)?;
    if spread_s > 0 {
        check(schedule, text, spread_s, from)?;
    }
    Ok(spread_s)
}

/// The offset of `namespace/name` within a spread of `spread_s` seconds: FNV-1a 64 over
/// `"spread/" + namespace + "/" + name`, modulo the spread. Pinned like the bucket hash (and
/// with its own prefix, so an offset says nothing about a bucket): a CronJob's runs start at
/// the same second after every restart, on every replica, in every cronshard version.
pub fn offset(namespace: &str, name: &str, spread_s: u64) -> u64 {
    if spread_s == 0 {
        return 0;
    }
    let mut hasher = fnv::FnvHasher::default();
    hasher.write(b"spread/");
    hasher.write(namespace.as_bytes());
    hasher.write(b"/");
    hasher.write(name.as_bytes());
    hasher.finish() % spread_s
}

/// Checks that a spread of `spread_s` seconds (from `text`) suits `schedule`: an `@every`
/// schedule has no fixed times to spread, and a spread must be shorter than every interval
/// between two runs, or a run would start after the next one is due. The intervals are those
/// of the runs after `from` (at most a year of them).
pub fn check(schedule: &CronJobSchedule, text: &str, spread_s: u64, from: Timestamp) -> Result<()> {
    if matches!(schedule.schedule().kind(), Kind::Every { .. }) {
        return Err(Error::SpreadOnEvery { text: text.to_owned() });
    }
    let horizon = from.as_second().saturating_add(366 * 86_400);
    let mut runs = schedule.schedule().iter_after(from).take(RUNS_CHECKED).take_while(|t| t.as_second() <= horizon);
    let Some(mut previous) = runs.next() else { return Ok(()) };
    for run in runs {
        let interval_s = run.as_second() - previous.as_second();
        if u64::try_from(interval_s).unwrap_or(0) <= spread_s {
            return Err(Error::SpreadTooLong { text: text.to_owned(), interval_s, from: previous, to: run });
        }
        previous = run;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    #[test]
    fn spreads_are_go_durations_in_whole_seconds() {
        assert_eq!(parse("5m"), Ok(300));
        assert_eq!(parse("90s"), Ok(90));
        assert_eq!(parse("1m30s"), Ok(90));
        assert_eq!(parse(" 2m "), Ok(120));
        assert_eq!(parse("0"), Ok(0), "off");
        assert_eq!(parse("1500ms"), Ok(1));
    }

    #[test]
    fn bad_spreads_say_why() {
        assert_eq!(parse("-5m"), Err(Error::SpreadNegative { text: "-5m".into() }));
        for text in ["1y", "abc", "", "5"] {
            let err = parse(text).expect_err(text);
            assert_eq!(err.metric_label(), "SpreadUnparsable", "{text}: {err}");
            assert!(err.to_string().contains(&format!("{text:?}")), "{err}");
        }
    }

    #[test]
    fn golden_offsets() {
        // Computed independently (Python, FNV-1a 64 by hand); never change these values.
        assert_eq!(offset("default", "hello", 300), 143);
        assert_eq!(offset("kube-system", "backup", 60), 59);
        assert_eq!(offset("team-a", "nightly-report", 3600), 2591);
        assert_eq!(offset("prod", "billing-sync-every-minute", 59), 28);
        assert_eq!(offset("ns", "ünïcödé", 300), 166);
        assert_eq!(offset("default", "x", 1), 0);
        assert_eq!(offset("default", "x", 0), 0, "no spread, no offset");
    }

    #[test]
    fn offsets_fill_the_spread_evenly() {
        let mut counts = [0u32; 60];
        for i in 0..60_000 {
            counts[offset("team", &format!("job-{i}"), 60) as usize] += 1;
        }
        let (min, max) = (counts.iter().min().copied(), counts.iter().max().copied());
        assert!(min >= Some(880) && max <= Some(1120), "{min:?} {max:?}");
    }

    #[test]
    fn a_spread_must_be_shorter_than_the_shortest_interval() {
        let from = t("2026-11-30T08:00:00Z");
        let hourly = CronJobSchedule::new("0 * * * *", None).expect("schedule");
        assert_eq!(check(&hourly, "5m", 300, from), Ok(()));
        assert_eq!(check(&hourly, "59m", 3540, from), Ok(()));
        let err = check(&hourly, "1h", 3600, from).expect_err("as long as the interval");
        assert_eq!(err.metric_label(), "SpreadTooLong");
        assert!(err.to_string().contains("3600 s"), "{err}");
        let twice_a_day = CronJobSchedule::new("0 9,10 * * *", None).expect("schedule");
        let err = check(&twice_a_day, "2h", 7200, from).expect_err("09:00 to 10:00 is shorter");
        assert!(err.to_string().contains("3600 s"), "{err}");
        let minutely = CronJobSchedule::new("* * * * *", None).expect("schedule");
        assert!(check(&minutely, "5m", 300, from).is_err());
        assert_eq!(check(&minutely, "59s", 59, from), Ok(()));
    }

    #[test]
    fn an_every_schedule_has_nothing_to_spread() {
        let every = CronJobSchedule::new("@every 1h", None).expect("schedule");
        let err = check(&every, "5m", 300, t("2026-11-30T08:00:00Z")).expect_err("@every");
        assert_eq!(err.metric_label(), "SpreadOnEvery");
    }

    #[test]
    fn every_reason_is_listed_for_the_metric() {
        let minutely = CronJobSchedule::new("* * * * *", None).expect("schedule");
        let every = CronJobSchedule::new("@every 1h", None).expect("schedule");
        let errors = [
            parse("abc").expect_err("unparsable"),
            parse("-1m").expect_err("negative"),
            check(&every, "1m", 60, t("2026-11-30T08:00:00Z")).expect_err("@every"),
            check(&minutely, "1m", 60, t("2026-11-30T08:00:00Z")).expect_err("too long"),
        ];
        let labels: Vec<&str> = errors.iter().map(Error::metric_label).collect();
        assert_eq!(labels, IGNORED_REASONS);
    }
}
