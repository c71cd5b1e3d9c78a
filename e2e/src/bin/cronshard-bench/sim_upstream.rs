//! The upstream arms on the simulator: kube-controller-manager (from the testbed's build)
//! running only its CronJob controller against a fresh `cronshard-sim serve`, in JSON. It
//! has no test clock, so the simulator keeps real time and the scenario's CronJobs fire at
//! one chosen minute, as on a real control plane; the audit log is analysed as for any arm.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use cronshard_e2e::analysis::analyze;
use cronshard_e2e::report::ArmReport;
use cronshard_e2e::scenario::Scenario;
use cronshard_types::Timestamp;
use tokio::process::{Child, Command};

use crate::arm::start_sim;
use crate::kube::{herd_seeds, upstream_flags};
use crate::procs::{Proc, kubeconfig, sigterm};

/// Seconds between loading the CronJobs and their minute: the simulator loads 10,000 in well
/// under a second, and kube-controller-manager's informers list them in a few.
const LEAD_S: i64 = 30;

pub(crate) async fn run_arm(bin_dir: &Path, scenario: &Scenario, arm: &str, out: &Path) -> Result<ArmReport, String> {
    let (_, kind, _) = crate::arm_processes(arm).ok_or("arm")?;
    let dir = out.join(arm);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (mut sim, url, admin) = start_sim(bin_dir, &dir, scenario).await?;
    let (seeds, herd_at) = herd_seeds(scenario, LEAD_S + scenario.cronjobs as i64 / 1000);
    admin.load(&seeds.iter().collect::<Vec<_>>()).await?;
    let (from, offset) = admin.now().await?;
    if offset != 0.0 {
        return Err(format!(
            "the simulator's clock is {offset} s off real time: kube-controller-manager cannot follow it"
        ));
    }
    let mut kcm = Proc::new(start_kcm(&dir, &url, arm)?);
    let end = herd_at
        .checked_add(jiff::SignedDuration::from_secs_f64(scenario.window_s - scenario.lead_s))
        .map_err(|e| e.to_string())?;
    while Timestamp::now() < end {
        kcm.sample();
        if let Ok(Some(status)) = kcm.child.try_wait() {
            return Err(format!("kube-controller-manager exited ({status}); see {}", dir.join("kcm.log").display()));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let audit = admin.call("GET", "/sim/audit", Vec::new()).await?;
    kcm.sample();
    sigterm(&kcm.child);
    let _ = tokio::time::timeout(Duration::from_secs(30), kcm.child.wait()).await;
    let records: Vec<serde_json::Value> = audit.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let to = end.checked_sub(jiff::SignedDuration::from_secs_f64(scenario.grace_s)).map_err(|e| e.to_string())?;
    let analysis = analyze(&seeds, &records, from, to, false, scenario.sim.admitted_writes_per_s);
    sigterm(&sim);
    let _ = tokio::time::timeout(Duration::from_secs(30), sim.wait()).await;
    let round = |v: f64| (v * 100.0).round() / 100.0;
    Ok(ArmReport {
        name: arm.to_owned(),
        replicas: 1,
        kind: kind.to_owned(),
        analysis,
        cpu_s: vec![round(kcm.cpu_s)],
        peak_rss_mb: vec![round(kcm.peak_rss_mb)],
        shadow: None,
        kube: None,
    })
}

/// kube-controller-manager as the testbed runs it (only the CronJob controller here: the
/// simulator collects garbage itself), with upstream's client defaults unless the arm tunes
/// them, JSON bodies (the simulator reads no protobuf from controllers), no serving port.
fn start_kcm(dir: &Path, url: &str, arm: &str) -> Result<Child, String> {
    let bin = cronshard_e2e::testbed::bin_dir().map_err(|e| e.to_string())?.join("kube-controller-manager");
    let kc = kubeconfig(dir, url, "bench-0")?;
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
    let log = std::fs::File::create(dir.join("kcm.log")).map_err(|e| e.to_string())?;
    Command::new(&bin)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))
}
