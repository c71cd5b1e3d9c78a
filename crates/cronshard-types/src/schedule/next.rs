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
    search(spec, zone, unix, Stepping::Jump)
}

/// How the hour, minute and second loops move: robfig's literal single steps, or several
/// at once inside one offset period. Tests check that both give the same answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stepping {
    #[cfg_attr(not(test), allow(dead_code))]
    Single,
    Jump,
}

fn search(spec: &SpecFields, zone: &Zone, unix: i64, stepping: Stepping) -> Option<i64> {
    let mut cur = Cursor::new(zone);
    // Start at the earliest possible time (the upcoming second).
    let mut t = unix + 1;
    let year_limit = cur.wall(t).year + 5;
    // Once a field has been advanced, the smaller fields start from zero.
    let mut added = false;

    // A backstop against any other zone data that keeps the search from advancing.
    let mut wraps = 0u32;
    'wrap: loop {
        let mut w = cur.wall(t);
        wraps += 1;
        if w.year > year_limit || wraps > 100_000 {
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
            let before = t;
            t = cur.date(w.year, w.month.into(), i64::from(w.day) + 1, w.hour.into(), w.minute.into(), w.second.into());
            // Where a whole day was skipped (Pacific/Apia, 2011-12-30), Go's time.Date maps the
            // next midnight back onto the same instant and robfig loops forever; step a day.
            if t <= before {
                t = before + 24 * HOUR;
            }
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
            t = advance(&mut cur, stepping, t, i64::from(target - w.hour), HOUR);
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
            t = advance(&mut cur, stepping, t, i64::from(target - w.minute), MINUTE);
            w = cur.wall(t);
            if w.minute == 0 {
                continue 'wrap;
            }
        }

        // The standard dialect's seconds field is always 0. Only zones with offsets in odd
        // seconds (local mean time before ~1900) get here with a non-zero wall second.
        while w.second != 0 {
            added = true;
            t = advance(&mut cur, stepping, t, i64::from(60 - w.second), 1);
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
fn advance(cur: &mut Cursor<'_>, stepping: Stepping, t: i64, steps: i64, unit: i64) -> i64 {
    let jump = t + steps * unit;
    if stepping == Stepping::Jump && jump < cur.period_end(t) { jump } else { t + unit }
}

/// The smallest set bit of `bits` in `from..limit`, or `limit` if there is none.
fn next_set_bit(bits: u64, from: u8, limit: u8) -> u8 {
    (from..limit).find(|v| SpecFields::has(bits, *v)).unwrap_or(limit)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::schedule::{Field, Kind, Schedule};

    const ZONES: &[&str] = &[
        "America/New_York",
        "Europe/Berlin",
        "America/Sao_Paulo",
        "America/Santiago",
        "Australia/Lord_Howe",
        "Pacific/Chatham",
        "Pacific/Apia",
        "Antarctica/Troll",
        "Africa/Casablanca",
        "America/Havana",
        "Asia/Kolkata",
    ];

    fn field(f: Field) -> impl Strategy<Value = String> {
        let (min, max) = f.bounds();
        prop_oneof![
            Just("*".to_owned()),
            (min..=max).prop_map(|v| v.to_string()),
            (min..=max, min..=max).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
            (min..=max, 2..=max.max(2)).prop_map(|(a, s)| format!("{a}/{s}")),
            (min..=max, min..=max).prop_map(|(a, b)| format!("{a},{b}")),
        ]
    }

    #[test]
    fn a_skipped_day_does_not_hang_the_search() {
        // Samoa skipped 2011-12-30 entirely; robfig's day loop never leaves 12-29 there.
        let apia = Zone::load("Pacific/Apia").expect("zone");
        let schedule = Schedule::parse("0 0 31 12 *", &apia).expect("valid");
        let after = jiff::Timestamp::from_second(1_324_000_000).expect("2011-12-16");
        let next = schedule.next_after(after).expect("fires");
        assert_eq!(next.to_string(), "2011-12-30T10:00:00Z", "midnight of 12-31 at +14:00");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Jumping inside an offset period is only an optimisation: around every kind of
        /// transition (instants are drawn within two days of one) it matches robfig's
        /// literal one-step-at-a-time search.
        #[test]
        fn jumps_equal_single_steps(
            fields in (field(Field::Minute), field(Field::Hour), field(Field::DayOfMonth), field(Field::Month), field(Field::DayOfWeek)),
            zone in (0..ZONES.len()).prop_map(|i| Zone::load(ZONES[i]).expect("zone")),
            start in 820_000_000i64..2_100_000_000,
            offset in -172_800i64..172_800,
        ) {
            let expr = format!("{} {} {} {} {}", fields.0, fields.1, fields.2, fields.3, fields.4);
            let schedule = Schedule::parse(&expr, &zone).expect("valid");
            let Kind::Spec(spec) = schedule.kind() else { unreachable!() };
            let transition = zone
                .time_zone()
                .following(jiff::Timestamp::from_second(start).expect("in range"))
                .next()
                .map_or(start, |t| t.timestamp().as_second());
            let after = transition + offset;
            prop_assert_eq!(
                search(spec, &zone, after, Stepping::Jump),
                search(spec, &zone, after, Stepping::Single),
                "{} in {} after {}", expr, zone, after
            );
        }
    }
}
