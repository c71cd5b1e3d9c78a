//! The coordination loop: renew the member Lease, follow every cronshard Lease through one
//! label-selected watch, claim the buckets the assignment gives this replica when they are
//! free or their holder is dead, hand over the others in two phases, and fence on a missed
//! renew deadline before doing anything else.

mod buckets;
mod decide;
mod member;

use std::collections::{BTreeSet, HashMap};
use std::num::NonZeroU32;
use std::time::Duration;

use cronshard_types::throttle::Throttle;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::Api;
use kube::runtime::utils::ResetTimerBackoff;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::task::JoinSet;
use tokio::time::Instant;

use self::decide::{Action, Decider, Sight, Standing};

use crate::lease::{LeaseInfo, ROLE_LABEL, member_name};
use crate::membership::{Membership, Timing};
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
    /// The member Lease was renewed: bucket work may write until `deadline` (the renew
    /// deadline of that renewal) and must not write after it, whatever the loop is doing.
    fn writes_until(&mut self, deadline: Instant) {
        let _ = deadline;
    }
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

/// This process's member Lease, as it last knew it.
#[derive(Clone, Debug)]
enum MemberLease {
    /// Not written by this process yet: created, or an earlier incarnation's taken over at
    /// this resourceVersion.
    Unwritten { resource_version: Option<String> },
    /// Written by this process (`resource_version` is `None` once it was found deleted: it
    /// is created again). Only now can another writer be a duplicate.
    Written { resource_version: Option<String>, acquired: Option<MicroTime> },
}

impl MemberLease {
    fn resource_version(&self) -> Option<&str> {
        match self {
            MemberLease::Unwritten { resource_version } | MemberLease::Written { resource_version, .. } => {
                resource_version.as_deref()
            }
        }
    }
}

struct Coordinator<B: Buckets> {
    api: Api<Lease>,
    settings: Settings,
    buckets: B,
    metrics: Metrics,
    state: Decider,
    handovers: JoinSet<(u32, Duration)>,
    owned_tx: tokio::sync::watch::Sender<Ownership>,
    /// This process's mark on its member Lease.
    incarnation: String,
    member: MemberLease,
    refusal: Option<String>,
    logs: HashMap<&'static str, Throttle>,
}

type LeaseEvents = BoxStream<'static, Result<watcher::Event<Lease>, watcher::Error>>;

/// The Lease watch. Its retries stay well inside the lease duration: a backoff longer than
/// that would come back to a view in which every peer looks dead.
fn lease_watch(api: Api<Lease>, timing: Timing) -> LeaseEvents {
    let cap = (timing.lease_duration / 4).max(Duration::from_millis(100));
    let retries = backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100).min(cap))
        .with_max_delay(cap)
        .with_jitter()
        .without_max_times();
    let backoff = ResetTimerBackoff::new(watcher::ExponentialBackoff::from(retries), timing.lease_duration);
    watcher(api, watcher::Config::default().labels(ROLE_LABEL)).backoff(backoff).boxed()
}

/// Runs the coordination loop until `stop` turns true, then releases every bucket and
/// leaves. `owned` publishes what this replica works on after every step. Fails at once
/// when the namespace of the Leases does not exist.
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
    let now = Instant::now();
    let wall = k8s_openapi::jiff::Timestamp::now().as_microsecond();
    let index = Membership::new(&settings.identity, settings.buckets.get(), settings.timing, now, wall);
    let mut c = Coordinator {
        state: Decider::new(settings.timing, index, now),
        api: api.clone(),
        settings,
        buckets,
        metrics,
        handovers: JoinSet::new(),
        owned_tx: owned,
        incarnation: format!("{:016x}", rand::random::<u64>()),
        member: MemberLease::Unwritten { resource_version: None },
        refusal: None,
        logs: HashMap::new(),
    };
    c.record_bucket_count(&mut stop).await?;
    if *stop.borrow() {
        // Stopped before the count of record could be read: nothing was claimed.
        return Ok(());
    }
    let mut events = lease_watch(api.clone(), c.settings.timing);
    let mut initial: Option<Vec<LeaseInfo>> = None;
    let tick = TICK.min(c.settings.timing.renew_period / 4);
    loop {
        if c.state.sight == Sight::Relist {
            events = lease_watch(api.clone(), c.settings.timing);
            initial = None;
            c.state.sight = Sight::Blind;
        }
        tokio::select! {
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() {
                    break;
                }
            }
            event = events.next() => match event {
                Some(event) => c.on_event(event, &mut initial),
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
    fn on_event(&mut self, event: Result<watcher::Event<Lease>, watcher::Error>, initial: &mut Option<Vec<LeaseInfo>>) {
        let now = Instant::now();
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                self.state.sight = Sight::Blind;
                self.state.index.restart_observation(now);
                self.log_warn("watch", &format!("Lease watch failed; retrying: {e}"));
                return;
            }
        };
        match event {
            watcher::Event::Init => *initial = Some(Vec::new()),
            watcher::Event::InitApply(lease) => {
                if let (Some(buffer), Some(info)) = (initial.as_mut(), LeaseInfo::from_lease(&lease)) {
                    buffer.push(info);
                }
            }
            watcher::Event::InitDone => {
                self.state.index.reset(initial.take().unwrap_or_default(), now);
                self.see_again(now);
            }
            watcher::Event::Apply(lease) => {
                if let Some(info) = LeaseInfo::from_lease(&lease) {
                    self.check_identity(&info);
                    self.state.index.apply(info, now);
                }
                self.see_again(now);
            }
            watcher::Event::Delete(lease) => {
                if let Some(info) = LeaseInfo::from_lease(&lease) {
                    self.state.index.delete(&info.role, now);
                }
                self.see_again(now);
            }
        }
    }

    /// The watch delivers again: liveness is judged from here on, a lease duration on.
    fn see_again(&mut self, now: Instant) {
        if self.state.sight == Sight::Blind {
            self.state.index.restart_observation(now);
            self.state.sight = Sight::Watching;
        }
    }

    /// One pass: the member Lease first (fencing, renewal), then the buckets.
    async fn step(&mut self) {
        let actions = self.state.member_actions(Instant::now());
        self.execute(&actions).await;
        if self.state.standing == Standing::Duplicate {
            let view = self.state.index.view();
            self.publish(false, &view);
            return;
        }
        let now = Instant::now();
        // A renewal sent before a stall can come back after it: judged by when it was sent.
        let fence = self.state.check_deadline(now);
        self.execute(fence.as_slice()).await;
        self.state.index.tick(now);
        let view = self.state.index.view();
        self.metrics.members.set(view.members.len() as i64);
        self.metrics.unowned_buckets.set(view.unowned as i64);
        self.metrics.member_set_hash.set(view.member_hash as i64);
        self.metrics.refused.set(i64::from(view.refused.is_some()));
        let healthy = matches!(self.state.standing, Standing::Renewed { .. });
        self.publish(healthy, &view);
        if !healthy {
            return;
        }
        if let Some(reason) = &view.refused
            && let Some(held_back) = self.admit_log("refused")
        {
            tracing::error!(held_back, %reason, "not acting on any bucket");
        }
        let actions = self.state.bucket_actions(&view.mine, now);
        self.execute(&actions).await;
        self.publish(healthy, &view);
    }

    /// Carries out a step's actions in order; a run of claims goes out together.
    async fn execute(&mut self, actions: &[Action]) {
        let mut rest = actions;
        while let Some((first, after)) = rest.split_first() {
            match *first {
                Action::Fence => self.fence(),
                Action::Renew => self.renew().await,
                Action::RestoreRecord => self.restore_record().await,
                Action::Release(b) => self.release(b),
                Action::Claim(_) => {
                    let run = rest.iter().take_while(|a| matches!(a, Action::Claim(_))).count();
                    let claims: Vec<u32> = rest[..run]
                        .iter()
                        .filter_map(|a| if let Action::Claim(b) = a { Some(*b) } else { None })
                        .collect();
                    if !self.claim_all(&claims).await {
                        return;
                    }
                    rest = &rest[run..];
                    continue;
                }
            }
            rest = after;
        }
    }

    fn publish(&self, healthy: bool, view: &crate::View) {
        let refused = match self.state.standing {
            Standing::Duplicate => self.refusal.clone(),
            _ => view.refused.clone(),
        };
        let owned = self.state.held.keys().copied().collect();
        let next = Ownership { owned, desired: view.mine.clone(), healthy, refused };
        self.owned_tx.send_if_modified(|current| {
            if *current == next {
                false
            } else {
                *current = next;
                true
            }
        });
    }

    /// `Some(lines held back)` when a repeated message from `site` may be logged now.
    fn admit_log(&mut self, site: &'static str) -> Option<u64> {
        self.logs.entry(site).or_default().admit(Instant::now().into_std())
    }

    fn log_warn(&mut self, site: &'static str, message: &str) {
        if let Some(held_back) = self.admit_log(site) {
            tracing::warn!(held_back, "{message}");
        }
    }
}
