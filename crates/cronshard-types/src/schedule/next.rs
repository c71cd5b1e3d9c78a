//! robfig/cron v3's `SpecSchedule.Next`, step for step, with exact DST behaviour.
//!
//! The search advances month, day, hour, minute and second in wall-clock time of the zone,
//! restarting from the month whenever a field wraps, and gives up five years out. Go's
//! `time.Date` decides what a nonexistent or repeated wall time means, so [`Cursor::date`]
//! reproduces it. Where the zone's offset cannot change, several single steps are taken at
//! once; the result is identical, only faster.

use std::ops::ControlFlow::{self, Break, Continue};

use super::parse::SpecFields;
use crate::civil::Wall;
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
    let t = unix + 1;
    let year_limit = cur.wall(t).year + 5;
    let w = cur.wall(t);
    let mut s = Search { cur, stepping, t, w, added: false };
    // A backstop against any other zone data that keeps the search from advancing.
    for _ in 0..100_000 {
        s.w = s.cur.wall(s.t);
        if s.w.year > year_limit {
            return None;
        }
        // A field that wraps (month to January, day to the 1st, hour or minute to 0)
        // restarts the search from the month, as robfig's `goto WRAP` does.
        let wrapped = s.month(spec).is_break()
            || s.day(spec).is_break()
            || s.hour(spec).is_break()
            || s.minute(spec).is_break()
            || s.second().is_break();
        if !wrapped {
            return Some(s.t);
        }
    }
    None
}

/// The search's position: the time, its wall clock in the zone, and whether a field has
/// been advanced yet (after that, the smaller fields start from zero).
struct Search<'z> {
    cur: Cursor<'z>,
    stepping: Stepping,
    t: i64,
    w: Wall,
    added: bool,
}

/// `Break`: the field wrapped and the search restarts from the month.
type Wrap = ControlFlow<()>;

impl Search<'_> {
    fn month(&mut self, spec: &SpecFields) -> Wrap {
        while !SpecFields::has(spec.month, self.w.month) {
            let w = self.w;
            if !self.added {
                self.added = true;
                self.set_date(w.year, w.month.into(), 1, 0, 0, 0);
            }
            let w = self.w;
            let next = self.cur.date(
                w.year,
                i64::from(w.month) + 1,
                w.day.into(),
                w.hour.into(),
                w.minute.into(),
                w.second.into(),
            );
            self.set(next);
            if self.w.month == 1 {
                return Break(());
            }
        }
        Continue(())
    }

    fn day(&mut self, spec: &SpecFields) -> Wrap {
        while !spec.day_matches(self.w.day, self.w.weekday) {
            if !self.added {
                self.added = true;
                let w = self.w;
                self.set_date(w.year, w.month.into(), w.day.into(), 0, 0, 0);
            }
            let (before, w) = (self.t, self.w);
            let mut t = self.cur.date(
                w.year,
                w.month.into(),
                i64::from(w.day) + 1,
                w.hour.into(),
                w.minute.into(),
                w.second.into(),
            );
            // Where a whole day was skipped (Pacific/Apia, 2011-12-30), Go's time.Date maps the
            // next midnight back onto the same instant and robfig loops forever; step a day.
            if t <= before {
                t = before + 24 * HOUR;
            }
            self.set(t);
            // Where midnight does not exist (DST starting at 00:00), robfig pulls the time
            // back to the day's first hour or pushes it to the next midnight.
            if self.w.hour != 0 {
                let hour = i64::from(self.w.hour);
                self.set(self.t + if hour > 12 { (24 - hour) * HOUR } else { -hour * HOUR });
            }
            if self.w.day == 1 {
                return Break(());
            }
        }
        Continue(())
    }

    fn hour(&mut self, spec: &SpecFields) -> Wrap {
        while !SpecFields::has(spec.hour, self.w.hour) {
            if !self.added {
                self.added = true;
                let w = self.w;
                self.set_date(w.year, w.month.into(), w.day.into(), w.hour.into(), 0, 0);
            }
            // Hours until the next matching hour or the wrap at midnight, whichever is first.
            let target = next_set_bit(spec.hour, self.w.hour + 1, 24);
            self.step(i64::from(target - self.w.hour), HOUR);
            if self.w.hour == 0 {
                return Break(());
            }
        }
        Continue(())
    }

    fn minute(&mut self, spec: &SpecFields) -> Wrap {
        while !SpecFields::has(spec.minute, self.w.minute) {
            if !self.added {
                self.added = true;
                self.set(self.t.div_euclid(MINUTE) * MINUTE);
            }
            let target = next_set_bit(spec.minute, self.w.minute + 1, 60);
            self.step(i64::from(target - self.w.minute), MINUTE);
            if self.w.minute == 0 {
                return Break(());
            }
        }
        Continue(())
    }

    /// The standard dialect's seconds field is always 0. Only zones with offsets in odd
    /// seconds (local mean time before ~1900) get here with a non-zero wall second.
    fn second(&mut self) -> Wrap {
        while self.w.second != 0 {
            self.added = true;
            self.step(i64::from(60 - self.w.second), 1);
            if self.w.second == 0 {
                return Break(());
            }
        }
        Continue(())
    }

    /// Go's `time.Date` in the zone, gaps and folds resolved as Go does.
    fn set_date(&mut self, year: i64, month: i64, day: i64, hour: i64, minute: i64, second: i64) {
        let t = self.cur.date(year, month, day, hour, minute, second);
        self.set(t);
    }

    fn set(&mut self, t: i64) {
        self.t = t;
        self.w = self.cur.wall(t);
    }

    fn step(&mut self, steps: i64, unit: i64) {
        let t = advance(&mut self.cur, self.stepping, self.t, steps, unit);
        self.set(t);
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
