//! Cron schedules exactly as Kubernetes reads them (robfig/cron v3 `ParseStandard`).

pub(crate) mod field;
mod go_duration;
mod next;
mod parse;

use jiff::Timestamp;

pub use self::field::Field;
pub(crate) use self::go_duration::parse as parse_go_duration;
pub use self::parse::{Kind, SpecFields};

use crate::error::Result;
use crate::zone::Zone;

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
        let (kind, zone) = parse::parse(expr, default_zone)?;
        Ok(Schedule { kind, zone })
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
