//! Namespace defaults for `cronshard.io/spread`: a Namespace annotated with a spread gives it
//! to every CronJob in it that has none of its own. A plain map that the Namespace watch
//! fills and the bucket workers read; its version changes whenever a default does, so the
//! workers sync their CronJobs again.

use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Debug, Default)]
struct Entries {
    /// Namespace name -> its `cronshard.io/spread` annotation.
    spreads: HashMap<String, String>,
    /// The first list is in: until then no CronJob may run without its default.
    listed: bool,
}

/// The spread defaults of the cluster's Namespaces.
#[derive(Debug)]
pub struct NamespaceSpreads {
    entries: Mutex<Entries>,
    version: tokio::sync::watch::Sender<u64>,
}

impl Default for NamespaceSpreads {
    fn default() -> Self {
        NamespaceSpreads { entries: Mutex::default(), version: tokio::sync::watch::channel(0).0 }
    }
}

impl NamespaceSpreads {
    fn change(&self, edit: impl FnOnce(&mut Entries) -> bool) {
        let changed = edit(&mut self.entries.lock().unwrap_or_else(|e| e.into_inner()));
        if changed {
            self.version.send_modify(|v| *v += 1);
        }
    }

    /// Namespace `name` has `spread` (`None`: no annotation).
    pub fn apply(&self, name: &str, spread: Option<String>) {
        self.change(|e| match spread {
            Some(text) => e.spreads.insert(name.to_owned(), text.clone()).is_none_or(|old| old != text),
            None => e.spreads.remove(name).is_some(),
        });
    }

    /// A fresh list: these are all the defaults there are.
    pub fn reset(&self, spreads: HashMap<String, String>) {
        self.change(|e| {
            let changed = !e.listed || e.spreads != spreads;
            e.spreads = spreads;
            e.listed = true;
            changed
        });
    }

    /// The default of `namespace`, if it has one.
    pub fn get(&self, namespace: &str) -> Option<String> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).spreads.get(namespace).cloned()
    }

    /// The first list is in.
    pub fn listed(&self) -> bool {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).listed
    }

    /// Changes whenever a default does (and when the first list is in).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.version.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_is_kept_per_namespace_and_only_a_change_bumps_the_version() {
        let s = NamespaceSpreads::default();
        let version = s.subscribe();
        assert!(!s.listed());
        s.reset(HashMap::from([("team-a".to_owned(), "5m".to_owned())]));
        assert!(s.listed());
        assert_eq!(*version.borrow(), 1, "the first list is a change, even if empty");
        assert_eq!(s.get("team-a").as_deref(), Some("5m"));
        s.reset(HashMap::from([("team-a".to_owned(), "5m".to_owned())]));
        s.apply("team-a", Some("5m".into()));
        s.apply("team-b", None);
        assert_eq!(*version.borrow(), 1, "nothing changed");
        s.apply("team-a", Some("0".into()));
        s.apply("team-b", Some("90s".into()));
        s.apply("team-a", None);
        assert_eq!(*version.borrow(), 4);
        assert_eq!((s.get("team-a"), s.get("team-b").as_deref()), (None, Some("90s")));
    }
}
