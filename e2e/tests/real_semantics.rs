//! The CronJob semantics on a whole cluster (`scripts/kube-testbed up --cluster`: the real Job
//! controller, scheduler and kwok's nodes run every Job): one `cronshard run` replica and one
//! real minute boundary for every case at once. The Job a run
//! creates (upstream's name, labels, annotations, ownerReference), the status fields, suspend,
//! Allow, Forbid and Replace with a run still active, history limits, a missed run started
//! late, and Events with upstream's reasons, all through real validation and real watches.
//!
//! Simulator cases with no real-server twin: a CronJob stored before validation existed (a
//! real server refuses to store it), clock travel (a real server's clock is the wall clock;
//! missed runs are made by a `lastScheduleTime` in the past instead), and injected faults.

mod common;

use std::time::Duration;

use common::real::{
    Cluster, Options, Testbed, create_cronjob, create_owned_job, cronjob, event_reasons, finished, get_cronjob, jobs,
    minute_of, now_seconds, replica, rfc3339, set_cronjob_status, wait_until,
};
use common::{http, terminate};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use serde_json::json;

const LONG_RUN: &str = "3600";

/// A CronJob already running a long Job, with `lastScheduleTime` this minute, so that its
/// next run is at the coming boundary while that Job is still active.
async fn with_active_run(client: &kube::Client, ns: &str, name: &str, policy: &str, minute: i64) -> CronJob {
    let cj = create_cronjob(client, ns, &cronjob(name, "* * * * *", json!({"concurrencyPolicy": policy}))).await;
    let previous = format!("{name}-{minute}");
    create_owned_job(client, &cj, &previous, &["sleep", LONG_RUN]).await;
    set_cronjob_status(
        client,
        ns,
        name,
        json!({"lastScheduleTime": rfc3339(minute * 60),
            "active": [{"apiVersion": "batch/v1", "kind": "Job", "namespace": ns, "name": previous}]}),
    )
    .await;
    cj
}

fn job_named<'a>(all: &'a [Job], name: &str) -> Option<&'a Job> {
    all.iter().find(|j| j.metadata.name.as_deref() == Some(name))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_apiserver_sees_upstream_semantics() {
    let options = Options { cluster: Some(Cluster::default()), ..Options::default() };
    let testbed = tokio::task::spawn_blocking(move || Testbed::shared(&options)).await.expect("testbed");
    let client = testbed.client().await;
    let ns = testbed.namespace("semantics").await;
    let leases = testbed.namespace("leases").await;
    let minute = minute_of(now_seconds());
    let fire = seed(&client, &ns, minute).await;

    let log = testbed.dir().join("replica-semantics.log");
    let leases_arg = ["--namespace", leases.as_str(), "--buckets", "4"];
    let (mut run, metrics) = replica(&testbed.admin_kubeconfig(), "real-a", &leases_arg, &log);

    the_missed_run_starts_at_once(&client, &ns, minute).await;
    // The history limits apply once the five runs have finished.
    wait_until("history cleanup to one success and one failure", Duration::from_secs(60), || async {
        let left: Vec<Job> = jobs(&client, &ns)
            .await
            .into_iter()
            .filter(|j| j.metadata.name.as_deref().is_some_and(|n| n.starts_with("history-")))
            .collect();
        (left.len() == 2 && left.iter().all(finished)).then_some(())
    })
    .await;
    let run_minute = the_first_run_is_upstreams_job(&client, &ns, minute, &fire).await;
    the_policies_hold_at_the_same_boundary(&client, &ns, minute, run_minute).await;
    let metrics = http("GET", &format!("{metrics}/metrics"), None);
    let requests: Vec<&str> = metrics.lines().filter(|l| l.starts_with("cronshard_api_requests_total")).collect();
    assert!(requests.iter().any(|l| l.contains("code=\"201\"")), "{requests:?}");
    assert!(!requests.iter().any(|l| l.contains("code=\"403\"")), "no request was forbidden: {requests:?}");
    assert_eq!(terminate(&mut run), Some(0), "cronshard run exits cleanly on SIGTERM");
}

/// Every case's CronJobs and Jobs, made in `minute`; returns `fire`, the plain one.
async fn seed(client: &kube::Client, ns: &str, minute: i64) -> CronJob {
    let template = json!({"jobTemplate": {"metadata": {"labels": {"team": "a"}, "annotations": {"note": "kept"}},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}});
    let fire = create_cronjob(client, ns, &cronjob("fire", "* * * * *", template)).await;
    create_cronjob(client, ns, &cronjob("paused", "* * * * *", json!({"suspend": true}))).await;
    with_active_run(client, ns, "forbid", "Forbid", minute).await;
    with_active_run(client, ns, "replace", "Replace", minute).await;
    with_active_run(client, ns, "allow", "Allow", minute).await;
    // Five finished runs, three that succeed and two that fail; the limits keep one of each.
    let limits = json!({"successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1});
    let history = create_cronjob(client, ns, &cronjob("history", "0 0 1 1 *", limits)).await;
    // Runs of earlier minutes that `lastScheduleTime` records (a run it does not record yet
    // is never deleted).
    for (age, command) in [(10, &[][..]), (9, &[]), (8, &[]), (7, &["/bin/false"]), (6, &["/bin/false"])] {
        create_owned_job(client, &history, &format!("history-{}", minute - age), command).await;
    }
    set_cronjob_status(client, ns, "history", json!({"lastScheduleTime": rfc3339((minute - 6) * 60)})).await;
    // Down for five minutes: the newest missed run starts at once, the older ones are dropped.
    create_cronjob(client, ns, &cronjob("missed", "* * * * *", json!({}))).await;
    set_cronjob_status(client, ns, "missed", json!({"lastScheduleTime": rfc3339((minute - 5) * 60)})).await;
    fire
}

/// The missed run, before any boundary: scheduled at the newest minute not after now.
async fn the_missed_run_starts_at_once(client: &kube::Client, ns: &str, minute: i64) {
    let missed = wait_until("the missed run", Duration::from_secs(30), || async {
        jobs(client, ns)
            .await
            .into_iter()
            .find(|j| j.metadata.name.as_deref().is_some_and(|n| n.starts_with("missed-")))
    })
    .await;
    let missed_minute: i64 =
        missed.metadata.name.as_deref().and_then(|n| n.strip_prefix("missed-")?.parse().ok()).expect("minute");
    assert!(missed_minute >= minute && missed_minute <= minute_of(now_seconds()), "{missed_minute} vs {minute}");
}

/// The boundary: fire's first run, with upstream's name, labels, annotations, owner, status
/// and Events. Returns the run's minute.
async fn the_first_run_is_upstreams_job(client: &kube::Client, ns: &str, minute: i64, fire: &CronJob) -> i64 {
    let boundary = wait_until("fire's first run", Duration::from_secs(90), || async {
        jobs(client, ns).await.into_iter().find(|j| j.metadata.name.as_deref().is_some_and(|n| n.starts_with("fire-")))
    })
    .await;
    let run_name = boundary.metadata.name.clone().expect("name");
    let run_minute: i64 = run_name.strip_prefix("fire-").and_then(|m| m.parse().ok()).expect("minute");
    assert!(run_minute > minute, "the first run is at a boundary after creation");
    let meta = &boundary.metadata;
    let labels = meta.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("team").map(String::as_str), Some("a"), "template labels are kept: {labels:?}");
    assert!(labels.contains_key("cronshard.io/bucket"), "{labels:?}");
    let annotations = meta.annotations.clone().unwrap_or_default();
    assert_eq!(annotations.get("note").map(String::as_str), Some("kept"));
    assert_eq!(
        annotations.get("batch.kubernetes.io/cronjob-scheduled-timestamp"),
        Some(&rfc3339(run_minute * 60)),
        "{annotations:?}"
    );
    assert!(annotations.get("cronshard.io/created-by").is_some_and(|c| c.starts_with("real-a/")));
    let owner = &meta.owner_references.clone().unwrap_or_default()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("CronJob", "fire"));
    assert_eq!(Some(&owner.uid), fire.metadata.uid.as_ref());
    assert_eq!((owner.controller, owner.block_owner_deletion), (Some(true), Some(true)));

    // Its pod runs on a fake node and the Job controller completes it: lastSuccessfulTime,
    // active emptied, SawCompletedJob.
    let status = wait_until("fire's status after its run", Duration::from_secs(30), || async {
        let status = get_cronjob(client, ns, "fire").await.status?;
        (status.last_successful_time.is_some() && status.active.as_ref().is_none_or(Vec::is_empty)).then_some(status)
    })
    .await;
    assert_eq!(status.last_schedule_time.map(|t| t.0.as_second()), Some(run_minute * 60));
    wait_until("fire's Events", Duration::from_secs(30), || async {
        let reasons = event_reasons(client, ns, "fire").await;
        (reasons.iter().any(|r| r == "SuccessfulCreate") && reasons.iter().any(|r| r == "SawCompletedJob"))
            .then_some(())
    })
    .await;
    run_minute
}

/// Allow, Forbid, Replace and suspend at the boundary of `run_minute`, with a run of
/// `minute` still active.
async fn the_policies_hold_at_the_same_boundary(client: &kube::Client, ns: &str, minute: i64, run_minute: i64) {
    let next = format!("-{run_minute}");
    let all = wait_until("allow's and replace's runs", Duration::from_secs(30), || async {
        let all = jobs(client, ns).await;
        (job_named(&all, &format!("allow{next}")).is_some() && job_named(&all, &format!("replace{next}")).is_some())
            .then_some(all)
    })
    .await;
    assert!(job_named(&all, &format!("allow-{minute}")).is_some(), "Allow keeps the active run");
    assert!(job_named(&all, &format!("forbid{next}")).is_none(), "Forbid starts nothing while a run is active");
    assert!(job_named(&all, &format!("forbid-{minute}")).is_some());
    assert!(job_named(&all, &format!("paused{next}")).is_none(), "a suspended CronJob does not run");
    wait_until("Replace deletes the active run", Duration::from_secs(30), || async {
        job_named(&jobs(client, ns).await, &format!("replace-{minute}")).is_none().then_some(())
    })
    .await;
    wait_until("the policies' Events", Duration::from_secs(30), || async {
        let forbid = event_reasons(client, ns, "forbid").await;
        let replace = event_reasons(client, ns, "replace").await;
        (forbid.iter().any(|r| r == "JobAlreadyActive") && replace.iter().any(|r| r == "SuccessfulDelete"))
            .then_some(())
    })
    .await;
    // Allow's new run completed; the long one it kept is still active.
    wait_until("Allow's status after the boundary", Duration::from_secs(30), || async {
        let status = get_cronjob(client, ns, "allow").await.status?;
        let active: Vec<String> = status.active.unwrap_or_default().into_iter().filter_map(|r| r.name).collect();
        (status.last_schedule_time.map(|t| t.0.as_second()) == Some(run_minute * 60)
            && active == [format!("allow-{minute}")])
        .then_some(())
    })
    .await;
}
