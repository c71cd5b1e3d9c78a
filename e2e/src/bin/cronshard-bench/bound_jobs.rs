//! The plain client's Jobs: what a client that does nothing else achieves against the server.

use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};

/// Creates `jobs` Jobs whose pod runs `container`, `in_flight` POSTs at a time. Returns (Jobs
/// created, creates per second).
pub(crate) async fn create(api: &Api<Job>, jobs: usize, container: &Value, in_flight: usize) -> (usize, f64) {
    let started = Instant::now();
    let created = futures::stream::iter(0..jobs)
        .map(|i| async move {
            // "x" before the number: the analysis must not read it as a run's minute.
            let job: Job = serde_json::from_value(json!({"metadata": {"name": format!("bound-x{i}")},
                "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}}))
            .ok()?;
            api.create(&PostParams::default(), &job).await.ok()
        })
        .buffer_unordered(in_flight)
        .filter(|j| futures::future::ready(j.is_some()))
        .count()
        .await;
    (created, created as f64 / started.elapsed().as_secs_f64().max(1e-3))
}
