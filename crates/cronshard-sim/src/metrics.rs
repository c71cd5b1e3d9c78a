//! The simulator's own Prometheus metrics.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub verb: String,
    pub resource: String,
    pub code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResourceLabels {
    pub resource: String,
}

#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pub requests: Family<RequestLabels, Counter>,
    pub watchers: Gauge,
    pub objects: Family<ResourceLabels, Gauge>,
    pub revision: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("cronshard_sim");
        let requests = Family::<RequestLabels, Counter>::default();
        let watchers = Gauge::default();
        let objects = Family::<ResourceLabels, Gauge>::default();
        let revision = Gauge::default();
        registry.register(
            "requests",
            "API requests by verb, resource and response code (410 and 429 included)",
            requests.clone(),
        );
        registry.register("watchers", "Open watches", watchers.clone());
        registry.register("objects", "Stored objects by resource", objects.clone());
        registry.register("revision", "Current storage revision", revision.clone());
        Metrics { registry, requests, watchers, objects, revision }
    }
}

impl Metrics {
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Encoding into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
