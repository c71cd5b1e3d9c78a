//! `cronshard run`: one controller replica. Replicas share the buckets through Leases
//! (cronshard-coordinator); this process serves `/metrics`, `/healthz` and `/readyz`.
//! The flags are parsed here; the replica itself is [`crate::replica`].

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use cronshard_types::{BucketFunction, DstPolicy};
use cronshard_worker::sharding::ServerSideSharding;

use crate::cluster_cli::Connection;
use crate::replica::{self, ReplicaSettings};

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    connection: Connection,
    /// Replica identity; default: $POD_NAME, else the hostname with a random suffix (two
    /// processes with one identity would both work its buckets; one of them refuses).
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// Address of /metrics, /healthz and /readyz (port 0 picks a free port, printed on stdout).
    #[arg(long, env = "CRONSHARD_METRICS_ADDR", default_value = "0.0.0.0:8080")]
    metrics_addr: SocketAddr,
    /// Manage only CronJobs matching this label selector (gradual migration from the in-tree controller).
    #[arg(long, env = "CRONSHARD_SELECTOR")]
    selector: Option<String>,
    /// Number of buckets (1 to 4096); must be the deployment's count of record (the first
    /// replica records it in Lease cronshard-config; a replica that disagrees refuses).
    #[arg(long, env = "CRONSHARD_BUCKETS", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_BUCKETS)))]
    buckets: u32,
    /// How CronJobs map to buckets: `uid` (a range of the FNV-1a hash of the CronJob's uid,
    /// which kube-apiserver can filter by) or `name` (the hash of namespace/name, recorded
    /// by deployments made before there was a choice); must be the deployment's function of
    /// record (Lease cronshard-config), or the replica refuses.
    #[arg(long, env = "CRONSHARD_BUCKET_FUNCTION", default_value = "uid")]
    bucket_function: BucketFunction,
    /// Whether buckets ask the API server to select their CronJobs (shardSelector,
    /// Kubernetes' ShardedListAndWatch feature gate) instead of labelling every CronJob:
    /// `auto` when the server shows it filters, `on` always, `off` never.
    #[arg(long, env = "CRONSHARD_SERVER_SIDE_SHARDING", default_value = "auto")]
    server_side_sharding: ServerSideSharding,
    /// Namespace of the member and bucket Leases; default: $POD_NAMESPACE, else the
    /// kubeconfig's (or service account's) namespace.
    #[arg(long, env = "POD_NAMESPACE")]
    namespace: Option<String>,
    /// How often the member Lease is renewed .
    #[arg(long, default_value = "2s", value_parser = cronshard::cli::parse_duration)]
    renew_period: Duration,
    /// A replica that has not renewed for this long stops all bucket work.
    #[arg(long, default_value = "10s", value_parser = cronshard::cli::parse_duration)]
    renew_deadline: Duration,
    /// Others take a replica's buckets once its member Lease has not changed for this long.
    #[arg(long, default_value = "15s", value_parser = cronshard::cli::parse_duration)]
    lease_duration: Duration,
    /// A new replica takes free buckets at once, but others give it theirs only after it has
    /// been a member this long: a pod that replaces another within it inherits that pod's
    /// buckets and nothing else moves (longer than a rolling update's pod replacement).
    #[arg(long, default_value = "30s", value_parser = cronshard::cli::parse_duration)]
    join_grace: Duration,
    /// This replica's client rate cap, requests per second (0 = none, the default: the
    /// adaptive rate finds what the server admits; with --deployment-qps 0 too, no
    /// client-side limit at all). The adaptive rate never goes above it.
    #[arg(long, env = "CRONSHARD_QPS", default_value_t = 0.0, value_parser = parse_rate)]
    qps: f64,
    /// Client burst at --qps (it shrinks in proportion with the rate); without --qps the
    /// burst is a second of the rate.
    #[arg(long, env = "CRONSHARD_BURST", default_value_t = 1000)]
    burst: u32,
    /// The whole deployment's starting client rate, requests per second (0 = none: each
    /// replica starts at --qps): each replica takes the share its buckets make up (about 1/R).
    /// From there the rate adapts to the API server: cut on 429s and on writes that queued
    /// there for more than half a second, raised while work waits for it and the rate is used
    /// (fourfold a second until the server first pushes back, then step by step), so
    /// that replicas stay within the server's admitted write rate, where their own
    /// priorities (due creates first) hold.
    #[arg(long, env = "CRONSHARD_DEPLOYMENT_QPS", default_value_t = 1000.0, value_parser = parse_rate)]
    deployment_qps: f64,
    /// Keep the client rate at the share of --deployment-qps instead of adapting it to the
    /// server's answers.
    #[arg(long, env = "CRONSHARD_FIXED_RATE")]
    fixed_rate: bool,
    /// Never hold status writes, labels, Events and cleanup back before a herd (to measure
    /// what the reservation gains; see docs/design.md).
    #[arg(long, env = "CRONSHARD_NO_HERD_RESERVATION")]
    no_herd_reservation: bool,
    /// Daylight saving: `cron` runs a job at a specific time once when clocks go back and
    /// right after the gap when they go forward; `upstream` keeps kube-controller-manager's
    /// behaviour (twice, and not at all) bit for bit. See docs/design.md.
    #[arg(long, env = "CRONSHARD_DST_POLICY", default_value = "cron")]
    dst_policy: DstPolicy,
    /// FOR TESTS AND DEMOS ONLY: follow the clock offset of a cronshard-sim at this URL
    /// (polled every 200 ms), so runs cross minute boundaries without waiting.
    #[arg(long, hide_short_help = true)]
    testing_clock_from: Option<String>,
}

/// The most buckets a deployment may have: each is a Lease and two watches per owner.
const MAX_BUCKETS: u32 = 4096;

/// A request rate: a finite number, zero or more.
fn parse_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate >= 0.0 => Ok(rate),
        _ => Err(format!("{text:?} is not a rate: give a number of requests per second, 0 or more")),
    }
}

impl RunArgs {
    /// The flags' values as the replica's settings, unchecked.
    fn settings(self) -> ReplicaSettings {
        ReplicaSettings {
            connection: self.connection,
            identity: self.identity,
            metrics_addr: self.metrics_addr,
            selector: self.selector,
            buckets: self.buckets,
            bucket_function: self.bucket_function,
            server_side_sharding: self.server_side_sharding,
            namespace: self.namespace,
            renew_period: self.renew_period,
            renew_deadline: self.renew_deadline,
            lease_duration: self.lease_duration,
            join_grace: self.join_grace,
            qps: self.qps,
            burst: self.burst,
            deployment_qps: self.deployment_qps,
            adaptive_rate: !self.fixed_rate,
            herd_reservation: !self.no_herd_reservation,
            dst_policy: self.dst_policy,
            testing_clock_from: self.testing_clock_from,
        }
    }
}

pub(crate) fn run(args: RunArgs) -> ExitCode {
    cronshard::cli::block_on(replica::run(args.settings()), 2)
}
