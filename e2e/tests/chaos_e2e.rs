//! Chaos across minute boundaries, all real processes: `cronshard sim` and 3 replicas,
//! 2,000 CronJobs firing every minute while a replica is SIGKILLed and restarted, another is
//! partitioned for longer than the lease duration, history is compacted and watches dropped,
//! and the deployment scales 3 -> 5 -> 2. From the audit log: every run created exactly once,
//! and in every bucket no replica writes after another has claimed it. And a rolling restart
//! as the chart's Deployment does it, which moves every bucket exactly once.

#[path = "chaos_e2e/audit.rs"]
mod audit;
mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use audit::{bucket_writers, creates, takeover_seconds, takeovers, writes_outside_holder_intervals};
use common::{Proc, http, spawn_logged, spawn_sim, terminate};
use serde_json::{Value, json};

const CRONJOBS: usize = 2000;
const REPLICAS: [&str; 5] = ["r1", "r2", "r3", "r4", "r5"];

struct Cluster {
    url: String,
    dir: PathBuf,
    join_grace: &'static str,
    cronjobs: usize,
}

impl Cluster {
    fn now(&self) -> i64 {
        let clock: Value = serde_json::from_str(&http("GET", &format!("{}/sim/clock", self.url), None)).expect("clock");
        clock["now"].as_str().expect("now").parse::<jiff::Timestamp>().expect("timestamp").as_second()
    }

    /// Moves the simulator's clock (which the replicas follow) to `lead` s before the next
    /// minute boundary; returns that boundary's minute.
    fn before_boundary(&self, lead: i64) -> i64 {
        let clock: Value = serde_json::from_str(&http("GET", &format!("{}/sim/clock", self.url), None)).expect("clock");
        let offset = clock["offsetSeconds"].as_f64().expect("offset") as i64;
        let now = self.now();
        let shift = (60 - now.rem_euclid(60) - lead).rem_euclid(60);
        let body = json!({"offsetSeconds": offset + shift}).to_string();
        http("PUT", &format!("{}/sim/clock", self.url), Some(&body));
        self.now().div_euclid(60) + 1
    }

    fn replica(&self, name: &str) -> Proc {
        let kubeconfig = self.dir.join(format!("kubeconfig-{name}"));
        let log = self.dir.join(format!("{name}.log"));
        let (proc_, _metrics) = spawn_logged(
            &[
                "run",
                "--kubeconfig",
                kubeconfig.to_str().expect("utf-8"),
                "--identity",
                name,
                "--metrics-addr",
                "127.0.0.1:0",
                "--qps",
                "0",
                "--renew-period",
                "500ms",
                "--renew-deadline",
                "3s",
                "--lease-duration",
                "6s",
                "--join-grace",
                self.join_grace,
                "--testing-clock-from",
                &self.url,
            ],
            Some(&log),
        );
        proc_
    }

    fn audit(&self) -> Vec<Value> {
        http("GET", &format!("{}/sim/audit", self.url), None)
            .lines()
            .map(|l| serde_json::from_str(l).expect("audit record"))
            .collect()
    }

    /// Waits until every CronJob has a Job for `minute`.
    fn wait_for_runs(&self, minute: i64, within: Duration) {
        let suffix = format!("-{minute}");
        let deadline = Instant::now() + within;
        loop {
            let created = self
                .audit()
                .iter()
                .filter(|r| r["verb"] == "create" && r["resource"] == "jobs" && r["code"] == 201)
                .filter(|r| r["name"].as_str().is_some_and(|n| n.ends_with(&suffix)))
                .count();
            if created >= self.cronjobs {
                return;
            }
            assert!(Instant::now() < deadline, "only {created} of {} runs for minute {minute}", self.cronjobs);
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

fn write_kubeconfig(path: &Path, url: &str, token: &str) {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {url}\nusers:\n- name: u\n  user:\n    \
         token: {token}\ncontexts:\n- name: sim\n  context:\n    cluster: sim\n    user: u\n    namespace: default\n\
         current-context: sim\n"
    );
    std::fs::write(path, text).expect("kubeconfig");
}

/// A simulator (its own process) with a token per replica name and `cronjobs` labelled
/// CronJobs firing every minute.
fn start(names: &[&str], cronjobs: usize, join_grace: &'static str, tag: &str) -> (Proc, Cluster) {
    let dir = std::env::temp_dir().join(format!("cronshard-{tag}-{}", std::process::id()));
    // Replica logs stay in `dir` when the test fails.
    std::fs::create_dir_all(&dir).expect("dir");
    // One user per replica: the simulator partitions users.
    let tokens: String = names.iter().enumerate().map(|(i, r)| format!("token-{r},{r},{i}\n")).collect();
    std::fs::write(dir.join("tokens.csv"), tokens).expect("tokens");
    let (sim, url) = spawn_sim(&[
        "--listen",
        "127.0.0.1:0",
        "--no-job-runner",
        "--token-file",
        dir.join("tokens.csv").to_str().expect("utf-8"),
    ]);
    for r in names {
        write_kubeconfig(&dir.join(format!("kubeconfig-{r}")), &url, &format!("token-{r}"));
    }
    let cluster = Cluster { url: url.clone(), dir, join_grace, cronjobs };

    // Labelled CronJobs (64 buckets), created now at the simulator's time.
    let created =
        cronshard_types::Zone::utc().format_rfc3339(jiff::Timestamp::from_second(cluster.now()).expect("now"));
    let mut seed = String::new();
    for i in 0..cronjobs {
        let (namespace, name) = ("default".to_owned(), format!("tick-{i:04}"));
        let uid = cronshard_e2e::scenario::seed_uid(&namespace, &name);
        let b = cronshard_types::bucket_of_uid(&uid, std::num::NonZeroU32::new(64).expect("64"));
        let cj = json!({"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created, "uid": uid,
                "labels": {"cronshard.io/bucket": b.to_string()}},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}});
        seed.push_str(&cj.to_string());
        seed.push('\n');
    }
    http("POST", &format!("{url}/sim/load"), Some(&seed));
    (sim, cluster)
}

fn assert_no_violations(cluster: &Cluster, audit: &[Value], what: &str, violations: &[String]) {
    if !violations.is_empty() {
        let lines: Vec<String> = audit.iter().map(Value::to_string).collect();
        let _ = std::fs::write(cluster.dir.join("audit.jsonl"), lines.join("\n"));
    }
    assert!(violations.is_empty(), "{} {what}, e.g. {:?}", violations.len(), &violations[..violations.len().min(5)]);
}

fn signal(p: &Proc, name: &str) {
    let status = std::process::Command::new("sh").args(["-c", &format!("kill -{name} {}", p.0.id())]).status();
    assert!(status.expect("sh kill").success(), "kill -{name}");
}

/// The tests here time takeovers and run many processes each: one at a time, or on two cores
/// they would slow each other past their bounds.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn no_run_missed_or_doubled_through_kills_partitions_and_scaling() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (mut sim, cluster) = start(&REPLICAS, CRONJOBS, "1s", "chaos");
    let (url, dir) = (cluster.url.clone(), cluster.dir.clone());

    let mut running: BTreeMap<&str, Proc> = BTreeMap::new();
    for r in &REPLICAS[..3] {
        running.insert(r, cluster.replica(r));
    }
    std::thread::sleep(Duration::from_secs(4));
    let mut minutes = Vec::new();

    // 1. Steady state.
    let m = cluster.before_boundary(4);
    cluster.wait_for_runs(m, Duration::from_secs(40));
    minutes.push(m);

    // 2. SIGKILL r2 just before the boundary; its buckets wait for the Lease to expire and
    //    their runs start late, after takeover. r2 comes back as a new process.
    let m = cluster.before_boundary(2);
    let killed_at = cluster.audit().len();
    if let Some(mut p) = running.remove("r2") {
        let _ = p.0.kill();
        let _ = p.0.wait();
    }
    std::thread::sleep(Duration::from_secs(9));
    running.insert("r2", cluster.replica("r2"));
    cluster.wait_for_runs(m, Duration::from_secs(40));
    minutes.push(m);

    // 3. Partition r3 (its requests hang) across a boundary for twice the lease duration,
    //    with history compacted and every watch dropped; then heal.
    std::thread::sleep(Duration::from_secs(3));
    let m = cluster.before_boundary(3);
    let partitioned_at = cluster.audit().len();
    http("POST", &format!("{url}/sim/partition"), Some(&json!({"user": "r3", "mode": "hang"}).to_string()));
    http("POST", &format!("{url}/sim/compact"), None);
    std::thread::sleep(Duration::from_secs(12));
    http("POST", &format!("{url}/sim/drop-watches"), None);
    http("POST", &format!("{url}/sim/heal"), Some(&json!({"user": "r3"}).to_string()));
    cluster.wait_for_runs(m, Duration::from_secs(40));
    minutes.push(m);

    // 4. Scale 3 -> 5.
    std::thread::sleep(Duration::from_secs(3));
    for r in ["r4", "r5"] {
        running.insert(r, cluster.replica(r));
    }
    std::thread::sleep(Duration::from_secs(3));
    let m = cluster.before_boundary(3);
    cluster.wait_for_runs(m, Duration::from_secs(40));
    minutes.push(m);

    // 5. Scale 5 -> 2 (graceful: the leavers hand their buckets back).
    for r in ["r3", "r4", "r5"] {
        if let Some(mut p) = running.remove(r) {
            assert_eq!(terminate(&mut p), Some(0), "{r} exits cleanly");
        }
    }
    let m = cluster.before_boundary(3);
    cluster.wait_for_runs(m, Duration::from_secs(40));
    minutes.push(m);
    std::thread::sleep(Duration::from_secs(2));

    let audit = cluster.audit();
    takeovers_were_timely(&audit, killed_at, partitioned_at);
    every_run_once_and_only_by_its_holder(&cluster, &audit, &minutes);
    for (_, mut p) in running {
        assert_eq!(terminate(&mut p), Some(0));
    }
    assert_eq!(terminate(&mut sim), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Buckets of the killed and the partitioned replica were re-owned a lease duration (and a
/// little) after they went.
fn takeovers_were_timely(audit: &[Value], killed_at: usize, partitioned_at: usize) {
    let after_kill = takeover_seconds(audit, killed_at, "r2");
    let after_partition = takeover_seconds(audit, partitioned_at, "r3");
    {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "buckets re-owned {after_kill:.1} s after SIGKILL and {after_partition:.1} s after a partition \
             (lease duration 6 s, renew period 0.5 s)"
        );
    }
    for took in [after_kill, after_partition] {
        assert!((5.5..9.0).contains(&took), "re-owned after {took:.1} s: a lease duration plus a little");
    }
}

/// Exactly once: every run of every minute created once, nothing created twice, and every
/// write made by its bucket's holder.
fn every_run_once_and_only_by_its_holder(cluster: &Cluster, audit: &[Value], minutes: &[i64]) {
    let creates = creates(audit);
    let doubled: Vec<_> = creates.iter().filter(|(_, n)| **n > 1).collect();
    assert!(doubled.is_empty(), "runs created twice: {doubled:?}");
    for m in minutes {
        let n = creates.keys().filter(|name| name.ends_with(&format!("-{m}"))).count();
        assert_eq!(n, CRONJOBS, "minute {m}: {n} runs");
    }
    let (checked, violations) = writes_outside_holder_intervals(audit);
    assert!(checked > minutes.len() * CRONJOBS, "creates and status writes were checked: {checked}");
    assert_no_violations(cluster, audit, "interleaved writes", &violations);
}

/// The chart's rolling update (maxSurge 1, maxUnavailable 0): each new pod joins, and within
/// its join grace the old pod it replaces gets SIGTERM and hands its buckets back. Every
/// bucket moves exactly once (to the pod replacing its holder), across a minute boundary,
/// with every run created once.
#[test]
fn a_rolling_restart_moves_each_bucket_once() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    const OLD: [&str; 3] = ["old-a", "old-b", "old-c"];
    const NEW: [&str; 3] = ["new-a", "new-b", "new-c"];
    let names: Vec<&str> = OLD.iter().chain(NEW.iter()).copied().collect();
    let (mut sim, cluster) = start(&names, 600, "8s", "rolling");
    let started = Instant::now();
    let mut running: BTreeMap<&str, Proc> = OLD.iter().map(|r| (*r, cluster.replica(r))).collect();
    std::thread::sleep(Duration::from_secs(4));
    let first = cluster.before_boundary(3);
    cluster.wait_for_runs(first, Duration::from_secs(30));
    // A rollout comes long after the old pods settled (a join grace of 8 s here): before
    // that, nobody is settled and the assignment is a fresh start's.
    std::thread::sleep(Duration::from_secs(9).saturating_sub(started.elapsed()));
    let rollout_from = cluster.audit().len();

    // The rollout spans the next boundary.
    let m = cluster.before_boundary(7);
    for (old, new) in OLD.iter().zip(NEW) {
        running.insert(new, cluster.replica(new));
        // The new pod is a member (and Ready: it owns what it is assigned, nothing yet).
        std::thread::sleep(Duration::from_millis(1500));
        let mut p = running.remove(old).expect("old pod");
        assert_eq!(terminate(&mut p), Some(0), "{old} exits cleanly");
        std::thread::sleep(Duration::from_secs(2));
    }
    cluster.wait_for_runs(m, Duration::from_secs(40));
    // The last old pod's buckets are claimed once it has released them: wait for the new pods
    // to hold every bucket (or 30 s), rather than for a fixed time.
    let deadline = Instant::now() + Duration::from_secs(30);
    let audit = loop {
        let audit = cluster.audit();
        if bucket_writers(&audit).values().all(|w| NEW.contains(&w.as_str())) || Instant::now() > deadline {
            break audit;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    // Claims: successful writes of a bucket Lease by a replica other than its last writer
    // (a release is written by the holder itself). The initial claims are before `rollout_from`.
    let ok = |r: &Value| r["code"].as_u64().is_some_and(|c| (200..300).contains(&c));
    let mut last: HashMap<&str, &str> = HashMap::new();
    let mut moves: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, r) in audit.iter().enumerate() {
        let Some(name) = r["name"].as_str().filter(|n| n.starts_with("cronshard-bucket-")) else { continue };
        if r["resource"] != "leases" || !ok(r) || !matches!(r["verb"].as_str(), Some("create" | "update")) {
            continue;
        }
        let user = r["user"].as_str().unwrap_or_default();
        if last.insert(name, user).is_some_and(|before| before != user) && i >= rollout_from {
            *moves.entry(name).or_default() += 1;
        }
    }
    let stale: Vec<(&str, &str)> = last.iter().filter(|(_, h)| !NEW.contains(h)).map(|(b, h)| (*b, *h)).collect();
    if !stale.is_empty() || moves.len() != 64 || moves.values().any(|n| *n != 1) {
        let lines: Vec<String> = audit.iter().map(Value::to_string).collect();
        let _ = std::fs::write(cluster.dir.join("audit.jsonl"), lines.join("\n"));
    }
    assert_eq!(last.len(), 64, "every bucket has a Lease");
    assert!(stale.is_empty(), "the new pods hold everything; last written by others: {stale:?}");
    assert!(moves.len() == 64 && moves.values().all(|n| *n == 1), "each bucket moves once: {moves:?}");
    let creates = creates(&audit);
    assert!(creates.values().all(|n| *n == 1), "no run created twice");
    for minute in [first, m] {
        let n = creates.keys().filter(|name| name.ends_with(&format!("-{minute}"))).count();
        assert_eq!(n, 600, "minute {minute}: {n} runs");
    }
    for (_, mut p) in running {
        assert_eq!(terminate(&mut p), Some(0));
    }
    assert_eq!(terminate(&mut sim), Some(0));
    let _ = std::fs::remove_dir_all(&cluster.dir);
}

/// SIGSTOP a replica for twice the lease duration across a minute boundary, then SIGCONT:
/// it wakes past its renew deadline with a stale view of its peers. It must fence first and
/// take nothing from live peers; its own buckets were taken over while it slept, and every
/// run is created exactly once with every write inside its writer's holder interval.
#[test]
fn a_paused_replica_takes_nothing_from_live_peers() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    const NAMES: [&str; 3] = ["p1", "p2", "p3"];
    let (mut sim, cluster) = start(&NAMES, 600, "1s", "pause");
    let mut running: BTreeMap<&str, Proc> = NAMES.iter().map(|r| (*r, cluster.replica(r))).collect();
    std::thread::sleep(Duration::from_secs(4));
    let first = cluster.before_boundary(4);
    cluster.wait_for_runs(first, Duration::from_secs(40));

    let paused = cluster.before_boundary(3);
    let paused_at = cluster.audit().len() as u64;
    signal(&running["p2"], "STOP");
    std::thread::sleep(Duration::from_secs(12));
    signal(&running["p2"], "CONT");
    cluster.wait_for_runs(paused, Duration::from_secs(40));
    std::thread::sleep(Duration::from_secs(3));
    let after = cluster.before_boundary(3);
    cluster.wait_for_runs(after, Duration::from_secs(40));
    std::thread::sleep(Duration::from_secs(2));

    let audit = cluster.audit();
    let creates = creates(&audit);
    assert!(creates.values().all(|n| *n == 1), "no run created twice");
    for minute in [first, paused, after] {
        let n = creates.keys().filter(|name| name.ends_with(&format!("-{minute}"))).count();
        assert_eq!(n, 600, "minute {minute}: {n} runs");
    }
    let (checked, violations) = writes_outside_holder_intervals(&audit);
    assert!(checked > 3 * 600, "creates and status writes were checked: {checked}");
    assert_no_violations(&cluster, &audit, "writes outside holder intervals", &violations);
    // Only the paused replica's buckets may change hands without a release, and only after
    // it was stopped.
    let stolen: Vec<String> = takeovers(&audit)
        .into_iter()
        .filter(|(from, _, seq)| from != "p2" || *seq < paused_at)
        .map(|(from, to, seq)| format!("seq {seq}: {to} took a bucket from live {from}"))
        .collect();
    assert_no_violations(&cluster, &audit, "takeovers from live holders", &stolen);
    assert!(takeovers(&audit).iter().any(|(from, _, _)| from == "p2"), "the paused replica's buckets were taken over");

    for (_, mut p) in std::mem::take(&mut running) {
        assert_eq!(terminate(&mut p), Some(0));
    }
    assert_eq!(terminate(&mut sim), Some(0));
    let _ = std::fs::remove_dir_all(&cluster.dir);
}
