//! Whether the API server filters a bucket's CronJobs itself (`shardSelector`, KEP-5866) or
//! buckets go by the label cronshard writes: the `--server-side-sharding` setting, the probe
//! that decides `auto`, and the fall back to labels when a server stops filtering.

mod client;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cronshard_types::{BucketFunction, shard_selector};
use k8s_openapi::api::batch::v1::CronJob;
use kube::Resource;

/// A client for one bucket's (or shard's) CronJob list and watch: `client`'s requests with
/// `selector` added; a list answer without its echo tells `sharding` the server stopped
/// filtering.
pub fn sharded_client(client: kube::Client, selector: String, sharding: Arc<Sharding>) -> kube::Client {
    client::sharded(client, selector, Arc::new(move |why: &str| sharding.not_filtering(why)))
}

/// `--server-side-sharding`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, strum::EnumString, strum::Display)]
#[strum(serialize_all = "lowercase")]
pub enum ServerSideSharding {
    /// Filter on the server when a probe shows that it does (and keep checking).
    #[default]
    Auto,
    /// Always ask the server to filter; never patch a CronJob.
    On,
    /// Buckets go by the label cronshard writes on every CronJob.
    Off,
}

/// How buckets select their CronJobs right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filtering {
    /// By the `cronshard.io/bucket` label, which the labeller writes.
    Labels,
    /// By the bucket's `shardSelector`, evaluated by the API server.
    Server,
}

/// Least time between two probes after a relist (every bucket relists at once after an
/// outage: one probe is enough).
const REPROBE_EVERY: Duration = Duration::from_secs(60);

/// The replica's filtering, as every bucket and the labeller follow it.
#[derive(Debug)]
pub struct Sharding {
    setting: ServerSideSharding,
    /// `cronshard_server_side_sharding`.
    gauge: prometheus_client::metrics::gauge::Gauge,
    state: tokio::sync::watch::Sender<Filtering>,
    last_probe: Mutex<Option<Instant>>,
}

impl Sharding {
    /// `on` filters on the server from the start; `auto` starts on labels until [`Self::probe`]
    /// says otherwise. With the `name` bucket function the server cannot filter: labels.
    pub fn new(
        setting: ServerSideSharding,
        function: BucketFunction,
        gauge: prometheus_client::metrics::gauge::Gauge,
    ) -> Self {
        let start = match (setting, function) {
            (ServerSideSharding::On, BucketFunction::Uid) => Filtering::Server,
            _ => Filtering::Labels,
        };
        gauge.set(i64::from(start == Filtering::Server));
        Sharding { setting, gauge, state: tokio::sync::watch::Sender::new(start), last_probe: Mutex::new(None) }
    }

    pub fn setting(&self) -> ServerSideSharding {
        self.setting
    }

    pub fn filtering(&self) -> Filtering {
        *self.state.borrow()
    }

    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<Filtering> {
        self.state.subscribe()
    }

    /// Asks the server to filter one CronJob list by the whole hash range: a server that
    /// filters echoes the selector in `metadata.shardInfo`. Under `auto` its answer decides;
    /// under `on` a server that does not filter is only reported (the buckets' range guard
    /// keeps them to their own CronJobs either way). Returns the filtering now.
    pub async fn probe(&self, client: &kube::Client, function: BucketFunction) -> Result<Filtering, kube::Error> {
        if self.setting == ServerSideSharding::Off || function != BucketFunction::Uid {
            return Ok(self.filtering());
        }
        *self.last_probe.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        let selector = shard_selector(0, std::num::NonZeroU32::MIN);
        let url = format!("{}?limit=1", CronJob::url_path(&(), None));
        let request = http::Request::get(client::with_shard_selector(&url, &selector))
            .body(Vec::new())
            .map_err(kube::Error::HttpError)?;
        let answer: serde_json::Value = client.request(request).await?;
        let filters = client::echoes(&answer, &selector);
        match (self.setting, filters) {
            (_, true) => self.set(Filtering::Server, "the API server filters by shardSelector"),
            (ServerSideSharding::Auto, false) => {
                self.set(Filtering::Labels, "the API server does not filter by shardSelector");
            }
            (_, false) => tracing::error!(
                "--server-side-sharding on, but the API server ignores shardSelector (enable its ShardedListAndWatch \
                 feature gate): every bucket lists every CronJob and drops the others'"
            ),
        }
        Ok(self.filtering())
    }

    /// [`Self::probe`], retried until the server answers (with backoff, warning on each
    /// failure).
    pub async fn probe_until_answered(&self, client: &kube::Client, function: BucketFunction) {
        let mut wait = Duration::from_millis(200);
        while let Err(e) = self.probe(client, function).await {
            tracing::warn!(error = %e, "cannot ask the API server whether it filters by shardSelector; retrying");
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(10));
        }
    }

    /// After a bucket relisted on labels under `auto`: probe again, at most once a minute,
    /// in the background.
    pub fn reprobe_soon(self: &Arc<Self>, client: &kube::Client, function: BucketFunction) {
        if self.setting != ServerSideSharding::Auto || self.filtering() == Filtering::Server {
            return;
        }
        {
            let mut last = self.last_probe.lock().unwrap_or_else(|e| e.into_inner());
            if last.is_some_and(|at| at.elapsed() < REPROBE_EVERY) {
                return;
            }
            *last = Some(Instant::now());
        }
        let (this, client) = (self.clone(), client.clone());
        tokio::spawn(async move {
            if let Err(e) = this.probe(&client, function).await {
                tracing::warn!(error = %e, "probe for server-side sharding failed; buckets stay on labels");
            }
        });
    }

    /// A server that was filtering answered without filtering (a list without the echo, or
    /// another bucket's object in a watch): `auto` goes back to labels; `on` reports it.
    pub fn not_filtering(&self, why: &str) {
        if self.filtering() != Filtering::Server {
            return;
        }
        match self.setting {
            ServerSideSharding::Auto => {
                self.set(Filtering::Labels, &format!("the API server stopped filtering: {why}"))
            }
            _ => tracing::error!(
                "--server-side-sharding on, but the API server does not filter ({why}): other buckets' CronJobs are \
                 dropped, never acted on"
            ),
        }
    }

    fn set(&self, filtering: Filtering, why: &str) {
        let changed = self.state.send_if_modified(|now| std::mem::replace(now, filtering) != filtering);
        self.gauge.set(i64::from(filtering == Filtering::Server));
        match (changed, filtering) {
            (true, Filtering::Server) => tracing::info!("{why}: buckets select their CronJobs on the server"),
            (true, Filtering::Labels) => tracing::warn!("{why}: buckets go by the cronshard.io/bucket label"),
            (false, _) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_falls_back_to_labels_and_on_never_does() {
        let gauge = prometheus_client::metrics::gauge::Gauge::default();
        let new = |setting, function| Sharding::new(setting, function, gauge.clone());
        let auto = new(ServerSideSharding::Auto, BucketFunction::Uid);
        assert_eq!((auto.filtering(), gauge.get()), (Filtering::Labels, 0));
        auto.set(Filtering::Server, "probed");
        assert_eq!(gauge.get(), 1);
        let seen = auto.subscribe();
        auto.not_filtering("a list without shardInfo");
        assert_eq!(auto.filtering(), Filtering::Labels);
        assert!(seen.has_changed().unwrap_or(false));
        let on = new(ServerSideSharding::On, BucketFunction::Uid);
        on.not_filtering("a foreign object");
        assert_eq!(on.filtering(), Filtering::Server);
        // The server cannot evaluate the name function: labels, whatever the setting.
        assert_eq!(new(ServerSideSharding::On, BucketFunction::Name).filtering(), Filtering::Labels);
        assert_eq!(new(ServerSideSharding::Off, BucketFunction::Uid).filtering(), Filtering::Labels);
    }
}
