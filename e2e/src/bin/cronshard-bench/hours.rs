//! Hour boundaries on a real server's clock (`--target kube` and `cluster`): that clock cannot
//! be moved to an hour, so chosen minutes stand for the hours. CronJobs that fire every minute
//! keep their schedule; every other one fires at each of those minutes; the scenario's later
//! CronJobs are created on its clock, between them.

use cronshard_e2e::scenario::{CronJobSeed, Scenario};
use cronshard_types::{Schedule, Timestamp, Zone};

/// How many hour boundaries a run covers, and the real seconds that stand for an hour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hours {
    pub(crate) count: u32,
    pub(crate) every_s: i64,
}

impl Hours {
    /// The flags' values, checked: the boundaries are whole minutes apart and all fall within
    /// one real hour, so that one daily schedule (minutes × hours) can fire at exactly them.
    pub(crate) fn new(count: u32, every_s: i64) -> Result<Hours, String> {
        if count == 0 {
            return Err("--hours 0: a run covers at least one hour boundary".into());
        }
        if every_s < 120 || every_s % 60 != 0 {
            return Err(format!("--hour-s {every_s}: give whole minutes, at least 120 s"));
        }
        if i64::from(count - 1) * every_s >= 3_600 {
            return Err(format!(
                "--hours {count} --hour-s {every_s}: the boundaries must fall within one real hour; shorten --hour-s"
            ));
        }
        Ok(Hours { count, every_s })
    }
}

/// The minutes that stand for the run's hour boundaries, and the schedule that fires at them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Boundaries {
    pub(crate) at: Vec<Timestamp>,
    pub(crate) schedule: String,
}

/// How long after the last boundary the schedule may not fire again: the arm's wait for its
/// pods, its Jobs and the plain client's bound all run in that time.
const QUIET_AFTER_S: i64 = 2_700;

impl Boundaries {
    /// `hours` boundaries, the first at the first whole minute at least `ahead` seconds after
    /// `now` from which a daily schedule fires at each of them and at nothing else from `now`
    /// until [`QUIET_AFTER_S`] after the last (boundaries that straddle a real hour can make a
    /// minutes × hours schedule fire at other times too: such a start is skipped).
    pub(crate) fn after(now: Timestamp, ahead: i64, hours: Hours) -> Result<Boundaries, String> {
        let first = (now.as_second() + ahead) / 60 * 60 + 60;
        for start in (0..60).map(|k| first + 60 * k) {
            let at: Vec<i64> = (0..i64::from(hours.count)).map(|k| start + k * hours.every_s).collect();
            let schedule = daily_at(&at);
            if fires_only_at(&schedule, now.as_second(), &at)? {
                let at: Result<Vec<Timestamp>, String> =
                    at.iter().map(|s| Timestamp::from_second(*s).map_err(|e| e.to_string())).collect();
                return Ok(Boundaries { at: at?, schedule });
            }
        }
        Err(format!("no start within an hour gives {} boundaries {} s apart one schedule", hours.count, hours.every_s))
    }

    pub(crate) fn first(&self) -> Timestamp {
        self.at[0]
    }

    pub(crate) fn last(&self) -> Timestamp {
        self.at[self.at.len() - 1]
    }

    /// The scenario's CronJobs for these boundaries, its window starting at `start`: the
    /// every-minute ones as they are, the others firing at each boundary, all in UTC and
    /// without spread. Later ones carry their planned creation time, which the run replaces
    /// with the real one.
    pub(crate) fn seeds(&self, scenario: &Scenario, start: Timestamp) -> Vec<CronJobSeed> {
        scenario
            .cronjobs(start)
            .into_iter()
            .map(|s| match every_minute(&s.schedule) {
                true => CronJobSeed { time_zone: None, spread: None, ..s },
                false => CronJobSeed { schedule: self.schedule.clone(), time_zone: None, spread: None, ..s },
            })
            .collect()
    }

    /// (namespace, Job name) of every run due at each boundary: the CronJobs that fire at the
    /// boundaries and exist before it.
    pub(crate) fn herds(&self, seeds: &[CronJobSeed]) -> Vec<Vec<(String, String)>> {
        self.at
            .iter()
            .map(|at| {
                seeds
                    .iter()
                    .filter(|s| s.schedule == self.schedule && s.created < *at)
                    .map(|s| (s.namespace.clone(), format!("{}-{}", s.name, at.as_second() / 60)))
                    .collect()
            })
            .collect()
    }
}

/// A daily schedule (UTC) on the minutes and hours of `at` (unix seconds).
fn daily_at(at: &[i64]) -> String {
    let list = |f: &dyn Fn(i64) -> i64| {
        let mut values: Vec<i64> = at.iter().map(|t| f(*t)).collect();
        values.sort_unstable();
        values.dedup();
        values.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
    };
    format!("{} {} * * *", list(&|t| t / 60 % 60), list(&|t| t / 3_600 % 24))
}

/// Whether `schedule` fires at exactly `at` from `from` until [`QUIET_AFTER_S`] after the last.
fn fires_only_at(schedule: &str, from: i64, at: &[i64]) -> Result<bool, String> {
    let parsed = Schedule::parse(schedule, &Zone::utc()).map_err(|e| format!("{schedule:?}: {e}"))?;
    let until = at.last().copied().unwrap_or(from) + QUIET_AFTER_S;
    let from = Timestamp::from_second(from).map_err(|e| e.to_string())?;
    let fires: Vec<i64> = parsed.iter_after(from).map(|t| t.as_second()).take_while(|t| *t <= until).collect();
    Ok(fires == at)
}

/// Whether a schedule fires at every minute (checked over the next hour).
pub(crate) fn every_minute(schedule: &str) -> bool {
    let Ok(parsed) = Schedule::parse(schedule, &Zone::utc()) else { return false };
    let from = Timestamp::from_second(Timestamp::now().as_second() / 60 * 60).unwrap_or_else(|_| Timestamp::now());
    parsed.iter_after(from).take(60).enumerate().all(|(k, t)| t.as_second() == from.as_second() + 60 * (k as i64 + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).expect("time")
    }

    /// 1,800,000,000 is 08:00:00 UTC.
    const EIGHT: i64 = 1_800_000_000;

    #[test]
    fn one_boundary_is_a_daily_minute() {
        let b = Boundaries::after(at(EIGHT + 10), 60, Hours::new(1, 300).expect("valid")).expect("boundaries");
        assert_eq!(b.at, vec![at(EIGHT + 120)]);
        assert_eq!(b.schedule, "2 8 * * *");
    }

    #[test]
    fn two_boundaries_in_one_hour_share_its_hour() {
        let b = Boundaries::after(at(EIGHT + 10), 60, Hours::new(2, 300).expect("valid")).expect("boundaries");
        assert_eq!(b.at, vec![at(EIGHT + 120), at(EIGHT + 420)]);
        assert_eq!(b.schedule, "2,7 8 * * *");
    }

    #[test]
    fn boundaries_across_a_real_hour_fire_nowhere_else_while_the_run_lasts() {
        // From 08:55 the second boundary is 09:00: "0,55 8,9" also fires at 09:55, 55 minutes
        // later, which is after the run; at 08:00 before it, which is before the CronJobs.
        let b = Boundaries::after(at(EIGHT + 3_240), 0, Hours::new(2, 300).expect("valid")).expect("boundaries");
        assert_eq!(b.at, vec![at(EIGHT + 3_300), at(EIGHT + 3_600)]);
        assert_eq!(b.schedule, "0,55 8,9 * * *");
        // 08:45 and 09:15 (30 minutes apart): "15,45 8,9" fires at 09:45, within the run; the
        // start moves on until the two fire alone, here 09:00 and 09:30.
        let b = Boundaries::after(at(EIGHT + 2_640), 0, Hours::new(2, 1_800).expect("valid")).expect("boundaries");
        assert_eq!(b.at, vec![at(EIGHT + 3_600), at(EIGHT + 5_400)]);
        assert_eq!(b.schedule, "0,30 9 * * *");
    }

    #[test]
    fn bad_hours_are_refused() {
        assert!(Hours::new(0, 300).is_err());
        assert!(Hours::new(2, 90).is_err(), "not whole minutes");
        assert!(Hours::new(2, 60).is_err(), "too short for a herd");
        assert!(Hours::new(3, 1_800).is_err(), "beyond one real hour");
        assert_eq!(Hours::new(3, 1_740), Ok(Hours { count: 3, every_s: 1_740 }));
    }

    #[test]
    fn a_boundarys_herd_is_the_cronjobs_that_exist_before_it() {
        let b = Boundaries::after(at(EIGHT + 10), 60, Hours::new(2, 300).expect("valid")).expect("boundaries");
        let seed = |name: &str, schedule: &str, created: i64| CronJobSeed {
            namespace: "ns".into(),
            name: name.into(),
            schedule: schedule.into(),
            time_zone: None,
            created: at(created),
            appears_s: 0.0,
            spread: None,
        };
        let seeds =
            [seed("a", &b.schedule, EIGHT), seed("m", "* * * * *", EIGHT), seed("late", &b.schedule, EIGHT + 200)];
        let herds = b.herds(&seeds);
        let (m1, m2) = ((EIGHT + 120) / 60, (EIGHT + 420) / 60);
        assert_eq!(herds[0], vec![("ns".to_owned(), format!("a-{m1}"))]);
        assert_eq!(herds[1], vec![("ns".to_owned(), format!("a-{m2}")), ("ns".to_owned(), format!("late-{m2}"))]);
    }
}
