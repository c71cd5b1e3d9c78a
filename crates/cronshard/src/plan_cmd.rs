//! `cronshard plan`'s flags and output; the plan itself is [`crate::plan`].

use anyhow::Context as _;
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::plan::{
    Client, ClusterSettings, Settings, SpreadSettings, Window, compute, next_full_hour, parse_quantity, read_items,
    render_text, svg, to_json,
};
use clap::{Args, ValueEnum};
use cronshard_types::Timestamp;
use serde_json::Value;

/// Exit code for unreadable input or an invalid argument (clap uses 2 for usage errors too).
const EXIT_INVALID: u8 = 2;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Output {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    /// Output of `kubectl get cronjobs -A -o json` (or one CronJob, or a JSON array); `-` reads stdin.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    file: PathBuf,
    /// Start of the window (RFC 3339, floored to the minute); default: the next full UTC hour.
    #[arg(long)]
    from: Option<Timestamp>,
    /// Length of the window in hours (1 to 168).
    #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u32).range(1..=168))]
    hours: u32,
    /// How late the 99th-percentile run of the largest herd may be created.
    #[arg(long, default_value = "1s", value_parser = cronshard::cli::parse_duration)]
    skew_target: Duration,
    /// Each replica's client token bucket, as `cronshard run --qps` (0 = unlimited).
    #[arg(long, default_value_t = 1000.0)]
    qps: f64,
    /// Writes per second the API server admits, shared by all replicas (0 = unlimited).
    #[arg(long, default_value_t = 1000.0)]
    admitted_writes_per_s: f64,
    /// Memory limit of one replica, a Kubernetes quantity (512Mi, 1Gi, 800M).
    #[arg(long, default_value = "512Mi", value_parser = parse_quantity)]
    memory_per_replica: u64,
    /// How soon after their due time the largest herd's pods should run: what the Job
    /// controller's and kube-scheduler's rates are planned for.
    #[arg(long, default_value = "60s", value_parser = cronshard::cli::parse_duration)]
    start_target: Duration,
    /// The cluster's kube-controller-manager `--kube-api-qps` now (its Job controller's rate).
    #[arg(long, default_value_t = 20.0)]
    job_controller_qps: f64,
    /// The cluster's kube-controller-manager `--kube-api-burst` now.
    #[arg(long, default_value_t = 30.0)]
    job_controller_burst: f64,
    /// The cluster's kube-scheduler client QPS now (`clientConnection.qps`).
    #[arg(long, default_value_t = 50.0)]
    scheduler_qps: f64,
    /// The cluster's kube-scheduler client burst now (`clientConnection.burst`).
    #[arg(long, default_value_t = 100.0)]
    scheduler_burst: f64,
    /// Also show the window with each selected CronJob's runs spread by a pinned offset within
    /// this duration (as `cronshard.io/spread` would), at the planned create rate.
    #[arg(long, value_name = "DURATION")]
    spread: Option<String>,
    /// Only CronJobs in the Namespaces this label selector picks get --spread; the plan knows
    /// each Namespace's `kubernetes.io/metadata.name` label only.
    #[arg(long, value_name = "SELECTOR", requires = "spread")]
    spread_selector: Option<String>,
    /// Daylight saving: `cron` (cronshard's default) or `upstream` (kube-controller-manager's
    /// runs, to plan for the in-tree controller's herds).
    #[arg(long, default_value = "cron")]
    dst_policy: cronshard_types::DstPolicy,
    /// Also draw the runs per minute as an SVG to this file.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value = "text")]
    output: Output,
}

pub(crate) fn run(args: PlanArgs) -> ExitCode {
    // The only clock read: everything below takes the window's start as a value.
    let from = args.from.unwrap_or_else(|| next_full_hour(Timestamp::now()));
    match execute(&args, from) {
        Ok(text) => {
            // A closed pipe (`| head`) is not an error worth a message.
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e:#}");
            ExitCode::from(EXIT_INVALID)
        }
    }
}

fn execute(args: &PlanArgs, from: Timestamp) -> anyhow::Result<String> {
    let settings = Settings::new(args.skew_target, args.qps, args.admitted_writes_per_s, args.memory_per_replica)?;
    let window = Window::new(from, args.hours)?.with_dst_policy(args.dst_policy);
    let spread = args.spread.as_deref().map(|s| SpreadSettings::new(s, args.spread_selector.as_deref())).transpose()?;
    let cluster = ClusterSettings::new(
        args.start_target,
        Client::new("job-controller", args.job_controller_qps, args.job_controller_burst)?,
        Client::new("scheduler", args.scheduler_qps, args.scheduler_burst)?,
    )?;
    let items = read_items(&args.file)?;
    let mut plan = compute(&items, window, settings).with_cluster(&cluster);
    if let Some(spread) = &spread {
        plan = plan.with_spread(&items, spread);
    }
    let svg_path = match &args.svg {
        Some(path) => {
            std::fs::write(path, svg(&plan)?).with_context(|| format!("--svg {}", path.display()))?;
            Some(path.display().to_string())
        }
        None => None,
    };
    match args.output {
        Output::Text => {
            let mut text = render_text(&plan);
            if let Some(path) = svg_path {
                let _ = writeln!(text, "SVG: {path}");
            }
            Ok(text)
        }
        Output::Json => {
            let mut value = to_json(&plan);
            if let (Some(path), Some(map)) = (svg_path, value.as_object_mut()) {
                map.insert("svg".to_owned(), Value::String(path));
            }
            Ok(serde_json::to_string_pretty(&value)? + "\n")
        }
    }
}
