//! The processes of a benchmark: the simulator's admin API, spawning a process and reading
//! its first line, a controller's kubeconfig, and signals.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use cronshard_e2e::scenario::CronJobSeed;
use cronshard_e2e::usage;
use cronshard_types::Timestamp;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A small HTTP client: the simulator's admin API, or a process's `/metrics`.
pub(crate) struct Admin {
    pub(crate) client: kube::Client,
}

impl Admin {
    pub(crate) async fn call(&self, method: &str, path: &str, body: Vec<u8>) -> Result<String, String> {
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .body(body)
            .map_err(|e| e.to_string())?;
        self.client.request_text(request).await.map_err(|e| format!("{method} {path}: {e}"))
    }

    pub(crate) async fn now(&self) -> Result<(Timestamp, f64), String> {
        let clock: serde_json::Value =
            serde_json::from_str(&self.call("GET", "/sim/clock", Vec::new()).await?).map_err(|e| e.to_string())?;
        let now = clock["now"].as_str().and_then(|t| t.parse().ok()).ok_or("no clock")?;
        Ok((now, clock["offsetSeconds"].as_f64().unwrap_or(0.0)))
    }

    pub(crate) async fn load(&self, seeds: &[&CronJobSeed]) -> Result<(), String> {
        let buckets = std::num::NonZeroU32::new(64).ok_or("buckets")?;
        for chunk in seeds.chunks(20_000) {
            let mut body = String::new();
            for s in chunk {
                body.push_str(&s.object(buckets).to_string());
                body.push('\n');
            }
            self.call("POST", "/sim/load", body.into_bytes()).await?;
        }
        Ok(())
    }
}

/// A controller process, with the usage sampled so far.
pub(crate) struct Proc {
    pub(crate) child: Child,
    pub(crate) cpu_s: f64,
    pub(crate) peak_rss_mb: f64,
}

impl Proc {
    pub(crate) fn new(child: Child) -> Self {
        Proc { child, cpu_s: 0.0, peak_rss_mb: 0.0 }
    }

    /// Samples CPU seconds and RSS now (nothing once the process is gone).
    pub(crate) fn sample(&mut self) {
        if let Some(pid) = self.child.id() {
            let (cpu, rss) = usage(pid);
            self.cpu_s = cpu;
            self.peak_rss_mb = self.peak_rss_mb.max(rss);
        }
    }
}

/// Starts `bin` with its stderr appended to `log` (a process restarted under the same
/// identity keeps its predecessor's lines) and returns it with its first line on stdout.
pub(crate) async fn spawn(bin: &Path, args: &[String], log: &Path) -> Result<(Child, String), String> {
    let stderr = std::fs::File::options().create(true).append(true).open(log).map_err(|e| e.to_string())?;
    let mut child = Command::new(bin)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut line = String::new();
    let mut reader = BufReader::new(stdout);
    tokio::time::timeout(Duration::from_secs(120), reader.read_line(&mut line))
        .await
        .map_err(|_| format!("{} did not start", bin.display()))?
        .map_err(|e| e.to_string())?;
    // Keep reading so the process never blocks on a full pipe.
    tokio::spawn(async move {
        let mut sink = String::new();
        while reader.read_line(&mut sink).await.is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
    Ok((child, line.trim().to_owned()))
}

pub(crate) fn kubeconfig(dir: &Path, url: &str, user: &str) -> Result<PathBuf, String> {
    let path = dir.join(format!("kubeconfig-{user}"));
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {url}\nusers:\n- name: u\n  user:\n    \
         token: token-{user}\ncontexts:\n- name: sim\n  context:\n    cluster: sim\n    user: u\n    namespace: default\n\
         current-context: sim\n"
    );
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    Ok(path)
}

pub(crate) fn sigterm(child: &Child) {
    let _ = signal(child.id(), "TERM");
}

/// `kill -SIG pid` (a process already gone is no error: it cannot be paused or resumed).
pub(crate) fn signal(pid: Option<u32>, sig: &str) -> Result<(), String> {
    let Some(pid) = pid else { return Ok(()) };
    let status = std::process::Command::new("kill").args([format!("-{sig}"), pid.to_string()]).status();
    status.map_err(|e| format!("kill -{sig} {pid}: {e}")).map(drop)
}
