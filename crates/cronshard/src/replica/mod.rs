//! One controller replica (`cronshard run`), built from its settings and run until SIGTERM.
//!
//! [`build`] checks the settings and makes the client, metrics, limiter and worker context;
//! [`run`] wires the tasks: the [`http`] endpoints, the client rate and owned set that
//! [`ownership`] follows, the replica-wide watches, and the coordinator driving the
//! [`workers`]. On SIGTERM every bucket is handed back, within 30 s.

mod build;
mod http;
mod ownership;
mod settings;
#[cfg(test)]
mod tests;
mod workers;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use anyhow::anyhow;
use cronshard_coordinator::Ownership;
use cronshard_worker::BucketSet;
use cronshard_worker::api::limiter::keep_adapting;
use tokio::sync::watch;
use tracing::Instrument;

use self::build::{Replica, build};
use self::http::{Health, app};
use self::ownership::follow_ownership;
pub(crate) use self::settings::ReplicaSettings;
use self::workers::Workers;
use crate::cluster_cli::bind_metrics;

/// How long the coordinator may take to hand every bucket back after SIGTERM.
const HAND_BACK_WITHIN: Duration = Duration::from_secs(30);

/// Builds the replica from `settings` and runs it until SIGTERM (or Ctrl-C), then hands every
/// bucket back; an error if a setting cannot work or the coordinator stops by itself.
pub(crate) async fn run(settings: ReplicaSettings) -> anyhow::Result<()> {
    let Replica { coordination, coordinator_metrics, ctx, registry } = build(&settings).await?;
    let buckets = coordination.buckets;
    let ready = Arc::new(AtomicUsize::new(0));
    let (listener, addr) = bind_metrics(settings.metrics_addr).await?;
    tracing::info!(identity = %coordination.identity, metrics = %addr, buckets, namespace = %coordination.namespace, server = %ctx.server, "cronshard running");
    let (ownership_tx, ownership) = watch::channel(Ownership::default());
    let health = Health { ready: ready.clone(), ownership: ownership.clone(), registry: Arc::new(registry) };
    let router = app(health);
    let (stop_tx, stop_rx) = watch::channel(false);
    let http = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    // The labellers follow the owned set (beside them, the Namespaces' spread defaults); the
    // client rate follows this replica's share, and the limiter adapts it to the server.
    let (owned_tx, owned_rx) = watch::channel(BTreeSet::new());
    tokio::spawn(follow_ownership(ownership.clone(), owned_tx, ctx.clone(), buckets.get()));
    let adapting = ctx.clone();
    let adapt = tokio::spawn(async move { keep_adapting(&adapting.limiter, &adapting.metrics).await });
    // The labeller starts once the server has said whether it filters by shard (buckets
    // claimed before that relist when it does): on such a server it never writes a label.
    let watching = ctx.clone();
    let stop_watches = stop_rx.clone();
    let replica_watches = tokio::spawn(async move {
        watching.sharding.probe_until_answered(&watching.client, watching.settings.bucket_function).await;
        cronshard_worker::watches::run_replica_watches(watching, owned_rx, stop_watches).await;
    });
    // No bucket write before the first renewal.
    ctx.fence.close();
    let workers = Workers(BucketSet::new(ctx.clone(), ready), ctx.fence.clone());
    // The coordinator's lines name the server they failed to reach.
    let coordinator_span = tracing::info_span!("coordinator", server = %ctx.server);
    let mut coordinator = tokio::spawn(
        cronshard_coordinator::run(
            ctx.client.clone(),
            coordination,
            workers,
            coordinator_metrics,
            ownership_tx,
            stop_rx,
        )
        .instrument(coordinator_span),
    );
    tokio::select! {
        () = cronshard::cli::shutdown_signal() => {}
        ended = &mut coordinator => {
            http.abort();
            adapt.abort();
            return match ended {
                Ok(Ok(())) => Err(anyhow!("the coordinator stopped")),
                Ok(Err(e)) => Err(e.into()),
                Err(e) => Err(anyhow!("the coordinator failed: {e}")),
            };
        }
    }
    tracing::info!("SIGTERM: handing every bucket back");
    let _ = stop_tx.send(true);
    // Buckets stop (in-flight syncs finish) and are released; the coordinator bounds the wait.
    let _ = tokio::time::timeout(HAND_BACK_WITHIN, coordinator).await;
    replica_watches.abort();
    adapt.abort();
    http.abort();
    Ok(())
}
