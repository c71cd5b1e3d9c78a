//! `cronshard plan` as a process, on a small `kubectl get cronjobs -A -o json` list: the text
//! and JSON reports, the SVG file, stdin, and exit code 2 naming the file for bad input.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

/// A directory of its own for each test (tests run in parallel in one process).
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cronshard-plan-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn cronjob(namespace: &str, name: &str, mut spec: Value) -> Value {
    spec["jobTemplate"] = json!({"spec": {"template": {"spec": {"restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox"}]}}}});
    json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"namespace": namespace, "name": name, "uid": format!("uid-{name}"),
            "creationTimestamp": "2026-11-01T00:00:00Z", "resourceVersion": "12",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "spec": spec,
        "status": {},
    })
}

/// Six CronJobs: over 13:00–15:00 UTC on 2026-12-01 the four valid ones run 24 + 2 + 2 + 1
/// times, 4 of them at 14:00 (09:00 in New York) and 3 at 13:00.
fn cluster() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion": ""},
        "items": [
            cronjob("a", "every-five", json!({"schedule": "*/5 * * * *"})),
            cronjob("a", "hourly", json!({"schedule": "0 * * * *", "concurrencyPolicy": "Forbid"})),
            cronjob("b", "hourly", json!({"schedule": "0 * * * *", "suspend": false})),
            cronjob("b", "ny", json!({"schedule": "0 9 * * *", "timeZone": "America/New_York"})),
            cronjob("c", "paused", json!({"schedule": "* * * * *", "suspend": true})),
            cronjob("c", "broken", json!({"schedule": "61 * * * *"})),
        ],
    })
}

fn write_cluster(dir: &Path) -> PathBuf {
    let file = dir.join("cronjobs.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&cluster()).expect("JSON")).expect("write cronjobs.json");
    file
}

fn plan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cronshard")).arg("plan").args(args).output().expect("cronshard runs")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("UTF-8")
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).expect("UTF-8")
}

const WINDOW: [&str; 4] = ["--from", "2026-12-01T13:00:00Z", "--hours", "2"];

/// `cronshard plan -f FILE` over [`WINDOW`], with more arguments.
fn plan_window(file: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["-f", path(file)];
    args.extend_from_slice(&WINDOW);
    args.extend_from_slice(extra);
    plan(&args)
}

#[test]
fn text_report() {
    let dir = temp_dir("text");
    let file = write_cluster(&dir);
    let out = plan_window(&file, &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.contains(&"Window: 2026-12-01T13:00:00Z + 2 h"), "{text}");
    assert!(lines.contains(&"CronJobs: 6 total, 4 valid, 1 suspended, 1 invalid"), "{text}");
    assert!(lines.iter().any(|l| l.starts_with("  invalid c/broken: UnparseableSchedule: ")), "{text}");
    assert!(lines.contains(&"Runs: 29 in 2 h (348 per day)"), "{text}");
    assert!(lines.contains(&"Runs per minute: mean 0.242, p50 0, p99 3, max 4"), "{text}");
    let herds = lines.iter().position(|l| l.starts_with("Largest herds")).expect("herd list");
    let herd = |i: usize| lines[herds + i].split_whitespace().collect::<Vec<_>>();
    assert_eq!(herd(1), ["2026-12-01T14:00:00Z", "4"], "{text}");
    assert_eq!(herd(2), ["2026-12-01T13:00:00Z", "3"], "{text}");
    assert_eq!(herd(3), ["2026-12-01T13:05:00Z", "1"], "{text}");
    assert!(text.contains("1392 per day, 16 in the peak minute"), "{text}");
    assert!(text.contains("needed_create_rate = 0.99 * H / T = 3.96/s"), "{text}");
    assert!(lines.iter().any(|l| l.starts_with("  replicas: 2 ")), "{text}");
    assert!(lines.contains(&"  --qps per replica: 50"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_report() {
    let dir = temp_dir("json");
    let file = write_cluster(&dir);
    let out = plan_window(&file, &["-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(report["cronjobs"], json!({"total": 6, "valid": 4, "suspended": 1, "invalid": 1}), "{report}");
    assert_eq!(report["invalid"][0]["name"], "c/broken", "{report}");
    assert_eq!(report["window"], json!({"from": "2026-12-01T13:00:00Z", "hours": 2}), "{report}");
    assert_eq!(report["runs"]["total"], 29, "{report}");
    assert_eq!(report["runs"]["per_day"].as_f64(), Some(348.0), "{report}");
    assert_eq!(report["per_minute"]["max"], 4, "{report}");
    assert_eq!(report["per_minute"]["p99"], 3, "{report}");
    assert_eq!(report["herds"][0], json!({"minute": "2026-12-01T14:00:00Z", "runs": 4}), "{report}");
    assert_eq!(report["writes"]["per_run"], 4, "{report}");
    assert_eq!(report["writes"]["peak_minute"], 16, "{report}");
    let p = &report["plan"];
    assert_eq!(p["skew_target_s"].as_f64(), Some(1.0), "{p}");
    assert_eq!(p["needed_create_rate"].as_f64(), Some(3.96), "{p}");
    assert_eq!(p["replicas"], 2, "{p}");
    assert_eq!(p["qps_per_replica"], 50, "{p}");
    assert_eq!(p["limited_by"], "availability", "{p}");
    assert!(p["achievable_p99_skew_s"].as_f64().is_some_and(|s| s > 0.0 && s <= 1.0), "{p}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn server_limited_plan_says_so() {
    let dir = temp_dir("limited");
    let file = write_cluster(&dir);
    // 3.96 creates/s needed, 2 writes/s admitted: p99 = 0.99 * 4 / 2 = 1.98 s at best.
    let text = stdout(&plan_window(&file, &["--admitted-writes-per-s", "2"]));
    assert!(text.contains("no replica count reaches a p99 of 1 s"), "{text}");
    assert!(text.contains("Achievable p99 skew = 0.99 * H / 2 = 1.98 s"), "{text}");
    let out = plan_window(&file, &["--admitted-writes-per-s", "2", "-o", "json"]);
    let report: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(report["plan"]["limited_by"], "api_server", "{report}");
    assert_eq!(report["plan"]["achievable_p99_skew_s"].as_f64(), Some(1.98), "{report}");
    assert_eq!(report["plan"]["qps_per_replica"], 2, "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_whole_cluster_part_names_each_client_and_its_flags() {
    let dir = temp_dir("cluster");
    let file = write_cluster(&dir);
    // The largest herd is 4 runs; a Job controller at 2 QPS without a burst is its slowest hop.
    let flags = ["--start-target", "1s", "--job-controller-qps", "2", "--job-controller-burst", "0"];
    let out = plan_window(&file, &[&flags[..], &["-o", "json"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    let c = &report["cluster"];
    let per_run = c["job_controller"]["requests_per_run"].as_f64().expect("requests per run");
    assert!(per_run > 1.0, "the pod create and the Job's status at least: {c}");
    let drain = c["job_controller"]["drain_now_s"].as_f64().expect("drain");
    assert!((drain - 4.0 * per_run / 2.0).abs() < 1e-6, "{c}");
    assert_eq!(c["limited_by"], "job_controller", "{c}");
    assert_eq!(c["predicted_drain_s"].as_f64(), Some(drain), "{c}");
    // Under upstream's defaults' need: the defaults stay (20 and 50 QPS).
    assert_eq!((c["job_controller"]["qps"].as_u64(), c["scheduler"]["qps"].as_u64()), (Some(20), Some(50)), "{c}");
    let text = stdout(&plan_window(&file, &flags));
    assert!(
        text.contains("\n    kube-controller-manager --kube-api-qps 20 --kube-api-burst 30 --concurrent-job-syncs 5\n"),
        "{text}"
    );
    assert!(text.contains("\n    kube-scheduler --kube-api-qps 50 --kube-api-burst 100 "), "{text}");
    assert!(text.contains("Predicted end-to-end herd drain now: "), "{text}");
    let out = plan_window(&file, &["--job-controller-qps", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), "error: --job-controller-qps 0: must be a positive number\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn svg_is_written_and_its_path_printed() {
    let dir = temp_dir("svg");
    let file = write_cluster(&dir);
    let svg = dir.join("runs.svg");
    let out = plan_window(&file, &["--svg", path(&svg)]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let printed = format!("SVG: {}", svg.display());
    assert!(text.lines().any(|l| l == printed), "{text}");
    let picture = std::fs::read_to_string(&svg).expect("SVG written");
    assert!(picture.starts_with("<svg"), "{picture}");
    let doc = roxmltree::Document::parse(&picture).expect("the SVG is XML");
    let texts: Vec<&str> = doc.descendants().filter(|n| n.has_tag_name("text")).filter_map(|n| n.text()).collect();
    assert!(texts.iter().any(|t| t.trim() == "14:00"), "hour ticks: {texts:?}");
    assert!(picture.trim_end().ends_with("</svg>"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reads_stdin() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cronshard"))
        .args(["plan", "-f", "-", "-o", "json"])
        .args(WINDOW)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cronshard starts");
    let body = serde_json::to_vec(&cluster()).expect("JSON");
    child.stdin.take().expect("stdin").write_all(&body).expect("write stdin");
    let out = child.wait_with_output().expect("cronshard ends");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(report["runs"]["total"], 29, "{report}");
}

#[test]
fn bad_input_exits_2_naming_the_file() {
    let dir = temp_dir("bad");
    let yaml = dir.join("cronjobs.yaml");
    std::fs::write(&yaml, "apiVersion: v1\nkind: List\nitems: []\n").expect("write");
    let out = plan(&["-f", path(&yaml)]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.starts_with(&format!("error: {}: not JSON", yaml.display())), "{err}");
    assert!(out.stdout.is_empty());

    let pod = dir.join("pod.json");
    std::fs::write(&pod, r#"{"apiVersion": "v1", "kind": "Pod"}"#).expect("write");
    let out = plan(&["-f", path(&pod)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(&format!("{}: no items", pod.display())), "{}", stderr(&out));

    let missing = dir.join("missing.json");
    let out = plan(&["-f", path(&missing)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(path(&missing)), "{}", stderr(&out));

    let file = write_cluster(&dir);
    for args in [["--hours", "0"], ["--hours", "169"], ["--skew-target", "0"], ["--memory-per-replica", "1Mi"]] {
        let out = plan(&["-f", path(&file), args[0], args[1]]);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn spread_shows_the_window_with_and_without_it() {
    let dir = temp_dir("spread");
    let file = write_cluster(&dir);
    let selector = "kubernetes.io/metadata.name in (a)";
    let out = plan_window(&file, &["--spread", "5m", "--spread-selector", selector, "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    let spread = &report["spread"];
    // Namespace a: the hourly CronJob moves; every-five's interval is not longer than 5 m.
    assert_eq!(spread["cronjobs_moved"], 1, "{spread}");
    assert_eq!(spread["cronjobs_unsuited"], 1, "{spread}");
    assert_eq!(spread["without"]["peak_due_per_s"], 4, "{spread}");
    assert!(spread["with"]["peak_due_per_s"].as_u64().is_some_and(|n| n <= 4), "{spread}");
    let text = stdout(&plan_window(&file, &["--spread", "5m"]));
    assert!(text.contains("Spread --spread 5m: moves 3 CronJobs"), "{text}");
    assert!(text.contains("starts up to 5m later than its schedule says"), "{text}");

    for (args, says) in [
        (vec!["--spread=-5m"], "--spread: spread \"-5m\" is negative"),
        (vec!["--spread", "5m", "--spread-selector", "team=a"], "only kubernetes.io/metadata.name"),
        (vec!["--spread-selector", selector], "--spread"),
    ] {
        let out = plan_window(&file, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
