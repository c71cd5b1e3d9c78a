//! The real 410 Gone, from a kube-apiserver whose etcd history is compacted every second:
//! a held continue token expires with upstream's message, cronshard's Job labelling pass
//! starts over and labels every Job, and a replica whose watches were cut reconnects with a
//! compacted resourceVersion, gets "too old resource version" and recovers by listing again.
//! The watch cache is off so that a watch from an old resourceVersion reaches etcd, as it
//! does on a server whose watch cache has moved past it.

mod common;

use std::num::NonZeroU32;
use std::time::Duration;

use common::real::{
    Options, Partition, Testbed, config_from, create_cronjob, create_owned_job, cronjob, kubeconfig_via, metric_sum,
    replica, server_port, wait_until,
};
use common::{http, terminate};
use cronshard_worker::api::limiter::Limiter;
use cronshard_worker::{Clock, Context, Settings};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// The tests take turns: a replica labels every CronJob-owned Job in the cluster, the other
/// test's included.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn options() -> Options {
    Options {
        compaction_interval: Some("1s".into()),
        apiserver_args: vec!["--watch-cache=false".into()],
        ..Options::default()
    }
}

/// Keeps etcd's revision moving (a ConfigMap written every 100 ms) so that compaction has
/// something to compact.
fn writer(client: kube::Client, namespace: &str) -> tokio::task::JoinHandle<()> {
    let api: Api<ConfigMap> = Api::namespaced(client, namespace);
    tokio::spawn(async move {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "tick"}})).expect("configmap");
        api.create(&PostParams::default(), &cm).await.expect("create configmap");
        for i in 0u64.. {
            let patch = json!({"data": {"tick": i.to_string()}});
            let _ = api.patch("tick", &PatchParams::default(), &Patch::Merge(&patch)).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_continue_token_expires_and_the_labelling_pass_starts_over() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let testbed = tokio::task::spawn_blocking(|| Testbed::shared(&options())).await.expect("testbed");
    let client = testbed.client().await;
    let ns = testbed.namespace("gone").await;
    let ticks = writer(client.clone(), &ns);
    let owner = create_cronjob(&client, &ns, &cronjob("owner", "0 0 1 1 *", json!({}))).await;
    for i in 0..12 {
        create_owned_job(&client, &owner, &format!("owner-{}", 1000 + i), &[]).await;
    }

    // A continue token held while etcd compacts: the real 410 and upstream's message.
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
    let first = jobs.list_metadata(&ListParams::default().limit(5)).await.expect("first page");
    let token = first.metadata.continue_.expect("a continue token");
    let status = wait_until("the continue token to expire", Duration::from_secs(30), || async {
        match jobs.list_metadata(&ListParams::default().limit(5).continue_token(&token)).await {
            Err(kube::Error::Api(status)) if status.code == 410 => Some(status),
            Ok(_) => None,
            Err(e) => panic!("unexpected error: {e}"),
        }
    })
    .await;
    assert_eq!(status.reason, "Expired", "{status:?}");
    assert!(status.message.contains("The provided continue parameter is too old"), "{status:?}");

    // The labelling pass at one request a second: each continue token is five patches old,
    // long compacted, so every page after the first gets 410 and the pass starts over.
    let config = config_from(&testbed.admin_kubeconfig()).await;
    let settings = Settings {
        identity: "real-labeller".into(),
        buckets: NonZeroU32::MIN,
        selector: None,
        dst_policy: Default::default(),
        bucket_function: cronshard_types::BucketFunction::Uid,
        server_side_sharding: Default::default(),
    };
    let ctx =
        Context::new(config, Limiter::new(1.0, 1), settings, Clock::default(), Default::default()).expect("context");
    let labelled =
        cronshard_worker::watches::labeller::label_orphan_jobs(&ctx, &|_| true, 5).await.expect("the pass completes");
    assert_eq!(labelled, 12, "every Job labelled once");
    assert!(ctx.metrics.api.expired.get() >= 1, "the pass met at least one real 410");
    let all = jobs.list_metadata(&ListParams::default()).await.expect("list").items;
    assert!(all.iter().all(|j| j.metadata.labels.as_ref().is_some_and(|l| l.contains_key("cronshard.io/bucket"))));
    ticks.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_cut_past_compaction_relist_and_recover() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let testbed = tokio::task::spawn_blocking(|| Testbed::shared(&options())).await.expect("testbed");
    let client = testbed.client().await;
    let ns = testbed.namespace("relist").await;
    let leases = testbed.namespace("relist-leases").await;
    let ticks = writer(client.clone(), &ns);
    create_cronjob(&client, &ns, &cronjob("before", "0 0 1 1 *", json!({}))).await;

    let partition = Partition::start(server_port(&testbed.admin_kubeconfig())).await;
    let via = testbed.dir().join(format!("via-proxy-{}.kubeconfig", partition.port));
    kubeconfig_via(&testbed.admin_kubeconfig(), partition.port, &via);
    let log = testbed.dir().join("replica-relist.log");
    let args = ["--namespace", leases.as_str(), "--buckets", "1", "--renew-deadline", "20s", "--lease-duration", "30s"];
    let (mut run, metrics) = replica(&via, "real-relist", &args, &log);
    let cached = |metrics: String| async move {
        let text = http("GET", &format!("{metrics}/metrics"), None);
        metric_sum(&text, "cronshard_objects{kind=\"CronJob\"")
    };
    wait_until("the first CronJob cached", Duration::from_secs(30), || async {
        (cached(metrics.clone()).await >= 1.0).then_some(())
    })
    .await;

    // Cut every connection for a few compactions, then let the replica reconnect.
    partition.cut();
    let cronjobs: Api<CronJob> = Api::namespaced(client.clone(), &ns);
    cronjobs.create(&PostParams::default(), &cronjob("during", "0 0 1 1 *", json!({}))).await.expect("create");
    let compacted_from = jobs_revision(&client).await;
    wait_until("etcd to compact past the replica's watches", Duration::from_secs(30), || async {
        let probe: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
        let params = kube::api::WatchParams::default();
        match probe.watch(&params, &compacted_from).await {
            Ok(stream) => {
                use futures::StreamExt;
                let first = Box::pin(stream).next().await;
                matches!(first, Some(Ok(kube::api::WatchEvent::Error(e))) if e.code == 410).then_some(())
            }
            Err(kube::Error::Api(e)) if e.code == 410 => Some(()),
            Err(_) => None,
        }
    })
    .await;
    partition.heal();

    wait_until("the replica to meet 410 and relist both CronJobs", Duration::from_secs(60), || async {
        let text = http("GET", &format!("{metrics}/metrics"), None);
        let expired = metric_sum(&text, "cronshard_api_expired_total");
        let cached = metric_sum(&text, "cronshard_objects{kind=\"CronJob\"");
        (expired >= 1.0 && cached >= 2.0).then_some(())
    })
    .await;
    assert_eq!(terminate(&mut run), Some(0), "cronshard run exits cleanly on SIGTERM");
    ticks.abort();
}

/// The cluster's current resourceVersion (from a list), which compaction will soon pass.
async fn jobs_revision(client: &kube::Client) -> String {
    let api: Api<Job> = Api::all(client.clone());
    let list = api.list_metadata(&ListParams::default().limit(1)).await.expect("list");
    list.metadata.resource_version.expect("resourceVersion")
}
