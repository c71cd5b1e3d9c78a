//! Sharing through real Leases on a real kube-apiserver: three `cronshard run` replicas split
//! 64 buckets, one is SIGKILLed, and its buckets are owned again within a lease duration plus
//! a renew period; over three real minute boundaries 300 every-minute CronJobs each run
//! exactly once per minute. This test waits for real minutes: a real server's clock is the
//! wall clock.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::time::{Duration, Instant};

use common::real::{Options, Testbed, cronjob, jobs, minute_of, now_seconds, replica, wait_until};
use common::terminate;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

const CRONJOBS: usize = 300;
const BUCKETS: usize = 64;
const LEASE_DURATION_S: u64 = 10;
const RENEW_PERIOD_S: u64 = 1;

/// Holder of each bucket Lease that is held (bucket → identity).
async fn holders(leases: &Api<Lease>) -> BTreeMap<String, String> {
    let list = leases.list(&ListParams::default()).await.expect("list leases").items;
    list.into_iter()
        .filter_map(|l| {
            let name = l.metadata.name?;
            let holder = l.spec?.holder_identity.filter(|h| !h.is_empty())?;
            name.starts_with("cronshard-bucket-").then_some((name, holder))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_share_real_leases_and_survive_a_kill() {
    let testbed = tokio::task::spawn_blocking(|| Testbed::shared(&Options::default())).await.expect("testbed");
    let client = testbed.client().await;
    let ns = testbed.namespace("herd").await;
    let lease_ns = testbed.namespace("sharing").await;
    let cronjobs: Api<CronJob> = Api::namespaced(client.clone(), &ns);
    for i in 0..CRONJOBS {
        let cj = cronjob(&format!("every-{i:03}"), "* * * * *", json!({"successfulJobsHistoryLimit": 10}));
        cronjobs.create(&PostParams::default(), &cj).await.expect("create cronjob");
    }
    let mut replicas = start_three(testbed, &lease_ns);
    let leases: Api<Lease> = Api::namespaced(client.clone(), &lease_ns);
    wait_until("64 buckets split among three replicas", Duration::from_secs(60), || async {
        let held = holders(&leases).await;
        let per = per_holder(&held);
        (per.values().sum::<usize>() == BUCKETS && per.len() == 3 && per.values().all(|&n| n >= 15)).then_some(())
    })
    .await;

    // The first boundary after every CronJob is labelled and every replica holds its share.
    let first = minute_of(now_seconds()) + 1;
    wait_for_runs(&client, &ns, first).await;
    kill_the_busiest_and_time_the_takeover(&mut replicas, &leases).await;
    // Two more boundaries: every CronJob once per minute, nothing missed or doubled.
    for minute in [first + 1, first + 2] {
        wait_for_runs(&client, &ns, minute).await;
    }
    let all = jobs(&client, &ns).await;
    let mut per_cronjob: HashMap<String, Vec<i64>> = HashMap::new();
    for job in &all {
        let name = job.metadata.name.clone().unwrap_or_default();
        let (owner, minute) = name.rsplit_once('-').expect("run name");
        per_cronjob.entry(owner.to_owned()).or_default().push(minute.parse().expect("minute"));
    }
    assert_eq!(per_cronjob.len(), CRONJOBS, "every CronJob ran");
    for (owner, minutes) in &per_cronjob {
        let in_window: Vec<i64> = minutes.iter().copied().filter(|m| (first..=first + 2).contains(m)).collect();
        assert_eq!(in_window.len(), 3, "{owner} ran once in each of three minutes: {minutes:?}");
    }
    for (_, mut p) in replicas {
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

/// Three replicas sharing 64 buckets, with Lease timings short enough for a test.
fn start_three(testbed: &Testbed, lease_ns: &str) -> HashMap<&'static str, common::Proc> {
    let timings = [
        "--namespace",
        lease_ns,
        "--buckets",
        "64",
        "--lease-duration",
        "10s",
        "--renew-period",
        "1s",
        "--renew-deadline",
        "5s",
        "--join-grace",
        "3s",
    ];
    let kubeconfig = testbed.admin_kubeconfig();
    let mut replicas = HashMap::new();
    for name in ["real-r1", "real-r2", "real-r3"] {
        let log = testbed.dir().join(format!("{name}.log"));
        replicas.insert(name, replica(&kubeconfig, name, &timings, &log).0);
    }
    replicas
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

/// SIGKILLs the replica holding the most buckets: its buckets wait out the lease, and are
/// owned again within a lease duration plus a renew period.
async fn kill_the_busiest_and_time_the_takeover(
    replicas: &mut HashMap<&'static str, common::Proc>,
    leases: &Api<Lease>,
) {
    let before = holders(leases).await;
    let counts = per_holder(&before);
    let victim = counts.iter().max_by_key(|(_, n)| **n).map(|(h, _)| h.to_string()).expect("a holder");
    let victim_buckets: Vec<String> = before.iter().filter(|(_, h)| **h == victim).map(|(b, _)| b.clone()).collect();
    let mut killed = replicas.remove(victim.as_str()).expect("victim process");
    killed.0.kill().expect("SIGKILL");
    let killed_at = Instant::now();
    let _ = killed.0.wait();
    let took = wait_until("the victim's buckets owned again", Duration::from_secs(60), || async {
        let now = holders(leases).await;
        victim_buckets.iter().all(|b| now.get(b).is_some_and(|h| *h != victim)).then(|| killed_at.elapsed())
    })
    .await;
    let bound = Duration::from_secs(LEASE_DURATION_S + RENEW_PERIOD_S);
    // The measured takeover time, shown with --nocapture.
    let _ = writeln!(
        std::io::stderr(),
        "{} buckets of {victim} re-owned {took:?} after SIGKILL (bound {bound:?})",
        victim_buckets.len()
    );
    assert!(took <= bound + Duration::from_secs(2), "re-owned after {took:?}; bound {bound:?} plus polling");
}
