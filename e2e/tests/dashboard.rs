//! The Grafana dashboard's every PromQL query, checked against a real Prometheus (Debian
//! package) scraping a short real `cronshard-sim demo`: each parses and returns data, and the
//! alert rules evaluate against the same data without errors (scripts/check_dashboard.py).

mod common;

#[test]
fn every_dashboard_query_returns_data_from_a_real_prometheus_scraping_a_demo() {
    let out = common::tool(
        "python3",
        &[
            "scripts/check_dashboard.py",
            "--cronshard-sim",
            env!("CARGO_BIN_EXE_cronshard-sim"),
            "--dashboard",
            "charts/cronshard/files/dashboard.json",
            "--rules",
            "charts/cronshard/files/alerts.yaml",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "check_dashboard.py failed:\n{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("RESULT: PASS"), "{stdout}");
}
