//! robfig/cron v3's `SpecSchedule.Next`, step for step, with exact DST behaviour.
//!
//! The search advances month, day, hour, minute and second in wall-clock time of the zone,
//! restarting from the month whenever a field wraps, and gives up five years out. Go's
//! `time.Date` decides what a nonexistent or repeated wall time means, so [`Cursor::date`]
//! reproduces it. Where the zone's offset cannot change, several single steps are taken at
//! once; the result is identical, only faster.

use super::parse::SpecFields;
use crate::zone::{Cursor, Zone};

const HOUR: i64 = 3600;
const MINUTE: i64 = 60;

/// First fire time at or after `unix + 1`, in unix seconds.
pub(super) fn spec_next(spec: &SpecFields, zone: &Zone, unix: i64) -> Option<i64> {
    let mut cur = Cursor::new(zone);
    // Start at the earliest possible time (the upcoming second).
    let mut t = unix + 1;
    let year_limit = cur.wall(t).year + 5;
    // Once a field has been advanced, the smaller fields start from zero.
    let mut added = false;

    'wrap: loop {
        let mut w = cur.wall(t);
        if w.year > year_limit {
            return None;
        }

        while !SpecFields::has(spec.month, w.month) {
            if !added {
                added = true;
                t = cur.date(w.year, w.month.into(), 1, 0, 0, 0);
                w = cur.wall(t);
            }
            t = cur.date(w.year, i64::from(w.month) + 1, w.day.into(), w.hour.into(), w.minute.into(), w.second.into());
            w = cur.wall(t);
            if w.month == 1 {
                continue 'wrap;
            }
        }

        while !spec.day_matches(w.day, w.weekday) {
            if !added {
                added = true;
                t = cur.date(w.year, w.month.into(), w.day.into(), 0, 0, 0);
                w = cur.wall(t);
            }
            t = cur.date(w.year, w.month.into(), i64::from(w.day) + 1, w.hour.into(), w.minute.into(), w.second.into());
            w = cur.wall(t);
            // Where midnight does not exist (DST starting at 00:00), robfig pulls the time
            // back to the day's first hour or pushes it to the next midnight.
            if w.hour != 0 {
                let hour = i64::from(w.hour);
                t += if hour > 12 { (24 - hour) * HOUR } else { -hour * HOUR };
                w = cur.wall(t);
            }
            if w.day == 1 {
                continue 'wrap;
            }
        }

        while !SpecFields::has(spec.hour, w.hour) {
            if !added {
                added = true;
                t = cur.date(w.year, w.month.into(), w.day.into(), w.hour.into(), 0, 0);
                w = cur.wall(t);
            }
            // Hours until the next matching hour or the wrap at midnight, whichever is first.
            let target = next_set_bit(spec.hour, w.hour + 1, 24);
            t = advance(&mut cur, t, i64::from(target - w.hour), HOUR);
            w = cur.wall(t);
            if w.hour == 0 {
                continue 'wrap;
            }
        }

        while !SpecFields::has(spec.minute, w.minute) {
            if !added {
                added = true;
                t = t.div_euclid(MINUTE) * MINUTE;
                w = cur.wall(t);
            }
            let target = next_set_bit(spec.minute, w.minute + 1, 60);
            t = advance(&mut cur, t, i64::from(target - w.minute), MINUTE);
            w = cur.wall(t);
            if w.minute == 0 {
                continue 'wrap;
            }
        }

        // The standard dialect's seconds field is always 0. Only zones with offsets in odd
        // seconds (local mean time before ~1900) get here with a non-zero wall second.
        while w.second != 0 {
            added = true;
            t = advance(&mut cur, t, i64::from(60 - w.second), 1);
            w = cur.wall(t);
            if w.second == 0 {
                continue 'wrap;
            }
        }

        return Some(t);
    }
}

/// `steps` steps of `unit` seconds, taken at once when the offset cannot change on the way
/// (so the wall clock moves by exactly that much) and one at a time otherwise, as robfig does.
fn advance(cur: &mut Cursor<'_>, t: i64, steps: i64, unit: i64) -> i64 {
    let jump = t + steps * unit;
    if jump < cur.period_end(t) { jump } else { t + unit }
}

/// The smallest set bit of `bits` in `from..limit`, or `limit` if there is none.
fn next_set_bit(bits: u64, from: u8, limit: u8) -> u8 {
    (from..limit).find(|v| SpecFields::has(bits, *v)).unwrap_or(limit)
}
