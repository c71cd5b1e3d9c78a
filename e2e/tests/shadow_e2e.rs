//! `cronshard shadow` judged against the audit log (about 2.5 minutes): the v2 baseline runs
//! the `shadow` scenario (more runs than 20 QPS keeps up with, so some come late and some
//! never), shadow mode watches as user `shadow`, and its counts must equal the audit log's:
//! created, missed and duplicate runs exactly, skew p50 and p99 within 0.5 s; and the audit
//! log must show no request by that user other than get, list and watch.

mod common;

use serde_json::Value;

#[test]
fn shadow_mode_counts_what_the_audit_log_shows_and_writes_nothing() {
    let (table, report, out) = common::bench("shadow", &["--scenario", "shadow", "--arms", "v2", "--shadow"]);
    let arm = &report["arms"][0];
    let check = &arm["shadow"];
    let (audit, shadow) = (&check["audit"], &check["shadow"]);
    assert!(audit["missed"].as_u64().is_some_and(|n| n > 0), "the scenario must make the baseline miss runs: {arm}");
    for key in ["created", "missed", "duplicates"] {
        assert_eq!(shadow[key], audit[key], "{key}: {check}\n{table}");
    }
    for key in ["skew_p50_s", "skew_p99_s"] {
        let (s, a) = (shadow[key].as_f64().expect("number"), audit[key].as_f64().expect("number"));
        assert!((s - a).abs() <= 0.5, "{key}: shadow {s}, audit log {a}\n{table}");
    }
    assert_eq!(check["writes"], 0, "shadow mode wrote: {check}");
    assert!(check["reads"].as_u64().is_some_and(|n| n >= 2), "shadow mode listed and watched: {check}");
    let own: Value = serde_json::from_str(&std::fs::read_to_string(out.join("v2/shadow.json")).expect("shadow report"))
        .expect("JSON");
    assert!(own["herds"].as_array().is_some_and(|h| !h.is_empty()), "the :00 herd is reported: {own}");
    assert!(own["worst_cronjobs"].as_array().is_some_and(|w| w.len() == 20), "{own}");
    let _ = std::fs::remove_dir_all(&out);
}
