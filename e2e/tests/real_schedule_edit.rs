//! A schedule edit never starts a run by itself, on a real kube-apiserver (whose managedFields
//! say when the schedule changed), across a SIGKILL and restart of the replica. Beside it, a
//! CronJob with the same missed run that nobody edited starts it at once, as upstream does.

mod common;

use std::time::Duration;

use common::real::{
    Options, Testbed, create_cronjob, cronjob, get_cronjob, jobs, now_seconds, replica, rfc3339, set_cronjob_status,
    wait_until,
};
use common::{http, terminate};
use k8s_openapi::api::batch::v1::CronJob;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

/// A daily schedule (UTC) whose time of day was `minutes_ago` minutes ago.
fn daily_at_minutes_ago(minutes_ago: i64) -> String {
    let t = jiff::Timestamp::from_second(now_seconds() - minutes_ago * 60).expect("time");
    let utc = t.to_zoned_datetime(jiff::tz::TimeZone::UTC);
    format!("{} {} * * *", utc.minute(), utc.hour())
}

/// Waits until the replica at `metrics` works on all `buckets` (a dead holder's Leases
/// expire first).
async fn owns_all(metrics: &str, buckets: u32) {
    let url = format!("{metrics}/metrics");
    let owned = format!("cronshard_buckets_owned {buckets}");
    wait_until("the replica to own every bucket", Duration::from_secs(90), || {
        let answer = http("GET", &url, None);
        let done = answer.lines().any(|l| l == owned);
        async move { done.then_some(()) }
    })
    .await;
}

/// The names of the Jobs of CronJob `name`.
async fn runs_of(client: &kube::Client, ns: &str, name: &str) -> Vec<String> {
    let prefix = format!("{name}-");
    jobs(client, ns).await.into_iter().filter_map(|j| j.metadata.name).filter(|n| n.starts_with(&prefix)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_schedule_starts_no_run_by_itself_across_a_replica_restart() {
    let testbed = tokio::task::spawn_blocking(|| Testbed::shared(&Options::default())).await.expect("testbed");
    let client = testbed.client().await;
    let ns = testbed.namespace("edit").await;
    let leases = testbed.namespace("edit-leases").await;
    let last_run = rfc3339(now_seconds() - 20 * 60);
    // Both last ran 20 minutes ago; a daily time 10 minutes ago lies between then and now.
    let missed = daily_at_minutes_ago(10);
    create_cronjob(&client, &ns, &cronjob("untouched", &missed, json!({}))).await;
    set_cronjob_status(&client, &ns, "untouched", json!({"lastScheduleTime": last_run})).await;
    create_cronjob(&client, &ns, &cronjob("edited", "0 0 1 1 *", json!({}))).await;
    set_cronjob_status(&client, &ns, "edited", json!({"lastScheduleTime": last_run})).await;
    // Created in an earlier second than the edit: the edit is a change, not the creation.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let api: Api<CronJob> = Api::namespaced(client.clone(), &ns);
    let edit = json!({"spec": {"schedule": missed}});
    api.patch("edited", &PatchParams::default(), &Patch::Merge(&edit)).await.expect("edit the schedule");

    let args = ["--namespace", leases.as_str(), "--buckets", "2"];
    let log = testbed.dir().join("replica-edit.log");
    let (mut first, metrics) = replica(&testbed.admin_kubeconfig(), "edit-a", &args, &log);
    owns_all(&metrics, 2).await;
    // The untouched CronJob's missed run starts at once: the replica acts on this namespace.
    wait_until("the untouched CronJob's missed run", Duration::from_secs(30), || async {
        (runs_of(&client, &ns, "untouched").await.len() == 1).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(runs_of(&client, &ns, "edited").await, Vec::<String>::new(), "the edit started a run");

    // SIGKILL, then a new process: it knows the moment of the edit from the server only.
    let _ = first.0.kill();
    let _ = first.0.wait();
    let (mut second, metrics) = replica(&testbed.admin_kubeconfig(), "edit-b", &args, &log);
    owns_all(&metrics, 2).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(runs_of(&client, &ns, "edited").await, Vec::<String>::new(), "the restarted replica started a run");
    assert_eq!(runs_of(&client, &ns, "untouched").await.len(), 1, "the missed run started once");
    let edited = get_cronjob(&client, &ns, "edited").await;
    let last = edited.status.and_then(|s| s.last_schedule_time).map(|t| t.0.to_string());
    assert_eq!(last.as_deref(), Some(last_run.as_str()), "nothing recorded as run");
    assert_eq!(terminate(&mut second), Some(0), "cronshard run exits cleanly on SIGTERM");
}
