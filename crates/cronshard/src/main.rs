//! The `cronshard` binary: command-line entry point.
//!
//! The `*_cmd` modules parse each subcommand's flags; [`replica`] is one controller replica,
//! [`plan`] the capacity plan and [`shadow`] shadow mode. What the project's other binaries
//! share with this one is the `cronshard` library (`cli`, `plot`). Installed (or linked) as
//! `kubectl-cronshard`, the binary is a kubectl plugin: `kubectl cronshard get|status|…`.

mod cluster_cli;
mod error;
mod get_cmd;
mod get_table;
mod plan;
mod plan_cmd;
mod replica;
mod run_cmd;
mod schedule_cmd;
mod shadow;
mod shadow_cmd;
mod status_cmd;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use cronshard::cli;

/// A sharded, multi-replica Kubernetes CronJob controller.
#[derive(Debug, Parser)]
#[command(name = "cronshard", version, about)]
struct Cli {
    #[command(flatten)]
    logging: cli::Logging,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Evaluate a CronJob schedule exactly as the controller does.
    #[command(subcommand)]
    Schedule(schedule_cmd::ScheduleCommand),
    /// Run one controller replica; replicas share the buckets through Leases.
    Run(Box<run_cmd::RunArgs>),
    /// Print the bucket map: members, buckets per member, unowned buckets, last transitions.
    Status(status_cmd::StatusArgs),
    /// Capacity planning: replicas, --qps and memory from `kubectl get cronjobs -A -o json`.
    Plan(plan_cmd::PlanArgs),
    /// Read-only: judge the running CronJob controller (late, missed, duplicate runs) before switching.
    Shadow(Box<shadow_cmd::ShadowArgs>),
    /// List CronJobs with their next run, bucket and the replica that holds it.
    Get(get_cmd::GetArgs),
}

/// The name kubectl finds a plugin by (`kubectl cronshard …` runs `kubectl-cronshard …`).
const PLUGIN_NAME: &str = "kubectl-cronshard";

/// The command line; invoked as the kubectl plugin, help and errors say `kubectl cronshard`.
fn parse() -> Cli {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let plugin = std::path::Path::new(&argv0).file_stem().is_some_and(|stem| stem == PLUGIN_NAME);
    if !plugin {
        return Cli::parse();
    }
    let command = Cli::command().name("kubectl cronshard").bin_name("kubectl cronshard");
    Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit())
}

/// With `--features dhat-heap`, every allocation is recorded and `dhat-heap.json` written at
/// exit (view it with DHAT's viewer): where a replica's bytes go, by call stack.
#[cfg(feature = "dhat-heap")]
#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn main() -> ExitCode {
    #[cfg(feature = "dhat-heap")]
    let _profiler = dhat::Profiler::new_heap();
    let cli = parse();
    cli::init_logs(cli.logging.log_format);
    match cli.command {
        Command::Schedule(cmd) => schedule_cmd::run(cmd),
        Command::Run(args) => run_cmd::run(*args),
        Command::Status(args) => status_cmd::run(args),
        Command::Plan(args) => plan_cmd::run(args),
        Command::Shadow(args) => shadow_cmd::run(*args),
        Command::Get(args) => get_cmd::run(args),
    }
}
