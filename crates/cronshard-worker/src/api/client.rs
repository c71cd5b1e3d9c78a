//! The replica's Kubernetes client: every HTTP response counted by verb and code (retries
//! included) and timed for the adaptive rate, and 429/503/504 retried a bounded number of
//! times, honouring Retry-After.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use kube::client::retry::RetryPolicy;
use kube::client::{Body, ClientBuilder};
use tower::buffer::BufferLayer;
use tower::retry::RetryLayer;

use crate::api::fence::{Fence, fenced_request, with_server_timeout};
use crate::api::request::REQUEST_TIMEOUT;
use crate::metrics::ApiCounters;

/// Retries of one request answered 429, 503 or 504; after that the caller's own backoff
/// takes over, so one throttled CronJob never holds the others.
const MAX_RETRIES: u32 = 4;

/// Builds a client from `config` whose responses are counted in `counters` and whose writes
/// (other than to Leases) pass only while `fence` allows.
pub fn build(mut config: kube::Config, counters: ApiCounters, fence: Fence) -> crate::error::Result<kube::Client> {
    // kube's default retries up to 15 times over minutes; ours is bounded and sits outside
    // the counting layer, so every attempt is counted.
    config.default_retry = false;
    let retry = RetryPolicy::new(Duration::from_millis(100), Duration::from_secs(10), MAX_RETRIES, true)
        .map_err(crate::error::Error::client)?;
    let builder = ClientBuilder::try_from(config).map_err(crate::error::Error::client)?;
    // Retrying needs a cloneable service; the buffer makes the boxed stack one. The fence is
    // innermost, checked right before a request goes to the wire (retries included).
    Ok(builder
        .with_layer(&FenceLayer(fence))
        .with_layer(&BufferLayer::new(1024))
        .with_layer(&CountLayer(counters))
        .with_layer(&RetryLayer::new(retry))
        .build())
}

/// The Kubernetes verb of a request, from its method and path.
fn verb(request: &http::Request<Body>) -> &'static str {
    let query = request.uri().query().unwrap_or_default();
    match *request.method() {
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ if query.split('&').any(|p| p == "watch=true" || p == "watch=1") => "watch",
        _ => {
            // A collection path ends in a resource's plural: /apis/batch/v1/namespaces/ns/jobs.
            let last = request.uri().path().rsplit('/').next().unwrap_or_default();
            if matches!(last, "cronjobs" | "jobs" | "leases" | "events" | "namespaces") { "list" } else { "get" }
        }
    }
}

#[derive(Clone, Debug)]
struct CountLayer(ApiCounters);

impl<S> tower::Layer<S> for CountLayer {
    type Service = Count<S>;
    fn layer(&self, inner: S) -> Count<S> {
        Count { inner, counters: self.0.clone() }
    }
}

#[derive(Clone, Debug)]
struct Count<S> {
    inner: S,
    counters: ApiCounters,
}

impl<S, B> tower::Service<http::Request<Body>> for Count<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<B>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let verb = verb(&request);
        let counters = self.counters.clone();
        let response = self.inner.call(request);
        Box::pin(async move {
            let sent = tokio::time::Instant::now();
            let result = response.await;
            // Transport failures count as code 0.
            let code = result.as_ref().map_or(0, |r| r.status().as_u16());
            counters.observe(verb, code, sent.elapsed());
            result
        })
    }
}

#[derive(Clone, Debug)]
struct FenceLayer(Fence);

impl<S> tower::Layer<S> for FenceLayer {
    type Service = Fenced<S>;
    fn layer(&self, inner: S) -> Fenced<S> {
        Fenced { inner, fence: self.0.clone() }
    }
}

#[derive(Clone, Debug)]
struct Fenced<S> {
    inner: S,
    fence: Fence,
}

/// A write held back because the renew deadline has passed.
#[derive(Debug, thiserror::Error)]
#[error("write held back: this replica is past its renew deadline (fenced)")]
pub struct FencedWrite;

impl<S, R> tower::Service<http::Request<Body>> for Fenced<S>
where
    S: tower::Service<http::Request<Body>, Response = R, Error = tower::BoxError>,
    S::Future: Send + 'static,
{
    type Response = R;
    type Error = tower::BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<R, tower::BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        if fenced_request(&request) {
            let now = std::time::Instant::now();
            if !self.fence.allows(now) {
                return Box::pin(async { Err(FencedWrite.into()) });
            }
            // The fence reaches into the server: a write it queues past the deadline is
            // dropped there, not carried out after a peer took the bucket.
            let timeout = self.fence.server_timeout(now, REQUEST_TIMEOUT);
            if let Some(uri) = with_server_timeout(request.uri(), timeout) {
                *request.uri_mut() = uri;
            }
        }
        Box::pin(self.inner.call(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: http::Method, uri: &str) -> http::Request<Body> {
        http::Request::builder().method(method).uri(uri).body(Body::empty()).expect("request")
    }

    #[test]
    fn verbs_from_method_and_path() {
        let get = http::Method::GET;
        assert_eq!(verb(&request(get.clone(), "/apis/batch/v1/jobs?labelSelector=a&watch=true")), "watch");
        assert_eq!(verb(&request(get.clone(), "/apis/batch/v1/namespaces/ns/jobs?limit=500")), "list");
        assert_eq!(verb(&request(get.clone(), "/apis/batch/v1/namespaces/ns/jobs/j")), "get");
        assert_eq!(verb(&request(get, "/apis/batch/v1/namespaces/ns/cronjobs/c/status")), "get");
        assert_eq!(verb(&request(http::Method::PUT, "/apis/batch/v1/namespaces/ns/cronjobs/c/status")), "update");
        assert_eq!(verb(&request(http::Method::POST, "/apis/batch/v1/namespaces/ns/jobs")), "create");
    }
}
