//! The upstream arms on the simulator: kube-controller-manager (from the testbed's build)
//! running only its CronJob controller against `cronshard-sim serve`, in JSON. It has no test
//! clock, so the simulator keeps real time and the scenario is replayed on it with its
//! schedules moved to a real minute soon (`cronshard_e2e::real_time`); faults, CronJobs created
//! later and downtime then run as for any arm, and the audit log is analysed as for any arm.

use std::path::Path;
use std::process::Stdio;

use cronshard_e2e::real_time;
use cronshard_e2e::scenario::{CronJobSeed, Scenario};
use cronshard_types::Timestamp;
use tokio::process::{Child, Command};

use crate::arm_spec::upstream_flags;
use crate::procs::{Admin, kubeconfig};

/// Seconds it takes to load CronJobs into the simulator and list them, at most: the first
/// part of the lead before the window, so the window starts on time.
const LOAD_MARGIN_S: f64 = 5.0;
const LOADED_PER_S: f64 = 2_000.0;

/// The scenario's CronJobs on real time: the simulator's clock must be real (a fresh one is),
/// and the scenario's hour falls at the first real minute after loading and `lead_s`.
/// Returns the window's start and the seeds, their schedules moved.
pub(crate) async fn real_time_seeds(
    admin: &Admin,
    scenario: &Scenario,
) -> Result<(Timestamp, Vec<CronJobSeed>), String> {
    let (now, offset) = admin.now().await?;
    if offset != 0.0 {
        return Err(format!(
            "the simulator's clock is {offset} s off real time: kube-controller-manager cannot follow it"
        ));
    }
    let load_s = LOAD_MARGIN_S + scenario.cronjobs as f64 / LOADED_PER_S;
    let herd_at = real_time::next_minute_after(now, scenario.lead_s + load_s);
    let (seeds, start) = real_time::seeds_at(scenario, herd_at)?;
    Ok((start, seeds))
}

/// Sleeps until the machine's clock (the simulator's, on real time) reaches `start`.
pub(crate) async fn sleep_until(start: Timestamp) {
    let left = start.duration_since(Timestamp::now());
    if let Ok(left) = std::time::Duration::try_from(left) {
        tokio::time::sleep(left).await;
    }
}

/// kube-controller-manager as the testbed runs it (only the CronJob controller here: the
/// simulator collects garbage itself), with upstream's client defaults unless the arm tunes
/// them, JSON bodies (the simulator reads no protobuf from controllers), no serving port;
/// as user `bench-<replica>`, so a partition reaches it as it reaches any arm.
pub(crate) fn start_kcm(dir: &Path, url: &str, arm: &str, replica: usize, generation: usize) -> Result<Child, String> {
    let bin = cronshard_e2e::testbed::bin_dir().map_err(|e| e.to_string())?.join("kube-controller-manager");
    let user = format!("bench-{replica}");
    let kc = kubeconfig(dir, url, &user)?;
    let mut args: Vec<String> = [
        "--kubeconfig",
        &kc.to_string_lossy(),
        "--controllers",
        "cronjob-controller",
        "--leader-elect=false",
        "--secure-port",
        "0",
        "--kube-api-content-type",
        "application/json",
        "--kube-api-qps",
        "20",
        "--kube-api-burst",
        "30",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    // Later flags win: the tuned arm's rates replace the defaults above.
    args.extend(upstream_flags(arm).flatten().unwrap_or_default().split_whitespace().map(str::to_owned));
    let name = if generation == 0 { format!("kcm-{user}.log") } else { format!("kcm-{user}-g{generation}.log") };
    let log = std::fs::File::options().create(true).append(true).open(dir.join(name)).map_err(|e| e.to_string())?;
    Command::new(&bin)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))
}
