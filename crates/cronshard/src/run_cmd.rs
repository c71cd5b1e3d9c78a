//! `cronshard run`: one controller replica. Replicas share the buckets through Leases
//! (cronshard-coordinator); this process serves `/metrics`, `/healthz` and `/readyz`.

use anyhow::{Context as _, anyhow, bail};
use std::collections::BTreeSet;
use std::io::Write;
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use axum::http::header;
use clap::Args;
use cronshard::replica::{self, Health, Workers};
use cronshard_coordinator::{Ownership, Settings as CoordinatorSettings, Timing};
use cronshard_worker::aimd::RateBudget;
use cronshard_worker::limiter::Limiter;
use cronshard_worker::metrics::Metrics;
use cronshard_worker::{BucketSet, Clock, Context, Settings};
use tracing::Instrument;

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Kubeconfig file; default: $KUBECONFIG, else ~/.kube/config, else the in-cluster config.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Replica identity; default: $POD_NAME, else the hostname with a random suffix (two
    /// processes with one identity would both work its buckets; one of them refuses).
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// Address of /metrics, /healthz and /readyz (port 0 picks a free port, printed on stdout).
    #[arg(long, env = "CRONSHARD_METRICS_ADDR", default_value = "0.0.0.0:8080")]
    metrics_addr: SocketAddr,
    /// Manage only CronJobs matching this label selector (gradual migration from the in-tree controller).
    #[arg(long, env = "CRONSHARD_SELECTOR")]
    selector: Option<String>,
    /// Number of buckets (1 to 4096); must be the deployment's count of record (the first
    /// replica records it in Lease cronshard-config; a replica that disagrees refuses).
    #[arg(long, env = "CRONSHARD_BUCKETS", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_BUCKETS)))]
    buckets: u32,
    /// Namespace of the member and bucket Leases; default: $POD_NAMESPACE, else the
    /// kubeconfig's (or service account's) namespace.
    #[arg(long, env = "POD_NAMESPACE")]
    namespace: Option<String>,
    /// How often the member Lease is renewed .
    #[arg(long, default_value = "2s", value_parser = cronshard::cli::parse_duration)]
    renew_period: Duration,
    /// A replica that has not renewed for this long stops all bucket work.
    #[arg(long, default_value = "10s", value_parser = cronshard::cli::parse_duration)]
    renew_deadline: Duration,
    /// Others take a replica's buckets once its member Lease has not changed for this long.
    #[arg(long, default_value = "15s", value_parser = cronshard::cli::parse_duration)]
    lease_duration: Duration,
    /// A new replica takes free buckets at once, but others give it theirs only after it has
    /// been a member this long: a pod that replaces another within it inherits that pod's
    /// buckets and nothing else moves (longer than a rolling update's pod replacement).
    #[arg(long, default_value = "30s", value_parser = cronshard::cli::parse_duration)]
    join_grace: Duration,
    /// This replica's client rate cap, requests per second (0 = none; with
    /// --deployment-qps 0 too, no client-side limit at all). The adaptive rate never goes
    /// above it.
    #[arg(long, env = "CRONSHARD_QPS", default_value_t = 1000.0, value_parser = parse_rate)]
    qps: f64,
    /// Client burst at --qps (it shrinks in proportion with the rate).
    #[arg(long, env = "CRONSHARD_BURST", default_value_t = 1000)]
    burst: u32,
    /// The whole deployment's starting client rate, requests per second (0 = none: each
    /// replica starts at --qps): each replica takes the share its buckets make up (about 1/R).
    /// From there the rate adapts to the API server: cut on 429s and on writes that queued
    /// there for more than half a second, raised step by step while work waits for it, so
    /// that replicas stay within the server's admitted write rate, where their own
    /// priorities (due creates first) hold.
    #[arg(long, env = "CRONSHARD_DEPLOYMENT_QPS", default_value_t = 1000.0, value_parser = parse_rate)]
    deployment_qps: f64,
    /// Keep the client rate at the share of --deployment-qps instead of adapting it to the
    /// server's answers.
    #[arg(long, env = "CRONSHARD_FIXED_RATE")]
    fixed_rate: bool,
    /// Never hold status writes, labels, Events and cleanup back before a herd (to measure
    /// what the reservation gains; see docs/design.md).
    #[arg(long, env = "CRONSHARD_NO_HERD_RESERVATION")]
    no_herd_reservation: bool,
    /// FOR TESTS AND DEMOS ONLY: follow the clock offset of a cronshard-sim at this URL
    /// (polled every 200 ms), so runs cross minute boundaries without waiting.
    #[arg(long, hide_short_help = true)]
    testing_clock_from: Option<String>,
}

/// The most buckets a deployment may have: each is a Lease and two watches per owner.
const MAX_BUCKETS: u32 = 4096;

/// A request rate: a finite number, zero or more.
fn parse_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate >= 0.0 => Ok(rate),
        _ => Err(format!("{text:?} is not a rate: give a number of requests per second, 0 or more")),
    }
}

/// The hostname with a random suffix: hostNetwork pods and cloned machines share hostnames.
fn default_identity() -> Option<String> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?.trim().to_ascii_lowercase();
    let host: String = host.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '-' }).collect();
    let host = host.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if host.is_empty() {
        return None;
    }
    Some(format!("{host}-{:05x}", rand::random::<u32>() & 0xfffff))
}

/// `--kubeconfig`, else $KUBECONFIG / ~/.kube/config, else the in-cluster config.
pub(crate) async fn kube_config(kubeconfig: Option<&std::path::Path>) -> anyhow::Result<kube::Config> {
    match kubeconfig {
        Some(path) => {
            let flag = || format!("--kubeconfig {}", path.display());
            let kubeconfig = kube::config::Kubeconfig::read_from(path).with_context(flag)?;
            Ok(kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.with_context(flag)?)
        }
        None => Ok(kube::Config::infer().await.context("no kubeconfig and no in-cluster config")?),
    }
}

async fn client_config(args: &RunArgs, identity: &str) -> anyhow::Result<kube::Config> {
    let mut config = kube_config(args.kubeconfig.as_deref()).await?;
    let agent = format!("cronshard/{} (replica {identity})", env!("CARGO_PKG_VERSION"));
    config.headers.push((
        header::USER_AGENT,
        header::HeaderValue::from_str(&agent).map_err(|_| anyhow!("identity {identity:?} is not valid in a header"))?,
    ));
    Ok(config)
}

pub(crate) fn run(args: RunArgs) -> ExitCode {
    cronshard::cli::block_on(serve(args), 2)
}

/// Checks the selector as the API server would, before any request.
fn check_selector(selector: Option<&str>) -> anyhow::Result<()> {
    let Some(selector) = selector else { return Ok(()) };
    if selector.contains(cronshard_types::keys::BUCKET_LABEL) {
        bail!("--selector must not use {}: cronshard owns that label", cronshard_types::keys::BUCKET_LABEL);
    }
    cronshard_types::selector::LabelSelector::parse(selector)
        .with_context(|| format!("--selector {selector:?} is not a label selector"))?;
    Ok(())
}

/// What a replica is made of before it starts: checked settings, its client and metrics.
struct Replica {
    identity: String,
    coordination: CoordinatorSettings,
    coordinator_metrics: cronshard_coordinator::Metrics,
    ctx: Arc<Context>,
}

/// Checks every setting before any request, then builds the client and metrics.
async fn build_replica(args: &RunArgs) -> anyhow::Result<Replica> {
    let identity =
        args.identity.clone().or_else(default_identity).context("no --identity, no POD_NAME and no hostname")?;
    check_selector(args.selector.as_deref())?;
    let buckets = NonZeroU32::new(args.buckets).context("--buckets must be at least 1")?;
    let timing = Timing {
        renew_period: args.renew_period,
        renew_deadline: args.renew_deadline,
        lease_duration: args.lease_duration,
        join_grace: args.join_grace,
        ..Timing::default()
    };
    timing.validate()?;
    let config = client_config(args, &identity).await?;
    let namespace = args.namespace.clone().unwrap_or_else(|| config.default_namespace.clone());
    let coordination = CoordinatorSettings { identity: identity.clone(), namespace, buckets, timing };
    coordination.validate()?;
    let clock = Clock::default();
    if let Some(url) = &args.testing_clock_from {
        tracing::warn!(%url, "following a simulator's clock: for tests and demos only");
        tokio::spawn(clock.clone().follow(url.clone()));
    }
    let settings = Settings { identity: identity.clone(), buckets, selector: args.selector.clone() };
    let mut metrics = Metrics::default();
    let coordinator_metrics = cronshard_coordinator::Metrics::default();
    coordinator_metrics.register(metrics.registry_mut());
    let limiter = Limiter::with_budget(RateBudget {
        qps: args.qps,
        burst: f64::from(args.burst),
        deployment_qps: args.deployment_qps,
        adaptive: !args.fixed_rate,
    });
    limiter.reserve_herds(!args.no_herd_reservation);
    let ctx = Context::new(config, limiter, settings, clock, metrics)?;
    Ok(Replica { identity, coordination, coordinator_metrics, ctx })
}

/// Binds `--metrics-addr` and prints the URL it got on stdout (port 0 picks a free port, so
/// whoever started the process reads where to scrape).
pub(crate) async fn bind_metrics(addr: SocketAddr) -> anyhow::Result<(tokio::net::TcpListener, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("--metrics-addr {addr}"))?;
    let bound = listener.local_addr()?;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "http://{bound}");
    let _ = out.flush();
    Ok((listener, bound))
}

async fn serve(args: RunArgs) -> anyhow::Result<()> {
    let Replica { identity, coordination, coordinator_metrics, ctx } = build_replica(&args).await?;
    let buckets = coordination.buckets;
    let ready = Arc::new(AtomicUsize::new(0));
    let (listener, addr) = bind_metrics(args.metrics_addr).await?;
    tracing::info!(%identity, metrics = %addr, buckets, namespace = %coordination.namespace, server = %ctx.server, "cronshard running");
    let (ownership_tx, ownership) = tokio::sync::watch::channel(Ownership::default());
    let health = Health { ctx: ctx.clone(), ready: ready.clone(), ownership: ownership.clone() };
    let app = replica::app(health);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let http = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    // The labellers follow the owned set (beside them, the Namespaces' spread defaults); the
    // client rate follows this replica's share.
    let (owned_tx, owned_rx) = tokio::sync::watch::channel(BTreeSet::new());
    tokio::spawn(replica::follow_ownership(ownership.clone(), owned_tx, ctx.clone(), buckets.get()));
    let replica_watches = tokio::spawn(cronshard_worker::run_replica_watches(ctx.clone(), owned_rx, stop_rx.clone()));
    // No bucket write before the first renewal.
    ctx.fence.close();
    let workers = Workers(BucketSet::new(ctx.clone(), ready), ctx.fence.clone());
    // The coordinator's lines name the server they failed to reach.
    let coordinator_span = tracing::info_span!("coordinator", server = %ctx.server);
    let mut coordinator = tokio::spawn(
        cronshard_coordinator::run(
            ctx.client.clone(),
            coordination,
            workers,
            coordinator_metrics,
            ownership_tx,
            stop_rx,
        )
        .instrument(coordinator_span),
    );
    tokio::select! {
        () = cronshard::cli::shutdown_signal() => {}
        ended = &mut coordinator => {
            http.abort();
            return match ended {
                Ok(Ok(())) => Err(anyhow!("the coordinator stopped")),
                Ok(Err(e)) => Err(e.into()),
                Err(e) => Err(anyhow!("the coordinator failed: {e}")),
            };
        }
    }
    tracing::info!("SIGTERM: handing every bucket back");
    let _ = stop_tx.send(true);
    // Buckets stop (in-flight syncs finish) and are released; the coordinator bounds the wait.
    let _ = tokio::time::timeout(Duration::from_secs(30), coordinator).await;
    replica_watches.abort();
    http.abort();
    Ok(())
}
