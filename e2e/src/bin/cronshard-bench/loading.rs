//! The scenario's CronJobs created through a real server's API: its namespaces, the CronJobs
//! present from the start, and (from [`crate::window`]) the later ones.

use std::time::Instant;

use cronshard_e2e::scenario::{CronJobSeed, Scenario};
use cronshard_types::Timestamp;
use futures::StreamExt;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

use crate::cluster;
use crate::hours::{Boundaries, Hours};

/// Requests in flight while loading CronJobs and while measuring the bound.
pub(crate) const IN_FLIGHT: usize = 64;
/// The least time between the last CronJob loaded and the herd's minute.
const MIN_LEAD_S: i64 = 15;

/// Creates the scenario's CronJobs present from the start (and every namespace) to fire at
/// boundaries far enough ahead; returns every CronJob, the later ones not created yet.
pub(crate) async fn load_herd(
    client: &kube::Client,
    scenario: &Scenario,
    (cluster, hours): (Option<cluster::Run>, Hours),
    bound_namespace: &str,
) -> Result<(Vec<CronJobSeed>, Boundaries), String> {
    // Loading runs at a few hundred creates per second on two cores; a minute to spare.
    let now = Timestamp::now();
    let boundaries = Boundaries::after(now, 60 + scenario.cronjobs as i64 / 200, hours)?;
    let seeds = boundaries.seeds(scenario, now);
    create_namespaces(client, &seeds, bound_namespace).await?;
    let present: Vec<CronJobSeed> = seeds.iter().filter(|s| s.appears_s <= 0.0).cloned().collect();
    load(client, &present, cluster.map(|c| c.container())).await?;
    let lead = boundaries.first().as_second() - Timestamp::now().as_second();
    if lead < MIN_LEAD_S {
        return Err(format!("loading {} CronJobs ended {lead} s before their minute: too late", present.len()));
    }
    Ok((seeds, boundaries))
}

/// Every namespace of `seeds`, and `also`.
async fn create_namespaces(client: &kube::Client, seeds: &[CronJobSeed], also: &str) -> Result<(), String> {
    let mut names: Vec<&str> = seeds.iter().map(|s| s.namespace.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names.push(also);
    let api: Api<Namespace> = Api::all(client.clone());
    for name in names {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).map_err(|e| e.to_string())?;
        api.create(&PostParams::default(), &ns).await.map_err(|e| format!("namespace {name}: {e}"))?;
    }
    Ok(())
}

/// Creates every CronJob through the API, `IN_FLIGHT` at a time; with `container`, its pods
/// run that container.
pub(crate) async fn load(
    client: &kube::Client,
    seeds: &[CronJobSeed],
    container: Option<serde_json::Value>,
) -> Result<(), String> {
    let buckets = std::num::NonZeroU32::new(64).ok_or("buckets")?;
    let started = Instant::now();
    // Built first, so that the requests own what they send (the later ones run in a task).
    let objects = seeds
        .iter()
        .map(|seed| {
            let mut object = seed.object(buckets);
            object["metadata"].as_object_mut().map(|m| m.remove("creationTimestamp"));
            if let Some(container) = &container {
                object["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"] = json!([container]);
            }
            let cj: CronJob = serde_json::from_value(object).map_err(|e| format!("{}: {e}", seed.name))?;
            Ok((seed.namespace.clone(), seed.name.clone(), cj))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let results: Vec<Result<(), String>> = futures::stream::iter(objects)
        .map(|(namespace, name, cj)| {
            let api: Api<CronJob> = Api::namespaced(client.clone(), &namespace);
            async move { api.create(&PostParams::default(), &cj).await.map(|_| ()).map_err(|e| format!("{name}: {e}")) }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    results.into_iter().collect::<Result<Vec<()>, String>>()?;
    tracing::info!(cronjobs = seeds.len(), seconds = started.elapsed().as_secs_f64(), "CronJobs created");
    Ok(())
}
