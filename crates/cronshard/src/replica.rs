//! One replica's glue between the coordinator and the workers: the client rate that follows
//! the replica's share of the buckets and the server's answers, the owned set fed to the
//! labellers, the bucket workers behind the coordinator's `Buckets`, and the `/metrics`,
//! `/healthz`, `/readyz` router.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use cronshard_coordinator::{Buckets, Ownership};
use cronshard_worker::fence::Fence;
use cronshard_worker::metrics::ReasonLabels;
use cronshard_worker::{BucketSet, Context};
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::watch;

/// What the HTTP endpoints read.
#[derive(Clone, Debug)]
pub struct Health {
    pub ctx: Arc<Context>,
    /// Owned buckets whose caches are listed.
    pub ready: Arc<AtomicUsize>,
    pub ownership: watch::Receiver<Ownership>,
}

/// `/metrics` (OpenMetrics), `/healthz` (the process answers) and `/readyz`.
pub fn app(health: Health) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(health)
}

async fn metrics(State(h): State<Health>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], h.ctx.metrics.encode())
}

/// Ready: renewing, not refusing, owning what the assignment says, every owned bucket listed.
async fn readyz(State(h): State<Health>) -> impl IntoResponse {
    let o = h.ownership.borrow().clone();
    let listed = h.ready.load(Ordering::Relaxed);
    if let Some(reason) = o.refused {
        return (StatusCode::SERVICE_UNAVAILABLE, reason);
    }
    if !o.healthy {
        return (StatusCode::SERVICE_UNAVAILABLE, "the member Lease is not renewed".to_owned());
    }
    if !o.settled() || listed < o.owned.len() {
        let msg = format!("{} of {} assigned buckets owned, {listed} listed", o.owned.len(), o.desired.len());
        return (StatusCode::SERVICE_UNAVAILABLE, msg);
    }
    (StatusCode::OK, format!("ok: {} buckets", o.owned.len()))
}

/// The worker's bucket set and write fence, driven by the coordinator.
#[derive(Debug)]
pub struct Workers(pub BucketSet, pub Fence);

impl Buckets for Workers {
    fn start(&mut self, bucket: u32, epoch: i32) {
        self.0.start(bucket, epoch);
    }
    fn stop(&mut self, bucket: u32) -> BoxFuture<'static, ()> {
        self.0.stop(bucket).boxed()
    }
    fn abort_all(&mut self) {
        self.1.close();
        self.0.abort_all();
    }
    fn writes_until(&mut self, deadline: tokio::time::Instant) {
        // The fence is checked in the HTTP layer against the process clock.
        self.1.open_until(deadline.into_std());
    }
}

/// How often the client rate adapts to the server's answers: often enough that a herd's
/// first second of 429s is also its last.
const ADAPT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// The share of the buckets that `ownership` gives this replica, of `buckets`.
fn share(ownership: &Ownership, buckets: u32) -> f64 {
    ownership.desired.len().max(ownership.owned.len()) as f64 / f64::from(buckets.max(1))
}

/// Follows the coordinator's ownership until it ends: the owned set goes to the labellers
/// (only when it changes), and the client rate to this replica's share of the budget, adapted
/// every [`ADAPT_EVERY`] to what the server answered.
pub async fn follow_ownership(
    mut ownership: watch::Receiver<Ownership>,
    owned: watch::Sender<BTreeSet<u32>>,
    ctx: Arc<Context>,
    buckets: u32,
) {
    let mut adapt = tokio::time::interval(ADAPT_EVERY);
    adapt.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut logged_rate = ctx.limiter.qps();
    ctx.metrics.client_rate.set(logged_rate);
    loop {
        tokio::select! {
            changed = ownership.changed() => {
                if changed.is_err() {
                    return;
                }
                let (now_owned, share) = {
                    let o = ownership.borrow_and_update();
                    (o.owned.clone(), share(&o, buckets))
                };
                owned.send_if_modified(|current| std::mem::replace(current, now_owned.clone()) != now_owned);
                ctx.limiter.set_share(share);
            }
            _ = adapt.tick() => {
                let signals = ctx.metrics.api.congestion.take();
                if let Some(cut) = ctx.limiter.adapt(signals) {
                    ctx.metrics.rate_cuts.get_or_create(&ReasonLabels { reason: cut.metric_label().to_owned() }).inc();
                }
            }
        }
        let qps = ctx.limiter.qps();
        ctx.metrics.client_rate.set(qps);
        // Logged when it moved by a fifth: a sawtooth around the server's rate stays quiet.
        if (qps - logged_rate).abs() > 0.2 * logged_rate.max(1.0) {
            tracing::info!(qps, "client rate: this replica's share of the budget, adapted to the server");
            logged_rate = qps;
        }
    }
}

#[cfg(test)]
mod tests;
