//! A bucket's due syncs, several at once, while its watches keep being read: a herd's syncs
//! can take a minute, and a sync that starts late should see the Jobs created meanwhile
//! rather than ask the server for them.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use futures::stream::FuturesUnordered;
use futures::{Future, StreamExt};

use super::{PARALLEL_SYNCS, Streams, Worker};
use crate::api::reserve::HORIZON;
use crate::bucket::calls::sync_due;
use crate::bucket::index::Due;
use cronshard_sync::Outcome;

/// Longest a stopping bucket waits for the syncs it has in flight (a handover must not wait
/// for a create that is still queued for the budget). Dropping one cancels its request: the
/// connection closes, and the API server (Go's `net/http`, as the simulator) cancels a
/// request whose client went away. One whose create landed anyway is found by the next
/// owner, whose create gets AlreadyExists and adopts the Job.
const STOP_WAIT: Duration = Duration::from_secs(15);

impl Worker {
    /// Syncs every CronJob that is due, [`PARALLEL_SYNCS`] at once, each from what the cache
    /// holds when its sync starts. Watch events are applied meanwhile. A CronJob that comes
    /// due while the round runs (a failed create's retry, the next minute's runs, one a watch
    /// event touched) joins it, unless its sync is in flight: then it syncs again once the
    /// round is done, never twice at once. Once told to stop, no further sync starts; those
    /// in flight get [`STOP_WAIT`] to finish. Status writes and history cleanup start when
    /// the round is done, so that while a herd is created they do not take the gaps between
    /// its creates at the server.
    pub(super) async fn run_due(&mut self, streams: &mut Streams) {
        let mut round = Round::default();
        round.add(self.timers.pop_due(self.ctx.clock.now()));
        let mut syncing = FuturesUnordered::new();
        // A dropped sender can no longer say stop: the bucket is being torn down anyway.
        let mut stop_closed = false;
        let mut give_up_at = None;
        loop {
            let stopping = stop_closed || *streams.stop.borrow();
            if stopping && give_up_at.is_none() {
                give_up_at = Some(tokio::time::Instant::now() + STOP_WAIT);
            }
            while syncing.len() < PARALLEL_SYNCS && !stopping {
                let Some(k) = round.next() else { break };
                if let Some(due) = self.due(&k) {
                    round.started(k);
                    syncing.push(self.sync_task(due));
                }
            }
            if syncing.is_empty() {
                break;
            }
            tokio::select! {
                Some((due, outcome)) = syncing.next() => {
                    round.finished(&due.key);
                    self.finish(due, outcome);
                    round.add(self.timers.pop_due(self.ctx.clock.now()));
                }
                Some(event) = streams.cronjobs.next() => self.on_watch_event("CronJob", event, Worker::on_cronjob),
                Some(event) = streams.jobs.next() => self.on_watch_event("Job", event, Worker::on_job),
                changed = streams.stop.changed(), if !stop_closed => stop_closed = changed.is_err(),
                () = tokio::time::sleep_until(give_up_at.unwrap_or_else(tokio::time::Instant::now)), if give_up_at.is_some() => break,
            }
        }
        // Not started because the bucket stops (its next owner syncs them), or came due
        // while their sync was in flight.
        let now = self.ctx.clock.now();
        for k in round.unstarted() {
            self.timers.schedule(&k, now);
        }
        self.start_writes();
        // A stopping bucket deletes no more history: the next owner's syncs name the Jobs.
        if !(stop_closed || *streams.stop.borrow()) {
            self.history.start(&self.ctx);
        }
        self.ctx.metrics.queue_depth.set(self.timers.len() as i64);
    }

    /// Tells the limiter this bucket's largest herd within [`HORIZON`] ([`crate::api::reserve`]) if
    /// it changed, or anyway when `clock_moved` (the instant it maps to moved with the clock).
    pub(super) fn reserve_next_herd(&mut self, clock_moved: bool) {
        let now = self.ctx.clock.now();
        let horizon = now.checked_add(HORIZON).unwrap_or(now);
        let next = self.timers.largest_herd(now, horizon);
        if next == self.reserved && !clock_moved {
            return;
        }
        self.reserved = next;
        let at = next.map(|(at, syncs)| (tokio::time::Instant::now() + self.ctx.clock.until(at), syncs));
        self.ctx.limiter.reserve(self.bucket, at);
    }

    fn sync_task(&self, due: Due) -> impl Future<Output = (Due, Outcome)> + use<> {
        let (ctx, bucket, epoch) = (self.ctx.clone(), self.bucket, self.epoch);
        async move {
            let outcome = sync_due(&ctx, bucket, epoch, &due).await;
            (due, outcome)
        }
    }
}

/// The CronJobs of one round: those waiting to start, in the order they came due, and those
/// whose sync is in flight. One that comes due again while its sync is in flight waits for
/// the round's end: a CronJob never syncs twice at once.
#[derive(Debug, Default)]
struct Round {
    waiting: VecDeque<String>,
    in_flight: HashSet<String>,
    after: Vec<String>,
}

impl Round {
    fn add(&mut self, keys: impl IntoIterator<Item = String>) {
        self.waiting.extend(keys);
    }

    /// The next CronJob that may start now.
    fn next(&mut self) -> Option<String> {
        while let Some(k) = self.waiting.pop_front() {
            if !self.in_flight.contains(&k) {
                return Some(k);
            }
            self.after.push(k);
        }
        None
    }

    fn started(&mut self, k: String) {
        self.in_flight.insert(k);
    }

    fn finished(&mut self, k: &str) {
        self.in_flight.remove(k);
    }

    /// What did not start in this round: it syncs in the next one.
    fn unstarted(self) -> impl Iterator<Item = String> {
        self.waiting.into_iter().chain(self.after)
    }
}

#[cfg(test)]
mod tests {
    use super::Round;

    fn keys(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn one_due_during_the_round_joins_it_unless_its_sync_is_in_flight() {
        let mut round = Round::default();
        round.add(keys(&["a", "b"]));
        let a = round.next().expect("a");
        round.started(a);
        // "b" waits for a place; "a" (a watch event) and "c" (a retry) come due meanwhile.
        round.add(keys(&["a", "c"]));
        let started: Vec<String> = std::iter::from_fn(|| round.next()).collect();
        assert_eq!(started, ["b", "c"], "never a second sync of a while its first is in flight");
        round.finished("a");
        assert_eq!(round.unstarted().collect::<Vec<_>>(), ["a"], "a syncs again in the next round");
    }

    #[test]
    fn once_its_sync_is_done_a_cronjob_may_start_again_in_the_same_round() {
        let mut round = Round::default();
        round.add(keys(&["a"]));
        let a = round.next().expect("a");
        round.started(a);
        round.finished("a");
        round.add(keys(&["a"]));
        assert_eq!(round.next().as_deref(), Some("a"));
        assert_eq!(round.unstarted().count(), 0);
    }
}
