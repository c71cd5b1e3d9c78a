//! `cronshard-sim`: the simulated Kubernetes API server (`serve`) and the demo (`demo`: the
//! simulator with replica processes of the `cronshard` binary beside this one). Kept out of
//! the controller's binary: the simulator's admin API has no authentication, and a
//! production image has no use for a fake API server.

mod demo;
mod serve;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use cronshard::cli;

/// The simulated Kubernetes API server of cronshard's tests, benchmarks and demo.
#[derive(Debug, Parser)]
#[command(name = "cronshard-sim", version, about)]
struct Cli {
    #[command(flatten)]
    logging: cli::Logging,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the simulated Kubernetes API server (for tests, benchmarks and demos).
    Serve(Box<serve::SimArgs>),
    /// A simulated cluster with replicas in one command: live progress, then a report.
    Demo(demo::DemoArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    cli::init_logs(cli.logging.log_format);
    match cli.command {
        Command::Serve(args) => serve::run(*args),
        Command::Demo(args) => demo::run(args),
    }
}
