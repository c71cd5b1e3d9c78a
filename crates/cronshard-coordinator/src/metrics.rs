//! The coordinator's Prometheus metrics.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Membership and ownership as this replica sees them.
#[derive(Clone, Debug)]
pub struct Metrics {
    pub members: Gauge,
    pub unowned_buckets: Gauge,
    pub lease_transitions: Counter,
    pub handover_seconds: Histogram,
    pub member_set_hash: Gauge,
    pub refused: Gauge,
    pub fenced: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            members: Gauge::default(),
            unowned_buckets: Gauge::default(),
            lease_transitions: Counter::default(),
            handover_seconds: Histogram::new([0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0]),
            member_set_hash: Gauge::default(),
            refused: Gauge::default(),
            fenced: Counter::default(),
        }
    }
}

impl Metrics {
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "cronshard_members",
            "Live members this replica sees with its bucket count (newcomers in their join grace included)",
            self.members.clone(),
        );
        r.register(
            "cronshard_unowned_buckets",
            "Buckets whose Lease is absent, released or held by a dead member, as this replica sees them",
            self.unowned_buckets.clone(),
        );
        r.register("cronshard_lease_transitions", "Bucket Leases this replica claimed", self.lease_transitions.clone());
        r.register(
            "cronshard_handover_seconds",
            "From stopping a bucket's work to releasing its Lease",
            self.handover_seconds.clone(),
        );
        r.register(
            "cronshard_member_set_hash",
            "A hash of the member set this replica sees: replicas that disagree show different values",
            self.member_set_hash.clone(),
        );
        r.register(
            "cronshard_refused",
            "1 while this replica refuses to act (its --buckets is not the count of record, or another process has its identity)",
            self.refused.clone(),
        );
        r.register(
            "cronshard_fenced",
            "Times this replica missed its renew deadline and stopped all bucket work",
            self.fenced.clone(),
        );
    }
}
