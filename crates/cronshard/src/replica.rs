//! One replica's glue between the coordinator and the workers: the client budget that follows
//! the replica's share of the buckets, the owned set fed to the labellers, the bucket workers
//! behind the coordinator's `Buckets`, and the `/metrics`, `/healthz`, `/readyz` router.

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

/// The deployment's client budget, as `cronshard run`'s flags give it.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// `--qps`: this replica's cap (0 = none).
    pub qps: f64,
    /// `--burst`.
    pub burst: f64,
    /// `--deployment-qps`: the whole deployment's (0 = none).
    pub deployment_qps: f64,
    /// `--buckets`.
    pub buckets: u32,
}

impl Budget {
    /// This replica's client rate and burst: `share` (the fraction of the buckets it is
    /// assigned or owns) of the deployment budget, never above `--qps` (0 = no cap), and never
    /// below 1% of the budget, so a replica that owns nothing can still list, label and take
    /// buckets over. Without a deployment budget: `--qps` and `--burst` as given.
    pub fn replica_rate(&self, share: f64) -> (f64, f64) {
        if self.deployment_qps <= 0.0 {
            return (self.qps, self.burst);
        }
        let mut rate = self.deployment_qps * share.clamp(0.01, 1.0);
        if self.qps > 0.0 {
            rate = rate.min(self.qps);
        }
        // The burst shrinks with the rate: a replica's burst is a share of the deployment's too.
        let burst = if self.qps > 0.0 { self.burst * rate / self.qps } else { rate };
        (rate, burst.max(1.0))
    }

    /// The share of the buckets that `ownership` gives this replica.
    fn share(&self, ownership: &Ownership) -> f64 {
        ownership.desired.len().max(ownership.owned.len()) as f64 / f64::from(self.buckets.max(1))
    }
}

/// Follows the coordinator's ownership until it ends: the owned set goes to the labellers
/// (only when it changes), and the client rate to this replica's share of the budget.
pub async fn follow_ownership(
    mut ownership: watch::Receiver<Ownership>,
    owned: watch::Sender<BTreeSet<u32>>,
    ctx: Arc<Context>,
    budget: Budget,
) {
    while ownership.changed().await.is_ok() {
        let (now_owned, share) = {
            let o = ownership.borrow_and_update();
            (o.owned.clone(), budget.share(&o))
        };
        owned.send_if_modified(|current| std::mem::replace(current, now_owned.clone()) != now_owned);
        let (qps, burst) = budget.replica_rate(share);
        if (qps - ctx.limiter.qps()).abs() > 0.5 {
            tracing::info!(qps, burst, share, "client rate: this replica's share of the deployment budget");
            ctx.limiter.set_rate(qps, burst);
        }
    }
}

#[cfg(test)]
mod tests;
