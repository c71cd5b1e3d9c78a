//! The worker's Prometheus metrics: what a replica exports on `/metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub verb: String,
    pub code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ObjectLabels {
    pub kind: String,
    pub bucket: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerbLabels {
    pub verb: String,
}

/// The bounds of the request duration histogram, seconds: a healthy server's writes take
/// milliseconds, a loaded one's tens of them; half a second is where the adaptive rate
/// counts a write as queued.
pub const REQUEST_DURATION_BUCKETS: [f64; 12] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

fn request_duration() -> Histogram {
    Histogram::new(REQUEST_DURATION_BUCKETS)
}

/// API responses by verb and code, with the two that matter most named on their own.
#[derive(Clone, Debug)]
pub struct ApiCounters {
    pub responses: Family<RequestLabels, Counter>,
    /// How long each answer took, from the request handed to the HTTP client until its
    /// response headers, by verb (watches excluded: they last until the server ends them).
    pub durations: Family<VerbLabels, Histogram, fn() -> Histogram>,
    /// 410 Gone: a list or watch asked for history the server has compacted.
    pub expired: Counter,
    /// 429 Too Many Requests: the server's flow control pushed back.
    pub throttled: Counter,
    /// What the adaptive rate reads (not exported).
    pub congestion: crate::api::adaptive::Congestion,
}

impl Default for ApiCounters {
    fn default() -> Self {
        ApiCounters {
            responses: Family::default(),
            durations: Family::new_with_constructor(request_duration),
            expired: Counter::default(),
            throttled: Counter::default(),
            congestion: crate::api::adaptive::Congestion::default(),
        }
    }
}

impl ApiCounters {
    /// One answer (`code` 0: none) to a request of `verb` that took `latency`.
    pub fn observe(&self, verb: &str, code: u16, latency: std::time::Duration) {
        self.congestion.record(verb, code, latency);
        self.responses.get_or_create(&RequestLabels { verb: verb.to_owned(), code: code.to_string() }).inc();
        if verb != "watch" {
            self.durations.get_or_create(&VerbLabels { verb: verb.to_owned() }).observe(latency.as_secs_f64());
        }
        match code {
            410 => {
                self.expired.inc();
            }
            429 => {
                self.throttled.inc();
            }
            _ => {}
        }
    }
}

/// The bounds of cronshard's skew and start-delay histograms, seconds: 50 ms to 512 s.
pub const SKEW_BUCKETS: [f64; 14] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

/// Every metric the worker exports. It keeps a registry of its own (for [`Metrics::encode`]
/// in tests and tools); a replica registers them with the coordinator's into the registry
/// it serves on `/metrics` ([`Metrics::register`]).
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Upstream's histogram, kept for dashboards that expect it (1 s to 512 s).
    pub upstream_skew: Histogram,
    /// Job creationTimestamp − scheduled time, 50 ms to 512 s.
    pub skew: Histogram,
    /// From a run's due time until its Job first reports a ready pod (or finishes), as the
    /// bucket's Job watch sees it; the skew's buckets.
    pub start_delay: Histogram,
    pub fires: Counter,
    /// Jobs started by hand (`kubectl create job --from=cronjob/…`) seen by the buckets.
    pub manual_runs: Counter,
    pub duplicates_avoided: Counter,
    pub missed: Family<ReasonLabels, Counter>,
    pub invalid: Family<ReasonLabels, Counter>,
    /// Failed syncs by [`cronshard_sync::SyncError::metric_label`].
    pub sync_errors: Family<ReasonLabels, Counter>,
    pub api: ApiCounters,
    pub buckets_owned: Gauge,
    pub objects: Family<ObjectLabels, Gauge>,
    pub queue_depth: Gauge,
    /// The client rate now (requests per second; 0 = unlimited).
    pub client_rate: Gauge<f64, std::sync::atomic::AtomicU64>,
    /// Cuts of the adaptive rate, by [`crate::api::adaptive::Cut::metric_label`].
    pub rate_cuts: Family<ReasonLabels, Counter>,
    /// Runs started with a spread offset.
    pub spread_runs: Counter,
    /// Syncs that ignored a CronJob's spread, by [`cronshard_types::Error::metric_label`].
    pub spread_ignored: Family<ReasonLabels, Counter>,
    /// Objects in owned buckets that the client cannot decode (skipped).
    pub undecodable: Family<KindLabels, Counter>,
    /// Objects a bucket's watch delivered that belong to another bucket (dropped).
    pub foreign: Family<KindLabels, Counter>,
    /// 1 while the buckets' CronJobs are selected by the API server (`shardSelector`).
    pub server_side_sharding: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let upstream_skew = Histogram::new([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0]);
        let mut m = Metrics {
            upstream_skew,
            skew: Histogram::new(SKEW_BUCKETS),
            start_delay: Histogram::new(SKEW_BUCKETS),
            fires: Counter::default(),
            manual_runs: Counter::default(),
            duplicates_avoided: Counter::default(),
            missed: Family::default(),
            invalid: Family::default(),
            sync_errors: Family::default(),
            api: ApiCounters::default(),
            buckets_owned: Gauge::default(),
            objects: Family::default(),
            queue_depth: Gauge::default(),
            client_rate: Gauge::default(),
            rate_cuts: Family::default(),
            spread_runs: Counter::default(),
            spread_ignored: Family::default(),
            undecodable: Family::default(),
            foreign: Family::default(),
            server_side_sharding: Gauge::default(),
            registry: Registry::default(),
        };
        m.every_reason_at_zero();
        let mut own = Registry::default();
        m.register(&mut own);
        m.registry = own;
        m
    }
}

impl Metrics {
    /// Registers every metric of the worker in `r` (they are shared, not copied: both
    /// registries see every change).
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "cronjob_controller_job_creation_skew_duration_seconds",
            "Time between when a cronjob is scheduled to be run, and when the corresponding job is created",
            self.upstream_skew.clone(),
        );
        r.register(
            "cronshard_job_creation_skew_seconds",
            "Job creationTimestamp minus scheduled time",
            self.skew.clone(),
        );
        r.register(
            "cronshard_run_start_delay_seconds",
            "From a run's due time until its Job first reports a ready pod or finishes, as the bucket's Job watch \
             sees it (Jobs this replica created)",
            self.start_delay.clone(),
        );
        r.register("cronshard_fires", "Jobs created for due runs", self.fires.clone());
        r.register(
            "cronshard_manual_runs",
            "Jobs started by hand (kubectl create job --from=cronjob/NAME) that the buckets saw start",
            self.manual_runs.clone(),
        );
        r.register(
            "cronshard_duplicates_avoided",
            "Runs whose Job already existed (AlreadyExists) and was recorded instead of created twice",
            self.duplicates_avoided.clone(),
        );
        r.register(
            "cronshard_missed_runs",
            "Scheduled runs that never started, by reason (MissSchedule: past the starting deadline; Superseded \
             and TooManyMissedTimes: a later run was due)",
            self.missed.clone(),
        );
        r.register("cronshard_invalid_cronjobs", "Syncs of CronJobs that cannot run, by reason", self.invalid.clone());
        r.register(
            "cronshard_sync_errors",
            "Syncs that failed transiently and were retried with backoff, by reason",
            self.sync_errors.clone(),
        );
        r.register(
            "cronshard_api_requests",
            "API responses to this replica, by verb and code (each retry counted)",
            self.api.responses.clone(),
        );
        r.register(
            "cronshard_api_request_duration_seconds",
            "How long this replica waited for each answer, by verb (each retry counted, watches not), \
             from the request handed to the HTTP client until the response headers",
            self.api.durations.clone(),
        );
        r.register(
            "cronshard_api_expired",
            "410 Gone: lists and watches that asked for compacted history (answers and watch errors)",
            self.api.expired.clone(),
        );
        r.register("cronshard_api_throttled", "429 Too Many Requests answers", self.api.throttled.clone());
        r.register(
            "cronshard_client_rate",
            "This replica's client rate limit now, requests per second (0 = unlimited): its share of the \
             deployment budget, adapted to the server's 429s and slow writes",
            self.client_rate.clone(),
        );
        r.register(
            "cronshard_client_rate_cuts",
            "Cuts of the adaptive client rate, by reason (throttled: 429s; slow_writes: writes queued at the server)",
            self.rate_cuts.clone(),
        );
        r.register(
            "cronshard_spread_runs",
            "Runs started later than scheduled by the CronJob's cronshard.io/spread offset",
            self.spread_runs.clone(),
        );
        r.register(
            "cronshard_spread_ignored",
            "Syncs that ignored a CronJob's cronshard.io/spread, by reason (a Warning Event InvalidSpread says why)",
            self.spread_ignored.clone(),
        );
        self.register_buckets(r);
    }

    /// The metrics of what the owned buckets hold and receive.
    fn register_buckets(&self, r: &mut Registry) {
        r.register("cronshard_buckets_owned", "Buckets this replica works on", self.buckets_owned.clone());
        r.register(
            "cronshard_objects",
            "Objects in the owned buckets' caches, by kind and bucket",
            self.objects.clone(),
        );
        r.register("cronshard_queue_depth", "CronJobs waiting in the timer queues", self.queue_depth.clone());
        r.register(
            "cronshard_undecodable_objects",
            "Objects in owned buckets the client cannot decode, skipped so their buckets keep working",
            self.undecodable.clone(),
        );
        r.register(
            "cronshard_foreign_objects",
            "Objects a bucket's watch delivered that belong to another bucket, dropped unacted on",
            self.foreign.clone(),
        );
        r.register(
            "cronshard_server_side_sharding",
            "1 while the API server selects the buckets' CronJobs (shardSelector), 0 while the label does",
            self.server_side_sharding.clone(),
        );
    }

    /// Every known reason from the start, at 0: `increase()` cannot see a series' first
    /// sample, so a counter born at 1 would hide the first missed run from alerts.
    fn every_reason_at_zero(&self) {
        for reason in cronshard_sync::MissReason::ALL {
            drop(self.missed.get_or_create(&ReasonLabels { reason: reason.label().to_owned() }));
        }
        for reason in cronshard_sync::Invalid::ALL {
            drop(self.invalid.get_or_create(&ReasonLabels { reason: reason.label().to_owned() }));
        }
        for reason in cronshard_sync::SyncError::labels() {
            drop(self.sync_errors.get_or_create(&ReasonLabels { reason: (*reason).to_owned() }));
        }
        for reason in cronshard_types::spread::IGNORED_REASONS {
            drop(self.spread_ignored.get_or_create(&ReasonLabels { reason: reason.to_owned() }));
        }
        for kind in ["CronJob", "Job"] {
            drop(self.foreign.get_or_create(&KindLabels { kind: kind.to_owned() }));
        }
        for reason in crate::api::adaptive::Cut::LABELS {
            drop(self.rate_cuts.get_or_create(&ReasonLabels { reason: (*reason).to_owned() }));
        }
    }

    pub fn encode(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Metrics;

    #[test]
    fn answers_are_timed_by_verb_and_watches_are_not() {
        let m = Metrics::default();
        m.api.observe("create", 201, Duration::from_millis(30));
        m.api.observe("watch", 200, Duration::from_secs(290));
        let text = m.encode();
        let bucket = |le: &str| {
            text.lines()
                .find(|l| {
                    l.starts_with("cronshard_api_request_duration_seconds_bucket{")
                        && l.contains("verb=\"create\"")
                        && l.contains(&format!("le=\"{le}\""))
                })
                .and_then(|l| l.rsplit(' ').next())
                .map(str::to_owned)
        };
        assert_eq!((bucket("0.025").as_deref(), bucket("0.05").as_deref()), (Some("0"), Some("1")), "{text}");
        let timed_watches = text
            .lines()
            .filter(|l| l.starts_with("cronshard_api_request_duration_seconds") && l.contains("verb=\"watch\""));
        assert_eq!(timed_watches.count(), 0, "{text}");
    }
}
