//! `--target cluster`: what a whole cluster adds to `--target kube`. The Job controller,
//! kube-scheduler and kwok's nodes run every Job's pod; a Pod watch records when each Job's
//! first pod was created, bound and running; the plain client's end-to-end bound is as many
//! Jobs as the largest herd, created at once, until every one of their pods runs.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cronshard_e2e::hops::{ClusterInfo, PodState, Timeline};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};

/// The cluster's client settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Settings {
    /// Upstream's: kube-controller-manager at 20 QPS, burst 30, 5 Job syncs; kube-scheduler at
    /// 50 QPS, burst 100.
    Default,
    /// For a large cluster: see [`TUNED_CONTROLLER_MANAGER`] and [`TUNED_SCHEDULER`].
    Tuned,
}

/// kube-controller-manager's flags for a large cluster. Each Job costs the Job controller
/// about six requests over its life (measured: `requests_per_run` in the report), a few of
/// them before its pod exists (`job_controller_requests_per_start`), so a 1,000-run herd at
/// 20 QPS waits about two minutes for its pods; at 400 QPS a few seconds. Beyond the burst,
/// its 50 workers keep the client busy; kube-apiserver on two cores takes about 1,000 writes/s.
pub(crate) const TUNED_CONTROLLER_MANAGER: &str = "--kube-api-qps 400 --kube-api-burst 800 --concurrent-job-syncs 50";
/// kube-scheduler's for a large cluster: a binding and a few status writes per pod.
pub(crate) const TUNED_SCHEDULER: &str = "--kube-api-qps 400 --kube-api-burst 800";

impl Settings {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Settings::Default => "default",
            Settings::Tuned => "tuned",
        }
    }

    pub(crate) fn controller_manager_flags(self) -> &'static str {
        match self {
            Settings::Default => "",
            Settings::Tuned => TUNED_CONTROLLER_MANAGER,
        }
    }

    pub(crate) fn scheduler_flags(self) -> &'static str {
        match self {
            Settings::Default => "",
            Settings::Tuned => TUNED_SCHEDULER,
        }
    }
}

/// How an arm's whole cluster runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    pub(crate) settings: Settings,
    pub(crate) nodes: u32,
    pub(crate) pod_run_s: u64,
}

impl Run {
    pub(crate) fn info(&self, requests_per_run: std::collections::BTreeMap<String, f64>) -> ClusterInfo {
        ClusterInfo {
            requests_per_run,
            job_controller_requests_per_start: None,
            settings: self.settings.name().to_owned(),
            nodes: self.nodes,
            controller_manager_flags: self.settings.controller_manager_flags().to_owned(),
            scheduler_flags: self.settings.scheduler_flags().to_owned(),
            pod_run_s: self.pod_run_s,
        }
    }

    /// The pod template's container: kwok runs `sleep N` for N seconds (testbed/kwok/stages).
    pub(crate) fn container(&self) -> Value {
        json!({"name": "c", "image": "busybox", "command": ["sleep", self.pod_run_s.to_string()]})
    }
}

/// The Pod watch of the whole run: every pod's first sightings, by its Job.
pub(crate) struct PodWatch {
    timeline: Arc<Mutex<Timeline>>,
    task: tokio::task::JoinHandle<()>,
}

impl PodWatch {
    pub(crate) fn start(client: kube::Client) -> PodWatch {
        let timeline = Arc::new(Mutex::new(Timeline::default()));
        let recording = timeline.clone();
        let task = tokio::spawn(async move {
            let config = watcher::Config::default().labels("batch.kubernetes.io/job-name");
            let mut pods = watcher(Api::<Pod>::all(client), config).default_backoff().applied_objects().boxed();
            while let Some(pod) = pods.next().await {
                let Ok(pod) = pod else { continue };
                let at = cronshard_types::Timestamp::now().as_millisecond() as f64 / 1000.0;
                if let Some((namespace, job, state)) = sighting(&pod) {
                    recording.lock().unwrap_or_else(|e| e.into_inner()).pod(&namespace, &job, state, at);
                }
            }
        });
        PodWatch { timeline, task }
    }

    pub(crate) fn with<T>(&self, f: impl FnOnce(&Timeline) -> T) -> T {
        f(&self.timeline.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Waits until `done` holds of the timeline, or `limit` has passed; whether it held.
    pub(crate) async fn wait(&self, limit: Duration, done: impl Fn(&Timeline) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.with(&done) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        self.with(&done)
    }

    /// Stops watching; returns what was seen.
    pub(crate) fn stop(self) -> Timeline {
        self.task.abort();
        std::mem::take(&mut *self.timeline.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// (namespace, Job name, state) of a Job's pod.
fn sighting(pod: &Pod) -> Option<(String, String, PodState)> {
    let labels = pod.metadata.labels.as_ref()?;
    let job = labels.get("batch.kubernetes.io/job-name").or_else(|| labels.get("job-name"))?;
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Pending");
    let state = PodState {
        bound: pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty()),
        ran: matches!(phase, "Running" | "Succeeded" | "Failed"),
        finished: matches!(phase, "Succeeded" | "Failed"),
    };
    Some((pod.metadata.namespace.clone()?, job.clone(), state))
}

/// The plain client's end-to-end bound: `jobs` Jobs of `shape` with the herd's pod, created at
/// once (`in_flight` at a time) in `namespace`; returns (Jobs created, creates per second, seconds
/// from the first create until every one of their pods ran, if within `limit`).
pub(crate) async fn measure_bound(
    client: &kube::Client,
    watch: &PodWatch,
    run: &Run,
    (namespace, jobs, in_flight, shape): (&str, usize, usize, &crate::bound_jobs::Shape),
    limit: Duration,
) -> Result<(usize, f64, Option<f64>), String> {
    let api: Api<Job> = Api::namespaced(client.clone(), namespace);
    let started_at = cronshard_types::Timestamp::now().as_millisecond() as f64 / 1000.0;
    let (created, rate) = crate::bound_jobs::create(&api, 0..jobs, (&run.container(), shape), in_flight).await?;
    let all_ran = watch.wait(limit, |t| t.running_in(namespace).0 >= created).await;
    let (ran, last) = watch.with(|t| t.running_in(namespace));
    let end_to_end = all_ran.then(|| ((last - started_at) * 1000.0).round() / 1000.0);
    tracing::info!(created, rate, ran, ?end_to_end, "plain-client bounds measured");
    Ok((created, rate, end_to_end))
}

/// Waits (up to `limit`) until every Job of `herd` (namespace, name) has finished, so that
/// the plain client's bound that follows meets a quiet cluster: its pods have ended and the
/// Job controller has recorded them, rather than competing with it for its client budget. A
/// Job that is gone counts once its pod was seen ending: history limits delete finished Jobs
/// (an earlier boundary's, once the next boundary's have finished). Whether they all finished.
pub(crate) async fn wait_for_jobs_finished(
    client: &kube::Client,
    pods: &PodWatch,
    herd: &[(String, String)],
    limit: Duration,
) -> bool {
    let api: Api<Job> = Api::all(client.clone());
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(jobs) = api.list(&Default::default()).await {
            let listed: std::collections::HashMap<(&str, &str), &Job> = jobs
                .items
                .iter()
                .map(|j| ((j.metadata.namespace.as_deref().unwrap_or(""), j.metadata.name.as_deref().unwrap_or("")), j))
                .collect();
            let finished = pods.with(|t| {
                herd.iter()
                    .filter(|(ns, name)| match listed.get(&(ns.as_str(), name.as_str())) {
                        Some(job) => job_finished(job),
                        None => t.get(ns, name).is_some_and(|p| p.finished.is_some()),
                    })
                    .count()
            });
            if finished >= herd.len() {
                return true;
            }
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// A Job with a `Complete` or `Failed` condition that is true.
fn job_finished(job: &Job) -> bool {
    let conditions = job.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default();
    conditions.iter().any(|c| matches!(c.type_.as_str(), "Complete" | "Failed") && c.status == "True")
}
