//! Missed runs: which scheduled runs will never start, and why, counted once each.

use cronshard_types::{CronJobSchedule, Timestamp};

use crate::model::{Event, EventType, MissReason};

/// Go's `time.RFC1123Z`, which upstream's MissSchedule message uses.
pub(crate) fn rfc1123z(t: Timestamp) -> String {
    t.strftime("%a, %d %b %Y %H:%M:%S +0000").to_string()
}

/// The runs a sync found missed: its Warnings, counts by reason, and the time through
/// which every run is reported now.
#[derive(Debug, Default)]
pub(crate) struct Missed {
    pub(crate) events: Vec<Event>,
    pub(crate) counts: Vec<(MissReason, u64)>,
    pub(crate) reported_through: Option<Timestamp>,
}

impl Missed {
    fn event(&mut self, message: String) {
        self.events.push(Event { kind: EventType::Warning, reason: "MissSchedule", message });
    }

    fn miss(&mut self, reason: MissReason, count: u64) {
        if count > 0 {
            self.counts.push((reason, count));
        }
    }

    fn reported(&mut self, through: Timestamp) {
        self.reported_through = Some(self.reported_through.map_or(through, |r| r.max(through)));
    }
}

/// Missed runs are counted one by one up to this many per sync (a CronJob that never runs,
/// `startingDeadlineSeconds: 0`, would otherwise be walked back to its creation).
pub const MISSED_COUNT_CAP: u64 = 10_000;

/// Counts the runs in `(earliest, now]` that will never start: those before the starting
/// deadline's window (`MissSchedule`) and those superseded by the due run, skipping what was
/// reported before (through `reported_through`); one Warning per kind.
pub(crate) fn count_missed(
    schedule: &CronJobSchedule,
    earliest: Timestamp,
    reported_through: Option<Timestamp>,
    due: &cronshard_types::Due,
) -> Missed {
    let mut s = Missed::default();
    let from = reported_through.map_or(earliest, |r| r.max(earliest));
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
            s.event(message);
        }
        s.miss(MissReason::MissSchedule, count);
        s.reported(due.earliest);
    }
    let Some(scheduled) = due.due else { return s };
    let from = from.max(due.earliest);
    if scheduled > from {
        let (count, last) = runs(from, scheduled);
        let before = count.saturating_sub(1);
        if before > 0 && !due.too_many_missed {
            let last = last.map_or_else(String::new, rfc1123z);
            s.event(format!(
                "Missed {before} scheduled times to start a job before {last}: only the most recent one starts"
            ));
        }
        let reason = if due.too_many_missed { MissReason::TooManyMissedTimes } else { MissReason::Superseded };
        s.miss(reason, before);
    }
    // Everything before the due run is reported; the due run itself is not, until it starts.
    if let Ok(before) = scheduled.checked_sub(jiff::SignedDuration::from_nanos(1)) {
        s.reported(before);
    }
    s
}
