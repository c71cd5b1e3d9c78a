//! A replica built from its settings: every setting checked before any request, then its
//! client, metrics, limiter and worker context.

use std::num::NonZeroU32;
use std::sync::Arc;

use anyhow::{Context as _, anyhow, bail};
use axum::http::header;
use cronshard_coordinator::{Settings as CoordinatorSettings, Timing, WallClock};
use cronshard_types::BucketFunction;
use cronshard_worker::api::adaptive::RateBudget;
use cronshard_worker::api::limiter::Limiter;
use cronshard_worker::metrics::Metrics;
use cronshard_worker::sharding::ServerSideSharding;
use cronshard_worker::{Clock, Context, Settings};
use prometheus_client::registry::Registry;

use super::settings::ReplicaSettings;
use crate::cluster_cli::follow_testing_clock;

/// What a replica is made of before it starts: its coordination settings, the coordinator's
/// metrics, the workers' context, and the registry `/metrics` serves (both components').
pub(super) struct Replica {
    pub(super) coordination: CoordinatorSettings,
    pub(super) coordinator_metrics: cronshard_coordinator::Metrics,
    pub(super) ctx: Arc<Context>,
    pub(super) registry: Registry,
}

/// Checks every setting before any request, then builds the client and metrics.
pub(super) async fn build(s: &ReplicaSettings) -> anyhow::Result<Replica> {
    let identity =
        s.identity.clone().or_else(default_identity).context("no --identity, no POD_NAME and no hostname")?;
    check_selector(s.selector.as_deref())?;
    if s.server_side_sharding == ServerSideSharding::On && s.bucket_function != BucketFunction::Uid {
        bail!("--server-side-sharding on needs --bucket-function uid: the API server hashes uids, not names");
    }
    let buckets = NonZeroU32::new(s.buckets).context("--buckets must be at least 1")?;
    let timing = Timing {
        renew_period: s.renew_period,
        renew_deadline: s.renew_deadline,
        lease_duration: s.lease_duration,
        join_grace: s.join_grace,
        ..Timing::default()
    };
    timing.validate()?;
    let config = client_config(s, &identity).await?;
    let namespace = s.namespace.clone().unwrap_or_else(|| config.default_namespace.clone());
    let clock = Clock::default();
    if let Some(url) = &s.testing_clock_from {
        follow_testing_clock(&clock, url)?;
    }
    let mut coordination = CoordinatorSettings::new(identity.clone(), namespace, buckets, timing);
    coordination.wall_clock = wall_clock(clock.clone());
    coordination.bucket_function = s.bucket_function;
    coordination.validate()?;
    let settings = Settings {
        identity,
        buckets,
        selector: s.selector.clone(),
        dst_policy: s.dst_policy,
        bucket_function: s.bucket_function,
        server_side_sharding: s.server_side_sharding,
    };
    let metrics = Metrics::default();
    let coordinator_metrics = cronshard_coordinator::Metrics::default();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    coordinator_metrics.register(&mut registry);
    let limiter = Limiter::with_budget(RateBudget {
        qps: s.qps,
        burst: f64::from(s.burst),
        deployment_qps: s.deployment_qps,
        adaptive: s.adaptive_rate,
    });
    limiter.reserve_herds(s.herd_reservation);
    let ctx = Context::new(config, limiter, settings, clock, metrics)?;
    Ok(Replica { coordination, coordinator_metrics, ctx, registry })
}

/// The replica's one clock as the coordinator reads it, for the times it writes into Leases
/// (k8s-openapi's times are of its own jiff version).
fn wall_clock(clock: Clock) -> WallClock {
    Arc::new(move || {
        k8s_openapi::jiff::Timestamp::from_nanosecond(clock.now().as_nanosecond())
            .unwrap_or_else(|_| k8s_openapi::jiff::Timestamp::now())
    })
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

/// The client's config, with a User-Agent that names the replica.
async fn client_config(s: &ReplicaSettings, identity: &str) -> anyhow::Result<kube::Config> {
    let mut config = s.connection.config().await?;
    let agent = format!("cronshard/{} (replica {identity})", env!("CARGO_PKG_VERSION"));
    config.headers.push((
        header::USER_AGENT,
        header::HeaderValue::from_str(&agent).map_err(|_| anyhow!("identity {identity:?} is not valid in a header"))?,
    ));
    Ok(config)
}
