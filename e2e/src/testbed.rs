//! A real control plane for tests: `scripts/kube-testbed` (etcd and kube-apiserver built from
//! upstream's modules; with [`Cluster`] a whole cluster whose Jobs run on kwok's nodes), one
//! namespace per test.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

/// What a control plane is started with.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// kube-apiserver's `--etcd-compaction-interval` (the script's default is 5m).
    pub compaction_interval: Option<String>,
    /// kube-controller-manager's controllers; `None` runs no controller manager.
    pub controllers: Option<String>,
    /// Extra kube-apiserver flags, such as `--watch-cache=false`.
    pub apiserver_args: Vec<String>,
    /// kube-apiserver's audit policy file; the log goes to `audit.log` in [`Testbed::dir`].
    pub audit_policy: Option<PathBuf>,
    /// Extra kube-controller-manager flags (`KUBE_TESTBED_KCM_FLAGS`).
    pub controller_manager_flags: Option<String>,
    /// kube-scheduler's flags beyond the testbed's (`--cluster` only).
    pub scheduler_flags: Option<String>,
    /// A whole cluster (`--cluster`): kube-scheduler, every controller but the CronJob one,
    /// and kwok's fake nodes running pods; `controllers` must be `None`.
    pub cluster: Option<Cluster>,
}

/// The whole cluster's settings (`scripts/kube-testbed up --cluster`).
#[derive(Clone, Debug, Default)]
pub struct Cluster {
    /// Fake nodes (`--nodes`; the script's default is 3).
    pub nodes: Option<u32>,
    /// Keep kube-controller-manager's own CronJob controller on (`--with-upstream-cronjob`).
    pub upstream_cronjob: bool,
}

/// A running control plane; stopped when dropped, or when the test process exits (a reaper
/// process runs `kube-testbed down` once the pipe this process holds closes).
#[derive(Debug)]
pub struct Testbed {
    dir: PathBuf,
    reaper: Mutex<Option<(Child, ChildStdin)>>,
}

/// A control plane that failed to start: the script's own message.
#[derive(Debug, thiserror::Error)]
#[error("kube-testbed {step}: {message}")]
pub struct StartError {
    step: &'static str,
    message: String,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/kube-testbed")
}

fn run_script(step: &'static str, args: &[&str], env: &[(&str, &str)]) -> Result<String, StartError> {
    let out = Command::new(script())
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| StartError { step, message: format!("cannot run {}: {e}", script().display()) })?;
    if !out.status.success() {
        let message = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        return Err(StartError { step, message });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The directory of etcd, kube-apiserver and kube-controller-manager, built first if needed.
pub fn bin_dir() -> Result<PathBuf, StartError> {
    run_script("build", &["build"], &[]).map(PathBuf::from)
}

/// The Kubernetes version the testbed runs (`CRONSHARD_KUBE_VERSION`, else the newest), as
/// its kube-apiserver reports it: `v1.34.4`.
pub fn kube_version() -> Result<String, StartError> {
    let bin = bin_dir()?;
    let out = Command::new(bin.join("kube-apiserver"))
        .arg("--version")
        .output()
        .map_err(|e| StartError { step: "version", message: format!("cannot run kube-apiserver: {e}") })?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .find(|w| w.starts_with("v1."))
        .map(str::to_owned)
        .ok_or(StartError { step: "version", message: format!("kube-apiserver --version printed {text:?}") })
}

/// Every version the testbed supports, oldest first (`scripts/kube-testbed versions`).
pub fn kube_versions() -> Result<Vec<String>, StartError> {
    Ok(run_script("versions", &["versions"], &[])?.lines().map(str::to_owned).collect())
}

impl Testbed {
    /// Builds (or reuses) the binaries and starts a control plane in a fresh temporary dir.
    pub fn start(options: &Options) -> Result<Testbed, StartError> {
        run_script("build", &["build"], &[])?;
        let dir = std::env::temp_dir().join(format!("cronshard-testbed-{}-{}", std::process::id(), rand_suffix()));
        let dir_arg =
            dir.to_str().ok_or(StartError { step: "up", message: "temp dir is not UTF-8".into() })?.to_owned();
        let mut args = vec!["up", "--dir", dir_arg.as_str()];
        if let Some(interval) = &options.compaction_interval {
            args.extend(["--compaction-interval", interval]);
        }
        if let Some(controllers) = &options.controllers {
            args.extend(["--controllers", controllers]);
        }
        let nodes = options.cluster.as_ref().and_then(|c| c.nodes).map(|n| n.to_string());
        if let Some(cluster) = &options.cluster {
            args.push("--cluster");
            if let Some(nodes) = &nodes {
                args.extend(["--nodes", nodes]);
            }
            if cluster.upstream_cronjob {
                args.push("--with-upstream-cronjob");
            }
        }
        for arg in &options.apiserver_args {
            args.extend(["--apiserver-arg", arg]);
        }
        let policy = options.audit_policy.as_ref().map(|p| p.to_string_lossy().into_owned());
        if let Some(policy) = &policy {
            args.extend(["--audit-policy", policy]);
        }
        // The reaper first, so that even a failed `up` is torn down.
        let mut reaper = Command::new("sh")
            .args(["-c", "cat >/dev/null; \"$0\" down --dir \"$1\"; [ -n \"$2\" ] || rm -rf \"$1\""])
            .arg(script())
            .arg(&dir)
            .arg(std::env::var("CRONSHARD_KEEP_TESTBED").unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| StartError { step: "up", message: format!("cannot start the reaper: {e}") })?;
        let stdin = reaper.stdin.take().ok_or(StartError { step: "up", message: "reaper has no stdin".into() })?;
        let testbed = Testbed { dir, reaper: Mutex::new(Some((reaper, stdin))) };
        let env: Vec<(&str, &str)> = [
            options.controller_manager_flags.as_deref().map(|f| ("KUBE_TESTBED_KCM_FLAGS", f)),
            options.scheduler_flags.as_deref().map(|f| ("KUBE_TESTBED_SCHEDULER_FLAGS", f)),
        ]
        .into_iter()
        .flatten()
        .collect();
        run_script("up", &args, &env)?;
        Ok(testbed)
    }

    /// One control plane per test binary, started by the first test that asks.
    pub fn shared(options: &Options) -> &'static Testbed {
        static SHARED: OnceLock<Testbed> = OnceLock::new();
        SHARED.get_or_init(|| Testbed::start(options).unwrap_or_else(|e| panic!("{e}")))
    }

    /// The state, logs and kubeconfigs of this control plane.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Kubeconfig of a cluster admin (system:masters).
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.dir.join("admin.kubeconfig")
    }

    /// Kubeconfig of `system:serviceaccount:cronshard:cronshard`, which holds only what RBAC grants.
    pub fn cronshard_kubeconfig(&self) -> PathBuf {
        self.dir.join("cronshard.kubeconfig")
    }

    /// A client acting as the admin.
    pub async fn client(&self) -> kube::Client {
        client_from(&self.admin_kubeconfig()).await
    }

    /// A fresh namespace named `prefix-<random>`.
    pub async fn namespace(&self, prefix: &str) -> String {
        let name = format!("{prefix}-{}", rand_suffix());
        let namespaces: Api<Namespace> = Api::all(self.client().await);
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
        namespaces.create(&PostParams::default(), &ns).await.expect("create namespace");
        name
    }

    /// The process id of `etcd`, `kube-apiserver`, `kube-controller-manager`,
    /// `kube-scheduler` or `kwok`, if it runs.
    pub fn pid(&self, process: &str) -> Option<u32> {
        std::fs::read_to_string(self.dir.join(format!("{process}.pid"))).ok()?.trim().parse().ok()
    }

    /// Lines of one process's log (`etcd`, `kube-apiserver`, `kube-controller-manager`).
    pub fn log(&self, process: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{process}.log"))).unwrap_or_default()
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        let reaper = self.reaper.get_mut().map(Option::take).unwrap_or_else(|e| e.into_inner().take());
        if let Some((mut child, mut stdin)) = reaper {
            let _ = stdin.flush();
            drop(stdin);
            let _ = child.wait();
        }
    }
}

/// The client configuration of a kubeconfig file, the way `cronshard run --kubeconfig` reads it.
pub async fn config_from(path: &Path) -> kube::Config {
    let kubeconfig = Kubeconfig::read_from(path).expect("kubeconfig");
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.expect("client config")
}

/// A client from a kubeconfig file.
pub async fn client_from(path: &Path) -> kube::Client {
    kube::Client::try_from(config_from(path).await).expect("client")
}

fn rand_suffix() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{:05x}", (nanos ^ (n.wrapping_mul(0x9e37_79b9))) & 0xfffff)
}

/// Whether a Job has finished (Complete or Failed).
pub fn finished(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True"))
}
