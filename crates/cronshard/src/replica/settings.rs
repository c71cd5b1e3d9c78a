//! What one replica is told: its flags' values as given, checked when it is built.

use std::net::SocketAddr;
use std::time::Duration;

/// `cronshard run`'s flags, one field each (see `run_cmd` for what each means).
#[derive(Clone, Debug)]
pub(crate) struct ReplicaSettings {
    /// `--kubeconfig` and `--context`.
    pub(crate) connection: crate::cluster_cli::Connection,
    /// None: the hostname with a random suffix.
    pub(crate) identity: Option<String>,
    pub(crate) metrics_addr: SocketAddr,
    pub(crate) selector: Option<String>,
    pub(crate) buckets: u32,
    /// `--bucket-function`.
    pub(crate) bucket_function: cronshard_types::BucketFunction,
    /// `--server-side-sharding`.
    pub(crate) server_side_sharding: cronshard_worker::sharding::ServerSideSharding,
    /// Of the member and bucket Leases; None: the kubeconfig's.
    pub(crate) namespace: Option<String>,
    pub(crate) renew_period: Duration,
    pub(crate) renew_deadline: Duration,
    pub(crate) lease_duration: Duration,
    pub(crate) join_grace: Duration,
    /// Requests per second, 0 = none.
    pub(crate) qps: f64,
    pub(crate) burst: u32,
    /// The whole deployment's starting rate, 0 = none.
    pub(crate) deployment_qps: f64,
    /// Whether the rate adapts to the server's answers (not `--fixed-rate`).
    pub(crate) adaptive_rate: bool,
    /// Whether lower-priority work is held back before a herd (not `--no-herd-reservation`).
    pub(crate) herd_reservation: bool,
    /// `--dst-policy`.
    pub(crate) dst_policy: cronshard_types::DstPolicy,
    /// For tests and demos only: a cronshard-sim whose clock offset to follow.
    pub(crate) testing_clock_from: Option<String>,
}
