//! What each arm runs: how many controller processes, of what kind, with which arguments.

/// The most controller processes an arm may have (the simulator has a token for each).
pub(crate) const MAX_PROCESSES: usize = 16;

/// (processes, kind, command-line arguments per process) of an arm.
pub(crate) fn arm_processes(arm: &str) -> Option<(usize, &'static str, Vec<String>)> {
    let baseline = |algo: &str, extra: &[&str]| {
        let mut a = vec!["--algo".to_owned(), algo.to_owned()];
        a.extend(extra.iter().map(|s| (*s).to_owned()));
        a
    };
    match arm {
        "v1" => Some((1, "re-implementation of the in-tree v1 controller (10 s sweeps, 20 QPS)", baseline("v1", &[]))),
        "v2" => Some((1, "re-implementation of the in-tree v2 controller (5 workers, 20 QPS)", baseline("v2", &[]))),
        "v2-tuned" => Some((
            1,
            "re-implementation of the in-tree v2 controller, 50 workers, cronshard's client budget",
            baseline("v2", &["--workers", "50", "--qps", "1000", "--burst", "1000"]),
        )),
        "upstream" => Some((
            1,
            "kube-controller-manager's cronjob-controller, upstream defaults (20 QPS, burst 30, 5 syncs)",
            Vec::new(),
        )),
        "upstream-tuned" => {
            Some((1, "kube-controller-manager's cronjob-controller, 1000 QPS, burst 1000, 50 syncs", Vec::new()))
        }
        _ => {
            let replicas = arm.strip_prefix("cronshard-")?;
            let (replicas, kind, extra) = if let Some(r) = replicas.strip_suffix("-fixed") {
                (r, "cronshard with a fixed client rate", vec!["--fixed-rate".to_owned()])
            } else if let Some(r) = replicas.strip_suffix("-unreserved") {
                (
                    r,
                    "cronshard that never holds lower-priority work back before a herd",
                    vec!["--no-herd-reservation".to_owned()],
                )
            } else if let Some(r) = replicas.strip_suffix("-sharded") {
                (
                    r,
                    "cronshard at its defaults, the server filtering by shardSelector (ShardedListAndWatch on)",
                    Vec::new(),
                )
            } else if let Some(r) = replicas.strip_suffix("-capped") {
                (r, "cronshard with each replica capped at --qps 1000", vec!["--qps".to_owned(), "1000".to_owned()])
            } else if let Some(r) = replicas.strip_suffix("-unlimited") {
                let unlimited = ["--qps", "0", "--deployment-qps", "0"].map(str::to_owned).to_vec();
                (r, "cronshard without a client-side rate limit", unlimited)
            } else {
                (replicas, "cronshard at its defaults", Vec::new())
            };
            let r: usize = replicas.parse().ok()?;
            (1..=MAX_PROCESSES).contains(&r).then_some((r, kind, extra))
        }
    }
}

/// Whether the arm's server has the `ShardedListAndWatch` feature gate on (the `-sharded`
/// arms): cronshard's default `--server-side-sharding auto` then selects on the server.
pub(crate) fn server_filters(arm: &str) -> bool {
    arm.starts_with("cronshard-") && arm.ends_with("-sharded")
}

/// kube-controller-manager's flags for the upstream arms beyond the testbed's (which are
/// upstream's client defaults, 20 QPS and burst 30, with leader election off).
pub(crate) fn upstream_flags(arm: &str) -> Option<Option<&'static str>> {
    match arm {
        "upstream" => Some(None),
        "upstream-tuned" => Some(Some("--kube-api-qps 1000 --kube-api-burst 1000 --concurrent-cron-job-syncs 50")),
        _ => None,
    }
}
