//! Injected faults: error rates per verb, latency, pause, and partitioned users.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// The cost model: latency per verb class and per object examined by lists from storage.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Latency {
    /// get, and lists served from the watch cache.
    pub read_ms: u64,
    /// create, update, patch, delete.
    pub write_ms: u64,
    /// Extra per object examined by a list served from storage (etcd has no label index).
    pub list_per_object_us: u64,
}

impl Default for Latency {
    fn default() -> Self {
        Latency { read_ms: 1, write_ms: 3, list_per_object_us: 5 }
    }
}

/// How a partitioned user's requests behave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PartitionMode {
    /// Requests hang until healed (or the client gives up).
    Hang,
    /// Requests fail at once with 503.
    Fail,
}

#[derive(Debug, Default, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultState {
    pub error_rates: HashMap<String, f64>,
    pub latency: Latency,
    pub paused: bool,
    pub partitions: HashMap<String, PartitionMode>,
    /// kube-apiserver's `ShardedListAndWatch` feature gate: lists and watches honour
    /// `shardSelector`. Switchable at run time, as a restart with another flag would.
    pub sharded_list_and_watch: bool,
}

#[derive(Debug)]
pub struct Faults {
    state: Mutex<FaultState>,
    /// Bumped on every change, so waiters never miss one.
    changed: tokio::sync::watch::Sender<u64>,
}

impl Faults {
    pub fn new(latency: Latency, sharded_list_and_watch: bool) -> Self {
        Faults {
            state: Mutex::new(FaultState { latency, sharded_list_and_watch, ..FaultState::default() }),
            changed: tokio::sync::watch::channel(0).0,
        }
    }

    pub fn snapshot(&self) -> FaultState {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn update(&self, f: impl FnOnce(&mut FaultState)) {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()));
        self.changed.send_modify(|v| *v += 1);
    }

    /// Waits until nothing holds `user` back (pause or a hanging partition).
    pub async fn wait_until_released(&self, user: &str) {
        // Subscribing before looking means a change after the look still wakes us.
        let mut changes = self.changed.subscribe();
        loop {
            let blocked = {
                let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
                s.paused || s.partitions.get(user) == Some(&PartitionMode::Hang)
            };
            if !blocked {
                return;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// Whether a request of this verb should fail with 500 now.
    pub fn should_fail(&self, verb: &str) -> bool {
        let rate = self.state.lock().unwrap_or_else(|e| e.into_inner()).error_rates.get(verb).copied().unwrap_or(0.0);
        rate > 0.0 && rand::random::<f64>() < rate
    }
}
