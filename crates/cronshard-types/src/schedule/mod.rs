//! Cron schedules exactly as Kubernetes reads them (robfig/cron v3 `ParseStandard`), fired
//! around daylight-saving transitions as cron does or, on request, as upstream does.

mod dst;
pub(crate) mod field;
mod go_duration;
mod next;
mod parse;

use jiff::Timestamp;

pub use self::dst::DstPolicy;
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
    dst: DstPolicy,
}

impl Schedule {
    /// Parses like robfig/cron v3 `ParseStandard`. A `TZ=<zone> ` or `CRON_TZ=<zone> ` prefix
    /// overrides `default_zone`, which stands for robfig's `time.Local`.
    pub fn parse(expr: &str, default_zone: &Zone) -> Result<Self> {
        let (kind, zone) = parse::parse(expr, default_zone)?;
        Ok(Schedule { kind, zone, dst: DstPolicy::default() })
    }

    /// The same schedule under `policy` around daylight-saving transitions (the default is
    /// [`DstPolicy::Cron`]).
    pub fn with_dst_policy(mut self, policy: DstPolicy) -> Self {
        self.dst = policy;
        self
    }

    /// What the schedule does around daylight-saving transitions.
    pub fn dst_policy(&self) -> DstPolicy {
        self.dst
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
            Kind::Spec(spec) => match self.dst {
                DstPolicy::Upstream => next::spec_next(spec, &self.zone, unix),
                DstPolicy::Cron => dst::cron_next(spec, &self.zone, unix),
            },
            Kind::Every { seconds } => Some(unix + seconds),
        }
    }

    /// An iterator over successive fire times after `after`.
    pub fn iter_after(&self, after: Timestamp) -> impl Iterator<Item = Timestamp> + '_ {
        std::iter::successors(self.next_after(after), move |t| self.next_after(*t))
    }
}
