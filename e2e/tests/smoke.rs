//! The benchmark harness end to end on the small `smoke` scenario (about 2.5 minutes): a
//! cronshard arm with 2 replicas and the v2 baseline, each against its own simulator;
//! cronshard must miss nothing and start nothing twice, and the report must have the
//! spec's shape.

use std::process::Command;

use serde_json::Value;

#[test]
fn smoke_scenario_runs_end_to_end() {
    let out = std::env::temp_dir().join(format!("cronshard-bench-smoke-{}", std::process::id()));
    let status = Command::new(env!("CARGO_BIN_EXE_cronshard-bench"))
        .args(["--scenario", "smoke", "--arms", "cronshard-2,v2", "--out"])
        .arg(&out)
        .status()
        .expect("cronshard-bench runs");
    assert!(status.success());
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).expect("report")).expect("JSON");
    assert_eq!(report["scenario"], "smoke");
    let arms = report["arms"].as_array().expect("arms");
    assert_eq!(arms.len(), 2);
    let cronshard = &arms[0];
    assert_eq!(cronshard["name"], "cronshard-2");
    assert!(cronshard["expected"].as_u64().is_some_and(|n| n >= 300), "{cronshard}");
    assert_eq!(cronshard["missed"], 0, "{cronshard}");
    assert_eq!(cronshard["duplicates"], 0, "{cronshard}");
    for key in ["skew_s", "herds", "requests", "http_410", "http_429", "cpu_s", "peak_rss_mb"] {
        assert!(cronshard.get(key).is_some(), "{key} missing");
    }
    assert_eq!(cronshard["cpu_s"].as_array().map(Vec::len), Some(2));
    assert_eq!(arms[1]["name"], "v2");
    assert!(arms[1]["kind"].as_str().is_some_and(|k| k.contains("re-implementation")));
    let svg = std::fs::read_to_string(out.join("report.svg")).expect("svg");
    assert!(svg.starts_with("<svg") && svg.contains("cronshard-2"));
    let _ = std::fs::remove_dir_all(&out);
}
