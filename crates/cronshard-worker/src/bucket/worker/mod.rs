//! The bucket's worker: its state and every change to it. It reads label-selected watches
//! of the bucket's CronJobs and Jobs (initial lists from the watch cache) into the index,
//! keeps one timer queue of next sync times, runs the due syncs in rounds and writes what
//! they decided. Nothing here walks all CronJobs or all Jobs of a namespace.

mod foreign;
mod rounds;
mod unlabelled;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::{BoxStream, Fuse};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::context::Context;
use crate::metrics::{ObjectLabels, ReasonLabels};
use crate::objects::cached::CachedCronJob;
use crate::objects::convert::{child_job, job_started, key};
use crate::objects::decoded::{Decoded, decodable};
use crate::sharding::Filtering;
use cronshard_sync::SyncError;
use cronshard_sync::{ChildJob, Outcome};

use super::calls::{StatusWrite, WriteResult, report_undecodable, write_status};
use super::cleanup::HistoryDeletes;
use super::index::{Due, Index, Listing};
use super::offsets::Spreads;
use super::start_delays::StartDelays;
use super::timers::Timers;
use super::writes::{Landed, StatusWrites};

/// Longest a handed-over bucket spends writing what it decided.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// How many syncs of one bucket run at once.
const PARALLEL_SYNCS: usize = 16;
/// How many status writes of one bucket wait for the client's budget or are in flight at
/// once. Enough that, across the buckets, status writes keep waiting at the limiter until
/// they are done: with fewer, the gaps between them go to Events, which are less urgent.
const PARALLEL_WRITES: usize = 256;
/// How many history deletions of one bucket wait for the budget or are in flight at once.
const PARALLEL_DELETES: usize = 64;

type Watch<K> = Fuse<BoxStream<'static, Result<watcher::Event<Decoded<K>>, watcher::Error>>>;

/// What a bucket listens to: its two watches, how the server filters, and the signal to stop.
struct Streams {
    cronjobs: Watch<CronJob>,
    jobs: Watch<Job>,
    filtering: tokio::sync::watch::Receiver<Filtering>,
    stop: tokio::sync::watch::Receiver<bool>,
}

/// The bucket's CronJob watch under `filtering` (initial list from the watch cache).
fn cronjob_watch(ctx: &Context, bucket: u32, filtering: Filtering) -> Watch<CronJob> {
    let (client, selector) = ctx.cronjob_source(bucket, filtering);
    let config = watcher::Config::default().labels(&selector).any_semantic();
    watcher(Api::<Decoded<CronJob>>::all(client), config).default_backoff().boxed().fuse()
}

struct Worker {
    ctx: Arc<Context>,
    bucket: u32,
    epoch: i32,
    index: Index,
    timers: Timers,
    writes: StatusWrites,
    /// The status writes in flight: (CronJob key, result).
    writing: JoinSet<(String, StatusWrite)>,
    history: HistoryDeletes,
    cronjob_list: Listing<CachedCronJob>,
    job_list: Listing<ChildJob>,
    /// Unlabellable CronJobs of this bucket in the cache: key -> resourceVersion read.
    leftovers: HashMap<String, String>,
    /// When to read the replica's leftovers of this bucket again (`None`: up to date).
    leftovers_due: Option<Instant>,
    spreads: Spreads,
    /// This bucket's Jobs whose pods have not been seen ready yet.
    start_delays: StartDelays,
    /// The next herd last told to the limiter.
    reserved: Option<(cronshard_types::Timestamp, usize)>,
}

/// Runs one bucket until `stop` turns true; `ready` counts buckets whose initial lists are in.
/// `epoch` is the bucket Lease's leaseTransitions when this replica claimed it: it goes into
/// every Job's audit annotation.
pub async fn run(
    ctx: Arc<Context>,
    bucket: u32,
    epoch: i32,
    stop: tokio::sync::watch::Receiver<bool>,
    ready: Arc<AtomicUsize>,
) {
    let mut filtering = ctx.sharding.subscribe();
    let now_filtering = *filtering.borrow_and_update();
    // Jobs carry the bucket label but not their CronJob's labels: the migration selector
    // chooses CronJobs only.
    let job_selector = format!("{}={bucket}", cronshard_types::keys::BUCKET_LABEL);
    let job_config = watcher::Config::default().labels(&job_selector).any_semantic();
    let mut streams = Streams {
        cronjobs: cronjob_watch(&ctx, bucket, now_filtering),
        jobs: watcher(Api::<Decoded<Job>>::all(ctx.client.clone()), job_config).default_backoff().boxed().fuse(),
        filtering,
        stop,
    };
    let mut w = Worker::new(ctx.clone(), bucket, epoch);
    let mut leftover_changes = ctx.leftovers.subscribe();
    let mut namespace_spread_changes = ctx.namespace_spreads.subscribe();
    // Counted while listed; the guard un-counts even when the task is aborted (fencing).
    let mut counted_ready: Option<ReadyGuard> = None;
    loop {
        w.reserve_next_herd(false);
        let sleep = w.next_wake();
        tokio::select! {
            () = crate::stop::stop_signal(&mut streams.stop) => break,
            event = streams.cronjobs.next() => match event {
                Some(event) => w.on_watch_event("CronJob", event, Worker::on_cronjob),
                None => break,
            },
            event = streams.jobs.next() => match event {
                Some(event) => w.on_watch_event("Job", event, Worker::on_job),
                None => break,
            },
            _ = tokio::time::sleep(sleep) => w.run_due(&mut streams).await,
            Some(written) = w.writing.join_next(), if !w.writing.is_empty() => w.write_done(written),
            deleted = w.history.next_done(), if !w.history.is_idle() => w.history.done(&ctx, deleted),
            _ = ctx.clock.changed() => w.reserve_next_herd(true),
            // The server started or stopped filtering: list the bucket's CronJobs the new way
            // (the relist replaces the cache as any relist does).
            changed = streams.filtering.changed() => {
                if changed.is_ok() {
                    let now = *streams.filtering.borrow_and_update();
                    streams.cronjobs = cronjob_watch(&ctx, bucket, now);
                }
            }
            // A Namespace's spread default changed (or the first list came): every CronJob
            // syncs with what it now implies.
            changed = namespace_spread_changes.changed() => {
                if changed.is_ok() {
                    w.sync_all();
                }
            }
            changed = leftover_changes.changed() => {
                if changed.is_ok() {
                    w.leftovers_due = Some(Instant::now());
                }
            }
        }
        // A round of due syncs may have seen the stop signal itself.
        if *streams.stop.borrow() {
            break;
        }
        if w.ready() && w.leftovers_due.is_some_and(|at| at <= Instant::now()) {
            w.merge_leftovers().await;
        }
        if counted_ready.is_none() && w.ready() {
            ready.fetch_add(1, Ordering::Relaxed);
            counted_ready = Some(ReadyGuard(ready.clone()));
        }
    }
    ctx.limiter.reserve(bucket, None);
    // Handing the bucket over: what was decided is written before the Lease is released.
    if *streams.stop.borrow() {
        w.drain_writes().await;
    }
    drop(counted_ready);
}

struct ReadyGuard(Arc<AtomicUsize>);

impl Drop for ReadyGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Worker {
    fn new(ctx: Arc<Context>, bucket: u32, epoch: i32) -> Self {
        Worker {
            ctx,
            bucket,
            epoch,
            index: Index::default(),
            timers: Timers::default(),
            writes: StatusWrites::new(PARALLEL_WRITES),
            writing: JoinSet::new(),
            history: HistoryDeletes::new(PARALLEL_DELETES),
            cronjob_list: Listing::Unlisted,
            job_list: Listing::Unlisted,
            leftovers: HashMap::new(),
            leftovers_due: Some(Instant::now()),
            spreads: Spreads::default(),
            start_delays: StartDelays::default(),
            reserved: None,
        }
    }

    /// One item of a watch stream: an event of a decodable object goes to `apply`; an
    /// undecodable object is reported; a watch error is logged (the watcher retries itself).
    fn on_watch_event<K: kube::Resource + Default>(
        &mut self,
        kind: &'static str,
        event: Result<watcher::Event<Decoded<K>>, watcher::Error>,
        apply: fn(&mut Self, watcher::Event<K>),
    ) {
        match event {
            Ok(event) => {
                let event = decodable(event, |bad| report_undecodable(&self.ctx, kind, bad));
                if let Some(event) = event.and_then(|event| self.own(kind, event)) {
                    apply(self, event);
                }
                self.count();
            }
            Err(error) => self.watch_failed(kind, &error),
        }
    }

    fn watch_failed(&self, kind: &str, error: &watcher::Error) {
        // An ERROR event inside a 200 watch stream never passes the client's counting layer.
        if let watcher::Error::WatchError(status) = error
            && status.code == 410
        {
            self.ctx.metrics.api.expired.inc();
        }
        self.ctx.log_warn("watch", &format!("{kind} watch of bucket {} failed; retrying: {error}", self.bucket));
    }

    fn next_wake(&self) -> Duration {
        match self.timers.next_at() {
            Some(at) => self.ctx.clock.until(at).min(self.ctx.clock.max_sleep()),
            None => self.ctx.clock.max_sleep(),
        }
    }

    /// Syncs `key` now, if the initial lists are in (before that, everything syncs at once
    /// when they are).
    fn sync_soon(&mut self, key: &str) {
        if self.ready() {
            self.timers.schedule(key, self.ctx.clock.now());
            self.ctx.metrics.queue_depth.set(self.timers.len() as i64);
        }
    }

    /// Both lists are in, and the Namespaces' spread defaults (a run must not start at its
    /// scheduled time when its Namespace asks for a spread).
    fn ready(&self) -> bool {
        self.cronjob_list.listed() && self.job_list.listed() && self.ctx.namespace_spreads.listed()
    }

    fn count(&self) {
        let bucket = self.bucket.to_string();
        let gauge = |kind: &str| {
            self.ctx.metrics.objects.get_or_create(&ObjectLabels { kind: kind.into(), bucket: bucket.clone() }).clone()
        };
        let (cronjobs, jobs) = self.index.counts();
        gauge("CronJob").set(cronjobs as i64);
        gauge("Job").set(jobs as i64);
    }

    fn insert_cronjob(&mut self, cj: CronJob) {
        let k = self.index.apply_cronjob(CachedCronJob::new(cj));
        self.sync_soon(&k);
    }

    fn forget_cronjob(&mut self, k: &str) {
        self.index.delete_cronjob(k);
        self.timers.forget(k);
        self.writes.forget(k);
        self.history.forget(k);
    }

    fn on_cronjob(&mut self, event: watcher::Event<CronJob>) {
        match event {
            watcher::Event::Init => {
                // A relist on labels under `auto` is a moment to ask the server again.
                if self.cronjob_list.listed() {
                    self.ctx.sharding.reprobe_soon(&self.ctx.client, self.ctx.settings.bucket_function);
                }
                self.cronjob_list.begin();
            }
            watcher::Event::InitApply(cj) => self.cronjob_list.add(CachedCronJob::new(cj)),
            watcher::Event::InitDone => {
                let fresh = self.cronjob_list.done();
                self.index.reset_cronjobs(fresh);
                // The list replaced the cache: the leftovers are read again.
                self.leftovers.clear();
                self.leftovers_due = Some(Instant::now());
                self.sync_all();
            }
            watcher::Event::Apply(cj) => self.insert_cronjob(cj),
            // Leaving the selector (relabelled, or the migration selector) is not a deletion:
            // stop working on it, never act destructively.
            watcher::Event::Delete(cj) => self.forget_cronjob(&key(&cj.metadata)),
        }
    }

    fn on_job(&mut self, event: watcher::Event<Job>) {
        match event {
            watcher::Event::Init => self.job_list.begin(),
            watcher::Event::InitApply(job) => self.job_list.add(child_job(&job)),
            watcher::Event::InitDone => {
                let fresh = self.job_list.done();
                self.index.reset_jobs(fresh);
                let index = &self.index;
                self.start_delays.retain(|uid| index.has_job(uid));
                self.sync_all();
            }
            watcher::Event::Apply(job) => {
                let started = job_started(&job);
                let job = child_job(&job);
                if let Some(delay) = self.start_delays.observed(&job.uid, started, self.ctx.clock.now()) {
                    self.ctx.metrics.start_delay.observe(delay);
                }
                // Counted where the bucket sees it start (a relist does not count it again).
                if job.manual && !self.index.has_job(&job.uid) {
                    self.ctx.metrics.manual_runs.inc();
                }
                if let Some(owner) = self.index.apply_job(job) {
                    self.sync_soon(&owner);
                }
            }
            watcher::Event::Delete(job) => {
                let job = child_job(&job);
                self.start_delays.forget(&job.uid);
                if let Some(owner) = self.index.delete_job(&job) {
                    self.sync_soon(&owner);
                }
            }
        }
    }

    fn sync_all(&mut self) {
        for k in self.index.cronjob_keys() {
            self.sync_soon(&k);
        }
    }

    /// What a sync of `k` reads: the cache, with the status this bucket decided last if the
    /// server does not have it yet, and the offset of its runs (a spread that cannot apply is
    /// ignored, with a Warning Event saying why).
    fn due(&mut self, k: &str) -> Option<Due> {
        let (mut due, cronjob) = self.index.due(k)?;
        due.state.dst_policy = self.ctx.settings.dst_policy;
        if let Some(status) = self.writes.unwritten(k) {
            due.state.status = status.clone();
        }
        let namespace_default = cronjob.metadata.namespace.as_deref().and_then(|ns| self.ctx.namespace_spreads.get(ns));
        let (now, policy) = (self.ctx.clock.now(), self.ctx.settings.dst_policy);
        match self.spreads.offset(&cronjob, namespace_default.as_deref(), now, policy) {
            Ok(offset) => due.spread_offset = offset,
            Err(error) => {
                let reason = ReasonLabels { reason: error.metric_label().into() };
                self.ctx.metrics.spread_ignored.get_or_create(&reason).inc();
                let event = cronshard_sync::Event {
                    kind: cronshard_sync::EventType::Warning,
                    reason: "InvalidSpread",
                    message: format!("{error}; the runs start at their scheduled times"),
                };
                crate::events::publish(self.ctx.clone(), due.reference.clone(), vec![event]);
            }
        }
        Some(due)
    }

    /// Applies a sync's results: metrics and Events, the status to write, the history to
    /// clean up, the next sync time. Watches are read while syncs run, so the CronJob may have
    /// left the bucket meanwhile, or been deleted and created again: then only what already
    /// happened is recorded, and nothing is written to the object now under that name.
    fn finish(&mut self, due: Due, outcome: Outcome) {
        self.record(&due, &outcome);
        let k = due.key.as_str();
        if self.index.cronjob(k).and_then(CachedCronJob::uid) != Some(due.state.uid.as_str()) {
            return;
        }
        if let Some(through) = outcome.reported_through {
            self.index.set_reported(k, through);
        }
        if outcome.status_changed {
            self.writes.decided(k, outcome.status.clone());
        }
        // As upstream, no cleanup after a failed sync; and none while a status is decided but
        // not on the server: the run it records must be recorded there before a Job is deleted
        // on its strength (otherwise a lost write could let that run start twice). The sync
        // after the write lands names them again.
        if outcome.error.is_none() {
            if self.writes.unwritten(k).is_none() {
                self.history.queue(k, &due.reference, &outcome.history);
            } else if !outcome.history.is_empty() {
                self.writes.withhold_cleanup(k);
            }
        }
        match &outcome.error {
            Some(error) => self.failed(k, error, outcome.requeue_at),
            None => self.timers.succeeded(k, outcome.requeue_at),
        }
    }

    /// A failed sync or status write: retried with backoff, never later than `next`.
    fn failed(&mut self, k: &str, error: &SyncError, next: Option<cronshard_types::Timestamp>) {
        let delay = self.timers.failed(k, self.ctx.clock.now(), next);
        self.ctx.log_warn("sync", &format!("sync of {k} failed, retried in {delay:?}: {error}"));
        self.ctx.metrics.sync_errors.get_or_create(&ReasonLabels { reason: error.metric_label().into() }).inc();
    }

    /// Starts the status writes that have a free slot, each with the cached object's
    /// resourceVersion.
    fn start_writes(&mut self) {
        for (k, status) in self.writes.start() {
            let Some(cronjob) = self.index.cronjob(&k).cloned() else {
                // Not cached any more: there is nothing to sync again.
                let _ = self.writes.finished(&k, Landed::No);
                continue;
            };
            let ctx = self.ctx.clone();
            self.writing.spawn(async move {
                let written = write_status(&ctx, &cronjob, &status).await;
                (k, written)
            });
        }
    }

    /// A status write ended: the fresh object goes into the cache; a conflict syncs again
    /// from the server's copy; a failure backs off.
    fn write_done(&mut self, written: Result<(String, StatusWrite), tokio::task::JoinError>) {
        // A write task only ends early when the bucket is being aborted (fencing).
        let Ok((k, written)) = written else { return };
        let landed = match written {
            Ok(WriteResult::Written(fresh)) => {
                self.index.apply_fresh(*fresh);
                Landed::Yes
            }
            Ok(WriteResult::Conflict(fresh)) => {
                if let Some(fresh) = fresh {
                    self.index.apply_fresh(*fresh);
                    self.timers.schedule(&k, self.ctx.clock.now());
                }
                Landed::No
            }
            Err(error) => {
                self.failed(&k, &error, None);
                Landed::No
            }
        };
        if self.writes.finished(&k, landed) {
            self.timers.schedule(&k, self.ctx.clock.now());
        }
        self.start_writes();
    }

    /// Writes everything decided, within [`DRAIN_TIMEOUT`] in all (history cleanup is left
    /// to the next owner, whose syncs name the same Jobs).
    async fn drain_writes(&mut self) {
        let drain = async {
            self.start_writes();
            while let Some(written) = self.writing.join_next().await {
                self.write_done(written);
            }
        };
        if tokio::time::timeout(DRAIN_TIMEOUT, drain).await.is_err() {
            self.ctx.log_warn("sync", &format!("bucket {}: status writes did not finish in time", self.bucket));
        }
    }

    /// Metrics and Events for one sync; Events go out in the background, at low priority.
    fn record(&mut self, due: &Due, outcome: &Outcome) {
        let m = &self.ctx.metrics;
        if let Some((job, scheduled)) = &outcome.created {
            // A spread run is due at its scheduled time plus its offset.
            let offset = due.spread_offset.unwrap_or(0);
            let due_at = scheduled.checked_add(jiff::SignedDuration::from_secs(offset as i64)).unwrap_or(*scheduled);
            self.start_delays.created(&job.uid, due_at);
            let skew = job.creation_timestamp.duration_since(due_at).as_secs_f64().max(0.0);
            if due.spread_offset.is_some() {
                m.spread_runs.inc();
            }
            m.skew.observe(skew);
            m.upstream_skew.observe(skew);
            m.fires.inc();
        } else if outcome.status_changed && outcome.status.last_schedule_time != due.state.status.last_schedule_time {
            m.duplicates_avoided.inc();
        }
        for (reason, count) in &outcome.missed {
            m.missed.get_or_create(&ReasonLabels { reason: reason.label().into() }).inc_by(*count);
        }
        if let Some(invalid) = outcome.invalid {
            m.invalid.get_or_create(&ReasonLabels { reason: invalid.label().to_owned() }).inc();
        }
        if outcome.events.is_empty() {
            return;
        }
        crate::events::publish(self.ctx.clone(), due.reference.clone(), outcome.events.clone());
    }
}
