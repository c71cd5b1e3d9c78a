//! `cronshard schedule next|due`: the controller's schedule arithmetic on the command line.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use cronshard_types::{CronJobSchedule, DstPolicy, Error, Timestamp};

/// Exit code for an invalid schedule, zone or argument (clap uses 2 for usage errors too).
const EXIT_INVALID: u8 = 2;
/// Exit code for a valid schedule that has no fire time.
const EXIT_NO_TIME: u8 = 1;

#[derive(Debug, Subcommand)]
pub(crate) enum ScheduleCommand {
    /// Print the next fire times, one RFC 3339 timestamp per line in the zone's offset.
    Next(NextArgs),
    /// Print the run that is due as JSON: {"due": RFC3339|null, "too_many_missed": bool}.
    Due(DueArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ScheduleArgs {
    /// The schedule, as in a CronJob's spec.schedule (five fields or a descriptor).
    schedule: String,
    /// IANA time zone, as in spec.timeZone (default UTC).
    #[arg(long)]
    time_zone: Option<String>,
    /// Daylight saving: `cron` (a specific time runs once when clocks go back, and right after
    /// the gap when they go forward) or `upstream` (kube-controller-manager's answers exactly).
    #[arg(long, default_value = "cron")]
    dst_policy: DstPolicy,
}

#[derive(Debug, Args)]
pub(crate) struct NextArgs {
    #[command(flatten)]
    schedule: ScheduleArgs,
    /// Start after this instant (RFC 3339); default now.
    #[arg(long)]
    after: Option<Timestamp>,
    /// How many fire times to print.
    #[arg(short = 'n', default_value_t = 1)]
    count: usize,
}

#[derive(Debug, Args)]
pub(crate) struct DueArgs {
    #[command(flatten)]
    schedule: ScheduleArgs,
    /// status.lastScheduleTime, else metadata.creationTimestamp (RFC 3339), before any deadline.
    #[arg(long)]
    earliest: Timestamp,
    /// The controller's current time (RFC 3339).
    #[arg(long)]
    now: Timestamp,
    /// spec.startingDeadlineSeconds; raises earliest to now minus this.
    #[arg(long, allow_negative_numbers = true)]
    starting_deadline_seconds: Option<i64>,
}

pub(crate) fn run(cmd: ScheduleCommand) -> ExitCode {
    let result = match cmd {
        ScheduleCommand::Next(args) => next(args),
        ScheduleCommand::Due(args) => due(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => fail(&err),
    }
}

fn load(args: &ScheduleArgs) -> Result<CronJobSchedule, Error> {
    Ok(CronJobSchedule::new(&args.schedule, args.time_zone.as_deref())?.with_dst_policy(args.dst_policy))
}

fn next(args: NextArgs) -> Result<ExitCode, Error> {
    let cronjob = load(&args.schedule)?;
    let after = args.after.unwrap_or_else(Timestamp::now);
    let zone = cronjob.schedule().zone();
    let lines: Vec<String> =
        cronjob.schedule().iter_after(after).take(args.count).map(|t| zone.format_rfc3339(t)).collect();
    if lines.is_empty() && args.count > 0 {
        return Ok(ExitCode::from(EXIT_NO_TIME));
    }
    print_lines(&lines)
}

fn due(args: DueArgs) -> Result<ExitCode, Error> {
    let cronjob = load(&args.schedule)?;
    let due = match cronjob.due(args.earliest, args.now, args.starting_deadline_seconds) {
        Err(err @ Error::NoFireTime { .. }) => {
            report(&err);
            return Ok(ExitCode::from(EXIT_NO_TIME));
        }
        other => other?,
    };
    let zone = cronjob.schedule().zone();
    let json = serde_json::json!({
        "due": due.due.map(|t| zone.format_rfc3339(t)),
        "too_many_missed": due.too_many_missed,
    });
    print_lines(&[json.to_string()])
}

fn print_lines(lines: &[String]) -> Result<ExitCode, Error> {
    let mut out = std::io::stdout().lock();
    for line in lines {
        // A closed pipe (`| head`) is not an error worth a message.
        if writeln!(out, "{line}").is_err() {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn report(err: &Error) {
    // One line on stderr: the contract for scripts that call this command.
    let _ = writeln!(std::io::stderr(), "error: {err}");
}

fn fail(err: &Error) -> ExitCode {
    report(err);
    ExitCode::from(EXIT_INVALID)
}
