//! One bucket's worker: label-selected watches of its CronJobs and Jobs (initial lists from
//! the watch cache), an owner-uid index of Jobs, one timer queue of next sync times, and the
//! syncs themselves. Nothing here walks all CronJobs or all Jobs of a namespace.

mod calls;
mod leftovers;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cronshard_types::Timestamp;
use futures::StreamExt;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};

use crate::context::Context;
use crate::convert::{child_job, controller_uid, cronjob_state, key};
use crate::decoded::{Decoded, decodable};
use crate::metrics::{ObjectLabels, ReasonLabels};
use crate::sync::{ChildJob, CronJobState, Outcome};

use self::calls::{StatusWrite, WriteResult, report_undecodable, sync_with_timeout, write_status};

/// Longest backoff after repeated transient failures of one CronJob.
const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// Longest a sync (or its status write) may take before the bucket moves on.
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);
/// Timers are re-checked at least this often, so a jump of the (test) clock is noticed.
const MAX_SLEEP: Duration = Duration::from_secs(1);

struct Worker {
    ctx: Arc<Context>,
    bucket: u32,
    epoch: i32,
    cronjobs: HashMap<String, Arc<CronJob>>,
    uid_to_key: HashMap<String, String>,
    jobs: HashMap<String, Arc<Job>>,
    /// CronJob uid -> uids of the Jobs it controls.
    owned: HashMap<String, HashSet<String>>,
    timers: BinaryHeap<Reverse<(Timestamp, String)>>,
    scheduled: HashMap<String, Timestamp>,
    failures: HashMap<String, u32>,
    /// Per CronJob, the runs already reported as missed or skipped (see `sync`).
    reported: HashMap<String, Timestamp>,
    cronjobs_listed: bool,
    jobs_listed: bool,
    init_cronjobs: Option<HashMap<String, Arc<CronJob>>>,
    init_jobs: Option<HashMap<String, Arc<Job>>>,
    /// Unlabellable CronJobs of this bucket in the cache: key -> resourceVersion read.
    leftovers: HashMap<String, String>,
    /// When to read the replica's leftovers of this bucket again (`None`: up to date).
    leftovers_due: Option<std::time::Instant>,
}

/// Runs one bucket until `stop` turns true; `ready` counts buckets whose initial lists are in.
/// `epoch` is the bucket Lease's leaseTransitions when this replica claimed it: it goes into
/// every Job's audit annotation.
pub async fn run(
    ctx: Arc<Context>,
    bucket: u32,
    epoch: i32,
    mut stop: tokio::sync::watch::Receiver<bool>,
    ready: Arc<AtomicUsize>,
) {
    let selector = ctx.bucket_selector(bucket);
    let config = watcher::Config::default().labels(&selector).any_semantic();
    // Jobs carry the bucket label but not their CronJob's labels: the migration selector
    // chooses CronJobs only.
    let job_selector = format!("{}={bucket}", cronshard_types::keys::BUCKET_LABEL);
    let job_config = watcher::Config::default().labels(&job_selector).any_semantic();
    let cronjobs = Api::<Decoded<CronJob>>::all(ctx.client.clone());
    let mut cronjob_events = watcher(cronjobs, config).default_backoff().boxed();
    let mut job_events = watcher(Api::<Decoded<Job>>::all(ctx.client.clone()), job_config).default_backoff().boxed();
    let mut w = Worker {
        ctx: ctx.clone(),
        bucket,
        epoch,
        cronjobs: HashMap::new(),
        uid_to_key: HashMap::new(),
        jobs: HashMap::new(),
        owned: HashMap::new(),
        timers: BinaryHeap::new(),
        scheduled: HashMap::new(),
        failures: HashMap::new(),
        reported: HashMap::new(),
        cronjobs_listed: false,
        jobs_listed: false,
        init_cronjobs: None,
        init_jobs: None,
        leftovers: HashMap::new(),
        leftovers_due: Some(std::time::Instant::now()),
    };
    let mut leftover_changes = ctx.leftovers.subscribe();
    // Counted while listed; the guard un-counts even when the task is aborted (fencing).
    let mut counted_ready: Option<ReadyGuard> = None;
    loop {
        let sleep = w.next_wake();
        tokio::select! {
            _ = stop.changed() => {
                if *stop.borrow() {
                    break;
                }
            }
            event = cronjob_events.next() => match event {
                Some(Ok(event)) => {
                    if let Some(event) = decodable(event, |bad| report_undecodable(&ctx, "CronJob", bad)) {
                        w.on_cronjob(event);
                    }
                }
                Some(Err(e)) => w.watch_failed("CronJob", &e),
                None => break,
            },
            event = job_events.next() => match event {
                Some(Ok(event)) => {
                    if let Some(event) = decodable(event, |bad| report_undecodable(&ctx, "Job", bad)) {
                        w.on_job(event);
                    }
                }
                Some(Err(e)) => w.watch_failed("Job", &e),
                None => break,
            },
            _ = tokio::time::sleep(sleep) => w.run_due().await,
            _ = ctx.clock.changed() => {}
            changed = leftover_changes.changed() => {
                if changed.is_ok() {
                    w.leftovers_due = Some(std::time::Instant::now());
                }
            }
        }
        if w.ready() && w.leftovers_due.is_some_and(|at| at <= std::time::Instant::now()) {
            w.merge_leftovers().await;
        }
        if counted_ready.is_none() && w.cronjobs_listed && w.jobs_listed {
            ready.fetch_add(1, Ordering::Relaxed);
            counted_ready = Some(ReadyGuard(ready.clone()));
        }
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
    /// A watch error; the watcher re-lists or re-watches by itself after a backoff.
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
        match self.timers.peek() {
            Some(Reverse((at, _))) => self.ctx.clock.until(*at).min(MAX_SLEEP),
            None => MAX_SLEEP,
        }
    }

    /// Syncs `key` at `at`, unless it is already due earlier.
    fn schedule(&mut self, key: &str, at: Timestamp) {
        if self.scheduled.get(key).is_some_and(|t| *t <= at) {
            return;
        }
        self.scheduled.insert(key.to_owned(), at);
        self.timers.push(Reverse((at, key.to_owned())));
        self.ctx.metrics.queue_depth.set(self.scheduled.len() as i64);
    }

    fn ready(&self) -> bool {
        self.cronjobs_listed && self.jobs_listed
    }

    fn count(&self) {
        let bucket = self.bucket.to_string();
        let gauge = |kind: &str| {
            self.ctx.metrics.objects.get_or_create(&ObjectLabels { kind: kind.into(), bucket: bucket.clone() }).clone()
        };
        gauge("CronJob").set(self.cronjobs.len() as i64);
        gauge("Job").set(self.jobs.len() as i64);
    }

    fn insert_cronjob(&mut self, cj: CronJob) {
        let k = key(&cj.metadata);
        if let Some(uid) = &cj.metadata.uid {
            self.uid_to_key.insert(uid.clone(), k.clone());
        }
        self.cronjobs.insert(k.clone(), Arc::new(cj));
        if self.ready() {
            let now = self.ctx.clock.now();
            self.schedule(&k, now);
        }
    }

    fn forget_cronjob(&mut self, k: &str) {
        if let Some(uid) = self.cronjobs.remove(k).and_then(|cj| cj.metadata.uid.clone()) {
            self.uid_to_key.remove(&uid);
        }
        self.scheduled.remove(k);
        self.reported.remove(k);
    }

    fn on_cronjob(&mut self, event: watcher::Event<CronJob>) {
        match event {
            watcher::Event::Init => self.init_cronjobs = Some(HashMap::new()),
            watcher::Event::InitApply(cj) => {
                if let Some(buffer) = self.init_cronjobs.as_mut() {
                    buffer.insert(key(&cj.metadata), Arc::new(cj));
                }
            }
            watcher::Event::InitDone => {
                let fresh = self.init_cronjobs.take().unwrap_or_default();
                self.cronjobs.clear();
                self.uid_to_key.clear();
                for cj in fresh.into_values() {
                    self.insert_cronjob(Arc::unwrap_or_clone(cj));
                }
                self.cronjobs_listed = true;
                // The list replaced the cache: the leftovers are read again.
                self.leftovers.clear();
                self.leftovers_due = Some(std::time::Instant::now());
                self.schedule_all();
            }
            watcher::Event::Apply(cj) => self.insert_cronjob(cj),
            // Leaving the selector (relabelled, or the migration selector) is not a deletion:
            // stop working on it, never act destructively.
            watcher::Event::Delete(cj) => self.forget_cronjob(&key(&cj.metadata)),
        }
        self.count();
    }

    fn index_job(&mut self, job: Arc<Job>) {
        let uid = job.metadata.uid.clone().unwrap_or_default();
        if let Some(owner) = controller_uid(&job.metadata) {
            self.owned.entry(owner.clone()).or_default().insert(uid.clone());
            if self.ready()
                && let Some(k) = self.uid_to_key.get(&owner).cloned()
            {
                let now = self.ctx.clock.now();
                self.schedule(&k, now);
            }
        }
        self.jobs.insert(uid, job);
    }

    fn on_job(&mut self, event: watcher::Event<Job>) {
        match event {
            watcher::Event::Init => self.init_jobs = Some(HashMap::new()),
            watcher::Event::InitApply(job) => {
                if let Some(buffer) = self.init_jobs.as_mut() {
                    buffer.insert(job.metadata.uid.clone().unwrap_or_default(), Arc::new(job));
                }
            }
            watcher::Event::InitDone => {
                let fresh = self.init_jobs.take().unwrap_or_default();
                self.jobs.clear();
                self.owned.clear();
                for job in fresh.into_values() {
                    self.index_job(job);
                }
                self.jobs_listed = true;
                self.schedule_all();
            }
            watcher::Event::Apply(job) => self.index_job(Arc::new(job)),
            watcher::Event::Delete(job) => {
                let uid = job.metadata.uid.clone().unwrap_or_default();
                self.jobs.remove(&uid);
                if let Some(owner) = controller_uid(&job.metadata) {
                    if let Some(set) = self.owned.get_mut(&owner) {
                        set.remove(&uid);
                        if set.is_empty() {
                            self.owned.remove(&owner);
                        }
                    }
                    if let Some(k) = self.uid_to_key.get(&owner).cloned() {
                        let now = self.ctx.clock.now();
                        self.schedule(&k, now);
                    }
                }
            }
        }
        self.count();
    }

    fn schedule_all(&mut self) {
        if !self.ready() {
            return;
        }
        let now = self.ctx.clock.now();
        let keys: Vec<String> = self.cronjobs.keys().cloned().collect();
        for k in keys {
            self.schedule(&k, now);
        }
    }

    /// Syncs every CronJob that is due, as a pipeline: all their syncs (the Job creations)
    /// run together first, then all their status writes, so under a herd a bucket's creates
    /// do not queue behind its own status writes.
    async fn run_due(&mut self) {
        let now = self.ctx.clock.now();
        let mut due = Vec::new();
        while let Some(Reverse((at, _))) = self.timers.peek() {
            if *at > now {
                break;
            }
            let Some(Reverse((at, k))) = self.timers.pop() else { break };
            // A stale entry: the key was rescheduled or forgotten since.
            if self.scheduled.get(&k) != Some(&at) {
                continue;
            }
            self.scheduled.remove(&k);
            due.push(k);
        }
        let inputs: Vec<_> = due.into_iter().filter_map(|k| self.prepare(k)).collect();
        let (ctx, bucket, epoch) = (self.ctx.clone(), self.bucket, self.epoch);
        let synced: Vec<_> = futures::stream::iter(inputs)
            .map(|(k, cj, state, children)| {
                let ctx = ctx.clone();
                async move {
                    let outcome = sync_with_timeout(&ctx, bucket, epoch, &k, &cj, &state, &children).await;
                    (k, cj, state, outcome)
                }
            })
            .buffer_unordered(PARALLEL_SYNCS)
            .collect()
            .await;
        let written: Vec<_> = futures::stream::iter(synced)
            .map(|(k, cj, state, outcome)| {
                let ctx = ctx.clone();
                async move {
                    let write = if outcome.status_changed {
                        Some(match tokio::time::timeout(SYNC_TIMEOUT, write_status(&ctx, &cj, &outcome)).await {
                            Ok(result) => result,
                            Err(_) => Err(format!("status write did not finish within {SYNC_TIMEOUT:?}")),
                        })
                    } else {
                        None
                    };
                    (k, cj, state, outcome, write)
                }
            })
            .buffer_unordered(PARALLEL_SYNCS)
            .collect()
            .await;
        for (k, cj, state, outcome, write) in written {
            self.finish(&k, &cj, &state, &outcome, write);
        }
        self.ctx.metrics.queue_depth.set(self.scheduled.len() as i64);
    }

    /// What a sync of `k` needs from the caches.
    fn prepare(&self, k: String) -> Option<(String, Arc<CronJob>, CronJobState, Vec<ChildJob>)> {
        let cj = self.cronjobs.get(&k).cloned()?;
        let mut state = cronjob_state(&cj)?;
        state.reported_through = self.reported.get(&k).copied();
        let children = self
            .owned
            .get(&state.uid)
            .map(|uids| uids.iter().filter_map(|u| self.jobs.get(u)).map(|j| child_job(j)).collect())
            .unwrap_or_default();
        Some((k, cj, state, children))
    }

    /// Applies a sync's results: metrics and Events, the fresh object, the next sync time.
    fn finish(
        &mut self,
        k: &str,
        cj: &Arc<CronJob>,
        state: &CronJobState,
        outcome: &Outcome,
        write: Option<StatusWrite>,
    ) {
        self.record(cj, state, outcome);
        if let Some(through) = outcome.reported_through {
            self.reported.insert(k.to_owned(), through);
        }
        let now = self.ctx.clock.now();
        let mut failed = outcome.error.clone();
        match write {
            Some(Ok(WriteResult::Written(fresh))) => self.insert_fresh(*fresh),
            Some(Ok(WriteResult::Conflict(Some(fresh)))) => {
                self.insert_fresh(*fresh);
                self.schedule(k, now);
            }
            Some(Ok(WriteResult::Conflict(None))) => {}
            Some(Err(e)) => failed = Some(e),
            None => {}
        }
        match failed {
            Some(error) => {
                let n = self.failures.entry(k.to_owned()).or_insert(0);
                *n += 1;
                let delay = Duration::from_secs(1u64 << (*n).min(9)).min(MAX_BACKOFF);
                self.ctx.log_warn("sync", &format!("sync of {k} failed, retried in {delay:?}: {error}"));
                self.ctx.metrics.sync_errors.inc();
                let at = now.checked_add(jiff::SignedDuration::try_from(delay).unwrap_or_default()).unwrap_or(now);
                // Backoff never skips a run: the next run's time bounds it.
                self.schedule(k, outcome.requeue_at.map_or(at, |next| next.min(at)));
            }
            None => {
                self.failures.remove(k);
                if let Some(at) = outcome.requeue_at {
                    self.schedule(k, at);
                }
            }
        }
    }

    /// Metrics and Events for one sync; Events go out in the background, at low priority.
    fn record(&self, cj: &Arc<CronJob>, state: &CronJobState, outcome: &Outcome) {
        let m = &self.ctx.metrics;
        if let Some((job, scheduled)) = &outcome.created {
            let skew = job.creation_timestamp.duration_since(*scheduled).as_secs_f64().max(0.0);
            m.skew.observe(skew);
            m.upstream_skew.observe(skew);
            m.fires.inc();
        } else if outcome.status_changed && outcome.status.last_schedule_time != state.status.last_schedule_time {
            m.duplicates_avoided.inc();
        }
        for (reason, count) in &outcome.missed {
            m.missed.get_or_create(&ReasonLabels { reason: reason.label().into() }).inc_by(*count);
        }
        if let Some(invalid) = outcome.invalid {
            m.invalid.get_or_create(&ReasonLabels { reason: format!("{invalid:?}") }).inc();
        }
        if outcome.events.is_empty() {
            return;
        }
        let reference = kube::Resource::object_ref(cj.as_ref(), &());
        crate::events::publish(self.ctx.clone(), reference, outcome.events.clone());
    }

    /// Takes a fresher copy than the watch has delivered, unless the watch is ahead.
    fn insert_fresh(&mut self, fresh: CronJob) {
        let k = key(&fresh.metadata);
        let newer = |cj: &CronJob| cj.metadata.resource_version.as_deref().and_then(|v| v.parse::<u64>().ok());
        let current = self.cronjobs.get(&k).and_then(|c| newer(c));
        if current.is_none_or(|c| newer(&fresh).is_some_and(|f| f >= c)) {
            self.cronjobs.insert(k, Arc::new(fresh));
        }
    }
}

/// How many syncs (and then status writes) of one bucket run at once.
const PARALLEL_SYNCS: usize = 16;
