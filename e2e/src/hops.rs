//! A run's four hops on a whole cluster, schedule → Job created (the CronJob controller) →
//! first Pod created (the Job controller) → Pod bound (the scheduler) → Pod Running (the
//! node), from the audit log's Job creates and a Pod watch's first sightings; and their
//! percentiles for the report. A plain index with times passed in.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::analysis::{Created, Percentiles};

/// When the watch first saw a Job's first Pod created, bound and running (unix seconds).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PodTimes {
    pub created: Option<f64>,
    pub bound: Option<f64>,
    pub running: Option<f64>,
    /// Its pod ended (Succeeded or Failed).
    pub finished: Option<f64>,
}

/// What a Pod showed when the watch delivered it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PodState {
    /// `spec.nodeName` is set.
    pub bound: bool,
    /// `status.phase` is Running, Succeeded or Failed: it has run.
    pub ran: bool,
    /// `status.phase` is Succeeded or Failed.
    pub finished: bool,
}

/// The first sightings of every Job's pods, by (namespace, Job name).
#[derive(Debug, Default)]
pub struct Timeline {
    jobs: HashMap<(String, String), PodTimes>,
}

impl Timeline {
    /// A pod of Job `job` in `namespace` seen at `at` in `state`. A later stage seen first
    /// (a watch event that carried two changes) also marks the earlier ones.
    pub fn pod(&mut self, namespace: &str, job: &str, state: PodState, at: f64) {
        let times = self.jobs.entry((namespace.to_owned(), job.to_owned())).or_default();
        times.created.get_or_insert(at);
        if state.bound || state.ran {
            times.bound.get_or_insert(at);
        }
        if state.ran {
            times.running.get_or_insert(at);
        }
        if state.finished {
            times.finished.get_or_insert(at);
        }
    }

    pub fn get(&self, namespace: &str, job: &str) -> Option<&PodTimes> {
        self.jobs.get(&(namespace.to_owned(), job.to_owned()))
    }

    /// Jobs of `namespace` whose pod has run, and the latest first sighting of one running.
    pub fn running_in(&self, namespace: &str) -> (usize, f64) {
        self.jobs
            .iter()
            .filter(|((ns, _), _)| ns == namespace)
            .filter_map(|(_, t)| t.running)
            .fold((0, 0.0), |(n, last), at| (n + 1, f64::max(last, at)))
    }
}

/// p50, p99 and the largest value of one hop, seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct HopStats {
    pub p50_s: f64,
    pub p99_s: f64,
    pub max_s: f64,
}

impl HopStats {
    fn of(values: &mut [f64]) -> HopStats {
        let p = Percentiles::of(values);
        HopStats { p50_s: p.p50, p99_s: p.p99, max_s: p.max }
    }
}

/// Each hop of the runs whose pod ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Hops {
    /// Due time → Job created (the CronJob controller).
    pub create: HopStats,
    /// Job created → its first Pod seen (the Job controller).
    pub pod_created: HopStats,
    /// Pod seen → bound to a node (the scheduler).
    pub bound: HopStats,
    /// Bound → Running (the node).
    pub running: HopStats,
}

/// Due time → Pod Running, over the runs; `drain_s`: the largest herd's due time until its
/// last pod ran (`None` when some of them never ran).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EndToEnd {
    pub p50_s: f64,
    pub p99_s: f64,
    pub max_s: f64,
    pub drain_s: Option<f64>,
    /// Runs created whose pod was never seen running.
    pub not_running: usize,
    /// Each hour boundary's herd, in time order (the largest is `drain_s`'s).
    pub herds: Vec<HerdEndToEnd>,
}

/// The runs due at one hour boundary, end to end.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HerdEndToEnd {
    /// The boundary, RFC 3339.
    pub at: String,
    /// Its runs created.
    pub runs: usize,
    /// From the boundary until the last of their pods ran (`None` when some never ran).
    pub drain_s: Option<f64>,
}

/// The hops and end-to-end times of `runs` (each due at its minute), and the herds due at
/// each of the `boundaries` (unix seconds).
pub fn measure(runs: &[Created], timeline: &Timeline, boundaries: &[i64]) -> (Hops, EndToEnd) {
    let mut columns: [Vec<f64>; 5] = Default::default();
    // Per boundary: runs, the last pod running, whether some never ran.
    let mut herds = vec![(0usize, None::<f64>, false); boundaries.len()];
    let mut not_running = 0;
    for run in runs {
        let due = (run.minute * 60) as f64;
        let job = format!("{}-{}", run.cronjob, run.minute);
        let times = timeline.get(&run.namespace, &job).copied().unwrap_or_default();
        let herd = boundaries.iter().position(|b| *b == run.minute * 60).map(|i| &mut herds[i]);
        let (Some(created), Some(bound), Some(running)) = (times.created, times.bound, times.running) else {
            not_running += 1;
            if let Some(h) = herd {
                h.0 += 1;
                h.2 = true;
            }
            continue;
        };
        // The watch's sightings are ordered; the audit log's create time is the server's.
        let hops = [run.at - due, created - run.at, bound - created, running - bound, running - due];
        for (column, hop) in columns.iter_mut().zip(hops) {
            column.push(hop.max(0.0));
        }
        if let Some(h) = herd {
            h.0 += 1;
            h.1 = Some(h.1.map_or(running, |l: f64| l.max(running)));
        }
    }
    let [create, pod_created, bound, running, total] = &mut columns;
    let hops = Hops {
        create: HopStats::of(create),
        pod_created: HopStats::of(pod_created),
        bound: HopStats::of(bound),
        running: HopStats::of(running),
    };
    let sum = HopStats::of(total);
    let round = |v: f64| (v * 1000.0).round() / 1000.0;
    let herds: Vec<HerdEndToEnd> = boundaries
        .iter()
        .zip(herds)
        .map(|(at, (runs, last, missing))| HerdEndToEnd {
            at: cronshard_types::Timestamp::from_second(*at).map(|t| t.to_string()).unwrap_or_default(),
            runs,
            drain_s: if missing { None } else { last.map(|l| round(l - *at as f64)) },
        })
        .collect();
    // The largest herd; of equals, the later (with growth, the later boundary is the larger).
    let largest = herds.iter().enumerate().max_by_key(|(_, h)| h.runs).map(|(i, _)| i);
    let drain_s = largest.and_then(|i| herds[i].drain_s);
    (hops, EndToEnd { p50_s: sum.p50_s, p99_s: sum.p99_s, max_s: sum.max_s, drain_s, not_running, herds })
}

/// The cluster an arm ran on: its settings' name and the flags they gave.
#[derive(Clone, Debug, Serialize)]
pub struct ClusterInfo {
    /// `default` (upstream's client settings) or `tuned`.
    pub settings: String,
    pub nodes: u32,
    pub controller_manager_flags: String,
    pub scheduler_flags: String,
    /// Seconds each pod runs (`sleep`).
    pub pod_run_s: u64,
    /// Requests (watches left out) per run created, by the cluster's clients: `job-controller`
    /// (kube-controller-manager's Job controller), `kube-scheduler` and `kwok` (the nodes).
    pub requests_per_run: BTreeMap<String, f64>,
    /// The Job controller's requests while the herd's pods were being created, per pod
    /// created ([`requests_per_start`]): what `cronshard plan` divides its client rate by.
    pub job_controller_requests_per_start: Option<f64>,
}

/// The clients of [`ClusterInfo::requests_per_run`], by a part of their user agent.
const CLUSTER_CLIENTS: [(&str, &str); 3] =
    [("job-controller", JOB_CONTROLLER_AGENT), ("kube-scheduler", "kube-scheduler/"), ("kwok", "kwok")];

/// Requests per run of each of the cluster's clients in the audit `records`.
pub fn requests_per_run(records: &[Value], runs: usize) -> BTreeMap<String, f64> {
    CLUSTER_CLIENTS
        .iter()
        .map(|(name, agent)| {
            let n = records
                .iter()
                .filter(|r| r["verb"] != "watch" && r["userAgent"].as_str().is_some_and(|a| a.contains(agent)))
                .count();
            ((*name).to_owned(), (n as f64 / runs.max(1) as f64 * 100.0).round() / 100.0)
        })
        .collect()
}

/// Requests (watches left out) of the client whose user agent contains `agent`, from the
/// herd's due time `herd_at` until the last of the `herd`'s Jobs had its first pod, per pod
/// created in that time: the client's cost per run on a herd's critical path. Anything else
/// it does meanwhile (a pod's readiness, a Job that finishes) is in it, as it takes from the
/// same client budget. `None` before every Job of the herd had a pod.
pub fn requests_per_start(
    records: &[Value],
    agent: &str,
    timeline: &Timeline,
    herd: &[(String, String)],
    herd_at: i64,
) -> Option<f64> {
    let created: Vec<f64> =
        herd.iter().map(|(ns, job)| timeline.get(ns, job).and_then(|t| t.created)).collect::<Option<_>>()?;
    let last = created.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let window = herd_at as f64..=last;
    let requests = records
        .iter()
        .filter(|r| r["verb"] != "watch" && r["userAgent"].as_str().is_some_and(|a| a.contains(agent)))
        .filter_map(crate::analysis::seconds)
        .filter(|at| window.contains(at))
        .count();
    (!created.is_empty()).then(|| (requests as f64 / created.len() as f64 * 100.0).round() / 100.0)
}

/// The Job controller's part of a user agent (kube-controller-manager names each controller's client).
pub const JOB_CONTROLLER_AGENT: &str = "/job-controller";

/// The table's lines for arms with hops: each hop's p99, the end-to-end times and the drain
/// against the plain client's end-to-end bound.
pub fn lines<'a>(arms: impl Iterator<Item = (&'a str, &'a Hops, &'a EndToEnd, Option<f64>)>, out: &mut String) {
    let mut header = false;
    for (name, h, e, bound) in arms {
        if !header {
            let _ = writeln!(
                out,
                "end to end (p99 s per hop: create = CronJob controller, pod = Job controller, bind = scheduler, run = node):"
            );
            header = true;
        }
        let drain = match (e.drain_s, bound) {
            (Some(d), Some(b)) => format!("herd drain {d:.1} s, {:.2}x the plain client's {b:.1} s", d / b.max(1e-9)),
            (Some(d), None) => format!("herd drain {d:.1} s"),
            (None, _) => format!("herd not drained ({} runs never ran)", e.not_running),
        };
        let _ = writeln!(
            out,
            "  {name}: create {:.2} · pod {:.2} · bind {:.2} · run {:.2} · end to end p50 {:.2} p99 {:.2} max {:.2} · {drain}",
            h.create.p99_s, h.pod_created.p99_s, h.bound.p99_s, h.running.p99_s, e.p50_s, e.p99_s, e.max_s
        );
        if e.herds.len() > 1 {
            let each: Vec<String> = e
                .herds
                .iter()
                .map(|herd| match herd.drain_s {
                    Some(d) => format!("{} runs in {d:.1} s", herd.runs),
                    None => format!("{} runs, not drained", herd.runs),
                })
                .collect();
            let _ = writeln!(out, "    herds by boundary: {}", each.join(" · "));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HERD: i64 = 1_800_000_000;

    fn run(cronjob: &str, at: f64) -> Created {
        Created { namespace: "ns".into(), cronjob: cronjob.into(), minute: HERD / 60, at: HERD as f64 + at }
    }

    fn job(cronjob: &str) -> String {
        format!("{cronjob}-{}", HERD / 60)
    }

    const SEEN: PodState = PodState { bound: false, ran: false, finished: false };
    const BOUND: PodState = PodState { bound: true, ran: false, finished: false };
    const RUNNING: PodState = PodState { bound: true, ran: true, finished: false };

    #[test]
    fn each_hop_is_measured_from_the_one_before_and_the_herd_drains_at_its_last_running_pod() {
        let mut t = Timeline::default();
        let h = HERD as f64;
        for (name, created, bound, running) in [("a", 1.5, 2.0, 2.5), ("b", 3.0, 5.0, 9.0)] {
            t.pod("ns", &job(name), SEEN, h + created);
            t.pod("ns", &job(name), BOUND, h + bound);
            t.pod("ns", &job(name), RUNNING, h + running);
            // Later sightings change nothing.
            t.pod("ns", &job(name), RUNNING, h + 50.0);
        }
        let (hops, e2e) = measure(&[run("a", 1.0), run("b", 2.0)], &t, &[HERD]);
        assert_eq!(hops.create, HopStats { p50_s: 2.0, p99_s: 2.0, max_s: 2.0 });
        // Of two values the p50 is the upper one (the analysis' percentiles); the least is 0.5.
        assert_eq!((hops.pod_created.p50_s, hops.pod_created.max_s), (1.0, 1.0));
        assert_eq!((hops.bound.p50_s, hops.bound.max_s), (2.0, 2.0));
        assert_eq!((hops.running.p50_s, hops.running.max_s), (4.0, 4.0));
        assert_eq!((e2e.p50_s, e2e.max_s, e2e.drain_s, e2e.not_running), (9.0, 9.0, Some(9.0), 0));
    }

    #[test]
    fn a_pod_first_seen_running_counts_as_created_and_bound_then() {
        let mut t = Timeline::default();
        t.pod("ns", &job("a"), RUNNING, HERD as f64 + 4.0);
        let at = Some(HERD as f64 + 4.0);
        let expected = PodTimes { created: at, bound: at, running: at, finished: None };
        assert_eq!(t.get("ns", &job("a")), Some(&expected));
    }

    #[test]
    fn a_herd_with_a_pod_that_never_ran_has_no_drain() {
        let mut t = Timeline::default();
        t.pod("ns", &job("a"), RUNNING, HERD as f64 + 2.0);
        t.pod("ns", &job("b"), BOUND, HERD as f64 + 2.0);
        let (_, e2e) = measure(&[run("a", 1.0), run("b", 1.0)], &t, &[HERD]);
        assert_eq!((e2e.drain_s, e2e.not_running), (None, 1));
        assert_eq!(e2e.max_s, 2.0, "the runs that ran are measured");
    }

    #[test]
    fn each_boundary_has_its_herd_and_the_largest_gives_the_drain() {
        let later = HERD + 300;
        let mut t = Timeline::default();
        let h = HERD as f64;
        let at_minute = |cronjob: &str, minute: i64, after: f64| Created {
            namespace: "ns".into(),
            cronjob: cronjob.into(),
            minute,
            at: (minute * 60) as f64 + after,
        };
        t.pod("ns", &job("a"), RUNNING, h + 4.0);
        for (name, ran) in [("a", 6.0), ("b", 9.0)] {
            t.pod("ns", &format!("{name}-{}", later / 60), RUNNING, later as f64 + ran);
        }
        let runs = [at_minute("a", HERD / 60, 1.0), at_minute("a", later / 60, 1.0), at_minute("b", later / 60, 2.0)];
        let (_, e2e) = measure(&runs, &t, &[HERD, later]);
        let drains: Vec<(usize, Option<f64>)> = e2e.herds.iter().map(|h| (h.runs, h.drain_s)).collect();
        assert_eq!(drains, vec![(1, Some(4.0)), (2, Some(9.0))]);
        assert_eq!(e2e.drain_s, Some(9.0), "the larger, later herd");
        assert_eq!(e2e.herds[1].at, cronshard_types::Timestamp::from_second(later).expect("time").to_string());
        // A run of the later herd that never ran leaves that herd, and so the drain, open.
        let runs = [runs[0].clone(), runs[1].clone(), runs[2].clone(), at_minute("c", later / 60, 1.0)];
        let (_, e2e) = measure(&runs, &t, &[HERD, later]);
        assert_eq!((e2e.herds[0].drain_s, e2e.herds[1].drain_s, e2e.drain_s), (Some(4.0), None, None));
    }

    #[test]
    fn requests_per_run_are_counted_by_client_without_watches() {
        let r = |verb: &str, agent: &str| serde_json::json!({"verb": verb, "userAgent": agent});
        let kcm = "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abc/job-controller";
        let records = [r("create", kcm), r("update", kcm), r("watch", kcm), r("create", "kube-scheduler/v1.37.2")];
        let per_run = requests_per_run(&records, 2);
        assert_eq!(per_run["job-controller"], 1.0);
        assert_eq!(per_run["kube-scheduler"], 0.5);
        assert_eq!(per_run["kwok"], 0.0);
    }

    #[test]
    fn requests_per_start_count_the_client_while_the_herd_got_its_pods() {
        let h = HERD as f64;
        let at =
            |s: f64| cronshard_types::Timestamp::from_millisecond(((h + s) * 1000.0) as i64).expect("time").to_string();
        let kcm = "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abc/job-controller";
        let r = |verb: &str, agent: &str, s: f64| serde_json::json!({"verb": verb, "userAgent": agent, "time": at(s)});
        let mut t = Timeline::default();
        t.pod("ns", &job("a"), SEEN, h + 1.0);
        t.pod("ns", &job("b"), SEEN, h + 3.0);
        let herd = [("ns".to_owned(), job("a")), ("ns".to_owned(), job("b"))];
        let records = [
            r("create", kcm, -1.0), // before the herd: not its cost
            r("create", kcm, 0.5),
            r("update", kcm, 1.0),
            r("watch", kcm, 1.5),
            r("create", "kube-scheduler/v1.37.2", 2.0),
            r("create", kcm, 2.5),
            r("update", kcm, 3.0),
            r("update", kcm, 3.5), // after the last pod: not on the critical path
        ];
        assert_eq!(requests_per_start(&records, JOB_CONTROLLER_AGENT, &t, &herd, HERD), Some(2.0));
        assert_eq!(requests_per_start(&records, "kube-scheduler/", &t, &herd, HERD), Some(0.5));
        // A Job of the herd without a pod: no figure.
        let more = [herd[0].clone(), herd[1].clone(), ("ns".to_owned(), job("c"))];
        assert_eq!(requests_per_start(&records, JOB_CONTROLLER_AGENT, &t, &more, HERD), None);
    }

    #[test]
    fn the_bound_namespace_counts_its_running_jobs_and_the_last_to_run() {
        let mut t = Timeline::default();
        t.pod("bound", "x1", RUNNING, 10.0);
        t.pod("bound", "x2", RUNNING, 12.0);
        t.pod("bound", "x3", BOUND, 13.0);
        t.pod("other", "y", RUNNING, 20.0);
        assert_eq!(t.running_in("bound"), (2, 12.0));
    }
}
