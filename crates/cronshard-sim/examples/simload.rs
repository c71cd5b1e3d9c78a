//! Seed files and throughput measurement for `cronshard-sim serve` (the figures in docs/simulator.md).
//!
//! `cargo run --release -p cronshard-sim --example simload -- seed --cronjobs N --jobs-per-cronjob J > seed.jsonl`
//! `cargo run --release -p cronshard-sim --example simload -- measure --kubeconfig F --creates N --concurrency C`

#![allow(clippy::print_stdout)] // a measuring tool: its output is the result

use std::io::Write;
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::CronJob;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn cronjob(i: usize) -> serde_json::Value {
    json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": format!("cj-{i:06}"), "namespace": format!("team-{:03}", i % 200),
            "uid": format!("00000000-0000-4000-8000-{i:012}"),
            "labels": {"app": format!("app-{}", i % 1000), "tier": "batch"}},
        "spec": {"schedule": format!("{} * * * *", i % 60), "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1, "suspend": false,
            "jobTemplate": {"spec": {"backoffLimit": 2, "template": {"metadata": {"labels": {"app": format!("app-{}", i % 1000)}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "registry.example.com/batch/worker:1.2.3",
                    "args": ["--task", format!("task-{i}")], "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}}}}
    })
}

fn job(i: usize, n: usize) -> serde_json::Value {
    let minute = 29_000_000 + n;
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": format!("cj-{i:06}-{minute}"), "namespace": format!("team-{:03}", i % 200),
            "labels": {"app": format!("app-{}", i % 1000)},
            "annotations": {"batch.kubernetes.io/cronjob-scheduled-timestamp": "2025-02-20T09:00:00Z"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": format!("cj-{i:06}"),
                "uid": format!("00000000-0000-4000-8000-{i:012}"), "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"backoffLimit": 2, "template": {"metadata": {"labels": {"app": format!("app-{}", i % 1000)}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "registry.example.com/batch/worker:1.2.3",
                "args": ["--task", format!("task-{i}")], "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}},
        "status": {"startTime": "2025-02-20T09:00:01Z", "completionTime": "2025-02-20T09:00:30Z", "succeeded": 1,
            "conditions": [{"type": "Complete", "status": "True", "lastProbeTime": "2025-02-20T09:00:30Z",
                "lastTransitionTime": "2025-02-20T09:00:30Z"}]}
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("seed") => {
            let (cronjobs, jobs) = (arg(&args, "--cronjobs", 100_000), arg(&args, "--jobs-per-cronjob", 3));
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            for i in 0..cronjobs {
                writeln!(out, "{}", cronjob(i))?;
                for n in 0..jobs {
                    writeln!(out, "{}", job(i, n))?;
                }
            }
        }
        Some("measure") => {
            let path =
                args.iter().position(|a| a == "--kubeconfig").and_then(|i| args.get(i + 1)).ok_or("--kubeconfig")?;
            let kubeconfig = kube::config::Kubeconfig::read_from(path)?;
            let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
            let client = kube::Client::try_from(config)?;
            let (creates, concurrency) = (arg(&args, "--creates", 5000), arg(&args, "--concurrency", 32));
            let api: Api<CronJob> = Api::namespaced(client.clone(), "default");
            let started = Instant::now();
            let results: Vec<bool> = futures::stream::iter(0..creates)
                .map(|i| {
                    let api = api.clone();
                    async move {
                        let mut body = cronjob(1_000_000 + i);
                        body["metadata"] = json!({"name": format!("measure-{i}")});
                        let cj: CronJob = serde_json::from_value(body).expect("cronjob");
                        api.create(&PostParams::default(), &cj).await.is_ok()
                    }
                })
                .buffer_unordered(concurrency)
                .collect()
                .await;
            let elapsed = started.elapsed().as_secs_f64();
            let ok = results.iter().filter(|r| **r).count();
            println!(
                "creates: {ok}/{creates} in {elapsed:.2}s = {:.0}/s (concurrency {concurrency})",
                ok as f64 / elapsed
            );
            let all: Api<CronJob> = Api::all(client);
            for (label, params) in [
                ("list all CronJobs from the watch cache (resourceVersion=0)", ListParams::default().match_any()),
                ("list all CronJobs from storage, pages of 500", ListParams::default().limit(500)),
                (
                    "list one bucket label from storage (scans all)",
                    ListParams::default().labels("app=app-7").limit(500),
                ),
            ] {
                let started = Instant::now();
                let mut count = 0;
                let mut params = params;
                loop {
                    let page = all.list(&params).await?;
                    count += page.items.len();
                    match page.metadata.continue_.filter(|c| !c.is_empty()) {
                        Some(token) => params = params.continue_token(&token),
                        None => break,
                    }
                }
                let elapsed = started.elapsed().as_secs_f64();
                println!("{label}: {count} objects in {elapsed:.2}s = {:.0} objects/s", count as f64 / elapsed);
            }
        }
        _ => return Err("usage: simload seed|measure ...".into()),
    }
    Ok(())
}
