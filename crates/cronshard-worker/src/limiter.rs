//! The replica-wide client rate limiter: one token bucket (QPS and burst) shared by every
//! bucket, served by priority so that due Job creations go first under a herd, at the rate
//! [`crate::aimd`] sets.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::aimd::{Aimd, Cut, RateBudget, Signals};

/// What a call is for, most urgent first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    /// Creating a due Job (and the reads that decide it).
    Create = 0,
    /// Status writes and labelling.
    Status = 1,
    /// Events and history cleanup.
    Background = 2,
}

#[derive(Debug)]
struct State {
    tokens: f64,
    refilled: Instant,
    /// Callers waiting for a token, by priority, first come first served.
    queues: [VecDeque<oneshot::Sender<()>>; 3],
    /// Whether a task is handing out tokens to the queues.
    pumping: bool,
    /// The current rate and burst, from `aimd`; `qps <= 0` is unlimited.
    qps: f64,
    burst: f64,
    aimd: Aimd,
    /// Whether a caller had to wait since the last adaptation: the rate held work back.
    demand: bool,
}

impl State {
    fn refill(&mut self) {
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        self.refilled = now;
    }

    /// Takes the rate and burst `aimd` gives now (tokens already saved are kept up to the
    /// new burst).
    fn apply(&mut self) {
        self.refill();
        let (qps, burst) = self.aimd.rate();
        self.qps = qps;
        self.burst = burst.max(1.0);
        self.tokens = self.tokens.min(self.burst);
    }
}

/// A token bucket with priorities. `qps <= 0` means unlimited.
///
/// Waiters sleep on a channel, not a timer: one pump task wakes once per token and hands it
/// to the most urgent waiter, so 10,000 queued Events cost nothing while they wait.
#[derive(Debug)]
pub struct Limiter {
    state: Arc<Mutex<State>>,
}

impl Limiter {
    /// A fixed rate and burst.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self::with_budget(RateBudget { qps, burst: f64::from(burst), deployment_qps: 0.0, adaptive: false })
    }

    /// The rate `budget` gives a replica with all the buckets, until [`Limiter::set_share`]
    /// and [`Limiter::adapt`] change it. Starts with a full burst.
    pub fn with_budget(budget: RateBudget) -> Self {
        let aimd = Aimd::new(budget);
        let (qps, burst) = aimd.rate();
        let burst = burst.max(1.0);
        let state = State {
            tokens: burst,
            refilled: Instant::now(),
            queues: Default::default(),
            pumping: false,
            qps,
            burst,
            aimd,
            demand: false,
        };
        Limiter { state: Arc::new(Mutex::new(state)) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This replica's share of the buckets changed: so does its share of the deployment rate.
    pub fn set_share(&self, share: f64) {
        let mut s = self.lock();
        s.aimd.set_share(share);
        s.apply();
    }

    /// Adapts the rate to what the server answered since the last call (see [`crate::aimd`]).
    pub fn adapt(&self, signals: Signals) -> Option<Cut> {
        let mut s = self.lock();
        let demand = std::mem::take(&mut s.demand) || s.queues.iter().any(|q| !q.is_empty());
        let cut = s.aimd.observe(Instant::now(), signals, demand);
        s.apply();
        cut
    }

    /// The current rate (requests per second; `<= 0` is unlimited).
    pub fn qps(&self) -> f64 {
        self.lock().qps
    }

    /// Waits for a token. A caller only takes one while nobody as urgent is waiting.
    pub async fn acquire(&self, priority: Priority) {
        let p = priority as usize;
        let granted = {
            let mut s = self.lock();
            if s.qps <= 0.0 {
                return;
            }
            s.refill();
            if s.tokens >= 1.0 && s.queues[..=p].iter().all(VecDeque::is_empty) {
                s.tokens -= 1.0;
                return;
            }
            let (tx, rx) = oneshot::channel();
            s.queues[p].push_back(tx);
            s.demand = true;
            if !s.pumping {
                s.pumping = true;
                tokio::spawn(pump(self.state.clone()));
            }
            rx
        };
        // The pump only drops a sender when it hands out the token.
        let _ = granted.await;
    }
}

/// Hands tokens to waiters, most urgent first, until nobody waits.
async fn pump(state: Arc<Mutex<State>>) {
    loop {
        let wait = {
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            s.refill();
            // Turned unlimited while callers waited: let them all go.
            let unlimited = s.qps <= 0.0;
            while s.tokens >= 1.0 || unlimited {
                let Some(waiter) = s.queues.iter_mut().find_map(VecDeque::pop_front) else { break };
                // A waiter that gave up (its future was dropped) costs no token.
                if waiter.send(()).is_ok() && !unlimited {
                    s.tokens -= 1.0;
                }
            }
            if s.queues.iter().all(VecDeque::is_empty) {
                s.pumping = false;
                return;
            }
            Duration::from_secs_f64(((1.0 - s.tokens).max(0.0) / s.qps).max(1e-4))
        };
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn many_waiters_are_served_at_the_rate_in_priority_order() {
        let limiter = Arc::new(Limiter::new(100.0, 1));
        limiter.acquire(Priority::Create).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..200 {
            let priority = if i % 2 == 0 { Priority::Background } else { Priority::Create };
            let (limiter, order) = (limiter.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                limiter.acquire(priority).await;
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

    #[tokio::test(start_paused = true)]
    async fn burst_then_rate() {
        let limiter = Limiter::new(10.0, 5);
        let start = Instant::now();
        for _ in 0..15 {
            limiter.acquire(Priority::Create).await;
        }
        // 5 at once, then 10 more at 10/s.
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(990) && elapsed <= Duration::from_millis(1100), "{elapsed:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_rate_applies_to_waiting_callers() {
        let budget = RateBudget { qps: 100.0, burst: 1.0, deployment_qps: 100.0, adaptive: false };
        let limiter = Arc::new(Limiter::with_budget(budget));
        limiter.acquire(Priority::Create).await;
        let mut tasks = Vec::new();
        for _ in 0..100 {
            let limiter = limiter.clone();
            tasks.push(tokio::spawn(async move { limiter.acquire(Priority::Create).await }));
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
        limiter.acquire(Priority::Background).await;
        let order = std::sync::Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (i, priority) in [Priority::Background, Priority::Background, Priority::Create].into_iter().enumerate() {
            let (limiter, order) = (limiter.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(i as u64)).await;
                limiter.acquire(priority).await;
                order.lock().expect("lock").push(priority);
            }));
        }
        for t in tasks {
            t.await.expect("task");
        }
        assert_eq!(order.lock().expect("lock")[0], Priority::Create);
    }
}
