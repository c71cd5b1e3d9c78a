//! The time questions the controller asks about one CronJob: which run is due, when to look
//! again, and how the Job for a run is named and annotated.

use jiff::{SignedDuration, Timestamp};

use crate::error::{Error, Result};
use crate::schedule::{DstPolicy, Kind, Schedule};
use crate::zone::{Zone, floor_second, timestamp};

/// More missed start times than this earn upstream's `TooManyMissedTimes` Warning.
pub const MISSED_LIMIT: u32 = 100;

/// Upstream requeues 100 ms after the next fire time, to absorb small clock differences.
pub const REQUEUE_DELAY: SignedDuration = SignedDuration::from_millis(100);

/// A CronJob's `spec.schedule` and `spec.timeZone`, read as the in-tree controller reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronJobSchedule {
    schedule: Schedule,
    time_zone: Zone,
    zone_in_schedule: bool,
}

/// The answer to "which run is due now?".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    /// The latest fire time `t` with `earliest < t <= now`: the only run to start.
    pub due: Option<Timestamp>,
    /// More than [`MISSED_LIMIT`] fire times lie in `(earliest, now]`.
    pub too_many_missed: bool,
    /// `earliest` after raising it to `now - startingDeadlineSeconds`.
    pub earliest: Timestamp,
}

impl CronJobSchedule {
    /// Reads a CronJob's schedule like upstream: an invalid `time_zone` is
    /// [`Error::UnknownTimeZone`] (Warning `UnknownTimeZone`); any other error is an
    /// unparseable schedule (Warning `UnparseableSchedule`). A schedule that mentions `TZ`
    /// is used as written, with its own `TZ=`/`CRON_TZ=` prefix, and `spec.timeZone` then only
    /// affects the annotation, as upstream does.
    pub fn new(schedule: &str, time_zone: Option<&str>) -> Result<Self> {
        let time_zone = match time_zone {
            Some(name) => Zone::load(name)?,
            None => Zone::utc(),
        };
        let zone_in_schedule = schedule.contains("TZ");
        let default_zone = if zone_in_schedule { Zone::utc() } else { time_zone.clone() };
        let schedule = Schedule::parse(schedule, &default_zone)?;
        Ok(CronJobSchedule { schedule, time_zone, zone_in_schedule })
    }

    /// The same CronJob schedule under `policy` around daylight-saving transitions.
    pub fn with_dst_policy(mut self, policy: DstPolicy) -> Self {
        self.schedule = self.schedule.with_dst_policy(policy);
        self
    }

    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The zone of `spec.timeZone` (UTC when unset): the zone of the scheduled-timestamp annotation.
    pub fn time_zone(&self) -> &Zone {
        &self.time_zone
    }

    /// The schedule carries `TZ`/`CRON_TZ`: upstream warns `UnsupportedSchedule` on every sync.
    pub fn zone_in_schedule(&self) -> bool {
        self.zone_in_schedule
    }

    /// The run due at `now`. `earliest` is `status.lastScheduleTime`, else
    /// `metadata.creationTimestamp`; `starting_deadline_seconds` raises it to
    /// `now - startingDeadlineSeconds` when that is later.
    ///
    /// Exact, unlike upstream, which estimates the count from the gap between the first two
    /// fire times and can miss the latest run of irregular schedules (`30 10,11,12 * * 1-5`).
    /// At most [`MISSED_LIMIT`] + 1 steps plus a binary search of about 40 steps, however
    /// long ago `earliest` is.
    pub fn due(&self, earliest: Timestamp, now: Timestamp, starting_deadline_seconds: Option<i64>) -> Result<Due> {
        let earliest = match starting_deadline_seconds {
            Some(s) if s < 0 => return Err(Error::NegativeStartingDeadline(s)),
            Some(s) => match now.checked_sub(SignedDuration::from_secs(s)) {
                Ok(deadline) if deadline > earliest => deadline,
                _ => earliest,
            },
            None => earliest,
        };
        let none = Due { due: None, too_many_missed: false, earliest };
        let now_s = floor_second(now);
        if let Kind::Every { seconds } = self.schedule.kind() {
            // Fire times are earliest + k * interval (k >= 1): count them directly.
            let start = floor_second(earliest);
            let count = if now_s > start { (now_s - start) / seconds } else { 0 };
            return Ok(Due {
                due: (count > 0).then(|| timestamp(start + count * seconds)),
                too_many_missed: count > i64::from(MISSED_LIMIT),
                earliest,
            });
        }
        let next = |unix: i64| self.schedule.next_unix(unix);
        let Some(first) = next(floor_second(earliest)) else {
            return Err(Error::NoFireTime { after: earliest });
        };
        if first > now_s {
            return Ok(none);
        }
        // Count up to MISSED_LIMIT + 1 fire times; most CronJobs stop well before.
        let mut latest = first;
        for _ in 0..MISSED_LIMIT {
            match next(latest) {
                Some(t) if t <= now_s => latest = t,
                _ => return Ok(Due { due: Some(timestamp(latest)), ..none }),
            }
        }
        // Too many: find the last fire time <= now by bisection on "next(x) <= now", which
        // holds at `latest` and fails at `now`.
        let (mut lo, mut hi) = (latest, now_s);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if next(mid).is_some_and(|t| t <= now_s) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let mut due = next(lo).filter(|t| *t <= now_s).unwrap_or(lo);
        // Wall-clock search is not strictly monotone around some DST transitions; finish
        // by stepping forward so the answer is always the last fire time <= now.
        while let Some(t) = next(due).filter(|t| *t <= now_s) {
            due = t;
        }
        Ok(Due { due: Some(timestamp(due)), too_many_missed: true, earliest })
    }

    /// When to look at this CronJob again: the fire time after the most recent one (ignoring
    /// any deadline), else after `earliest`, plus [`REQUEUE_DELAY`] (upstream's
    /// `nextScheduleTimeDuration`, as an instant). `None` when the schedule never fires again.
    pub fn requeue_at(&self, earliest: Timestamp, now: Timestamp) -> Option<Timestamp> {
        let due = self.due(earliest, now, None).ok()?;
        let next = self.schedule.next_after(due.due.unwrap_or(earliest))?;
        next.checked_add(REQUEUE_DELAY).ok()
    }

    /// The value of `batch.kubernetes.io/cronjob-scheduled-timestamp` for a run.
    pub fn scheduled_timestamp(&self, scheduled: Timestamp) -> String {
        self.time_zone.format_rfc3339(scheduled)
    }
}

/// The Job name of a run: `<cronjob>-<scheduled time in unix minutes>`. Deterministic, so a
/// second create of the same run fails with `AlreadyExists` instead of running twice.
pub fn job_name(cronjob: &str, scheduled: Timestamp) -> String {
    // Go's integer division truncates towards zero, like Rust's.
    format!("{cronjob}-{}", scheduled.as_second() / 60)
}
