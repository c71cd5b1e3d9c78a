//! The `cronshard` binary: command-line entry point.

mod demo_cmd;
mod plan_cmd;
mod run_cmd;
mod schedule_cmd;
mod sim_cmd;
mod status_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A sharded, multi-replica Kubernetes CronJob controller.
#[derive(Debug, Parser)]
#[command(name = "cronshard", version, about)]
struct Cli {
    /// Log lines on stderr: `text` (colour only on a terminal) or `json` (one object per line).
    #[arg(long, global = true, env = "CRONSHARD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// A simulated cluster with replicas in one command: live progress, then a report.
    Demo(demo_cmd::DemoArgs),
    /// Evaluate a CronJob schedule exactly as the controller does.
    #[command(subcommand)]
    Schedule(schedule_cmd::ScheduleCommand),
    /// Run the simulated Kubernetes API server (for tests, benchmarks and demos).
    Sim(Box<sim_cmd::SimArgs>),
    /// Run one controller replica; replicas share the buckets through Leases.
    Run(Box<run_cmd::RunArgs>),
    /// Print the bucket map: members, buckets per member, unowned buckets, last transitions.
    Status(status_cmd::StatusArgs),
    /// Capacity planning: replicas, --qps and memory from `kubectl get cronjobs -A -o json`.
    Plan(plan_cmd::PlanArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Logs go to stderr, so stdout stays for command output (addresses, times, JSON).
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter);
    match cli.log_format {
        LogFormat::Json => logs.json().init(),
        LogFormat::Text => logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init(),
    }
    match cli.command {
        Command::Demo(args) => demo_cmd::run(args),
        Command::Schedule(cmd) => schedule_cmd::run(cmd),
        Command::Sim(args) => sim_cmd::run(*args),
        Command::Run(args) => run_cmd::run(*args),
        Command::Status(args) => status_cmd::run(args),
        Command::Plan(args) => plan_cmd::run(args),
    }
}
