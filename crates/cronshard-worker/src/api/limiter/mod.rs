//! The replica-wide client rate limiter: one token bucket (QPS and burst) shared by every
//! bucket, served by priority so that due Job creations go first under a herd, at the rate
//! [`crate::api::adaptive`] sets, with at most its share of [`MAX_IN_FLIGHT`] requests out at once.
//!
//! Why a cap on requests out: the server serves what it has queued first come, first served
//! (API Priority and Fairness queues within a priority level). A client that sends its burst
//! at once, or runs above the admitted rate for a while, leaves seconds of status writes and
//! Events queued there, and a due create that this limiter puts first still waits behind
//! them, or gets 429 when the queue is full. A caller holds its [`Place`] until its answer
//! comes, and no token is handed out while every place is taken: so a create waits behind at
//! most that many requests at the server, and everything else waits here, where priority
//! holds. Before a herd, lower-priority work is held back ([`crate::api::reserve`]) so that the
//! places are free when it comes. Requests that never come here (watches, the watchers'
//! lists, Leases, which have their own priority level on a real server and are the replica's
//! liveness) are not capped.

mod state;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use crate::api::adaptive::{Aimd, Cut, RateBudget, Signals};
use crate::api::reserve::Reservations;
use crate::metrics::{Metrics, ReasonLabels};

pub use self::state::{MAX_IN_FLIGHT, Place, Priority};
use self::state::{MAX_LEAD, Shared, State};

/// A token bucket with priorities and a cap on places. `qps <= 0` means an unlimited rate
/// (the places still cap what is out).
///
/// Waiters sleep on a channel, not a timer: one pump task wakes once per token (or when a
/// place comes back) and hands it to the most urgent waiter, so 10,000 queued Events cost
/// nothing while they wait.
#[derive(Debug)]
pub struct Limiter {
    shared: Arc<Shared>,
}

impl Limiter {
    /// A fixed rate and burst.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self::with_budget(RateBudget { qps, burst: f64::from(burst), deployment_qps: 0.0, adaptive: false })
    }

    /// The rate `budget` gives a replica with all the buckets, until [`Limiter::set_share`]
    /// and [`Limiter::adapt`] change it. Starts with a full burst.
    pub fn with_budget(budget: RateBudget) -> Self {
        Self::with_places(budget, MAX_IN_FLIGHT)
    }

    /// As [`Limiter::with_budget`], with `places` requests out at once at most.
    pub fn with_places(budget: RateBudget, places: usize) -> Self {
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
            in_flight: 0,
            places: places.max(1),
            max_in_flight: places.max(1),
            reservations: Reservations::default(),
            reserving: true,
            holding: None,
            answer_time: None,
        };
        Limiter { shared: Arc::new(Shared { state: Mutex::new(state), returned: Notify::new() }) }
    }

    /// This replica's share of the buckets changed: so does its share of the deployment rate
    /// and of its places.
    pub fn set_share(&self, share: f64) {
        let mut s = self.shared.lock();
        s.aimd.set_share(share);
        s.apply();
    }

    /// Adapts the rate to what the server answered since the last call (see [`crate::api::adaptive`]).
    pub fn adapt(&self, signals: Signals) -> Option<Cut> {
        let mut s = self.shared.lock();
        if signals.writes > 0 {
            s.answer_time = Some(Duration::from_millis(signals.slowest_write_ms));
        }
        let demand = std::mem::take(&mut s.demand) || s.queues.iter().any(|q| !q.is_empty());
        let cut = s.aimd.observe(Instant::now(), signals, demand);
        s.apply();
        cut
    }

    /// Whether lower-priority work waits before a herd (on by default).
    pub fn reserve_herds(&self, on: bool) {
        let mut s = self.shared.lock();
        s.reserving = on;
        s.holding = None;
        drop(s);
        self.shared.returned.notify_one();
    }

    /// `bucket`'s next due instant and the syncs due then (`None`: nothing, or it stopped).
    pub fn reserve(&self, bucket: u32, next: Option<(Instant, usize)>) {
        let mut s = self.shared.lock();
        s.reservations.set(bucket, next);
        // A pause for a herd no bucket reports any more ends.
        if s.reservations.hold_until(Instant::now(), MAX_LEAD).is_none() {
            s.holding = None;
        }
        drop(s);
        // The pump may be waiting for a pause that no longer applies, or is now longer.
        self.shared.returned.notify_one();
    }

    /// The current rate (requests per second; `<= 0` is unlimited).
    pub fn qps(&self) -> f64 {
        self.shared.lock().qps
    }

    /// Places held now.
    pub fn in_flight(&self) -> usize {
        self.shared.lock().in_flight
    }

    /// Waits for a token and a place. A caller only takes one while nobody as urgent is
    /// waiting. Hold the place until the request's answer has come.
    pub async fn acquire(&self, priority: Priority) -> Place {
        let p = priority as usize;
        let granted = {
            let mut s = self.shared.lock();
            s.refill();
            let held = priority != Priority::Create && s.held_until(Instant::now()).is_some();
            if s.may_go(priority, held) && s.queues[..=p].iter().all(VecDeque::is_empty) {
                s.take();
                return Place(Some(self.shared.clone()));
            }
            let (tx, rx) = oneshot::channel();
            s.queues[p].push_back(tx);
            s.demand = true;
            if !s.pumping {
                s.pumping = true;
                tokio::spawn(pump(self.shared.clone()));
            } else {
                // A create may go now although the pump waits out a pause.
                self.shared.returned.notify_one();
            }
            rx
        };
        // The pump only drops a sender when it hands out a place.
        granted.await.unwrap_or(Place(None))
    }
}

/// How often the client rate adapts to the server's answers: often enough that a herd's
/// first second of 429s is also its last.
pub const ADAPT_EVERY: Duration = Duration::from_millis(250);

/// Adapts `limiter`'s rate every [`ADAPT_EVERY`] to what the server answered (counted by
/// the client in `metrics`), for as long as it is polled; the rate and its cuts go to
/// `metrics`, and a move by a fifth to the log (a sawtooth around the server's rate stays
/// quiet).
pub async fn keep_adapting(limiter: &Limiter, metrics: &Metrics) {
    let mut adapt = tokio::time::interval(ADAPT_EVERY);
    adapt.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut logged_rate = limiter.qps();
    loop {
        metrics.client_rate.set(limiter.qps());
        adapt.tick().await;
        if let Some(cut) = limiter.adapt(metrics.api.congestion.take()) {
            metrics.rate_cuts.get_or_create(&ReasonLabels { reason: cut.metric_label().to_owned() }).inc();
        }
        let qps = limiter.qps();
        if (qps - logged_rate).abs() > 0.2 * logged_rate.max(1.0) {
            tracing::info!(qps, "client rate: this replica's share of the budget, adapted to the server");
            logged_rate = qps;
        }
    }
}

/// Hands tokens and places to waiters, most urgent first, until nobody waits; before a herd,
/// only to creates.
async fn pump(shared: Arc<Shared>) {
    loop {
        let wake = {
            let mut s = shared.lock();
            let held = s.hand_out(&shared);
            if s.queues.iter().all(VecDeque::is_empty) {
                s.pumping = false;
                return;
            }
            if !s.has_token() {
                Some(Instant::now() + Duration::from_secs_f64(((1.0 - s.tokens) / s.qps).max(1e-4)))
            } else {
                // The places the most urgent waiter may take are taken (a place given back
                // wakes us), or it waits out a pause before a herd.
                held
            }
        };
        // A place given back, a new waiter or a changed reservation wake us early.
        match wake {
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = shared.returned.notified() => {}
                }
            }
            None => shared.returned.notified().await,
        }
    }
}
