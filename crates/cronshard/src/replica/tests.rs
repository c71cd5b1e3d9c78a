//! The replica's glue without a cluster: `/readyz` through the router (`oneshot`), and the
//! owned set and client rate following the coordinator.

use std::collections::BTreeSet;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use cronshard_coordinator::Ownership;
use cronshard_worker::api::adaptive::RateBudget;
use cronshard_worker::api::limiter::Limiter;
use cronshard_worker::{Clock, Context, Settings};
use tokio::sync::watch;
use tower::ServiceExt;

use super::http::{Health, app};
use super::ownership::follow_ownership;

/// A context whose client points nowhere: nothing here sends a request.
fn context(budget: RateBudget) -> Arc<Context> {
    let config = kube::Config::new("http://127.0.0.1:9".parse().expect("url"));
    let settings = Settings {
        identity: "replica-test".into(),
        buckets: NonZeroU32::new(64).expect("64"),
        selector: None,
        dst_policy: Default::default(),
        bucket_function: cronshard_types::BucketFunction::Uid,
        server_side_sharding: Default::default(),
    };
    Context::new(config, Limiter::with_budget(budget), settings, Clock::default(), Default::default()).expect("context")
}

fn ownership(owned: &[u32], desired: &[u32], healthy: bool, refused: Option<&str>) -> Ownership {
    Ownership {
        owned: owned.iter().copied().collect(),
        desired: desired.iter().copied().collect(),
        healthy,
        refused: refused.map(str::to_owned),
    }
}

async fn get(health: &Health, path: &str) -> (StatusCode, String) {
    let request = Request::get(path).body(Body::empty()).expect("request");
    let response = app(health.clone()).oneshot(request).await.expect("response");
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20).await.expect("body");
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn readyz_says_why_a_replica_is_not_ready() {
    let (tx, rx) = watch::channel(Ownership::default());
    let ready = Arc::new(AtomicUsize::new(0));
    let ctx = context(RateBudget { qps: 0.0, burst: 1.0, deployment_qps: 0.0, adaptive: true });
    let mut registry = prometheus_client::registry::Registry::default();
    ctx.metrics.register(&mut registry);
    let health = Health { ready: ready.clone(), ownership: rx, registry: Arc::new(registry) };
    assert_eq!(get(&health, "/healthz").await, (StatusCode::OK, "ok".to_owned()));

    let cases = [
        (ownership(&[1], &[1], true, Some("another process holds this identity")), 1, "another process holds"),
        (ownership(&[1], &[1], false, None), 1, "the member Lease is not renewed"),
        (ownership(&[1], &[1, 2], true, None), 1, "1 of 2 assigned buckets owned, 1 listed"),
        (ownership(&[1, 2], &[1, 2], true, None), 1, "2 of 2 assigned buckets owned, 1 listed"),
    ];
    for (o, listed, why) in cases {
        tx.send_replace(o);
        ready.store(listed, Ordering::Relaxed);
        let (status, body) = get(&health, "/readyz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert!(body.contains(why), "{body:?} should say {why:?}");
    }
    tx.send_replace(ownership(&[1, 2], &[1, 2], true, None));
    ready.store(2, Ordering::Relaxed);
    assert_eq!(get(&health, "/readyz").await, (StatusCode::OK, "ok: 2 buckets".to_owned()));
    let (status, metrics) = get(&health, "/metrics").await;
    assert_eq!(status, StatusCode::OK);
    assert!(metrics.contains("cronshard_buckets_owned"), "{metrics}");
}

#[tokio::test]
async fn the_owned_set_and_the_client_rate_follow_the_coordinator() {
    let (tx, rx) = watch::channel(Ownership::default());
    let (owned_tx, mut owned_rx) = watch::channel(BTreeSet::new());
    let ctx = context(RateBudget { qps: 1000.0, burst: 1000.0, deployment_qps: 1000.0, adaptive: true });
    let follow = tokio::spawn(follow_ownership(rx, owned_tx, ctx.clone(), 64));

    tx.send_replace(ownership(&(0..16).collect::<Vec<_>>(), &(0..16).collect::<Vec<_>>(), true, None));
    owned_rx.changed().await.expect("owned set sent");
    assert_eq!(owned_rx.borrow_and_update().len(), 16);
    assert!((ctx.limiter.qps() - 250.0).abs() < 1e-9, "a quarter of the buckets, a quarter of the budget");

    // Assigned more than owned (a handover in progress): the rate follows the assignment at
    // once, the labellers only what is owned.
    tx.send_replace(ownership(&(0..16).collect::<Vec<_>>(), &(0..32).collect::<Vec<_>>(), true, None));
    drop(tx);
    follow.await.expect("follow ends with the coordinator");
    assert_eq!(owned_rx.borrow().len(), 16, "the labellers see only owned buckets");
    assert!((ctx.limiter.qps() - 500.0).abs() < 1e-9, "half the buckets assigned");
}
