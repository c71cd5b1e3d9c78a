//! When each run's Job first reports a ready pod (or finishes): the start delay users feel,
//! from the Jobs a bucket created, as its own Job watch sees them (time passed in).

use std::collections::HashMap;

use cronshard_types::Timestamp;

/// The Jobs this bucket created whose pods have not been seen ready yet, by uid, with their
/// runs' due times (scheduled time plus spread offset).
#[derive(Debug, Default)]
pub(super) struct StartDelays {
    waiting: HashMap<String, Timestamp>,
}

impl StartDelays {
    /// The bucket created Job `uid` for a run due at `due`.
    pub(super) fn created(&mut self, uid: &str, due: Timestamp) {
        if !uid.is_empty() {
            self.waiting.insert(uid.to_owned(), due);
        }
    }

    /// The watch delivered Job `uid` at `now`; once it has `started`, its delay (seconds from
    /// the due time, never negative) is returned, once.
    pub(super) fn observed(&mut self, uid: &str, started: bool, now: Timestamp) -> Option<f64> {
        if !started {
            return None;
        }
        let due = self.waiting.remove(uid)?;
        Some(now.duration_since(due).as_secs_f64().max(0.0))
    }

    /// Job `uid` is gone before it started (deleted, or out of the bucket).
    pub(super) fn forget(&mut self, uid: &str) {
        self.waiting.remove(uid);
    }

    /// After a relist: only the Jobs still there can start.
    pub(super) fn retain(&mut self, present: impl Fn(&str) -> bool) {
        self.waiting.retain(|uid, _| present(uid));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).expect("time")
    }

    #[test]
    fn a_job_ready_seven_seconds_after_its_due_time_is_seven_seconds_late_once() {
        let mut delays = StartDelays::default();
        delays.created("j1", at(0));
        assert_eq!(delays.observed("j1", false, at(3)), None, "not started yet");
        assert_eq!(delays.observed("j1", true, at(7)), Some(7.0));
        assert_eq!(delays.observed("j1", true, at(9)), None, "reported once");
    }

    #[test]
    fn jobs_the_bucket_did_not_create_are_not_measured() {
        let mut delays = StartDelays::default();
        assert_eq!(delays.observed("by-hand", true, at(1)), None);
    }

    #[test]
    fn a_spread_run_counts_from_its_due_time_and_an_early_start_is_zero() {
        let mut delays = StartDelays::default();
        delays.created("spread", at(30));
        assert_eq!(delays.observed("spread", true, at(29)), Some(0.0));
    }

    #[test]
    fn deleted_and_relisted_away_jobs_are_forgotten() {
        let mut delays = StartDelays::default();
        delays.created("a", at(0));
        delays.created("b", at(0));
        delays.created("c", at(0));
        delays.forget("a");
        delays.retain(|uid| uid == "c");
        assert_eq!(delays.len(), 1);
        assert_eq!(delays.observed("b", true, at(1)), None);
        assert_eq!(delays.observed("c", true, at(1)), Some(1.0));
    }
}
