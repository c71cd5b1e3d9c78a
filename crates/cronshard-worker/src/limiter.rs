//! The replica-wide client rate limiter: one token bucket (QPS and burst) shared by every
//! bucket, served by priority so that due Job creations go first under a herd, at the rate
//! [`crate::aimd`] sets, with at most [`MAX_IN_FLIGHT`] requests out at once.
//!
//! Why a cap on requests out: the server serves what it has queued first come, first served
//! (API Priority and Fairness queues within a priority level). A client that sends its burst
//! at once, or runs above the admitted rate for a while, leaves seconds of status writes and
//! Events queued there, and a due create that this limiter puts first still waits behind
//! them, or gets 429 when the queue is full. A caller holds its [`Place`] until its answer
//! comes, and no token is handed out while every place is taken: so a create waits behind at
//! most that many requests at the server, and everything else waits here, where priority
//! holds. Before a herd, lower-priority work is held back ([`crate::reserve`]) so that the
//! places are free when it comes. Requests that never come here (watches, the watchers'
//! lists, Leases, which have their own priority level on a real server and are the replica's
//! liveness) are not capped.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use crate::aimd::{Aimd, Cut, RateBudget, Signals};
use crate::reserve::Reservations;

/// Requests out at once at most. Enough for the admitted rate at the latencies of a loaded
/// server (1,000 writes/s at 64 ms each; kube-apiserver answers a create in a few to tens
/// of ms), and under a user's 100 concurrent seats in the simulator.
pub const MAX_IN_FLIGHT: usize = 64;
/// Bounds of the pause before a herd: long enough for a fast server's answers to come, short
/// enough that a slow one's backlog does not wait long for a herd it could not help.
const MIN_LEAD: Duration = Duration::from_millis(50);
const MAX_LEAD: Duration = Duration::from_secs(2);
/// The lead is this many times the slowest recent write answer.
const LEAD_MARGIN: f64 = 1.5;
/// Status writes, labels, Events and cleanup hold at most this long of the current rate in
/// places (never fewer than [`MIN_LOW_PLACES`]); creates may take all of them. The server
/// serves its queue in order, so a create that comes while a backlog is being written (a
/// failed create's retry, a run due between herds) waits behind what that backlog has out:
/// 0.1 s of it at the rate, not 64 requests (0.64 s at 100/s). Enough for the backlog's own
/// pace while the server answers within 0.1 s. While the adaptive rate is above what the
/// server admits, that is more than 0.1 s of the server's time: the reservation before a herd
/// (which follows answer times, not the rate) covers the boundaries.
const LOW_PRIORITY_QUEUE: Duration = Duration::from_millis(100);
const MIN_LOW_PLACES: usize = 4;

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
    queues: [VecDeque<oneshot::Sender<Place>>; 3],
    /// Whether a task is handing out tokens to the queues.
    pumping: bool,
    /// The current rate and burst, from `aimd`; `qps <= 0` is unlimited.
    qps: f64,
    burst: f64,
    aimd: Aimd,
    /// Whether a caller had to wait since the last adaptation: the rate held work back.
    demand: bool,
    /// Places held: requests granted and not yet answered.
    in_flight: usize,
    max_in_flight: usize,
    /// The buckets' next herds: lower-priority work waits before them (unless off).
    reservations: Reservations,
    reserving: bool,
    /// The pause under way, if any: until when.
    holding: Option<Instant>,
    /// The slowest write answer of the last adaptation that saw writes.
    answer_time: Option<Duration>,
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

    /// Whether a token is free now.
    fn has_token(&self) -> bool {
        self.qps <= 0.0 || self.tokens >= 1.0
    }

    /// How many places a caller of `priority` may find taken and still get one.
    fn places_for(&self, priority: Priority) -> usize {
        if priority == Priority::Create || self.qps <= 0.0 {
            return self.max_in_flight;
        }
        let places = (self.qps * LOW_PRIORITY_QUEUE.as_secs_f64()).ceil() as usize;
        places.clamp(MIN_LOW_PLACES.min(self.max_in_flight), self.max_in_flight)
    }

    /// Whether a caller of `priority` may go now, past a pause before a herd (`held`).
    fn may_go(&self, priority: Priority, held: bool) -> bool {
        self.has_token() && self.in_flight < self.places_for(priority) && !(held && priority != Priority::Create)
    }

    /// How long before a herd lower-priority work stops: the time what is out takes to be
    /// answered. That is about the slowest recent write answer (the server's queue ahead of
    /// it), with a margin; before any was seen, every place's worth at the current rate. Not
    /// the rate alone: while it grows above what the server admits, the server's queue, not
    /// the rate, says how long the requests out wait there.
    fn lead(&self) -> Duration {
        let lead = match self.answer_time {
            Some(slowest) => slowest.as_secs_f64() * LEAD_MARGIN,
            None if self.qps > 0.0 => self.max_in_flight as f64 / self.qps,
            None => 0.0,
        };
        Duration::from_secs_f64(lead.clamp(MIN_LEAD.as_secs_f64(), MAX_LEAD.as_secs_f64()))
    }

    /// Until when lower-priority work waits: a herd is due within the lead. Once begun, a
    /// pause lasts until its end, even if the lead shrinks meanwhile (the answers get faster
    /// as the server's queue drains, which is the pause working).
    fn held_until(&mut self, now: Instant) -> Option<Instant> {
        if !self.reserving {
            return None;
        }
        if let Some(until) = self.holding.filter(|until| *until > now) {
            return Some(until);
        }
        self.holding = self.reservations.hold_until(now, self.lead());
        self.holding
    }

    /// The most urgent waiter, if it may go now (one less urgent never overtakes it).
    fn next_waiter(&mut self, held: bool) -> Option<oneshot::Sender<Place>> {
        let priority = [Priority::Create, Priority::Status, Priority::Background]
            .into_iter()
            .find(|p| !self.queues[*p as usize].is_empty())?;
        if !self.may_go(priority, held) {
            return None;
        }
        self.queues[priority as usize].pop_front()
    }

    fn take(&mut self) {
        if self.qps > 0.0 {
            self.tokens -= 1.0;
        }
        self.in_flight += 1;
    }
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// A place was given back: the pump may hand out more.
    returned: Notify,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One request's place among those out at once; held until its answer has come (drop it
/// then, and before waiting for another).
#[must_use = "a place is held until the request is answered: bind it for the request's lifetime"]
#[derive(Debug)]
pub struct Place(Option<Arc<Shared>>);

impl Place {
    /// Given back without counting (it was never handed to a caller).
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some(shared) = self.0.take() {
            shared.lock().in_flight -= 1;
            shared.returned.notify_one();
        }
    }
}

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
            max_in_flight: places.max(1),
            reservations: Reservations::default(),
            reserving: true,
            holding: None,
            answer_time: None,
        };
        Limiter { shared: Arc::new(Shared { state: Mutex::new(state), returned: Notify::new() }) }
    }

    /// This replica's share of the buckets changed: so does its share of the deployment rate.
    pub fn set_share(&self, share: f64) {
        let mut s = self.shared.lock();
        s.aimd.set_share(share);
        s.apply();
    }

    /// Adapts the rate to what the server answered since the last call (see [`crate::aimd`]).
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

/// Hands tokens and places to waiters, most urgent first, until nobody waits; before a herd,
/// only to creates.
async fn pump(shared: Arc<Shared>) {
    loop {
        let wake = {
            let mut s = shared.lock();
            s.refill();
            let held = s.held_until(Instant::now());
            while let Some(waiter) = s.next_waiter(held.is_some()) {
                s.take();
                // A waiter that gave up (its future was dropped) costs nothing.
                if let Err(place) = waiter.send(Place(Some(shared.clone()))) {
                    place.disarm();
                    s.in_flight -= 1;
                    if s.qps > 0.0 {
                        s.tokens += 1.0;
                    }
                }
            }
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

#[cfg(test)]
mod tests {
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
        use crate::reserve::{GRACE, HERD_SYNCS};
        // 64 places at 100/s: the lead is 0.64 s.
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
        use crate::reserve::{GRACE, HERD_SYNCS};
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
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(*order.lock().expect("lock"), [Priority::Create], "the place went to the create");
        drop(second);
        for t in tasks {
            t.await.expect("task");
        }
        assert_eq!(*order.lock().expect("lock"), [Priority::Create, Priority::Status, Priority::Background]);
        assert_eq!(limiter.in_flight(), 0);
    }
}
