//! The replica-wide client rate limiter: one token bucket (QPS and burst) shared by every
//! bucket, served by priority so that due Job creations go first under a herd.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

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
    /// Callers waiting, by priority.
    waiting: [usize; 3],
}

/// A token bucket with priorities. `qps <= 0` means unlimited.
#[derive(Debug)]
pub struct Limiter {
    qps: f64,
    burst: f64,
    state: Mutex<State>,
}

impl Limiter {
    pub fn new(qps: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Limiter { qps, burst, state: Mutex::new(State { tokens: burst, refilled: Instant::now(), waiting: [0; 3] }) }
    }

    /// Waits for a token. A caller only takes one while nobody more urgent is waiting.
    pub async fn acquire(&self, priority: Priority) {
        if self.qps <= 0.0 {
            return;
        }
        let p = priority as usize;
        let mut registered = false;
        loop {
            let wait = {
                let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
                let now = Instant::now();
                let elapsed = now.saturating_duration_since(s.refilled).as_secs_f64();
                s.tokens = (s.tokens + elapsed * self.qps).min(self.burst);
                s.refilled = now;
                let more_urgent_waiting = s.waiting[..p].iter().any(|n| *n > 0);
                if s.tokens >= 1.0 && !more_urgent_waiting {
                    s.tokens -= 1.0;
                    if registered {
                        s.waiting[p] -= 1;
                    }
                    return;
                }
                if !registered {
                    s.waiting[p] += 1;
                    registered = true;
                }
                let missing = (1.0 - s.tokens).max(0.0);
                Duration::from_secs_f64(missing / self.qps).max(Duration::from_millis(1))
            };
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
