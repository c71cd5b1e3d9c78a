//! The job runner: like kwok, moves Jobs through their life (started with a ready pod, then
//! Complete or Failed after a sampled duration), so CronJob history and concurrency rules have
//! real work.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::SimState;
use crate::resource::Resource;
use crate::store::{EventType, Object, ReadAt};

/// How simulated Jobs behave.
#[derive(Clone, Debug, PartialEq)]
pub struct RunnerConfig {
    /// From creation to `status.startTime`.
    pub start_delay: Duration,
    /// Run time is uniform in `[min, max]`.
    pub duration_min: Duration,
    pub duration_max: Duration,
    /// Fraction of Jobs that end Complete; the rest end Failed.
    pub success_ratio: f64,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            start_delay: Duration::from_millis(500),
            duration_min: Duration::from_secs(5),
            duration_max: Duration::from_secs(15),
            success_ratio: 0.9,
        }
    }
}

pub(crate) fn spawn(state: SimState, config: RunnerConfig) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut events = state.store().subscribe();
        let seen: Arc<Mutex<HashSet<String>>> = Arc::default();
        // Jobs that exist before the runner starts (bulk loads) run too.
        adopt_all(&state, &config, &seen);
        loop {
            match events.recv().await {
                // ADDED, or MODIFIED (a suspended Job resumed); `seen` stops double starts.
                Ok(event) if event.kind != EventType::Deleted && event.object.resource == Resource::Jobs => {
                    start(&state, &config, &seen, &event.object);
                }
                Ok(_) => {}
                // Fell behind a burst: rescan instead of missing Jobs.
                Err(RecvError::Lagged(_)) => adopt_all(&state, &config, &seen),
                Err(RecvError::Closed) => return,
            }
        }
    })
}

fn adopt_all(state: &SimState, config: &RunnerConfig, seen: &Arc<Mutex<HashSet<String>>>) {
    let all = |_: &Object| true;
    if let Ok(page) = state.store().list(Resource::Jobs, None, ReadAt::Latest, None, 0, &all) {
        for job in page.items {
            start(state, config, seen, &job);
        }
    }
}

fn start(state: &SimState, config: &RunnerConfig, seen: &Arc<Mutex<HashSet<String>>>, job: &Object) {
    let value = job.value();
    let finished = value["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter().any(|c| matches!(c["type"].as_str(), Some("Complete" | "Failed")) && c["status"] == "True")
    });
    if finished || value["spec"]["suspend"] == true {
        return;
    }
    if !seen.lock().unwrap_or_else(|e| e.into_inner()).insert(job.uid.clone()) {
        return;
    }
    let (state, config, seen) = (state.clone(), config.clone(), seen.clone());
    let (namespace, name, uid) = (job.namespace.clone(), job.name.clone(), job.uid.clone());
    tokio::spawn(async move {
        tokio::time::sleep(config.start_delay).await;
        let now = state.store().clock().now_rfc3339();
        let started = set_status(&state, &namespace, &name, &uid, |status| {
            if status.get("startTime").is_none_or(Value::is_null) {
                status["startTime"] = json!(now);
            }
            // Its pod runs and is ready, as kwok's default stages make it.
            status["active"] = json!(1);
            status["ready"] = json!(1);
        });
        if started {
            let span = config.duration_max.saturating_sub(config.duration_min);
            let run = config.duration_min + span.mul_f64(rand::random::<f64>());
            tokio::time::sleep(run).await;
            let now = state.store().clock().now_rfc3339();
            let succeeded = rand::random::<f64>() < config.success_ratio;
            set_status(&state, &namespace, &name, &uid, |status| {
                status["active"] = json!(0);
                status["ready"] = json!(0);
                let condition = |kind: &str, reason: &str, message: &str| json!({"type": kind, "status": "True", "lastProbeTime": now, "lastTransitionTime": now, "reason": reason, "message": message});
                if succeeded {
                    status["succeeded"] = json!(1);
                    status["completionTime"] = json!(now);
                    status["conditions"] = json!([
                        condition(
                            "SuccessCriteriaMet",
                            "CompletionsReached",
                            "Reached expected number of succeeded pods"
                        ),
                        condition("Complete", "CompletionsReached", "Reached expected number of succeeded pods"),
                    ]);
                } else {
                    status["failed"] = json!(1);
                    status["conditions"] = json!([
                        condition(
                            "FailureTarget",
                            "BackoffLimitExceeded",
                            "Job has reached the specified backoff limit"
                        ),
                        condition("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
                    ]);
                }
            });
        }
        seen.lock().unwrap_or_else(|e| e.into_inner()).remove(&uid);
    });
}

/// Updates a Job's status if it still exists with the same uid; false if it is gone.
fn set_status(state: &SimState, namespace: &str, name: &str, uid: &str, f: impl FnOnce(&mut Value)) -> bool {
    state
        .store()
        .update(Resource::Jobs, namespace, name, |current| {
            if current.uid != uid {
                return Ok(None);
            }
            let mut value = current.value();
            if !value["status"].is_object() {
                value["status"] = json!({});
            }
            f(&mut value["status"]);
            Ok(Some(value))
        })
        .is_ok_and(|o| o.uid == uid)
}
