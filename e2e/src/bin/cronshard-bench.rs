//! The benchmark harness (docs/benchmarks.md): for each arm, a fresh `cronshard-sim serve`
//! with the scenario's settings, the scenario's CronJobs bulk-loaded, the arm's controller
//! processes started, faults applied on time; then the audit log is read and compared with
//! what was due. Writes `report.json` and `report.svg` to `--out` and prints a table.

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use clap::Parser;
use cronshard_e2e::analysis::analyze;
use cronshard_e2e::report::{ArmReport, Report, SimReport, svg, table};
use cronshard_e2e::scenario::{CronJobSeed, Fault, Scenario, builtin_path};
use cronshard_e2e::usage;
use cronshard_types::Timestamp;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

#[derive(Debug, Parser)]
#[command(about = "Runs a benchmark scenario against cronshard and the baseline controllers")]
struct Args {
    /// A shipped scenario (incident, herd, failover, degraded, catchup, scale, smoke) or a path.
    #[arg(long)]
    scenario: String,
    /// Comma-separated: cronshard-R (R replicas), v1, v2, v2-tuned.
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
    /// Where `cronshard` and `cronshard-baseline` are; default: beside this program.
    #[arg(long)]
    bin_dir: Option<PathBuf>,
}

const MAX_PROCESSES: usize = 16;

fn main() -> ExitCode {
    cronshard_e2e::main_with(run(Args::parse()))
}

async fn run(args: Args) -> Result<(), String> {
    let path =
        if Path::new(&args.scenario).exists() { PathBuf::from(&args.scenario) } else { builtin_path(&args.scenario) };
    let scenario = Scenario::load(&path).map_err(|e| e.to_string())?.scaled(args.cronjobs, args.window_s);
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
    for arm in &args.arms {
        arm_processes(arm).ok_or_else(|| format!("unknown arm {arm:?}: use cronshard-R, v1, v2 or v2-tuned"))?;
    }
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let mut arms = Vec::new();
    for arm in &args.arms {
        tracing::info!(%arm, scenario = %scenario.name, cronjobs = scenario.cronjobs, "running arm");
        arms.push(run_arm(&bin_dir, &scenario, arm, &args.out).await?);
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

/// (processes, kind, command-line arguments per process) of an arm.
fn arm_processes(arm: &str) -> Option<(usize, &'static str, Vec<String>)> {
    let baseline = |algo: &str, extra: &[&str]| {
        let mut a = vec!["--algo".to_owned(), algo.to_owned()];
        a.extend(extra.iter().map(|s| (*s).to_owned()));
        a
    };
    match arm {
        "v1" => Some((1, "re-implementation of the in-tree v1 controller (10 s sweeps, 20 QPS)", baseline("v1", &[]))),
        "v2" => Some((1, "re-implementation of the in-tree v2 controller (5 workers, 20 QPS)", baseline("v2", &[]))),
        "v2-tuned" => Some((
            1,
            "re-implementation of the in-tree v2 controller, 50 workers, cronshard's client budget",
            baseline("v2", &["--workers", "50", "--qps", "1000", "--burst", "1000"]),
        )),
        _ => {
            let r: usize = arm.strip_prefix("cronshard-")?.parse().ok()?;
            (1..=MAX_PROCESSES).contains(&r).then(|| (r, "cronshard at its defaults", Vec::new()))
        }
    }
}

/// A small client for the simulator's admin API.
struct Admin {
    client: kube::Client,
}

impl Admin {
    async fn call(&self, method: &str, path: &str, body: Vec<u8>) -> Result<String, String> {
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .body(body)
            .map_err(|e| e.to_string())?;
        self.client.request_text(request).await.map_err(|e| format!("{method} {path}: {e}"))
    }

    async fn now(&self) -> Result<(Timestamp, f64), String> {
        let clock: serde_json::Value =
            serde_json::from_str(&self.call("GET", "/sim/clock", Vec::new()).await?).map_err(|e| e.to_string())?;
        let now = clock["now"].as_str().and_then(|t| t.parse().ok()).ok_or("no clock")?;
        Ok((now, clock["offsetSeconds"].as_f64().unwrap_or(0.0)))
    }

    async fn load(&self, seeds: &[&CronJobSeed]) -> Result<(), String> {
        let buckets = std::num::NonZeroU32::new(64).ok_or("buckets")?;
        for chunk in seeds.chunks(20_000) {
            let mut body = String::new();
            for s in chunk {
                body.push_str(&s.object(buckets).to_string());
                body.push('\n');
            }
            self.call("POST", "/sim/load", body.into_bytes()).await?;
        }
        Ok(())
    }
}

struct Proc {
    child: Child,
    cpu_s: f64,
    peak_rss_mb: f64,
}

async fn spawn(bin: &Path, args: &[String], log: &Path) -> Result<(Child, String), String> {
    let stderr = std::fs::File::create(log).map_err(|e| e.to_string())?;
    let mut child = Command::new(bin)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut line = String::new();
    let mut reader = BufReader::new(stdout);
    tokio::time::timeout(Duration::from_secs(120), reader.read_line(&mut line))
        .await
        .map_err(|_| format!("{} did not start", bin.display()))?
        .map_err(|e| e.to_string())?;
    // Keep reading so the process never blocks on a full pipe.
    tokio::spawn(async move {
        let mut sink = String::new();
        while reader.read_line(&mut sink).await.is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
    Ok((child, line.trim().to_owned()))
}

fn kubeconfig(dir: &Path, url: &str, user: &str) -> Result<PathBuf, String> {
    let path = dir.join(format!("kubeconfig-{user}"));
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {url}\nusers:\n- name: u\n  user:\n    \
         token: token-{user}\ncontexts:\n- name: sim\n  context:\n    cluster: sim\n    user: u\n    namespace: default\n\
         current-context: sim\n"
    );
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    Ok(path)
}

fn sigterm(child: &Child) {
    if let Some(pid) = child.id() {
        let _ = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status();
    }
}

/// Starts controller `i` of an arm; `generation` > 0 is a successor in a rolling restart (a
/// new pod: a new identity, the same service account).
async fn start_controller(
    bin_dir: &Path,
    dir: &Path,
    arm: &str,
    i: usize,
    generation: usize,
    url: &str,
) -> Result<Child, String> {
    let (_, _, extra) = arm_processes(arm).ok_or("arm")?;
    let user = format!("bench-{i}");
    let kc = kubeconfig(dir, url, &user)?;
    let kc = kc.to_string_lossy().into_owned();
    let identity = if generation == 0 { user.clone() } else { format!("{user}-g{generation}") };
    let (bin, mut args) = if arm.starts_with("cronshard-") {
        (
            bin_dir.join("cronshard"),
            vec!["run", "--kubeconfig", &kc, "--identity", &identity, "--metrics-addr", "127.0.0.1:0"]
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>(),
        )
    } else {
        let mut a = vec!["--kubeconfig".to_owned(), kc.clone(), "--identity".to_owned(), identity.clone()];
        a.extend(extra);
        (bin_dir.join("cronshard-baseline"), a)
    };
    args.extend(["--testing-clock-from".to_owned(), url.to_owned()]);
    if !arm.starts_with("cronshard-") {
        // The baseline prints nothing on stdout: give spawn() its first line another way.
        let log = dir.join(format!("{identity}.log"));
        let stderr = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        return Command::new(&bin)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("{}: {e}", bin.display()));
    }
    Ok(spawn(&bin, &args, &dir.join(format!("{identity}.log"))).await?.0)
}

async fn run_arm(bin_dir: &Path, scenario: &Scenario, arm: &str, out: &Path) -> Result<ArmReport, String> {
    let (count, kind, _) = arm_processes(arm).ok_or("arm")?;
    let dir = out.join(arm);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let tokens: String = (0..MAX_PROCESSES).map(|i| format!("token-bench-{i},bench-{i},{i}\n")).collect();
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
    let (mut sim, url) = spawn(&bin_dir.join("cronshard-sim"), &sim_args, &dir.join("sim.log")).await?;
    let admin = Admin {
        client: kube::Client::try_from(kube::Config::new(url.parse().map_err(|_| "sim URL")?))
            .map_err(|e| e.to_string())?,
    };

    // The clock: `lead_s` before the next hour.
    let (now, offset) = admin.now().await?;
    let to_hour = 3600.0 - now.as_second().rem_euclid(3600) as f64;
    let shift = (to_hour - scenario.lead_s).rem_euclid(3600.0);
    let body = serde_json::json!({"offsetSeconds": offset + shift}).to_string().into_bytes();
    admin.call("PUT", "/sim/clock", body).await?;
    let (start, _) = admin.now().await?;
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

    let mut procs: Vec<Option<Proc>> = Vec::new();
    for i in 0..count {
        let child = start_controller(bin_dir, &dir, arm, i, 0, &url).await?;
        procs.push(Some(Proc { child, cpu_s: 0.0, peak_rss_mb: 0.0 }));
    }
    let mut totals = vec![(0.0f64, 0.0f64); count];
    let mut restarts: Vec<(f64, usize)> = Vec::new();
    let mut heals: Vec<(f64, usize)> = Vec::new();
    let mut fired = vec![false; scenario.faults.len()];
    let mut periodic_next: Vec<f64> = scenario
        .faults
        .iter()
        .map(|f| match f {
            Fault::Compact { at_s, .. } | Fault::DropWatches { at_s, .. } => *at_s,
            _ => f64::INFINITY,
        })
        .collect();
    let mut later_loaded = later.is_empty();
    // Rolling restart: (when, replica, start the successor or stop the predecessor).
    let mut rollout: Vec<(f64, usize, bool)> = Vec::new();
    let mut successors: Vec<Option<Proc>> = (0..count).map(|_| None).collect();
    let mut leaving: Vec<Proc> = Vec::new();
    loop {
        let (now, _) = admin.now().await?;
        let t = now.duration_since(from).as_secs_f64();
        if t >= scenario.window_s {
            break;
        }
        if !later_loaded && scenario.later.as_ref().is_some_and(|l| t >= l.at_s) {
            admin.load(&later).await?;
            later_loaded = true;
        }
        for (k, fault) in scenario.faults.iter().enumerate() {
            match fault {
                Fault::Kill { at_s, replica, restart_after_s } if !fired[k] && t >= *at_s && *replica < count => {
                    fired[k] = true;
                    if let Some(mut p) = procs[*replica].take() {
                        if let Some(pid) = p.child.id() {
                            let (cpu, rss) = usage(pid);
                            totals[*replica].0 += cpu;
                            totals[*replica].1 = totals[*replica].1.max(rss);
                        }
                        let _ = p.child.start_kill();
                        let _ = p.child.wait().await;
                    }
                    restarts.push((t + restart_after_s, *replica));
                }
                Fault::Partition { at_s, replica, for_s } if !fired[k] && t >= *at_s && *replica < count => {
                    fired[k] = true;
                    let body = serde_json::json!({"user": format!("bench-{replica}"), "mode": "hang"}).to_string();
                    admin.call("POST", "/sim/partition", body.into_bytes()).await?;
                    heals.push((t + for_s, *replica));
                }
                Fault::RollingRestart { at_s, step_s, surge_s } if !fired[k] && t >= *at_s => {
                    fired[k] = true;
                    for r in 0..count {
                        let start = t + step_s * r as f64;
                        rollout.push((start, r, true));
                        rollout.push((start + surge_s, r, false));
                    }
                }
                Fault::Compact { every_s, .. } if t >= periodic_next[k] => {
                    periodic_next[k] += every_s.max(1.0);
                    admin.call("POST", "/sim/compact", Vec::new()).await?;
                }
                Fault::DropWatches { every_s, .. } if t >= periodic_next[k] => {
                    periodic_next[k] += every_s.max(1.0);
                    admin.call("POST", "/sim/drop-watches", Vec::new()).await?;
                }
                _ => {}
            }
        }
        for (at, replica) in std::mem::take(&mut restarts) {
            if t >= at {
                let child = start_controller(bin_dir, &dir, arm, replica, 0, &url).await?;
                procs[replica] = Some(Proc { child, cpu_s: 0.0, peak_rss_mb: 0.0 });
            } else {
                restarts.push((at, replica));
            }
        }
        for (at, replica, start) in std::mem::take(&mut rollout) {
            if t < at {
                rollout.push((at, replica, start));
            } else if start {
                let child = start_controller(bin_dir, &dir, arm, replica, 1, &url).await?;
                successors[replica] = Some(Proc { child, cpu_s: 0.0, peak_rss_mb: 0.0 });
            } else if let Some(successor) = successors[replica].take() {
                // The old process's usage so far counts for this replica slot, like a kill's.
                if let Some(mut old) = procs[replica].replace(successor) {
                    if let Some(pid) = old.child.id() {
                        let (cpu, rss) = usage(pid);
                        totals[replica].0 += cpu;
                        totals[replica].1 = totals[replica].1.max(rss.max(old.peak_rss_mb));
                        old.cpu_s = 0.0;
                    }
                    sigterm(&old.child);
                    leaving.push(old);
                }
            }
        }
        for (at, replica) in std::mem::take(&mut heals) {
            if t >= at {
                let body = serde_json::json!({"user": format!("bench-{replica}")}).to_string();
                admin.call("POST", "/sim/heal", body.into_bytes()).await?;
            } else {
                heals.push((at, replica));
            }
        }
        for p in procs.iter_mut().flatten() {
            if let Some(pid) = p.child.id() {
                let (cpu, rss) = usage(pid);
                p.cpu_s = cpu;
                p.peak_rss_mb = p.peak_rss_mb.max(rss);
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let audit = admin.call("GET", "/sim/audit", Vec::new()).await?;
    for (i, p) in procs.iter_mut().enumerate() {
        if let Some(p) = p {
            if let Some(pid) = p.child.id() {
                let (cpu, rss) = usage(pid);
                p.cpu_s = cpu;
                p.peak_rss_mb = p.peak_rss_mb.max(rss);
            }
            totals[i].0 += p.cpu_s;
            totals[i].1 = totals[i].1.max(p.peak_rss_mb);
            sigterm(&p.child);
        }
    }
    for p in procs.iter_mut().flatten().chain(leaving.iter_mut()) {
        let _ = tokio::time::timeout(Duration::from_secs(30), p.child.wait()).await;
    }
    sigterm(&sim);
    let _ = tokio::time::timeout(Duration::from_secs(30), sim.wait()).await;

    let records: Vec<serde_json::Value> = audit.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let to = from
        .checked_add(jiff::SignedDuration::from_secs_f64(scenario.window_s - scenario.grace_s))
        .map_err(|e| e.to_string())?;
    let analysis = analyze(&seeds, &records, from, to, scenario.downtime_s > 0.0, scenario.sim.admitted_writes_per_s);
    let round = |v: f64| (v * 100.0).round() / 100.0;
    Ok(ArmReport {
        name: arm.to_owned(),
        replicas: count,
        kind: kind.to_owned(),
        analysis,
        cpu_s: totals.iter().map(|t| round(t.0)).collect(),
        peak_rss_mb: totals.iter().map(|t| round(t.1)).collect(),
    })
}
