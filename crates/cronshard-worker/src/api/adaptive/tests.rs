//! The adaptive rate's rules, one test each, with time and the server's answers passed in.

use std::time::Duration;

use tokio::time::Instant;

use super::*;

fn budget(qps: f64, burst: f64, deployment_qps: f64) -> RateBudget {
    RateBudget { qps, burst, deployment_qps, adaptive: true }
}

fn with_share(budget: RateBudget, share: f64) -> (f64, f64) {
    let mut aimd = Aimd::new(budget);
    aimd.set_share(share);
    aimd.rate()
}

fn throttled(n: u64, delivered: u64) -> Signals {
    Signals { throttled: n, writes: delivered, delivered, ..Signals::default() }
}

fn ok(delivered: u64) -> Signals {
    Signals { writes: delivered, delivered, ..Signals::default() }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Three quiet quarter-seconds after `from_ms`, 50 answers each (200/s with the fourth), and
/// no demand, so that no increase blurs a cut.
fn delivered_200_per_s(aimd: &mut Aimd, t0: Instant, from_ms: u64) {
    for i in 1..4 {
        aimd.observe(t0 + ms(from_ms + 250 * i), ok(50), false);
    }
}

#[test]
fn each_replica_starts_at_its_buckets_share_of_the_deployment_budget() {
    assert_eq!(with_share(budget(1000.0, 1000.0, 1000.0), 1.0), (1000.0, 1000.0), "one replica: all of it");
    assert_eq!(with_share(budget(1000.0, 1000.0, 1000.0), 0.5), (500.0, 500.0));
    assert_eq!(with_share(budget(1000.0, 1000.0, 1000.0), 16.0 / 64.0), (250.0, 250.0));
    assert_eq!(with_share(budget(300.0, 300.0, 1000.0), 0.5), (300.0, 300.0), "--qps caps the share");
    assert_eq!(with_share(budget(0.0, 1.0, 1000.0), 0.25), (250.0, 250.0), "no per-replica cap");
    assert_eq!(with_share(budget(1000.0, 1000.0, 1000.0), 0.0), (10.0, 10.0), "owning nothing: 1%");
    assert_eq!(with_share(budget(1000.0, 800.0, 0.0), 0.25), (1000.0, 800.0), "no deployment budget");
    assert_eq!(with_share(budget(0.0, 1.0, 0.0), 0.25), (0.0, 1.0), "unlimited stays unlimited");
}

#[test]
fn a_429_at_least_halves_the_rate_and_its_burst() {
    let t0 = Instant::now();
    let mut aimd = Aimd::new(budget(1000.0, 1000.0, 1000.0));
    aimd.observe(t0, ok(0), false);
    assert_eq!(aimd.observe(t0 + ms(250), throttled(1, 0), true), Some(Cut::Throttled));
    assert_eq!(aimd.rate(), (500.0, 500.0));
}

#[test]
fn one_cut_per_second_however_many_429s_follow() {
    let t0 = Instant::now();
    let mut aimd = Aimd::new(budget(1000.0, 1000.0, 1000.0));
    aimd.observe(t0, throttled(5, 0), true);
    assert_eq!(aimd.rate().0, 500.0);
    for i in 1..4 {
        assert_eq!(aimd.observe(t0 + ms(250 * i), throttled(10, 20), true), None, "answers to the old rate");
    }
    assert_eq!(aimd.rate().0, 500.0);
    assert_eq!(aimd.observe(t0 + ms(1000), throttled(1, 0), true), Some(Cut::Throttled));
    assert_eq!(aimd.rate().0, 250.0);
}

#[test]
fn a_cut_lands_just_under_what_the_server_delivered() {
    let t0 = Instant::now();
    let mut aimd = Aimd::new(budget(1000.0, 1000.0, 1000.0));
    aimd.observe(t0, ok(0), true);
    // The server admits 200 writes per second and rejects the rest.
    delivered_200_per_s(&mut aimd, t0, 0);
    aimd.observe(t0 + ms(1000), throttled(20, 50), true);
    assert!((aimd.rate().0 - 500.0).abs() < 1e-9, "a few 429s: halved");
    delivered_200_per_s(&mut aimd, t0, 1000);
    aimd.observe(t0 + ms(2000), throttled(40, 50), true);
    assert!((aimd.rate().0 - 250.0).abs() < 1e-9, "{:?}", aimd.rate());
    delivered_200_per_s(&mut aimd, t0, 2000);
    aimd.observe(t0 + ms(3000), throttled(10, 50), true);
    assert!((aimd.rate().0 - 180.0).abs() < 1e-9, "90% of the 200/s delivered: {:?}", aimd.rate());
}

#[test]
fn when_most_requests_are_rejected_one_cut_goes_under_what_was_delivered() {
    let t0 = Instant::now();
    let mut aimd = Aimd::new(budget(1000.0, 1000.0, 1000.0));
    aimd.observe(t0, ok(0), false);
    delivered_200_per_s(&mut aimd, t0, 0);
    aimd.observe(t0 + ms(1000), throttled(300, 50), true);
    assert!((aimd.rate().0 - 180.0).abs() < 1e-9, "{:?}", aimd.rate());
}

#[test]
fn writes_that_queue_at_the_server_cut_the_rate_before_any_429() {
    let t0 = Instant::now();
    let mut aimd = Aimd::new(budget(1000.0, 1000.0, 1000.0));
    aimd.observe(t0, ok(0), true);
    let few_slow =
        Signals { writes: 100, slow_writes: 10, slowest_write_ms: 900, delivered: 100, ..Signals::default() };
    assert_eq!(aimd.observe(t0 + ms(250), few_slow, true), None, "a few slow writes are noise");
    let most_slow =
        Signals { writes: 100, slow_writes: 60, slowest_write_ms: 3000, delivered: 100, ..Signals::default() };
    assert_eq!(aimd.observe(t0 + ms(500), most_slow, true), Some(Cut::SlowWrites));
    let after_cut = aimd.rate().0;
    assert!(after_cut < 1000.0);
    // Until the queue that made them slow has drained (3 s), slow answers do not cut again.
    assert_eq!(aimd.observe(t0 + ms(2500), most_slow, true), None);
    assert_eq!(aimd.rate().0, after_cut);
    assert_eq!(aimd.observe(t0 + ms(3500), most_slow, true), Some(Cut::SlowWrites));
}

#[test]
fn slow_writes_while_nothing_waits_for_the_rate_do_not_cut_it_but_429s_do() {
    let t0 = Instant::now();
    let mut aimd = Aimd::new(budget(1000.0, 1000.0, 1000.0));
    aimd.observe(t0, ok(0), false);
    let most_slow =
        Signals { writes: 100, slow_writes: 60, slowest_write_ms: 3000, delivered: 100, ..Signals::default() };
    assert_eq!(aimd.observe(t0 + ms(250), most_slow, false), None, "the rate held nothing back");
    assert_eq!(aimd.rate().0, 1000.0);
    assert_eq!(aimd.observe(t0 + ms(500), throttled(5, 10), false), Some(Cut::Throttled));
}

/// Quarter-seconds from `from_ms` to `to_ms` in which the server delivers all the rate allows
/// (`used` 1.0) or a share of it, with callers waiting for it (`demand`).
fn run_at_rate(aimd: &mut Aimd, t0: Instant, (from_ms, to_ms): (u64, u64), used: f64, demand: bool) {
    for at in (from_ms + 250..=to_ms).step_by(250) {
        let delivered = (aimd.rate().0 * 0.25 * used).round() as u64;
        aimd.observe(t0 + ms(at), ok(delivered), demand);
    }
}

#[test]
fn before_the_server_pushes_back_the_rate_grows_fourfold_a_second_while_used() {
    let t0 = Instant::now();
    let mut aimd = Aimd::new(budget(0.0, 1.0, 1000.0));
    aimd.observe(t0, ok(0), false);
    run_at_rate(&mut aimd, t0, (0, 1000), 1.0, true);
    assert!((aimd.rate().0 - 4000.0).abs() < 1e-6, "{:?}", aimd.rate());
    run_at_rate(&mut aimd, t0, (1000, 1500), 1.0, true);
    assert!((aimd.rate().0 - 8000.0).abs() < 1e-6, "{:?}", aimd.rate());
}

#[test]
fn the_rate_does_not_grow_while_nothing_waits_for_it_or_it_is_not_used() {
    let t0 = Instant::now();
    let mut aimd = Aimd::new(budget(0.0, 1.0, 1000.0));
    aimd.observe(t0, ok(0), false);
    run_at_rate(&mut aimd, t0, (0, 4000), 1.0, false);
    assert_eq!(aimd.rate().0, 1000.0, "idle: a quiet hour does not grow the rate the next herd meets");
    run_at_rate(&mut aimd, t0, (4000, 5000), 0.4, false);
    run_at_rate(&mut aimd, t0, (5000, 9000), 0.4, true);
    assert_eq!(aimd.rate().0, 1000.0, "callers wait for places, not for the rate");
}

#[test]
fn after_a_cut_the_rate_grows_step_by_step_until_30_quiet_seconds_restart_slow_start() {
    let t0 = Instant::now();
    let mut aimd = Aimd::new(budget(0.0, 1.0, 1000.0));
    aimd.observe(t0, throttled(1, 0), true);
    assert_eq!(aimd.rate().0, 500.0);
    run_at_rate(&mut aimd, t0, (0, 2000), 1.0, true);
    assert!((aimd.rate().0 - 550.0).abs() < 1e-6, "2.5% of the starting rate per second: {:?}", aimd.rate());
    run_at_rate(&mut aimd, t0, (2000, 30_000), 1.0, false);
    run_at_rate(&mut aimd, t0, (30_000, 31_000), 1.0, true);
    assert!((aimd.rate().0 - 2200.0).abs() < 1e-6, "slow start again: {:?}", aimd.rate());
}

#[test]
fn the_rate_may_grow_past_the_deployment_budget_up_to_qps() {
    let t0 = Instant::now();
    let mut aimd = Aimd::new(budget(3000.0, 3000.0, 1000.0));
    aimd.observe(t0, ok(0), true);
    run_at_rate(&mut aimd, t0, (0, 500), 1.0, true);
    assert!((aimd.rate().0 - 2000.0).abs() < 1e-6, "{:?}", aimd.rate());
    run_at_rate(&mut aimd, t0, (500, 5000), 1.0, true);
    assert_eq!(aimd.rate(), (3000.0, 3000.0), "never above --qps");
}

#[test]
fn replicas_that_cut_together_keep_their_shares() {
    let t0 = Instant::now();
    let mut small = Aimd::new(budget(1000.0, 1000.0, 1000.0));
    let mut large = Aimd::new(budget(1000.0, 1000.0, 1000.0));
    small.set_share(0.25);
    large.set_share(0.75);
    for (i, signals) in [throttled(1, 0), ok(0), throttled(1, 0), ok(0)].into_iter().enumerate() {
        let at = t0 + ms(1000 * i as u64);
        small.observe(at, signals, true);
        large.observe(at, signals, true);
    }
    assert!((large.rate().0 - 3.0 * small.rate().0).abs() < 1e-9, "{:?} {:?}", small.rate(), large.rate());
}

#[test]
fn the_rate_never_falls_below_a_hundredth_of_the_budget() {
    let t0 = Instant::now();
    let mut aimd = Aimd::new(budget(1000.0, 1000.0, 1000.0));
    for i in 0..20 {
        aimd.observe(t0 + ms(1000 * i), throttled(1, 0), true);
    }
    assert_eq!(aimd.rate().0, 10.0);
}

#[test]
fn a_fixed_rate_ignores_the_server() {
    let t0 = Instant::now();
    let mut aimd = Aimd::new(RateBudget { adaptive: false, ..budget(1000.0, 1000.0, 1000.0) });
    assert_eq!(aimd.observe(t0, throttled(100, 0), true), None);
    aimd.observe(t0 + ms(5000), ok(10), true);
    assert_eq!(aimd.rate(), (1000.0, 1000.0));
}

#[test]
fn the_client_counts_429s_slow_writes_and_deliveries_but_not_watches() {
    let congestion = Congestion::default();
    congestion.record("create", 201, ms(10));
    congestion.record("create", 201, ms(900));
    congestion.record("patch", 429, ms(1));
    congestion.record("list", 200, ms(2000));
    congestion.record("watch", 200, ms(60_000));
    congestion.record("get", 0, ms(10));
    assert_eq!(
        congestion.take(),
        Signals { throttled: 1, writes: 2, slow_writes: 1, slowest_write_ms: 900, delivered: 3 }
    );
    assert_eq!(congestion.take(), Signals::default(), "taken");
}

#[test]
fn after_slow_writes_the_rate_is_what_the_server_delivered_so_it_never_runs_dry() {
    let t0 = Instant::now();
    let mut aimd = Aimd::new(budget(1000.0, 1000.0, 220.0));
    aimd.observe(t0, ok(0), false);
    delivered_200_per_s(&mut aimd, t0, 0);
    let slow = Signals { writes: 50, slow_writes: 50, slowest_write_ms: 700, delivered: 50, ..Signals::default() };
    assert_eq!(aimd.observe(t0 + ms(1000), slow, true), Some(Cut::SlowWrites));
    assert!((aimd.rate().0 - 200.0).abs() < 1e-9, "{:?}", aimd.rate());
}
