//! The verdicts shadow mode gives runs and Jobs.

use serde::Serialize;

/// A verdict on one run, or on one Job that is not the first of its run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// Created within `late_after` of its due time.
    OnTime,
    /// Created, later than `late_after`.
    Late,
    /// No Job by the run's deadline (startingDeadlineSeconds, else the next run) plus grace.
    Missed,
    /// A second (third, …) Job for one scheduled time.
    Duplicate,
    /// A Job the semantics forbid: a time not in the schedule, a suspended CronJob, Forbid
    /// with a run active, or a run started after its deadline.
    Unexpected,
    /// No Job, rightly: the CronJob was suspended, or Forbid with a run active.
    Skipped,
}

impl Verdict {
    pub(crate) const ALL: [Verdict; 6] =
        [Verdict::OnTime, Verdict::Late, Verdict::Missed, Verdict::Duplicate, Verdict::Unexpected, Verdict::Skipped];

    /// The metric label and report key.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Verdict::OnTime => "on_time",
            Verdict::Late => "late",
            Verdict::Missed => "missed",
            Verdict::Duplicate => "duplicate",
            Verdict::Unexpected => "unexpected",
            Verdict::Skipped => "skipped",
        }
    }
}

/// One verdict as it is reached, with the run's skew when a Job was created for it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Judged {
    pub(crate) verdict: Verdict,
    pub(crate) skew_s: Option<f64>,
}
