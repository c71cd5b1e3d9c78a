//! `cronshard-sim demo`, the README's first command, at a small size: it prints the kubeconfig
//! path and progress, ends with a table, and its report shows every run created once.

use std::process::Command;

use serde_json::Value;

#[test]
fn demo_runs_and_reports() {
    let out = std::env::temp_dir().join(format!("cronshard-demo-test-{}", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_cronshard-sim"))
        .args(["demo", "--cronjobs", "200", "--replicas", "2", "--duration", "40s", "--out"])
        .arg(&out)
        .output()
        .expect("demo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("kubectl --kubeconfig"), "{stdout}");
    assert!(stdout.contains("buckets r0:"), "progress lines: {stdout}");
    assert!(stdout.contains("report: "), "{stdout}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).expect("report")).expect("JSON");
    let arm = &report["arms"][0];
    assert!(arm["expected"].as_u64().is_some_and(|n| n > 0), "{arm}");
    assert_eq!(arm["missed"], 0, "{arm}");
    assert_eq!(arm["duplicates"], 0, "{arm}");
    let _ = std::fs::remove_dir_all(&out);
}
