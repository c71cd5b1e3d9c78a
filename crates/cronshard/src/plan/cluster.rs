//! The whole cluster's part of the plan: the request rates kube-controller-manager's Job
//! controller and kube-scheduler need for the largest herd's pods to run within the start
//! target, the flags that give them, and the herd's end-to-end drain at the cluster's
//! settings now. A herd's Jobs wait for each client in turn; each is a token bucket (client-go's
//! `--kube-api-qps`/`--kube-api-burst`) spending a measured number of requests per run.

use std::time::Duration;

use crate::error::{Error, Result};

/// The Job controller's requests per run while a herd waits for its pods (the pod create, its
/// Event, the Job's status), from `job_controller_requests_per_start` in
/// `e2e/results/cluster-plan/calibration/report.json` (a 1,000-run herd at upstream's
/// default settings; docs/benchmarks.md, "How `cronshard plan` compares").
pub(super) const JOB_CONTROLLER_REQUESTS_PER_RUN: f64 = 2.44;
/// kube-scheduler's requests per pod (its binding and an Event), `requests_per_run` of
/// `kube-scheduler` in the same report (2.0 in every arm of every whole-cluster run).
pub(super) const SCHEDULER_REQUESTS_PER_RUN: f64 = 2.0;
/// Upstream's defaults: kube-controller-manager's `--kube-api-qps`/`--kube-api-burst` and
/// kube-scheduler's `clientConnection.qps`/`burst`.
pub(super) const JOB_CONTROLLER_DEFAULT: Client = Client { qps: 20.0, burst: 30.0 };
pub(super) const SCHEDULER_DEFAULT: Client = Client { qps: 50.0, burst: 100.0 };
/// `--concurrent-job-syncs`: upstream's default, and the requests per second one worker is
/// given in the plan (the tuned setting's 400 QPS over 50 workers kept the client busy).
const JOB_SYNCS_DEFAULT: u64 = 5;
const REQUESTS_PER_S_PER_JOB_SYNC: f64 = 8.0;
/// Recommended client rates are multiples of this.
const QPS_STEP: f64 = 10.0;

/// One client's token bucket: requests per second and the burst it starts a herd with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Client {
    pub(super) qps: f64,
    pub(super) burst: f64,
}

impl Client {
    /// Checks a flag pair: the rate above zero, the burst zero or more, both finite.
    pub(crate) fn new(flag: &str, qps: f64, burst: f64) -> Result<Client> {
        if !qps.is_finite() || qps <= 0.0 {
            return Err(Error::Setting(format!("--{flag}-qps {qps}: must be a positive number")));
        }
        if !burst.is_finite() || burst < 0.0 {
            return Err(Error::Setting(format!("--{flag}-burst {burst}: must be 0 or a positive number")));
        }
        Ok(Client { qps, burst })
    }

    /// Seconds until `requests` have been sent, the first `burst` of them at once.
    pub(super) fn drain_s(self, requests: f64) -> f64 {
        (requests - self.burst).max(0.0) / self.qps
    }
}

/// The cluster as it runs now, and how soon the largest herd's pods should run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ClusterSettings {
    pub(super) start_target_s: f64,
    pub(super) job_controller: Client,
    pub(super) scheduler: Client,
}

impl ClusterSettings {
    pub(crate) fn new(start_target: Duration, job_controller: Client, scheduler: Client) -> Result<Self> {
        let start_target_s = start_target.as_secs_f64();
        if start_target_s <= 0.0 {
            return Err(Error::Setting("--start-target must be above zero".to_owned()));
        }
        Ok(ClusterSettings { start_target_s, job_controller, scheduler })
    }
}

impl Default for ClusterSettings {
    fn default() -> Self {
        ClusterSettings { start_target_s: 60.0, job_controller: JOB_CONTROLLER_DEFAULT, scheduler: SCHEDULER_DEFAULT }
    }
}

/// What one of the cluster's clients needs for the largest herd.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Need {
    pub(super) requests_per_run: f64,
    /// Requests per second for the herd's requests within the start target.
    pub(super) needed_qps: f64,
    /// The recommendation: the needed rate rounded up, never under upstream's default, and
    /// twice that as the burst.
    pub(super) qps: u64,
    pub(super) burst: u64,
    /// The herd's time in this client at the cluster's settings now.
    pub(super) drain_now_s: f64,
}

/// The cluster's part of a plan.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ClusterPlan {
    pub(super) settings_now: (Client, Client),
    pub(super) start_target_s: f64,
    pub(super) herd: u64,
    pub(super) job_controller: Need,
    pub(super) job_syncs: u64,
    pub(super) scheduler: Need,
    /// The herd's due time until its last pod can run, at the cluster's settings now: the
    /// slowest of its hops (each client works while the one before still sends), the
    /// CronJob controller's at the plan's create rate.
    pub(super) predicted_drain_s: f64,
    /// Which hop that is: `cronjob_controller`, `job_controller` or `scheduler`.
    pub(super) limited_by: &'static str,
}

/// The cluster's part of the plan for a largest herd of `herd` runs created at `create_rate`.
pub(super) fn plan(herd: u64, create_rate: f64, settings: &ClusterSettings) -> ClusterPlan {
    let h = herd as f64;
    let need = |per_run: f64, now: Client, default: Client| {
        let needed_qps = h * per_run / settings.start_target_s;
        let qps = ((needed_qps / QPS_STEP).ceil() * QPS_STEP).max(default.qps) as u64;
        // Twice the rate, so a herd's first seconds go at once; upstream's burst while the rate stays.
        let burst = if qps as f64 <= default.qps { default.burst as u64 } else { 2 * qps };
        Need { requests_per_run: per_run, needed_qps, qps, burst, drain_now_s: now.drain_s(h * per_run) }
    };
    let job_controller = need(JOB_CONTROLLER_REQUESTS_PER_RUN, settings.job_controller, JOB_CONTROLLER_DEFAULT);
    let scheduler = need(SCHEDULER_REQUESTS_PER_RUN, settings.scheduler, SCHEDULER_DEFAULT);
    let job_syncs = ((job_controller.qps as f64 / REQUESTS_PER_S_PER_JOB_SYNC).ceil() as u64).max(JOB_SYNCS_DEFAULT);
    let create_s = if create_rate > 0.0 { h / create_rate } else { 0.0 };
    let hops = [
        ("cronjob_controller", create_s),
        ("job_controller", job_controller.drain_now_s),
        ("scheduler", scheduler.drain_now_s),
    ];
    let (limited_by, predicted_drain_s) =
        hops.into_iter().fold(hops[0], |slowest, hop| if hop.1 > slowest.1 { hop } else { slowest });
    ClusterPlan {
        settings_now: (settings.job_controller, settings.scheduler),
        start_target_s: settings.start_target_s,
        herd,
        job_controller,
        job_syncs,
        scheduler,
        predicted_drain_s,
        limited_by,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::testkit::close;

    #[test]
    fn a_burst_goes_at_once_and_the_rest_at_the_rate() {
        let c = Client { qps: 20.0, burst: 30.0 };
        assert!(close(c.drain_s(2_430.0), 120.0));
        assert!(close(c.drain_s(30.0), 0.0));
        assert!(close(c.drain_s(10.0), 0.0));
    }

    #[test]
    fn upstream_defaults_leave_a_1000_run_herd_to_the_job_controller() {
        let p = plan(1000, 600.0, &ClusterSettings::default());
        // 1000 × 2.44 requests at 20/s after a burst of 30.
        assert!(close(p.job_controller.drain_now_s, (2_440.0 - 30.0) / 20.0), "{p:?}");
        assert!(close(p.scheduler.drain_now_s, (2_000.0 - 100.0) / 50.0), "{p:?}");
        assert_eq!(p.limited_by, "job_controller");
        assert!(close(p.predicted_drain_s, p.job_controller.drain_now_s));
        // Within 60 s: 2440 / 60 = 40.7 requests/s for the Job controller, 33.3 for the scheduler.
        assert!(close(p.job_controller.needed_qps, 2_440.0 / 60.0), "{p:?}");
        assert_eq!((p.job_controller.qps, p.job_controller.burst, p.job_syncs), (50, 100, 7));
        // The scheduler's need is under its default: the default stays.
        assert_eq!((p.scheduler.qps, p.scheduler.burst), (50, 100));
    }

    #[test]
    fn a_small_herd_keeps_upstreams_defaults() {
        let p = plan(100, 600.0, &ClusterSettings::default());
        // 100 × 2.44 / 60 = 4.1 requests/s: under the Job controller's 20.
        assert_eq!((p.job_controller.qps, p.job_controller.burst, p.job_syncs), (20, 30, 5));
        assert_eq!((p.scheduler.qps, p.scheduler.burst), (50, 100));
    }

    #[test]
    fn a_large_herd_needs_more_of_every_client() {
        let settings = ClusterSettings::new(Duration::from_secs(30), JOB_CONTROLLER_DEFAULT, SCHEDULER_DEFAULT);
        let p = plan(12_000, 1_000.0, &settings.expect("settings"));
        // 12,000 × 2.44 / 30 = 976/s; 12,000 × 2 / 30 = 800/s.
        assert_eq!((p.job_controller.qps, p.job_controller.burst, p.job_syncs), (980, 1960, 123));
        assert_eq!((p.scheduler.qps, p.scheduler.burst), (800, 1600));
    }

    #[test]
    fn the_slowest_hop_decides_the_drain() {
        let fast = Client { qps: 10_000.0, burst: 0.0 };
        let settings = ClusterSettings { start_target_s: 60.0, job_controller: fast, scheduler: fast };
        let p = plan(1000, 100.0, &settings);
        assert_eq!(p.limited_by, "cronjob_controller");
        assert!(close(p.predicted_drain_s, 10.0), "{p:?}");
        let slow_scheduler = ClusterSettings { scheduler: Client { qps: 10.0, burst: 0.0 }, ..settings };
        let p = plan(1000, 100.0, &slow_scheduler);
        assert_eq!(p.limited_by, "scheduler");
        assert!(close(p.predicted_drain_s, 200.0), "{p:?}");
        assert!(close(plan(0, 0.0, &settings).predicted_drain_s, 0.0));
    }

    #[test]
    fn flags_are_checked() {
        assert!(Client::new("job-controller", 0.0, 30.0).is_err());
        assert!(Client::new("job-controller", f64::NAN, 30.0).is_err());
        assert!(Client::new("scheduler", 50.0, -1.0).is_err());
        assert_eq!(Client::new("scheduler", 50.0, 0.0).ok(), Some(Client { qps: 50.0, burst: 0.0 }));
        let error = ClusterSettings::new(Duration::ZERO, JOB_CONTROLLER_DEFAULT, SCHEDULER_DEFAULT)
            .expect_err("a zero start target");
        assert_eq!(error.to_string(), "--start-target must be above zero");
    }
}
