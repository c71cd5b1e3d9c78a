//! Reservations for due creates: each bucket says when its next timers fire and how many,
//! and the limiter holds lower-priority work back for the moment before, so that the budget
//! is there when the creates come. A plain index; time is passed in.
//!
//! Why holding back, and not only keeping client tokens: the server has a budget of its own
//! (kube-apiserver's seats and etcd's write rate; the simulator's admitted writes with one
//! second of burst). Status writes and Events sent at the full rate until the boundary leave
//! it empty, and the creates then drain at the steady rate, however many client tokens were
//! kept. A client whose adaptive rate runs above what the server admits never runs short
//! of tokens either. Sending nothing below create priority for the time the creates need at
//! this replica's rate (at most [`MAX_HOLD`]) lets both budgets fill. The cost is at most
//! that long per herd for work that can wait, and nothing when nothing is due.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

/// A bucket counts its timers this soon after its next one, and tells the limiter again only
/// once its next timer is past that: each timer counts towards one reservation, however
/// often the bucket wakes (a herd is due at one instant; creates spread over the minute make
/// many small reservations, and their holds take no more of the time than the creates take
/// of the budget).
pub const HORIZON: Duration = Duration::from_millis(100);
/// The longest hold: a token bucket (the client's burst, the simulator's) refills in one
/// second, so a longer hold only delays work without saving more.
pub const MAX_HOLD: Duration = Duration::from_secs(1);
/// How long the hold of a herd (creates that need at least [`HERD_HOLD`]) outlasts its due
/// time: the due syncs reach the limiter a few milliseconds after their timer fires, and
/// lower-priority work must not take the places first. A smaller hold has no after-part, so
/// that many small ones never add up to more than their creates' share of the time.
const AFTER: Duration = Duration::from_millis(20);
const HERD_HOLD: Duration = Duration::from_millis(100);

/// One bucket's next due timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    pub at: Instant,
    pub creates: u32,
}

/// Every bucket's reservation, and the hold windows they make at the current rate.
#[derive(Debug, Default)]
pub struct Reservations {
    by_bucket: HashMap<u32, Due>,
    /// `[start, end)` during which only creates are served, earliest start first.
    windows: Vec<(Instant, Instant)>,
    qps: f64,
}

impl Reservations {
    /// `bucket`'s next timers (`None`: it has none, or it stopped).
    pub fn set(&mut self, bucket: u32, due: Option<Due>, now: Instant) {
        match due {
            Some(due) => self.by_bucket.insert(bucket, due),
            None => self.by_bucket.remove(&bucket),
        };
        // Reservations long past hold nothing: a bucket that never reports again (stopped
        // without saying so) costs nothing.
        self.by_bucket.retain(|_, d| d.at + HORIZON > now);
        self.recompute();
    }

    /// The replica's rate changed (`<= 0`: unlimited, and then nothing is held: without a
    /// rate there is no time the creates need).
    pub fn set_rate(&mut self, qps: f64) {
        if qps != self.qps {
            self.qps = qps;
            self.recompute();
        }
    }

    /// Until when lower-priority work is held at `now` (`None`: it is not).
    pub fn held_until(&self, now: Instant) -> Option<Instant> {
        self.windows.iter().take_while(|(start, _)| *start <= now).map(|(_, end)| *end).filter(|end| *end > now).max()
    }

    /// Each reservation holds for the time its creates need at the rate, just before its time
    /// or, when a later reservation's hold already starts earlier, just before that hold:
    /// so holds add up (buckets due together hold as long as all their creates need, up to
    /// [`MAX_HOLD`] before their time) and the time before due creates is held once, not
    /// once per reservation (creates spread over the minute hold no more of the time than
    /// they take of the budget, and work below them is starved only when they need all of it).
    fn recompute(&mut self) {
        self.windows.clear();
        if self.qps <= 0.0 {
            return;
        }
        let mut due: Vec<Due> = self.by_bucket.values().copied().collect();
        due.sort_by_key(|d| std::cmp::Reverse(d.at));
        // Where the holds placed so far (for later reservations) begin.
        let mut floor: Option<Instant> = None;
        for d in due {
            let hold = Duration::from_secs_f64((f64::from(d.creates) / self.qps).min(MAX_HOLD.as_secs_f64()));
            if hold.is_zero() {
                continue;
            }
            let before = floor.map_or(d.at, |f| f.min(d.at));
            let earliest = d.at.checked_sub(MAX_HOLD).unwrap_or(d.at);
            let start = before.checked_sub(hold).unwrap_or(before).max(earliest);
            floor = Some(floor.map_or(start, |f| f.min(start)));
            let after = if hold >= HERD_HOLD { AFTER } else { Duration::ZERO };
            self.windows.push((start, d.at + after));
        }
        self.windows.sort_by_key(|(start, _)| *start);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[tokio::test(start_paused = true)]
    async fn a_herd_holds_the_time_its_creates_need_at_the_rate_and_a_little_after() {
        let now = Instant::now();
        let mut r = Reservations::default();
        r.set_rate(500.0);
        r.set(1, Some(Due { at: now + ms(2000), creates: 200 }), now);
        // 200 creates at 500/s: 0.4 s before, and 20 ms after (a herd).
        assert_eq!(r.held_until(now + ms(1599)), None);
        assert_eq!(r.held_until(now + ms(1600)), Some(now + ms(2020)));
        assert_eq!(r.held_until(now + ms(2019)), Some(now + ms(2020)));
        assert_eq!(r.held_until(now + ms(2020)), None);
    }

    #[tokio::test(start_paused = true)]
    async fn holds_add_up_before_the_herd_and_at_most_a_second() {
        let now = Instant::now();
        let mut r = Reservations::default();
        r.set_rate(100.0);
        for bucket in 0..4 {
            r.set(bucket, Some(Due { at: now + ms(5000), creates: 20 }), now);
        }
        // 80 creates at 100/s: 0.8 s before.
        assert_eq!(r.held_until(now + ms(4199)), None);
        assert!(r.held_until(now + ms(4200)).is_some());
        r.set(4, Some(Due { at: now + ms(5000), creates: 1000 }), now);
        assert!(r.held_until(now + ms(4000)).is_some());
        assert_eq!(r.held_until(now + ms(3999)), None, "capped at MAX_HOLD");
        // A bucket far later is its own herd.
        r.set(5, Some(Due { at: now + ms(60_000), creates: 10 }), now);
        assert_eq!(r.held_until(now + ms(59_899)), None);
        assert_eq!(r.held_until(now + ms(59_900)), Some(now + ms(60_020)));
    }

    #[tokio::test(start_paused = true)]
    async fn creates_spread_over_time_hold_no_more_of_it_than_they_need() {
        let now = Instant::now();
        let mut r = Reservations::default();
        r.set_rate(1000.0);
        // Ten buckets due 100 ms apart, 30 creates each: 30 ms of the budget every 100 ms.
        for bucket in 0..10u32 {
            r.set(bucket, Some(Due { at: now + ms(1000 + 100 * u64::from(bucket)), creates: 30 }), now);
        }
        let held = (0..2000).filter(|t| r.held_until(now + ms(*t)).is_some()).count();
        assert_eq!(held, 10 * 30, "each hold is its own, small ones without an after-part");
        // A later hold that starts before an earlier time pushes the earlier one before it.
        r.set(20, Some(Due { at: now + ms(1250), creates: 100 }), now);
        assert!(r.held_until(now + ms(1150)).is_some(), "1250's 100 ms");
        assert!(r.held_until(now + ms(1120)).is_some(), "1200's 30 ms, moved before it");
        assert_eq!(r.held_until(now + ms(1119)), None, "1100's ended at its time");
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_report_replaces_the_last_and_no_rate_holds_nothing() {
        let now = Instant::now();
        let mut r = Reservations::default();
        r.set_rate(100.0);
        r.set(1, Some(Due { at: now + ms(1000), creates: 50 }), now);
        assert!(r.held_until(now + ms(600)).is_some());
        r.set(1, Some(Due { at: now + ms(61_000), creates: 50 }), now);
        assert_eq!(r.held_until(now + ms(600)), None, "the round ran: the next minute is reserved instead");
        r.set(1, None, now);
        assert_eq!(r.held_until(now + ms(60_600)), None);
        r.set(1, Some(Due { at: now + ms(1000), creates: 50 }), now);
        r.set_rate(0.0);
        assert_eq!(r.held_until(now + ms(600)), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stale_reservation_is_dropped() {
        let now = Instant::now();
        let mut r = Reservations::default();
        r.set_rate(100.0);
        r.set(1, Some(Due { at: now + ms(1000), creates: 50 }), now);
        r.set(2, Some(Due { at: now + ms(9000), creates: 1 }), now + ms(1100));
        assert_eq!(r.by_bucket.len(), 1, "bucket 1's time is past");
    }
}
