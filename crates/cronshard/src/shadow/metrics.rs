//! Shadow mode's Prometheus metrics and its `/metrics`, `/healthz`, `/readyz` router.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use cronshard_worker::metrics::SKEW_BUCKETS;

use super::verdict::{Judged, Verdict};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct VerdictLabels {
    pub(crate) verdict: String,
}

/// What shadow mode exports.
#[derive(Debug)]
pub(crate) struct ShadowMetrics {
    registry: Registry,
    /// The controller's own skew buckets (`cronshard_job_creation_skew_seconds`), so that one
    /// dashboard compares the two.
    pub(crate) skew: Histogram,
    /// From a run's due time until the running controller's Job first reports a ready pod
    /// (or finishes): `cronshard_run_start_delay_seconds` for the controller shadow mode watches.
    pub(crate) start_delay: Histogram,
    pub(crate) runs: Family<VerdictLabels, Counter>,
    pub(crate) cronjobs: Gauge,
    /// Jobs of followed CronJobs created since shadow mode started.
    pub(crate) jobs_seen: Counter,
}

impl Default for ShadowMetrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let skew = Histogram::new(SKEW_BUCKETS);
        let start_delay = Histogram::new(SKEW_BUCKETS);
        let runs = Family::<VerdictLabels, Counter>::default();
        let cronjobs = Gauge::default();
        for v in Verdict::ALL {
            let _ = runs.get_or_create(&VerdictLabels { verdict: v.label().to_owned() });
        }
        registry.register(
            "cronshard_shadow_skew_seconds",
            "Creation of the running controller's Job minus the run's due time, as shadow mode sees it",
            skew.clone(),
        );
        registry.register(
            "cronshard_shadow_start_delay_seconds",
            "From a run's due time until the running controller's Job first reports a ready pod or finishes, as \
             shadow mode's Job watch sees it",
            start_delay.clone(),
        );
        registry.register(
            "cronshard_shadow_runs",
            "Runs judged by shadow mode, by verdict (on_time, late, missed, duplicate, unexpected, skipped)",
            runs.clone(),
        );
        registry.register("cronshard_shadow_cronjobs", "CronJobs shadow mode follows", cronjobs.clone());
        let jobs_seen = Counter::default();
        registry.register(
            "cronshard_shadow_jobs_seen",
            "Jobs of followed CronJobs created since shadow mode started",
            jobs_seen.clone(),
        );
        ShadowMetrics { registry, skew, start_delay, runs, cronjobs, jobs_seen }
    }
}

impl ShadowMetrics {
    pub(crate) fn observe(&self, judged: &[Judged]) {
        for j in judged {
            self.runs.get_or_create(&VerdictLabels { verdict: j.verdict.label().to_owned() }).inc();
            if let Some(skew) = j.skew_s {
                self.skew.observe(skew);
            }
        }
    }

    pub(crate) fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// What the endpoints read: the metrics, and whether the initial lists are in.
#[derive(Clone, Debug)]
pub(crate) struct Served {
    pub(crate) metrics: Arc<ShadowMetrics>,
    pub(crate) listed: Arc<AtomicBool>,
}

/// `/metrics` (OpenMetrics), `/healthz` and `/readyz` (both initial lists are in).
pub(crate) fn app(served: Served) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(served)
}

async fn metrics(State(s): State<Served>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], s.metrics.encode())
}

async fn readyz(State(s): State<Served>) -> impl IntoResponse {
    if s.listed.load(Ordering::Relaxed) {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "listing CronJobs and Jobs")
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    use super::*;

    #[tokio::test]
    async fn every_verdict_is_exported_from_zero_and_readiness_follows_the_lists() {
        let served = Served { metrics: Arc::new(ShadowMetrics::default()), listed: Arc::new(AtomicBool::new(false)) };
        served.metrics.observe(&[Judged { verdict: Verdict::Late, skew_s: Some(20.0) }]);
        let get = |path: &str| Request::get(path).body(Body::empty()).expect("request");
        let answer = app(served.clone()).oneshot(get("/metrics")).await.expect("answer");
        let body = axum::body::to_bytes(answer.into_body(), 1 << 20).await.expect("body");
        let text = String::from_utf8_lossy(&body);
        for v in Verdict::ALL {
            let n = if v == Verdict::Late { 1 } else { 0 };
            assert!(text.contains(&format!("cronshard_shadow_runs_total{{verdict=\"{}\"}} {n}", v.label())), "{text}");
        }
        assert!(text.contains("cronshard_shadow_skew_seconds_bucket{le=\"32.0\"} 1"), "{text}");
        assert!(text.contains("cronshard_shadow_cronjobs 0"), "{text}");
        let ready = app(served.clone()).oneshot(get("/readyz")).await.expect("answer");
        assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
        served.listed.store(true, Ordering::Relaxed);
        assert_eq!(app(served).oneshot(get("/readyz")).await.expect("answer").status(), StatusCode::OK);
    }
}
