//! Repeats of one Event as a series, in bounded memory.
//!
//! Like client-go's and kube-runtime's recorders, the same Event about the same object
//! within six minutes bumps the first Event's `series` instead of creating another object.
//! Unlike kube-runtime's, whose cache keeps every Event it wrote for six minutes and scans
//! them all on each publish, this index holds a small entry per Event, at most
//! [`MAX_ENTRIES`] of them, and expires them in order: a herd's tens of thousands of
//! distinct Events ("Created job …") cost neither memory for minutes nor a scan each.
//! "The same" includes the note, so distinct messages are never folded into one.

use std::collections::{HashMap, VecDeque};

use cronshard_types::Timestamp;
use jiff::SignedDuration;

/// How long after its last repeat an Event still takes a new repeat into its series
/// (kube-runtime's and client-go's figure).
pub const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);
/// The most Events remembered; beyond it the oldest is forgotten and its next repeat
/// starts a new Event (client-go's LRU holds as many).
pub const MAX_ENTRIES: usize = 4096;

/// What makes two Events repeats of one another.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SeriesKey {
    /// The object's namespace and uid (not its resourceVersion, which every status write
    /// changes).
    pub namespace: String,
    pub uid: String,
    pub warning: bool,
    pub reason: &'static str,
    pub note: String,
}

#[derive(Debug)]
struct Entry {
    /// The Event object's name.
    name: String,
    count: i32,
    last: Timestamp,
}

/// Recently written Events, oldest first.
#[derive(Debug, Default)]
pub struct Series {
    entries: HashMap<SeriesKey, Entry>,
    /// (last repeat, key) in time order; an entry repeated since has a later pair too.
    order: VecDeque<(Timestamp, SeriesKey)>,
}

impl Series {
    /// A repeat of a remembered Event: its name and the series count to write; `None`:
    /// write a new Event (then call [`Series::created`]).
    pub fn repeat(&mut self, key: &SeriesKey, now: Timestamp) -> Option<(String, i32)> {
        self.expire(now);
        let entry = self.entries.get_mut(key)?;
        entry.count += 1;
        entry.last = now;
        self.order.push_back((now, key.clone()));
        Some((entry.name.clone(), entry.count))
    }

    /// A new Event named `name` was written at `now`.
    pub fn created(&mut self, key: SeriesKey, name: String, now: Timestamp) {
        self.expire(now);
        while self.entries.len() >= MAX_ENTRIES {
            self.forget_oldest();
        }
        self.order.push_back((now, key.clone()));
        self.entries.insert(key, Entry { name, count: 1, last: now });
    }

    /// A remembered Event is gone from the server: its next repeat starts a new one.
    pub fn forget(&mut self, key: &SeriesKey) {
        self.entries.remove(key);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn expire(&mut self, now: Timestamp) {
        while self.order.front().is_some_and(|(at, _)| now.duration_since(*at) >= SERIES_WINDOW) {
            self.forget_oldest();
        }
    }

    /// Drops the front pair, and its entry unless the entry was repeated since.
    fn forget_oldest(&mut self) {
        let Some((at, key)) = self.order.pop_front() else { return };
        if self.entries.get(&key).is_some_and(|e| e.last == at) {
            self.entries.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(uid: &str, note: &str) -> SeriesKey {
        SeriesKey {
            namespace: "a".into(),
            uid: uid.into(),
            warning: false,
            reason: "SuccessfulCreate",
            note: note.into(),
        }
    }

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).expect("in range")
    }

    #[test]
    fn an_identical_event_within_six_minutes_of_the_last_repeat_extends_the_series() {
        let mut series = Series::default();
        assert_eq!(series.repeat(&key("u1", "x"), at(0)), None);
        series.created(key("u1", "x"), "nightly.1".into(), at(0));
        assert_eq!(series.repeat(&key("u1", "x"), at(300)), Some(("nightly.1".into(), 2)));
        // Six minutes after the last repeat, not the first.
        assert_eq!(series.repeat(&key("u1", "x"), at(659)), Some(("nightly.1".into(), 3)));
        assert_eq!(series.repeat(&key("u1", "x"), at(659 + 360)), None);
        assert!(series.is_empty());
    }

    #[test]
    fn another_note_or_object_is_another_event() {
        let mut series = Series::default();
        series.created(key("u1", "Created job a-1"), "a.1".into(), at(0));
        assert_eq!(series.repeat(&key("u1", "Created job a-2"), at(60)), None);
        assert_eq!(series.repeat(&key("u2", "Created job a-1"), at(60)), None);
        assert!(series.repeat(&key("u1", "Created job a-1"), at(60)).is_some());
    }

    #[test]
    fn memory_is_bounded_and_the_oldest_goes_first() {
        let mut series = Series::default();
        for i in 0..MAX_ENTRIES + 10 {
            series.created(key(&format!("u{i}"), "x"), format!("e.{i}"), at(i as i64 / 100));
        }
        assert_eq!(series.len(), MAX_ENTRIES);
        assert_eq!(series.repeat(&key("u9", "x"), at(50)), None, "among the oldest: forgotten");
        assert!(series.repeat(&key(&format!("u{}", MAX_ENTRIES + 9), "x"), at(50)).is_some());
    }

    #[test]
    fn a_deleted_event_starts_over() {
        let mut series = Series::default();
        series.created(key("u1", "x"), "a.1".into(), at(0));
        series.forget(&key("u1", "x"));
        assert_eq!(series.repeat(&key("u1", "x"), at(1)), None);
    }
}
