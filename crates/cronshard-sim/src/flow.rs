//! Flow control in the spirit of API Priority and Fairness: per-user seats, a server-wide
//! admitted write rate with a bounded queue, and 429 + Retry-After beyond them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::error::{ApiError, Result};

/// Limits; zero means unlimited.
#[derive(Clone, Debug)]
pub struct FlowConfig {
    pub seats_per_user: usize,
    pub admitted_writes_per_s: f64,
    /// How long a write may wait in the queue for its turn before it is rejected.
    pub max_queue_wait: Duration,
}

impl Default for FlowConfig {
    fn default() -> Self {
        FlowConfig { seats_per_user: 100, admitted_writes_per_s: 1000.0, max_queue_wait: Duration::from_secs(5) }
    }
}

#[derive(Debug)]
struct WriteBucket {
    /// When the next write may start; writes reserve slots 1/rate apart.
    next_slot: Instant,
}

#[derive(Debug)]
pub struct Flow {
    config: FlowConfig,
    seats: Mutex<HashMap<String, Arc<Semaphore>>>,
    writes: Mutex<WriteBucket>,
}

/// Held while a request is served.
#[derive(Debug)]
pub struct Seat(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

impl Flow {
    pub fn new(config: FlowConfig) -> Self {
        // Start with a full second of burst, like a full token bucket.
        let now = Instant::now();
        let next_slot = now.checked_sub(Duration::from_secs(1)).unwrap_or(now);
        Flow { config, seats: Mutex::default(), writes: Mutex::new(WriteBucket { next_slot }) }
    }

    pub fn config(&self) -> &FlowConfig {
        &self.config
    }

    /// Admits a request: writes wait for their slot in the admitted rate (429 if the wait
    /// would exceed the queue limit, or at `deadline` if their slot comes after it), then
    /// every request takes one of its user's seats (429 if none is free). Watches take no
    /// seat once started, so callers drop it.
    pub async fn admit(&self, user: &str, is_write: bool, deadline: Option<Instant>) -> Result<Seat> {
        if is_write && self.config.admitted_writes_per_s > 0.0 {
            let interval = Duration::from_secs_f64(1.0 / self.config.admitted_writes_per_s);
            let start = {
                let mut bucket = self.writes.lock().unwrap_or_else(|e| e.into_inner());
                let now = Instant::now();
                // One second of burst: slots in the past up to one second are usable now.
                let earliest = bucket.next_slot.max(now.checked_sub(Duration::from_secs(1)).unwrap_or(now));
                if earliest.saturating_duration_since(now) > self.config.max_queue_wait {
                    let retry = earliest.saturating_duration_since(now).as_secs().max(1);
                    return Err(ApiError::TooManyRequests { retry_after_seconds: retry });
                }
                match deadline {
                    // Its turn would come too late: it waits in the queue until its deadline
                    // and is rejected then (priority and fairness's "time-out"); the slot
                    // stays free for the writes behind it.
                    Some(deadline) if earliest > deadline => Err(deadline),
                    _ => {
                        bucket.next_slot = earliest + interval;
                        Ok(earliest)
                    }
                }
            };
            match start {
                Ok(start) => tokio::time::sleep_until(start).await,
                Err(deadline) => {
                    tokio::time::sleep_until(deadline).await;
                    return Err(ApiError::TooManyRequests { retry_after_seconds: 1 });
                }
            }
        }
        if self.config.seats_per_user == 0 {
            return Ok(Seat(None));
        }
        let semaphore = {
            let mut seats = self.seats.lock().unwrap_or_else(|e| e.into_inner());
            seats.entry(user.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(self.config.seats_per_user))).clone()
        };
        semaphore
            .try_acquire_owned()
            .map(|p| Seat(Some(p)))
            .map_err(|_| ApiError::TooManyRequests { retry_after_seconds: 1 })
    }
}
