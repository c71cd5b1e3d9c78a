//! `cronshard-sim serve` + `cronshard run` as real processes: 1,000 CronJobs due in the same
//! minute, every Job created exactly once, proven from the simulator's audit log.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{http, spawn, spawn_sim, terminate};

use serde_json::{Value, json};

#[test]
fn a_thousand_cronjobs_due_in_one_minute_each_fire_once() {
    let dir = std::env::temp_dir().join(format!("cronshard-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let kubeconfig: PathBuf = dir.join("kubeconfig");
    let (mut sim, url) = spawn_sim(&[
        "--listen",
        "127.0.0.1:0",
        "--kubeconfig-out",
        kubeconfig.to_str().expect("utf-8"),
        "--no-job-runner",
    ]);
    let now = clock_before_boundary(&url, 12);
    let boundary_minute = now.as_second().div_euclid(60) + 1;
    let loaded: Value =
        serde_json::from_str(&http("POST", &format!("{url}/sim/load"), Some(&herd(now)))).expect("load");
    assert_eq!(loaded["loaded"], 1000);

    let (mut run, metrics) = spawn(&[
        "run",
        "--kubeconfig",
        kubeconfig.to_str().expect("utf-8"),
        "--identity",
        "replica-a",
        "--metrics-addr",
        "127.0.0.1:0",
        "--qps",
        "0",
        "--testing-clock-from",
        &url,
    ]);
    assert!(metrics.starts_with("http://127.0.0.1:"));

    let suffix = format!("-{boundary_minute}");
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut creates = job_creates(&url);
    while creates.keys().filter(|n| n.ends_with(&suffix)).count() < 1000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
        creates = job_creates(&url);
    }
    let due: Vec<_> = creates.iter().filter(|(n, _)| n.ends_with(&suffix)).collect();
    assert_eq!(due.len(), 1000, "every CronJob fired for minute {boundary_minute}");
    for (name, records) in &creates {
        assert_eq!(records.len(), 1, "{name} was created {} times", records.len());
        let record = &records[0];
        assert!(record["bucket"].as_str().is_some_and(|b| b.parse::<u32>().is_ok_and(|b| b < 64)), "{record}");
        assert!(record["userAgent"].as_str().is_some_and(|ua| ua.contains("replica-a")), "{record}");
    }
    job_and_status_say_what_upstream_promises(&url, boundary_minute);
    let metrics_text = http("GET", &format!("{metrics}/metrics"), None);
    assert!(metrics_text.contains("cronjob_controller_job_creation_skew_duration_seconds_count"), "{metrics_text}");

    assert_eq!(terminate(&mut run), Some(0), "cronshard run exits cleanly on SIGTERM");
    assert_eq!(terminate(&mut sim), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

fn sim_now(url: &str) -> jiff::Timestamp {
    let clock: Value = serde_json::from_str(&http("GET", &format!("{url}/sim/clock"), None)).expect("clock");
    clock["now"].as_str().expect("now").parse().expect("timestamp")
}

/// Puts the server clock `lead_s` seconds before a minute boundary; returns its now.
fn clock_before_boundary(url: &str, lead_s: i64) -> jiff::Timestamp {
    let to_boundary = 60 - sim_now(url).as_second().rem_euclid(60);
    let offset = (to_boundary - lead_s + 60) % 60;
    http("PUT", &format!("{url}/sim/clock"), Some(&json!({"offsetSeconds": offset}).to_string()));
    sim_now(url)
}

/// 1,000 unlabelled every-minute CronJobs across 10 namespaces, created at `now`: the
/// labeller must give each its bucket before it can fire.
fn herd(now: jiff::Timestamp) -> String {
    let created = cronshard_types::Zone::utc().format_rfc3339(now);
    let mut seed = String::new();
    for i in 0..1000 {
        let cj = json!({
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": format!("herd-{i:04}"), "namespace": format!("team-{}", i % 10), "creationTimestamp": created},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"metadata": {"labels": {"app": "herd"}}, "spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}
        });
        seed.push_str(&cj.to_string());
        seed.push('\n');
    }
    seed
}

/// The audit log's successful Job creates, by Job name.
fn job_creates(url: &str) -> HashMap<String, Vec<Value>> {
    let mut creates: HashMap<String, Vec<Value>> = HashMap::new();
    for line in http("GET", &format!("{url}/sim/audit"), None).lines() {
        let record: Value = serde_json::from_str(line).expect("audit record");
        if record["verb"] == "create" && record["resource"] == "jobs" && record["code"] == 201 {
            creates.entry(record["name"].as_str().unwrap_or("").to_owned()).or_default().push(record);
        }
    }
    creates
}

/// One Job and its CronJob's status carry what upstream and cronshard promise.
fn job_and_status_say_what_upstream_promises(url: &str, boundary_minute: i64) {
    let suffix = format!("-{boundary_minute}");
    let job: Value = serde_json::from_str(&http(
        "GET",
        &format!("{url}/apis/batch/v1/namespaces/team-7/jobs/herd-0007{suffix}"),
        None,
    ))
    .expect("job");
    let annotations = &job["metadata"]["annotations"];
    let scheduled =
        cronshard_types::Zone::utc().format_rfc3339(jiff::Timestamp::from_second(boundary_minute * 60).expect("ts"));
    assert_eq!(annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"], scheduled.as_str());
    assert!(annotations["cronshard.io/created-by"].as_str().is_some_and(|c| c.starts_with("replica-a/")));
    assert_eq!(job["metadata"]["labels"]["app"], "herd");
    let owner = &job["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].as_str(), owner["name"].as_str(), owner["controller"].as_bool()),
        (Some("CronJob"), Some("herd-0007"), Some(true))
    );
    // Status writes follow the creates (the bucket pipeline): wait for this one.
    let status_deadline = Instant::now() + Duration::from_secs(30);
    let cj = loop {
        let cj: Value = serde_json::from_str(&http(
            "GET",
            &format!("{url}/apis/batch/v1/namespaces/team-7/cronjobs/herd-0007"),
            None,
        ))
        .expect("cj");
        if !cj["status"]["lastScheduleTime"].is_null() || Instant::now() > status_deadline {
            break cj;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(cj["status"]["lastScheduleTime"], scheduled.as_str());
}
