//! `cronshard-bench --target kube` end to end on a small herd (about 6 minutes: a real server's
//! clock cannot be moved, so each arm waits for a real minute): cronshard and kube-controller-
//! manager's CronJob controller, each on its own fresh control plane with kube-apiserver's
//! audit log; cronshard must miss nothing and start nothing twice, the plain-client bound
//! and the control plane's processes must be in the report.

mod common;

#[test]
fn a_herd_on_the_real_control_plane_is_judged_from_its_audit_log() {
    let (table, report, out) = common::bench(
        "kube",
        &[
            "--target",
            "kube",
            "--scenario",
            "herd",
            "--cronjobs",
            "300",
            "--window-s",
            "60",
            "--arms",
            "cronshard-2,upstream",
        ],
    );
    let arms = report["arms"].as_array().expect("arms");
    let (cronshard, upstream) = (&arms[0], &arms[1]);
    assert_eq!(cronshard["expected"], 300, "{table}");
    assert_eq!((cronshard["created"].as_u64(), cronshard["duplicates"].as_u64()), (Some(300), Some(0)), "{table}");
    assert!(upstream["created"].as_u64().is_some_and(|n| n > 0), "kube-controller-manager created Jobs: {table}");
    for arm in arms {
        let kube = &arm["kube"];
        assert!(kube["bound_creates_per_s"].as_f64().is_some_and(|r| r > 0.0), "{arm}");
        let names: Vec<&str> =
            kube["processes"].as_array().expect("processes").iter().filter_map(|p| p["name"].as_str()).collect();
        assert!(names.contains(&"etcd") && names.contains(&"kube-apiserver"), "{names:?}");
        assert!(arm["http_429"].is_number() && arm["requests"]["create"].as_u64().is_some_and(|n| n >= 300), "{arm}");
    }
    assert!(upstream["kube"]["processes"].to_string().contains("kube-controller-manager"), "{upstream}");
    assert!(table.contains("on the real control plane: plain-client bound"), "{table}");
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
