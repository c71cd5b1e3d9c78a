//! One arm of a benchmark: a fresh simulator, the scenario's CronJobs loaded, the arm's
//! controllers started (kube-controller-manager for the upstream arms), the faults applied on
//! time, then the audit log analysed.

use std::path::Path;
use std::time::Duration;

use cronshard_e2e::analysis::analyze;
use cronshard_e2e::report::ArmReport;
use cronshard_e2e::scenario::{CronJobSeed, Scenario};
use cronshard_e2e::shadow::SHADOW_USER;
use cronshard_types::Timestamp;
use tokio::process::Child;

use crate::arm_spec::{MAX_PROCESSES, arm_processes, server_filters, upstream_flags};
use crate::controllers::{Controllers, FaultClock, Server};
use crate::procs::{Admin, sigterm, spawn};

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
    let (mut sim, url, admin) = start_sim(bin_dir, &dir, scenario, server_filters(arm)).await?;
    // kube-controller-manager reads the machine's clock: the scenario comes to it on real
    // time; every other arm follows the simulator's clock, moved to just before an hour.
    let real_time = upstream_flags(arm).is_some();
    let (start, seeds) = if real_time {
        crate::sim_upstream::real_time_seeds(&admin, scenario).await?
    } else {
        let start = hour_ahead(&admin, scenario.lead_s).await?;
        (start, scenario.cronjobs(start))
    };
    let initial: Vec<&CronJobSeed> = seeds.iter().filter(|s| s.appears_s == 0.0).collect();
    let later: Vec<&CronJobSeed> = seeds.iter().filter(|s| s.appears_s > 0.0).collect();
    admin.load(&initial).await?;
    if scenario.sim.create_error_rate > 0.0 {
        let body =
            serde_json::json!({"verb": "create", "rate": scenario.sim.create_error_rate}).to_string().into_bytes();
        admin.call("PUT", "/sim/error-rate", body).await?;
    }
    if real_time {
        crate::sim_upstream::sleep_until(start).await;
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
    let mut controllers =
        Controllers::start(bin_dir, dir.clone(), arm, count, Server::Sim { url: url.clone(), admin: &admin }).await?;
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
            controllers.apply(fault, t).await?;
        }
        controllers.on_time(t).await?;
        controllers.sample()?;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let (audit, totals) = stop_and_read_audit(controllers, &admin, watcher.is_some()).await?;
    // Kept beside the logs: the report is computed from it, and can be checked against it.
    std::fs::write(dir.join("audit.jsonl"), &audit).map_err(|e| format!("{}: {e}", dir.display()))?;
    let records: Vec<serde_json::Value> = audit.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let analysis = analyze(&seeds, &records, from, to, scenario.downtime_s > 0.0, scenario.sim.admitted_writes_per_s);
    let shadow = match watcher {
        Some(w) => Some(w.finish(&analysis, &records).await?),
        None => None,
    };
    let sim_cpu_s = sim.id().map(|pid| cronshard_e2e::usage(pid).0);
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
        hops: None,
        end_to_end: None,
        sim_cpu_s: sim_cpu_s.map(round),
    })
}

/// Stops the controllers and reads the audit log; returns it with (CPU s, peak RSS MB) per
/// slot. Beside shadow mode (`stop_first`), the controllers stop first: no Job may come after
/// the audit read.
async fn stop_and_read_audit(
    controllers: Controllers<'_>,
    admin: &Admin,
    stop_first: bool,
) -> Result<(String, Vec<(f64, f64)>), String> {
    if stop_first {
        let totals = controllers.stop().await;
        Ok((admin.call("GET", "/sim/audit", Vec::new()).await?, totals))
    } else {
        let audit = admin.call("GET", "/sim/audit", Vec::new()).await?;
        Ok((audit, controllers.stop().await))
    }
}

/// A fresh `cronshard-sim serve` with the scenario's settings and a token per controller
/// (with `shard_gate`, its `ShardedListAndWatch` gate on).
pub(crate) async fn start_sim(
    bin_dir: &Path,
    dir: &Path,
    scenario: &Scenario,
    shard_gate: bool,
) -> Result<(Child, String, Admin), String> {
    let mut tokens: String = (0..MAX_PROCESSES).map(|i| format!("token-bench-{i},bench-{i},{i}\n")).collect();
    tokens.push_str(&format!("token-{SHADOW_USER},{SHADOW_USER},{SHADOW_USER}\n"));
    std::fs::write(dir.join("tokens.csv"), tokens).map_err(|e| e.to_string())?;
    let gate = format!("ShardedListAndWatch={shard_gate}");
    let sim_args: Vec<String> = [
        "serve",
        "--feature-gates",
        &gate,
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
