//! Writes that the server is slow to carry out, against the in-process simulator: a bucket
//! that stops (is handed over) while its creates are stuck at the server leaves none to land
//! after the stop, and a write goes out with what is left of the write fence as its
//! server-side `timeout`, so the server never carries it out past the fence deadline. A
//! bucket whose stop sender is gone ends.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{before_boundary, cronjob, job_names, load, serve, wait_for};
use cronshard_sim::{Config, SimState};
use cronshard_worker::{Clock, Context};
use serde_json::json;

const CRONJOBS: usize = 10;

/// `CRONJOBS` CronJobs in bucket 0 due at the next boundary (2 s away), and bucket 0 running
/// (with the replica's watches) and listed. Send `true` on the returned sender to stop it.
async fn bucket_before_boundary(
    sim: &SimState,
    ctx: &Arc<Context>,
    clock: &Clock,
) -> (i64, tokio::sync::watch::Sender<bool>, tokio::task::JoinHandle<()>) {
    let boundary = before_boundary(sim, clock, 2);
    // Created within the minute: the first run is the one at the boundary.
    let created = cronshard_types::Timestamp::from_second(boundary.as_second() - 30).expect("created");
    let cronjobs: Vec<_> =
        (0..CRONJOBS).map(|i| cronjob(&format!("tick-{i}"), &format!("uid-{i}"), created, json!({}))).collect();
    load(sim, &cronjobs);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let ready = Arc::new(AtomicUsize::new(0));
    let bucket = cronshard_worker::bucket::run(ctx.clone(), 0, 0, stopped.clone(), ready.clone());
    // Buckets are ready once the Namespaces' spread defaults are listed too.
    let (_owned, owned) = tokio::sync::watch::channel([0].into());
    let replica = cronshard_worker::watches::run_replica_watches(ctx.clone(), owned, stopped);
    let both = tokio::spawn(async move {
        futures::join!(bucket, replica);
    });
    wait_for("the bucket listed", || ready.load(Ordering::Relaxed) == 1).await;
    (boundary.as_second(), stop, both)
}

fn job_creates(sim: &SimState, since: usize) -> Vec<u16> {
    sim.0.audit.since(since).iter().filter(|r| r.verb == "create" && r.resource == "jobs").map(|r| r.code).collect()
}

/// Every write takes the server 20 s: longer than a stopping bucket waits for its syncs
/// (15 s). Dropped, their requests are cancelled (the connection closes; the server stops
/// serving a request whose client went away), so none lands after the stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_bucket_leaves_no_create_to_land_after_it() {
    let sim = SimState::new(Config { runner: None, ..Config::default() });
    let clock = Clock::default();
    let ctx = common::context(serve(sim.clone()).await, &clock);
    let (boundary, stop, bucket) = bucket_before_boundary(&sim, &ctx, &clock).await;
    sim.0.faults.update(|f| f.latency.write_ms = 20_000);
    wait_for("the runs due and sent", || sim.store().clock().now().as_second() > boundary).await;

    let _ = stop.send(true);
    bucket.await.expect("the bucket stops");
    let stopped_at = sim.0.audit.len();
    // Past the point where the server would have answered the creates.
    let answered_by = boundary + 22;
    wait_for("the creates' latency passed", || sim.store().clock().now().as_second() >= answered_by).await;
    assert!(job_names(&sim).is_empty(), "runs landed after the stop: {:?}", job_names(&sim));
    assert_eq!(job_creates(&sim, stopped_at), Vec::<u16>::new(), "the server carried out no create");
}

/// Writes carry what is left of the fence (renewed 3 s ahead) as their `timeout`: a server
/// that takes 5 s per write answers 504 at the deadline and carries out none of them, where
/// without the timeout each would land 2 s after this replica's fence deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_drops_a_write_it_cannot_finish_before_the_fence_deadline() {
    let sim = SimState::new(Config { runner: None, ..Config::default() });
    let clock = Clock::default();
    let ctx = common::context(serve(sim.clone()).await, &clock);
    let renewing = {
        let fence = ctx.fence.clone();
        tokio::spawn(async move {
            loop {
                fence.open_until(std::time::Instant::now() + Duration::from_secs(3));
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    let (_boundary, stop, bucket) = bucket_before_boundary(&sim, &ctx, &clock).await;
    sim.0.faults.update(|f| f.latency.write_ms = 5_000);
    wait_for("every run's create answered", || job_creates(&sim, 0).len() >= CRONJOBS).await;
    let codes = job_creates(&sim, 0);
    assert!(codes.iter().all(|c| *c == 504), "{codes:?}");
    assert!(job_names(&sim).is_empty(), "{:?}", job_names(&sim));
    let _ = stop.send(true);
    bucket.await.expect("the bucket stops");
    renewing.abort();
}

/// A bucket (and the replica's watches) whose stop sender is dropped without a word is being
/// torn down: it ends, rather than spin on a channel that can no longer change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_whose_stop_sender_is_gone_ends() {
    let sim = SimState::new(Config { runner: None, ..Config::default() });
    let clock = Clock::default();
    let ctx = common::context(serve(sim.clone()).await, &clock);
    let (_boundary, stop, bucket) = bucket_before_boundary(&sim, &ctx, &clock).await;
    drop(stop);
    let ended = tokio::time::timeout(Duration::from_secs(10), bucket).await;
    assert!(ended.is_ok_and(|joined| joined.is_ok()), "the bucket and the replica's watches end");
}
