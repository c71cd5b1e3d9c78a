//! The loop: follow the Lease watch, and after every event, finished handover or tick take
//! one step (the member Lease first, then the buckets), carrying out what the decider says.

use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use kube::runtime::utils::ResetTimerBackoff;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::time::Instant;

use super::Coordinator;
use crate::coordinator::decide::Action;
use crate::coordinator::settings::Settings;
use crate::coordinator::work::{Buckets, Ownership};
use crate::lease::{LeaseInfo, ROLE_LABEL};
use crate::membership::Timing;
use crate::metrics::Metrics;

/// How often the loop re-judges time-based state when no Lease changes (at most).
const TICK: Duration = Duration::from_millis(250);

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
) -> crate::error::Result<()> {
    settings.validate()?;
    let api: Api<Lease> = Api::namespaced(client, &settings.namespace);
    let mut c = Coordinator::new(api.clone(), settings, buckets, metrics, owned, Instant::now());
    c.record_bucket_count(&mut stop).await?;
    if *stop.borrow() {
        // Stopped before the count of record could be read: nothing was claimed.
        return Ok(());
    }
    let mut events = lease_watch(api.clone(), c.settings.timing);
    let mut initial: Option<Vec<LeaseInfo>> = None;
    let tick = TICK.min(c.settings.timing.renew_period / 4);
    loop {
        if c.state.take_relist() {
            events = lease_watch(api.clone(), c.settings.timing);
            initial = None;
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
                self.state.watch_failed(now);
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
            watcher::Event::InitDone => self.state.listed(initial.take().unwrap_or_default(), now),
            watcher::Event::Apply(lease) => {
                let info = LeaseInfo::from_lease(&lease);
                if let Some(info) = &info {
                    self.check_identity(info);
                }
                self.state.applied(info, now);
            }
            watcher::Event::Delete(lease) => {
                let role = LeaseInfo::from_lease(&lease).map(|info| info.role);
                self.state.deleted(role.as_ref(), now);
            }
        }
    }

    /// One pass: the member Lease first (fencing, renewal), then the buckets.
    async fn step(&mut self) {
        let actions = self.state.member_actions(Instant::now());
        self.execute(&actions).await;
        if self.state.is_duplicate() {
            let view = self.state.view();
            self.publish(false, &view);
            return;
        }
        let now = Instant::now();
        // A renewal sent before a stall can come back after it: judged by when it was sent.
        let fence = self.state.check_deadline(now);
        self.execute(fence.as_slice()).await;
        let view = self.state.view_at(now);
        self.metrics.members.set(view.members.len() as i64);
        self.metrics.unowned_buckets.set(view.unowned as i64);
        self.metrics.member_set_hash.set(view.member_hash as i64);
        self.metrics.refused.set(i64::from(view.refused.is_some()));
        let healthy = self.state.healthy();
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
}
