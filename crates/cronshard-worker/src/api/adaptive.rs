//! The adaptive client rate: cut when the API server pushes back, raised while the budget is
//! what holds work back (AIMD). Signals and time are passed in; the limiter applies the rate.
//!
//! Why: users do not know their control plane's admitted write rate. A budget above it only
//! fills the server's queue (where a due create waits behind status writes, and the limiter's
//! priorities no longer help) and then earns 429s, whose retries back off for seconds. A
//! budget below it drains herds slower than the server could. So the replica starts from its
//! share of `--deployment-qps` and finds the rate the server admits.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// A write answered slower than this waited in the server's queue: the server is saturated
/// even before it answers 429 (kube-apiserver's priority and fairness queues, then rejects).
/// Short enough that a due create never waits long behind queued writes; long enough that a
/// healthy server's writes (milliseconds to tens of milliseconds) never count.
pub const SLOW_WRITE: Duration = Duration::from_millis(500);
/// At most one cut per this long: answers to requests sent before a cut still show the old
/// rate's overload. After a cut for slow writes the wait is at least the slowest write seen:
/// until the server's queue has drained, every answer is slow, whatever the rate now.
const CUT_COOLDOWN: Duration = Duration::from_secs(1);
/// A cut halves the rate, unless the server delivered more than that in the last second:
/// then the rate drops to what it delivered, which under overload is what it admits. After
/// 429s (the server's queue is full) it drops to 90% of that, so that the queue drains;
/// after slow writes to all of it, so that the queue stays as short as it is and the server
/// never runs dry while a herd waits. When the server rejected most of what was sent, halving
/// is not enough, and the cut goes straight to 90%: one cut from 1,000/s to a server that
/// admits 200/s lands at 180/s instead of taking three halvings of 429s.
const CUT_FACTOR: f64 = 0.5;
const THROTTLED_FACTOR: f64 = 0.9;
/// "Most rejected" needs this many 429s in the window: a lone 429 in a quiet second says
/// nothing about the rate the server admits.
const MOST_REJECTED_MIN: u64 = 20;
/// The window over which delivered answers are counted.
const DELIVERED_WINDOW: Duration = Duration::from_secs(1);
/// Additive increase per second, as a share of the starting deployment rate: after a cut of
/// 10% at 1,000/s the rate is back in 4 s.
const INCREASE_PER_S: f64 = 0.025;
/// Until the server first pushes back, and again once it has not for this long, the rate
/// grows by [`SLOW_START_GROWTH_PER_S`] a second instead (slow start, as TCP's): a server that
/// admits three times the starting rate is found within a second, not after 80 s of additive
/// steps, and one that pushed back during a burst of other clients' writes is probed afresh
/// before the next herd.
const SLOW_START_AFTER: Duration = Duration::from_secs(30);
/// Slow start's growth: fourfold a second (doubling every half second), so that a herd that
/// starts at 1,000/s against a server admitting 3,000/s has the server's rate within 0.8 s and
/// drains within 10% of what the server allows.
const SLOW_START_GROWTH_PER_S: f64 = 4.0;
/// The rate grows only while the server delivered at least this share of it: a rate the
/// replica does not use says nothing about the server (callers may wait for a place, not for
/// the rate), and without a `--qps` cap nothing else stops it from growing (TCP's
/// "congestion window validation").
const USED_TO_GROW: f64 = 0.5;
/// The rate never falls below this share of the starting rate, so that listing, labelling
/// and renewals go on against a server that throttles everything.
const FLOOR: f64 = 0.01;

/// The flags that set the client budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateBudget {
    /// `--qps`: this replica's cap (0 = none).
    pub qps: f64,
    /// `--burst`.
    pub burst: f64,
    /// `--deployment-qps`: where the whole deployment's rate starts (0 = none: every replica
    /// starts at `--qps`).
    pub deployment_qps: f64,
    /// Adapt to the server's answers (else the rate stays the share of the budget).
    pub adaptive: bool,
}

/// Why the rate was cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum Cut {
    /// The server answered 429.
    Throttled,
    /// Half or more of the writes took longer than [`SLOW_WRITE`].
    SlowWrites,
}

impl Cut {
    /// Every label, so dashboards see every series from the start.
    pub const LABELS: &'static [&'static str] = <Self as strum::VariantNames>::VARIANTS;

    /// The `reason` label of `cronshard_client_rate_cuts_total`: the variant's name in snake case.
    pub fn metric_label(self) -> &'static str {
        self.into()
    }
}

/// What the server answered since the last look.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Signals {
    /// 429 answers (retries included).
    pub throttled: u64,
    /// Write answers other than 429.
    pub writes: u64,
    /// Of those, the ones slower than [`SLOW_WRITE`].
    pub slow_writes: u64,
    /// The slowest of those, in milliseconds.
    pub slowest_write_ms: u64,
    /// Answers other than 429 and watches: what the server delivered.
    pub delivered: u64,
}

impl Signals {
    fn congestion(&self) -> Option<Cut> {
        if self.throttled > 0 {
            Some(Cut::Throttled)
        } else if self.slow_writes > 0 && 2 * self.slow_writes >= self.writes {
            Some(Cut::SlowWrites)
        } else {
            None
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    throttled: AtomicU64,
    writes: AtomicU64,
    slow_writes: AtomicU64,
    slowest_write_ms: AtomicU64,
    delivered: AtomicU64,
}

/// Counts the client's answers for the rate; the client records, the limiter takes.
#[derive(Clone, Debug, Default)]
pub struct Congestion(Arc<Counts>);

impl Congestion {
    /// One answer (`code` 0: no answer) to a request of `verb` that took `latency`.
    pub fn record(&self, verb: &str, code: u16, latency: Duration) {
        let c = &self.0;
        if code == 429 {
            c.throttled.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if verb == "watch" || code == 0 {
            return;
        }
        c.delivered.fetch_add(1, Ordering::Relaxed);
        if matches!(verb, "create" | "update" | "patch" | "delete") {
            c.writes.fetch_add(1, Ordering::Relaxed);
            if latency > SLOW_WRITE {
                c.slow_writes.fetch_add(1, Ordering::Relaxed);
            }
            let ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
            c.slowest_write_ms.fetch_max(ms, Ordering::Relaxed);
        }
    }

    /// The answers since the last call.
    pub fn take(&self) -> Signals {
        let c = &self.0;
        Signals {
            throttled: c.throttled.swap(0, Ordering::Relaxed),
            writes: c.writes.swap(0, Ordering::Relaxed),
            slow_writes: c.slow_writes.swap(0, Ordering::Relaxed),
            slowest_write_ms: c.slowest_write_ms.swap(0, Ordering::Relaxed),
            delivered: c.delivered.swap(0, Ordering::Relaxed),
        }
    }
}

/// The replica's rate: a deployment-wide rate, of which this replica takes its share of the
/// buckets (so replicas that cut together keep their proportions), capped at `--qps`.
#[derive(Debug)]
pub struct Aimd {
    budget: RateBudget,
    /// The deployment-wide rate this replica believes the server admits.
    deployment: f64,
    share: f64,
    /// No cut before this: the answers to the rate before the last cut are still coming.
    hold_until: Option<Instant>,
    /// The last cut, which ends slow start for [`SLOW_START_AFTER`].
    last_cut: Option<Instant>,
    last_observed: Option<Instant>,
    /// (start of an observation, answers delivered in it, 429s in it), over the last second.
    recent: VecDeque<(Instant, u64, u64)>,
}

impl Aimd {
    pub fn new(budget: RateBudget) -> Self {
        let mut aimd = Aimd {
            budget,
            deployment: 0.0,
            share: 1.0,
            hold_until: None,
            last_cut: None,
            last_observed: None,
            recent: VecDeque::new(),
        };
        aimd.deployment = aimd.start();
        aimd
    }

    /// The deployment rate the budget starts from.
    fn start(&self) -> f64 {
        if self.budget.deployment_qps > 0.0 { self.budget.deployment_qps } else { self.budget.qps }
    }

    /// This replica's share of what the deployment has (its rate, its places); without a
    /// budget to share, each replica's rate and places are its own.
    pub fn effective_share(&self) -> f64 {
        if self.budget.deployment_qps > 0.0 { self.share.clamp(0.01, 1.0) } else { 1.0 }
    }

    /// The fraction of the buckets this replica is assigned or owns.
    pub fn set_share(&mut self, share: f64) {
        self.share = share;
    }

    /// This replica's rate and burst: its share of the deployment rate, never above `--qps`
    /// (0 = no cap), and never below 1% of the deployment's (a replica that owns nothing can
    /// still list, label and take buckets over). `(0, burst)` is unlimited.
    pub fn rate(&self) -> (f64, f64) {
        let b = self.budget;
        if b.deployment_qps <= 0.0 && b.qps <= 0.0 {
            return (0.0, b.burst);
        }
        let mut rate = self.deployment * self.effective_share();
        if b.qps > 0.0 {
            rate = rate.min(b.qps);
        }
        // The burst shrinks with the rate: a replica's burst is a share of the deployment's.
        let burst = if b.qps > 0.0 { b.burst * rate / b.qps } else { rate };
        (rate, burst.max(1.0))
    }

    /// Adapts the rate to what the server answered since the last call: a cut on 429s or
    /// slow writes (at most one per second), else an increase while `demand` (callers waited
    /// at the limiter) and the rate is used. Returns the cut, if any.
    pub fn observe(&mut self, now: Instant, signals: Signals, demand: bool) -> Option<Cut> {
        let since = self.last_observed.replace(now).unwrap_or(now);
        if !self.budget.adaptive || self.rate().0 <= 0.0 {
            return None;
        }
        self.recent.push_back((since, signals.delivered, signals.throttled));
        // The observation just made stays, however long it was.
        while self.recent.len() > 1
            && self.recent.front().is_some_and(|(at, ..)| now.duration_since(*at) > DELIVERED_WINDOW)
        {
            self.recent.pop_front();
        }
        // Slow writes cut only while the rate holds work back: a server that is slow while
        // this replica sends less than its rate allows (its lists at start-up, other clients,
        // Lease renewals during a rebalance) is not slowed by that rate, and a cut then only
        // starves the herd that comes next (eight replicas starting together cut to a quarter
        // and took the next minute to climb back). 429s always cut.
        let congestion = signals.congestion().filter(|cut| *cut == Cut::Throttled || demand);
        if let Some(cut) = congestion {
            if self.hold_until.is_some_and(|until| now < until) {
                return None;
            }
            self.cut(now, cut, signals.slowest_write_ms);
            return Some(cut);
        }
        if demand && self.delivered_rate(now) >= USED_TO_GROW * self.deployment.min(self.ceiling()) {
            // A long gap between looks (a stalled process) grows the rate by a second's worth.
            let elapsed = now.duration_since(since).min(DELIVERED_WINDOW).as_secs_f64();
            let slow_start = self.last_cut.is_none_or(|at| now.duration_since(at) >= SLOW_START_AFTER);
            let grown = if slow_start {
                self.deployment * SLOW_START_GROWTH_PER_S.powf(elapsed)
            } else {
                self.deployment + self.start() * INCREASE_PER_S * elapsed
            };
            self.deployment = grown.min(self.ceiling());
        }
        None
    }

    /// What the server delivered over the last second, as a deployment-wide rate.
    fn delivered_rate(&self, now: Instant) -> f64 {
        let span = self.recent.front().map_or(0.0, |(at, ..)| now.duration_since(*at).as_secs_f64());
        let delivered: u64 = self.recent.iter().map(|(_, d, _)| d).sum();
        if span > 0.0 { delivered as f64 / span / self.effective_share() } else { 0.0 }
    }

    /// Cuts the rate for `cut`: halved, or to what the server delivered (see [`CUT_FACTOR`]).
    fn cut(&mut self, now: Instant, cut: Cut, slowest_write_ms: u64) {
        let delivered_rate = self.delivered_rate(now);
        let delivered: u64 = self.recent.iter().map(|(_, d, _)| d).sum();
        let rejected: u64 = self.recent.iter().map(|(.., t)| t).sum();
        // Above the ceiling (the share grew since) the rate is the ceiling's.
        let current = self.deployment.min(self.ceiling());
        let most_rejected = rejected > delivered && rejected >= MOST_REJECTED_MIN;
        let halved = if most_rejected { 0.0 } else { current * CUT_FACTOR };
        let factor = if cut == Cut::Throttled { THROTTLED_FACTOR } else { 1.0 };
        let cut_to = halved.max(delivered_rate * factor);
        self.deployment = cut_to.min(current).max(self.start() * FLOOR);
        let queued = Duration::from_millis(slowest_write_ms);
        self.hold_until = Some(now + if cut == Cut::SlowWrites { queued.max(CUT_COOLDOWN) } else { CUT_COOLDOWN });
        self.last_cut = Some(now);
        tracing::debug!(
            reason = cut.metric_label(),
            delivered_per_s = delivered_rate * self.effective_share(),
            slowest_write_ms,
            qps = self.rate().0,
            "client rate cut"
        );
    }

    /// The deployment rate beyond which this replica's rate would not grow: `--qps` over its
    /// share; without a cap, none (the rate grows only while it is used).
    fn ceiling(&self) -> f64 {
        if self.budget.qps > 0.0 { self.budget.qps / self.effective_share() } else { f64::INFINITY }
    }
}

#[cfg(test)]
mod tests;
