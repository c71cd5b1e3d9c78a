//! One arm of a benchmark: a fresh simulator, the scenario's CronJobs loaded, the arm's
//! controllers started, the faults applied on time, then the audit log analysed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cronshard_e2e::analysis::analyze;
use cronshard_e2e::report::ArmReport;
use cronshard_e2e::scenario::{CronJobSeed, Fault, Scenario};
use cronshard_e2e::shadow::SHADOW_USER;
use cronshard_types::Timestamp;
use tokio::process::Child;

use crate::procs::{Admin, Proc, sigterm, spawn, start_controller};
use crate::{MAX_PROCESSES, arm_processes};

/// Runs one arm; with `shadow`, `cronshard shadow` watches it.
pub(crate) async fn run_arm(
    bin_dir: &Path,
    scenario: &Scenario,
    arm: &str,
    out: &Path,
    shadow: bool,
) -> Result<ArmReport, String> {
    let (count, kind, _) = arm_processes(arm).ok_or("arm")?;
    let dir = out.join(arm);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (mut sim, url, admin) = start_sim(bin_dir, &dir, scenario).await?;
    let start = hour_ahead(&admin, scenario.lead_s).await?;
    let seeds = scenario.cronjobs(start);
    let initial: Vec<&CronJobSeed> = seeds.iter().filter(|s| s.appears_s == 0.0).collect();
    let later: Vec<&CronJobSeed> = seeds.iter().filter(|s| s.appears_s > 0.0).collect();
    admin.load(&initial).await?;
    if scenario.sim.create_error_rate > 0.0 {
        let body =
            serde_json::json!({"verb": "create", "rate": scenario.sim.create_error_rate}).to_string().into_bytes();
        admin.call("PUT", "/sim/error-rate", body).await?;
    }
    let (from, _) = admin.now().await?;
    let to = from
        .checked_add(jiff::SignedDuration::from_secs_f64(scenario.window_s - scenario.grace_s))
        .map_err(|e| e.to_string())?;
    // Started within the scenario's lead, before the first run is due.
    let watcher = match shadow {
        true => Some(crate::shadow::start(bin_dir, &dir, &url, to).await?),
        false => None,
    };
    let mut controllers = Controllers::start(bin_dir, dir, arm, count, url).await?;
    let mut faults = FaultClock::new(&scenario.faults);
    let mut later_loaded = later.is_empty();
    loop {
        let t = admin.now().await?.0.duration_since(from).as_secs_f64();
        if t >= scenario.window_s {
            break;
        }
        if !later_loaded && scenario.later.as_ref().is_some_and(|l| t >= l.at_s) {
            admin.load(&later).await?;
            later_loaded = true;
        }
        for fault in faults.due(&scenario.faults, t, count) {
            controllers.apply(fault, t, &admin).await?;
        }
        controllers.on_time(t, &admin).await?;
        controllers.sample();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // Beside shadow mode, the controllers stop first: no Job may come after the audit read.
    let (audit, totals) = if watcher.is_some() {
        let totals = controllers.stop().await;
        (admin.call("GET", "/sim/audit", Vec::new()).await?, totals)
    } else {
        let audit = admin.call("GET", "/sim/audit", Vec::new()).await?;
        (audit, controllers.stop().await)
    };
    let records: Vec<serde_json::Value> = audit.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let analysis = analyze(&seeds, &records, from, to, scenario.downtime_s > 0.0, scenario.sim.admitted_writes_per_s);
    let shadow = match watcher {
        Some(w) => Some(w.finish(&analysis, &records).await?),
        None => None,
    };
    sigterm(&sim);
    let _ = tokio::time::timeout(Duration::from_secs(30), sim.wait()).await;
    let round = |v: f64| (v * 100.0).round() / 100.0;
    Ok(ArmReport {
        name: arm.to_owned(),
        replicas: count,
        kind: kind.to_owned(),
        analysis,
        cpu_s: totals.iter().map(|t| round(t.0)).collect(),
        peak_rss_mb: totals.iter().map(|t| round(t.1)).collect(),
        shadow,
        kube: None,
    })
}

/// A fresh `cronshard-sim serve` with the scenario's settings and a token per controller.
pub(crate) async fn start_sim(
    bin_dir: &Path,
    dir: &Path,
    scenario: &Scenario,
) -> Result<(Child, String, Admin), String> {
    let mut tokens: String = (0..MAX_PROCESSES).map(|i| format!("token-bench-{i},bench-{i},{i}\n")).collect();
    tokens.push_str(&format!("token-{SHADOW_USER},{SHADOW_USER},{SHADOW_USER}\n"));
    std::fs::write(dir.join("tokens.csv"), tokens).map_err(|e| e.to_string())?;
    let sim_args: Vec<String> = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--token-file",
        &dir.join("tokens.csv").to_string_lossy(),
        "--admitted-writes-per-s",
        &scenario.sim.admitted_writes_per_s.to_string(),
        "--compaction-interval",
        &format!("{}s", scenario.sim.compaction_interval_s),
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    let (sim, url) = spawn(&bin_dir.join("cronshard-sim"), &sim_args, &dir.join("sim.log")).await?;
    let config = kube::Config::new(url.parse().map_err(|_| "sim URL")?);
    let admin = Admin { client: kube::Client::try_from(config).map_err(|e| e.to_string())? };
    Ok((sim, url, admin))
}

/// Moves the simulator's clock to `lead_s` before the next hour; returns the new now.
async fn hour_ahead(admin: &Admin, lead_s: f64) -> Result<Timestamp, String> {
    let (now, offset) = admin.now().await?;
    let to_hour = 3600.0 - now.as_second().rem_euclid(3600) as f64;
    let shift = (to_hour - lead_s).rem_euclid(3600.0);
    let body = serde_json::json!({"offsetSeconds": offset + shift}).to_string().into_bytes();
    admin.call("PUT", "/sim/clock", body).await?;
    Ok(admin.now().await?.0)
}

/// When each fault fires: once (kill, partition, rolling restart) or every `every_s`
/// (compaction, dropped watches).
struct FaultClock {
    fired: Vec<bool>,
    next: Vec<f64>,
}

impl FaultClock {
    fn new(faults: &[Fault]) -> Self {
        let next = faults
            .iter()
            .map(|f| match f {
                Fault::Compact { at_s, .. } | Fault::DropWatches { at_s, .. } => *at_s,
                _ => f64::INFINITY,
            })
            .collect();
        FaultClock { fired: vec![false; faults.len()], next }
    }

    /// The faults due at `t` (those aimed at a replica the arm lacks never are).
    fn due<'f>(&mut self, faults: &'f [Fault], t: f64, replicas: usize) -> Vec<&'f Fault> {
        let mut due = Vec::new();
        for (k, fault) in faults.iter().enumerate() {
            let once = match fault {
                Fault::Kill { at_s, replica, .. } | Fault::Partition { at_s, replica, .. } => {
                    (*replica < replicas).then_some(*at_s)
                }
                Fault::RollingRestart { at_s, .. } => Some(*at_s),
                Fault::Compact { every_s, .. } | Fault::DropWatches { every_s, .. } => {
                    if t >= self.next[k] {
                        self.next[k] += every_s.max(1.0);
                        due.push(fault);
                    }
                    None
                }
            };
            if let Some(at_s) = once
                && !self.fired[k]
                && t >= at_s
            {
                self.fired[k] = true;
                due.push(fault);
            }
        }
        due
    }
}

/// An arm's controller processes, by replica slot, and what is scheduled to happen to them.
struct Controllers<'a> {
    bin_dir: &'a Path,
    dir: PathBuf,
    arm: &'a str,
    url: String,
    procs: Vec<Option<Proc>>,
    /// Per slot: CPU seconds and peak RSS of the processes that already left it.
    totals: Vec<(f64, f64)>,
    /// (when, replica): restart after a kill.
    restarts: Vec<(f64, usize)>,
    /// (when, replica): end a partition.
    heals: Vec<(f64, usize)>,
    /// (when, replica, start the successor or stop the predecessor): a rolling restart.
    rollout: Vec<(f64, usize, bool)>,
    successors: Vec<Option<Proc>>,
    /// Predecessors told to stop, waited for at the end.
    leaving: Vec<Proc>,
}

impl<'a> Controllers<'a> {
    async fn start(bin_dir: &'a Path, dir: PathBuf, arm: &'a str, count: usize, url: String) -> Result<Self, String> {
        let mut procs = Vec::new();
        for i in 0..count {
            procs.push(Some(Proc::new(start_controller(bin_dir, &dir, arm, i, 0, &url).await?)));
        }
        Ok(Controllers {
            bin_dir,
            dir,
            arm,
            url,
            procs,
            totals: vec![(0.0, 0.0); count],
            restarts: Vec::new(),
            heals: Vec::new(),
            rollout: Vec::new(),
            successors: (0..count).map(|_| None).collect(),
            leaving: Vec::new(),
        })
    }

    async fn apply(&mut self, fault: &Fault, t: f64, admin: &Admin) -> Result<(), String> {
        match fault {
            Fault::Kill { replica, restart_after_s, .. } => {
                if let Some(mut p) = self.procs[*replica].take() {
                    p.sample();
                    self.retire(*replica, &p);
                    let _ = p.child.start_kill();
                    let _ = p.child.wait().await;
                }
                self.restarts.push((t + restart_after_s, *replica));
            }
            Fault::Partition { replica, for_s, .. } => {
                let body = serde_json::json!({"user": format!("bench-{replica}"), "mode": "hang"}).to_string();
                admin.call("POST", "/sim/partition", body.into_bytes()).await?;
                self.heals.push((t + for_s, *replica));
            }
            Fault::RollingRestart { step_s, surge_s, .. } => {
                for r in 0..self.procs.len() {
                    let start = t + step_s * r as f64;
                    self.rollout.push((start, r, true));
                    self.rollout.push((start + surge_s, r, false));
                }
            }
            Fault::Compact { .. } => {
                admin.call("POST", "/sim/compact", Vec::new()).await?;
            }
            Fault::DropWatches { .. } => {
                admin.call("POST", "/sim/drop-watches", Vec::new()).await?;
            }
        }
        Ok(())
    }

    /// Restarts, rollout steps and heals whose time has come.
    async fn on_time(&mut self, t: f64, admin: &Admin) -> Result<(), String> {
        for (at, replica) in std::mem::take(&mut self.restarts) {
            if t < at {
                self.restarts.push((at, replica));
                continue;
            }
            let child = start_controller(self.bin_dir, &self.dir, self.arm, replica, 0, &self.url).await?;
            self.procs[replica] = Some(Proc::new(child));
        }
        for (at, replica, start) in std::mem::take(&mut self.rollout) {
            if t < at {
                self.rollout.push((at, replica, start));
            } else if start {
                let child = start_controller(self.bin_dir, &self.dir, self.arm, replica, 1, &self.url).await?;
                self.successors[replica] = Some(Proc::new(child));
            } else {
                self.hand_over(replica);
            }
        }
        for (at, replica) in std::mem::take(&mut self.heals) {
            if t < at {
                self.heals.push((at, replica));
                continue;
            }
            let body = serde_json::json!({"user": format!("bench-{replica}")}).to_string();
            admin.call("POST", "/sim/heal", body.into_bytes()).await?;
        }
        Ok(())
    }

    /// The successor takes the slot; the predecessor gets SIGTERM, as a Deployment does.
    fn hand_over(&mut self, replica: usize) {
        let Some(successor) = self.successors[replica].take() else { return };
        if let Some(mut old) = self.procs[replica].replace(successor) {
            old.sample();
            self.retire(replica, &old);
            sigterm(&old.child);
            self.leaving.push(old);
        }
    }

    /// A process leaves its slot: its usage so far counts for the slot.
    fn retire(&mut self, replica: usize, p: &Proc) {
        self.totals[replica].0 += p.cpu_s;
        self.totals[replica].1 = self.totals[replica].1.max(p.peak_rss_mb);
    }

    fn sample(&mut self) {
        for p in self.procs.iter_mut().flatten() {
            p.sample();
        }
    }

    /// SIGTERM to every process and a wait for each; returns (CPU s, peak RSS MB) per slot.
    async fn stop(mut self) -> Vec<(f64, f64)> {
        for i in 0..self.procs.len() {
            if let Some(mut p) = self.procs[i].take() {
                p.sample();
                self.retire(i, &p);
                sigterm(&p.child);
                self.leaving.push(p);
            }
        }
        for p in &mut self.leaving {
            let _ = tokio::time::timeout(Duration::from_secs(30), p.child.wait()).await;
        }
        self.totals
    }
}
