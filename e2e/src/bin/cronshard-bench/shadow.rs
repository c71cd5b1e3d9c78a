//! `cronshard shadow` beside an arm (`--shadow`): started read-only as user `shadow` before
//! the controllers, stopped after them once it has seen every Job the audit log shows.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cronshard_e2e::analysis::Analysis;
use cronshard_e2e::shadow::{SHADOW_USER, ShadowCheck, check};
use cronshard_types::Timestamp;
use serde_json::Value;

use crate::procs::{Admin, Proc, kubeconfig, sigterm, spawn};

pub(crate) struct Shadow {
    proc: Proc,
    /// Its `/metrics` and `/readyz`.
    http: Admin,
    report: PathBuf,
}

/// Starts `cronshard shadow` judging runs up to `until`, and waits until it has listed.
pub(crate) async fn start(bin_dir: &Path, dir: &Path, url: &str, until: Timestamp) -> Result<Shadow, String> {
    let kc = kubeconfig(dir, url, SHADOW_USER)?;
    let report = dir.join("shadow.json");
    let args: Vec<String> = [
        "shadow",
        "--kubeconfig",
        &kc.to_string_lossy(),
        "--metrics-addr",
        "127.0.0.1:0",
        "--out",
        &report.to_string_lossy(),
        "--until",
        &until.to_string(),
        "--testing-clock-from",
        url,
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    let (child, metrics_url) = spawn(&bin_dir.join("cronshard"), &args, &dir.join("shadow.log")).await?;
    let config = kube::Config::new(metrics_url.parse().map_err(|_| format!("shadow printed {metrics_url:?}"))?);
    let http = Admin { client: kube::Client::try_from(config).map_err(|e| e.to_string())? };
    let deadline = Instant::now() + Duration::from_secs(60);
    while http.call("GET", "/readyz", Vec::new()).await.is_err() {
        if Instant::now() > deadline {
            return Err("cronshard shadow did not list CronJobs and Jobs within 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(Shadow { proc: Proc::new(child), http, report })
}

impl Shadow {
    /// Waits until shadow mode has seen every Job created (the controllers are stopped), stops
    /// it, and compares its final report with the audit log's `analysis`.
    pub(crate) async fn finish(mut self, analysis: &Analysis, records: &[Value]) -> Result<ShadowCheck, String> {
        let created =
            records.iter().filter(|r| r["verb"] == "create" && r["resource"] == "jobs" && r["code"] == 201).count()
                as u64;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let seen = self.jobs_seen().await;
            if seen >= created {
                break;
            }
            if Instant::now() > deadline {
                tracing::warn!(seen, created, "shadow mode has not seen every Job after 60 s; comparing anyway");
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.proc.sample();
        sigterm(&self.proc.child);
        let _ = tokio::time::timeout(Duration::from_secs(30), self.proc.child.wait()).await;
        let text = std::fs::read_to_string(&self.report).map_err(|e| format!("{}: {e}", self.report.display()))?;
        let report: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", self.report.display()))?;
        Ok(check(analysis, &report, records))
    }

    async fn jobs_seen(&self) -> u64 {
        let Ok(text) = self.http.call("GET", "/metrics", Vec::new()).await else { return 0 };
        text.lines()
            .find_map(|l| l.strip_prefix("cronshard_shadow_jobs_seen_total "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map_or(0, |v| v as u64)
    }
}
