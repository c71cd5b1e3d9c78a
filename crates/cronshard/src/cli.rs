//! What the project's command lines share: Go-style durations, shutdown signals, logs on
//! stderr, and running async work to an exit code.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use jiff::SignedDuration;

/// A duration as Kubernetes flags take it (`500ms`, `2s`, `1m30s`), or `0`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let d: SignedDuration = text.parse().map_err(|e| format!("invalid duration {text:?}: {e}"))?;
    Duration::try_from(d).map_err(|_| format!("duration {text:?} must not be negative"))
}

/// SIGTERM (as from `kill` or a supervisor).
pub async fn terminated() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut signal) => {
            signal.recv().await;
        }
        Err(_) => std::future::pending().await,
    }
}

/// Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminated() => {}
    }
}

/// How log lines are written on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Plain text, with colour only on a terminal.
    Text,
    /// One JSON object per line.
    Json,
}

/// The global `--log-format` flag every binary of the project takes.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct Logging {
    /// Log lines on stderr: `text` (colour only on a terminal) or `json` (one object per line).
    #[arg(long, global = true, env = "CRONSHARD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// Logs go to stderr, so that stdout stays for command output (addresses, times, JSON);
/// `RUST_LOG` filters them (default: info).
pub fn init_logs(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter);
    match format {
        LogFormat::Json => logs.json().init(),
        LogFormat::Text => logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init(),
    }
}

/// Runs `work` on a fresh multi-threaded runtime. Its error is one `error:` line on stderr
/// and exit code `error_code`; a runtime that cannot start is exit code 1.
pub fn block_on<F, E>(work: F, error_code: u8) -> ExitCode
where
    F: std::future::Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(work) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}`: an error with context prints its whole chain on the one line.
            let _ = writeln!(std::io::stderr(), "error: {e:#}");
            ExitCode::from(error_code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("-5s").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn an_error_is_its_exit_code() {
        assert_eq!(block_on(async { Err("bad".to_owned()) }, 2), ExitCode::from(2));
        assert_eq!(block_on(async { Ok::<(), String>(()) }, 2), ExitCode::SUCCESS);
    }
}
