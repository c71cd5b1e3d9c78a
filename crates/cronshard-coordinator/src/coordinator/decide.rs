//! The coordinator's decisions as a plain state machine: time passed in, actions out. The
//! driver (`driver/`) feeds it Lease events and call results and executes what it returns;
//! its state changes only through the methods here.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use rand::RngExt;
use tokio::time::Instant;

use crate::lease::{LeaseInfo, Role};
use crate::membership::{BucketState, Membership, Timing, View};

/// What the loop does next, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Action {
    /// Stop all bucket work now: the renew deadline has passed.
    Fence,
    /// Renew (or first create) the member Lease.
    Renew,
    /// Put the deleted config Lease back, with the remembered bucket count.
    RestoreRecord,
    /// Hand the bucket over: stop its work, then release its Lease.
    Release(u32),
    /// Claim the bucket with a resourceVersion precondition.
    Claim(u32),
}

/// A bucket this replica holds: the Lease as its claim left it.
#[derive(Clone, Debug)]
pub(super) struct Held {
    pub(super) resource_version: String,
    pub(super) transitions: i32,
}

/// Where this replica stands with its member Lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Standing {
    /// Not renewed since start, or since the renew deadline was last missed.
    Out,
    /// Renewed; the successful renewal was sent at `at`.
    Renewed { at: Instant },
    /// Another process writes this identity's member Lease: this one stays out for good.
    Duplicate,
}

/// What this replica knows of the Lease watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sight {
    /// Following it: every change reaches the index.
    Watching,
    /// The watch failed or this process was cut off: changes may be missing, so nobody may
    /// be judged dead until it has watched again for a lease duration.
    Blind,
    /// The view is stale beyond repair (a missed renew deadline): start a fresh list.
    Relist,
}

/// Everything the coordinator decides from.
#[derive(Debug)]
pub(super) struct Decider {
    timing: Timing,
    index: Membership,
    held: BTreeMap<u32, Held>,
    /// Buckets being stopped and released in the background.
    releasing: BTreeSet<u32>,
    /// Jittered claim times of free buckets.
    claim_at: HashMap<u32, Instant>,
    standing: Standing,
    sight: Sight,
    next_renew: Instant,
}

impl Decider {
    pub(super) fn new(timing: Timing, index: Membership, now: Instant) -> Self {
        Decider {
            timing,
            index,
            held: BTreeMap::new(),
            releasing: BTreeSet::new(),
            claim_at: HashMap::new(),
            standing: Standing::Out,
            sight: Sight::Blind,
            next_renew: now,
        }
    }

    /// The view is stale beyond repair (a missed renew deadline): true once, when the loop
    /// must start a fresh list; blind from then until the new watch delivers.
    pub(super) fn take_relist(&mut self) -> bool {
        if self.sight != Sight::Relist {
            return false;
        }
        self.sight = Sight::Blind;
        true
    }

    /// The watch failed: changes may be missing until it delivers again.
    pub(super) fn watch_failed(&mut self, now: Instant) {
        self.sight = Sight::Blind;
        self.index.restart_observation(now);
    }

    /// A full list of the Leases came in (after start or a re-list).
    pub(super) fn listed(&mut self, leases: Vec<LeaseInfo>, now: Instant) {
        self.index.reset(leases, now);
        self.see_again(now);
    }

    /// The watch delivered a Lease added or changed (`None`: not one of cronshard's).
    pub(super) fn applied(&mut self, lease: Option<LeaseInfo>, now: Instant) {
        if let Some(info) = lease {
            self.index.apply(info, now);
        }
        self.see_again(now);
    }

    /// The watch delivered a deleted Lease (`None`: not one of cronshard's).
    pub(super) fn deleted(&mut self, role: Option<&Role>, now: Instant) {
        if let Some(role) = role {
            self.index.delete(role, now);
        }
        self.see_again(now);
    }

    /// The watch delivers again: liveness is judged from here on, a lease duration on.
    fn see_again(&mut self, now: Instant) {
        if self.sight == Sight::Blind {
            self.index.restart_observation(now);
            self.sight = Sight::Watching;
        }
    }

    /// A Lease this process read or wrote itself, outside the watch (the bucket count of
    /// record).
    pub(super) fn observed(&mut self, lease: LeaseInfo, now: Instant) {
        self.index.apply(lease, now);
    }

    /// The view as last judged.
    pub(super) fn view(&self) -> View {
        self.index.view()
    }

    /// The view, with liveness judged again at `now`.
    pub(super) fn view_at(&mut self, now: Instant) -> View {
        self.index.tick(now);
        self.index.view()
    }

    /// The buckets whose work runs here (claimed, not being released).
    pub(super) fn owned(&self) -> BTreeSet<u32> {
        self.held.keys().copied().collect()
    }

    /// Renewed within the renew deadline, as of the last judgement.
    pub(super) fn healthy(&self) -> bool {
        matches!(self.standing, Standing::Renewed { .. })
    }

    /// Another process writes this identity's member Lease.
    pub(super) fn is_duplicate(&self) -> bool {
        self.standing == Standing::Duplicate
    }

    /// How long a renewal sent at `now` may take: what is left of the renew deadline of the
    /// last successful one (the whole deadline when there is none).
    pub(super) fn renew_window(&self, now: Instant) -> Duration {
        match self.standing {
            Standing::Renewed { at } => self.timing.renew_deadline.saturating_sub(now.duration_since(at)),
            _ => self.timing.renew_deadline,
        }
    }

    /// Whether the last successful renewal is older than the renew deadline.
    pub(super) fn lapsed(&self, now: Instant) -> bool {
        matches!(self.standing, Standing::Renewed { at } if now.duration_since(at) >= self.timing.renew_deadline)
    }

    pub(super) fn renew_due(&self, now: Instant) -> bool {
        now >= self.next_renew
    }

    /// Fencing comes first: a replica that wakes up past its renew deadline (paused, starved
    /// or cut off) stops every bucket before it renews, and rebuilds its view of the others
    /// from a fresh list before judging anyone dead. Then the renewal, when due.
    pub(super) fn member_actions(&mut self, now: Instant) -> Vec<Action> {
        let mut actions: Vec<Action> = self.check_deadline(now).into_iter().collect();
        if self.standing == Standing::Duplicate {
            return actions;
        }
        if self.sight != Sight::Watching {
            self.index.restart_observation(now);
        }
        if self.renew_due(now) {
            actions.push(Action::Renew);
            if self.index.record_missing() && self.sight == Sight::Watching && self.index.view().refused.is_none() {
                actions.push(Action::RestoreRecord);
            }
        }
        actions
    }

    /// A missed renew deadline: this process forgets what it knew of the others and, if it
    /// works on anything, fences.
    pub(super) fn check_deadline(&mut self, now: Instant) -> Option<Action> {
        if !self.lapsed(now) {
            return None;
        }
        tracing::error!(
            held = self.held.len(),
            "renew deadline missed: stopping all bucket work; re-listing the Leases before claiming anything"
        );
        self.standing = Standing::Out;
        self.sight = Sight::Relist;
        self.index.restart_observation(now);
        (!self.held.is_empty() || !self.releasing.is_empty()).then_some(Action::Fence)
    }

    /// Releases what the assignment no longer gives this replica, then claims what it does
    /// and is free (after the claim jitter), dead, or an earlier incarnation's.
    pub(super) fn bucket_actions(&mut self, mine: &BTreeSet<u32>, now: Instant) -> Vec<Action> {
        let mut actions: Vec<Action> =
            self.held.keys().filter(|b| !mine.contains(b)).map(|b| Action::Release(*b)).collect();
        for b in mine.iter().copied() {
            if self.held.contains_key(&b) || self.releasing.contains(&b) {
                continue;
            }
            match self.index.bucket_state(b, now) {
                BucketState::Held(_) => {
                    self.claim_at.remove(&b);
                }
                // A Lease naming this identity but not held by this process: an earlier
                // incarnation's (restart, or before fencing). Nobody else acts on it; re-claim
                // at once, as a new claimant.
                BucketState::Mine => actions.push(Action::Claim(b)),
                BucketState::Absent | BucketState::Free | BucketState::HolderDead(_) => {
                    let jitter = self.timing.claim_jitter;
                    let at = *self.claim_at.entry(b).or_insert_with(|| {
                        let wait =
                            if jitter.is_zero() { 0 } else { rand::rng().random_range(0..jitter.as_millis() as u64) };
                        now + Duration::from_millis(wait)
                    });
                    if now >= at {
                        actions.push(Action::Claim(b));
                    }
                }
            }
        }
        actions
    }

    /// The member Lease was written by a renewal sent at `sent`; its answer came at `now`.
    pub(super) fn renewed(&mut self, sent: Instant, now: Instant, lease: Option<LeaseInfo>) {
        self.standing = Standing::Renewed { at: sent };
        self.next_renew = sent + self.timing.renew_period;
        if let Some(info) = lease {
            self.index.apply(info, now);
        }
    }

    /// A renewal failed: try again soon, well before the renew deadline.
    pub(super) fn renew_failed(&mut self, now: Instant) {
        self.next_renew = now + self.timing.renew_period / 4;
    }

    /// About to claim `b`: its jittered time is used up, whatever the answer. Returns its
    /// Lease as last seen, which the claim must supersede.
    pub(super) fn claiming(&mut self, b: u32) -> Option<LeaseInfo> {
        self.claim_at.remove(&b);
        self.index.bucket_lease(b).cloned()
    }

    /// `b` was claimed; the answer came at `now`.
    pub(super) fn claimed(&mut self, b: u32, held: Held, lease: Option<LeaseInfo>, now: Instant) {
        self.held.insert(b, held);
        if let Some(info) = lease {
            self.index.apply(info, now);
        }
    }

    /// Starts releasing `b`; returns its Lease as held, if it was.
    pub(super) fn releasing(&mut self, b: u32) -> Option<Held> {
        let held = self.held.remove(&b)?;
        self.releasing.insert(b);
        Some(held)
    }

    /// `b`'s handover finished (its work stopped, its Lease released or given up).
    pub(super) fn released(&mut self, b: u32) {
        self.releasing.remove(&b);
    }

    /// All bucket work was stopped at once.
    pub(super) fn fenced(&mut self) {
        self.held.clear();
        self.releasing.clear();
        self.claim_at.clear();
    }

    /// Another process writes this identity's member Lease: this one stays out for good,
    /// and fences if it works on anything.
    pub(super) fn duplicate(&mut self) -> Option<Action> {
        self.standing = Standing::Duplicate;
        (!self.held.is_empty() || !self.releasing.is_empty()).then_some(Action::Fence)
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
