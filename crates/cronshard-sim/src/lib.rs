//! cronshard-sim: an in-memory Kubernetes API server for the resources cronshard uses,
//! faithful to kube-apiserver's list, watch, concurrency and flow-control semantics.
//!
//! [`app`] returns an axum `Router`, so tests serve it in-process; `cronshard-sim serve` serves
//! it standalone. See docs/simulator.md for what it serves and how.

mod admin;
mod api;
pub mod audit;
pub mod auth;
pub mod clock;
pub mod deadline;
mod discovery;
pub mod error;
pub mod event;
pub mod faults;
pub mod flow;
pub mod managed;
pub mod metrics;
pub mod protobuf;
pub mod request;
pub mod resource;
pub mod runner;
pub mod selector;
pub mod shard;
pub mod store;
mod validation;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use serde_json::json;

pub use crate::audit::AuditRecord;
pub use crate::error::{ApiError, Result};
pub use crate::resource::Resource;

/// Everything the server is configured with at start.
#[derive(Clone, Debug)]
pub struct Config {
    pub compaction_interval: Duration,
    pub bookmark_interval: Duration,
    /// Watches without `timeoutSeconds` end after this (kube-apiserver: 30-60 min).
    pub default_watch_timeout: Duration,
    pub flow: flow::FlowConfig,
    pub latency: faults::Latency,
    pub tokens: HashMap<String, auth::User>,
    pub allow_anonymous: bool,
    pub rbac: Option<auth::Rbac>,
    pub runner: Option<runner::RunnerConfig>,
    /// kube-apiserver's default request body limit.
    pub max_body_bytes: usize,
    /// Namespaces that exist at start.
    pub namespaces: Vec<String>,
    /// kube-apiserver's `ShardedListAndWatch` feature gate at start (alpha: off by default).
    pub sharded_list_and_watch: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            compaction_interval: Duration::from_secs(300),
            bookmark_interval: Duration::from_secs(5),
            default_watch_timeout: Duration::from_secs(1800),
            flow: flow::FlowConfig::default(),
            latency: faults::Latency::default(),
            tokens: HashMap::new(),
            allow_anonymous: true,
            rbac: None,
            runner: None,
            max_body_bytes: 3 * 1024 * 1024,
            namespaces: ["default", "kube-system", "kube-public", "kube-node-lease"].map(str::to_owned).to_vec(),
            sharded_list_and_watch: false,
        }
    }
}

/// The shared state behind every request.
#[derive(Debug)]
pub struct Shared {
    pub config: Config,
    pub store: store::Store,
    pub flow: flow::Flow,
    pub faults: faults::Faults,
    pub audit: audit::Audit,
    pub metrics: metrics::Metrics,
    /// Bumped to end every open watch.
    pub watch_epoch: tokio::sync::watch::Sender<u64>,
}

/// A handle to a running simulator's state; cheap to clone.
#[derive(Clone, Debug)]
pub struct SimState(pub Arc<Shared>);

impl SimState {
    /// Builds the state and creates the initial namespaces. Background tasks (compaction,
    /// job runner) are started by [`SimState::spawn_background`].
    pub fn new(config: Config) -> Self {
        let clock = clock::Clock::default();
        let store = store::Store::new(clock);
        for ns in &config.namespaces {
            let mut namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            Resource::Namespaces.apply_defaults(&mut namespace);
            Resource::Namespaces.prepare_for_create(&mut namespace);
            // Creating a fresh namespace in an empty store cannot collide.
            let _ = store.create(Resource::Namespaces, namespace);
        }
        let shared = Shared {
            flow: flow::Flow::new(config.flow.clone()),
            faults: faults::Faults::new(config.latency.clone(), config.sharded_list_and_watch),
            audit: audit::Audit::default(),
            metrics: metrics::Metrics::default(),
            watch_epoch: tokio::sync::watch::channel(0).0,
            store,
            config,
        };
        SimState(Arc::new(shared))
    }

    /// Starts periodic compaction and, if configured, the job runner. They stop when the
    /// returned handles are aborted or the runtime shuts down.
    pub fn spawn_background(&self) -> Vec<tokio::task::JoinHandle<()>> {
        let mut tasks = Vec::new();
        let state = self.clone();
        let interval = self.0.config.compaction_interval;
        if !interval.is_zero() {
            tasks.push(tokio::spawn(async move {
                let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
                loop {
                    tick.tick().await;
                    let compacted = state.0.store.compact_periodic();
                    tracing::debug!(compacted, "periodic compaction");
                }
            }));
        }
        if let Some(config) = self.0.config.runner.clone() {
            tasks.push(runner::spawn(self.clone(), config));
        }
        tasks
    }

    pub fn store(&self) -> &store::Store {
        &self.0.store
    }

    /// Bulk-loads objects (JSON array, `List`, or JSON Lines) without validation.
    pub fn load(&self, body: &[u8]) -> Result<usize> {
        admin::load_objects(self, body)
    }

    /// Ends every open watch (clients re-watch from their last resourceVersion).
    pub fn drop_watches(&self) {
        self.0.watch_epoch.send_modify(|e| *e += 1);
    }
}

/// The simulator's HTTP application: Kubernetes API paths, discovery, `/sim/...` admin and
/// `/metrics`.
pub fn app(state: SimState) -> Router {
    admin::routes().fallback(api::handle).with_state(state)
}
