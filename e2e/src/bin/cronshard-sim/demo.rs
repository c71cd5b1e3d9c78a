//! `cronshard-sim demo`: a simulated cluster (in this process) with the built-in incident
//! scenario at laptop size, R replica processes (`cronshard run`, the binary beside this one)
//! sharing its buckets, live progress on stdout, and a report at the end. Ctrl-C ends it
//! early, cleanly.

use std::io::Write;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use clap::Args;
use cronshard_e2e::analysis::{Percentiles, analyze, creates};
use cronshard_e2e::report::{ArmReport, Report, SimReport, svg, table};
use cronshard_e2e::scenario::{CronJobSeed, INCIDENT, Scenario};
use cronshard_sim::{Config, Resource, SimState};
use cronshard_types::Timestamp;

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// CronJobs of the incident's mix (every minute, every 5 min, hourly, daily in 4 zones).
    #[arg(long, default_value_t = 2000)]
    cronjobs: usize,
    /// Replica processes.
    #[arg(long, default_value_t = 3)]
    replicas: usize,
    /// How long to run (simulated time runs at real speed, starting 20 s before an hour).
    #[arg(long, default_value = "2m", value_parser = cronshard::cli::parse_duration)]
    duration: Duration,
    /// Where the kubeconfig, logs and report go; default: a new directory under the system's temp dir.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Serve replica i's /metrics on 127.0.0.1:<BASE + i> (for a Prometheus to scrape); default: free ports.
    #[arg(long, value_name = "BASE")]
    metrics_port_base: Option<u16>,
    /// Also run `cronshard shadow` (read-only) judging the replicas: its /metrics on
    /// BASE + replicas, its report in shadow.json.
    #[arg(long)]
    shadow: bool,
}

pub(crate) fn run(args: DemoArgs) -> ExitCode {
    cronshard::cli::block_on(demo(args), 2)
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

async fn demo(args: DemoArgs) -> Result<(), String> {
    if args.replicas == 0 || args.replicas > 16 || args.cronjobs == 0 {
        return Err("--replicas must be 1 to 16 and --cronjobs positive".into());
    }
    let window = args.duration.as_secs_f64().max(30.0);
    let scenario =
        Scenario::parse(INCIDENT, "incident").map_err(|e| e.to_string())?.scaled(Some(args.cronjobs), Some(window));
    let out =
        args.out.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("cronshard-demo-{}", std::process::id())));
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let (sim, url) = start_sim(&scenario).await?;
    let kubeconfig = out.join("kubeconfig");
    std::fs::write(&kubeconfig, crate::serve::kubeconfig(&url, None)).map_err(|e| e.to_string())?;
    let (seeds, start) = load_incident(&sim, &scenario)?;
    say(&format!("cronshard demo: {} CronJobs (incident mix), {} replicas, {} s", seeds.len(), args.replicas, window));
    say(&format!("  watch it:  kubectl --kubeconfig {} get cronjobs,jobs -A", kubeconfig.display()));
    say(&format!("  logs:      {}", out.display()));
    let mut replicas = start_replicas(&args, &kubeconfig, &url, &out)?;
    let shadow = if args.shadow { Some(start_shadow(&args, &kubeconfig, &url, &out)?) } else { None };

    let end = start.checked_add(jiff::SignedDuration::from_secs_f64(window)).unwrap_or(start);
    let mut due_times: Vec<i64> =
        seeds.iter().flat_map(|s| s.expected(start, end, false)).map(|t| t.as_second()).collect();
    due_times.sort_unstable();
    let pids: Vec<u32> = replicas.iter().filter_map(tokio::process::Child::id).collect();
    let mut usage = vec![(0.0, 0.0); pids.len()];
    let interrupted = tokio::select! {
        () = progress(&sim, &seeds, start, window, &due_times, &pids, &mut usage) => false,
        _ = tokio::signal::ctrl_c() => true,
        () = cronshard::cli::terminated() => true,
    };
    if interrupted {
        say("\ninterrupted: stopping the replicas");
    }
    replicas.extend(shadow);
    for child in &replicas {
        if let Some(pid) = child.id() {
            let _ = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status();
        }
    }
    for child in &mut replicas {
        let _ = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
    }
    if args.shadow {
        say(&format!("shadow mode's report: {}", out.join("shadow.json").display()));
    }
    let report = report(&sim, &scenario, &seeds, start, args.replicas, &usage);
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(out.join("report.json"), json + "\n").map_err(|e| e.to_string())?;
    std::fs::write(out.join("report.svg"), svg(&report)?).map_err(|e| e.to_string())?;
    say("");
    say(&table(&report));
    say(&format!("report: {}", out.join("report.json").display()));
    Ok(())
}

/// The simulated API server, in this process, with the scenario's settings; its URL.
async fn start_sim(scenario: &Scenario) -> Result<(SimState, String), String> {
    let mut config = Config::default();
    config.flow.admitted_writes_per_s = scenario.sim.admitted_writes_per_s;
    config.compaction_interval = Duration::from_secs(scenario.sim.compaction_interval_s);
    let sim = SimState::new(config);
    // Dropping the handles detaches the tasks: they run as long as the process.
    drop(sim.spawn_background());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| e.to_string())?;
    let url = format!("http://{}", listener.local_addr().map_err(|e| e.to_string())?);
    let app = cronshard_sim::app(sim.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((sim, url))
}

/// Sets the clock to the scenario's lead before the next hour (so the hourly herd falls
/// inside the run) and loads the CronJobs that exist from the start; those created during
/// the run (unlabelled: the replicas label them) come later.
fn load_incident(sim: &SimState, scenario: &Scenario) -> Result<(Vec<CronJobSeed>, Timestamp), String> {
    let clock = sim.store().clock();
    let to_hour = 3600 - clock.now().as_second().rem_euclid(3600);
    clock.set_offset(clock.offset() + jiff::SignedDuration::from_secs(to_hour - scenario.lead_s as i64));
    let start = clock.now();
    let seeds = scenario.cronjobs(start);
    let buckets = NonZeroU32::new(64).ok_or("buckets")?;
    let body: String =
        seeds.iter().filter(|s| s.appears_s == 0.0).map(|s| s.object(buckets).to_string() + "\n").collect();
    sim.load(body.as_bytes()).map_err(|e| e.to_string())?;
    Ok((seeds, start))
}

/// `cronshard run` processes (the binary beside this one), replica-0 … replica-(R-1).
fn start_replicas(
    args: &DemoArgs,
    kubeconfig: &Path,
    url: &str,
    out: &Path,
) -> Result<Vec<tokio::process::Child>, String> {
    let exe = controller_binary()?;
    let mut replicas = Vec::new();
    for i in 0..args.replicas {
        let log = std::fs::File::create(out.join(format!("replica-{i}.log"))).map_err(|e| e.to_string())?;
        let port = match args.metrics_port_base {
            Some(base) => base
                .checked_add(u16::try_from(i).map_err(|e| e.to_string())?)
                .ok_or("--metrics-port-base leaves no room for every replica's port")?,
            None => 0,
        };
        if port != 0 {
            say(&format!("  replica-{i} metrics: http://127.0.0.1:{port}/metrics"));
        }
        let child = tokio::process::Command::new(&exe)
            .args(["run", "--kubeconfig", &kubeconfig.to_string_lossy(), "--identity", &format!("replica-{i}")])
            .args(["--metrics-addr", &format!("127.0.0.1:{port}"), "--testing-clock-from", url])
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("{}: {e}", exe.display()))?;
        replicas.push(child);
    }
    Ok(replicas)
}

/// `cronshard shadow` judging the replicas, as an operator would run it before switching.
fn start_shadow(args: &DemoArgs, kubeconfig: &Path, url: &str, out: &Path) -> Result<tokio::process::Child, String> {
    let exe = controller_binary()?;
    let port = match args.metrics_port_base {
        Some(base) => base
            .checked_add(u16::try_from(args.replicas).map_err(|e| e.to_string())?)
            .ok_or("--metrics-port-base leaves no room for shadow mode's port")?,
        None => 0,
    };
    if port != 0 {
        say(&format!("  shadow metrics: http://127.0.0.1:{port}/metrics"));
    }
    let log = std::fs::File::create(out.join("shadow.log")).map_err(|e| e.to_string())?;
    tokio::process::Command::new(&exe)
        .args(["shadow", "--kubeconfig", &kubeconfig.to_string_lossy(), "--metrics-addr", &format!("127.0.0.1:{port}")])
        .args(["--out", &out.join("shadow.json").to_string_lossy(), "--testing-clock-from", url])
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{}: {e}", exe.display()))
}

/// The run judged from the simulator's audit log, in the benchmark's report shape.
fn report(
    sim: &SimState,
    scenario: &Scenario,
    seeds: &[CronJobSeed],
    start: Timestamp,
    replicas: usize,
    usage: &[(f64, f64)],
) -> Report {
    let now = sim.store().clock().now();
    // Runs due in the last 10 s may still be in flight when the demo ends: not counted.
    let to = now.checked_sub(jiff::SignedDuration::from_secs(10)).unwrap_or(now);
    let records: Vec<serde_json::Value> =
        sim.0.audit.since(0).iter().filter_map(|r| serde_json::to_value(r).ok()).collect();
    let analysis = analyze(seeds, &records, start, to, false, scenario.sim.admitted_writes_per_s);
    let round = |v: f64| (v * 100.0).round() / 100.0;
    Report {
        scenario: "incident (demo)".into(),
        cronjobs: seeds.len(),
        window_s: now.duration_since(start).as_secs_f64().round(),
        date: Timestamp::now().to_string(),
        machine: format!("{} CPUs", std::thread::available_parallelism().map_or(0, |n| n.get())),
        sim: SimReport {
            admitted_writes_per_s: scenario.sim.admitted_writes_per_s,
            compaction_interval_s: scenario.sim.compaction_interval_s,
        },
        arms: vec![ArmReport {
            name: format!("cronshard-{replicas}"),
            replicas,
            kind: "cronshard at its defaults".into(),
            analysis,
            cpu_s: usage.iter().map(|u| round(u.0)).collect(),
            peak_rss_mb: usage.iter().map(|u| round(u.1)).collect(),
            shadow: None,
            kube: None,
            hops: None,
            end_to_end: None,
            sim_cpu_s: None,
        }],
    }
}

/// Prints one progress line a second until the window has passed.
async fn progress(
    sim: &SimState,
    seeds: &[cronshard_e2e::scenario::CronJobSeed],
    start: Timestamp,
    window: f64,
    due_times: &[i64],
    pids: &[u32],
    usage: &mut [(f64, f64)],
) {
    let replicas = pids.len();
    let mut loaded_later = false;
    let mut seen = 0;
    let mut skews: Vec<f64> = Vec::new();
    let ours: std::collections::HashSet<(&str, &str)> =
        seeds.iter().map(|s| (s.namespace.as_str(), s.name.as_str())).collect();
    let later: Vec<_> = seeds.iter().filter(|s| s.appears_s > 0.0).collect();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = sim.store().clock().now();
        let t = now.duration_since(start).as_secs_f64();
        if !loaded_later && later.first().is_some_and(|s| t >= s.appears_s) {
            loaded_later = true;
            let buckets = NonZeroU32::MIN.saturating_add(63);
            let body: String = later.iter().map(|s| s.object(buckets).to_string() + "\n").collect();
            if let Err(e) = sim.load(body.as_bytes()) {
                say(&format!("cannot add the CronJobs created during the run: {e}"));
            }
        }
        for (pid, u) in pids.iter().zip(usage.iter_mut()) {
            let (cpu, rss) = cronshard_e2e::usage(*pid);
            if cpu > 0.0 {
                *u = (cpu, u.1.max(rss));
            }
        }
        let records: Vec<serde_json::Value> =
            sim.0.audit.since(seen).iter().filter_map(|r| serde_json::to_value(r).ok()).collect();
        seen += records.len();
        for c in creates(&records) {
            if ours.contains(&(c.namespace.as_str(), c.cronjob.as_str())) {
                skews.push((c.at - (c.minute * 60) as f64).max(0.0));
            }
        }
        let due = due_times.partition_point(|t| *t <= now.as_second());
        let p = Percentiles::of(&mut skews.clone());
        let mut per_replica = vec![0usize; replicas];
        let all = |_: &cronshard_sim::store::Object| true;
        if let Ok(page) = sim.store().list(Resource::Leases, None, cronshard_sim::store::ReadAt::Latest, None, 0, &all)
        {
            for lease in &page.items {
                let v = lease.value();
                if lease.name.starts_with("cronshard-bucket-")
                    && let Some(i) = v["spec"]["holderIdentity"].as_str().and_then(|h| h.strip_prefix("replica-"))
                    && let Ok(i) = i.parse::<usize>()
                    && i < replicas
                {
                    per_replica[i] += 1;
                }
            }
        }
        let buckets: Vec<String> = per_replica.iter().enumerate().map(|(i, n)| format!("r{i}:{n}")).collect();
        say(&format!(
            "[{}] due {due:>6}  created {:>6}  skew p50 {:>5.2}s p99 {:>5.2}s  buckets {}",
            now.strftime("%H:%M:%S"),
            skews.len(),
            p.p50,
            p.p99,
            buckets.join(" ")
        ));
        if now.duration_since(start).as_secs_f64() >= window {
            return;
        }
    }
}

/// The `cronshard` binary built beside this one (`cargo build --release -p cronshard -p
/// cronshard-e2e` puts both in one directory).
fn controller_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let controller = exe.with_file_name("cronshard");
    if controller.is_file() {
        Ok(controller)
    } else {
        Err(format!(
            "the demo runs replicas of the controller, and {} does not exist: build both with \
             `cargo build --release -p cronshard -p cronshard-e2e`",
            controller.display()
        ))
    }
}
