//! A cap on the replica's requests in flight at the API server, so that the order the
//! limiter chose is the order the server serves.
//!
//! The server serves what it has queued first come, first served (API Priority and
//! Fairness queues within a priority level). A client that sends its whole burst at once,
//! or runs above the admitted rate for a while, leaves seconds of status writes and Events
//! queued there, and a due create that the limiter puts first still waits behind all of
//! them, or is rejected with 429 when the queue is full. With at most [`MAX_IN_FLIGHT`]
//! requests out, a create waits behind at most that many at the server; everything else
//! waits in the limiter, where priority holds. Lease requests (their own priority level on a
//! real server, and the replica's liveness) and watches (open for minutes) are not counted.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use kube::client::Body;
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// Requests out at once at most. Enough for the admitted rate at the latencies of a loaded
/// server (1,000 writes/s at 64 ms each; kube-apiserver answers a create in a few ms to
/// tens of ms), and under a user's 100 concurrent seats in the simulator.
pub const MAX_IN_FLIGHT: usize = 64;

/// Whether `request` takes a place: not a watch, not a Lease.
fn counted(request: &http::Request<Body>) -> bool {
    let query = request.uri().query().unwrap_or_default();
    let watch = query.split('&').any(|p| p == "watch=true" || p == "watch=1");
    !watch && !request.uri().path().starts_with("/apis/coordination.k8s.io/")
}

#[derive(Clone, Debug)]
pub(crate) struct InFlightLayer(pub(crate) Arc<Semaphore>);

impl<S> tower::Layer<S> for InFlightLayer {
    type Service = InFlight<S>;
    fn layer(&self, inner: S) -> InFlight<S> {
        InFlight { inner, places: self.0.clone() }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct InFlight<S> {
    inner: S,
    places: Arc<Semaphore>,
}

impl<S> tower::Service<http::Request<Body>> for InFlight<S>
where
    S: tower::Service<http::Request<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    /// Always ready: a request waits for its place in `call`, before the inner service
    /// reserves anything for it (the buffer beneath has room for 1,024 requests, and
    /// thousands may wait here after a herd).
    fn poll_ready(&mut self, _cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let inner = self.inner.clone();
        let places = counted(&request).then(|| self.places.clone());
        Box::pin(async move {
            // The semaphore is never closed; the place is held until the answer's headers.
            let _place = match places {
                Some(places) => places.acquire_owned().await.ok(),
                None => None,
            };
            inner.oneshot(request).await
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    fn request(uri: &str) -> http::Request<Body> {
        http::Request::builder().uri(uri).body(Body::empty()).expect("request")
    }

    #[test]
    fn watches_and_leases_take_no_place() {
        assert!(counted(&request("/apis/batch/v1/namespaces/ns/jobs")));
        assert!(counted(&request("/apis/batch/v1/jobs?labelSelector=a&limit=500")));
        assert!(!counted(&request("/apis/batch/v1/jobs?labelSelector=a&watch=true")));
        assert!(!counted(&request("/apis/coordination.k8s.io/v1/namespaces/ns/leases/m")));
    }

    /// A service that answers after 10 ms and records the most calls it had at once.
    #[derive(Clone)]
    struct Slow {
        now: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
    }

    impl tower::Service<http::Request<Body>> for Slow {
        type Response = ();
        type Error = tower::BoxError;
        type Future = Pin<Box<dyn Future<Output = Result<(), tower::BoxError>> + Send>>;
        fn poll_ready(&mut self, _cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, _request: http::Request<Body>) -> Self::Future {
            let (now, most) = (self.now.clone(), self.most.clone());
            Box::pin(async move {
                most.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
                now.fetch_sub(1, Ordering::SeqCst);
                Ok(())
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn no_more_than_the_cap_are_out_at_once_but_watches_always_go() {
        let slow = Slow { now: Default::default(), most: Default::default() };
        let service = InFlight { inner: slow.clone(), places: Arc::new(Semaphore::new(4)) };
        let calls = (0..40).map(|_| service.clone().oneshot(request("/apis/batch/v1/namespaces/ns/jobs")));
        futures::future::try_join_all(calls).await.expect("answers");
        assert_eq!(slow.most.load(Ordering::SeqCst), 4);
        // Four places taken for good: a watch still goes at once.
        let hold = Arc::new(Semaphore::new(0));
        let full = InFlight { inner: slow.clone(), places: hold };
        let watch = full.oneshot(request("/apis/batch/v1/jobs?watch=true"));
        tokio::time::timeout(Duration::from_millis(50), watch).await.expect("not held").expect("answer");
    }
}
