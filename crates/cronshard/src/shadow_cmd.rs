//! `cronshard shadow`: read-only; judges the running CronJob controller by cronshard's
//! semantics and exports what it finds (metrics, and a JSON report with `--out`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use cronshard_types::Timestamp;
use cronshard_worker::Clock;

use crate::cluster_cli::{Connection, bind_metrics, follow_testing_clock};
use crate::shadow::metrics::{Served, ShadowMetrics};
use crate::shadow::{self, Options, Settings, Shard};

#[derive(Debug, Args)]
pub(crate) struct ShadowArgs {
    #[command(flatten)]
    connection: Connection,
    /// Address of /metrics, /healthz and /readyz (port 0 picks a free port, printed on stdout).
    #[arg(long, env = "CRONSHARD_METRICS_ADDR", default_value = "0.0.0.0:8080")]
    metrics_addr: SocketAddr,
    /// Judge only CronJobs matching this label selector.
    #[arg(long, env = "CRONSHARD_SELECTOR")]
    selector: Option<String>,
    /// Judge one shard of the CronJobs, `i/N`: those in bucket i of N by cronshard's bucket
    /// hash, so that N shadow processes share a huge cluster.
    #[arg(long, env = "CRONSHARD_SHARD")]
    shard: Option<Shard>,
    /// Write the JSON report here every minute and at exit.
    #[arg(long)]
    out: Option<PathBuf>,
    /// A run whose Job came more than this after its due time is late.
    #[arg(long, default_value = "10s", value_parser = cronshard::cli::parse_duration)]
    late_after: Duration,
    /// How long after a run's deadline its Job may still be reported by the watch.
    #[arg(long, default_value = "30s", value_parser = cronshard::cli::parse_duration)]
    grace: Duration,
    /// An instant with at least this many runs due is reported as a herd.
    #[arg(long, default_value_t = 100)]
    herd_min_runs: usize,
    /// Judge only runs scheduled up to this time (RFC 3339); exit once each has its verdict.
    #[arg(long)]
    until: Option<Timestamp>,
    /// Daylight saving of the controller judged: `cron` (cronshard's default) or `upstream`
    /// (kube-controller-manager's behaviour, to judge the in-tree controller).
    #[arg(long, env = "CRONSHARD_DST_POLICY", default_value = "cron")]
    dst_policy: cronshard_types::DstPolicy,
    /// FOR TESTS AND DEMOS ONLY: follow the clock offset of a cronshard-sim at this URL.
    #[arg(long, hide_short_help = true)]
    testing_clock_from: Option<String>,
}

pub(crate) fn run(args: ShadowArgs) -> ExitCode {
    cronshard::cli::block_on(serve(args), 2)
}

async fn serve(args: ShadowArgs) -> anyhow::Result<()> {
    if let Some(selector) = &args.selector {
        cronshard_types::selector::LabelSelector::parse(selector)
            .with_context(|| format!("--selector {selector:?} is not a label selector"))?;
    }
    let mut config = args.connection.config().await?;
    let agent = format!("cronshard/{} (shadow)", env!("CARGO_PKG_VERSION"));
    config.headers.push((axum::http::header::USER_AGENT, axum::http::HeaderValue::from_str(&agent)?));
    let client = kube::Client::try_from(config).context("building the client")?;
    let clock = Clock::default();
    if let Some(url) = &args.testing_clock_from {
        follow_testing_clock(&clock, url)?;
        // Judging by the wrong clock would be wrong: wait for the first reading (none comes if
        // the simulator's offset is zero, hence the bound).
        let _ = tokio::time::timeout(Duration::from_secs(2), clock.changed()).await;
    }
    let served = Served { metrics: Arc::new(ShadowMetrics::default()), listed: Arc::new(AtomicBool::new(false)) };
    let (listener, addr) = bind_metrics(args.metrics_addr).await?;
    let http = tokio::spawn(axum::serve(listener, shadow::metrics::app(served.clone())).into_future());
    let options = Options {
        settings: Settings {
            started: clock.now(),
            until: args.until,
            late_after_s: args.late_after.as_secs_f64(),
            grace_s: args.grace.as_secs_f64(),
            herd_min_runs: args.herd_min_runs,
        },
        selector: args.selector.clone(),
        shard: args.shard,
        out: args.out.clone(),
        dst_policy: args.dst_policy,
    };
    tracing::info!(metrics = %addr, shard = ?args.shard.map(|s| s.to_string()), "cronshard shadow: read-only, judging the running controller");
    let report =
        shadow::run(client, clock, options, served.metrics, served.listed, cronshard::cli::shutdown_signal()).await?;
    http.abort();
    tracing::info!(
        created = report.totals.get("created").copied().unwrap_or(0),
        missed = report.totals.get("missed").copied().unwrap_or(0),
        p99_s = report.skew_s.p99,
        "shadow report written"
    );
    Ok(())
}
