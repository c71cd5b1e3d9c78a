//! `cronshard-bench` on real servers: a small herd on a whole cluster (`--target cluster`,
//! about 4 minutes: a real server's clock cannot be moved, so each arm waits for a real
//! minute), cronshard and kube-controller-manager's CronJob controller, each on its own fresh
//! cluster with kube-apiserver's audit log and a Pod watch; and the failover scenario on the
//! real control plane (`--target kube`).

mod common;

#[test]
fn a_herd_on_a_whole_cluster_is_followed_from_its_schedule_to_its_running_pods() {
    let (table, report, out) = common::bench(
        "cluster",
        &[
            "--target",
            "cluster",
            "--cluster-settings",
            "tuned",
            "--scenario",
            "herd",
            "--cronjobs",
            "200",
            "--window-s",
            "45",
            "--pod-run-s",
            "20",
            "--arms",
            "cronshard-2,upstream",
        ],
    );
    let arms = report["arms"].as_array().expect("arms");
    let (cronshard, upstream) = (&arms[0], &arms[1]);
    assert_eq!(cronshard["expected"], 200, "{table}");
    assert_eq!((cronshard["created"].as_u64(), cronshard["duplicates"].as_u64()), (Some(200), Some(0)), "{table}");
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
        let drain = e2e["drain_s"].as_f64().expect("the herd drained");
        assert!(drain >= hops["create"]["max_s"].as_f64().unwrap_or(f64::MAX), "{arm}");
        assert!(e2e["max_s"].as_f64().is_some_and(|m| (m - drain).abs() < 1e-6), "the herd is every run: {arm}");
        let cluster = &kube["cluster"];
        assert_eq!(cluster["settings"], "tuned", "{arm}");
        assert!(cluster["requests_per_run"]["job-controller"].as_f64().is_some_and(|n| n >= 2.0), "{arm}");
        assert!(cluster["requests_per_run"]["kube-scheduler"].as_f64().is_some_and(|n| n >= 1.0), "{arm}");
    }
    assert!(upstream["kube"]["processes"].to_string().contains("kube-controller-manager"), "{upstream}");
    assert!(table.contains("end to end (p99 s per hop"), "{table}");
    assert!(table.contains("herd drain") && table.contains("the plain client's"), "{table}");
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
