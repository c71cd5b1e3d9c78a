//! RBAC proof: the chart's rendered ClusterRole and Role, loaded into cronshard-sim's RBAC
//! mode, let a real `cronshard run` do everything a scenario asks of it with zero 403s; every
//! verb they grant is used; and with any single rule removed the same scenario gets a 403.
//!
//! The scenario exercises every path that needs a permission: label-selected lists and
//! watches, the Namespace watch (spread defaults), labelling a new CronJob and an orphaned Job (patch), a run (Job create, status
//! update), a status write that conflicts (409, then get), the AlreadyExists repair (Job get),
//! history cleanup (Job delete), a repeated Warning (Event create, then patch of its series),
//! a member Lease written by someone else (409 on renewal, then get), and SIGTERM (Lease
//! update on release, delete of the member Lease).

mod common;

use std::collections::{BTreeSet, HashMap};
use std::num::NonZeroU32;
use std::time::Duration;

use common::{Proc, render_chart, spawn_logged, terminate};
use cronshard_sim::auth::{Rbac, User};
use cronshard_sim::{AuditRecord, Config, Resource, SimState};
use jiff::SignedDuration;
use serde_json::{Value, json};

const TOKEN: &str = "cronshard-sa-token";
const SERVICE_ACCOUNT: &str = "system:serviceaccount:cronshard:cronshard";

fn bucket_label(name: &str) -> String {
    cronshard_types::bucket_of_uid(&format!("uid-{name}"), NonZeroU32::MIN).to_string()
}

fn cronjob(name: &str, schedule: &str, labelled: bool, extra: Value) -> Value {
    let mut cj = json!({"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"schedule": schedule, "concurrencyPolicy": "Allow", "suspend": false,
            "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1,
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}}},
        "status": {}});
    if labelled {
        cj["metadata"]["labels"] = json!({"cronshard.io/bucket": bucket_label(name)});
    }
    if let (Some(spec), Some(extra)) = (cj["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    cj
}

fn job(name: &str, owner: &str, labelled: bool, finished_minute: Option<i64>) -> Value {
    let mut j = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": owner,
                "uid": format!("uid-{owner}"), "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
        "status": {}});
    if labelled {
        j["metadata"]["labels"] = json!({"cronshard.io/bucket": bucket_label(owner)});
    }
    if let Some(m) = finished_minute {
        let t = format!("2026-01-01T00:{m:02}:00Z");
        j["status"] = json!({"startTime": t, "completionTime": t,
            "conditions": [{"type": "Complete", "status": "True"}]});
    }
    j
}

/// The chart's RBAC objects, with the rule at `drop` (index into the flattened list of every
/// Role's and ClusterRole's rules) removed.
fn rbac_documents(docs: &[Value], drop: Option<usize>) -> String {
    let mut index = 0;
    let mut out = Vec::new();
    for doc in docs {
        let kind = doc["kind"].as_str().unwrap_or_default();
        if !matches!(kind, "ClusterRole" | "Role" | "ClusterRoleBinding" | "RoleBinding") {
            continue;
        }
        let mut doc = doc.clone();
        if let Some(rules) = doc["rules"].as_array_mut() {
            let mut kept = Vec::new();
            for rule in rules.drain(..) {
                if Some(index) != drop {
                    kept.push(rule);
                }
                index += 1;
            }
            *rules = kept;
        }
        out.push(serde_yaml_ng::to_string(&doc).expect("yaml"));
    }
    out.join("---\n")
}

/// Every (apiGroup, resource, verb) the chart grants.
fn granted(docs: &[Value]) -> Vec<(String, String, String)> {
    let mut all = Vec::new();
    for doc in docs.iter().filter(|d| d["kind"] == "ClusterRole" || d["kind"] == "Role") {
        for rule in doc["rules"].as_array().into_iter().flatten() {
            let strings = |v: &Value| -> Vec<String> {
                v.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect()
            };
            for group in strings(&rule["apiGroups"]) {
                for resource in strings(&rule["resources"]) {
                    for verb in strings(&rule["verbs"]) {
                        all.push((group.clone(), resource.clone(), verb));
                    }
                }
            }
        }
    }
    all
}

fn rule_count(docs: &[Value]) -> usize {
    docs.iter()
        .filter(|d| d["kind"] == "ClusterRole" || d["kind"] == "Role")
        .map(|d| d["rules"].as_array().map_or(0, Vec::len))
        .sum()
}

/// Runs the scenario against a fresh simulator that authorizes with `rbac_yaml`; returns the
/// service account's requests from the audit log.
async fn scenario(rbac_yaml: &str, dir: &std::path::Path) -> Vec<AuditRecord> {
    let (sim, url, server) = serve_sim(rbac_yaml).await;
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {url}\nusers:\n- name: sa\n  \
             user:\n    token: {TOKEN}\ncontexts:\n- name: sim\n  context:\n    cluster: sim\n    user: sa\n    \
             namespace: cronshard\ncurrent-context: sim\n"
        ),
    )
    .expect("kubeconfig");
    let boundary = seed_before_boundary(&sim);
    let log = dir.join("replica.log");
    let mut replica = start_replica(&kubeconfig, &url, &log).await;
    provoke_conflicts(&sim, boundary).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let code = tokio::task::spawn_blocking(move || terminate(&mut replica)).await.expect("join");
    assert!(code.is_some(), "the replica exits on SIGTERM; log: {}", log.display());
    server.abort();
    sim.0.audit.since(0).into_iter().filter(|r| r.user == SERVICE_ACCOUNT).collect()
}

/// A simulator that authorizes with `rbac_yaml` and knows the service account's token.
async fn serve_sim(rbac_yaml: &str) -> (SimState, String, tokio::task::JoinHandle<std::io::Result<()>>) {
    let mut rbac = Rbac::default();
    rbac.load_yaml(rbac_yaml).expect("the chart's RBAC loads");
    let mut config = Config { runner: None, allow_anonymous: false, rbac: Some(rbac), ..Config::default() };
    config.namespaces.push("cronshard".into());
    config.tokens = HashMap::from([(
        TOKEN.to_owned(),
        User {
            name: SERVICE_ACCOUNT.into(),
            groups: vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:cronshard".into(),
                "system:authenticated".into(),
            ],
        },
    )]);
    let sim = SimState::new(config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let app = cronshard_sim::app(sim.clone());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    (sim, url, server)
}

/// Puts the next minute boundary 4 s ahead and loads the objects that make the replica use
/// each permission; returns the boundary (unix seconds).
fn seed_before_boundary(sim: &SimState) -> i64 {
    let clock = sim.store().clock();
    let to_boundary = 60_000 - clock.now().as_millisecond().rem_euclid(60_000);
    clock.set_offset(clock.offset() + SignedDuration::from_millis(to_boundary - 4_000));
    let boundary = clock.now().as_second() + 4;
    let minute = boundary / 60;
    let seeds = [
        // A zone inside the schedule: a Warning on every sync (repeats patch the Event).
        // History limit 1 with two finished Jobs: cleanup deletes one.
        cronjob("zoned", "TZ=UTC * * * * *", true, json!({})),
        job("zoned-old-a", "zoned", true, Some(1)),
        job("zoned-old-b", "zoned", true, Some(2)),
        // Left by the in-tree controller: owned, unlabelled, labelled by the orphan pass.
        job("zoned-legacy", "zoned", false, Some(3)),
        // This run's Job exists, unlabelled: the create gets AlreadyExists and reads it.
        cronjob("adopt", "* * * * *", true, json!({})),
        job(&format!("adopt-{minute}"), "adopt", false, None),
        // Created by a user just now: the labeller labels it.
        cronjob("fresh", "0 0 1 1 *", false, json!({})),
    ];
    let body: String = seeds.iter().map(|s| s.to_string() + "\n").collect();
    sim.load(body.as_bytes()).expect("seed");
    boundary
}

/// One replica with one bucket and fast Lease timings.
async fn start_replica(kubeconfig: &std::path::Path, url: &str, log: &std::path::Path) -> Proc {
    let kubeconfig_arg = kubeconfig.to_string_lossy().into_owned();
    let args = [
        "run",
        "--kubeconfig",
        &kubeconfig_arg,
        "--identity",
        "rbac-0",
        "--namespace",
        "cronshard",
        "--buckets",
        "1",
        "--metrics-addr",
        "127.0.0.1:0",
        "--testing-clock-from",
        url,
        "--renew-period",
        "300ms",
        "--renew-deadline",
        "2s",
        "--lease-duration",
        "3s",
        "--join-grace",
        "500ms",
    ];
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let log = log.to_owned();
    tokio::task::spawn_blocking(move || {
        spawn_logged(&args.iter().map(String::as_str).collect::<Vec<_>>(), Some(&log)).0
    })
    .await
    .expect("spawn")
}

/// Around the boundary, someone keeps changing `zoned`: its status write conflicts (409) and
/// the replica re-reads it (get). Then someone else writes the member Lease (as a previous
/// incarnation of this replica would): the renewal conflicts (409) and the replica reads the
/// server's copy (get).
async fn provoke_conflicts(sim: &SimState, boundary: i64) {
    let clock = sim.store().clock();
    loop {
        let now = clock.now().as_millisecond();
        if now >= boundary * 1000 - 300 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(((boundary * 1000 - 300 - now) as u64).min(50))).await;
    }
    let mut bump = 0u64;
    for (resource, namespace, name, until_ms) in [
        (Resource::CronJobs, "default", "zoned", boundary * 1000 + 1500),
        (Resource::Leases, "cronshard", "cronshard-member-rbac-0", boundary * 1000 + 3000),
    ] {
        while clock.now().as_millisecond() < until_ms {
            bump += 1;
            let _ = sim.store().update(resource, namespace, name, |o| {
                let mut v = o.value();
                v["metadata"]["annotations"]["test/bump"] = json!(bump.to_string());
                Ok(Some(v))
            });
            tokio::time::sleep(Duration::from_millis(4)).await;
        }
    }
}

fn api_group(resource: &str) -> &'static str {
    match resource.split('/').next().unwrap_or_default() {
        "cronjobs" | "jobs" => "batch",
        "leases" => "coordination.k8s.io",
        "events" => "events.k8s.io",
        _ => "",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_charts_rbac_is_exactly_what_cronshard_needs() {
    let docs = render_chart(&[]);
    let dir = std::env::temp_dir().join(format!("cronshard-rbac-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");

    // With every rule: nothing is forbidden, and every granted verb is used.
    let audit = scenario(&rbac_documents(&docs, None), &dir).await;
    let forbidden: Vec<String> =
        audit.iter().filter(|r| r.code == 403).map(|r| format!("{} {} {}", r.verb, r.resource, r.name)).collect();
    assert!(forbidden.is_empty(), "403s under the chart's RBAC: {forbidden:?}");
    let used: BTreeSet<(String, String, String)> = audit
        .iter()
        .filter(|r| r.code < 500)
        .map(|r| (api_group(&r.resource).to_owned(), r.resource.clone(), r.verb.clone()))
        .collect();
    let unused: Vec<_> = granted(&docs).into_iter().filter(|g| !used.contains(g)).collect();
    assert!(unused.is_empty(), "granted but never used by the scenario: {unused:?}; used: {used:?}");
    // No request outside the grants either (a 403 would have said so, but say it plainly).
    let granted_set: BTreeSet<_> = granted(&docs).into_iter().collect();
    let outside: Vec<_> = used.iter().filter(|u| !granted_set.contains(*u)).collect();
    assert!(outside.is_empty(), "requests the chart does not grant: {outside:?}");

    // Without any one rule: the same scenario is refused something.
    for drop in 0..rule_count(&docs) {
        let audit = scenario(&rbac_documents(&docs, Some(drop)), &dir).await;
        assert!(audit.iter().any(|r| r.code == 403), "rule {drop} is superfluous: the scenario ran without it");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
