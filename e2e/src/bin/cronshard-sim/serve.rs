//! `cronshard-sim serve`: the simulated Kubernetes API server as a standalone process.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use cronshard::cli::parse_duration;
use cronshard_sim::{Config, SimState};

#[derive(Debug, Args)]
pub(crate) struct SimArgs {
    /// Address to listen on; port 0 picks a free port. The URL is printed on stdout.
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Write a kubeconfig for this server (usable by kubectl and kube-rs) to this file.
    #[arg(long)]
    kubeconfig_out: Option<PathBuf>,
    /// Bearer token to put in the kubeconfig (one of --token-file's tokens).
    #[arg(long)]
    kubeconfig_token: Option<String>,
    /// How often history is compacted, like kube-apiserver's --etcd-compaction-interval (0 = never).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    compaction_interval: Duration,
    /// How often watches with allowWatchBookmarks get a BOOKMARK.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    bookmark_interval: Duration,
    /// Writes admitted per second, server-wide (0 = unlimited); beyond the queue: 429.
    #[arg(long, default_value_t = 1000.0)]
    admitted_writes_per_s: f64,
    /// Longest a write waits for its turn before 429.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    max_queue_wait: Duration,
    /// Concurrent requests per user (0 = unlimited); beyond them: 429.
    #[arg(long, default_value_t = 100)]
    seats_per_user: usize,
    /// Latency added to every get and cached list, in ms.
    #[arg(long, default_value_t = 1)]
    read_latency_ms: u64,
    /// Latency added to every write, in ms.
    #[arg(long, default_value_t = 3)]
    write_latency_ms: u64,
    /// Cost per object examined by a list served from storage, in µs.
    #[arg(long, default_value_t = 5)]
    list_cost_per_object_us: u64,
    /// How long simulated Jobs run: a duration, or MIN..MAX for a uniform spread.
    #[arg(long, default_value = "5s..15s")]
    job_duration: String,
    /// Fraction of simulated Jobs that complete successfully (the rest fail).
    #[arg(long, default_value_t = 0.9)]
    job_success_ratio: f64,
    /// Delay from a Job's creation to its start.
    #[arg(long, default_value = "500ms", value_parser = parse_duration)]
    job_start_delay: Duration,
    /// Do not run Jobs (they stay as created).
    #[arg(long)]
    no_job_runner: bool,
    /// Static token file (token,user,uid[,"groups"]), as kube-apiserver's --token-auth-file.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Reject requests without a token (default: they run as system:anonymous).
    #[arg(long)]
    no_anonymous: bool,
    /// Enforce RBAC from these YAML files (Roles, ClusterRoles and bindings); repeatable.
    #[arg(long)]
    rbac: Vec<PathBuf>,
    /// Append the audit log to this file as JSON Lines.
    #[arg(long)]
    audit_log: Option<PathBuf>,
    /// Feature gates, as kube-apiserver's --feature-gates (the simulator has one:
    /// ShardedListAndWatch=true|false, off by default; PUT /sim/feature-gates switches it).
    #[arg(long, value_parser = parse_feature_gates)]
    feature_gates: Option<bool>,
    /// Bulk-load objects (JSON array, List or JSON Lines) at start, without validation.
    #[arg(long)]
    load: Vec<PathBuf>,
}

/// `ShardedListAndWatch=true|false`, the one gate the simulator knows.
fn parse_feature_gates(text: &str) -> Result<bool, String> {
    match text.trim() {
        "ShardedListAndWatch=true" => Ok(true),
        "ShardedListAndWatch=false" => Ok(false),
        other => Err(format!("unknown feature gate {other:?}: the simulator has ShardedListAndWatch=true|false")),
    }
}

fn runner(args: &SimArgs) -> Result<Option<cronshard_sim::runner::RunnerConfig>, String> {
    if args.no_job_runner {
        return Ok(None);
    }
    let (min, max) = match args.job_duration.split_once("..") {
        Some((a, b)) => (parse_duration(a)?, parse_duration(b)?),
        None => {
            let d = parse_duration(&args.job_duration)?;
            (d, d)
        }
    };
    if min > max {
        return Err(format!("--job-duration {}: minimum above maximum", args.job_duration));
    }
    if !(0.0..=1.0).contains(&args.job_success_ratio) {
        return Err("--job-success-ratio must be between 0 and 1".into());
    }
    Ok(Some(cronshard_sim::runner::RunnerConfig {
        start_delay: args.job_start_delay,
        duration_min: min,
        duration_max: max,
        success_ratio: args.job_success_ratio,
    }))
}

fn config(args: &SimArgs) -> Result<Config, String> {
    let mut config = Config {
        compaction_interval: args.compaction_interval,
        bookmark_interval: args.bookmark_interval.max(Duration::from_millis(100)),
        allow_anonymous: !args.no_anonymous,
        runner: runner(args)?,
        sharded_list_and_watch: args.feature_gates.unwrap_or(false),
        ..Config::default()
    };
    config.flow.admitted_writes_per_s = args.admitted_writes_per_s.max(0.0);
    config.flow.seats_per_user = args.seats_per_user;
    config.flow.max_queue_wait = args.max_queue_wait;
    config.latency.read_ms = args.read_latency_ms;
    config.latency.write_ms = args.write_latency_ms;
    config.latency.list_per_object_us = args.list_cost_per_object_us;
    if let Some(path) = &args.token_file {
        let text = std::fs::read_to_string(path).map_err(|e| format!("--token-file {}: {e}", path.display()))?;
        config.tokens = cronshard_sim::auth::parse_token_file(&text)?;
    }
    if !args.rbac.is_empty() {
        let mut rbac = cronshard_sim::auth::Rbac::default();
        for path in &args.rbac {
            let text = std::fs::read_to_string(path).map_err(|e| format!("--rbac {}: {e}", path.display()))?;
            rbac.load_yaml(&text).map_err(|e| format!("--rbac {}: {e}", path.display()))?;
        }
        config.rbac = Some(rbac);
    }
    if let Some(token) = &args.kubeconfig_token
        && !config.tokens.contains_key(token)
    {
        return Err("--kubeconfig-token is not in --token-file".into());
    }
    Ok(config)
}

pub(crate) fn kubeconfig(server: &str, token: Option<&str>) -> String {
    let user = match token {
        Some(t) => format!("\n    token: {t}"),
        None => " {}".to_owned(),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: cronshard-sim\n  cluster:\n    server: {server}\n\
         users:\n- name: cronshard-sim\n  user:{user}\ncontexts:\n- name: cronshard-sim\n  context:\n    \
         cluster: cronshard-sim\n    user: cronshard-sim\n    namespace: default\ncurrent-context: cronshard-sim\n"
    )
}

pub(crate) fn run(args: SimArgs) -> ExitCode {
    let config = match config(&args) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            return ExitCode::from(2);
        }
    };
    cronshard::cli::block_on(serve(args, config), 1)
}

async fn serve(args: SimArgs, config: Config) -> Result<(), String> {
    let state = SimState::new(config);
    if let Some(path) = &args.audit_log {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("--audit-log {}: {e}", path.display()))?;
        state.0.audit.write_to(file);
    }
    for path in &args.load {
        let body = std::fs::read(path).map_err(|e| format!("--load {}: {e}", path.display()))?;
        let loaded = state.load(&body).map_err(|e| format!("--load {}: {e}", path.display()))?;
        tracing::info!(loaded, file = %path.display(), "bulk-loaded objects");
    }
    let listener =
        tokio::net::TcpListener::bind(args.listen).await.map_err(|e| format!("--listen {}: {e}", args.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let server = format!("http://{addr}");
    if let Some(path) = &args.kubeconfig_out {
        std::fs::write(path, kubeconfig(&server, args.kubeconfig_token.as_deref()))
            .map_err(|e| format!("--kubeconfig-out {}: {e}", path.display()))?;
    }
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{server}");
        let _ = out.flush();
    }
    tracing::info!(%server, "cronshard-sim serving");
    let background = state.spawn_background();
    let shutdown_state = state.clone();
    let app = cronshard_sim::app(state.clone());
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            cronshard::cli::shutdown_signal().await;
            tracing::info!("shutting down");
            // Open watches would hold the graceful shutdown forever: end them first.
            shutdown_state.drop_watches();
        })
        .await
        .map_err(|e| e.to_string())?;
    for task in background {
        task.abort();
    }
    state.0.audit.flush();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_shape() {
        let anonymous = kubeconfig("http://127.0.0.1:1234", None);
        assert!(anonymous.contains("server: http://127.0.0.1:1234\n"));
        assert!(anonymous.contains("  user: {}\n"));
        assert!(kubeconfig("http://x", Some("abc")).contains("    token: abc\n"));
    }
}
