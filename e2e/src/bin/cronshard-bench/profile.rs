//! A CPU profile of kube-apiserver during a herd, from its own `/debug/pprof/profile`: where
//! the server's time goes when an arm falls short of the plain-client bound.

use std::path::{Path, PathBuf};
use std::process::Command;

use futures::AsyncReadExt;

/// The profile's file in an arm's folder, and its top functions beside it.
const PROFILE: &str = "kube-apiserver.cpu.pb.gz";
const TOP: &str = "kube-apiserver.cpu.txt";

/// Profiles kube-apiserver for `seconds` (the request returns when the profile is done) and
/// writes [`PROFILE`] into `dir`, then [`TOP`]: `go tool pprof -top` of it (the testbed is
/// built with Go, so it is there).
pub(crate) async fn cpu_profile(client: kube::Client, seconds: u64, dir: PathBuf) -> Result<PathBuf, String> {
    let what = "kube-apiserver's CPU profile";
    let request = http::Request::get(format!("/debug/pprof/profile?seconds={seconds}"))
        .body(Vec::new())
        .map_err(|e| format!("{what}: {e}"))?;
    let mut body = client.request_stream(request).await.map_err(|e| format!("{what}: {e}"))?;
    let mut bytes = Vec::new();
    body.read_to_end(&mut bytes).await.map_err(|e| format!("{what}: {e}"))?;
    let profile = dir.join(PROFILE);
    std::fs::write(&profile, &bytes).map_err(|e| format!("{}: {e}", profile.display()))?;
    let top = tokio::task::spawn_blocking(move || top_functions(&profile)).await.map_err(|e| e.to_string())??;
    Ok(top)
}

fn top_functions(profile: &Path) -> Result<PathBuf, String> {
    let out = Command::new("go")
        .args(["tool", "pprof", "-top", "-nodecount=40"])
        .arg(profile)
        .output()
        .map_err(|e| format!("go tool pprof: {e} (Go builds the testbed; is it on PATH?)"))?;
    if !out.status.success() {
        return Err(format!("go tool pprof {}: {}", profile.display(), String::from_utf8_lossy(&out.stderr).trim()));
    }
    let top = profile.with_file_name(TOP);
    std::fs::write(&top, &out.stdout).map_err(|e| format!("{}: {e}", top.display()))?;
    Ok(top)
}
