//! The coordination loop: renew the member Lease, follow every cronshard Lease through one
//! label-selected watch, claim the buckets the assignment gives this replica when they are
//! free or their holder is dead, hand over the others in two phases, and fence on a missed
//! renew deadline.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use rand::RngExt;
use tokio::task::JoinSet;

use crate::lease::{LeaseInfo, ROLE_LABEL, bucket_lease, bucket_name, claim, member_lease, member_name};
use crate::membership::{BucketState, Membership, Timing};
use crate::metrics::Metrics;

/// How often the loop re-judges time-based state when no Lease changes (at most).
const TICK: Duration = Duration::from_millis(250);
/// Longest a graceful shutdown waits for buckets to stop and be released.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(25);

/// The work the coordinator starts and stops: one bucket worker per owned bucket.
pub trait Buckets: Send {
    /// Starts work on `bucket`, claimed at `epoch` (the Lease's leaseTransitions).
    fn start(&mut self, bucket: u32, epoch: i32);
    /// Stops work on `bucket`; the future resolves once its in-flight calls have finished.
    fn stop(&mut self, bucket: u32) -> BoxFuture<'static, ()>;
    /// Stops all work at once without waiting (fencing: the renew deadline has passed).
    fn abort_all(&mut self);
}

/// A replica's coordination settings.
#[derive(Clone, Debug)]
pub struct Settings {
    pub identity: String,
    /// Where the Leases live (the release namespace).
    pub namespace: String,
    pub buckets: NonZeroU32,
    pub timing: Timing,
}

impl Settings {
    pub fn validate(&self) -> crate::Result<()> {
        self.timing.validate()?;
        let name = member_name(&self.identity);
        let valid = !self.identity.is_empty()
            && name.len() <= 253
            && self.identity.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.')
            && self.identity.as_bytes()[self.identity.len() - 1].is_ascii_alphanumeric();
        if !valid {
            return Err(crate::Error::Settings(format!(
                "identity {:?} cannot name a Lease: use lower-case letters, digits, '-' and '.' (a pod name)",
                self.identity
            )));
        }
        Ok(())
    }
}

/// What the coordinator publishes after every step: for the labellers (`owned`) and for
/// `/readyz` (caught up with the assignment, renewing, not refusing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ownership {
    /// Buckets whose workers run here.
    pub owned: BTreeSet<u32>,
    /// Buckets the assignment gives this replica.
    pub desired: BTreeSet<u32>,
    /// The member Lease was renewed within the renew deadline.
    pub healthy: bool,
    pub refused: Option<String>,
}

impl Ownership {
    /// Caught up: renewing, not refusing, owning exactly what the assignment says.
    pub fn settled(&self) -> bool {
        self.healthy && self.refused.is_none() && self.owned == self.desired
    }
}

/// A bucket this replica holds: the Lease as its claim left it.
#[derive(Clone, Debug)]
struct Held {
    resource_version: String,
    transitions: i32,
}

struct Coordinator<B: Buckets> {
    api: Api<Lease>,
    settings: Settings,
    buckets: B,
    metrics: Metrics,
    index: Membership,
    held: BTreeMap<u32, Held>,
    /// Buckets being stopped and released in the background.
    releasing: BTreeSet<u32>,
    handovers: JoinSet<(u32, Duration)>,
    /// Jittered claim times of free buckets.
    claim_at: HashMap<u32, Instant>,
    owned_tx: tokio::sync::watch::Sender<Ownership>,
    member_rv: Option<String>,
    acquired: Option<MicroTime>,
    /// When the last successful renewal was sent (its start, to be safe).
    renewed_at: Option<Instant>,
    next_renew: Instant,
    last_refusal_log: Option<Instant>,
}

/// Runs the coordination loop until `stop` turns true, then releases every bucket and
/// leaves. `owned` publishes what this replica works on after every step.
pub async fn run<B: Buckets>(
    client: kube::Client,
    settings: Settings,
    buckets: B,
    metrics: Metrics,
    owned: tokio::sync::watch::Sender<Ownership>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> crate::Result<()> {
    settings.validate()?;
    let api: Api<Lease> = Api::namespaced(client, &settings.namespace);
    let mut c = Coordinator {
        index: Membership::new(&settings.identity, settings.buckets.get(), settings.timing),
        api: api.clone(),
        settings,
        buckets,
        metrics,
        held: BTreeMap::new(),
        releasing: BTreeSet::new(),
        handovers: JoinSet::new(),
        claim_at: HashMap::new(),
        owned_tx: owned,
        member_rv: None,
        acquired: None,
        renewed_at: None,
        next_renew: Instant::now(),
        last_refusal_log: None,
    };
    let mut events = watcher(api, watcher::Config::default().labels(ROLE_LABEL)).default_backoff().boxed();
    let mut initial: Option<Vec<LeaseInfo>> = None;
    let tick = TICK.min(c.settings.timing.renew_period / 4);
    loop {
        tokio::select! {
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() {
                    break;
                }
            }
            event = events.next() => match event {
                Some(Ok(watcher::Event::Init)) => initial = Some(Vec::new()),
                Some(Ok(watcher::Event::InitApply(lease))) => {
                    if let (Some(buffer), Some(info)) = (initial.as_mut(), LeaseInfo::from_lease(&lease)) {
                        buffer.push(info);
                    }
                }
                Some(Ok(watcher::Event::InitDone)) => c.index.reset(initial.take().unwrap_or_default(), Instant::now()),
                Some(Ok(watcher::Event::Apply(lease))) => {
                    if let Some(info) = LeaseInfo::from_lease(&lease) {
                        c.index.apply(info, Instant::now());
                    }
                }
                Some(Ok(watcher::Event::Delete(lease))) => {
                    if let Some(info) = LeaseInfo::from_lease(&lease) {
                        c.index.delete(&info.role, Instant::now());
                    }
                }
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "Lease watch failed; retrying");
                    c.index.restart_observation(Instant::now());
                }
                None => break,
            },
            Some(done) = c.handovers.join_next(), if !c.handovers.is_empty() => c.handover_done(done),
            _ = tokio::time::sleep(tick) => {}
        }
        c.step().await;
    }
    c.shutdown().await;
    Ok(())
}

impl<B: Buckets> Coordinator<B> {
    /// One pass: renew if due, fence if the deadline passed, then release and claim.
    async fn step(&mut self) {
        let now = Instant::now();
        if now >= self.next_renew {
            self.renew().await;
        }
        let now = Instant::now();
        self.index.tick(now);
        let view = self.index.view();
        self.metrics.members.set(view.members.len() as i64);
        self.metrics.unowned_buckets.set(view.unowned as i64);
        self.metrics.member_set_hash.set(view.member_hash as i64);
        self.metrics.refused.set(i64::from(view.refused.is_some()));

        let healthy = self.renewed_at.is_some_and(|t| now.duration_since(t) < self.settings.timing.renew_deadline);
        self.publish(healthy, &view);
        if !healthy {
            // Cut off: what the index says about others is going stale.
            self.index.restart_observation(now);
            if !self.held.is_empty() || !self.releasing.is_empty() {
                self.fence();
                self.publish(healthy, &view);
            }
            return;
        }
        if let Some(reason) = &view.refused
            && self.last_refusal_log.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(10))
        {
            tracing::error!(%reason, "not acting on any bucket");
            self.last_refusal_log = Some(now);
        }
        let surplus: Vec<u32> = self.held.keys().filter(|b| !view.mine.contains(b)).copied().collect();
        for b in surplus {
            self.release(b);
        }
        for b in view.mine.iter().copied() {
            if self.held.contains_key(&b) || self.releasing.contains(&b) {
                continue;
            }
            // Many claims in a row (start-up, a takeover under load) must not starve renewals.
            if Instant::now() >= self.next_renew {
                self.renew().await;
            }
            match self.index.bucket_state(b, now) {
                BucketState::Held(_) => {
                    self.claim_at.remove(&b);
                }
                // A Lease naming this identity but not held by this process: an earlier
                // incarnation's (restart, or before fencing). Nobody else acts on it; re-claim
                // at once, as a new claimant.
                BucketState::Mine => self.claim(b).await,
                BucketState::Absent | BucketState::Free | BucketState::HolderDead(_) => {
                    let jitter = self.settings.timing.claim_jitter;
                    let at = *self.claim_at.entry(b).or_insert_with(|| {
                        let wait =
                            if jitter.is_zero() { 0 } else { rand::rng().random_range(0..jitter.as_millis() as u64) };
                        now + Duration::from_millis(wait)
                    });
                    if now >= at {
                        self.claim(b).await;
                    }
                }
            }
        }
        self.publish(healthy, &view);
    }

    /// Renews (or first creates) the member Lease.
    async fn renew(&mut self) {
        let timing = self.settings.timing;
        let sent = Instant::now();
        let lease = member_lease(
            &self.settings.identity,
            self.settings.buckets.get(),
            timing.lease_duration.as_secs().try_into().unwrap_or(i32::MAX),
            self.acquired.clone(),
            self.member_rv.clone(),
        );
        let name = member_name(&self.settings.identity);
        let call = async {
            match &self.member_rv {
                None => self.api.create(&PostParams::default(), &lease).await,
                Some(_) => self.api.replace(&name, &PostParams::default(), &lease).await,
            }
        };
        // Bounded, so a hung call cannot hold the loop; but a slow server (a herd queueing in
        // flow control) gets until the renew deadline before the next attempt.
        let left = self.renewed_at.map_or(timing.renew_deadline, |t| timing.renew_deadline.saturating_sub(t.elapsed()));
        match tokio::time::timeout(left.max(timing.renew_period), call).await {
            Ok(Ok(fresh)) => {
                self.member_rv = fresh.metadata.resource_version.clone();
                self.acquired = fresh.spec.as_ref().and_then(|s| s.acquire_time.clone());
                if self.renewed_at.is_none_or(|t| sent.duration_since(t) >= timing.renew_deadline) {
                    tracing::info!(identity = %self.settings.identity, "member Lease renewed; (re)joining");
                }
                self.renewed_at = Some(sent);
                self.next_renew = sent + timing.renew_period;
                if let Some(info) = LeaseInfo::from_lease(&fresh) {
                    self.index.apply(info, Instant::now());
                }
            }
            Ok(Err(kube::Error::Api(status))) if status.code == 409 || status.code == 404 => {
                // Someone else wrote our Lease (a previous incarnation), or it was deleted:
                // start from the server's copy at once.
                match self.api.get_opt(&name).await {
                    Ok(Some(current)) => {
                        self.member_rv = current.metadata.resource_version.clone();
                        // A new incarnation: a new acquireTime.
                        self.acquired = None;
                    }
                    Ok(None) => self.member_rv = None,
                    Err(e) => tracing::warn!(error = %e, "cannot read the member Lease"),
                }
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "member Lease renewal failed");
                self.next_renew = Instant::now() + timing.renew_period / 4;
            }
            Err(_) => {
                tracing::warn!("member Lease renewal timed out");
            }
        }
    }

    /// The renew deadline passed: stop every bucket now. Others may take them a lease
    /// duration after they last saw the member Lease change, which is later than this.
    fn fence(&mut self) {
        tracing::error!(
            held = self.held.len(),
            "renew deadline missed: stopping all bucket work; will rejoin as a new claimant"
        );
        self.buckets.abort_all();
        self.held.clear();
        self.releasing.clear();
        self.handovers.abort_all();
        self.claim_at.clear();
        self.metrics.fenced.inc();
    }

    fn publish(&self, healthy: bool, view: &crate::View) {
        let next = Ownership {
            owned: self.held.keys().copied().collect(),
            desired: view.mine.clone(),
            healthy,
            refused: view.refused.clone(),
        };
        self.owned_tx.send_if_modified(|current| {
            if *current == next {
                false
            } else {
                *current = next;
                true
            }
        });
    }

    /// Claims bucket `b` with a resourceVersion precondition (or a create if it has no Lease).
    async fn claim(&mut self, b: u32) {
        self.claim_at.remove(&b);
        let current = self.index.bucket_lease(b).cloned();
        let call = claim(
            &self.api,
            b,
            &self.settings.identity,
            self.settings.buckets.get(),
            self.settings.timing.lease_duration.as_secs().try_into().unwrap_or(i32::MAX),
            current.as_ref(),
        );
        match tokio::time::timeout(self.settings.timing.renew_period, call).await {
            Ok(Ok(fresh)) => {
                let resource_version = fresh.metadata.resource_version.clone().unwrap_or_default();
                let transitions = fresh.spec.as_ref().and_then(|s| s.lease_transitions).unwrap_or(0);
                tracing::info!(bucket = b, epoch = transitions, "claimed bucket");
                self.held.insert(b, Held { resource_version, transitions });
                if let Some(info) = LeaseInfo::from_lease(&fresh) {
                    self.index.apply(info, Instant::now());
                }
                self.metrics.lease_transitions.inc();
                self.buckets.start(b, transitions);
            }
            // Someone else got there first (409), or our copy was stale: the watch will tell.
            Ok(Err(kube::Error::Api(status))) if status.code == 409 => {
                tracing::debug!(bucket = b, "lost a claim race");
            }
            Ok(Err(e)) => tracing::warn!(bucket = b, error = %e, "claim failed"),
            Err(_) => tracing::warn!(bucket = b, "claim timed out"),
        }
    }

    /// Two-phase handover: stop the bucket's work (in-flight calls finish), then release
    /// the Lease; only then can the new owner claim it. Runs in the background so renewals
    /// go on.
    fn release(&mut self, b: u32) {
        let Some(held) = self.held.remove(&b) else { return };
        self.releasing.insert(b);
        let stopped = self.buckets.stop(b);
        let api = self.api.clone();
        let s = &self.settings;
        let lease = bucket_lease(
            b,
            "",
            s.buckets.get(),
            s.timing.lease_duration.as_secs().try_into().unwrap_or(i32::MAX),
            held.transitions,
            Some(held.resource_version),
        );
        self.handovers.spawn(async move {
            let started = Instant::now();
            stopped.await;
            match tokio::time::timeout(
                Duration::from_secs(5),
                api.replace(&bucket_name(b), &PostParams::default(), &lease),
            )
            .await
            {
                Ok(Ok(_)) => tracing::info!(bucket = b, "released bucket"),
                // 409: the Lease moved on without us (we were judged dead): nothing to release.
                Ok(Err(e)) => tracing::warn!(bucket = b, error = %e, "release failed"),
                Err(_) => tracing::warn!(bucket = b, "release timed out"),
            }
            (b, started.elapsed())
        });
    }

    fn handover_done(&mut self, done: Result<(u32, Duration), tokio::task::JoinError>) {
        if let Ok((b, took)) = done {
            self.releasing.remove(&b);
            self.metrics.handover_seconds.observe(took.as_secs_f64());
        }
    }

    /// Graceful exit: release every bucket (stopping its work first), then leave.
    async fn shutdown(&mut self) {
        let held: Vec<u32> = self.held.keys().copied().collect();
        tracing::info!(buckets = held.len(), "releasing every bucket before exit");
        for b in held {
            self.release(b);
        }
        let drain = async {
            while let Some(done) = self.handovers.join_next().await {
                self.handover_done(done);
            }
        };
        if tokio::time::timeout(SHUTDOWN_WAIT, drain).await.is_err() {
            tracing::warn!("buckets did not stop in time; their Leases expire with the member Lease");
            self.buckets.abort_all();
        }
        let name = member_name(&self.settings.identity);
        match tokio::time::timeout(Duration::from_secs(2), self.api.delete(&name, &DeleteParams::default())).await {
            Ok(Ok(_)) => tracing::info!("left the member set"),
            Ok(Err(e)) => tracing::warn!(error = %e, "could not delete the member Lease; it will expire"),
            Err(_) => tracing::warn!("deleting the member Lease timed out; it will expire"),
        }
    }
}
