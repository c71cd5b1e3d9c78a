//! What every bucket worker of a replica shares: client, limiter, metrics, settings, clock.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use cronshard_types::Timestamp;
use jiff::SignedDuration;

use crate::fence::Fence;
use crate::limiter::Limiter;
use crate::metrics::Metrics;

/// A replica's settings.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The replica's identity (pod name): in the User-Agent, Events and the audit annotation.
    pub identity: String,
    pub buckets: NonZeroU32,
    /// Only CronJobs matching this label selector are managed (gradual migration).
    pub selector: Option<String>,
}

/// The controller's notion of now: real time plus an offset that only tests and demos set
/// (to share the simulator's clock).
#[derive(Clone, Debug, Default)]
pub struct Clock {
    offset_ms: Arc<AtomicI64>,
    changed: Arc<tokio::sync::Notify>,
}

impl Clock {
    pub fn now(&self) -> Timestamp {
        let offset = SignedDuration::from_millis(self.offset_ms.load(Ordering::Relaxed));
        Timestamp::now().checked_add(offset).unwrap_or_else(|_| Timestamp::now())
    }

    pub fn set_offset(&self, offset: SignedDuration) {
        let ms = offset.as_millis() as i64;
        if self.offset_ms.swap(ms, Ordering::Relaxed) != ms {
            self.changed.notify_waiters();
        }
    }

    /// Resolves when the offset changes (timers must be recomputed).
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    /// Follows the clock offset of a `cronshard-sim serve` at `url`, polled every 200 ms (tests,
    /// demos and benchmarks only: it is how every process shares the simulator's time).
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

    /// How long until `at` on this clock (zero if past).
    pub fn until(&self, at: Timestamp) -> std::time::Duration {
        let delta = at.duration_since(self.now());
        std::time::Duration::try_from(delta).unwrap_or_default()
    }
}

/// Shared by all buckets of one replica.
pub struct Context {
    pub client: kube::Client,
    pub limiter: Limiter,
    pub metrics: Metrics,
    pub settings: Settings,
    pub clock: Clock,
    /// Events written lately, for their repeats (see [`crate::events::series`]).
    pub event_series: std::sync::Mutex<crate::events::series::Series>,
    /// Holds writes back once the renew deadline has passed (see [`crate::fence`]).
    pub fence: Fence,
    /// The API server's URL, named in connection errors.
    pub server: String,
    /// CronJobs that cannot be labelled, for their buckets' workers.
    pub leftovers: crate::leftovers::Leftovers,
    /// The Namespaces' `cronshard.io/spread` defaults.
    pub namespace_spreads: crate::namespaces::NamespaceSpreads,
    /// Throttles for repeated log lines, by call site.
    logs: std::sync::Mutex<std::collections::HashMap<&'static str, cronshard_types::throttle::Throttle>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("settings", &self.settings).field("clock", &self.clock).finish_non_exhaustive()
    }
}

impl Context {
    /// Builds the replica's instrumented client from `config` (see [`crate::client`]);
    /// `metrics` may carry other components' metrics in its registry.
    pub fn new(
        config: kube::Config,
        limiter: Limiter,
        settings: Settings,
        clock: Clock,
        metrics: Metrics,
    ) -> crate::Result<Arc<Self>> {
        let fence = Fence::default();
        let server = config.cluster_url.to_string();
        let client = crate::client::build(config, metrics.api.clone(), fence.clone())?;
        Ok(Arc::new(Context {
            event_series: Default::default(),
            client,
            limiter,
            metrics,
            settings,
            clock,
            fence,
            server,
            leftovers: Default::default(),
            namespace_spreads: Default::default(),
            logs: Default::default(),
        }))
    }

    /// Logs a warning from `site` unless one went out recently (then counts it held back):
    /// during an outage every bucket's watches fail together.
    pub fn log_warn(&self, site: &'static str, message: &str) {
        let admitted = self
            .logs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(site)
            .or_default()
            .admit(std::time::Instant::now());
        if let Some(held_back) = admitted {
            tracing::warn!(server = %self.server, held_back, "{message}");
        }
    }

    /// The label selector of one bucket, with the migration selector if any.
    pub fn bucket_selector(&self, bucket: u32) -> String {
        let own = format!("{}={bucket}", cronshard_types::keys::BUCKET_LABEL);
        match &self.settings.selector {
            Some(extra) if !extra.trim().is_empty() => format!("{own},{extra}"),
            _ => own,
        }
    }
}
