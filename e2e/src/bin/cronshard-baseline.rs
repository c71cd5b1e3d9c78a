//! Baseline controllers for the benchmark, RE-IMPLEMENTATIONS of the in-tree CronJob
//! controller's published algorithms (not the upstream code), sharing cronshard-types'
//! schedule math and cronshard-worker's sync so that only the algorithm differs:
//!
//! - `v1` (before Kubernetes 1.21): every 10 s, list all Jobs, then page through all CronJobs
//!   (500 per page, no watch cache) syncing each between pages; a 410 on the continue token
//!   abandons the sweep, as upstream's did.
//! - `v2` (today's): informers on all CronJobs and Jobs, a delaying queue, N workers (5 by
//!   default), each sync scanning the Jobs of the CronJob's namespace; a key being synced
//!   waits without holding back the keys due behind it, as in client-go's workqueue.
//!
//! Both use one client token bucket (upstream: 20 QPS, burst 30), and record Events as
//! client-go does: in the background, dropped while 1,000 wait.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::{Parser, ValueEnum};
use cronshard_sync::{Jobs, Outcome, history_deleted, sync};
use cronshard_types::Timestamp;
use cronshard_worker::api::adaptive::RateBudget;
use cronshard_worker::api::limiter::{Limiter, Priority};
use cronshard_worker::bucket::KubeJobs;
use cronshard_worker::objects::convert::{child_job, controller_uid, cronjob_state, key, status_to_k8s};
use cronshard_worker::{Clock, Context, Settings};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Algo {
    V1,
    V2,
}

#[derive(Debug, Parser)]
#[command(about = "A re-implementation of the in-tree CronJob controller (v1 or v2), for benchmarks only")]
struct Args {
    #[arg(long, value_enum)]
    algo: Algo,
    #[arg(long)]
    kubeconfig: PathBuf,
    #[arg(long, default_value = "baseline")]
    identity: String,
    /// v2 workers (upstream: 5).
    #[arg(long, default_value_t = 5)]
    workers: usize,
    #[arg(long, default_value_t = 20.0)]
    qps: f64,
    #[arg(long, default_value_t = 30)]
    burst: u32,
    /// Follow a cronshard-sim's clock offset.
    #[arg(long)]
    testing_clock_from: Option<String>,
}

fn main() -> ExitCode {
    cronshard_e2e::main_with(run(Args::parse()))
}

async fn run(args: Args) -> Result<(), String> {
    let kubeconfig = kube::config::Kubeconfig::read_from(&args.kubeconfig).map_err(|e| e.to_string())?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.map_err(|e| e.to_string())?;
    let clock = Clock::default();
    if let Some(url) = &args.testing_clock_from {
        tokio::spawn(clock.clone().follow(url.clone()));
    }
    // The in-tree controller's algorithm reads schedules as robfig does.
    let settings = Settings {
        identity: args.identity.clone(),
        buckets: NonZeroU32::MIN,
        selector: None,
        dst_policy: cronshard_types::DstPolicy::Upstream,
        // The in-tree controller has no buckets: one, never filtered on the server.
        bucket_function: cronshard_types::BucketFunction::Uid,
        server_side_sharding: cronshard_worker::sharding::ServerSideSharding::Off,
    };
    // client-go has no cap on requests in flight, only its token bucket.
    let budget = RateBudget { qps: args.qps, burst: f64::from(args.burst), deployment_qps: 0.0, adaptive: false };
    let ctx = Context::new(config, Limiter::with_places(budget, usize::MAX), settings, clock, Default::default())
        .map_err(|e| e.to_string())?;
    let recorder = Recorder::start(ctx.clone());
    let work = async {
        match args.algo {
            Algo::V1 => v1(ctx, recorder).await,
            Algo::V2 => v2(ctx, recorder, args.workers).await,
        }
    };
    tokio::select! {
        () = work => Ok(()),
        _ = tokio::signal::ctrl_c() => Ok(()),
        () = sigterm() => Ok(()),
    }
}

async fn sigterm() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(_) => std::future::pending().await,
    }
}

/// How many Events client-go's recorder queues (`maxQueuedEvents`); its broadcaster drops
/// what comes while the queue is full (`DropIfChannelFull`).
const MAX_QUEUED_EVENTS: usize = 1000;

/// Events as upstream's recorder sends them: queued, dropped when the queue is full, and
/// written by one task in the background through the same client budget, so that a sync
/// never waits for its Events.
#[derive(Clone)]
struct Recorder(tokio::sync::mpsc::Sender<(ObjectReference, cronshard_sync::Event)>);

impl Recorder {
    fn start(ctx: Arc<Context>) -> Self {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<(ObjectReference, cronshard_sync::Event)>(MAX_QUEUED_EVENTS);
        tokio::spawn(async move {
            while let Some((reference, event)) = rx.recv().await {
                let _place = ctx.limiter.acquire(Priority::Create).await;
                let _ = cronshard_worker::events::write(&ctx, &reference, event).await;
            }
        });
        Recorder(tx)
    }

    fn record(&self, reference: &ObjectReference, event: cronshard_sync::Event) {
        if self.0.try_send((reference.clone(), event)).is_err() {
            tracing::debug!("event queue full: an Event is dropped, as upstream's recorder drops it");
        }
    }
}

/// One sync as both algorithms do it: the pure sync (which creates the due run), then, as
/// upstream, history cleanup and the status write; Events go to the recorder.
async fn sync_one(
    ctx: &Context,
    recorder: &Recorder,
    cj: &CronJob,
    children: Vec<cronshard_sync::ChildJob>,
) -> Option<Timestamp> {
    let mut state = cronjob_state(cj)?;
    state.dst_policy = cronshard_types::DstPolicy::Upstream;
    // Upstream knows no spread.
    let cached = cronshard_worker::objects::cached::CachedCronJob::new(cj.clone());
    let mut io = KubeJobs::new(ctx, &cached, &state, 0, 0, None);
    let mut outcome: Outcome = sync(&state, &children, ctx.clock.now(), &mut io).await;
    for job in &outcome.history {
        let result = io.delete(&job.name).await.map_err(|e| e.to_string());
        outcome.events.push(history_deleted(&job.name, result));
    }
    if outcome.status_changed {
        let namespace = state.namespace.clone();
        let api: Api<CronJob> = Api::namespaced(ctx.client.clone(), &namespace);
        let mut updated = cj.clone();
        updated.status = Some(status_to_k8s(&namespace, &outcome.status));
        let _place = ctx.limiter.acquire(Priority::Create).await;
        if let Err(e) = api.replace_status(&state.name, &PostParams::default(), &updated).await {
            tracing::debug!(cronjob = %key(&cj.metadata), error = %e, "status update failed");
        }
    }
    let reference = kube::Resource::object_ref(cj, &());
    for event in outcome.events {
        recorder.record(&reference, event);
    }
    if outcome.error.is_some() { Some(ctx.clock.now()) } else { outcome.requeue_at }
}

/// v1: a full sweep every 10 s; Jobs first, then CronJobs page by page.
async fn v1(ctx: Arc<Context>, recorder: Recorder) {
    loop {
        let started = tokio::time::Instant::now();
        if let Err(e) = sweep(&ctx, &recorder).await {
            // Upstream logged and waited for the next period: the rest of the sweep is lost.
            tracing::error!(error = %e, "sweep abandoned");
        }
        tokio::time::sleep_until(started + Duration::from_secs(10)).await;
    }
}

async fn sweep(ctx: &Context, recorder: &Recorder) -> Result<(), kube::Error> {
    let jobs_api: Api<Job> = Api::all(ctx.client.clone());
    let mut owned: HashMap<String, Vec<cronshard_sync::ChildJob>> = HashMap::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let place = ctx.limiter.acquire(Priority::Create).await;
        let page = jobs_api.list(&params).await?;
        drop(place);
        for job in &page.items {
            if let Some(uid) = controller_uid(&job.metadata) {
                owned.entry(uid).or_default().push(child_job(job));
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => params = params.continue_token(&c),
            None => break,
        }
    }
    let cronjobs: Api<CronJob> = Api::all(ctx.client.clone());
    let mut params = ListParams::default().limit(500);
    loop {
        let place = ctx.limiter.acquire(Priority::Create).await;
        let page = cronjobs.list(&params).await?;
        drop(place);
        for cj in &page.items {
            let children = cj.metadata.uid.as_ref().and_then(|u| owned.get(u)).cloned().unwrap_or_default();
            sync_one(ctx, recorder, cj, children).await;
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => params = params.continue_token(&c),
            None => return Ok(()),
        }
    }
}

/// v2's delaying queue: a key is queued at most once, at its earliest time, and handed to
/// one worker at a time.
#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Reverse<(Timestamp, String)>>,
    at: HashMap<String, Timestamp>,
    busy: HashSet<String>,
}

impl Queue {
    /// Queues `k` at `at` unless it is queued earlier already; whether it was.
    fn add(&mut self, k: String, at: Timestamp) -> bool {
        if self.at.get(&k).is_some_and(|t| *t <= at) {
            return false;
        }
        self.at.insert(k.clone(), at);
        self.heap.push(Reverse((at, k)));
        true
    }

    /// The next key due at `now`, marked busy until [`Queue::done`].
    fn take_due(&mut self, now: Timestamp) -> Option<String> {
        while let Some(Reverse((at, k))) = self.heap.peek().cloned() {
            if at > now {
                return None;
            }
            self.heap.pop();
            if self.at.get(&k) != Some(&at) {
                continue;
            }
            if self.busy.contains(&k) {
                // Being synced: look again shortly (client-go keeps it dirty and queues it
                // again when its sync is done), and go on to the keys due behind it. Its new
                // time is recorded, or the entry would be taken for a stale one and the key
                // lost for good.
                let later = now + jiff::SignedDuration::from_millis(100);
                self.at.insert(k.clone(), later);
                self.heap.push(Reverse((later, k)));
                continue;
            }
            self.at.remove(&k);
            self.busy.insert(k.clone());
            return Some(k);
        }
        None
    }

    fn done(&mut self, k: &str) {
        self.busy.remove(k);
    }
}

/// The queue shared by the informers and the workers, with its wake-up.
#[derive(Clone)]
struct SharedQueue {
    queue: Arc<Mutex<Queue>>,
    notify: Arc<tokio::sync::Notify>,
    clock: Clock,
}

impl SharedQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `k` at `at`, or now.
    fn enqueue(&self, k: String, at: Option<Timestamp>) {
        let at = at.unwrap_or_else(|| self.clock.now());
        if self.lock().add(k, at) {
            self.notify.notify_one();
        }
    }

    /// Waits for the next due key.
    async fn next(&self) -> String {
        loop {
            let due = self.lock().take_due(self.clock.now());
            if let Some(k) = due {
                return k;
            }
            tokio::select! {
                () = self.notify.notified() => {}
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
    }
}

async fn v2(ctx: Arc<Context>, recorder: Recorder, workers: usize) {
    let (cj_reader, cj_writer) = reflector::store::<CronJob>();
    let (job_reader, job_writer) = reflector::store::<Job>();
    let queue = SharedQueue { queue: Arc::default(), notify: Arc::default(), clock: ctx.clock.clone() };
    let informers = v2_informers(&ctx, cj_writer, job_writer, queue.clone());
    // Like an informer-based controller, workers start once the caches have synced: a key
    // taken before its object is in the cache would be lost.
    let pool = async {
        let _ = cj_reader.wait_until_ready().await;
        let _ = job_reader.wait_until_ready().await;
        let worker = |_| v2_worker(ctx.clone(), recorder.clone(), queue.clone(), cj_reader.clone(), job_reader.clone());
        futures::future::join_all((0..workers.max(1)).map(worker)).await;
    };
    futures::join!(informers, pool);
}

/// Watches of all CronJobs and all Jobs into the caches; a change queues its CronJob.
async fn v2_informers(
    ctx: &Context,
    cj_writer: reflector::store::Writer<CronJob>,
    job_writer: reflector::store::Writer<Job>,
    queue: SharedQueue,
) {
    let cj_events = watcher(Api::<CronJob>::all(ctx.client.clone()), watcher::Config::default())
        .default_backoff()
        .reflect(cj_writer)
        .touched_objects();
    let job_events = watcher(Api::<Job>::all(ctx.client.clone()), watcher::Config::default())
        .default_backoff()
        .reflect(job_writer)
        .touched_objects();
    let by_uid: Mutex<HashMap<String, String>> = Mutex::default();
    let cronjobs = cj_events.for_each(|e| {
        if let Ok(cj) = e {
            let k = key(&cj.metadata);
            if let Some(uid) = &cj.metadata.uid {
                by_uid.lock().unwrap_or_else(|e| e.into_inner()).insert(uid.clone(), k.clone());
            }
            queue.enqueue(k, None);
        }
        async {}
    });
    let jobs = job_events.for_each(|e| {
        if let Ok(job) = e
            && let Some(owner) = controller_uid(&job.metadata)
            && let Some(k) = by_uid.lock().unwrap_or_else(|e| e.into_inner()).get(&owner).cloned()
        {
            queue.enqueue(k, None);
        }
        async {}
    });
    futures::join!(cronjobs, jobs);
}

/// One of v2's workers: takes a due key, syncs it, requeues it at the time the sync asks.
async fn v2_worker(
    ctx: Arc<Context>,
    recorder: Recorder,
    queue: SharedQueue,
    cj_reader: Store<CronJob>,
    job_reader: Store<Job>,
) {
    loop {
        let k = queue.next().await;
        let Some(cj) = find(&cj_reader, &k) else {
            queue.lock().done(&k);
            continue;
        };
        // Upstream lists the namespace's Jobs from the informer and filters them.
        let namespace = cj.metadata.namespace.clone().unwrap_or_default();
        let uid = cj.metadata.uid.clone().unwrap_or_default();
        let children = job_reader
            .state()
            .iter()
            .filter(|j| j.metadata.namespace.as_deref() == Some(namespace.as_str()))
            .filter(|j| controller_uid(&j.metadata).as_deref() == Some(uid.as_str()))
            .map(|j| child_job(j))
            .collect();
        let requeue = sync_one(&ctx, &recorder, &cj, children).await;
        queue.lock().done(&k);
        if let Some(at) = requeue {
            queue.enqueue(k, Some(at));
        }
    }
}

fn find(store: &Store<CronJob>, k: &str) -> Option<Arc<CronJob>> {
    let (namespace, name) = k.split_once('/')?;
    store.get(&reflector::ObjectRef::new(name).within(namespace))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    #[test]
    fn a_key_being_synced_holds_back_nothing_and_comes_back_after() {
        let mut queue = Queue::default();
        let now = at("2026-12-03T09:00:00Z");
        assert!(queue.add("a".into(), now));
        assert_eq!(queue.take_due(now).as_deref(), Some("a"));
        queue.add("a".into(), now);
        queue.add("b".into(), now);
        assert_eq!(queue.take_due(now).as_deref(), Some("b"), "a is busy: b goes first");
        assert_eq!(queue.take_due(now), None);
        queue.done("a");
        let later = at("2026-12-03T09:00:01Z");
        assert_eq!(queue.take_due(later).as_deref(), Some("a"), "a comes back once its sync is done");
        queue.done("a");
        assert!(queue.add("a".into(), at("2026-12-03T09:01:00Z")), "and can be queued for its next run");
    }
}
