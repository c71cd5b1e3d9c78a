//! The coordinator: the one type that carries out the decider's actions against the API
//! server. Its files call downwards only: `run.rs` (the loop) uses `buckets.rs` (claims,
//! handovers, exit), which uses `member.rs` (this replica's own Leases), which uses this file
//! (the state and what every step shares: publishing, fencing, logging).

mod buckets;
mod member;
pub(super) mod run;

use std::collections::HashMap;
use std::time::Duration;

use cronshard_types::throttle::Throttle;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::coordinator::decide::Decider;
use crate::coordinator::settings::Settings;
use crate::coordinator::work::{Buckets, Ownership};
use crate::membership::{Membership, View};
use crate::metrics::Metrics;

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

impl<B: Buckets> Coordinator<B> {
    /// A coordinator that has seen no Lease yet; `now` on the monotonic clock is now on the
    /// settings' wall clock.
    fn new(
        api: Api<Lease>,
        settings: Settings,
        buckets: B,
        metrics: Metrics,
        owned_tx: tokio::sync::watch::Sender<Ownership>,
        now: Instant,
    ) -> Self {
        let wall = (settings.wall_clock)().as_microsecond();
        let index = Membership::new(&settings.identity, settings.layout(), settings.timing, now, wall);
        Coordinator {
            state: Decider::new(settings.timing, index, now),
            api,
            settings,
            buckets,
            metrics,
            handovers: JoinSet::new(),
            owned_tx,
            incarnation: format!("{:016x}", rand::random::<u64>()),
            member: MemberLease::Unwritten { resource_version: None },
            refusal: None,
            logs: HashMap::new(),
        }
    }

    /// Now on the replica's wall clock: every time written into a Lease.
    fn wall_now(&self) -> Timestamp {
        (self.settings.wall_clock)()
    }

    fn lease_duration_s(&self) -> i32 {
        self.settings.timing.lease_duration.as_secs().try_into().unwrap_or(i32::MAX)
    }

    /// Stops every bucket now. Others may take them a lease duration after they last saw the
    /// member Lease change, which is later than this.
    fn fence(&mut self) {
        tracing::error!(held = self.state.owned().len(), "stopping all bucket work; will rejoin as a new claimant");
        self.buckets.abort_all();
        self.state.fenced();
        self.handovers.abort_all();
        self.metrics.fenced.inc();
    }

    fn publish(&self, healthy: bool, view: &View) {
        let refused = match self.state.is_duplicate() {
            true => self.refusal.clone(),
            false => view.refused.clone(),
        };
        let next = Ownership { owned: self.state.owned(), desired: view.mine.clone(), healthy, refused };
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
