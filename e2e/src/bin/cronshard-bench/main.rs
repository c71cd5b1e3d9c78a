//! The benchmark harness (docs/benchmarks.md): for each arm, a fresh `cronshard-sim serve`
//! with the scenario's settings, the scenario's CronJobs bulk-loaded, the arm's controller
//! processes started, faults applied on time; then the audit log is read and compared with
//! what was due. Writes `report.json` and `report.svg` to `--out` and prints a table.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod arm;
mod arm_spec;
mod bound_jobs;
mod cluster;
mod control_plane;
mod controllers;
mod hours;
mod kube;
mod launch;
mod loading;
mod procs;
mod profile;
mod shadow;
mod sim_upstream;
mod window;

use clap::Parser;
use cronshard_e2e::report::{Report, SimReport, svg, table};
use cronshard_e2e::scenario::{Fault, Scenario, builtin_path};
use cronshard_types::Timestamp;

use self::arm::run_arm;
use self::arm_spec::{arm_processes, upstream_flags};

#[derive(Debug, Parser)]
#[command(about = "Runs a benchmark scenario against cronshard and the baseline controllers")]
struct Args {
    /// A shipped scenario (incident, incident-spread, incident-cluster, incident-cluster-growth,
    /// herd, failover, degraded, catchup, scale, smoke) or a path.
    #[arg(long)]
    scenario: String,
    /// Comma-separated: cronshard-R (R replicas), cronshard-R-fixed (the same without the
    /// adaptive client rate), cronshard-R-unreserved (no pause of lower-priority work before a
    /// herd), cronshard-R-capped (each replica at most --qps 1000), cronshard-R-unlimited (no
    /// client-side rate limit), cronshard-R-sharded (the server's ShardedListAndWatch gate
    /// on: no CronJob labelled), v1, v2,
    /// v2-tuned (simulator only), upstream, upstream-tuned (kube-controller-manager's CronJob
    /// controller; on the simulator on real time, the scenario's schedules moved to a real
    /// minute).
    #[arg(long, value_delimiter = ',', default_value = "cronshard-1,v2")]
    arms: Vec<String>,
    #[arg(long)]
    out: PathBuf,
    /// Scale the scenario to this many CronJobs.
    #[arg(long)]
    cronjobs: Option<usize>,
    /// Scale the measured window (faults keep their relative place).
    #[arg(long)]
    window_s: Option<f64>,
    /// The simulator's admitted write rate instead of the scenario's.
    #[arg(long)]
    admitted_writes_per_s: Option<f64>,
    /// Where to run: `sim` (a fresh cronshard-sim per arm), `kube` (a fresh real control
    /// plane per arm from scripts/kube-testbed, with kube-apiserver's audit log; every CronJob
    /// fires at one chosen minute, since a real server's clock cannot be moved) or `cluster`
    /// (`kube` as a whole cluster: Job controller, kube-scheduler and kwok's nodes, each run
    /// followed to its running pod).
    #[arg(long, value_enum, default_value_t = Target::Sim)]
    target: Target,
    /// `--target cluster`: the cluster's client settings, comma-separated; each arm runs on
    /// each: `default` (upstream's) and `tuned` (for a large cluster).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "tuned")]
    cluster_settings: Vec<cluster::Settings>,
    /// `--target cluster`: kwok's fake nodes.
    #[arg(long, default_value_t = 3)]
    nodes: u32,
    /// `--target cluster`: how long each pod runs (seconds).
    #[arg(long, default_value_t = 30)]
    pod_run_s: u64,
    /// Also run `cronshard shadow` (read-only, user `shadow`) beside each arm, and compare its
    /// verdicts with the audit log's.
    #[arg(long)]
    shadow: bool,
    /// `--target kube`: profile kube-apiserver's CPU for this many seconds from a second
    /// before the herd (`kube-apiserver.cpu.pb.gz`, and its top functions by `go tool pprof`
    /// in `kube-apiserver.cpu.txt`, in each arm's folder).
    #[arg(long, value_name = "SECONDS")]
    apiserver_profile_s: Option<u64>,
    /// `--target kube` or `cluster`: the hour boundaries the run covers. A real server's clock
    /// cannot be moved, so whole minutes `--hour-s` apart stand for them: CronJobs that fire
    /// every minute keep their schedule, every other one fires at each of those minutes, and
    /// the scenario's later CronJobs are created on its clock, in time for the next boundary.
    #[arg(long, default_value_t = 1)]
    hours: u32,
    /// `--target kube` or `cluster`: the real seconds that stand for an hour between two
    /// boundaries (whole minutes; all boundaries within one real hour).
    #[arg(long, default_value_t = 300)]
    hour_s: i64,
    /// Where `cronshard` and `cronshard-baseline` are; default: beside this program.
    #[arg(long)]
    bin_dir: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Target {
    Sim,
    Kube,
    Cluster,
}

fn main() -> ExitCode {
    cronshard_e2e::main_with(run(Args::parse()))
}

async fn run(args: Args) -> Result<(), String> {
    let path =
        if Path::new(&args.scenario).exists() { PathBuf::from(&args.scenario) } else { builtin_path(&args.scenario) };
    let mut scenario = Scenario::load(&path).map_err(|e| e.to_string())?.scaled(args.cronjobs, args.window_s);
    if let Some(rate) = args.admitted_writes_per_s {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(format!("--admitted-writes-per-s {rate}: give a rate above 0"));
        }
        scenario.sim.admitted_writes_per_s = rate;
    }
    let bin_dir = match args.bin_dir.clone() {
        Some(d) => d,
        None => std::env::current_exe().map_err(|e| e.to_string())?.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    for bin in ["cronshard", "cronshard-sim", "cronshard-baseline"] {
        if !bin_dir.join(bin).exists() {
            return Err(format!(
                "{} not found: build it first (cargo build --release -p cronshard -p cronshard-e2e)",
                bin_dir.join(bin).display()
            ));
        }
    }
    check_arms(&args, &scenario)?;
    let hours = hours::Hours::new(args.hours, args.hour_s)?;
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let mut arms = Vec::new();
    for arm in &args.arms {
        tracing::info!(%arm, scenario = %scenario.name, cronjobs = scenario.cronjobs, "running arm");
        match args.target {
            Target::Sim => arms.push(run_arm(&bin_dir, &scenario, arm, &args.out, args.shadow).await?),
            Target::Kube => {
                let kube = (args.apiserver_profile_s, None, hours);
                arms.push(kube::run_arm(&bin_dir, &scenario, arm, &args.out, kube).await?);
            }
            Target::Cluster => {
                for &settings in &args.cluster_settings {
                    let run = cluster::Run { settings, nodes: args.nodes, pod_run_s: args.pod_run_s };
                    // A folder per setting; a report line per arm and setting when there are several.
                    let name = match args.cluster_settings.len() {
                        1 => arm.clone(),
                        _ => format!("{arm}@{}", settings.name()),
                    };
                    let out = args.out.join(settings.name());
                    let mut report =
                        kube::run_arm(&bin_dir, &scenario, arm, &out, (args.apiserver_profile_s, Some(run), hours))
                            .await?;
                    report.name = name;
                    arms.push(report);
                }
            }
        }
    }
    let report = Report {
        scenario: scenario.name.clone(),
        cronjobs: scenario.cronjobs
            + scenario.later.as_ref().map_or(0, |l| (scenario.cronjobs as f64 * l.ratio).round() as usize),
        window_s: scenario.window_s,
        date: Timestamp::now().to_string(),
        machine: machine(),
        sim: SimReport {
            admitted_writes_per_s: scenario.sim.admitted_writes_per_s,
            compaction_interval_s: scenario.sim.compaction_interval_s,
        },
        arms,
    };
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(args.out.join("report.json"), json + "\n").map_err(|e| e.to_string())?;
    std::fs::write(args.out.join("report.svg"), svg(&report)?).map_err(|e| e.to_string())?;
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{}", table(&report));
    let _ = writeln!(out, "report: {}", args.out.join("report.json").display());
    Ok(())
}

/// Every arm exists and suits the target. On the simulator, kube-controller-manager runs
/// what can be replayed on real time (schedules it can move); `--target kube` runs herds and
/// the faults that reach a process (kill, pause, rolling restart), kube-controller-manager
/// herds only.
fn check_arms(args: &Args, scenario: &Scenario) -> Result<(), String> {
    for arm in &args.arms {
        arm_processes(arm).ok_or_else(|| {
            format!(
                "unknown arm {arm:?}: use cronshard-R, cronshard-R-fixed, cronshard-R-unreserved, cronshard-R-capped, cronshard-R-unlimited, v1, v2, v2-tuned, upstream or upstream-tuned"
            )
        })?;
        let upstream = upstream_flags(arm).is_some();
        let baseline = matches!(arm.as_str(), "v1" | "v2" | "v2-tuned");
        match args.target {
            Target::Sim if upstream => {
                // Its scenario is replayed on real time: every schedule must move.
                let herd_at = cronshard_e2e::real_time::next_minute_after(Timestamp::now(), 0.0);
                cronshard_e2e::real_time::seeds_at(scenario, herd_at)
                    .map_err(|e| format!("arm {arm} (kube-controller-manager, on real time): {e}"))?;
                if args.shadow {
                    return Err(format!(
                        "arm {arm}: --shadow is not run beside kube-controller-manager; run it with the other arms"
                    ));
                }
            }
            Target::Kube | Target::Cluster if baseline => {
                return Err(format!(
                    "arm {arm} is a re-implementation for the simulator; on --target kube use upstream"
                ));
            }
            _ => {}
        }
    }
    if args.apiserver_profile_s.is_some() && args.target == Target::Sim {
        return Err("--apiserver-profile-s profiles kube-apiserver: use it with --target kube or cluster".into());
    }
    if args.target == Target::Cluster && (args.nodes == 0 || args.pod_run_s == 0 || args.cluster_settings.is_empty()) {
        return Err("--target cluster: --nodes and --pod-run-s must be 1 or more, --cluster-settings not empty".into());
    }
    if args.target == Target::Sim && (args.hours != 1 || args.hour_s != 300) {
        return Err("--hours and --hour-s move a real server's hours: the simulator's clock reaches real ones".into());
    }
    if args.apiserver_profile_s == Some(0) {
        return Err("--apiserver-profile-s 0: give the profile's length in seconds, above 0".into());
    }
    if args.target != Target::Sim {
        if args.shadow {
            return Err("--shadow runs with --target sim only".into());
        }
        if scenario.downtime_s > 0.0 {
            return Err(format!(
                "scenario {}: --target kube cannot stop the controllers on a moved clock; it runs herds, growth and failovers",
                scenario.name
            ));
        }
        if let Some(fault) =
            scenario.faults.iter().find(|f| matches!(f, Fault::Compact { .. } | Fault::DropWatches { .. }))
        {
            return Err(format!(
                "scenario {}: {fault:?} is the simulator's fault; on --target kube only kill, partition (a pause) and rolling_restart run",
                scenario.name
            ));
        }
        if let Some(arm) = args.arms.iter().find(|a| upstream_flags(a).is_some() && !scenario.faults.is_empty()) {
            return Err(format!("arm {arm}: kube-controller-manager runs herds only, without faults"));
        }
    }
    Ok(())
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_default();
    format!("{cpus} CPUs, {model}")
}
