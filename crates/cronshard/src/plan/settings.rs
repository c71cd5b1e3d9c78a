//! The plan's checked flags (its settings and its window), and the measured memory of a
//! replica that `--memory-per-replica` is checked against.

use std::time::Duration;

use cronshard::plot::number as fmt_num;
use cronshard_types::{DstPolicy, Timestamp};

use super::units::{MIB, mib};
use crate::error::{Error, Result};

/// Resident memory per CronJob a replica holds (with its Jobs), from the `scale` benchmark
/// (docs/benchmarks.md; 100,000 CronJobs of the incident's mix, 65,000 runs due in its
/// window): one replica peaked at 462 MiB, each of four (about 25,000 CronJobs) at most at
/// 156 MiB; e2e/results/scale/report.json has 461.95 and at most 155.52 (VmHWM / 1024, so
/// MiB): (461.95 − 155.52) MiB / 75,000 ≈ 4.18 KiB.
pub(super) const MEMORY_PER_CRONJOB_BYTES: u64 = 4_284;
/// A replica's resident memory before any CronJob, from the same two points:
/// 461.95 MiB − 100,000 × 4.18 KiB ≈ 53 MiB.
pub(super) const MEMORY_BASE_BYTES: u64 = 53 * MIB;

/// The default window start: the next full UTC hour after `now`.
pub(crate) fn next_full_hour(now: Timestamp) -> Timestamp {
    Timestamp::from_second((now.as_second().div_euclid(3600) + 1) * 3600).unwrap_or(now)
}

/// The flags the plan depends on, checked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    pub(super) skew_target_s: f64,
    /// Per replica; 0 = unlimited.
    pub(super) qps: f64,
    /// Shared by all replicas; 0 = unlimited.
    pub(super) admitted_writes_per_s: f64,
    pub(super) memory_per_replica: u64,
}

impl Settings {
    /// Checks the flags' values; each error names its flag.
    pub(crate) fn new(
        skew_target: Duration,
        qps: f64,
        admitted_writes_per_s: f64,
        memory_per_replica: u64,
    ) -> Result<Self> {
        let skew_target_s = skew_target.as_secs_f64();
        if skew_target_s <= 0.0 {
            return Err(Error::Setting("--skew-target must be above zero".to_owned()));
        }
        if !qps.is_finite() || qps < 0.0 {
            return Err(Error::Setting(format!("--qps {}: must be 0 (unlimited) or a positive number", qps)));
        }
        if !admitted_writes_per_s.is_finite() || admitted_writes_per_s < 0.0 {
            return Err(Error::Setting(format!(
                "--admitted-writes-per-s {}: must be 0 (unlimited) or a positive number",
                admitted_writes_per_s
            )));
        }
        if memory_per_replica <= MEMORY_BASE_BYTES {
            return Err(Error::Setting(format!(
                "--memory-per-replica {} MiB: must be above the {} MiB a replica uses before it holds any CronJob",
                fmt_num(mib(memory_per_replica)),
                MEMORY_BASE_BYTES / MIB
            )));
        }
        Ok(Settings { skew_target_s, qps, admitted_writes_per_s, memory_per_replica })
    }
}

/// The minutes planned for, `[start, end)` in unix seconds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    pub(super) start: Timestamp,
    pub(super) start_s: i64,
    pub(super) end_s: i64,
    pub(super) hours: u32,
    /// One second before the start: fire times strictly after it are the ones at or after the start.
    pub(super) after: Timestamp,
    /// How the runs fall around daylight-saving transitions.
    pub(super) dst: DstPolicy,
}

impl Window {
    /// The `hours` from `from`, floored to its minute.
    pub(crate) fn new(from: Timestamp, hours: u32) -> Result<Self> {
        let start_s = from.as_second().div_euclid(60) * 60;
        let end_s = start_s + i64::from(hours) * 3600;
        let outside =
            || Error::Setting(format!("--from {from} plus {hours} h is outside the years this command handles"));
        let start = Timestamp::from_second(start_s).map_err(|_| outside())?;
        let after = Timestamp::from_second(start_s - 1).map_err(|_| outside())?;
        if Timestamp::from_second(end_s).is_err() {
            return Err(outside());
        }
        Ok(Window { start, start_s, end_s, hours, after, dst: DstPolicy::default() })
    }

    /// The same window, its runs under `policy` around daylight-saving transitions.
    pub(crate) fn with_dst_policy(self, policy: DstPolicy) -> Self {
        Window { dst: policy, ..self }
    }

    pub(super) fn minutes(&self) -> usize {
        usize::try_from((self.end_s - self.start_s) / 60).unwrap_or(0)
    }

    /// The index of the minute holding `unix`, if it is inside the window.
    pub(super) fn minute_of(&self, unix: i64) -> Option<usize> {
        if !(self.start_s..self.end_s).contains(&unix) {
            return None;
        }
        usize::try_from((unix - self.start_s) / 60).ok()
    }
}
