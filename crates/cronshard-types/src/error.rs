//! The one error type of cronshard-types.

use crate::schedule::field::Field;

/// Everything that can be wrong with a schedule, a time zone or a question asked of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, strum::IntoStaticStr)]
pub enum Error {
    #[error("empty spec string")]
    EmptySchedule,
    #[error("expected exactly 5 fields, found {found}: {schedule:?}")]
    FieldCount { found: usize, schedule: String },
    #[error("invalid {field} field {text:?}: {reason}")]
    Field { field: Field, text: String, reason: FieldError },
    #[error("unrecognized descriptor: {0}")]
    UnknownDescriptor(String),
    #[error("failed to parse duration {text:?} after @every: {reason}")]
    EveryDuration { text: String, reason: String },
    #[error("schedule {schedule:?} has a {prefix} prefix but no fields after it")]
    MissingFieldsAfterZone { schedule: String, prefix: &'static str },
    /// A `TZ=`/`CRON_TZ=` prefix inside the schedule names an unknown zone (robfig's
    /// "provided bad location"); upstream reports it as an unparseable schedule.
    #[error("provided bad location {name}: {reason}")]
    BadScheduleLocation { name: String, reason: String },
    /// `spec.timeZone` (or `--time-zone`) names an unknown zone.
    #[error("unknown time zone {name:?}: {reason}")]
    UnknownTimeZone { name: String, reason: String },
    #[error("startingDeadlineSeconds must not be negative, got {0}")]
    NegativeStartingDeadline(i64),
    /// Valid syntax, but no fire time within five years (e.g. `0 0 30 2 *`): upstream's
    /// `InvalidSchedule` Warning.
    #[error("schedule has no fire time within five years after {after}")]
    NoFireTime { after: jiff::Timestamp },
    /// A `cronshard.io/spread` that is not a duration.
    #[error("spread {text:?} is not a duration such as \"90s\" or \"5m\": {reason}")]
    SpreadUnparsable { text: String, reason: String },
    #[error("spread {text:?} is negative")]
    SpreadNegative { text: String },
    #[error("spread {text:?} on an @every schedule: its runs have no fixed times to spread")]
    SpreadOnEvery { text: String },
    /// A spread that would start a run after the next one is due.
    #[error(
        "spread {text:?} is not shorter than the schedule's interval of {interval_s} s between the runs at {from} and {to}"
    )]
    SpreadTooLong { text: String, interval_s: i64, from: jiff::Timestamp, to: jiff::Timestamp },
}

impl Error {
    /// The variant as a metric or log label: its name.
    pub fn metric_label(&self) -> &'static str {
        self.into()
    }
}

/// Why one field of a five-field schedule is invalid. Messages follow robfig/cron's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    #[error("failed to parse int from {text}: {reason}")]
    NotANumber { text: String, reason: &'static str },
    #[error("negative number ({0}) not allowed")]
    Negative(i64),
    #[error("too many hyphens")]
    TooManyHyphens,
    #[error("too many slashes")]
    TooManySlashes,
    #[error("beginning of range ({start}) below minimum ({min})")]
    BelowMinimum { start: u64, min: u8 },
    #[error("end of range ({end}) above maximum ({max})")]
    AboveMaximum { end: u64, max: u8 },
    #[error("beginning of range ({start}) beyond end of range ({end})")]
    StartAfterEnd { start: u64, end: u64 },
    #[error("step of range should be a positive number")]
    ZeroStep,
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
