//! One arm on a real control plane (`--target kube`): a fresh `scripts/kube-testbed` (etcd and
//! kube-apiserver, with kube-controller-manager for the upstream arms) with an audit log, the
//! scenario's CronJobs created through the API to fire at chosen minutes that stand for its
//! hour boundaries ([`crate::hours`]), the arm's controllers, then the audit log analysed, and the
//! plain-client bound measured on the same apiserver and etcd. With `--target cluster` the
//! control plane is a whole cluster and each run is followed to its running pod ([`cluster`]).

use std::path::Path;
use std::time::{Duration, Instant};

use cronshard_e2e::analysis::analyze;
use cronshard_e2e::kube_audit;
use cronshard_e2e::report::{ArmReport, KubeArm};
use cronshard_e2e::scenario::Scenario;
use cronshard_e2e::testbed::{Options, Testbed};
use cronshard_types::{Timestamp, Zone};
use k8s_openapi::api::batch::v1::Job;
use kube::Api;
use serde_json::json;

use crate::arm_spec::{arm_processes, server_filters, upstream_flags};
use crate::cluster::{self, PodWatch};
use crate::control_plane::ControlPlane;
use crate::controllers::{Controllers, Server};
use crate::hours::{Boundaries, Hours};
use crate::loading::{IN_FLIGHT, load_herd};
use crate::window::Window;

/// Jobs the plain client creates to measure the bound: as many as the herd, within these
/// limits (fewer would measure the first second's latency more than the rate).
const BOUND_JOBS: (usize, usize) = (2_000, 10_000);
/// Rounds of the plain client's bound without pods, whose median rate is the bound.
const BOUND_ROUNDS: usize = 3;
/// The namespace of the bound's Jobs (left out of the analysis).
const BOUND_NAMESPACE: &str = "bench-bound";
/// On a whole cluster: the longest wait, after the window, for the herd's pods to run, and
/// for the plain client's.
const DRAIN_LIMIT: Duration = Duration::from_secs(900);

/// Runs one arm on a fresh control plane (a whole cluster with `cluster`) over `hours`; with
/// `profile_s`, kube-apiserver is profiled for that long from a second before the first boundary.
pub(crate) async fn run_arm(
    bin_dir: &Path,
    scenario: &Scenario,
    arm: &str,
    out: &Path,
    (profile_s, cluster, hours): (Option<u64>, Option<cluster::Run>, Hours),
) -> Result<ArmReport, String> {
    let (count, kind, _) = arm_processes(arm).ok_or("arm")?;
    let dir = out.join(arm);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let testbed = start_testbed(&dir, arm, cluster).await?;
    let client = cronshard_e2e::testbed::client_from(&testbed.admin_kubeconfig()).await;
    let pods = cluster.map(|_| PodWatch::start(client.clone()));

    let (mut seeds, boundaries) = load_herd(&client, scenario, (cluster, hours), BOUND_NAMESPACE).await?;
    let from = Timestamp::now();
    let controllers = match upstream_flags(arm) {
        Some(_) => None,
        None => Some(Controllers::start(bin_dir, dir.clone(), arm, count, Server::Kube { testbed: &testbed }).await?),
    };
    let end = boundaries
        .last()
        .checked_add(jiff::SignedDuration::from_secs_f64(scenario.window_s - scenario.lead_s))
        .map_err(|e| e.to_string())?;
    let window = Window { scenario, boundaries: &boundaries, end, profile_s, dir: &dir, count, cluster };
    let (controllers, mut control_plane, profiling) = window.play(&client, &testbed, controllers, &mut seeds).await?;
    let herds = boundaries.herds(&seeds);
    if let Some(pods) = &pods {
        wait_for_herd(pods, &herds.concat(), arm).await;
    }
    let totals = match controllers {
        Some(c) => c.stop().await,
        None => Vec::new(),
    };
    control_plane.sample();
    if let Some(profiling) = profiling {
        finish_profile(profiling, arm).await;
    }
    let (bound, end_to_end_bound_s) =
        bounds(&client, pods.as_ref().zip(cluster), &herds, bound_shape(boundaries.first())).await?;
    let records = read_audit(&testbed, bound.0).await?;
    let to = end.checked_sub(jiff::SignedDuration::from_secs_f64(scenario.grace_s)).map_err(|e| e.to_string())?;
    let analysis = analyze(&seeds, &records, from, to, false, bound.1);
    let followed = pods.zip(cluster).map(|(pods, run)| follow_runs(&records, pods.stop(), (&boundaries, &herds), run));
    let (cpu_s, peak_rss_mb) = controller_usage(arm, &totals, &control_plane);
    Ok(ArmReport {
        name: arm.to_owned(),
        replicas: count,
        kind: kind.to_owned(),
        analysis,
        cpu_s,
        peak_rss_mb,
        shadow: None,
        sim_cpu_s: None,
        kube: Some(KubeArm {
            bound_creates_per_s: (bound.1 * 100.0).round() / 100.0,
            end_to_end_bound_s,
            cluster: followed.as_ref().map(|f| f.2.clone()),
            processes: control_plane.report(),
        }),
        hops: followed.as_ref().map(|f| f.0),
        end_to_end: followed.map(|f| f.1),
    })
}

/// A profile is an explanation, not a result: the arm's numbers stand without it.
async fn finish_profile(profiling: tokio::task::JoinHandle<Result<std::path::PathBuf, String>>, arm: &str) {
    match profiling.await.map_err(|e| e.to_string()).and_then(|r| r) {
        Ok(top) => tracing::info!(%arm, top = %top.display(), "kube-apiserver profiled"),
        Err(error) => tracing::warn!(%arm, %error, "kube-apiserver was not profiled"),
    }
}

/// (CPU s, peak RSS MB) of the arm's controller processes: kube-controller-manager's for the
/// upstream arms, each cronshard replica's (`totals`) otherwise.
fn controller_usage(arm: &str, totals: &[(f64, f64)], control_plane: &ControlPlane) -> (Vec<f64>, Vec<f64>) {
    let round = |v: f64| (v * 100.0).round() / 100.0;
    match upstream_flags(arm) {
        Some(_) => {
            let kcm = control_plane.usage("kube-controller-manager");
            (vec![round(kcm.cpu_s)], vec![round(kcm.peak_rss_mb)])
        }
        None => (totals.iter().map(|t| round(t.0)).collect(), totals.iter().map(|t| round(t.1)).collect()),
    }
}

/// Waits (up to [`DRAIN_LIMIT`]) until every Job of the herd has a running pod.
async fn wait_for_herd(pods: &PodWatch, herd: &[(String, String)], arm: &str) {
    let ran = |t: &cronshard_e2e::hops::Timeline| {
        herd.iter().all(|(ns, job)| t.get(ns, job).is_some_and(|p| p.running.is_some()))
    };
    if !pods.wait(DRAIN_LIMIT, ran).await {
        tracing::warn!(%arm, limit_s = DRAIN_LIMIT.as_secs(), "some of the herd's pods did not run in time");
    }
}

/// The plain client's bounds: ((Jobs created, creates per second), seconds until all their
/// pods ran), for as many Jobs as the largest of the `herds` (each boundary's runs). On a
/// whole cluster, once every herd's Jobs have finished (a quiet cluster), those Jobs with the
/// herd's pod; else minimal Jobs within [`BOUND_JOBS`], and no end-to-end bound.
async fn bounds(
    client: &kube::Client,
    cluster: Option<(&PodWatch, cluster::Run)>,
    herds: &[Vec<(String, String)>],
    shape: crate::bound_jobs::Shape,
) -> Result<((usize, f64), Option<f64>), String> {
    let largest = herds.iter().map(Vec::len).max().unwrap_or(0);
    match cluster {
        Some((pods, run)) => {
            if !cluster::wait_for_jobs_finished(client, pods, &herds.concat(), DRAIN_LIMIT).await {
                tracing::warn!(limit_s = DRAIN_LIMIT.as_secs(), "some of the herd's Jobs did not finish in time");
            }
            let jobs = largest.max(1);
            let (created, rate, e2e) =
                cluster::measure_bound(client, pods, &run, (BOUND_NAMESPACE, jobs, IN_FLIGHT, &shape), DRAIN_LIMIT)
                    .await?;
            Ok(((created, rate), e2e))
        }
        None => {
            let jobs = largest.clamp(BOUND_JOBS.0, BOUND_JOBS.1);
            Ok((measure_bound(client, jobs, &shape).await?, None))
        }
    }
}

/// The hops of every run created (its first Job), the end-to-end times with each boundary's
/// herd, and the cluster's settings with its clients' requests per run (per start: the
/// largest herd's).
fn follow_runs(
    records: &[serde_json::Value],
    timeline: cronshard_e2e::hops::Timeline,
    (boundaries, herds): (&Boundaries, &[Vec<(String, String)>]),
    run: cluster::Run,
) -> (cronshard_e2e::hops::Hops, cronshard_e2e::hops::EndToEnd, cronshard_e2e::hops::ClusterInfo) {
    let mut runs = cronshard_e2e::analysis::creates(records);
    runs.sort_by(|a, b| a.at.total_cmp(&b.at));
    let mut seen = std::collections::HashSet::new();
    runs.retain(|r| seen.insert((r.namespace.clone(), r.cronjob.clone(), r.minute)));
    let at: Vec<i64> = boundaries.at.iter().map(|t| t.as_second()).collect();
    let (hops, end_to_end) = cronshard_e2e::hops::measure(&runs, &timeline, &at);
    let mut info = run.info(cronshard_e2e::hops::requests_per_run(records, runs.len()));
    // The last of the largest: with growth, the later boundary.
    let largest = (0..herds.len()).max_by_key(|i| herds[*i].len()).unwrap_or(0);
    info.job_controller_requests_per_start = herds.get(largest).and_then(|herd| {
        cronshard_e2e::hops::requests_per_start(
            records,
            cronshard_e2e::hops::JOB_CONTROLLER_AGENT,
            &timeline,
            herd,
            at[largest],
        )
    });
    (hops, end_to_end, info)
}

/// A fresh control plane with an audit log; kube-controller-manager runs the CronJob
/// controller (and the garbage collector, as in a cluster) for the upstream arms only. With
/// `cluster`, a whole cluster: every other controller, kube-scheduler and kwok's nodes too.
async fn start_testbed(dir: &Path, arm: &str, cluster: Option<cluster::Run>) -> Result<Testbed, String> {
    let policy = dir.join("audit-policy.yaml");
    std::fs::write(&policy, kube_audit::POLICY).map_err(|e| e.to_string())?;
    let upstream = upstream_flags(arm);
    // Batches are flushed every second, so the log is complete soon after the run.
    let mut apiserver_args = vec!["--audit-log-batch-max-wait=1s".to_owned()];
    if server_filters(arm) {
        apiserver_args.push("--feature-gates=ShardedListAndWatch=true".into());
    }
    let mut options = Options {
        audit_policy: Some(policy),
        apiserver_args,
        controllers: upstream.map(|_| "cronjob-controller,garbage-collector-controller".to_owned()),
        controller_manager_flags: upstream.flatten().map(str::to_owned),
        ..Options::default()
    };
    if let Some(run) = cluster {
        // The arm's flags after the cluster's: the later flag wins.
        let flags = [run.settings.controller_manager_flags(), upstream.flatten().unwrap_or_default()];
        options.controller_manager_flags = Some(flags.join(" ").trim().to_owned());
        options.scheduler_flags = Some(run.settings.scheduler_flags().to_owned());
        options.controllers = None;
        options.cluster =
            Some(cronshard_e2e::testbed::Cluster { nodes: Some(run.nodes), upstream_cronjob: upstream.is_some() });
    }
    tokio::task::spawn_blocking(move || Testbed::start(&options))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

/// The bound's Jobs carry what cronshard's Jobs of the herd's minute carry.
fn bound_shape(herd_at: Timestamp) -> crate::bound_jobs::Shape {
    crate::bound_jobs::Shape { scheduled_timestamp: Zone::utc().format_rfc3339(herd_at), buckets: 64 }
}

/// What a plain client that does nothing else achieves: [`BOUND_ROUNDS`] rounds, one after
/// another, of `jobs` Jobs of `shape` created by `IN_FLIGHT` concurrent POSTs. Returns (Jobs
/// created in all, the rounds' median creates per second): on two shared cores one round's
/// rate varies by about 20% from the next.
async fn measure_bound(
    client: &kube::Client,
    jobs: usize,
    shape: &crate::bound_jobs::Shape,
) -> Result<(usize, f64), String> {
    let api: Api<Job> = Api::namespaced(client.clone(), BOUND_NAMESPACE);
    let container = json!({"name": "c", "image": "busybox"});
    let (mut created, mut rates) = (0, Vec::with_capacity(BOUND_ROUNDS));
    for round in 0..BOUND_ROUNDS {
        let names = round * jobs..(round + 1) * jobs;
        let (made, rate) = crate::bound_jobs::create(&api, names, (&container, shape), IN_FLIGHT).await?;
        tracing::info!(round, created = made, rate, "plain-client bound round measured");
        created += made;
        rates.push(rate);
    }
    let rate = median(&mut rates);
    tracing::info!(created, rate, ?rates, "plain-client bound measured (median of the rounds)");
    Ok((created, rate))
}

/// The median of `values` (the mean of the middle two for an even count; 0 for none).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// The audit log's requests, once the bound's last create is in it (batches are flushed
/// every second), without the bound's own Jobs.
async fn read_audit(testbed: &Testbed, bound_jobs: usize) -> Result<Vec<serde_json::Value>, String> {
    let path = testbed.dir().join("audit.log");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let records = kube_audit::records(&text);
        let is_bound = |r: &serde_json::Value| r["namespace"] == BOUND_NAMESPACE;
        let bound_creates = records
            .iter()
            .filter(|r| is_bound(r) && r["resource"] == "jobs" && r["verb"] == "create" && r["code"] == 201)
            .count();
        if bound_creates >= bound_jobs || Instant::now() > deadline {
            return Ok(records.into_iter().filter(|r| !is_bound(r)).collect());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn the_bound_is_the_middle_round_or_the_mean_of_the_middle_two() {
        assert_eq!(median(&mut [1_400.0, 1_100.0, 1_250.0]), 1_250.0);
        assert_eq!(median(&mut [1_000.0, 1_400.0, 1_100.0, 1_200.0]), 1_150.0);
        assert_eq!(median(&mut []), 0.0);
    }
}
