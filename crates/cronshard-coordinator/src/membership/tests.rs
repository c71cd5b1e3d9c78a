//! The membership index, judged at chosen instants.

use super::*;
use crate::lease::Layout;

fn member(id: &str, rv: u32, buckets: u32, since: &str) -> LeaseInfo {
    LeaseInfo {
        role: Role::Member(id.into()),
        name: format!("cronshard-member-{id}"),
        resource_version: rv.to_string(),
        holder: Some(id.into()),
        transitions: 0,
        bucket_count: Some(buckets),
        acquire_time: Some(since.into()),
        incarnation: None,
        bucket_function: Some(BucketFunction::Uid),
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
        incarnation: None,
        bucket_function: Some(BucketFunction::Uid),
    }
}

const S: Duration = Duration::from_secs(1);

fn config(buckets: u32, rv: u32) -> LeaseInfo {
    LeaseInfo {
        role: Role::Config,
        name: "cronshard-config".into(),
        resource_version: rv.to_string(),
        holder: None,
        transitions: 0,
        bucket_count: Some(buckets),
        acquire_time: None,
        incarnation: None,
        bucket_function: Some(BucketFunction::Uid),
    }
}

fn uid(buckets: u32) -> Layout {
    Layout { buckets, function: BucketFunction::Uid }
}

/// An index for `me` at `t0` that has seen the bucket count of record, `buckets`.
fn index(me: &str, buckets: u32, timing: Timing, t0: Instant) -> Membership {
    let mut m = Membership::new(me, uid(buckets), timing, t0, k8s_openapi::jiff::Timestamp::now().as_microsecond());
    m.apply(config(buckets, 0), t0);
    m
}

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
    let mut m = index("a", 4, Timing::default(), t0);
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
    let mut c = index("c", 4, Timing { join_grace: 3 * S, ..Timing::default() }, t0);
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
    let mut c = index("c", 4, Timing::default(), t0);
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
    let mut m = index("a", 4, Timing::default(), t0);
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
    let mut m = index("a", 4, Timing::default(), t0);
    m.reset(vec![member("a", 1, 4, "1"), member("b", 2, 4, "2"), bucket(1, "b", 3)], t0);
    // a's watch was down from t0 to t0+20 s: b's renewals never reached it.
    m.restart_observation(t0 + 20 * S);
    assert_eq!(m.bucket_state(1, t0 + 21 * S), BucketState::Held("b".into()));
    assert_eq!(m.bucket_state(1, t0 + 35 * S), BucketState::HolderDead("b".into()));
}

#[test]
fn a_relist_does_not_revive_the_dead() {
    let t0 = Instant::now();
    let mut m = index("a", 4, Timing::default(), t0);
    m.reset(vec![member("a", 1, 4, "1"), member("b", 2, 4, "2")], t0);
    m.reset(vec![member("a", 5, 4, "1"), member("b", 2, 4, "2")], t0 + 14 * S);
    assert!(!m.is_alive("b", t0 + 15 * S));
    assert!(m.is_alive("a", t0 + 15 * S));
}

#[test]
fn a_replica_whose_bucket_count_is_not_the_record_refuses_however_old_it_is() {
    let t0 = Instant::now();
    let mut old = index("old", 4, Timing::default(), t0);
    let mut new =
        Membership::new("new", uid(8), Timing::default(), t0, k8s_openapi::jiff::Timestamp::now().as_microsecond());
    // Before the record is seen, nobody acts.
    new.reset(vec![member("new", 2, 8, "2026-06-01T00:00:00Z")], t0);
    assert!(new.view().mine.is_empty() && new.view().refused.is_none());
    // The 8-bucket replica is the older member now (the 4-bucket one restarted); the record
    // says 4, so the 8-bucket one refuses and the 4-bucket one runs.
    let leases =
        vec![config(4, 1), member("new", 2, 8, "2026-01-01T00:00:00Z"), member("old", 3, 4, "2026-06-01T00:00:00Z")];
    old.reset(leases.clone(), t0);
    new.reset(leases, t0);
    assert!(old.view().refused.is_none());
    assert_eq!(old.view().members, vec!["old"], "the odd member is left out of the assignment");
    assert_eq!(old.view().mine.len(), 4);
    assert!(new.view().refused.is_some_and(|r| r.contains("--buckets 8") && r.contains("record is 4")));
    assert!(new.view().mine.is_empty());
    // Both count unowned buckets over the record's 4: nobody holds any yet.
    assert_eq!((old.view().unowned, new.view().unowned), (4, 4));
    // Deleting the config Lease does not stop the deployment: the record is remembered.
    old.delete(&Role::Config, t0);
    assert!(old.record_missing());
    assert_eq!((old.record(), old.view().mine.len()), (Some(4), 4));
}

#[test]
fn a_replica_whose_bucket_function_is_not_the_record_refuses_and_is_left_out() {
    let t0 = Instant::now();
    let wall = k8s_openapi::jiff::Timestamp::now().as_microsecond();
    let by_name = Layout { buckets: 4, function: BucketFunction::Name };
    let mut legacy = Membership::new("legacy", by_name, Timing::default(), t0, wall);
    let mut new = Membership::new("new", uid(4), Timing::default(), t0, wall);
    // A record written before there was a choice names no function: `name`.
    let record = LeaseInfo { bucket_function: Some(BucketFunction::Name), ..config(4, 1) };
    let legacy_member =
        LeaseInfo { bucket_function: Some(BucketFunction::Name), ..member("legacy", 3, 4, "2026-06-01T00:00:00Z") };
    let leases = vec![record, legacy_member, member("new", 2, 4, "2026-01-01T00:00:00Z")];
    legacy.reset(leases.clone(), t0);
    new.reset(leases, t0);
    assert!(legacy.view().refused.is_none());
    assert_eq!(legacy.view().members, vec!["legacy"], "the member with the other function is left out");
    assert_eq!(legacy.view().mine.len(), 4);
    let refused = new.view().refused.expect("refuses");
    assert!(refused.contains("function of record is name") && refused.contains("--bucket-function uid"), "{refused}");
    assert!(new.view().mine.is_empty());
    // A function this release does not know: refuse, whatever this replica runs with.
    let future = LeaseInfo { bucket_function: None, ..config(4, 2) };
    new.apply(future, t0);
    assert!(new.view().refused.is_some_and(|r| r.contains("does not know")) && new.view().mine.is_empty());
}
