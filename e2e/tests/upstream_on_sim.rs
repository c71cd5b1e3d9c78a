//! kube-controller-manager's CronJob controller on the simulator, on real time: the `smoke`
//! scenario replayed with its schedules moved to a real minute. The real controller must
//! create runs at exactly the moved schedules' times (none off schedule, none twice), which
//! is what makes its arm comparable with the others. It waits for real minutes (about 2.5
//! minutes): a real controller cannot be given a test clock.

use std::process::Command;

use serde_json::Value;

#[test]
fn kube_controller_manager_replays_a_scenario_on_real_time() {
    let out = std::env::temp_dir().join(format!("cronshard-bench-upstream-{}", std::process::id()));
    let status = Command::new(env!("CARGO_BIN_EXE_cronshard-bench"))
        .args(["--scenario", "smoke", "--arms", "upstream-tuned", "--out"])
        .arg(&out)
        .status()
        .expect("cronshard-bench runs");
    assert!(status.success(), "cronshard-bench failed (is the testbed built? scripts/kube-testbed build)");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).expect("report")).expect("JSON");
    let arm = &report["arms"][0];
    assert_eq!(arm["name"], "upstream-tuned");
    assert!(arm["expected"].as_u64().is_some_and(|n| n >= 300), "{arm}");
    assert!(arm["created"].as_u64().is_some_and(|n| n > 0), "kube-controller-manager created runs: {arm}");
    assert_eq!(arm["off_schedule"], 0, "every run at a time of a moved schedule: {arm}");
    assert_eq!(arm["unexpected"], 0, "{arm}");
    assert_eq!(arm["duplicates"], 0, "{arm}");
    assert!(arm["cpu_s"][0].as_f64().is_some_and(|s| s > 0.0), "its CPU is measured: {arm}");
    let _ = std::fs::remove_dir_all(&out);
}
