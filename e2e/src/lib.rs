//! cronshard-e2e: scenarios, the analysis of a run from the simulator's audit log, reports,
//! and the real-control-plane fixture, shared by `cronshard-bench`, the baseline controllers,
//! `cronshard-sim demo` and the end-to-end tests.

pub mod analysis;
pub mod hops;
pub mod kube_audit;
pub mod real_time;
pub mod report;
pub mod scenario;
pub mod shadow;
pub mod testbed;
pub mod work;

/// What can go wrong reading scenarios or audit records.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("scenario {path}: {message}")]
    Scenario { path: String, message: String },
    #[error("audit record: {0}")]
    Audit(String),
}

/// A harness binary's `main`: logs to stderr, runs `work` on a fresh runtime, and turns its
/// error into one `error:` line on stderr and exit code 2.
pub fn main_with<F>(work: F) -> std::process::ExitCode
where
    F: std::future::Future<Output = Result<(), String>>,
{
    cronshard::cli::init_logs(cronshard::cli::LogFormat::Text);
    cronshard::cli::block_on(work, 2)
}

/// CPU seconds and peak RSS of a live process, from /proc.
pub fn usage(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, r)| r.split_whitespace().collect()).unwrap_or_default();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 (11 and 12 after the name); USER_HZ is 100 on Linux.
    let cpu = (ticks(11) + ticks(12)) / 100.0;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0);
    (cpu, hwm / 1024.0)
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
