//! The limiter with the adaptive rate against a model of an API server that admits a fixed
//! write rate, queues up to five seconds of writes and answers 429 beyond (as cronshard-sim
//! and kube-apiserver's priority and fairness do), in paused time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cronshard_worker::api::adaptive::{Congestion, RateBudget};
use cronshard_worker::api::limiter::{Limiter, Priority};
use tokio::time::Instant;

/// The server's queue: the next free admission slot.
struct Server {
    admitted_per_s: f64,
    max_wait: Duration,
    next_slot: Mutex<Instant>,
}

impl Server {
    fn new(admitted_per_s: f64) -> Arc<Self> {
        Arc::new(Server { admitted_per_s, max_wait: Duration::from_secs(5), next_slot: Mutex::new(Instant::now()) })
    }

    /// One write: answered when its slot comes, or 429 at once if that is too far.
    async fn write(&self) -> u16 {
        let now = Instant::now();
        let slot = {
            let mut next = self.next_slot.lock().expect("lock");
            let slot = (*next).max(now);
            if slot.duration_since(now) > self.max_wait {
                return 429;
            }
            *next = slot + Duration::from_secs_f64(1.0 / self.admitted_per_s);
            slot
        };
        tokio::time::sleep_until(slot + Duration::from_millis(2)).await;
        201
    }
}

struct Herd {
    drained: Duration,
    throttled: u64,
}

/// `jobs` creates due at once; each retries a 429 after a second (Retry-After), through the
/// limiter again. The rate adapts every 250 ms unless `adaptive` is off; `qps` caps it (0: no
/// cap, `cronshard run`'s default).
async fn herd(jobs: usize, admitted_per_s: f64, (adaptive, qps): (bool, f64)) -> Herd {
    let server = Server::new(admitted_per_s);
    let budget = RateBudget { qps, burst: 1000.0, deployment_qps: 1000.0, adaptive };
    let limiter = Arc::new(Limiter::with_budget(budget));
    let congestion = Congestion::default();
    let adapt = {
        let (limiter, congestion) = (limiter.clone(), congestion.clone());
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_millis(250));
            loop {
                every.tick().await;
                limiter.adapt(congestion.take());
            }
        })
    };
    let throttled = Arc::new(Mutex::new(0_u64));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..jobs {
        let (limiter, congestion, server, throttled) =
            (limiter.clone(), congestion.clone(), server.clone(), throttled.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let place = limiter.acquire(Priority::Create).await;
                let sent = Instant::now();
                let code = server.write().await;
                drop(place);
                congestion.record("create", code, sent.elapsed());
                if code != 429 {
                    return;
                }
                *throttled.lock().expect("lock") += 1;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    let drained = start.elapsed();
    adapt.abort();
    let throttled = *throttled.lock().expect("lock");
    Herd { drained, throttled }
}

#[tokio::test(start_paused = true)]
async fn a_herd_against_a_server_admitting_a_fifth_of_the_budget_drains_at_its_bound() {
    let fixed = herd(3000, 200.0, (false, 1000.0)).await;
    let adaptive = herd(3000, 200.0, (true, 0.0)).await;
    let bound = 3000.0 / 200.0;
    let ratio = adaptive.drained.as_secs_f64() / bound;
    let summary = format!(
        "fixed: {:.1} s, {} 429s; adaptive: {:.1} s ({ratio:.2} x bound), {} 429s",
        fixed.drained.as_secs_f64(),
        fixed.throttled,
        adaptive.drained.as_secs_f64(),
        adaptive.throttled
    );
    assert!(ratio <= 1.1, "{summary}");
    assert_eq!(adaptive.throttled, 0, "with the limiter's places out the server never has to reject: {summary}");
}

#[tokio::test(start_paused = true)]
async fn a_server_with_room_to_spare_keeps_the_full_budget_under_a_cap() {
    let adaptive = herd(5000, 2000.0, (true, 1000.0)).await;
    assert_eq!(adaptive.throttled, 0);
    // 1,000 at once (the burst), then 4,000 at 1,000/s.
    let drained = adaptive.drained.as_secs_f64();
    assert!((3.9..=4.2).contains(&drained), "{drained:.2} s");
}

#[tokio::test(start_paused = true)]
async fn without_a_cap_a_herd_finds_a_server_three_times_the_starting_rate() {
    let adaptive = herd(10_000, 3000.0, (true, 0.0)).await;
    let bound = 10_000.0 / 3000.0;
    let ratio = adaptive.drained.as_secs_f64() / bound;
    let summary = format!("{:.2} s ({ratio:.2} x bound), {} 429s", adaptive.drained.as_secs_f64(), adaptive.throttled);
    assert!(ratio <= 1.1, "{summary}");
    assert_eq!(adaptive.throttled, 0, "{summary}");
}
