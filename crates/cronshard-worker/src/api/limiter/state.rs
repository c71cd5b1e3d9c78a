//! The limiter's state: tokens, places and the queues of callers waiting for them, by
//! priority, and the pause before a herd.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use crate::api::adaptive::Aimd;
use crate::api::reserve::{HERD_SYNCS, Reservations};

/// Requests the deployment has out at once at most, shared between the replicas as the
/// rate is: each takes its share of the buckets' worth of places (never fewer than
/// `MIN_PLACES`). Enough for a loaded kube-apiserver's best rate: measured on two cores, a
/// replica's place spends about 0.6 of its time at the server (the rest in the replica's own
/// turnaround), and the server served the most creates per second with 50 to 80 requests at
/// it and fewer with 140 (four replicas of 64 places each). Under a user's 100 concurrent
/// seats in the simulator.
pub const MAX_IN_FLIGHT: usize = 96;
/// The fewest places a replica keeps, whatever its share: a replica with one bucket of many
/// still lists, labels and takes buckets over.
pub(super) const MIN_PLACES: usize = 8;
/// Bounds of the pause before a herd: long enough for a fast server's answers to come, short
/// enough that a slow one's backlog does not wait long for a herd it could not help.
pub(super) const MIN_LEAD: Duration = Duration::from_millis(50);
pub(super) const MAX_LEAD: Duration = Duration::from_secs(2);
/// The lead is this many times the slowest recent write answer.
pub(super) const LEAD_MARGIN: f64 = 1.5;
/// Status writes, labels, Events and cleanup hold at most this long of the current rate in
/// places (never fewer than [`MIN_LOW_PLACES`]); creates may take all of them. The server
/// serves its queue in order, so a create that comes while a backlog is being written (a
/// failed create's retry, a run due between herds) waits behind what that backlog has out:
/// 0.1 s of it at the rate, not 64 requests (0.64 s at 100/s). Enough for the backlog's own
/// pace while the server answers within 0.1 s. While the adaptive rate is above what the
/// server admits, that is more than 0.1 s of the server's time: the reservation before a herd
/// (which follows answer times, not the rate) covers the boundaries.
pub(super) const LOW_PRIORITY_QUEUE: Duration = Duration::from_millis(100);
pub(super) const MIN_LOW_PLACES: usize = 4;

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

// A herd is a third of the places: fewer creates than that gain less than a pause costs.
const _: () = assert!(HERD_SYNCS * 3 == MAX_IN_FLIGHT);

#[derive(Debug)]
pub(super) struct State {
    pub(super) tokens: f64,
    pub(super) refilled: Instant,
    /// Callers waiting for a token, by priority, first come first served.
    pub(super) queues: [VecDeque<oneshot::Sender<Place>>; 3],
    /// Whether a task is handing out tokens to the queues.
    pub(super) pumping: bool,
    /// The current rate and burst, from `aimd`; `qps <= 0` is unlimited.
    pub(super) qps: f64,
    pub(super) burst: f64,
    pub(super) aimd: Aimd,
    /// Whether a caller had to wait since the last adaptation: the rate held work back.
    pub(super) demand: bool,
    /// Places held: requests granted and not yet answered.
    pub(super) in_flight: usize,
    /// The places of a replica with every bucket.
    pub(super) places: usize,
    /// This replica's share of them now.
    pub(super) max_in_flight: usize,
    /// The buckets' next herds: lower-priority work waits before them (unless off).
    pub(super) reservations: Reservations,
    pub(super) reserving: bool,
    /// The pause under way, if any: until when.
    pub(super) holding: Option<Instant>,
    /// The slowest write answer of the last adaptation that saw writes.
    pub(super) answer_time: Option<Duration>,
}

impl State {
    pub(super) fn refill(&mut self) {
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        self.refilled = now;
    }

    /// Takes the rate and burst `aimd` gives now (tokens already saved are kept up to the
    /// new burst), and the share of the places.
    pub(super) fn apply(&mut self) {
        let mine = (self.places as f64 * self.aimd.effective_share()).ceil() as usize;
        self.max_in_flight = mine.clamp(MIN_PLACES.min(self.places), self.places);
        self.refill();
        let (qps, burst) = self.aimd.rate();
        self.qps = qps;
        self.burst = burst.max(1.0);
        self.tokens = self.tokens.min(self.burst);
    }

    /// Whether a token is free now.
    pub(super) fn has_token(&self) -> bool {
        self.qps <= 0.0 || self.tokens >= 1.0
    }

    /// How many places a caller of `priority` may find taken and still get one.
    pub(super) fn places_for(&self, priority: Priority) -> usize {
        if priority == Priority::Create || self.qps <= 0.0 {
            return self.max_in_flight;
        }
        let places = (self.qps * LOW_PRIORITY_QUEUE.as_secs_f64()).ceil() as usize;
        places.clamp(MIN_LOW_PLACES.min(self.max_in_flight), self.max_in_flight)
    }

    /// Whether a caller of `priority` may go now, past a pause before a herd (`held`).
    pub(super) fn may_go(&self, priority: Priority, held: bool) -> bool {
        self.has_token() && self.in_flight < self.places_for(priority) && !(held && priority != Priority::Create)
    }

    /// How long before a herd lower-priority work stops: the time what is out takes to be
    /// answered. That is about the slowest recent write answer (the server's queue ahead of
    /// it), with a margin; before any was seen, every place's worth at the current rate. Not
    /// the rate alone: while it grows above what the server admits, the server's queue, not
    /// the rate, says how long the requests out wait there.
    pub(super) fn lead(&self) -> Duration {
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
    pub(super) fn held_until(&mut self, now: Instant) -> Option<Instant> {
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
    pub(super) fn next_waiter(&mut self, held: bool) -> Option<oneshot::Sender<Place>> {
        let priority = [Priority::Create, Priority::Status, Priority::Background]
            .into_iter()
            .find(|p| !self.queues[*p as usize].is_empty())?;
        if !self.may_go(priority, held) {
            return None;
        }
        self.queues[priority as usize].pop_front()
    }

    /// Gives tokens and places to the waiters that may go now, most urgent first; returns
    /// until when lower-priority work waits for a herd, if it does.
    pub(super) fn hand_out(&mut self, shared: &Arc<Shared>) -> Option<Instant> {
        self.refill();
        let held = self.held_until(Instant::now());
        while let Some(waiter) = self.next_waiter(held.is_some()) {
            self.take();
            // A waiter that gave up (its future was dropped) costs nothing.
            if let Err(place) = waiter.send(Place(Some(shared.clone()))) {
                place.disarm();
                self.in_flight -= 1;
                if self.qps > 0.0 {
                    self.tokens += 1.0;
                }
            }
        }
        held
    }

    pub(super) fn take(&mut self) {
        if self.qps > 0.0 {
            self.tokens -= 1.0;
        }
        self.in_flight += 1;
    }
}

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    /// A place was given back: the pump may hand out more.
    pub(super) returned: Notify,
}

impl Shared {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One request's place among those out at once; held until its answer has come (drop it
/// then, and before waiting for another).
#[must_use = "a place is held until the request is answered: bind it for the request's lifetime"]
#[derive(Debug)]
pub struct Place(pub(super) Option<Arc<Shared>>);

impl Place {
    /// Given back without counting (it was never handed to a caller).
    pub(super) fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Place {
    /// The place goes straight to the next waiter that may have it, so that while places are
    /// what requests wait for, the next one is sent without a wake-up of the pump between
    /// (on a busy machine each wake-up is a turn of the scheduler); the pump still hears of
    /// it, for waiters that wait for tokens or a pause.
    fn drop(&mut self) {
        if let Some(shared) = self.0.take() {
            let mut s = shared.lock();
            s.in_flight -= 1;
            s.hand_out(&shared);
            drop(s);
            shared.returned.notify_one();
        }
    }
}
