//! Missed runs: which scheduled runs will never start, and why, counted once each.

use cronshard_types::{CronJobSchedule, Timestamp};

use super::EventType;
use super::rules::{Sync, rfc1123z};

/// Why a scheduled run did not start (the `reason` of `cronshard_missed_runs_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MissReason {
    /// Its `startingDeadlineSeconds` passed before it could start (upstream's Event reason).
    MissSchedule,
    /// A later run was due too, and only the most recent missed run starts (upstream's rule).
    Superseded,
    /// As `Superseded`, with more than 100 missed at once (upstream's Event reason).
    TooManyMissedTimes,
}

impl MissReason {
    pub const ALL: [MissReason; 3] = [MissReason::MissSchedule, MissReason::Superseded, MissReason::TooManyMissedTimes];

    pub fn label(self) -> &'static str {
        match self {
            MissReason::MissSchedule => "MissSchedule",
            MissReason::Superseded => "Superseded",
            MissReason::TooManyMissedTimes => "TooManyMissedTimes",
        }
    }
}

/// Missed runs are counted one by one up to this many per sync (a CronJob that never runs,
/// `startingDeadlineSeconds: 0`, would otherwise be walked back to its creation).
pub const MISSED_COUNT_CAP: u64 = 10_000;

/// Counts the runs in `(earliest, now]` that will never start: those before the starting
/// deadline's window (`MissSchedule`) and those superseded by the due run, skipping what was
/// reported before; records one Warning per kind.
pub(super) fn count_missed(
    s: &mut Sync<'_>,
    schedule: &CronJobSchedule,
    earliest: Timestamp,
    due: &cronshard_types::Due,
) {
    let from = s.reported_through.map_or(earliest, |r| r.max(earliest));
    let runs = |after: Timestamp, through: Timestamp| -> (u64, Option<Timestamp>) {
        let mut last = None;
        let count = schedule
            .schedule()
            .iter_after(after)
            .take_while(|t| *t <= through)
            .take(MISSED_COUNT_CAP as usize)
            .inspect(|t| last = Some(*t))
            .count() as u64;
        (count, last)
    };
    if due.earliest > from {
        let (count, last) = runs(from, due.earliest);
        if let Some(last) = last {
            let more = if count > 1 { format!(" (and {} earlier)", count - 1) } else { String::new() };
            let message = format!("Missed scheduled time to start a job: {}{more}", rfc1123z(last));
            s.event(EventType::Warning, "MissSchedule", message);
        }
        s.miss(MissReason::MissSchedule, count);
        s.reported(due.earliest);
    }
    let Some(scheduled) = due.due else { return };
    let from = from.max(due.earliest);
    if scheduled > from {
        let (count, last) = runs(from, scheduled);
        let before = count.saturating_sub(1);
        if before > 0 && !due.too_many_missed {
            let last = last.map_or_else(String::new, rfc1123z);
            s.event(
                EventType::Warning,
                "MissSchedule",
                format!(
                    "Missed {before} scheduled times to start a job before {last}: only the most recent one starts"
                ),
            );
        }
        let reason = if due.too_many_missed { MissReason::TooManyMissedTimes } else { MissReason::Superseded };
        s.miss(reason, before);
    }
    // Everything before the due run is reported; the due run itself is not, until it starts.
    if let Ok(before) = scheduled.checked_sub(jiff::SignedDuration::from_nanos(1)) {
        s.reported(before);
    }
}
