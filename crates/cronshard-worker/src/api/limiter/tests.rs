//! The limiter under tokio's paused time: rates, priorities, places and herd pauses.

use super::*;

#[tokio::test(start_paused = true)]
async fn many_waiters_are_served_at_the_rate_in_priority_order() {
    let limiter = Arc::new(Limiter::new(100.0, 1));
    let _ = limiter.acquire(Priority::Create).await;
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..200 {
        let priority = if i % 2 == 0 { Priority::Background } else { Priority::Create };
        let (limiter, order) = (limiter.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let _place = limiter.acquire(priority).await;
            order.lock().expect("lock").push(priority);
        }));
    }
    let start = Instant::now();
    for t in tasks {
        t.await.expect("task");
    }
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_millis(1990) && elapsed <= Duration::from_millis(2100), "{elapsed:?}");
    let order = order.lock().expect("lock").clone();
    assert!(order[..100].iter().all(|p| *p == Priority::Create), "every creation first");
}

/// Background work asked for in a herd's lead waits until the herd's grace is over, or
/// until the reservation is withdrawn; a create never waits for it.
#[tokio::test(start_paused = true)]
async fn background_work_waits_out_a_herd_and_creates_do_not() {
    use crate::api::reserve::{GRACE, HERD_SYNCS};
    // 96 places at 100/s: the lead is 0.96 s.
    let limiter = Arc::new(Limiter::new(100.0, 10));
    let start = Instant::now();
    let herd = start + Duration::from_secs(2);
    limiter.reserve(0, Some((herd, HERD_SYNCS)));
    drop(limiter.acquire(Priority::Background).await);
    assert_eq!(start.elapsed(), Duration::ZERO, "before the lead, nothing waits");
    let waiting = |priority| {
        let limiter = limiter.clone();
        tokio::spawn(async move {
            drop(limiter.acquire(priority).await);
            Instant::now()
        })
    };
    tokio::time::sleep_until(start + Duration::from_millis(1500)).await;
    let background = waiting(Priority::Background);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let create = waiting(Priority::Create).await.expect("create");
    assert_eq!(create, start + Duration::from_millis(1600), "a create goes at once");
    assert_eq!(background.await.expect("background"), herd + GRACE);
    // Withdrawn: a waiter in the next herd's lead goes at once.
    let next = herd + Duration::from_secs(60);
    limiter.reserve(0, Some((next, HERD_SYNCS)));
    tokio::time::sleep_until(next - Duration::from_millis(300)).await;
    let background = waiting(Priority::Background);
    tokio::time::sleep(Duration::from_millis(100)).await;
    limiter.reserve(0, None);
    assert_eq!(background.await.expect("background"), next - Duration::from_millis(200));
}

/// At 100/s, lower priorities hold at most 10 places (0.1 s of the rate); a create takes
/// one of the rest at once.
#[tokio::test(start_paused = true)]
async fn background_work_holds_a_tenth_of_a_second_of_places_and_creates_the_rest() {
    let limiter = Arc::new(Limiter::new(100.0, 100));
    let held: Vec<Place> = futures::future::join_all((0..10).map(|_| limiter.acquire(Priority::Background))).await;
    let eleventh = {
        let limiter = limiter.clone();
        tokio::spawn(async move { drop(limiter.acquire(Priority::Status).await) })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!eleventh.is_finished(), "the eleventh waits for a place");
    let start = Instant::now();
    let create = limiter.acquire(Priority::Create).await;
    assert_eq!(start.elapsed(), Duration::ZERO, "a create finds a place at once");
    assert_eq!(limiter.in_flight(), 11);
    drop(create);
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(!eleventh.is_finished(), "the create's place is not one of the ten");
    drop(held);
    eleventh.await.expect("a place came back");
}

/// The lead is the slowest recent write answer with a margin: at 400 ms, 0.6 s.
#[tokio::test(start_paused = true)]
async fn the_lead_follows_the_answer_times_and_a_pause_once_begun_lasts() {
    use crate::api::reserve::{GRACE, HERD_SYNCS};
    let limiter = Arc::new(Limiter::new(100.0, 10));
    limiter.adapt(Signals { writes: 10, slowest_write_ms: 400, delivered: 10, ..Signals::default() });
    let herd = Instant::now() + Duration::from_secs(2);
    limiter.reserve(0, Some((herd, HERD_SYNCS)));
    tokio::time::sleep_until(herd - Duration::from_millis(650)).await;
    drop(limiter.acquire(Priority::Background).await);
    assert_eq!(Instant::now(), herd - Duration::from_millis(650), "before the lead");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let waiting = {
        let limiter = limiter.clone();
        tokio::spawn(async move {
            drop(limiter.acquire(Priority::Background).await);
            Instant::now()
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Faster answers now would give a 0.15 s lead: the pause begun goes on.
    limiter.adapt(Signals { writes: 10, slowest_write_ms: 100, delivered: 10, ..Signals::default() });
    assert_eq!(waiting.await.expect("background"), herd + GRACE);
}

#[tokio::test(start_paused = true)]
async fn burst_then_rate() {
    let limiter = Limiter::new(10.0, 5);
    let start = Instant::now();
    for _ in 0..15 {
        let _ = limiter.acquire(Priority::Create).await;
    }
    // 5 at once, then 10 more at 10/s.
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_millis(990) && elapsed <= Duration::from_millis(1100), "{elapsed:?}");
}

#[tokio::test(start_paused = true)]
async fn a_new_rate_applies_to_waiting_callers() {
    let budget = RateBudget { qps: 100.0, burst: 1.0, deployment_qps: 100.0, adaptive: false };
    let limiter = Arc::new(Limiter::with_budget(budget));
    let _ = limiter.acquire(Priority::Create).await;
    let mut tasks = Vec::new();
    for _ in 0..100 {
        let limiter = limiter.clone();
        tasks.push(tokio::spawn(async move { drop(limiter.acquire(Priority::Create).await) }));
    }
    tokio::task::yield_now().await;
    // A second replica joined: this one's share halves.
    limiter.set_share(0.5);
    let start = Instant::now();
    for t in tasks {
        t.await.expect("task");
    }
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_millis(1950) && elapsed <= Duration::from_millis(2100), "{elapsed:?}");
    assert!((limiter.qps() - 50.0).abs() < f64::EPSILON);
}

#[tokio::test(start_paused = true)]
async fn creations_overtake_waiting_background_work() {
    let limiter = std::sync::Arc::new(Limiter::new(10.0, 1));
    let _ = limiter.acquire(Priority::Background).await;
    let order = std::sync::Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for (i, priority) in [Priority::Background, Priority::Background, Priority::Create].into_iter().enumerate() {
        let (limiter, order) = (limiter.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(i as u64)).await;
            let _place = limiter.acquire(priority).await;
            order.lock().expect("lock").push(priority);
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    assert_eq!(order.lock().expect("lock")[0], Priority::Create);
}

#[tokio::test(start_paused = true)]
async fn no_token_while_every_place_is_taken_and_a_returned_place_goes_to_the_most_urgent() {
    let budget = RateBudget { qps: 1000.0, burst: 100.0, deployment_qps: 0.0, adaptive: false };
    let limiter = Arc::new(Limiter::with_places(budget, 2));
    let first = limiter.acquire(Priority::Background).await;
    let second = limiter.acquire(Priority::Background).await;
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for (i, priority) in [Priority::Background, Priority::Status, Priority::Create].into_iter().enumerate() {
        let (limiter, order) = (limiter.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(i as u64)).await;
            let place = limiter.acquire(priority).await;
            order.lock().expect("lock").push(priority);
            tokio::time::sleep(Duration::from_millis(10)).await;
            drop(place);
        }));
    }
    // Tokens to spare, but both places held: nobody gets through.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(order.lock().expect("lock").is_empty());
    assert_eq!(limiter.in_flight(), 2);
    drop(first);
    // Handed straight to the create, before the pump or the create's task has run.
    assert_eq!(limiter.in_flight(), 2, "the returned place went on at once");
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(*order.lock().expect("lock"), [Priority::Create], "the place went to the create");
    drop(second);
    for t in tasks {
        t.await.expect("task");
    }
    assert_eq!(*order.lock().expect("lock"), [Priority::Create, Priority::Status, Priority::Background]);
    assert_eq!(limiter.in_flight(), 0);
}

/// The places are the deployment's: a replica with a quarter of the buckets has a quarter of
/// them, one with almost none still has eight, and without a deployment budget each has all.
#[tokio::test(start_paused = true)]
async fn a_replica_has_its_share_of_the_places() {
    use futures::FutureExt;
    let places_free = |limiter: &Limiter| {
        let mut held = Vec::new();
        while let Some(place) = limiter.acquire(Priority::Create).now_or_never() {
            held.push(place);
        }
        held.len()
    };
    let shared = RateBudget { qps: 0.0, burst: 1000.0, deployment_qps: 100_000.0, adaptive: false };
    let limiter = Limiter::with_budget(shared);
    assert_eq!(places_free(&limiter), MAX_IN_FLIGHT);
    limiter.set_share(0.25);
    assert_eq!(places_free(&limiter), MAX_IN_FLIGHT / 4);
    limiter.set_share(1.0 / 64.0);
    assert_eq!(places_free(&limiter), 8);
    let own = RateBudget { deployment_qps: 0.0, ..shared };
    let limiter = Limiter::with_budget(own);
    limiter.set_share(0.25);
    assert_eq!(places_free(&limiter), MAX_IN_FLIGHT);
}
