//! The replica's `/metrics`, `/healthz` and `/readyz` router.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use cronshard_coordinator::Ownership;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

/// What the HTTP endpoints read.
#[derive(Clone, Debug)]
pub(crate) struct Health {
    /// Owned buckets whose caches are listed.
    pub(crate) ready: Arc<AtomicUsize>,
    pub(crate) ownership: watch::Receiver<Ownership>,
    /// What `/metrics` serves: the worker's and the coordinator's metrics.
    pub(crate) registry: Arc<Registry>,
}

/// `/metrics` (OpenMetrics), `/healthz` (the process answers) and `/readyz`.
pub(crate) fn app(health: Health) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(health)
}

async fn metrics(State(h): State<Health>) -> impl IntoResponse {
    let mut text = String::new();
    let _ = prometheus_client::encoding::text::encode(&mut text, &h.registry);
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], text)
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
