//! What every bucket worker of a replica shares: client, limiter, metrics, settings, clock.

use std::num::NonZeroU32;
use std::sync::Arc;

use crate::api::fence::Fence;
use crate::api::limiter::Limiter;
use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::sharding::{Filtering, ServerSideSharding, Sharding};

/// A replica's settings.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The replica's identity (pod name): in the User-Agent, Events and the audit annotation.
    pub identity: String,
    pub buckets: NonZeroU32,
    /// Only CronJobs matching this label selector are managed (gradual migration).
    pub selector: Option<String>,
    /// How schedules fire around daylight-saving transitions (`--dst-policy`).
    pub dst_policy: cronshard_types::DstPolicy,
    /// How CronJobs map to buckets (`--bucket-function`).
    pub bucket_function: cronshard_types::BucketFunction,
    /// Whether buckets ask the API server to filter their CronJobs (`--server-side-sharding`).
    pub server_side_sharding: ServerSideSharding,
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
    /// Holds writes back once the renew deadline has passed (see [`crate::api::fence`]).
    pub fence: Fence,
    /// The API server's URL, named in connection errors.
    pub server: String,
    /// CronJobs that cannot be labelled, for their buckets' workers.
    pub leftovers: crate::watches::leftovers::Leftovers,
    /// The Namespaces' `cronshard.io/spread` defaults.
    pub namespace_spreads: crate::objects::namespace_spreads::NamespaceSpreads,
    /// Whether the buckets' CronJobs are selected by label or by the server, now.
    pub sharding: Arc<Sharding>,
    /// Throttles for repeated log lines, by call site.
    logs: std::sync::Mutex<std::collections::HashMap<&'static str, cronshard_types::throttle::Throttle>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("settings", &self.settings).field("clock", &self.clock).finish_non_exhaustive()
    }
}

impl Context {
    /// Builds the replica's instrumented client from `config` (see [`crate::api::client`]);
    /// `metrics` may carry other components' metrics in its registry.
    pub fn new(
        config: kube::Config,
        limiter: Limiter,
        settings: Settings,
        clock: Clock,
        metrics: Metrics,
    ) -> crate::error::Result<Arc<Self>> {
        let fence = Fence::default();
        let server = config.cluster_url.to_string();
        let client = crate::api::client::build(config, metrics.api.clone(), fence.clone())?;
        Ok(Arc::new(Context {
            event_series: Default::default(),
            sharding: Arc::new(Sharding::new(
                settings.server_side_sharding,
                settings.bucket_function,
                metrics.server_side_sharding.clone(),
            )),
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

    /// The bucket of the CronJob `namespace/name` with `uid`.
    pub fn bucket_of(&self, namespace: &str, name: &str, uid: &str) -> u32 {
        self.settings.bucket_function.bucket(namespace, name, uid, self.settings.buckets)
    }

    /// Where bucket `bucket` lists and watches its CronJobs under `filtering`: the client
    /// (with the bucket's `shardSelector` when the server filters) and the label selector
    /// (the bucket label when it does not, plus the migration selector).
    pub fn cronjob_source(&self, bucket: u32, filtering: Filtering) -> (kube::Client, String) {
        let extra = self.settings.selector.as_deref().map(str::trim).filter(|s| !s.is_empty());
        match filtering {
            Filtering::Labels => {
                let own = format!("{}={bucket}", cronshard_types::keys::BUCKET_LABEL);
                (self.client.clone(), extra.map_or(own.clone(), |extra| format!("{own},{extra}")))
            }
            Filtering::Server => {
                let selector = cronshard_types::shard_selector(bucket, self.settings.buckets);
                let client = crate::sharding::sharded_client(self.client.clone(), selector, self.sharding.clone());
                (client, extra.unwrap_or_default().to_owned())
            }
        }
    }
}
