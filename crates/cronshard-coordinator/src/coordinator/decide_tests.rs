//! The coordinator's decisions on paused time: claim, renew, fence, release.

use std::time::Duration;

use tokio::time::{Instant, advance};

use super::*;
use crate::lease::{Layout, Role};

const BUCKETS: u32 = 4;

fn timing(claim_jitter: Duration) -> Timing {
    Timing { claim_jitter, ..Timing::default() }
}

fn info(role: Role, rv: u32, holder: Option<&str>, acquired: Option<&str>) -> LeaseInfo {
    LeaseInfo {
        name: format!("{role:?}"),
        role,
        resource_version: rv.to_string(),
        holder: holder.map(Into::into),
        transitions: 0,
        bucket_count: Some(BUCKETS),
        acquire_time: acquired.map(Into::into),
        incarnation: None,
        bucket_function: Some(cronshard_types::BucketFunction::Uid),
    }
}

/// A member Lease that has been one for long (settled on any clock).
fn member(id: &str, rv: u32) -> LeaseInfo {
    info(Role::Member(id.into()), rv, Some(id), Some("2020-01-01T00:00:00.000000Z"))
}

/// A decider for "me" that has seen the bucket count of record and watches the Leases.
fn decider(timing: Timing) -> Decider {
    let now = Instant::now();
    let wall = k8s_openapi::jiff::Timestamp::now().as_microsecond();
    let index = Membership::new(
        "me",
        Layout { buckets: BUCKETS, function: cronshard_types::BucketFunction::Uid },
        timing,
        now,
        wall,
    );
    let mut d = Decider::new(timing, index, now);
    // The watch delivers the record: from now on it is followed.
    d.applied(Some(info(Role::Config, 1, None, None)), now);
    d
}

fn mine(d: &mut Decider) -> BTreeSet<u32> {
    d.view_at(Instant::now()).mine
}

fn held(b: u32) -> Held {
    Held { resource_version: b.to_string(), transitions: 1 }
}

#[tokio::test(start_paused = true)]
async fn renewal_comes_first_and_then_every_renew_period() {
    let t = timing(Duration::ZERO);
    let mut d = decider(t);
    assert_eq!(d.member_actions(Instant::now()), [Action::Renew]);
    d.renewed(Instant::now(), Instant::now(), Some(member("me", 2)));
    advance(t.renew_period - Duration::from_millis(1)).await;
    assert!(d.member_actions(Instant::now()).is_empty());
    advance(Duration::from_millis(1)).await;
    assert_eq!(d.member_actions(Instant::now()), [Action::Renew]);
    // A failed renewal is tried again within a quarter period, well before the deadline.
    d.renew_failed(Instant::now());
    advance(t.renew_period / 4).await;
    assert_eq!(d.member_actions(Instant::now()), [Action::Renew]);
}

#[tokio::test(start_paused = true)]
async fn free_buckets_are_claimed_once_renewed_and_after_the_jitter() {
    let jitter = Duration::from_millis(500);
    let mut d = decider(timing(jitter));
    d.renewed(Instant::now(), Instant::now(), Some(member("me", 2)));
    let buckets = mine(&mut d);
    assert_eq!(buckets, (0..BUCKETS).collect());
    let now = Instant::now();
    let early: BTreeSet<Action> = d.bucket_actions(&buckets, now).into_iter().collect();
    advance(jitter).await;
    let late: BTreeSet<Action> = d.bucket_actions(&buckets, Instant::now()).into_iter().collect();
    // Every bucket is claimed by the end of the jitter, none twice in one pass.
    let all: BTreeSet<Action> = (0..BUCKETS).map(Action::Claim).collect();
    assert_eq!(late, all);
    assert!(early.is_subset(&all));
    for b in 0..BUCKETS {
        d.claiming(b);
        d.claimed(b, held(b), Some(info(Role::Bucket(b), 10 + b, Some("me"), None)), Instant::now());
    }
    assert!(d.bucket_actions(&buckets, Instant::now()).is_empty(), "held buckets are not claimed again");
}

#[tokio::test(start_paused = true)]
async fn a_bucket_held_by_a_live_peer_is_left_alone() {
    let mut d = decider(timing(Duration::ZERO));
    d.renewed(Instant::now(), Instant::now(), Some(member("me", 2)));
    d.applied(Some(member("peer", 3)), Instant::now());
    let buckets = mine(&mut d);
    let ours = *buckets.first().expect("half of the buckets are mine");
    d.applied(Some(info(Role::Bucket(ours), 4, Some("peer"), None)), Instant::now());
    assert!(!d.bucket_actions(&buckets, Instant::now()).contains(&Action::Claim(ours)));
}

#[tokio::test(start_paused = true)]
async fn a_missed_renew_deadline_fences_before_the_next_renewal() {
    let t = timing(Duration::ZERO);
    let mut d = decider(t);
    d.renewed(Instant::now(), Instant::now(), Some(member("me", 2)));
    d.claimed(0, held(0), None, Instant::now());
    d.claimed(1, held(1), None, Instant::now());
    advance(t.renew_deadline - Duration::from_millis(1)).await;
    assert_eq!(d.member_actions(Instant::now()), [Action::Renew], "not yet");
    // That renewal fails: the next attempt is not due within the next millisecond.
    d.renew_failed(Instant::now());
    advance(Duration::from_millis(1)).await;
    assert_eq!(d.member_actions(Instant::now()), [Action::Fence]);
    assert_eq!(d.standing, Standing::Out);
    assert_eq!(d.sight, Sight::Relist, "the view of the others is rebuilt from a fresh list");
    d.fenced();
    assert!(d.owned().is_empty());
    // Judged once: the next pass does not fence again.
    assert!(d.check_deadline(Instant::now()).is_none());
}

#[tokio::test(start_paused = true)]
async fn a_lapse_with_nothing_held_forgets_the_view_but_does_not_fence() {
    let t = timing(Duration::ZERO);
    let mut d = decider(t);
    d.renewed(Instant::now(), Instant::now(), Some(member("me", 2)));
    advance(t.renew_deadline).await;
    assert_eq!(d.member_actions(Instant::now()), [Action::Renew]);
    assert_eq!(d.sight, Sight::Relist);
}

#[tokio::test(start_paused = true)]
async fn buckets_the_assignment_moves_away_are_released_and_not_reclaimed_meanwhile() {
    let mut d = decider(timing(Duration::ZERO));
    d.renewed(Instant::now(), Instant::now(), Some(member("me", 2)));
    for b in 0..BUCKETS {
        d.claimed(b, held(b), Some(info(Role::Bucket(b), 10 + b, Some("me"), None)), Instant::now());
    }
    d.applied(Some(member("peer", 3)), Instant::now());
    let buckets = mine(&mut d);
    assert_eq!(buckets.len(), 2, "a settled peer takes half");
    let released: Vec<Action> = (0..BUCKETS).filter(|b| !buckets.contains(b)).map(Action::Release).collect();
    assert_eq!(d.bucket_actions(&buckets, Instant::now()), released);
    for action in released {
        let Action::Release(b) = action else { unreachable!() };
        assert!(d.releasing(b).is_some());
        assert!(d.releasing(b).is_none(), "released once");
    }
    assert!(d.bucket_actions(&buckets, Instant::now()).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_deleted_record_is_restored_with_the_renewal_and_a_duplicate_stays_out() {
    let mut d = decider(timing(Duration::ZERO));
    d.deleted(Some(&Role::Config), Instant::now());
    assert_eq!(d.member_actions(Instant::now()), [Action::Renew, Action::RestoreRecord]);
    // Another process writes this identity's member Lease (nothing held: nothing to fence).
    d.duplicate();
    assert!(d.member_actions(Instant::now()).is_empty());
}
