//! CronJobs that cannot carry the bucket label: stored before a validation rule existed, the
//! API server validates the whole object on the label patch and answers 422. The labeller
//! puts them here with the bucket their name hashes to, and that bucket's worker reads them
//! one by one (without writing to them) and manages them like labelled ones, so their
//! owners get the same Warning Events and metrics.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// `namespace/name` -> (bucket, resourceVersion when it was last refused a label).
type Entries = BTreeMap<String, (u32, String)>;

/// The replica's unlabellable CronJobs. Plain data behind a lock, with a version that
/// changes on every change so workers know when to look again.
#[derive(Debug)]
pub struct Leftovers {
    entries: Mutex<Entries>,
    version: tokio::sync::watch::Sender<u64>,
}

impl Default for Leftovers {
    fn default() -> Self {
        Leftovers { entries: Mutex::default(), version: tokio::sync::watch::channel(0).0 }
    }
}

impl Leftovers {
    fn change(&self, edit: impl FnOnce(&mut Entries) -> bool) {
        let changed = edit(&mut self.entries.lock().unwrap_or_else(|e| e.into_inner()));
        if changed {
            self.version.send_modify(|v| *v += 1);
        }
    }

    /// `key` (`namespace/name`) of `bucket` was refused a label at `resource_version`.
    pub fn apply(&self, key: String, bucket: u32, resource_version: String) {
        self.change(|e| {
            e.insert(key, (bucket, resource_version.clone())).is_none_or(|old| old != (bucket, resource_version))
        });
    }

    /// `key` was labelled after all, or deleted.
    pub fn delete(&self, key: &str) {
        self.change(|e| e.remove(key).is_some());
    }

    /// Only the buckets in `owned` stay: the others' owners keep their own.
    pub fn retain(&self, owned: &BTreeSet<u32>) {
        self.change(|e| {
            let before = e.len();
            e.retain(|_, (b, _)| owned.contains(b));
            e.len() != before
        });
    }

    /// The leftovers of `bucket`: key -> resourceVersion.
    pub fn of_bucket(&self, bucket: u32) -> BTreeMap<String, String> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.iter().filter(|(_, (b, _))| *b == bucket).map(|(k, (_, rv))| (k.clone(), rv.clone())).collect()
    }

    /// Changes whenever the set changes.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.version.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_delete_retain_and_a_version_that_moves_only_on_change() {
        let l = Leftovers::default();
        let mut seen = l.subscribe();
        l.apply("a/x".into(), 1, "5".into());
        l.apply("a/y".into(), 2, "6".into());
        assert!(seen.has_changed().expect("open"));
        seen.mark_unchanged();
        l.apply("a/x".into(), 1, "5".into());
        assert!(!seen.has_changed().expect("open"), "the same again is no change");
        l.apply("a/x".into(), 1, "7".into());
        assert_eq!(l.of_bucket(1), BTreeMap::from([("a/x".to_owned(), "7".to_owned())]));
        l.retain(&BTreeSet::from([1]));
        assert!(l.of_bucket(2).is_empty());
        l.delete("a/x");
        assert!(l.of_bucket(1).is_empty());
    }
}
