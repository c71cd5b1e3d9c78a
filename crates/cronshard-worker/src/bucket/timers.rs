//! The bucket's timer queue: when each CronJob syncs next, and its backoff after failures.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::time::Duration;

use cronshard_types::Timestamp;

/// Longest backoff after repeated transient failures of one CronJob.
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// The first retry of a failed sync, in milliseconds; each further one waits twice as long.
const FIRST_RETRY_MS: u64 = 50;

#[derive(Default)]
pub(super) struct Timers {
    /// Earliest first; an entry whose time no longer matches `scheduled` is stale.
    heap: BinaryHeap<Reverse<(Timestamp, String)>>,
    scheduled: HashMap<String, Timestamp>,
    /// How many keys are scheduled at each instant: the size of the next herd.
    per_instant: BTreeMap<Timestamp, usize>,
    /// Consecutive failed syncs per CronJob.
    failures: HashMap<String, u32>,
}

impl Timers {
    /// Syncs `key` at `at`, unless it is already due earlier.
    pub(super) fn schedule(&mut self, key: &str, at: Timestamp) {
        if self.scheduled.get(key).is_some_and(|t| *t <= at) {
            return;
        }
        if let Some(earlier) = self.scheduled.insert(key.to_owned(), at) {
            self.uncount(earlier);
        }
        *self.per_instant.entry(at).or_default() += 1;
        self.heap.push(Reverse((at, key.to_owned())));
    }

    fn uncount(&mut self, at: Timestamp) {
        if let Some(n) = self.per_instant.get_mut(&at) {
            *n -= 1;
            if *n == 0 {
                self.per_instant.remove(&at);
            }
        }
    }

    /// Drops `key`'s timer and backoff (it left the bucket).
    pub(super) fn forget(&mut self, key: &str) {
        if let Some(at) = self.scheduled.remove(key) {
            self.uncount(at);
        }
        self.failures.remove(key);
    }

    /// The instant in `(after, until]` with the most keys scheduled (the earliest of equals),
    /// and how many. Keys due now (watch events, a retry) are not a herd ahead.
    pub(super) fn largest_herd(&self, after: Timestamp, until: Timestamp) -> Option<(Timestamp, usize)> {
        if until <= after {
            return None;
        }
        let soon = self.per_instant.range((std::ops::Bound::Excluded(after), std::ops::Bound::Included(until)));
        soon.fold(None, |best, (at, n)| match best {
            Some((_, most)) if most >= *n => best,
            _ => Some((*at, *n)),
        })
    }

    /// When the earliest timer fires.
    pub(super) fn next_at(&self) -> Option<Timestamp> {
        self.heap.peek().map(|Reverse((at, _))| *at)
    }

    /// The keys due at `now`, earliest first; each leaves the queue.
    pub(super) fn pop_due(&mut self, now: Timestamp) -> Vec<String> {
        let mut due = Vec::new();
        while self.heap.peek().is_some_and(|Reverse((at, _))| *at <= now) {
            let Some(Reverse((at, key))) = self.heap.pop() else { break };
            // A stale entry: the key was rescheduled or forgotten since.
            if self.scheduled.get(&key) == Some(&at) {
                self.scheduled.remove(&key);
                self.uncount(at);
                due.push(key);
            }
        }
        due
    }

    /// CronJobs with a timer set.
    pub(super) fn len(&self) -> usize {
        self.scheduled.len()
    }

    /// A successful sync: the backoff resets; `next` is the sync it asked for.
    pub(super) fn succeeded(&mut self, key: &str, next: Option<Timestamp>) {
        self.failures.remove(key);
        if let Some(at) = next {
            self.schedule(key, at);
        }
    }

    /// A failed sync: retried after 0.05, 0.1, 0.2, 0.4 … s (at most [`MAX_BACKOFF`]), but
    /// never later than `next`, the sync it asked for, so backoff never skips a run. Returns
    /// the delay. The first retry comes soon because most failures are one-offs (a 500, a
    /// timeout) and the run is due now: a herd's last run is often a retry, and its wait is
    /// the herd's; upstream's work queue starts at 5 ms. A server that keeps failing is
    /// reached less and less often, and the client rate adapts to its 429s.
    pub(super) fn failed(&mut self, key: &str, now: Timestamp, next: Option<Timestamp>) -> Duration {
        let n = self.failures.entry(key.to_owned()).or_insert(0);
        *n += 1;
        let delay = Duration::from_millis(FIRST_RETRY_MS << (*n - 1).min(13)).min(MAX_BACKOFF);
        let at = now.checked_add(jiff::SignedDuration::try_from(delay).unwrap_or_default()).unwrap_or(now);
        self.schedule(key, next.map_or(at, |next| next.min(at)));
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(second: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + second).expect("in range")
    }

    #[test]
    fn due_keys_come_out_earliest_first_and_only_when_due() {
        let mut timers = Timers::default();
        timers.schedule("b", t(20));
        timers.schedule("a", t(10));
        timers.schedule("c", t(30));
        assert_eq!(timers.next_at(), Some(t(10)));
        assert!(timers.pop_due(t(9)).is_empty());
        assert_eq!(timers.pop_due(t(20)), ["a", "b"]);
        assert_eq!(timers.len(), 1);
        assert_eq!(timers.pop_due(t(100)), ["c"]);
        assert!(timers.pop_due(t(1000)).is_empty());
    }

    #[test]
    fn an_earlier_time_wins_and_a_later_one_is_ignored() {
        let mut timers = Timers::default();
        timers.schedule("a", t(30));
        timers.schedule("a", t(10));
        timers.schedule("a", t(20));
        // Once, at the earliest time: the entry for 30 s is stale.
        assert_eq!(timers.pop_due(t(10)), ["a"]);
        assert!(timers.pop_due(t(40)).is_empty());
    }

    #[test]
    fn the_largest_herd_ahead_counts_the_keys_at_its_instant() {
        let mut timers = Timers::default();
        assert_eq!(timers.largest_herd(t(0), t(200)), None);
        for key in ["a", "b", "c"] {
            timers.schedule(key, t(60));
        }
        timers.schedule("d", t(120));
        // Due now (a watch event) or sooner but alone: the herd at 60 s is still the one.
        timers.schedule("now", t(0));
        timers.schedule("retry", t(59));
        assert_eq!(timers.largest_herd(t(0), t(200)), Some((t(60), 3)));
        assert_eq!(timers.largest_herd(t(0), t(59)), Some((t(59), 1)), "only what is within reach");
        // Moved earlier, forgotten, popped: each leaves the count of the instant it had.
        timers.schedule("c", t(30));
        assert_eq!(timers.largest_herd(t(0), t(200)), Some((t(60), 2)));
        timers.forget("c");
        assert_eq!(timers.largest_herd(t(0), t(200)), Some((t(60), 2)));
        assert_eq!(timers.pop_due(t(60)).len(), 4);
        assert_eq!(timers.largest_herd(t(60), t(200)), Some((t(120), 1)));
    }

    #[test]
    fn a_forgotten_key_never_fires() {
        let mut timers = Timers::default();
        timers.schedule("a", t(10));
        timers.forget("a");
        assert!(timers.pop_due(t(10)).is_empty());
        assert_eq!(timers.len(), 0);
    }

    #[test]
    fn failures_back_off_exponentially_up_to_the_cap() {
        let mut timers = Timers::default();
        let delays: Vec<u128> = (0..15)
            .map(|_| {
                let delay = timers.failed("a", t(0), None);
                timers.pop_due(t(10_000));
                delay.as_millis()
            })
            .collect();
        let doubling: Vec<u128> = (0..13).map(|n| 50 << n).collect();
        assert_eq!(delays[..13], doubling[..], "50 ms to 204.8 s");
        assert_eq!(delays[13..], [300_000, 300_000], "capped at 300 s");
    }

    #[test]
    fn backoff_never_skips_the_next_run_and_success_resets_it() {
        let mut timers = Timers::default();
        for _ in 0..5 {
            timers.failed("a", t(0), None);
            timers.pop_due(t(10_000));
        }
        // The sixth delay would be 1.6 s; the next run at 1 s comes first.
        timers.failed("a", t(0), Some(t(1)));
        assert_eq!(timers.next_at(), Some(t(1)));
        assert_eq!(timers.pop_due(t(1)), ["a"]);
        timers.succeeded("a", Some(t(60)));
        assert_eq!(timers.pop_due(t(60)), ["a"]);
        assert_eq!(timers.failed("a", t(60), None), Duration::from_millis(50));
    }
}
