//! `cronshard-bench` on real servers: the seed's mix over two hour boundaries with its growth
//! between them on a whole cluster (`--target cluster`, about 9 minutes: a real server's clock
//! cannot be moved, so each arm waits for real minutes that stand for the hours), cronshard
//! and kube-controller-manager's CronJob controller, each on its own fresh cluster with
//! kube-apiserver's audit log and a Pod watch; and the failover scenario on the real control
//! plane (`--target kube`).

mod common;

/// 200 CronJobs (10 every minute, 190 at each boundary) and 143 more created just after the
/// first boundary, due at the second, 120 s later.
#[test]
fn two_hours_with_growth_on_a_whole_cluster_are_followed_from_the_schedule_to_running_pods() {
    let (table, report, out) = common::bench(
        "cluster",
        &[
            "--target",
            "cluster",
            "--cluster-settings",
            "tuned",
            "--scenario",
            "incident-cluster-growth",
            "--cronjobs",
            "200",
            "--window-s",
            "45",
            "--hours",
            "2",
            "--hour-s",
            "120",
            "--pod-run-s",
            "20",
            "--arms",
            "cronshard-2,upstream",
        ],
    );
    let arms = report["arms"].as_array().expect("arms");
    let (cronshard, upstream) = (&arms[0], &arms[1]);
    assert!(cronshard["expected"].as_u64().is_some_and(|n| n > 190 + 333), "both herds and every minute: {table}");
    assert_eq!(cronshard["created"], cronshard["expected"], "{table}");
    assert_eq!((cronshard["missed"].as_u64(), cronshard["duplicates"].as_u64()), (Some(0), Some(0)), "{table}");
    let herds = cronshard["end_to_end"]["herds"].as_array().expect("a herd per boundary");
    let runs: Vec<u64> = herds.iter().filter_map(|h| h["runs"].as_u64()).collect();
    assert_eq!(runs.len(), 2, "{table}");
    assert_eq!(runs[1], runs[0] + 143, "the second boundary's herd has the CronJobs created between: {table}");
    assert!(upstream["created"].as_u64().is_some_and(|n| n > 0), "kube-controller-manager created Jobs: {table}");
    for arm in arms {
        let kube = &arm["kube"];
        assert!(kube["bound_creates_per_s"].as_f64().is_some_and(|r| r > 0.0), "{arm}");
        assert!(kube["end_to_end_bound_s"].as_f64().is_some_and(|s| s > 0.0), "every bound pod ran: {arm}");
        let names: Vec<&str> =
            kube["processes"].as_array().expect("processes").iter().filter_map(|p| p["name"].as_str()).collect();
        assert!(names.contains(&"etcd") && names.contains(&"kube-apiserver"), "{names:?}");
        assert!(arm["http_429"].is_number() && arm["requests"]["create"].as_u64().is_some_and(|n| n >= 200), "{arm}");
        // Every hop is measured, each run's pod ran, and the hops add up to no more than the whole.
        let hops = &arm["hops"];
        for hop in ["create", "pod_created", "bound", "running"] {
            for stat in ["p50_s", "p99_s", "max_s"] {
                assert!(hops[hop][stat].as_f64().is_some_and(|v| v >= 0.0), "{hop} {stat}: {arm}");
            }
        }
        let e2e = &arm["end_to_end"];
        assert_eq!(e2e["not_running"], 0, "{arm}");
        let drain = e2e["drain_s"].as_f64().expect("the largest herd drained");
        assert_eq!(e2e["herds"][1]["drain_s"].as_f64(), Some(drain), "the later herd is the larger: {arm}");
        assert!(drain > 0.0 && e2e["max_s"].as_f64().is_some_and(|m| m >= drain), "{arm}");
        let cluster = &kube["cluster"];
        assert_eq!(cluster["settings"], "tuned", "{arm}");
        assert!(cluster["requests_per_run"]["job-controller"].as_f64().is_some_and(|n| n >= 2.0), "{arm}");
        assert!(cluster["requests_per_run"]["kube-scheduler"].as_f64().is_some_and(|n| n >= 1.0), "{arm}");
    }
    assert!(upstream["kube"]["processes"].to_string().contains("kube-controller-manager"), "{upstream}");
    assert!(table.contains("end to end (p99 s per hop"), "{table}");
    assert!(table.contains("herd drain") && table.contains("the plain client's"), "{table}");
    assert!(table.contains("herds by boundary"), "{table}");
    let _ = std::fs::remove_dir_all(&out);
}

/// The failover scenario, shortened, on a real control plane: three replicas, replica 0
/// SIGKILLed before the herd's minute and restarted, replica 1 paused (SIGSTOP) for 60 s and
/// resumed, then a rolling restart of all three across the next every-minute runs. Every run
/// due in the window must be created exactly once (about 4 minutes).
#[test]
fn kill_pause_and_rolling_restart_on_the_real_control_plane_miss_nothing() {
    let (table, report, out) = common::bench(
        "kube-failover",
        &[
            "--target",
            "kube",
            "--scenario",
            "failover",
            "--cronjobs",
            "300",
            "--window-s",
            "120",
            "--arms",
            "cronshard-3",
        ],
    );
    let arm = &report["arms"][0];
    assert!(
        arm["expected"].as_u64().is_some_and(|n| n >= 315),
        "the herd of 300 and 15 every-minute runs after it: {table}"
    );
    assert_eq!(arm["created"], arm["expected"], "{table}");
    assert_eq!((arm["missed"].as_u64(), arm["duplicates"].as_u64()), (Some(0), Some(0)), "{table}");
    let _ = std::fs::remove_dir_all(&out);
}
