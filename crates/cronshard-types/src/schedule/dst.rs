//! Daylight saving as cron has handled it for decades (cronie's cron(8)), or as upstream does.
//!
//! robfig/cron, and so the in-tree controller, matches fire times in wall-clock time: a
//! nightly job at 01:30 runs twice when clocks go back (kubernetes/kubernetes#121594) and not
//! at all when its time falls in the hour clocks skip (robfig/cron#541). Under
//! [`DstPolicy::Cron`], a schedule whose hour field is not `*` fires once per wall-clock time:
//! in a repeated interval at the first occurrence only, and for fire times inside a skipped
//! interval once, at the first instant after it. Schedules whose hour field is `*` fire as
//! upstream's do, and so does every schedule around transitions of more than three hours.

use std::str::FromStr;

use jiff::Timestamp;
use jiff::tz::{AmbiguousOffset, Offset};

use super::field::Field;
use super::next::spec_next;
use super::parse::SpecFields;
use crate::zone::Zone;

/// Transitions longer than this (a zone that skips a whole day) keep upstream's behaviour,
/// as cronie's "local time changes of less than three hours".
const SPECIAL_UP_TO: i64 = 3 * 3600;

/// What a schedule does around a daylight-saving (or any other UTC offset) transition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DstPolicy {
    /// As cron: a specific time (hour field not `*`) runs once per day even when clocks go
    /// back, and right after the gap when its time is skipped.
    #[default]
    Cron,
    /// As robfig/cron and the in-tree controller, bit for bit.
    Upstream,
}

impl DstPolicy {
    /// The flag value: `cron` or `upstream`.
    pub fn as_str(self) -> &'static str {
        match self {
            DstPolicy::Cron => "cron",
            DstPolicy::Upstream => "upstream",
        }
    }
}

impl FromStr for DstPolicy {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "cron" => Ok(DstPolicy::Cron),
            "upstream" => Ok(DstPolicy::Upstream),
            other => Err(format!("unknown daylight-saving policy {other:?}: give cron or upstream")),
        }
    }
}

impl std::fmt::Display for DstPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// First fire time at or after `unix + 1` under [`DstPolicy::Cron`], in unix seconds.
///
/// A search over wall-clock times (robfig's field search on a clock without transitions),
/// each mapped to the instant it runs at: its only instant, the first of two in a repeated
/// interval, or the end of the gap that skipped it. That map never goes backwards, so the
/// first wall time whose instant is after `unix` is the answer. Wall times start three hours
/// before `unix`'s, the longest repeat that is special. A wall time inside a longer
/// transition makes the answer robfig's, exactly as upstream.
pub(super) fn cron_next(spec: &SpecFields, zone: &Zone, unix: i64) -> Option<i64> {
    if spec.is_star(Field::Hour) {
        return spec_next(spec, zone, unix);
    }
    let tz = zone.time_zone();
    let local = |u: i64| u + i64::from(tz.to_offset(Timestamp::from_second(u).unwrap_or_default()).seconds());
    // Wall-clock times are searched on a clock without transitions.
    let wall_clock = Zone::utc();
    let mut wall = local(unix) - SPECIAL_UP_TO - 1;
    loop {
        wall = spec_next(spec, &wall_clock, wall)?;
        match runs_at(zone, wall) {
            Runs::At(at) if at > unix => return Some(at),
            Runs::At(_) => {}
            Runs::Upstream => return spec_next(spec, zone, unix),
        }
    }
}

/// When a wall-clock time (local seconds) runs under [`DstPolicy::Cron`].
enum Runs {
    At(i64),
    /// It lies in a transition longer than [`SPECIAL_UP_TO`]: robfig's rules apply.
    Upstream,
}

fn runs_at(zone: &Zone, wall: i64) -> Runs {
    let tz = zone.time_zone();
    let Ok(as_utc) = Timestamp::from_second(wall) else { return Runs::Upstream };
    let datetime = jiff::tz::TimeZone::UTC.to_datetime(as_utc);
    let special =
        |before: Offset, after: Offset| i64::from((after.seconds() - before.seconds()).abs()) <= SPECIAL_UP_TO;
    match tz.to_ambiguous_timestamp(datetime).offset() {
        AmbiguousOffset::Unambiguous { offset } => Runs::At(wall - i64::from(offset.seconds())),
        // Clocks went back: the first of the two instants.
        AmbiguousOffset::Fold { before, after } if special(before, after) => {
            Runs::At(wall - i64::from(before.seconds()))
        }
        // Clocks went forward over it: the first instant after the gap, the transition.
        AmbiguousOffset::Gap { before, after } if special(before, after) => {
            let past_the_gap = wall - i64::from(before.seconds());
            let at = Timestamp::from_second(past_the_gap + 1).ok().and_then(|t| tz.preceding(t).next());
            at.map_or(Runs::Upstream, |t| Runs::At(t.timestamp().as_second()))
        }
        _ => Runs::Upstream,
    }
}
