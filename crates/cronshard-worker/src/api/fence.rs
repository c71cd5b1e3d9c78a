//! The write fence: while a coordinator drives this replica, a write other than to a Lease
//! leaves the process only before the renew deadline of the last renewal. A process that
//! was paused (SIGSTOP, a long GC-like stall, a starved runtime) wakes up past its deadline;
//! its bucket work may run before the coordinator has fenced it, and this stops those writes
//! at the last moment, right before they reach the wire. Each write that goes out carries
//! what is left of the fence as its server-side `timeout`, so a write the server queues does
//! not land after the deadline either.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Shared by the client layer (which checks) and the coordinator's bucket set (which opens
/// it on every renewal and closes it when fencing). Unarmed (no coordinator: tests, the
/// single-process demo of one bucket set) it lets everything through.
#[derive(Clone, Debug)]
pub struct Fence(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    base: Instant,
    armed: AtomicBool,
    /// Nanoseconds after `base` until which writes may go out.
    open_until_ns: AtomicU64,
}

impl Default for Fence {
    fn default() -> Self {
        Fence(Arc::new(Inner { base: Instant::now(), armed: AtomicBool::new(false), open_until_ns: AtomicU64::new(0) }))
    }
}

impl Fence {
    /// Writes may go out until `deadline`.
    pub fn open_until(&self, deadline: Instant) {
        let ns = u64::try_from(deadline.saturating_duration_since(self.0.base).as_nanos()).unwrap_or(u64::MAX);
        self.0.open_until_ns.store(ns, Ordering::SeqCst);
        self.0.armed.store(true, Ordering::SeqCst);
    }

    /// No write may go out until the next renewal.
    pub fn close(&self) {
        self.0.open_until_ns.store(0, Ordering::SeqCst);
        self.0.armed.store(true, Ordering::SeqCst);
    }

    /// The server-side timeout for a write sent at `now`: what is left of the fence, so the
    /// API server drops the write (429 in its queue, 504 in storage) rather than carry it out
    /// after this replica's peers may have taken its buckets; at most `cap`.
    pub fn server_timeout(&self, now: Instant, cap: Duration) -> Duration {
        if !self.0.armed.load(Ordering::SeqCst) {
            return cap;
        }
        let until = self.0.base + Duration::from_nanos(self.0.open_until_ns.load(Ordering::SeqCst));
        until.saturating_duration_since(now).min(cap)
    }

    /// Whether a write may go out at `now`.
    pub fn allows(&self, now: Instant) -> bool {
        if !self.0.armed.load(Ordering::SeqCst) {
            return true;
        }
        let ns = u64::try_from(now.saturating_duration_since(self.0.base).as_nanos()).unwrap_or(u64::MAX);
        ns < self.0.open_until_ns.load(Ordering::SeqCst)
    }
}

/// Adds `timeout` (kube-apiserver's per-request deadline, in milliseconds) to `uri`, unless
/// it has one.
pub fn with_server_timeout(uri: &http::Uri, timeout: Duration) -> Option<http::Uri> {
    let path_and_query = uri.path_and_query()?;
    let query = path_and_query.query().unwrap_or_default();
    if query.split('&').any(|p| p.starts_with("timeout=")) {
        return None;
    }
    let ms = timeout.as_millis().max(1);
    let separator = if query.is_empty() { "" } else { "&" };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = format!("{}?{query}{separator}timeout={ms}ms", path_and_query.path()).parse().ok();
    http::Uri::from_parts(parts).ok()
}

/// Whether a request is held by the fence: every write except to Leases (the coordinator's
/// own renewals, claims and releases, which carry their own preconditions).
pub fn fenced_request<B>(request: &http::Request<B>) -> bool {
    let write = !matches!(*request.method(), http::Method::GET | http::Method::HEAD | http::Method::OPTIONS);
    write && !request.uri().path().starts_with("/apis/coordination.k8s.io/")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn request(method: http::Method, path: &str) -> http::Request<()> {
        http::Request::builder().method(method).uri(path).body(()).expect("request")
    }

    #[test]
    fn unarmed_it_lets_everything_through_armed_only_until_the_deadline() {
        let fence = Fence::default();
        let t0 = Instant::now();
        assert!(fence.allows(t0 + Duration::from_secs(3600)));
        fence.open_until(t0 + Duration::from_secs(10));
        assert!(fence.allows(t0 + Duration::from_secs(9)));
        assert!(!fence.allows(t0 + Duration::from_secs(10)));
        fence.open_until(t0 + Duration::from_secs(20));
        assert!(fence.allows(t0 + Duration::from_secs(15)));
        fence.close();
        assert!(!fence.allows(t0 + Duration::from_secs(15)));
    }

    #[test]
    fn writes_carry_what_is_left_of_the_fence_as_their_server_timeout() {
        let fence = Fence::default();
        let t0 = Instant::now();
        let cap = Duration::from_secs(30);
        assert_eq!(fence.server_timeout(t0, cap), cap, "unarmed: the cap");
        fence.open_until(t0 + Duration::from_secs(10));
        assert_eq!(fence.server_timeout(t0 + Duration::from_secs(4), cap), Duration::from_secs(6));
        assert_eq!(fence.server_timeout(t0, Duration::from_secs(3)), Duration::from_secs(3));

        let uri = |s: &str| s.parse::<http::Uri>().expect("uri");
        let ms = Duration::from_millis(2500);
        assert_eq!(
            with_server_timeout(&uri("/apis/batch/v1/namespaces/a/jobs"), ms),
            Some(uri("/apis/batch/v1/namespaces/a/jobs?timeout=2500ms"))
        );
        assert_eq!(
            with_server_timeout(&uri("/apis/batch/v1/namespaces/a/jobs?fieldManager=cronshard"), ms),
            Some(uri("/apis/batch/v1/namespaces/a/jobs?fieldManager=cronshard&timeout=2500ms"))
        );
        assert_eq!(with_server_timeout(&uri("/api/v1/x?timeout=1s"), ms), None, "the caller's own stays");
        assert_eq!(
            with_server_timeout(&uri("/api/v1/x"), Duration::ZERO),
            Some(uri("/api/v1/x?timeout=1ms")),
            "never zero (zero means none to the server)"
        );
    }

    #[test]
    fn only_writes_other_than_leases_are_held() {
        assert!(fenced_request(&request(http::Method::POST, "/apis/batch/v1/namespaces/a/jobs")));
        assert!(fenced_request(&request(http::Method::PUT, "/apis/batch/v1/namespaces/a/cronjobs/c/status")));
        assert!(fenced_request(&request(http::Method::PATCH, "/apis/batch/v1/namespaces/a/cronjobs/c")));
        assert!(fenced_request(&request(http::Method::POST, "/apis/events.k8s.io/v1/namespaces/a/events")));
        assert!(!fenced_request(&request(http::Method::GET, "/apis/batch/v1/jobs?watch=true")));
        let lease = "/apis/coordination.k8s.io/v1/namespaces/cronshard/leases/cronshard-bucket-1";
        assert!(!fenced_request(&request(http::Method::PUT, lease)));
    }
}
