//! What `--out` holds: shadow mode's JSON report, made of the ledger and its totals.

use std::collections::BTreeMap;

use cronshard_types::Timestamp;
use serde::Serialize;

use super::ledger::Ledger;
use super::tally::{CronJobTally, HerdReport};
use super::verdict::Verdict;

/// Skew percentiles in seconds, from the creation of each run's Job to its due time.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SkewReport {
    pub(crate) p50: f64,
    pub(crate) p90: f64,
    pub(crate) p99: f64,
    pub(crate) max: f64,
}

/// What `--out` holds: written every minute and at exit.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Report {
    pub(crate) started: String,
    pub(crate) at: String,
    pub(crate) until: Option<String>,
    /// `i/N` when shadow mode follows one shard of the CronJobs.
    pub(crate) shard: Option<String>,
    pub(crate) cronjobs: usize,
    /// Jobs of those CronJobs created since shadow mode started.
    pub(crate) jobs_seen: u64,
    /// Verdicts by name, `pending` (due, no Job yet, deadline not passed) and `created`.
    pub(crate) totals: BTreeMap<&'static str, u64>,
    pub(crate) skew_s: SkewReport,
    pub(crate) worst_cronjobs: Vec<CronJobTally>,
    pub(crate) herds: Vec<HerdReport>,
}

impl Report {
    pub(crate) fn new(ledger: &Ledger, now: Timestamp, shard: Option<String>) -> Report {
        let tally = ledger.tally();
        let mut totals = tally.verdicts().clone();
        totals.insert("pending", ledger.pending() as u64);
        totals.insert("created", tally.count(Verdict::OnTime) + tally.count(Verdict::Late));
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        Report {
            started: ledger.settings().started.to_string(),
            at: now.to_string(),
            until: ledger.settings().until.map(|u| u.to_string()),
            shard,
            cronjobs: ledger.cronjobs(),
            jobs_seen: ledger.jobs_seen(),
            totals,
            skew_s: SkewReport {
                p50: round(tally.skew_quantile_s(0.50)),
                p90: round(tally.skew_quantile_s(0.90)),
                p99: round(tally.skew_quantile_s(0.99)),
                max: round(tally.skew_quantile_s(1.0)),
            },
            worst_cronjobs: tally.worst(),
            herds: tally.herds(),
        }
    }
}
