//! Starting one controller process of an arm: on the simulator (cronshard, a baseline, or
//! kube-controller-manager for the upstream arms), or on a real control plane.

use std::path::Path;
use std::process::Stdio;

use cronshard_e2e::testbed::Testbed;
use tokio::process::{Child, Command};

use crate::arm_spec::{arm_processes, upstream_flags};
use crate::procs::{kubeconfig, spawn};
use crate::sim_upstream::start_kcm;

/// Starts controller `i` of an arm; `generation` > 0 is a successor in a rolling restart (a
/// new pod: a new identity, the same service account).
pub(crate) async fn start_controller(
    bin_dir: &Path,
    dir: &Path,
    arm: &str,
    i: usize,
    generation: usize,
    url: &str,
) -> Result<Child, String> {
    if upstream_flags(arm).is_some() {
        return start_kcm(dir, url, arm, i, generation);
    }
    let (_, _, extra) = arm_processes(arm).ok_or("arm")?;
    let user = format!("bench-{i}");
    let kc = kubeconfig(dir, url, &user)?;
    let kc = kc.to_string_lossy().into_owned();
    let identity = if generation == 0 { user.clone() } else { format!("{user}-g{generation}") };
    let (bin, mut args) = if arm.starts_with("cronshard-") {
        let mut a = vec!["run", "--kubeconfig", &kc, "--identity", &identity, "--metrics-addr", "127.0.0.1:0"]
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>();
        a.extend(extra);
        (bin_dir.join("cronshard"), a)
    } else {
        let mut a = vec!["--kubeconfig".to_owned(), kc.clone(), "--identity".to_owned(), identity.clone()];
        a.extend(extra);
        (bin_dir.join("cronshard-baseline"), a)
    };
    args.extend(["--testing-clock-from".to_owned(), url.to_owned()]);
    if !arm.starts_with("cronshard-") {
        // The baseline prints nothing on stdout: give spawn() its first line another way.
        let log = dir.join(format!("{identity}.log"));
        let stderr = std::fs::File::options().create(true).append(true).open(&log).map_err(|e| e.to_string())?;
        return Command::new(&bin)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("{}: {e}", bin.display()));
    }
    Ok(spawn(&bin, &args, &dir.join(format!("{identity}.log"))).await?.0)
}

/// `cronshard run` replica `i` of an arm with the admin's kubeconfig (the benchmark measures
/// speed; the chart's RBAC is proven elsewhere); `generation` > 0 is a successor in a rolling
/// restart (a new pod: a new identity).
pub(crate) async fn start_replica(
    bin_dir: &Path,
    dir: &Path,
    testbed: &Testbed,
    arm: &str,
    i: usize,
    generation: usize,
) -> Result<Child, String> {
    let (_, _, extra) = arm_processes(arm).ok_or("arm")?;
    let identity = if generation == 0 { format!("bench-{i}") } else { format!("bench-{i}-g{generation}") };
    let mut args: Vec<String> =
        ["run", "--kubeconfig", &testbed.admin_kubeconfig().to_string_lossy()].into_iter().map(str::to_owned).collect();
    args.extend(["--identity".into(), identity.clone(), "--metrics-addr".into(), "127.0.0.1:0".into()]);
    args.extend(extra);
    Ok(spawn(&bin_dir.join("cronshard"), &args, &dir.join(format!("{identity}.log"))).await?.0)
}
