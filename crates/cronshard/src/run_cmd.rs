//! `cronshard run`: the controller process (one replica owning every bucket, until the
//! coordinator shares them), with `/metrics`, `/healthz` and `/readyz`.

use std::io::Write;
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use clap::Args;
use cronshard_worker::limiter::Limiter;
use cronshard_worker::{Clock, Context, Settings};

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Kubeconfig file; default: $KUBECONFIG, else ~/.kube/config, else the in-cluster config.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Replica identity; default: $POD_NAME, else the hostname.
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// Address of /metrics, /healthz and /readyz (port 0 picks a free port, printed on stdout).
    #[arg(long, env = "CRONSHARD_METRICS_ADDR", default_value = "0.0.0.0:8080")]
    metrics_addr: SocketAddr,
    /// Manage only CronJobs matching this label selector (gradual migration from the in-tree controller).
    #[arg(long, env = "CRONSHARD_SELECTOR")]
    selector: Option<String>,
    /// Number of buckets; must be the same on every replica.
    #[arg(long, env = "CRONSHARD_BUCKETS", default_value_t = NonZeroU32::new(64).expect("non-zero"))]
    buckets: NonZeroU32,
    /// Client rate limit for the whole replica, requests per second (0 = unlimited).
    #[arg(long, env = "CRONSHARD_QPS", default_value_t = 50.0)]
    qps: f64,
    /// Client burst.
    #[arg(long, env = "CRONSHARD_BURST", default_value_t = 100)]
    burst: u32,
    /// FOR TESTS AND DEMOS ONLY: follow the clock offset of a cronshard-sim at this URL
    /// (polled every 200 ms), so runs cross minute boundaries without waiting.
    #[arg(long, hide_short_help = true)]
    testing_clock_from: Option<String>,
}

fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|h| h.trim().to_owned()).filter(|h| !h.is_empty())
}

async fn client_config(args: &RunArgs, identity: &str) -> Result<kube::Config, String> {
    let mut config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| format!("--kubeconfig {}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .map_err(|e| format!("--kubeconfig {}: {e}", path.display()))?
        }
        None => kube::Config::infer().await.map_err(|e| format!("no kubeconfig and no in-cluster config: {e}"))?,
    };
    let agent = format!("cronshard/{} (replica {identity})", env!("CARGO_PKG_VERSION"));
    config.headers.push((
        header::USER_AGENT,
        header::HeaderValue::from_str(&agent).map_err(|_| format!("identity {identity:?} is not valid in a header"))?,
    ));
    Ok(config)
}

#[derive(Clone)]
struct Health {
    ctx: Arc<Context>,
    ready: Arc<AtomicUsize>,
}

async fn metrics(State(h): State<Health>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], h.ctx.metrics.encode())
}

async fn readyz(State(h): State<Health>) -> impl IntoResponse {
    let ready = h.ready.load(Ordering::Relaxed);
    let want = h.ctx.settings.buckets.get() as usize;
    if ready >= want {
        (StatusCode::OK, "ok".to_owned())
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, format!("{ready}/{want} buckets have their initial lists"))
    }
}

/// Follows the simulator's clock offset (tests and demos only).
async fn follow_clock(clock: Clock, url: String) {
    let Ok(base) = url.trim_end_matches('/').parse::<axum::http::Uri>() else {
        tracing::error!(%url, "--testing-clock-from is not a URL");
        return;
    };
    let Ok(client) = kube::Client::try_from(kube::Config::new(base)) else { return };
    loop {
        let request = axum::http::Request::get("/sim/clock").body(Vec::new()).expect("static request");
        match client.request_text(request).await {
            Ok(text) => {
                if let Some(seconds) =
                    serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| v["offsetSeconds"].as_f64())
                {
                    clock.set_offset(jiff::SignedDuration::from_secs_f64(seconds));
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the simulator's clock"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub(crate) fn run(args: RunArgs) -> ExitCode {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            ExitCode::from(2)
        }
    }
}

async fn serve(args: RunArgs) -> Result<(), String> {
    let identity = args.identity.clone().or_else(hostname).ok_or("no --identity, no POD_NAME and no hostname")?;
    if let Some(selector) = &args.selector
        && selector.contains(cronshard_types::keys::BUCKET_LABEL)
    {
        return Err(format!(
            "--selector must not use {}: cronshard owns that label",
            cronshard_types::keys::BUCKET_LABEL
        ));
    }
    let config = client_config(&args, &identity).await?;
    let clock = Clock::default();
    if let Some(url) = &args.testing_clock_from {
        tracing::warn!(%url, "following a simulator's clock: for tests and demos only");
        tokio::spawn(follow_clock(clock.clone(), url.clone()));
    }
    let settings = Settings { identity: identity.clone(), buckets: args.buckets, selector: args.selector.clone() };
    let ctx = Context::new(config, Limiter::new(args.qps, args.burst), settings, clock).map_err(|e| e.to_string())?;
    let ready = Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind(args.metrics_addr)
        .await
        .map_err(|e| format!("--metrics-addr {}: {e}", args.metrics_addr))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "http://{addr}");
        let _ = out.flush();
    }
    tracing::info!(%identity, metrics = %addr, buckets = args.buckets.get(), "cronshard running");
    let health = Health { ctx: ctx.clone(), ready: ready.clone() };
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(health);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let http = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let workers = tokio::spawn(cronshard_worker::run_all_buckets(ctx, stop_rx, ready));
    crate::sim_cmd::shutdown_signal().await;
    tracing::info!("SIGTERM: finishing in-flight syncs");
    let _ = stop_tx.send(true);
    // In-flight syncs finish; bound the wait so a hung API server cannot block shutdown forever.
    let _ = tokio::time::timeout(Duration::from_secs(20), workers).await;
    http.abort();
    Ok(())
}
