//! Shadow mode's running totals: verdicts, skew percentiles in fixed memory, the CronJobs
//! that fare worst, and the herds.

use std::collections::{BTreeMap, HashMap};

use cronshard_types::Timestamp;
use hdrhistogram::Histogram;
use serde::Serialize;

use super::verdict::{Judged, Verdict};
use super::views::CronJobView;

/// How many CronJobs the report lists, worst first.
const WORST: usize = 20;
/// How many herds the report lists, latest last.
const HERDS: usize = 100;
/// The longest skew recorded exactly, in milliseconds (a week); longer ones count as this.
const MAX_SKEW_MS: u64 = 7 * 86_400_000;

/// One CronJob's verdicts.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct CronJobTally {
    pub(crate) cronjob: String,
    pub(crate) on_time: u64,
    pub(crate) late: u64,
    pub(crate) missed: u64,
    pub(crate) duplicate: u64,
    pub(crate) unexpected: u64,
    pub(crate) max_skew_s: f64,
}

impl CronJobTally {
    /// Worst first: failures (missed, duplicate, unexpected), then late runs, then the longest skew.
    fn badness(&self) -> (u64, u64, f64) {
        (self.missed + self.duplicate + self.unexpected, self.late, self.max_skew_s)
    }
}

/// The runs due at one instant.
#[derive(Clone, Debug, Default)]
pub(crate) struct HerdTally {
    pub(crate) due: u64,
    pub(crate) created: u64,
    pub(crate) last_create_s: f64,
}

/// Everything judged so far.
#[derive(Debug)]
pub(crate) struct Tally {
    herd_min_runs: usize,
    verdicts: BTreeMap<&'static str, u64>,
    skew_ms: Histogram<u64>,
    cronjobs: HashMap<String, CronJobTally>,
    herds: BTreeMap<i64, HerdTally>,
}

impl Tally {
    pub(crate) fn new(herd_min_runs: usize) -> Self {
        // Three significant digits: a skew of 12.345 s is known to the millisecond.
        let skew_ms = Histogram::new_with_bounds(1, MAX_SKEW_MS, 3).expect("constant bounds are valid");
        Tally {
            herd_min_runs: herd_min_runs.max(1),
            verdicts: Verdict::ALL.iter().map(|v| (v.label(), 0)).collect(),
            skew_ms,
            cronjobs: HashMap::new(),
            herds: BTreeMap::new(),
        }
    }

    /// A run falls due at `due_s` (its herd grows).
    pub(crate) fn due(&mut self, due_s: f64) {
        self.herds.entry(due_s.floor() as i64).or_default().due += 1;
        // Small instants are of no interest once they are ten minutes old.
        if self.herds.len() > 4 * HERDS {
            let min = self.herd_min_runs as u64;
            let recent = due_s as i64 - 600;
            self.herds.retain(|at, h| *at >= recent || h.due >= min);
            while self.herds.len() > 4 * HERDS {
                self.herds.pop_first();
            }
        }
    }

    /// A verdict on a run of `view`; `created` = (due, created) for a run that got its Job.
    pub(crate) fn record(&mut self, view: &CronJobView, judged: &Judged, created: Option<(f64, f64)>) {
        *self.verdicts.entry(judged.verdict.label()).or_default() += 1;
        let key = format!("{}/{}", view.namespace, view.name);
        let c = self.cronjobs.entry(key.clone()).or_insert_with(|| CronJobTally { cronjob: key, ..Default::default() });
        match judged.verdict {
            Verdict::OnTime => c.on_time += 1,
            Verdict::Late => c.late += 1,
            Verdict::Missed => c.missed += 1,
            Verdict::Duplicate => c.duplicate += 1,
            Verdict::Unexpected => c.unexpected += 1,
            Verdict::Skipped => {}
        }
        if let Some(skew) = judged.skew_s {
            c.max_skew_s = c.max_skew_s.max(skew);
            let _ = self.skew_ms.record(((skew * 1000.0).round() as u64).min(MAX_SKEW_MS));
            if let Some((due_s, created_s)) = created
                && let Some(h) = self.herds.get_mut(&(due_s.floor() as i64))
            {
                h.created += 1;
                h.last_create_s = h.last_create_s.max(created_s);
            }
        }
    }

    /// Verdicts by name.
    pub(super) fn verdicts(&self) -> &BTreeMap<&'static str, u64> {
        &self.verdicts
    }

    pub(crate) fn count(&self, verdict: Verdict) -> u64 {
        self.verdicts.get(verdict.label()).copied().unwrap_or(0)
    }

    /// The skew at quantile `q` (0 to 1), seconds.
    pub(crate) fn skew_quantile_s(&self, q: f64) -> f64 {
        if self.skew_ms.is_empty() {
            return 0.0;
        }
        self.skew_ms.value_at_quantile(q) as f64 / 1000.0
    }

    pub(super) fn worst(&self) -> Vec<CronJobTally> {
        let mut all: Vec<&CronJobTally> = self.cronjobs.values().filter(|c| c.badness() > (0, 0, 0.0)).collect();
        all.sort_by(|a, b| b.badness().partial_cmp(&a.badness()).unwrap_or(std::cmp::Ordering::Equal));
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        all.into_iter().take(WORST).map(|c| CronJobTally { max_skew_s: round(c.max_skew_s), ..c.clone() }).collect()
    }

    pub(super) fn herds(&self) -> Vec<HerdReport> {
        let herds: Vec<HerdReport> = self
            .herds
            .iter()
            .filter(|(_, h)| h.due >= self.herd_min_runs as u64)
            .map(|(at, h)| HerdReport {
                at: Timestamp::from_second(*at).map(|t| t.to_string()).unwrap_or_default(),
                runs_due: h.due,
                created: h.created,
                drain_s: (h.created >= h.due).then(|| ((h.last_create_s - *at as f64) * 1000.0).round() / 1000.0),
            })
            .collect();
        let skip = herds.len().saturating_sub(HERDS);
        herds.into_iter().skip(skip).collect()
    }
}

/// A herd in the report.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct HerdReport {
    /// The instant the runs were due.
    pub(crate) at: String,
    pub(crate) runs_due: u64,
    pub(crate) created: u64,
    /// Last create − the instant; `null` until every run of the herd has its Job.
    pub(crate) drain_s: Option<f64>,
}
