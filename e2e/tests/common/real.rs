//! Helpers for the tests against a real kube-apiserver (`scripts/kube-testbed`): typed
//! clients, CronJob builders, and waiting on conditions.

use std::future::Future;
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

pub use cronshard_e2e::testbed::{Cluster, Options, Testbed, config_from, finished};

/// Polls `check` every 250 ms until it returns `Some`, or panics after `timeout` naming `what`.
pub async fn wait_until<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A CronJob of one busybox container; `spec` is merged over the defaults.
pub fn cronjob(name: &str, schedule: &str, spec: Value) -> CronJob {
    let mut cj = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
        "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}});
    if let (Some(base), Some(extra)) = (cj["spec"].as_object_mut(), spec.as_object()) {
        base.extend(extra.clone());
    }
    serde_json::from_value(cj).expect("cronjob")
}

pub async fn create_cronjob(client: &kube::Client, namespace: &str, cj: &CronJob) -> CronJob {
    let api: Api<CronJob> = Api::namespaced(client.clone(), namespace);
    api.create(&PostParams::default(), cj).await.expect("create cronjob")
}

/// Sets a CronJob's status through `/status`, as its controller would have.
pub async fn set_cronjob_status(client: &kube::Client, namespace: &str, name: &str, status: Value) {
    let api: Api<CronJob> = Api::namespaced(client.clone(), namespace);
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&json!({"status": status})))
        .await
        .expect("patch cronjob status");
}

/// Creates a Job owned by `owner`, as an earlier run of it. On a whole cluster its pod's
/// `command` decides how it ends (testbed/kwok/stages/: `sleep N` runs N seconds, `/bin/false`
/// fails, none succeeds after a second); it never retries a failure.
pub async fn create_owned_job(client: &kube::Client, owner: &CronJob, name: &str, command: &[&str]) -> Job {
    let namespace = owner.metadata.namespace.as_deref().expect("namespace");
    let mut container = json!({"name": "c", "image": "busybox"});
    if !command.is_empty() {
        container["command"] = json!(command);
    }
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "ownerReferences": [{"apiVersion": "batch/v1",
            "kind": "CronJob", "name": owner.metadata.name, "uid": owner.metadata.uid,
            "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}});
    let api: Api<Job> = Api::namespaced(client.clone(), namespace);
    api.create(&PostParams::default(), &serde_json::from_value(job).expect("job")).await.expect("create job")
}

/// Holder of each held bucket Lease (Lease name → identity).
pub async fn holders(leases: &Api<Lease>) -> std::collections::BTreeMap<String, String> {
    let list = leases.list(&ListParams::default()).await.expect("list leases").items;
    list.into_iter()
        .filter_map(|l| {
            let name = l.metadata.name?;
            let holder = l.spec?.holder_identity.filter(|h| !h.is_empty())?;
            name.starts_with("cronshard-bucket-").then_some((name, holder))
        })
        .collect()
}

pub async fn jobs(client: &kube::Client, namespace: &str) -> Vec<Job> {
    let api: Api<Job> = Api::namespaced(client.clone(), namespace);
    api.list(&ListParams::default()).await.expect("list jobs").items
}

pub async fn get_cronjob(client: &kube::Client, namespace: &str, name: &str) -> CronJob {
    let api: Api<CronJob> = Api::namespaced(client.clone(), namespace);
    api.get(name).await.expect("get cronjob")
}

/// Reasons of the events.k8s.io Events about `name` in `namespace`.
pub async fn event_reasons(client: &kube::Client, namespace: &str, name: &str) -> Vec<String> {
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    let events = api.list(&ListParams::default()).await.expect("list events").items;
    events
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .filter_map(|e| e.reason)
        .collect()
}

pub fn names(jobs: &[Job]) -> Vec<String> {
    let mut names: Vec<String> = jobs.iter().filter_map(|j| j.metadata.name.clone()).collect();
    names.sort();
    names
}

/// `cronshard run` against the testbed, logging to `log`; returns the process and its metrics URL.
pub fn replica(
    kubeconfig: &std::path::Path,
    identity: &str,
    extra: &[&str],
    log: &std::path::Path,
) -> (super::Proc, String) {
    let mut args = vec![
        "run",
        "--kubeconfig",
        kubeconfig.to_str().expect("utf-8 path"),
        "--identity",
        identity,
        "--metrics-addr",
        "127.0.0.1:0",
    ];
    args.extend(extra);
    super::spawn_logged(&args, Some(log))
}

/// Minutes since the epoch of a Unix time in seconds.
pub fn minute_of(seconds: i64) -> i64 {
    seconds.div_euclid(60)
}

pub fn now_seconds() -> i64 {
    jiff::Timestamp::now().as_second()
}

pub fn rfc3339(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds).expect("timestamp").strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A TCP forwarder in front of the API server whose connections the test can cut, as a
/// network partition would: open connections are dropped and new ones refused until healed.
pub struct Partition {
    pub port: u16,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    open: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Partition {
    pub async fn start(upstream: u16) -> Partition {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let cut = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let open = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (cut2, open2) = (cut.clone(), open.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if cut2.load(std::sync::atomic::Ordering::SeqCst) {
                    continue; // dropped: the client sees the connection closed
                }
                let task = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                open2.lock().expect("lock").push(task.abort_handle());
            }
        });
        Partition { port, cut, open, accept }
    }

    /// Drops every open connection and refuses new ones.
    pub fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
        for task in self.open.lock().expect("lock").drain(..) {
            task.abort();
        }
    }

    pub fn heal(&self) {
        self.cut.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for Partition {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

/// The port of the API server a kubeconfig names.
pub fn server_port(kubeconfig: &std::path::Path) -> u16 {
    let text = std::fs::read_to_string(kubeconfig).expect("kubeconfig");
    let server = text.lines().find_map(|l| l.trim().strip_prefix("server: ")).expect("server line");
    server.rsplit_once(':').and_then(|(_, p)| p.trim_end_matches('/').parse().ok()).expect("port")
}

/// A copy of `kubeconfig` at `to` whose server is `127.0.0.1:port` instead.
pub fn kubeconfig_via(kubeconfig: &std::path::Path, port: u16, to: &std::path::Path) {
    let text = std::fs::read_to_string(kubeconfig).expect("kubeconfig");
    let original = server_port(kubeconfig);
    let text = text.replace(&format!("127.0.0.1:{original}"), &format!("127.0.0.1:{port}"));
    std::fs::write(to, text).expect("write kubeconfig");
}

/// Metric samples whose line starts with `name` (labels included), summed.
pub fn metric_sum(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(name) && !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}
