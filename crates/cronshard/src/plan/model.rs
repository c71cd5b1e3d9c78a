//! The capacity model: the minute statistics, the largest herds, and the
//! replicas, per-replica QPS and memory that create a herd within the skew target.

use serde_json::Value;

use super::cluster::{ClusterPlan, ClusterSettings};
use super::load::{Load, count_runs};
use super::settings::{MEMORY_BASE_BYTES, MEMORY_PER_CRONJOB_BYTES, Settings, Window};
use super::spread_comparison::{Comparison, SpreadSettings, compare};

/// The plan is for the 99th-percentile run: in a herd of H created at `rate` per second it
/// waits 0.99 · H / rate.
const P99: f64 = 0.99;
/// API writes per run: the Job create (the only one on the critical path), the CronJob status
/// update, about one Event, and later the Job's delete in history cleanup.
pub(super) const WRITES_PER_RUN: u64 = 4;
/// One replica leaves every CronJob unscheduled while it restarts.
pub(super) const MIN_REPLICAS: u64 = 2;
/// Recommended `--qps` values are multiples of this.
const QPS_STEP: u64 = 50;
/// How many invalid CronJobs and herds the text lists.
pub(super) const SHOWN: usize = 10;

/// One minute of the window by the runs due in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Herd {
    /// The minute's first unix second.
    pub(super) minute: i64,
    pub(super) runs: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct MinuteStats {
    pub(super) mean: f64,
    pub(super) p50: u64,
    pub(super) p99: u64,
    pub(super) max: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Capacity {
    pub(super) skew_target_s: f64,
    /// The largest herd, H.
    pub(super) herd: u64,
    pub(super) needed_create_rate: f64,
    /// The create rate the replicas are sized for: the needed one, or the server's admitted
    /// rate when that is lower.
    pub(super) client_rate: f64,
    pub(super) server_limited: bool,
    pub(super) replicas_for_qps: u64,
    pub(super) replicas_for_memory: u64,
    pub(super) replicas: u64,
    pub(super) qps_per_replica: u64,
    /// Creates per second the recommendation gives: replicas × QPS, capped by the server.
    pub(super) planned_rate: f64,
    /// Expected peak RSS of one replica at the recommended count, in bytes.
    pub(super) memory_per_replica: u64,
    pub(super) achievable_p99_skew_s: f64,
    pub(super) limited_by: &'static str,
}

#[derive(Clone, Debug)]
/// A plan: what [`compute`] found, to be shown as text, JSON and SVG.
pub(crate) struct Plan {
    pub(super) window: Window,
    pub(super) settings: Settings,
    pub(super) load: Load,
    pub(super) runs: u64,
    pub(super) stats: MinuteStats,
    pub(super) herds: Vec<Herd>,
    pub(super) capacity: Capacity,
    /// With `--spread`: the window without and with it, at the planned create rate.
    pub(super) spread: Option<Comparison>,
    /// The largest herd on its way to running pods: the Job controller and kube-scheduler.
    pub(super) cluster: ClusterPlan,
}

impl Plan {
    pub(super) fn runs_per_day(&self) -> f64 {
        self.runs as f64 * 24.0 / f64::from(self.window.hours)
    }

    pub(super) fn writes_per_day(&self) -> f64 {
        self.runs_per_day() * WRITES_PER_RUN as f64
    }
}

/// The whole plan, from the parsed items and the window: pure, no clock, no I/O.
pub(crate) fn compute(items: &[Value], window: Window, settings: Settings) -> Plan {
    let load = count_runs(items, &window);
    let runs = load.per_minute.iter().sum::<u64>();
    let stats = minute_stats(&load.per_minute);
    let herds = herds(&load.per_minute, window.start_s, SHOWN);
    let capacity = capacity(stats.max, load.total, &settings);
    let cluster = super::cluster::plan(capacity.herd, capacity.planned_rate, &ClusterSettings::default());
    Plan { window, settings, load, runs, stats, herds, capacity, spread: None, cluster }
}

impl Plan {
    /// The cluster's part for a cluster that runs with `cluster`'s client settings.
    pub(crate) fn with_cluster(mut self, cluster: &ClusterSettings) -> Plan {
        self.cluster = super::cluster::plan(self.capacity.herd, self.capacity.planned_rate, cluster);
        self
    }

    /// Adds the comparison with and without `spread`, at the create rate this plan gives.
    pub(crate) fn with_spread(mut self, items: &[Value], spread: &SpreadSettings) -> Plan {
        self.spread = Some(compare(items, &self.window, spread, self.capacity.planned_rate));
        self
    }
}

/// Mean and nearest-rank percentiles of runs per minute, over every minute of the window.
fn minute_stats(per_minute: &[u64]) -> MinuteStats {
    let mut sorted = per_minute.to_vec();
    sorted.sort_unstable();
    let total = sorted.iter().sum::<u64>();
    let mean = if sorted.is_empty() { 0.0 } else { total as f64 / sorted.len() as f64 };
    MinuteStats {
        mean,
        p50: nearest_rank(&sorted, 50),
        p99: nearest_rank(&sorted, 99),
        max: sorted.last().copied().unwrap_or(0),
    }
}

fn nearest_rank(sorted: &[u64], percent: usize) -> u64 {
    let rank = (sorted.len() * percent).div_ceil(100);
    sorted.get(rank.saturating_sub(1)).copied().unwrap_or(0)
}

/// The `count` minutes with the most runs, largest first, earlier first among equals.
fn herds(per_minute: &[u64], start_s: i64, count: usize) -> Vec<Herd> {
    let mut minutes: Vec<(usize, u64)> = per_minute.iter().copied().enumerate().filter(|&(_, runs)| runs > 0).collect();
    minutes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    minutes
        .into_iter()
        .take(count)
        .map(|(index, runs)| Herd { minute: start_s + 60 * i64::try_from(index).unwrap_or(0), runs })
        .collect()
}

/// Rounds up, ignoring float noise (0.99 × 100 is 99.00000000000001, which must not add a replica).
fn ceil_u64(x: f64) -> u64 {
    (x - 1e-9).ceil().max(0.0) as u64
}

/// Replicas and per-replica QPS for a largest herd of `herd` runs and `cronjobs` objects.
fn capacity(herd: u64, cronjobs: u64, settings: &Settings) -> Capacity {
    let h = herd as f64;
    let needed = P99 * h / settings.skew_target_s;
    let admitted = (settings.admitted_writes_per_s > 0.0).then_some(settings.admitted_writes_per_s);
    let server_limited = admitted.is_some_and(|a| needed > a);
    // Client budget beyond what the server admits only earns 429s.
    let client_rate = match admitted {
        Some(a) if server_limited => a,
        _ => needed,
    };
    let replicas_for_qps =
        if settings.qps > 0.0 { ceil_u64(client_rate / settings.qps) } else { u64::from(client_rate > 0.0) };
    let room = settings.memory_per_replica.saturating_sub(MEMORY_BASE_BYTES).max(1);
    let replicas_for_memory = cronjobs.saturating_mul(MEMORY_PER_CRONJOB_BYTES).div_ceil(room);
    let replicas = replicas_for_qps.max(replicas_for_memory).max(MIN_REPLICAS);
    let memory_per_replica =
        MEMORY_BASE_BYTES.saturating_add(cronjobs.saturating_mul(MEMORY_PER_CRONJOB_BYTES) / replicas);
    let mut qps_per_replica = ceil_u64(client_rate / replicas as f64).div_ceil(QPS_STEP).max(1) * QPS_STEP;
    if let Some(a) = admitted {
        qps_per_replica = qps_per_replica.min((a.floor() as u64).max(1));
    }
    let total = replicas.saturating_mul(qps_per_replica) as f64;
    let planned_rate = admitted.map_or(total, |a| total.min(a));
    let achievable_p99_skew_s = if herd == 0 { 0.0 } else { P99 * h / planned_rate };
    let limited_by = if server_limited {
        "api_server"
    } else if replicas_for_qps >= replicas_for_memory && replicas_for_qps >= MIN_REPLICAS {
        "client_qps"
    } else if replicas_for_memory >= MIN_REPLICAS {
        "memory"
    } else {
        "availability"
    };
    Capacity {
        skew_target_s: settings.skew_target_s,
        herd,
        needed_create_rate: needed,
        client_rate,
        server_limited,
        replicas_for_qps,
        replicas_for_memory,
        replicas,
        qps_per_replica,
        planned_rate,
        memory_per_replica,
        achievable_p99_skew_s,
        limited_by,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::settings::next_full_hour;
    use crate::plan::testkit::{at, close, settings};
    use crate::plan::units::{MIB, mib, utc_second};

    #[test]
    fn herds_are_largest_first_then_earliest() {
        let start = at("2026-12-01T00:00:00Z").as_second();
        let herds = herds(&[2, 0, 5, 5, 1, 0], start, 10);
        let expected =
            [(2, 5), (3, 5), (0, 2), (4, 1)].map(|(minute, runs)| Herd { minute: start + minute * 60, runs }).to_vec();
        assert_eq!(herds, expected);
        assert_eq!(super::herds(&[1, 3, 2], start, 2).len(), 2);
        assert_eq!(utc_second(start + 120), "2026-12-01T00:02:00Z");
    }

    #[test]
    fn minute_stats_use_nearest_rank() {
        // 100 minutes: 98 with one run, one with 50, one with 100.
        let mut per_minute = vec![1; 98];
        per_minute.extend([50, 100]);
        let stats = minute_stats(&per_minute);
        assert_eq!((stats.p50, stats.p99, stats.max), (1, 50, 100));
        assert!(close(stats.mean, 2.48));
        assert_eq!(minute_stats(&[]).max, 0);
    }

    #[test]
    fn replicas_for_the_client_budget() {
        // H = 1100, T = 1 s: 1089 creates/s; two replicas at 1000 QPS; 545 each, rounded to 550.
        let c = capacity(1100, 1200, &settings(1.0, 1000.0, 5000.0, 512 * MIB));
        assert!(close(c.needed_create_rate, 1089.0), "{c:?}");
        assert_eq!((c.replicas_for_qps, c.replicas_for_memory, c.replicas, c.qps_per_replica), (2, 1, 2, 550));
        assert!(!c.server_limited);
        assert_eq!(c.limited_by, "client_qps");
        assert!(close(c.achievable_p99_skew_s, 0.99), "{c:?}");
        // A longer target needs proportionally less.
        let c = capacity(1100, 1200, &settings(10.0, 100.0, 5000.0, 512 * MIB));
        assert!(close(c.needed_create_rate, 108.9), "{c:?}");
        assert_eq!((c.replicas_for_qps, c.replicas, c.qps_per_replica), (2, 2, 100));
    }

    #[test]
    fn the_server_can_be_the_limit() {
        // 9900 creates/s needed, 1000 writes/s admitted for everyone: no replica count helps.
        let c = capacity(10_000, 10_000, &settings(1.0, 1000.0, 1000.0, 512 * MIB));
        assert!(c.server_limited);
        assert_eq!(c.limited_by, "api_server");
        assert!(close(c.client_rate, 1000.0));
        assert_eq!((c.replicas_for_qps, c.replicas, c.qps_per_replica), (1, 2, 500));
        assert!(close(c.achievable_p99_skew_s, 9.9), "{c:?}");
        assert!(close(c.planned_rate, 1000.0));
    }

    #[test]
    fn memory_can_decide_the_replicas() {
        // 100,000 × 4,284 B over (160 − 53) MiB is 3.8: four replicas.
        let c = capacity(100, 100_000, &settings(1.0, 1000.0, 1000.0, 160 * MIB));
        assert_eq!((c.replicas_for_qps, c.replicas_for_memory, c.replicas), (1, 4, 4));
        assert_eq!(c.limited_by, "memory");
        // The measured point it comes from: about 155.5 MiB each for four replicas.
        assert!((155.0..156.0).contains(&mib(c.memory_per_replica)), "{c:?}");
        // ceil(99 / 4) = 25, rounded up to 50.
        assert_eq!(c.qps_per_replica, 50);
        assert_eq!(capacity(100, 100_000, &settings(1.0, 1000.0, 1000.0, 512 * MIB)).replicas_for_memory, 1);
    }

    #[test]
    fn qps_is_never_above_the_admitted_rate() {
        let c = capacity(10, 10, &settings(1.0, 1000.0, 30.0, 512 * MIB));
        assert_eq!((c.replicas, c.qps_per_replica, c.limited_by), (2, 30, "availability"));
        // No runs at all: still two replicas and a real limit (0 would mean unlimited).
        let c = capacity(0, 0, &settings(1.0, 0.0, 0.0, 512 * MIB));
        assert_eq!((c.replicas, c.qps_per_replica, c.replicas_for_qps), (2, 50, 0));
        assert!(close(c.achievable_p99_skew_s, 0.0));
        // Unlimited client and server: one replica's worth of budget, never limited.
        let c = capacity(1000, 10, &settings(0.5, 0.0, 0.0, 512 * MIB));
        assert_eq!((c.replicas_for_qps, c.replicas, c.qps_per_replica), (1, 2, 1000));
        assert!(!c.server_limited);
    }

    #[test]
    fn the_default_window_starts_at_the_next_full_hour() {
        assert_eq!(next_full_hour(at("2026-12-01T10:20:30.5Z")), at("2026-12-01T11:00:00Z"));
        assert_eq!(next_full_hour(at("2026-12-01T10:00:00Z")), at("2026-12-01T11:00:00Z"));
        assert!(Window::new(at("9999-12-29T00:00:00Z"), 168).is_err());
    }
}
