//! Server-side sharding on the real control plane (kube-apiserver builds KEP-5866's
//! `shardSelector` behind the `ShardedListAndWatch` feature gate; on a version without the
//! gate only the fall back is tested). Two control planes at once, both tests waiting for
//! the same real minutes:
//! - with the gate on, three replicas (`--server-side-sharding auto`) under 500 CronJobs
//!   created while they run: every run starts once (from the audit log), one replica is
//!   SIGKILLed before a boundary and replaced, and no CronJob is ever written to except its
//!   `/status`;
//! - without it, `auto` falls back to labels and the same holds, the label patches counted.

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use common::real::{Options, Testbed, holders, minute_of, now_seconds, replica, wait_until};
use common::{http, terminate};
use cronshard_e2e::kube_audit;
use cronshard_e2e::testbed::{StartError, kube_version, kube_versions};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

const CRONJOBS: usize = 500;
const BUCKETS: usize = 16;

fn control_plane(gate: bool) -> Result<Testbed, StartError> {
    let dir = std::env::temp_dir().join(format!("cronshard-sharding-policy-{}-{gate}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("policy dir");
    let policy = dir.join("audit-policy.yaml");
    std::fs::write(&policy, kube_audit::POLICY).expect("audit policy");
    let mut apiserver_args = vec!["--audit-log-batch-max-wait=1s".to_owned()];
    if gate {
        apiserver_args.push("--feature-gates=ShardedListAndWatch=true".into());
    }
    Testbed::start(&Options { audit_policy: Some(policy), apiserver_args, ..Options::default() })
}

fn sharing_replica(testbed: &Testbed, lease_ns: &str, name: &str) -> (common::Proc, String) {
    let args = ["--namespace", lease_ns, "--buckets", "16", "--lease-duration", "10s", "--renew-period", "1s"];
    let timings = ["--renew-deadline", "5s", "--join-grace", "3s", "--server-side-sharding", "auto"];
    let args: Vec<&str> = args.iter().chain(&timings).copied().collect();
    replica(&testbed.admin_kubeconfig(), name, &args, &testbed.dir().join(format!("{name}.log")))
}

fn metric(metrics_url: &str, name: &str) -> Option<f64> {
    let text = http("GET", &format!("{metrics_url}/metrics"), None);
    text.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().last()?.parse().ok())
}

async fn wait_for_runs(client: &kube::Client, ns: &str, minute: i64) {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let suffix = format!("-{minute}");
    wait_until(&format!("the runs of minute {minute}"), Duration::from_secs(100), || async {
        let all = jobs.list(&ListParams::default()).await.expect("list jobs").items;
        let runs = all.iter().filter(|j| j.metadata.name.as_deref().is_some_and(|n| n.ends_with(&suffix))).count();
        (runs == CRONJOBS).then_some(())
    })
    .await;
}

/// What the audit log says was written to CronJobs and which Jobs were created, once it has
/// every run of `minutes`: (writes to CronJobs as `verb resource`, Job creates per CronJob).
async fn audited(testbed: &Testbed, ns: &str, minutes: [i64; 2]) -> (Vec<String>, HashMap<String, Vec<i64>>) {
    let log = testbed.dir().join("audit.log");
    wait_until("the audit log's record of every run", Duration::from_secs(30), || {
        let records = kube_audit::records(&std::fs::read_to_string(&log).expect("audit log"));
        let mut created: HashMap<String, Vec<i64>> = HashMap::new();
        let mut writes = Vec::new();
        for r in records.iter().filter(|r| r["namespace"] == ns) {
            let (verb, resource) = (r["verb"].as_str().unwrap_or_default(), r["resource"].as_str().unwrap_or_default());
            if resource.starts_with("cronjobs") && matches!(verb, "update" | "patch") {
                writes.push(format!("{verb} {resource}"));
            }
            let name = r["name"].as_str().unwrap_or_default();
            let run = name.rsplit_once('-').and_then(|(o, m)| Some((o, m.parse::<i64>().ok()?)));
            if verb == "create"
                && resource == "jobs"
                && r["code"] == 201
                && let Some((owner, m)) = run
            {
                created.entry(owner.to_owned()).or_default().push(m);
            }
        }
        let complete = created.len() == CRONJOBS && created.values().all(|ms| minutes.iter().all(|m| ms.contains(m)));
        async move { complete.then_some((writes, created)) }
    })
    .await
}

/// Three replicas, 500 CronJobs created while they run, a SIGKILL before the second
/// boundary: every run once; returns the writes to CronJobs other than `/status`.
async fn three_replicas_under_500_cronjobs(testbed: &Testbed, filtering: f64) -> Vec<String> {
    let client = testbed.client().await;
    let ns = testbed.namespace("sharded").await;
    let lease_ns = testbed.namespace("leases").await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &lease_ns);
    let mut replicas: HashMap<String, (common::Proc, String)> =
        ["r1", "r2", "r3"].into_iter().map(|n| (n.to_owned(), sharing_replica(testbed, &lease_ns, n))).collect();
    wait_until("16 buckets split among three replicas", Duration::from_secs(60), || async {
        let held = holders(&leases).await;
        let distinct: std::collections::BTreeSet<&String> = held.values().collect();
        (held.len() == BUCKETS && distinct.len() == 3).then_some(())
    })
    .await;
    for (name, (_, metrics)) in &replicas {
        let on = metric(metrics, "cronshard_server_side_sharding ");
        assert_eq!(on, Some(filtering), "{name}: cronshard_server_side_sharding");
    }
    let cronjobs: Api<CronJob> = Api::namespaced(client.clone(), &ns);
    for i in 0..CRONJOBS {
        let cj = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": format!("every-{i:03}")},
            "spec": {"schedule": "* * * * *", "concurrencyPolicy": "Allow", "jobTemplate": {"spec": {"template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}});
        let cj: CronJob = serde_json::from_value(cj).expect("cronjob");
        cronjobs.create(&PostParams::default(), &cj).await.expect("create cronjob");
    }
    let first = minute_of(now_seconds()) + 1;
    wait_for_runs(&client, &ns, first).await;
    // Two seconds before the next boundary the busiest replica dies, and a new one comes.
    let kill_at = (first + 1) * 60 - 2;
    tokio::time::sleep(Duration::from_secs(u64::try_from(kill_at - now_seconds()).unwrap_or(0))).await;
    let held = holders(&leases).await;
    let mut per: HashMap<&str, usize> = HashMap::new();
    for h in held.values() {
        *per.entry(h.as_str()).or_default() += 1;
    }
    let victim = per.into_iter().max_by_key(|(_, n)| *n).map(|(h, _)| h.to_owned()).expect("a holder");
    let (mut killed, _) = replicas.remove(&victim).expect("victim");
    killed.0.kill().expect("SIGKILL");
    let _ = killed.0.wait();
    replicas.insert("r4".into(), sharing_replica(testbed, &lease_ns, "r4"));
    wait_for_runs(&client, &ns, first + 1).await;
    let (writes, created) = audited(testbed, &ns, [first, first + 1]).await;
    for (owner, minutes) in &created {
        for minute in [first, first + 1] {
            let n = minutes.iter().filter(|m| **m == minute).count();
            assert_eq!(n, 1, "{owner}'s run of minute {minute} created {n} times: {minutes:?}");
        }
    }
    let foreign: f64 =
        replicas.values().filter_map(|(_, m)| metric(m, "cronshard_foreign_objects_total{kind=\"CronJob\"}")).sum();
    // The server's ranges are the buckets' own: none received another bucket's CronJob, so
    // none went back to labels.
    assert_eq!(foreign, 0.0, "no bucket received another bucket's CronJob");
    for (name, (_, metrics)) in &replicas {
        assert_eq!(metric(metrics, "cronshard_server_side_sharding "), Some(filtering), "{name} at the end");
    }
    for (_, (mut p, _)) in replicas {
        assert_eq!(terminate(&mut p), Some(0), "a replica exits cleanly on SIGTERM");
    }
    writes.into_iter().filter(|w| w != "update cronjobs/status" && w != "patch cronjobs/status").collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_gate_on_no_cronjob_is_written_but_its_status() {
    let started = tokio::task::spawn_blocking(|| control_plane(true)).await.expect("join");
    let testbed = match started {
        Ok(testbed) => testbed,
        // A version without the gate: `auto` can only find labels, which the test without
        // the gate proves on it. The newest supported version must have it.
        Err(e) if e.to_string().contains("unrecognized feature gate") => {
            let (version, versions) = (kube_version().expect("version"), kube_versions().expect("versions"));
            assert_ne!(Some(&version), versions.last(), "the newest version refuses the gate: {e}");
            let _ = writeln!(std::io::stderr(), "kube-apiserver {version} has no ShardedListAndWatch gate");
            return;
        }
        Err(e) => panic!("control plane: {e}"),
    };
    let others = three_replicas_under_500_cronjobs(&testbed, 1.0).await;
    assert!(others.is_empty(), "writes to CronJobs other than /status: {others:?}");
    let _ = writeln!(std::io::stderr(), "gate on: {CRONJOBS} CronJobs, every run once, 0 label patches");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_gate_auto_falls_back_to_labels() {
    let testbed = tokio::task::spawn_blocking(|| control_plane(false)).await.expect("join").expect("control plane");
    let others = three_replicas_under_500_cronjobs(&testbed, 0.0).await;
    assert!(others.iter().all(|w| w == "patch cronjobs"), "{others:?}");
    assert!(others.len() >= CRONJOBS, "every CronJob labelled: {} label patches", others.len());
    let _ =
        writeln!(std::io::stderr(), "gate off: {CRONJOBS} CronJobs, every run once, {} label patches", others.len());
}
