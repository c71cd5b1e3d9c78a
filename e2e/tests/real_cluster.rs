//! On a whole cluster without a kubelet (`scripts/kube-testbed up --cluster`: kube-scheduler,
//! kube-controller-manager without its CronJob controller, kwok's fake nodes running the pods),
//! shared by two tests that wait for real minutes at the same time:
//! - upstream's own `[sig-apps] CronJob` e2e specs against two cronshard replicas, every one
//!   passing (`scripts/upstream-e2e`);
//! - three replicas sharing 64 buckets through real Leases under 300 every-minute CronJobs whose
//!   pods run 20 s: one is SIGKILLed just before a boundary and replaced, its buckets are
//!   owned again within a lease duration plus a renew period, every run starts once (judged
//!   from kube-apiserver's audit log), every Job completes through the Job controller, and
//!   the history limit (one successful Job) holds for Jobs and their Pods.
//!
//! The two sets of replicas split the CronJobs by a label (`--selector`), as two
//! deployments would.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::time::{Duration, Instant};

use common::real::{Cluster, Options, Testbed, finished, holders, jobs, minute_of, now_seconds, replica, wait_until};
use common::{http, terminate};
use cronshard_e2e::kube_audit;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

const HERD_LABEL: &str = "cronshard.test/herd";
const CRONJOBS: usize = 300;
const BUCKETS: usize = 64;
const LEASE_DURATION_S: u64 = 10;
const RENEW_PERIOD_S: u64 = 1;
const HISTORY_LIMIT: usize = 1;

/// The cluster both tests share: an audit log for judging, and a Job controller with its
/// client rate raised for a 300-Job herd a minute (kube-controller-manager's default is 20 QPS
/// for each of its controllers; each Job costs a Pod create and several status writes).
fn cluster() -> &'static Testbed {
    let dir = std::env::temp_dir().join(format!("cronshard-cluster-policy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("policy dir");
    let policy = dir.join("audit-policy.yaml");
    std::fs::write(&policy, kube_audit::POLICY).expect("audit policy");
    Testbed::shared(&Options {
        audit_policy: Some(policy),
        apiserver_args: vec!["--audit-log-batch-max-wait=1s".into()],
        controller_manager_flags: Some("--kube-api-qps 300 --kube-api-burst 500 --concurrent-job-syncs 20".into()),
        cluster: Some(Cluster::default()),
        ..Options::default()
    })
}

/// Buckets the replica serving `metrics` owns.
fn buckets_owned(metrics: &str) -> usize {
    let text = http("GET", &format!("{metrics}/metrics"), None);
    let line = text.lines().find(|l| l.starts_with("cronshard_buckets_owned "));
    line.and_then(|l| l.split_whitespace().nth(1)?.parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstreams_cronjob_e2e_specs_all_pass_against_two_replicas() {
    let testbed = tokio::task::spawn_blocking(cluster).await.expect("cluster");
    let lease_ns = testbed.namespace("e2e-leases").await;
    let args = ["--namespace", lease_ns.as_str(), "--selector", "!cronshard.test/herd"];
    let kubeconfig = testbed.admin_kubeconfig();
    let mut replicas = Vec::new();
    for name in ["e2e-r1", "e2e-r2"] {
        replicas.push(replica(&kubeconfig, name, &args, &testbed.dir().join(format!("{name}.log"))));
    }
    wait_until("the two replicas to own every bucket", Duration::from_secs(90), || {
        let owned: usize = replicas.iter().map(|(_, metrics)| buckets_owned(metrics)).sum();
        async move { (owned == BUCKETS).then_some(()) }
    })
    .await;
    let script = common::workspace().join("scripts/upstream-e2e");
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(script).arg("--kubeconfig").arg(&kubeconfig).output().expect("upstream-e2e runs")
    })
    .await
    .expect("joins");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let _ = writeln!(std::io::stderr(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let summary = stdout.lines().find(|l| l.contains(" Passed | ")).expect("ginkgo's summary line");
    let ran = stdout.lines().find(|l| l.starts_with("Ran ")).expect("ginkgo's `Ran N of M Specs` line");
    let count = |line: &str, word: &str| -> usize {
        let before = line.split(word).next().unwrap_or_default();
        before.split_whitespace().last().and_then(|n| n.parse().ok()).unwrap_or(usize::MAX)
    };
    // Every [sig-apps] CronJob spec of this Kubernetes version ran (12 in v1.37), none failed.
    let passed = count(summary, " Passed");
    assert!(passed >= 12, "{ran}: {summary}");
    assert_eq!(count(ran, " of "), passed, "every spec that ran passed: {ran}");
    assert_eq!((count(summary, " Failed"), count(summary, " Pending")), (0, 0), "{summary}");
    assert!(output.status.success(), "scripts/upstream-e2e failed: {summary}");
    for (mut p, _) in replicas {
        assert_eq!(terminate(&mut p), Some(0), "a replica exits cleanly on SIGTERM");
    }
}

fn per_holder(held: &BTreeMap<String, String>) -> HashMap<&str, usize> {
    let mut per: HashMap<&str, usize> = HashMap::new();
    for h in held.values() {
        *per.entry(h.as_str()).or_default() += 1;
    }
    per
}

/// Lease timings short enough for a test, and the herd's CronJobs only.
fn herd_args(lease_ns: &str) -> Vec<String> {
    let args = ["--namespace", lease_ns, "--buckets", "64", "--selector", HERD_LABEL, "--lease-duration", "10s"];
    let timings = ["--renew-period", "1s", "--renew-deadline", "5s", "--join-grace", "3s"];
    args.iter().chain(&timings).map(|s| (*s).to_owned()).collect()
}

fn herd_replica(testbed: &Testbed, lease_ns: &str, name: &str) -> common::Proc {
    let args = herd_args(lease_ns);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    replica(&testbed.admin_kubeconfig(), name, &args, &testbed.dir().join(format!("{name}.log"))).0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_herd_of_real_jobs_runs_once_each_through_a_replica_killed_at_a_boundary() {
    let testbed = tokio::task::spawn_blocking(cluster).await.expect("cluster");
    let client = testbed.client().await;
    let ns = testbed.namespace("herd").await;
    let lease_ns = testbed.namespace("sharing").await;
    let cronjobs: Api<CronJob> = Api::namespaced(client.clone(), &ns);
    for i in 0..CRONJOBS {
        let cj = json!({"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": format!("every-{i:03}"), "labels": {HERD_LABEL: "true"}},
            "spec": {"schedule": "* * * * *", "successfulJobsHistoryLimit": HISTORY_LIMIT,
                "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "20"]}]}}}}}});
        let cj: CronJob = serde_json::from_value(cj).expect("cronjob");
        cronjobs.create(&PostParams::default(), &cj).await.expect("create cronjob");
    }
    let mut replicas: HashMap<String, common::Proc> = ["real-r1", "real-r2", "real-r3"]
        .into_iter()
        .map(|name| (name.to_owned(), herd_replica(testbed, &lease_ns, name)))
        .collect();
    let leases: Api<Lease> = Api::namespaced(client.clone(), &lease_ns);
    wait_until("64 buckets split among three replicas", Duration::from_secs(60), || async {
        let per_count: Vec<usize> = per_holder(&holders(&leases).await).into_values().collect();
        (per_count.iter().sum::<usize>() == BUCKETS && per_count.len() == 3 && per_count.iter().all(|&n| n >= 15))
            .then_some(())
    })
    .await;

    let first = minute_of(now_seconds()) + 1;
    wait_for_runs(&client, &ns, first).await;
    // Two seconds before the next boundary, the busiest replica dies; a new one replaces it.
    let kill_at = (first + 1) * 60 - 2;
    tokio::time::sleep(Duration::from_secs(u64::try_from(kill_at - now_seconds()).unwrap_or(0))).await;
    kill_the_busiest_and_replace_it(testbed, &mut replicas, &leases, &lease_ns).await;
    for minute in [first + 1, first + 2] {
        wait_for_runs(&client, &ns, minute).await;
    }
    let left = wait_for_history(&client, &ns).await;
    let created = creates_from_the_audit_log(testbed, &ns, first..=first + 2).await;
    for i in 0..CRONJOBS {
        let owner = format!("every-{i:03}");
        let minutes = created.get(&owner).cloned().unwrap_or_default();
        for minute in first..=first + 2 {
            let n = minutes.iter().filter(|m| **m == minute).count();
            assert_eq!(n, 1, "{owner}'s run of minute {minute} created {n} times: {minutes:?}");
        }
        let dup = minutes.len() - minutes.iter().collect::<std::collections::BTreeSet<_>>().len();
        assert_eq!(dup, 0, "{owner} has a run created twice: {minutes:?}");
        assert!(left.get(&owner).is_some_and(|n| *n <= HISTORY_LIMIT), "{owner} keeps {:?} Jobs", left.get(&owner));
    }
    let _ = writeln!(
        std::io::stderr(),
        "{} runs created once each; {} Jobs and their Pods left",
        created.values().map(Vec::len).sum::<usize>(),
        left.values().sum::<usize>()
    );
    for (_, mut p) in replicas {
        assert_eq!(terminate(&mut p), Some(0), "a replica exits cleanly on SIGTERM");
    }
}

/// Waits until every CronJob has its run of `minute`.
async fn wait_for_runs(client: &kube::Client, ns: &str, minute: i64) {
    let suffix = format!("-{minute}");
    wait_until(&format!("the runs of minute {minute}"), Duration::from_secs(100), || async {
        let all = jobs(client, ns).await;
        let runs = all.iter().filter(|j| j.metadata.name.as_deref().is_some_and(|n| n.ends_with(&suffix))).count();
        (runs == CRONJOBS).then_some(())
    })
    .await;
}

/// SIGKILLs the replica holding the most buckets and starts a new one (as a Deployment would);
/// the victim's buckets are owned again within a lease duration plus a renew period.
async fn kill_the_busiest_and_replace_it(
    testbed: &Testbed,
    replicas: &mut HashMap<String, common::Proc>,
    leases: &Api<Lease>,
    lease_ns: &str,
) {
    let before = holders(leases).await;
    let victim = per_holder(&before).into_iter().max_by_key(|(_, n)| *n).map(|(h, _)| h.to_owned()).expect("holder");
    let victim_buckets: Vec<String> = before.iter().filter(|(_, h)| **h == victim).map(|(b, _)| b.clone()).collect();
    let mut killed = replicas.remove(&victim).expect("victim process");
    killed.0.kill().expect("SIGKILL");
    let killed_at = Instant::now();
    let _ = killed.0.wait();
    replicas.insert("real-r4".into(), herd_replica(testbed, lease_ns, "real-r4"));
    let took = wait_until("the victim's buckets owned again", Duration::from_secs(60), || async {
        let now = holders(leases).await;
        victim_buckets.iter().all(|b| now.get(b).is_some_and(|h| *h != victim)).then(|| killed_at.elapsed())
    })
    .await;
    let bound = Duration::from_secs(LEASE_DURATION_S + RENEW_PERIOD_S);
    let _ = writeln!(
        std::io::stderr(),
        "{} buckets of {victim} re-owned {took:?} after SIGKILL (bound {bound:?})",
        victim_buckets.len()
    );
    // Slack for the 250 ms polling and the answers of a server that the Job controller, the
    // scheduler, kwok and the e2e suite load at the same time.
    assert!(took <= bound + Duration::from_secs(3), "re-owned after {took:?}; bound {bound:?} plus polling");
}

/// Waits until every Job left has finished through the Job controller, the history limit
/// holds and each Job left has exactly its one Pod (the deleted Jobs' Pods are gone with
/// them); returns the Jobs left per CronJob.
async fn wait_for_history(client: &kube::Client, ns: &str) -> HashMap<String, usize> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    wait_until("every Job complete, the history limit kept, one Pod a Job", Duration::from_secs(180), || async {
        let all = jobs(client, ns).await;
        let pods = pods.list(&ListParams::default()).await.expect("list pods").items;
        let complete = all.iter().all(|j| finished(j) && j.status.as_ref().and_then(|s| s.succeeded) == Some(1));
        let mut left: HashMap<String, usize> = HashMap::new();
        for job in &all {
            let name = job.metadata.name.clone().unwrap_or_default();
            *left.entry(name.rsplit_once('-').map(|(o, _)| o.to_owned()).unwrap_or(name)).or_default() += 1;
        }
        let limited = left.values().all(|n| *n <= HISTORY_LIMIT);
        (complete && limited && pods.len() == all.len()).then_some(left)
    })
    .await
}

/// The minutes of the Jobs each CronJob's controller created (201), from the audit log
/// (deleted Jobs included), once it records a run of each CronJob in `minutes` (the log is
/// written in batches).
async fn creates_from_the_audit_log(
    testbed: &Testbed,
    ns: &str,
    minutes: std::ops::RangeInclusive<i64>,
) -> HashMap<String, Vec<i64>> {
    let log = testbed.dir().join("audit.log");
    wait_until("the audit log's record of every run", Duration::from_secs(30), || {
        let text = std::fs::read_to_string(&log).expect("audit log");
        let created = job_creates(&text, ns);
        let complete = created.len() == CRONJOBS && created.values().all(|ms| minutes.clone().all(|m| ms.contains(&m)));
        async move { complete.then_some(created) }
    })
    .await
}

fn job_creates(audit_log: &str, ns: &str) -> HashMap<String, Vec<i64>> {
    let mut created: HashMap<String, Vec<i64>> = HashMap::new();
    for record in kube_audit::records(audit_log) {
        let is_create = record["verb"] == "create" && record["resource"] == "jobs" && record["code"] == 201;
        if !is_create || record["namespace"] != ns {
            continue;
        }
        let name = record["name"].as_str().unwrap_or_default();
        if let Some((owner, minute)) = name.rsplit_once('-').and_then(|(o, m)| Some((o, m.parse::<i64>().ok()?))) {
            created.entry(owner.to_owned()).or_default().push(minute);
        }
    }
    created
}
