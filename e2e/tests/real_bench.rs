//! `cronshard-bench --target kube` end to end on a small herd (about 6 minutes: a real server's
//! clock cannot be moved, so each arm waits for a real minute): cronshard and kube-controller-
//! manager's CronJob controller, each on its own fresh control plane with kube-apiserver's
//! audit log; cronshard must miss nothing and start nothing twice, the plain-client bound
//! and the control plane's processes must be in the report.

use std::process::Command;

use serde_json::Value;

#[test]
fn a_herd_on_the_real_control_plane_is_judged_from_its_audit_log() {
    let out = std::env::temp_dir().join(format!("cronshard-bench-kube-{}", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_cronshard-bench"))
        .args(["--target", "kube", "--scenario", "herd", "--cronjobs", "300", "--window-s", "60"])
        .args(["--arms", "cronshard-2,upstream", "--out"])
        .arg(&out)
        .output()
        .expect("cronshard-bench runs");
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{table}\n{}", String::from_utf8_lossy(&output.stderr));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).expect("report")).expect("JSON");
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
