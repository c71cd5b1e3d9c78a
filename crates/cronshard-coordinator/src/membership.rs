//! The membership index: every cronshard Lease this replica has seen, with the moment (on
//! this replica's monotonic clock) it last changed. From it: who is alive, who has settled,
//! which buckets this replica should own. Plain data with apply/delete/reset; time is passed in.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use cronshard_types::BucketFunction;
use tokio::time::Instant;

use crate::assign::{Assignment, Holding, Member, member_set_hash};
use crate::error::{Error, Result};
use crate::lease::{CONFIG_NAME, Layout, LeaseInfo, Role};

/// The shortest renew period: renewals are writes, and a few per second per replica is the most
/// the API server should see.
pub const MIN_RENEW_PERIOD: Duration = Duration::from_millis(100);
/// The longest lease duration (and join grace): beyond it, a dead replica's runs wait too long.
pub const MAX_LEASE_DURATION: Duration = Duration::from_secs(600);

/// The protocol's timings, validated together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// How often a replica renews its member Lease.
    pub renew_period: Duration,
    /// A replica that has not renewed for this long stops all bucket work.
    pub renew_deadline: Duration,
    /// Others judge a member dead when its Lease has not changed for this long.
    pub lease_duration: Duration,
    /// A new member takes free buckets at once but makes others shed theirs only after it has
    /// been seen this long (hysteresis: a pod that replaces another within it inherits that
    /// pod's buckets, and nothing else moves).
    pub join_grace: Duration,
    /// Free buckets are claimed after a random wait up to this (no thundering claims after a
    /// full restart).
    pub claim_jitter: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            renew_period: Duration::from_secs(2),
            renew_deadline: Duration::from_secs(10),
            lease_duration: Duration::from_secs(15),
            join_grace: Duration::from_secs(30),
            claim_jitter: Duration::from_millis(500),
        }
    }
}

impl Timing {
    /// Sane bounds, and the ordering fencing depends on: renew period < renew deadline <
    /// lease duration.
    pub fn validate(&self) -> Result<()> {
        if self.renew_period < MIN_RENEW_PERIOD {
            return Err(Error::Settings(format!(
                "the renew period ({:?}) must be at least {MIN_RENEW_PERIOD:?}: each renewal is a write",
                self.renew_period
            )));
        }
        if self.lease_duration > MAX_LEASE_DURATION {
            return Err(Error::Settings(format!(
                "the lease duration ({:?}) must be at most {MAX_LEASE_DURATION:?}: a dead replica's buckets wait that long",
                self.lease_duration
            )));
        }
        if self.join_grace > MAX_LEASE_DURATION {
            return Err(Error::Settings(format!(
                "the join grace ({:?}) must be at most {MAX_LEASE_DURATION:?}",
                self.join_grace
            )));
        }
        if self.renew_period >= self.renew_deadline {
            return Err(Error::Settings(format!(
                "the renew period ({:?}) must be shorter than the renew deadline ({:?})",
                self.renew_period, self.renew_deadline
            )));
        }
        if self.renew_deadline >= self.lease_duration {
            return Err(Error::Settings(format!(
                "the renew deadline ({:?}) must be shorter than the lease duration ({:?}): a replica must stop \
                 acting before anyone may take over",
                self.renew_deadline, self.lease_duration
            )));
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
struct Seen {
    info: LeaseInfo,
    first_seen: Instant,
    changed_at: Instant,
}

/// What a bucket's Lease says, judged now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BucketState {
    /// No Lease yet: create it.
    Absent,
    /// Released (no holder).
    Free,
    /// Held by a member whose Lease has not changed for a lease duration.
    HolderDead(String),
    /// Held by this replica's identity (an earlier incarnation, or this one).
    Mine,
    /// Held by a live member.
    Held(String),
}

/// The replica's view, recomputed on every change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct View {
    /// Live members with the same bucket count (the assignment's input; newcomers included).
    pub members: Vec<String>,
    /// The buckets this replica should own.
    pub mine: BTreeSet<u32>,
    pub member_hash: u64,
    /// Set when this replica must not act: its bucket count is not the one of record.
    pub refused: Option<String>,
    /// Buckets (of the count of record) with no live holder.
    pub unowned: usize,
}

/// The index.
#[derive(Debug)]
pub struct Membership {
    me: String,
    layout: Layout,
    timing: Timing,
    members: BTreeMap<String, Seen>,
    bucket_leases: BTreeMap<u32, Seen>,
    /// The bucket count and function of record (the config Lease; `None` for a function this
    /// release does not know), once seen; remembered if the Lease is deleted, so deleting it
    /// does not stop the deployment.
    record: Option<(u32, Option<BucketFunction>)>,
    /// The config Lease exists as of the last list or event.
    record_stored: bool,
    view: View,
    /// The wall clock at one monotonic instant, to judge how long ago a member joined from the
    /// acquireTime on its Lease (the same for every observer, unlike when each first saw it).
    wall_base: (Instant, i64),
}

impl Membership {
    /// An empty index for replica `me`; `now` on the monotonic clock is `wall_us` on the wall
    /// clock (microseconds since the epoch).
    pub fn new(me: &str, layout: Layout, timing: Timing, now: Instant, wall_us: i64) -> Self {
        Membership {
            me: me.to_owned(),
            layout,
            timing,
            members: BTreeMap::new(),
            bucket_leases: BTreeMap::new(),
            record: None,
            record_stored: false,
            view: View::default(),
            wall_base: (now, wall_us),
        }
    }

    /// The bucket count of record, once the config Lease has been seen.
    pub fn record(&self) -> Option<u32> {
        self.record.map(|(count, _)| count)
    }

    /// The bucket count and function of record, when they are this replica's.
    fn record_is_mine(&self) -> bool {
        self.record == Some((self.layout.buckets, Some(self.layout.function)))
    }

    /// The config Lease is missing: never created, or deleted (the record is remembered).
    pub fn record_missing(&self) -> bool {
        !self.record_stored
    }

    /// Whether a member has been one for the join grace: by its Lease's acquireTime on this
    /// replica's wall clock, so a replica that has just started agrees with the others that
    /// the old members are settled (judged by when it first saw them, it would take everyone
    /// for a newcomer and reshuffle). Without a readable acquireTime: since first seen.
    fn settled(&self, seen: &Seen, now: Instant) -> bool {
        let grace = i64::try_from(self.timing.join_grace.as_micros()).unwrap_or(i64::MAX);
        match seen.info.acquired_us() {
            i64::MIN => now.saturating_duration_since(seen.first_seen) >= self.timing.join_grace,
            acquired => {
                let elapsed = i64::try_from(now.saturating_duration_since(self.wall_base.0).as_micros()).unwrap_or(0);
                self.wall_base.1.saturating_add(elapsed).saturating_sub(acquired) >= grace
            }
        }
    }

    pub fn view(&self) -> View {
        self.view.clone()
    }

    /// The member Lease of `identity` as last seen.
    pub fn member_lease(&self, identity: &str) -> Option<&LeaseInfo> {
        self.members.get(identity).map(|s| &s.info)
    }

    /// A Lease was added or changed.
    pub fn apply(&mut self, info: LeaseInfo, now: Instant) {
        self.observe(info, now);
        self.publish(now);
    }

    fn observe(&mut self, info: LeaseInfo, now: Instant) {
        let next = |old: Option<&Seen>, info: LeaseInfo| match old {
            // Only a new resourceVersion is a sign of life: a re-delivered object is not.
            Some(old) if old.info.resource_version == info.resource_version => old.clone(),
            Some(old) => Seen { info, first_seen: old.first_seen, changed_at: now },
            None => Seen { info, first_seen: now, changed_at: now },
        };
        match info.role.clone() {
            Role::Bucket(b) => {
                let seen = next(self.bucket_leases.get(&b), info);
                self.bucket_leases.insert(b, seen);
            }
            Role::Member(identity) => {
                let seen = next(self.members.get(&identity), info);
                self.members.insert(identity, seen);
            }
            Role::Config => {
                if let Some(count) = info.bucket_count {
                    self.record = Some((count, info.bucket_function));
                }
                self.record_stored = true;
            }
        }
    }

    /// A Lease was deleted.
    pub fn delete(&mut self, role: &Role, now: Instant) {
        match role {
            Role::Member(identity) => {
                self.members.remove(identity);
            }
            Role::Bucket(b) => {
                self.bucket_leases.remove(b);
            }
            Role::Config => self.record_stored = false,
        }
        self.publish(now);
    }

    /// A fresh full list (after start or a re-list): keeps what it knew of objects that did not
    /// change, so a re-list does not make dead members look alive.
    pub fn reset(&mut self, leases: Vec<LeaseInfo>, now: Instant) {
        let old_members = std::mem::take(&mut self.members);
        let old_buckets = std::mem::take(&mut self.bucket_leases);
        self.record_stored = false;
        for info in leases {
            let old = match &info.role {
                Role::Member(identity) => old_members.get(identity).map(|o| (info.role.clone(), o.clone())),
                Role::Bucket(b) => old_buckets.get(b).map(|o| (info.role.clone(), o.clone())),
                Role::Config => None,
            };
            match old {
                Some((Role::Member(identity), seen)) => {
                    self.members.insert(identity, seen);
                }
                Some((Role::Bucket(b), seen)) => {
                    self.bucket_leases.insert(b, seen);
                }
                Some((Role::Config, _)) | None => {}
            }
            self.observe(info, now);
        }
        self.publish(now);
    }

    /// This replica could not observe (its watch failed, or it was cut off): nobody may be
    /// judged dead until it has watched them, caught up, for a full lease duration again.
    /// Without this, a replica back from a partition would see every member's last change
    /// from before the partition and claim live members' buckets before its watch catches up.
    pub fn restart_observation(&mut self, now: Instant) {
        for seen in self.members.values_mut().chain(self.bucket_leases.values_mut()) {
            seen.changed_at = seen.changed_at.max(now);
        }
        self.publish(now);
    }

    /// Re-judges liveness as time passes.
    pub fn tick(&mut self, now: Instant) {
        self.publish(now);
    }

    fn alive(&self, seen: &Seen, now: Instant) -> bool {
        seen.info.holder.as_deref().is_some_and(|h| !h.is_empty())
            && now.saturating_duration_since(seen.changed_at) < self.timing.lease_duration
    }

    /// Whether `identity`'s member Lease is alive as of `now`.
    pub fn is_alive(&self, identity: &str, now: Instant) -> bool {
        self.members.get(identity).is_some_and(|s| self.alive(s, now))
    }

    /// The bucket's Lease as last seen.
    pub fn bucket_lease(&self, bucket: u32) -> Option<&LeaseInfo> {
        self.bucket_leases.get(&bucket).map(|s| &s.info)
    }

    pub fn bucket_state(&self, bucket: u32, now: Instant) -> BucketState {
        let Some(seen) = self.bucket_leases.get(&bucket) else { return BucketState::Absent };
        match seen.info.holder.as_deref() {
            None | Some("") => BucketState::Free,
            Some(h) if h == self.me => BucketState::Mine,
            Some(h) => {
                let alive = match self.members.get(h) {
                    Some(member) => self.alive(member, now),
                    // No member Lease at all: dead once the bucket Lease itself is a lease
                    // duration old on this clock (covers a holder whose member Lease was deleted).
                    None => now.saturating_duration_since(seen.changed_at) < self.timing.lease_duration,
                };
                if alive { BucketState::Held(h.to_owned()) } else { BucketState::HolderDead(h.to_owned()) }
            }
        }
    }

    /// Why this replica must not act, if it must not: its bucket count or function is not the
    /// one of record. Without a record yet, it waits (the coordinator creates the record).
    fn refusal(&self) -> Option<String> {
        let (record, function) = self.record?;
        let Layout { buckets, function: mine } = self.layout;
        if record != buckets {
            return Some(format!(
                "the deployment's bucket count of record is {record} (Lease {CONFIG_NAME}) and this replica runs with \
                 --buckets {buckets}: refusing to act; to change the count, scale to zero, delete that Lease and the \
                 cronshard.io/bucket labels, then deploy with the new count"
            ));
        }
        match function {
            Some(function) if function == mine => None,
            Some(function) => Some(format!(
                "the deployment's bucket function of record is {function} (Lease {CONFIG_NAME}) and this replica runs \
                 with --bucket-function {mine}: refusing to act; run it with --bucket-function {function}, or move the \
                 deployment to {mine} as docs/operations.md says"
            )),
            None => Some(format!(
                "the deployment's bucket function of record (Lease {CONFIG_NAME}) is one this release does not know: \
                 refusing to act; run the release that recorded it"
            )),
        }
    }

    fn compute(&self, now: Instant) -> View {
        let live: Vec<(&String, &Seen)> = self.members.iter().filter(|(_, s)| self.alive(s, now)).collect();
        let refused = self.refusal();
        let counted = self.record().unwrap_or(self.layout.buckets);
        let function = self.record.map_or(Some(self.layout.function), |(_, f)| f);
        let candidates: Vec<Member> = live
            .iter()
            .filter(|(_, s)| s.info.bucket_count == Some(counted) && s.info.bucket_function == function)
            .map(|(id, s)| Member { name: (*id).clone(), settled: self.settled(s, now) })
            .collect();
        let me_alive = self.is_alive(&self.me, now);
        let holdings: BTreeMap<u32, Holding> = (0..counted)
            .filter_map(|b| {
                let holder = match self.bucket_state(b, now) {
                    BucketState::Held(h) => h,
                    BucketState::Mine if me_alive => self.me.clone(),
                    _ => return None,
                };
                let since = self.bucket_lease(b).map_or(i64::MIN, LeaseInfo::acquired_us);
                Some((b, Holding { holder, since }))
            })
            .collect();
        let assignment = Assignment::sticky(&candidates, counted, &holdings);
        let members: Vec<String> = assignment.members().to_vec();
        let acting = refused.is_none() && self.record_is_mine();
        let mine = if acting { assignment.buckets_of(&self.me) } else { BTreeSet::new() };
        let unowned = (0..counted)
            .filter(|b| match self.bucket_state(*b, now) {
                BucketState::Absent | BucketState::Free | BucketState::HolderDead(_) => true,
                BucketState::Mine => !me_alive,
                BucketState::Held(_) => false,
            })
            .count();
        View { member_hash: member_set_hash(&members), members, mine, refused, unowned }
    }

    fn publish(&mut self, now: Instant) {
        self.view = self.compute(now);
    }
}

#[cfg(test)]
mod tests;
