//! Server-side sharding on the simulator: buckets that the server filters never patch a
//! CronJob, a server that stops filtering turns `auto` back to labels, and another bucket's
//! object in a bucket's watch is dropped, counted and moved to its own bucket.

mod common;

use std::num::NonZeroU32;
use std::sync::Arc;

use common::{before_boundary, cronjob, job_names, objects, serve, wait_for};
use cronshard_sim::{Config, Resource, SimState};
use cronshard_types::{BucketFunction, bucket_of_uid};
use cronshard_worker::api::limiter::Limiter;
use cronshard_worker::sharding::{Filtering, ServerSideSharding};
use cronshard_worker::{Clock, Context, Settings};
use k8s_openapi::api::batch::v1::CronJob;
use kube::api::{Api, PostParams};
use serde_json::json;

const BUCKETS: u32 = 4;

fn sim(gate: bool) -> SimState {
    SimState::new(Config { runner: None, sharded_list_and_watch: gate, ..Config::default() })
}

fn context(config: kube::Config, clock: &Clock, sharding: ServerSideSharding) -> Arc<Context> {
    let settings = Settings {
        identity: "replica-test".into(),
        buckets: NonZeroU32::new(BUCKETS).expect("non-zero"),
        selector: None,
        dst_policy: Default::default(),
        bucket_function: BucketFunction::Uid,
        server_side_sharding: sharding,
    };
    Context::new(config, Limiter::new(0.0, 1), settings, clock.clone(), Default::default()).expect("context")
}

/// Writes to CronJobs, as `verb resource name`.
fn cronjob_writes(sim: &SimState) -> Vec<String> {
    sim.0
        .audit
        .since(0)
        .iter()
        .filter(|r| matches!(r.verb.as_str(), "update" | "patch") && r.resource.starts_with("cronjobs"))
        .map(|r| format!("{} {} {}", r.verb, r.resource, r.name))
        .collect()
}

fn foreign(ctx: &Context, kind: &str) -> u64 {
    let labels = cronshard_worker::metrics::KindLabels { kind: kind.into() };
    ctx.metrics.foreign.get_or_create(&labels).get()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filtered_by_the_server_no_cronjob_is_patched_until_it_stops_filtering() {
    let sim = sim(true);
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    let ctx = context(config, &clock, ServerSideSharding::Auto);
    let probed = ctx.sharding.probe(&ctx.client, BucketFunction::Uid).await.expect("probe");
    assert_eq!(probed, Filtering::Server);
    let boundary = before_boundary(&sim, &clock, 4);
    let (stop, worker, listed) = common::start_counting_listed(ctx.clone());
    wait_for("every bucket listed", || listed.load(std::sync::atomic::Ordering::Relaxed) == BUCKETS as usize).await;
    // Created while the buckets run, through the API: the server gives each its uid.
    let api: Api<CronJob> = Api::namespaced(ctx.client.clone(), "default");
    let created = sim.store().clock().now();
    for i in 0..40 {
        let mut cj = cronjob(&format!("sharded-{i:02}"), "", created, json!({}));
        cj["metadata"].as_object_mut().map(|m| (m.remove("labels"), m.remove("uid")));
        api.create(&PostParams::default(), &serde_json::from_value(cj).expect("a CronJob")).await.expect("create");
    }
    wait_for("one run of each", || job_names(&sim).len() == 40).await;
    let minute = boundary.as_second() / 60;
    let uids: std::collections::HashMap<String, String> = objects(&sim, Resource::CronJobs)
        .iter()
        .map(|cj| {
            (
                cj["metadata"]["name"].as_str().unwrap_or_default().into(),
                cj["metadata"]["uid"].as_str().unwrap_or_default().into(),
            )
        })
        .collect();
    for job in objects(&sim, Resource::Jobs) {
        let owner = job["metadata"]["ownerReferences"][0]["name"].as_str().unwrap_or_default().to_owned();
        assert_eq!(job["metadata"]["name"], format!("{owner}-{minute}"), "the run of the boundary, once");
        let bucket = bucket_of_uid(&uids[&owner], NonZeroU32::new(BUCKETS).expect("non-zero"));
        assert_eq!(job["metadata"]["labels"]["cronshard.io/bucket"], bucket.to_string(), "Jobs keep the label");
    }
    let writes = cronjob_writes(&sim);
    assert!(writes.iter().all(|w| w.contains("cronjobs/status")), "only status writes to CronJobs: {writes:?}");
    assert_eq!((foreign(&ctx, "CronJob"), foreign(&ctx, "Job")), (0, 0));
    assert!(ctx.metrics.encode().contains("cronshard_server_side_sharding 1"));

    // The gate switched off (a restart with other flags): lists come back whole, without
    // shardInfo. The buckets go back to labels, and every CronJob is labelled with its bucket.
    sim.0.faults.update(|f| f.sharded_list_and_watch = false);
    sim.drop_watches();
    wait_for("labels again", || ctx.sharding.filtering() == Filtering::Labels).await;
    wait_for("every CronJob labelled", || {
        objects(&sim, Resource::CronJobs).iter().all(|cj| {
            let bucket =
                bucket_of_uid(cj["metadata"]["uid"].as_str().unwrap_or_default(), NonZeroU32::new(BUCKETS).expect("4"));
            cj["metadata"]["labels"]["cronshard.io/bucket"].as_str().and_then(|b| b.parse().ok()) == Some(bucket)
        })
    })
    .await;
    assert!(ctx.metrics.encode().contains("cronshard_server_side_sharding 0"));
    let _ = stop.send(true);
    worker.await.expect("joins");
    assert_eq!(job_names(&sim).len(), 40, "no run twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cronjob_labelled_for_another_bucket_is_dropped_counted_and_moved_to_its_own() {
    let sim = sim(false);
    let config = serve(sim.clone()).await;
    let clock = Clock::default();
    let ctx = context(config, &clock, ServerSideSharding::Auto);
    assert_eq!(ctx.sharding.probe(&ctx.client, BucketFunction::Uid).await.expect("probe"), Filtering::Labels);
    let buckets = NonZeroU32::new(BUCKETS).expect("non-zero");
    let uid = (0..).map(|i| format!("uid-copied-{i}")).find(|u| bucket_of_uid(u, buckets) == 0).expect("a uid");
    let created = sim.store().clock().now();
    // Its label was copied from a CronJob of bucket 1 (`kubectl get -o yaml` into a new name).
    let mut copied = cronjob("copied", &uid, created, json!({}));
    copied["metadata"]["labels"] = json!({"cronshard.io/bucket": "1"});
    common::load(&sim, &[copied]);
    let boundary = before_boundary(&sim, &clock, 3);
    let (stop, worker) = common::start(ctx.clone());
    wait_for("the run, by bucket 0", || job_names(&sim).len() == 1).await;
    assert_eq!(foreign(&ctx, "CronJob"), 1, "bucket 1 dropped it once");
    let stored = common::get(&sim, Resource::CronJobs, "copied").expect("stored");
    assert_eq!(stored["metadata"]["labels"]["cronshard.io/bucket"], "0");
    let job = common::get(&sim, Resource::Jobs, &format!("copied-{}", boundary.as_second() / 60)).expect("the run");
    assert_eq!(job["metadata"]["labels"]["cronshard.io/bucket"], "0");
    let _ = stop.send(true);
    worker.await.expect("joins");
}
