//! The simulator-following offset of a testing clock (tests, demos and benchmarks only).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use cronshard_types::Timestamp;
use jiff::SignedDuration;

use super::Clock;

/// An offset added to the clock, shared by its clones.
#[derive(Clone, Debug, Default)]
pub(super) struct Offset {
    ms: Arc<AtomicI64>,
    changed: Arc<tokio::sync::Notify>,
}

impl Offset {
    pub(super) fn apply(&self, now: Timestamp) -> Timestamp {
        now.checked_add(SignedDuration::from_millis(self.ms.load(Ordering::Relaxed))).unwrap_or(now)
    }

    pub(super) async fn changed(&self) {
        self.changed.notified().await;
    }
}

impl Clock {
    /// Moves this clock (and its clones) `offset` ahead of tokio's.
    pub fn set_offset(&self, offset: SignedDuration) {
        let ms = offset.as_millis() as i64;
        if self.offset.ms.swap(ms, Ordering::Relaxed) != ms {
            self.offset.changed.notify_waiters();
        }
    }

    /// The offset set last.
    pub fn offset(&self) -> SignedDuration {
        SignedDuration::from_millis(self.offset.ms.load(Ordering::Relaxed))
    }

    /// Follows the clock offset of a `cronshard-sim serve` at `url`, polled every 200 ms: how
    /// every process of a test shares the simulator's time.
    pub async fn follow(self, url: String) {
        let Ok(base) = url.trim_end_matches('/').parse::<http::Uri>() else {
            tracing::error!(%url, "not a URL; the clock is not followed");
            return;
        };
        let Ok(client) = kube::Client::try_from(kube::Config::new(base)) else { return };
        loop {
            let Ok(request) = http::Request::get("/sim/clock").body(Vec::new()) else { return };
            match client.request_text(request).await {
                Ok(text) => {
                    if let Some(seconds) =
                        serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| v["offsetSeconds"].as_f64())
                    {
                        self.set_offset(SignedDuration::from_secs_f64(seconds));
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot read the simulator's clock"),
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }
}
