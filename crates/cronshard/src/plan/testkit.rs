//! Test fixtures shared by the plan's unit tests.

use cronshard_types::Timestamp;
use serde_json::{Value, json};

use super::settings::{Settings, Window};

pub(crate) fn at(text: &str) -> Timestamp {
    text.parse().expect("timestamp")
}

pub(crate) fn window(from: &str, hours: u32) -> Window {
    Window::new(at(from), hours).expect("window")
}

/// A CronJob as `kubectl get -o json` prints it, with fields the plan must ignore.
pub(crate) fn cronjob(name: &str, schedule: &str) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"namespace": "default", "name": name, "creationTimestamp": "2026-11-01T00:03:00Z",
            "uid": "x", "managedFields": [{"manager": "kubectl"}]},
        "spec": {"schedule": schedule, "concurrencyPolicy": "Forbid", "jobTemplate": {"spec": {}}},
        "status": {"active": []},
    })
}

pub(crate) fn settings(skew_target_s: f64, qps: f64, admitted_writes_per_s: f64, memory_per_replica: u64) -> Settings {
    Settings { skew_target_s, qps, admitted_writes_per_s, memory_per_replica }
}

pub(crate) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}
