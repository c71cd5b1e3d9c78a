//! The bucket's status writes, apart from its syncs: a sync never waits for a status write
//! (its own or another CronJob's), at most one write per CronJob is in flight, and only the
//! latest status decided for a CronJob is written.

use std::collections::{HashMap, HashSet, VecDeque};

use cronshard_sync::CronJobStatus;

/// What the bucket has decided to write and where each write stands.
#[derive(Debug)]
pub(super) struct StatusWrites {
    /// Decided and not yet known to be written: the next sync of the CronJob starts from
    /// this, not from the (older) status in the cache.
    unwritten: HashMap<String, CronJobStatus>,
    /// CronJobs whose write waits for a slot, oldest first.
    queue: VecDeque<String>,
    queued: HashSet<String>,
    in_flight: HashSet<String>,
    /// CronJobs that were decided again while their write was in flight.
    again: HashSet<String>,
    /// CronJobs whose history cleanup a sync held back because their status was not
    /// written yet: they sync again once it is, or nothing would name those Jobs again.
    withheld: HashSet<String>,
    /// Writes in flight at most.
    limit: usize,
}

/// How a write ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Landed {
    /// The server stored it.
    Yes,
    /// A conflict, the object gone, or an error: the cache decides again from the server's
    /// copy, as a fresh sync.
    No,
}

impl StatusWrites {
    pub(super) fn new(limit: usize) -> Self {
        StatusWrites {
            unwritten: HashMap::new(),
            queue: VecDeque::new(),
            queued: HashSet::new(),
            in_flight: HashSet::new(),
            again: HashSet::new(),
            withheld: HashSet::new(),
            limit: limit.max(1),
        }
    }

    /// A sync decided `status` for `key`: it supersedes whatever was decided before and
    /// not yet written.
    pub(super) fn decided(&mut self, key: &str, status: CronJobStatus) {
        self.unwritten.insert(key.to_owned(), status);
        if self.in_flight.contains(key) {
            self.again.insert(key.to_owned());
        } else if self.queued.insert(key.to_owned()) {
            self.queue.push_back(key.to_owned());
        }
    }

    /// The status to sync `key` from, if one is decided and not yet written.
    pub(super) fn unwritten(&self, key: &str) -> Option<&CronJobStatus> {
        self.unwritten.get(key)
    }

    /// The writes to start now, up to the limit in flight: each CronJob's latest status.
    pub(super) fn start(&mut self) -> Vec<(String, CronJobStatus)> {
        let mut started = Vec::new();
        while self.in_flight.len() < self.limit {
            let Some(key) = self.queue.pop_front() else { break };
            self.queued.remove(&key);
            let Some(status) = self.unwritten.get(&key).cloned() else { continue };
            self.in_flight.insert(key.clone());
            started.push((key, status));
        }
        started
    }

    /// A sync of `key` named history to clean up while its status was unwritten, so it was
    /// held back: [`finished`](Self::finished) says when to sync again.
    pub(super) fn withhold_cleanup(&mut self, key: &str) {
        self.withheld.insert(key.to_owned());
    }

    /// `key`'s write ended. A status decided meanwhile is written next (it was computed from
    /// the one just written); otherwise the CronJob has nothing left to write. Returns
    /// whether `key` should sync again now: its write landed, nothing is left to write, and
    /// a sync held back its cleanup meanwhile. (A write that did not land is followed by a
    /// sync from the server's copy anyway, with nothing unwritten.)
    #[must_use]
    pub(super) fn finished(&mut self, key: &str, landed: Landed) -> bool {
        self.in_flight.remove(key);
        let again = self.again.remove(key);
        match (landed, again) {
            (Landed::Yes, true) => {
                if self.queued.insert(key.to_owned()) {
                    self.queue.push_back(key.to_owned());
                }
                false
            }
            (Landed::Yes, false) => {
                self.unwritten.remove(key);
                self.withheld.remove(key)
            }
            (Landed::No, _) => {
                self.unwritten.remove(key);
                self.withheld.remove(key);
                false
            }
        }
    }

    /// `key` left the bucket: nothing more is written for it.
    pub(super) fn forget(&mut self, key: &str) {
        self.unwritten.remove(key);
        self.again.remove(key);
        self.withheld.remove(key);
        if self.queued.remove(key) {
            self.queue.retain(|k| k != key);
        }
    }

    /// Writes waiting or in flight.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.queue.len() + self.in_flight.len()
    }
}

#[cfg(test)]
mod tests {
    use cronshard_types::Timestamp;

    use super::*;

    fn status(second: i64) -> CronJobStatus {
        CronJobStatus {
            last_schedule_time: Some(Timestamp::from_second(1_800_000_000 + second).expect("in range")),
            ..CronJobStatus::default()
        }
    }

    #[test]
    fn writes_start_in_order_up_to_the_limit() {
        let mut writes = StatusWrites::new(2);
        for (key, s) in [("a", 1), ("b", 2), ("c", 3)] {
            writes.decided(key, status(s));
        }
        let started: Vec<String> = writes.start().into_iter().map(|(k, _)| k).collect();
        assert_eq!(started, ["a", "b"]);
        assert!(writes.start().is_empty(), "two in flight");
        assert!(!writes.finished("a", Landed::Yes));
        assert_eq!(writes.start(), [("c".to_owned(), status(3))]);
        assert_eq!(writes.len(), 2);
    }

    #[test]
    fn the_latest_status_supersedes_a_waiting_one() {
        let mut writes = StatusWrites::new(1);
        writes.decided("a", status(1));
        writes.decided("a", status(2));
        assert_eq!(writes.unwritten("a"), Some(&status(2)), "the next sync starts from it");
        assert_eq!(writes.start(), [("a".to_owned(), status(2))], "written once, the latest");
        assert!(!writes.finished("a", Landed::Yes));
        assert_eq!(writes.unwritten("a"), None, "written: the cache has it now");
        assert!(writes.start().is_empty());
    }

    #[test]
    fn a_status_decided_during_a_write_is_written_after_it() {
        let mut writes = StatusWrites::new(4);
        writes.decided("a", status(1));
        assert_eq!(writes.start().len(), 1);
        writes.decided("a", status(2));
        assert!(writes.start().is_empty(), "one write per CronJob in flight");
        assert!(!writes.finished("a", Landed::Yes));
        assert_eq!(writes.start(), [("a".to_owned(), status(2))]);
    }

    #[test]
    fn a_write_that_did_not_land_leaves_the_decision_to_a_fresh_sync() {
        let mut writes = StatusWrites::new(4);
        writes.decided("a", status(1));
        writes.start();
        writes.decided("a", status(2));
        assert!(!writes.finished("a", Landed::No));
        assert_eq!(writes.unwritten("a"), None);
        assert!(writes.start().is_empty());
        assert_eq!(writes.len(), 0);
    }

    #[test]
    fn a_forgotten_cronjob_writes_nothing_more() {
        let mut writes = StatusWrites::new(1);
        writes.decided("a", status(1));
        writes.decided("b", status(2));
        writes.forget("a");
        writes.forget("b");
        assert!(writes.start().is_empty());
        assert_eq!((writes.unwritten("a"), writes.len()), (None, 0));
    }

    #[test]
    fn cleanup_held_back_during_a_write_syncs_again_once_it_lands() {
        let mut writes = StatusWrites::new(4);
        writes.decided("a", status(1));
        writes.start();
        writes.withhold_cleanup("a");
        writes.decided("a", status(2));
        assert!(!writes.finished("a", Landed::Yes), "status(2) is still to be written");
        writes.start();
        assert!(writes.finished("a", Landed::Yes), "written: the held-back cleanup can go now");
        assert_eq!(writes.unwritten("a"), None);
        writes.decided("a", status(3));
        writes.start();
        assert!(!writes.finished("a", Landed::Yes), "nothing was held back this time");
    }

    #[test]
    fn cleanup_held_back_before_a_failed_write_is_left_to_the_fresh_sync() {
        let mut writes = StatusWrites::new(4);
        writes.decided("a", status(1));
        writes.start();
        writes.withhold_cleanup("a");
        assert!(!writes.finished("a", Landed::No));
        writes.decided("a", status(2));
        writes.start();
        assert!(!writes.finished("a", Landed::Yes), "the failed write's sync named the Jobs again");
    }
}
