//! The `cronshard` binary: command-line entry point.

mod schedule_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A sharded, multi-replica Kubernetes CronJob controller.
#[derive(Debug, Parser)]
#[command(name = "cronshard", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Evaluate a CronJob schedule exactly as the controller does.
    #[command(subcommand)]
    Schedule(schedule_cmd::ScheduleCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Schedule(cmd) => schedule_cmd::run(cmd),
    }
}
