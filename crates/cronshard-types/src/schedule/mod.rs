//! Cron schedules exactly as Kubernetes reads them (robfig/cron v3 `ParseStandard`).

mod go_duration;

pub(crate) use go_duration::parse as parse_go_duration;
mod next;
mod parse;

use std::fmt;

use jiff::Timestamp;

pub use parse::SpecFields;

use crate::error::Result;
use crate::zone::Zone;

/// One of the five fields of a standard cron expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
}

impl Field {
    /// The five fields in the order they are written.
    pub const ALL: [Field; 5] = [Field::Minute, Field::Hour, Field::DayOfMonth, Field::Month, Field::DayOfWeek];

    /// Smallest and largest value of the field.
    pub const fn bounds(self) -> (u8, u8) {
        match self {
            Field::Minute => (0, 59),
            Field::Hour => (0, 23),
            Field::DayOfMonth => (1, 31),
            Field::Month => (1, 12),
            Field::DayOfWeek => (0, 6),
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Minute => "minute",
            Field::Hour => "hour",
            Field::DayOfMonth => "day-of-month",
            Field::Month => "month",
            Field::DayOfWeek => "day-of-week",
        })
    }
}

/// What a parsed schedule fires on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Five fields, or a descriptor such as `@daily` that stands for five fields.
    Spec(SpecFields),
    /// `@every <duration>`: a fixed interval in whole seconds (at least one), counted from
    /// the time asked about, not aligned to the clock.
    Every { seconds: i64 },
}

/// A parsed schedule with the zone it is evaluated in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    kind: Kind,
    zone: Zone,
}

impl Schedule {
    /// Parses like robfig/cron v3 `ParseStandard`. A `TZ=<zone> ` or `CRON_TZ=<zone> ` prefix
    /// overrides `default_zone`, which stands for robfig's `time.Local`.
    pub fn parse(expr: &str, default_zone: &Zone) -> Result<Self> {
        parse::parse(expr, default_zone)
    }

    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// The zone whose wall clock the fields are matched against.
    pub fn zone(&self) -> &Zone {
        &self.zone
    }

    /// The first fire time strictly after `after` (robfig's `Schedule.Next`), or `None` when
    /// there is none within five years. Fire times fall on whole seconds.
    pub fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        self.next_unix(crate::zone::floor_second(after)).map(crate::zone::timestamp)
    }

    /// [`Self::next_after`] on whole unix seconds: the first fire time at or after `unix + 1`.
    pub(crate) fn next_unix(&self, unix: i64) -> Option<i64> {
        // Stay well inside the years jiff can represent; robfig looks up to five years ahead.
        const LAST_SEARCHABLE: i64 = 253_000_000_000; // about year 9987
        if unix >= LAST_SEARCHABLE {
            return None;
        }
        match &self.kind {
            Kind::Spec(spec) => next::spec_next(spec, &self.zone, unix),
            Kind::Every { seconds } => Some(unix + seconds),
        }
    }

    /// An iterator over successive fire times after `after`.
    pub fn iter_after(&self, after: Timestamp) -> impl Iterator<Item = Timestamp> + '_ {
        std::iter::successors(self.next_after(after), move |t| self.next_after(*t))
    }
}
