//! Shadow mode's loop: three read-only watches (CronJobs, Jobs, and Namespaces for their
//! spread defaults) feed the ledger, a tick each second settles runs past their deadline, and
//! the report is written every minute and at exit.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cronshard_types::BucketFunction;
use cronshard_worker::Clock;
use cronshard_worker::objects::decoded::{Decoded, decodable};
use cronshard_worker::sharding::{Filtering, ServerSideSharding, Sharding, sharded_client};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};

use cronshard_types::spread::SPREAD_ANNOTATION;

use super::ledger::{Ledger, Settings};
use super::metrics::ShadowMetrics;
use super::report::Report;
use super::shard::Shard;
use super::verdict::Judged;
use super::views::{cronjob_view, job_view};
use crate::error::{Error, Result};

/// How shadow mode runs.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub(crate) settings: Settings,
    /// Only CronJobs matching this label selector.
    pub(crate) selector: Option<String>,
    pub(crate) shard: Option<Shard>,
    /// Where the JSON report goes (every minute and at exit).
    pub(crate) out: Option<PathBuf>,
    /// How the expected runs fall around daylight-saving transitions (`--dst-policy`).
    pub(crate) dst_policy: cronshard_types::DstPolicy,
}

/// How often the report is rewritten.
const REPORT_EVERY: Duration = Duration::from_secs(60);

/// Runs until `stop` resolves, or, with `until`, until every run up to it has a verdict; then
/// writes the last report and returns it.
pub(crate) async fn run(
    client: kube::Client,
    clock: Clock,
    options: Options,
    metrics: Arc<ShadowMetrics>,
    listed: Arc<AtomicBool>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<Report> {
    let mut config = watcher::Config::default().page_size(500);
    if let Some(selector) = &options.selector {
        config = config.labels(selector);
    }
    let cronjob_client = match options.shard {
        Some(shard) => shard_client(&client, shard).await,
        None => client.clone(),
    };
    let mut cronjobs = watcher(Api::<Decoded<CronJob>>::all(cronjob_client), config).default_backoff().boxed();
    let jobs_config = watcher::Config::default().page_size(500);
    let mut jobs = watcher(Api::<Decoded<Job>>::all(client.clone()), jobs_config).default_backoff().boxed();
    let mut namespaces = watcher(Api::<Namespace>::all(client), watcher::Config::default()).default_backoff().boxed();
    let mut state = State {
        ledger: Ledger::new(options.settings.clone()),
        options,
        metrics,
        clock,
        listing: HashSet::new(),
        namespace_spreads: HashMap::new(),
        namespaces_listing: HashMap::new(),
        lists_in: (false, false, false),
        jobs_seen_exported: 0,
    };
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut report_tick = tokio::time::interval(REPORT_EVERY);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => break,
            Some(event) = cronjobs.next() => state.on_cronjob(event),
            Some(event) = jobs.next() => state.on_job(event),
            Some(event) = namespaces.next() => state.on_namespace(event),
            _ = tick.tick() => {
                let now = state.clock.now();
                let judged = state.ledger.tick(now);
                state.judged(&judged);
                if state.done(now) {
                    break;
                }
            }
            _ = report_tick.tick() => {
                state.write_report()?;
            }
        }
        listed.store(state.listed(), Ordering::Relaxed);
        state.export_jobs_seen();
    }
    state.write_report()
}

/// The client for the shard's CronJob watch: with its shard selector when the API server
/// shows it filters by one (the shard's own check applies either way).
async fn shard_client(client: &kube::Client, shard: Shard) -> kube::Client {
    let sharding = Arc::new(Sharding::new(ServerSideSharding::Auto, BucketFunction::Uid, Default::default()));
    sharding.probe_until_answered(client, BucketFunction::Uid).await;
    match sharding.filtering() {
        Filtering::Server => sharded_client(client.clone(), shard.selector(), sharding),
        Filtering::Labels => client.clone(),
    }
}

struct State {
    ledger: Ledger,
    options: Options,
    metrics: Arc<ShadowMetrics>,
    clock: Clock,
    /// CronJob uids of a list in progress.
    listing: HashSet<String>,
    /// Namespace -> its `cronshard.io/spread` default.
    namespace_spreads: HashMap<String, String>,
    /// The defaults of a Namespace list in progress.
    namespaces_listing: HashMap<String, String>,
    /// (CronJobs, Jobs, Namespaces) listed at least once.
    lists_in: (bool, bool, bool),
    /// The ledger's count of Jobs seen, as far as the metric has it.
    jobs_seen_exported: u64,
}

impl State {
    fn on_cronjob(&mut self, event: Result<watcher::Event<Decoded<CronJob>>, watcher::Error>) {
        let event = match event {
            Ok(event) => decodable(
                event,
                |bad| tracing::warn!(name = ?bad.metadata.name, error = %bad.error, "a CronJob does not decode; not followed"),
            ),
            Err(e) => {
                tracing::warn!(error = %e, "CronJob watch failed; listing again");
                return;
            }
        };
        let now = self.clock.now();
        match event {
            Some(watcher::Event::Init) => self.listing.clear(),
            Some(watcher::Event::InitApply(cj)) => {
                if let Some(uid) = self.apply_cronjob(&cj, now) {
                    self.listing.insert(uid);
                }
            }
            Some(watcher::Event::InitDone) => {
                self.ledger.retain_cronjobs(&self.listing);
                self.lists_in.0 = true;
            }
            Some(watcher::Event::Apply(cj)) => {
                self.apply_cronjob(&cj, now);
            }
            Some(watcher::Event::Delete(cj)) => {
                if let Some(uid) = &cj.metadata.uid {
                    self.ledger.delete_cronjob(uid);
                }
            }
            None => {}
        }
        self.metrics.cronjobs.set(self.ledger.cronjobs() as i64);
    }

    /// Follows `cj` if it is in this shard; returns its uid if so.
    fn apply_cronjob(&mut self, cj: &CronJob, now: cronshard_types::Timestamp) -> Option<String> {
        let namespace = cj.metadata.namespace.as_deref().unwrap_or_default();
        let spread = self.namespace_spreads.get(namespace).map(String::as_str);
        let view = cronjob_view(cj, spread, now, self.options.dst_policy)?;
        if self.options.shard.is_some_and(|s| !s.holds(&view.uid)) {
            return None;
        }
        let uid = view.uid.clone();
        let judged = self.ledger.apply_cronjob(view, now);
        self.judged(&judged);
        Some(uid)
    }

    fn on_job(&mut self, event: Result<watcher::Event<Decoded<Job>>, watcher::Error>) {
        let event = match event {
            Ok(event) => decodable(
                event,
                |bad| tracing::warn!(name = ?bad.metadata.name, error = %bad.error, "a Job does not decode; not followed"),
            ),
            Err(e) => {
                tracing::warn!(error = %e, "Job watch failed; listing again");
                return;
            }
        };
        let now = self.clock.now();
        match event {
            Some(watcher::Event::InitApply(job) | watcher::Event::Apply(job)) => {
                if let Some(view) = job_view(&job, now) {
                    let judged = self.ledger.apply_job(view, now);
                    self.judged(&judged);
                }
            }
            Some(watcher::Event::Delete(job)) => {
                if let Some(view) = job_view(&job, now) {
                    self.ledger.delete_job(&view.owner_uid, &view.uid, now);
                }
            }
            Some(watcher::Event::InitDone) => self.lists_in.1 = true,
            Some(watcher::Event::Init) | None => {}
        }
        for delay in self.ledger.take_start_delays() {
            self.metrics.start_delay.observe(delay);
        }
    }

    fn on_namespace(&mut self, event: Result<watcher::Event<Namespace>, watcher::Error>) {
        let spread_of = |ns: &Namespace| {
            let name = ns.metadata.name.clone().unwrap_or_default();
            (name, ns.metadata.annotations.as_ref().and_then(|a| a.get(SPREAD_ANNOTATION)).cloned())
        };
        match event {
            Ok(watcher::Event::Init) => self.namespaces_listing.clear(),
            Ok(watcher::Event::InitApply(ns)) => {
                if let (name, Some(spread)) = spread_of(&ns) {
                    self.namespaces_listing.insert(name, spread);
                }
            }
            Ok(watcher::Event::InitDone) => {
                let listed = std::mem::take(&mut self.namespaces_listing);
                let gone: Vec<String> =
                    self.namespace_spreads.keys().filter(|n| !listed.contains_key(*n)).cloned().collect();
                for name in gone {
                    self.set_namespace_spread(name, None);
                }
                for (name, spread) in listed {
                    self.set_namespace_spread(name, Some(spread));
                }
                self.lists_in.2 = true;
            }
            Ok(watcher::Event::Apply(ns)) => {
                let (name, spread) = spread_of(&ns);
                self.set_namespace_spread(name, spread);
            }
            Ok(watcher::Event::Delete(ns)) => self.set_namespace_spread(spread_of(&ns).0, None),
            Err(e) => tracing::warn!(error = %e, "Namespace watch failed; listing again"),
        }
    }

    /// A Namespace's spread default, passed on to the ledger when it changed.
    fn set_namespace_spread(&mut self, name: String, spread: Option<String>) {
        if self.namespace_spreads.get(&name) == spread.as_ref() {
            return;
        }
        self.ledger.apply_namespace_spread(&name, spread.as_deref(), self.clock.now());
        match spread {
            Some(s) => self.namespace_spreads.insert(name, s),
            None => self.namespace_spreads.remove(&name),
        };
    }

    fn listed(&self) -> bool {
        self.lists_in == (true, true, true)
    }

    fn export_jobs_seen(&mut self) {
        let seen = self.ledger.jobs_seen();
        self.metrics.jobs_seen.inc_by(seen - self.jobs_seen_exported);
        self.jobs_seen_exported = seen;
    }

    fn judged(&self, judged: &[Judged]) {
        self.metrics.observe(judged);
    }

    /// With `until`: the lists are in, its time has passed and every run up to it is judged.
    fn done(&self, now: cronshard_types::Timestamp) -> bool {
        let Some(until) = self.options.settings.until else { return false };
        self.listed() && now > until && self.ledger.pending() == 0
    }

    fn write_report(&self) -> Result<Report> {
        let report = Report::new(&self.ledger, self.clock.now(), self.options.shard.map(|s| s.to_string()));
        if let Some(path) = &self.options.out {
            let json = serde_json::to_string_pretty(&report).map_err(|e| Error::Report(e.to_string()))?;
            // Written whole, then renamed: a reader never sees half a report.
            let partial = path.with_extension("json.partial");
            std::fs::write(&partial, json + "\n")
                .and_then(|()| std::fs::rename(&partial, path))
                .map_err(|e| Error::Report(format!("{}: {e}", path.display())))?;
        }
        Ok(report)
    }
}
