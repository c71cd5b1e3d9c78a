//! The membership index: every cronshard Lease this replica has seen, with the moment (on
//! this replica's monotonic clock) it last changed. From it: who is alive, who has settled,
//! which buckets this replica should own. Plain data with apply/delete/reset; time is passed in.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::assign::{Assignment, Holding, Member, member_set_hash};
use crate::lease::{LeaseInfo, Role};

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
    /// The ordering fencing depends on: renew period < renew deadline < lease duration.
    pub fn validate(&self) -> crate::Result<()> {
        if self.renew_period.is_zero() {
            return Err(crate::Error::Settings("the renew period must be positive".into()));
        }
        if self.renew_period >= self.renew_deadline {
            return Err(crate::Error::Settings(format!(
                "the renew period ({:?}) must be shorter than the renew deadline ({:?})",
                self.renew_period, self.renew_deadline
            )));
        }
        if self.renew_deadline >= self.lease_duration {
            return Err(crate::Error::Settings(format!(
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

/// The replica's view, published on every change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct View {
    /// Live members with the same bucket count (the assignment's input; newcomers included).
    pub members: Vec<String>,
    /// The buckets this replica should own.
    pub mine: BTreeSet<u32>,
    pub member_hash: u64,
    /// Set when this replica must not act: an older live member runs with another bucket count.
    pub refused: Option<String>,
    /// Buckets with no live holder.
    pub unowned: usize,
}

/// The index.
#[derive(Debug)]
pub struct Membership {
    me: String,
    buckets: u32,
    timing: Timing,
    members: BTreeMap<String, Seen>,
    bucket_leases: BTreeMap<u32, Seen>,
    view: tokio::sync::watch::Sender<View>,
    /// The wall clock at one monotonic instant, to judge how long ago a member joined from the
    /// acquireTime on its Lease (the same for every observer, unlike when each first saw it).
    wall_base: (Instant, i64),
}

impl Membership {
    pub fn new(me: &str, buckets: u32, timing: Timing) -> Self {
        Membership {
            me: me.to_owned(),
            buckets,
            timing,
            members: BTreeMap::new(),
            bucket_leases: BTreeMap::new(),
            view: tokio::sync::watch::channel(View::default()).0,
            wall_base: (Instant::now(), k8s_openapi::jiff::Timestamp::now().as_microsecond()),
        }
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

    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<View> {
        self.view.subscribe()
    }

    pub fn view(&self) -> View {
        self.view.borrow().clone()
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
        }
        self.publish(now);
    }

    /// A fresh full list (after start or a re-list): keeps what it knew of objects that did not
    /// change, so a re-list does not make dead members look alive.
    pub fn reset(&mut self, leases: Vec<LeaseInfo>, now: Instant) {
        let old_members = std::mem::take(&mut self.members);
        let old_buckets = std::mem::take(&mut self.bucket_leases);
        for info in leases {
            let old = match &info.role {
                Role::Member(identity) => old_members.get(identity).map(|o| (info.role.clone(), o.clone())),
                Role::Bucket(b) => old_buckets.get(b).map(|o| (info.role.clone(), o.clone())),
            };
            match old {
                Some((Role::Member(identity), seen)) => {
                    self.members.insert(identity, seen);
                }
                Some((Role::Bucket(b), seen)) => {
                    self.bucket_leases.insert(b, seen);
                }
                None => {}
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

    fn compute(&self, now: Instant) -> View {
        let live: Vec<(&String, &Seen)> = self.members.iter().filter(|(_, s)| self.alive(s, now)).collect();
        let mine_seen = self.members.get(&self.me);
        // The older of two members with different bucket counts keeps running; the newer refuses.
        let refused = mine_seen.and_then(|me| {
            live.iter()
                .filter(|(id, s)| **id != self.me && s.info.bucket_count != Some(self.buckets))
                .find(|(id, s)| {
                    (s.info.acquire_time.as_deref(), id.as_str()) < (me.info.acquire_time.as_deref(), self.me.as_str())
                })
                .map(|(id, s)| {
                    format!(
                        "member {id} runs with {} buckets and this replica with {}: --buckets must be the same on \
                         every replica; refusing to act",
                        s.info.bucket_count.map_or_else(|| "an unknown number of".to_owned(), |c| c.to_string()),
                        self.buckets
                    )
                })
        });
        let candidates: Vec<Member> = live
            .iter()
            .filter(|(_, s)| s.info.bucket_count == Some(self.buckets))
            .map(|(id, s)| Member { name: (*id).clone(), settled: self.settled(s, now) })
            .collect();
        let me_alive = self.is_alive(&self.me, now);
        let holdings: BTreeMap<u32, Holding> = (0..self.buckets)
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
        let assignment = Assignment::sticky(&candidates, self.buckets, &holdings);
        let members: Vec<String> = assignment.members().to_vec();
        let mine = if refused.is_some() { BTreeSet::new() } else { assignment.buckets_of(&self.me) };
        let unowned = (0..self.buckets)
            .filter(|b| match self.bucket_state(*b, now) {
                BucketState::Absent | BucketState::Free | BucketState::HolderDead(_) => true,
                BucketState::Mine => !me_alive,
                BucketState::Held(_) => false,
            })
            .count();
        View { member_hash: member_set_hash(&members), members, mine, refused, unowned }
    }

    fn publish(&self, now: Instant) {
        let view = self.compute(now);
        self.view.send_if_modified(|current| {
            if *current == view {
                false
            } else {
                *current = view;
                true
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, rv: u32, buckets: u32, since: &str) -> LeaseInfo {
        LeaseInfo {
            role: Role::Member(id.into()),
            name: format!("cronshard-member-{id}"),
            resource_version: rv.to_string(),
            holder: Some(id.into()),
            transitions: 0,
            bucket_count: Some(buckets),
            acquire_time: Some(since.into()),
        }
    }

    fn bucket(b: u32, holder: &str, rv: u32) -> LeaseInfo {
        LeaseInfo {
            role: Role::Bucket(b),
            name: format!("cronshard-bucket-{b}"),
            resource_version: rv.to_string(),
            holder: Some(holder.into()),
            transitions: 1,
            bucket_count: Some(4),
            acquire_time: None,
        }
    }

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn timings_are_validated() {
        assert!(Timing::default().validate().is_ok());
        let bad = Timing { renew_deadline: Duration::from_secs(15), ..Timing::default() };
        assert!(bad.validate().is_err());
        let bad = Timing { renew_period: Duration::from_secs(10), ..Timing::default() };
        assert!(bad.validate().is_err());
    }

    fn bucket_since(b: u32, holder: &str, rv: u32, since: &str) -> LeaseInfo {
        LeaseInfo { acquire_time: Some(since.into()), ..bucket(b, holder, rv) }
    }

    #[test]
    fn members_are_assigned_at_once_on_a_fresh_start_and_die_on_the_observers_clock() {
        let t0 = Instant::now();
        let mut m = Membership::new("a", 4, Timing::default());
        m.reset(vec![member("a", 1, 4, "1"), member("b", 2, 4, "2")], t0);
        // Nobody has settled and nobody holds anything: a fresh start, everybody counts.
        assert_eq!(m.view().members, vec!["a", "b"]);
        assert_eq!(m.view().mine, Assignment::new(["a", "b"], 4).buckets_of("a"));
        // a renews, b does not: b dies 15 s after a's clock last saw it change.
        m.apply(member("a", 3, 4, "1"), t0 + 10 * S);
        m.tick(t0 + 14 * S);
        assert!(m.is_alive("b", t0 + 14 * S));
        m.apply(member("a", 4, 4, "1"), t0 + 14 * S);
        m.tick(t0 + 15 * S);
        assert_eq!(m.view().members, vec!["a"]);
        assert_eq!(m.view().mine.len(), 4);
        // A re-delivered copy (same resourceVersion) is no sign of life.
        m.apply(member("b", 2, 4, "2"), t0 + 16 * S);
        assert!(!m.is_alive("b", t0 + 16 * S));
    }

    #[test]
    fn a_newcomer_takes_free_buckets_at_once_and_others_only_after_its_grace() {
        let t0 = Instant::now();
        let mut c = Membership::new("c", 4, Timing { join_grace: 3 * S, ..Timing::default() });
        let t = "2026-01-01T00:00:00Z";
        c.reset(
            vec![
                member("a", 1, 4, "1"),
                member("b", 2, 4, "2"),
                bucket_since(0, "a", 3, t),
                bucket_since(1, "a", 4, t),
                bucket_since(2, "b", 5, t),
                bucket_since(3, "b", 6, t),
            ],
            t0,
        );
        c.tick(t0 + 3 * S);
        // c joins: a and b are settled, c is not; nothing is free, so c gets nothing yet.
        c.apply(member("c", 7, 4, "3"), t0 + 3 * S);
        c.apply(member("a", 8, 4, "1"), t0 + 3 * S);
        assert_eq!(c.view().members, vec!["a", "b", "c"]);
        assert!(c.view().mine.is_empty(), "a newcomer in its grace makes nobody shed");
        // b leaves (SIGTERM: releases and deletes its member Lease) within c's grace: c, the
        // replacement, inherits both of b's buckets; a keeps its own.
        c.apply(bucket_since(2, "", 9, t), t0 + 4 * S);
        c.apply(bucket_since(3, "", 10, t), t0 + 4 * S);
        c.delete(&Role::Member("b".into()), t0 + 4 * S);
        assert_eq!(c.view().mine, BTreeSet::from([2, 3]));
        // After the grace, with a and c settled at 2 each, nothing moves.
        c.apply(member("a", 11, 4, "1"), t0 + 7 * S);
        c.apply(member("c", 12, 4, "3"), t0 + 7 * S);
        assert_eq!(c.view().mine, BTreeSet::from([2, 3]));
    }

    #[test]
    fn a_replica_that_just_started_judges_the_old_members_settled_by_their_acquire_time() {
        let t0 = Instant::now();
        let mut c = Membership::new("c", 4, Timing::default());
        let long_ago = "2020-01-01T00:00:00Z";
        let just_now = k8s_openapi::jiff::Timestamp::now().to_string();
        c.reset(
            vec![
                member("a", 1, 4, long_ago),
                member("b", 2, 4, long_ago),
                member("c", 3, 4, &just_now),
                bucket_since(0, "a", 4, long_ago),
                bucket_since(1, "a", 5, long_ago),
                bucket_since(2, "b", 6, long_ago),
                bucket_since(3, "b", 7, long_ago),
            ],
            t0,
        );
        // c first saw a and b just now, but they joined long ago: they keep their buckets,
        // and c, the newcomer, waits out its grace (a fresh-start reading would give it 1).
        assert_eq!(c.view().members, vec!["a", "b", "c"]);
        assert!(c.view().mine.is_empty());
    }

    #[test]
    fn bucket_states() {
        let t0 = Instant::now();
        let mut m = Membership::new("a", 4, Timing::default());
        m.reset(
            vec![
                member("a", 1, 4, "1"),
                member("b", 2, 4, "2"),
                bucket(0, "a", 3),
                bucket(1, "b", 4),
                bucket(2, "", 5),
                bucket(3, "gone", 6),
            ],
            t0,
        );
        assert_eq!(m.bucket_state(0, t0), BucketState::Mine);
        assert_eq!(m.bucket_state(1, t0), BucketState::Held("b".into()));
        assert_eq!(m.bucket_state(2, t0), BucketState::Free);
        assert_eq!(m.bucket_state(3, t0), BucketState::Held("gone".into()), "not judged dead before a lease duration");
        assert_eq!(m.bucket_state(3, t0 + 15 * S), BucketState::HolderDead("gone".into()));
        assert_eq!(m.bucket_state(1, t0 + 15 * S), BucketState::HolderDead("b".into()));
        m.delete(&Role::Bucket(2), t0);
        assert_eq!(m.bucket_state(2, t0), BucketState::Absent);
    }

    #[test]
    fn an_observer_that_was_cut_off_judges_nobody_dead_until_it_has_watched_again() {
        let t0 = Instant::now();
        let mut m = Membership::new("a", 4, Timing::default());
        m.reset(vec![member("a", 1, 4, "1"), member("b", 2, 4, "2"), bucket(1, "b", 3)], t0);
        // a's watch was down from t0 to t0+20 s: b's renewals never reached it.
        m.restart_observation(t0 + 20 * S);
        assert_eq!(m.bucket_state(1, t0 + 21 * S), BucketState::Held("b".into()));
        assert_eq!(m.bucket_state(1, t0 + 35 * S), BucketState::HolderDead("b".into()));
    }

    #[test]
    fn a_relist_does_not_revive_the_dead() {
        let t0 = Instant::now();
        let mut m = Membership::new("a", 4, Timing::default());
        m.reset(vec![member("a", 1, 4, "1"), member("b", 2, 4, "2")], t0);
        m.reset(vec![member("a", 5, 4, "1"), member("b", 2, 4, "2")], t0 + 14 * S);
        assert!(!m.is_alive("b", t0 + 15 * S));
        assert!(m.is_alive("a", t0 + 15 * S));
    }

    #[test]
    fn the_newer_member_with_another_bucket_count_refuses() {
        let t0 = Instant::now();
        let mut old = Membership::new("old", 4, Timing::default());
        let mut new = Membership::new("new", 8, Timing::default());
        let leases = vec![member("old", 1, 4, "2026-01-01T00:00:00Z"), member("new", 2, 8, "2026-06-01T00:00:00Z")];
        old.reset(leases.clone(), t0);
        new.reset(leases, t0);
        old.tick(t0 + 3 * S);
        new.tick(t0 + 3 * S);
        assert!(old.view().refused.is_none());
        assert_eq!(old.view().members, vec!["old"], "the odd member is left out of the assignment");
        assert_eq!(old.view().mine.len(), 4);
        assert!(new.view().refused.is_some_and(|r| r.contains("--buckets")));
        assert!(new.view().mine.is_empty());
    }
}
