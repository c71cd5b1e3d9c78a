//! The shipped image on a real kube-apiserver, configured as in a pod: `scripts/image build`
//! (podman, the static binary), then `podman run` as the chart's user with a read-only root,
//! the chart's service-account token, the server's CA and the namespace mounted at
//! `/var/run/secrets/kubernetes.io/serviceaccount/` and `KUBERNETES_SERVICE_HOST`/`_PORT`
//! set, no kubeconfig anywhere. It becomes ready, holds every bucket, fires a CronJob at the
//! next minute and hands its buckets back on SIGTERM within the chart's grace period. While
//! it runs, `kubectl cronshard get` (the binary linked as a kubectl plugin) shows every
//! CronJob's NEXT, bucket and that replica, through `--kubeconfig`, `--context`, `-n`, `-l`
//! and `KUBECONFIG`.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::real::{Options, Testbed, create_cronjob, cronjob, holders, jobs, server_port, wait_until};
use common::{Proc, tool, workspace};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use serde_json::json;

/// The chart's grace period (values.yaml `terminationGracePeriodSeconds`).
const GRACE: Duration = Duration::from_secs(40);
const IDENTITY: &str = "image-replica";
const BUCKETS: u32 = 64;

/// `scripts/image build`: the reference is its last line of output.
fn build_image() -> String {
    let out = Command::new(workspace().join("scripts/image")).arg("build").output().expect("scripts/image runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "scripts/image build failed (podman must run on this machine): {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let reference = stdout.lines().last().expect("a reference").trim().to_owned();
    let _ = writeln!(std::io::stderr(), "{}", stderr.lines().last().unwrap_or_default());
    reference
}

fn podman(args: &[&str]) -> std::process::Output {
    Command::new(workspace().join("scripts/image")).arg("podman").args(args).output().expect("podman runs")
}

/// The image holds the binary alone, runs as the chart's user and starts `cronshard run`.
fn the_image_is_the_binary_alone(reference: &str) {
    let out = podman(&["image", "inspect", "--format", "{{json .Config}}", reference]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let config: serde_json::Value = serde_json::from_slice(&out.stdout).expect("image config");
    assert_eq!(config["User"], "65532:65532", "{config}");
    assert_eq!(config["Entrypoint"], json!(["/cronshard"]), "{config}");
    assert_eq!(config["Cmd"], json!(["run"]), "{config}");
    let out = podman(&["image", "inspect", "--format", "{{len .RootFS.Layers}}", reference]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1", "one layer: the binary");
}

/// The service account's files as the kubelet mounts them: `token`, `ca.crt`, `namespace`.
fn service_account_dir(testbed: &Testbed) -> PathBuf {
    let kubeconfig = std::fs::read_to_string(testbed.cronshard_kubeconfig()).expect("kubeconfig");
    let token = kubeconfig.lines().find_map(|l| l.trim().strip_prefix("token: ")).expect("token line");
    let dir = testbed.dir().join("serviceaccount");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("token"), token).expect("token");
    std::fs::copy(testbed.dir().join("certs/apiserver.crt"), dir.join("ca.crt")).expect("ca.crt");
    std::fs::write(dir.join("namespace"), "cronshard").expect("namespace");
    for file in ["token", "ca.crt", "namespace"] {
        let path = dir.join(file);
        let mut permissions = std::fs::metadata(&path).expect("metadata").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o644);
        std::fs::set_permissions(&path, permissions).expect("chmod");
    }
    dir
}

/// `podman run` of the image, as the chart's pod runs it; returns the process and the metrics URL.
fn run_image(reference: &str, testbed: &Testbed, name: &str) -> (Proc, String) {
    let secrets =
        format!("{}:/var/run/secrets/kubernetes.io/serviceaccount:ro", service_account_dir(testbed).display());
    let port = server_port(&testbed.admin_kubeconfig()).to_string();
    let mut child = Command::new(workspace().join("scripts/image"))
        .args(["podman", "run", "--rm", "--name", name, "--network", "host", "--read-only", "--user", "65532:65532"])
        .args(["--volume", &secrets, "--env", "KUBERNETES_SERVICE_HOST=127.0.0.1"])
        .args(["--env", &format!("KUBERNETES_SERVICE_PORT={port}"), "--env", &format!("POD_NAME={IDENTITY}")])
        .args([reference, "run", "--metrics-addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(testbed.dir().join("image.log")).expect("log"))
        .spawn()
        .expect("podman run");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("first line");
    let url = line.trim().to_owned();
    let log = std::fs::read_to_string(testbed.dir().join("image.log")).unwrap_or_default();
    assert!(url.starts_with("http://"), "the container printed no metrics URL: {url:?}; its log: {log}");
    (Proc(child), url)
}

/// The status code of a GET, or `None` while nothing answers.
fn status_of(url: &str) -> Option<u16> {
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest.split_once('/')?;
    let mut stream = std::net::TcpStream::connect(host).ok()?;
    write!(stream, "GET /{path} HTTP/1.0\r\nHost: {host}\r\n\r\n").ok()?;
    let mut head = String::new();
    BufReader::new(stream).read_line(&mut head).ok()?;
    head.split_whitespace().nth(1)?.parse().ok()
}

/// `kubectl cronshard ARGS`: kubectl finds the plugin on PATH, as `kubectl-cronshard`.
fn kubectl_cronshard(args: &[&str], env: &[(&str, &Path)]) -> String {
    let plugins = std::env::temp_dir().join(format!("cronshard-plugin-{}", std::process::id()));
    std::fs::create_dir_all(&plugins).expect("plugin dir");
    let link = plugins.join("kubectl-cronshard");
    if !link.exists() {
        std::os::unix::fs::symlink(common::cronshard(), &link).expect("link kubectl-cronshard");
    }
    let path = format!("{}:{}", plugins.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("kubectl")
        .arg("cronshard")
        .args(args)
        .env("PATH", path)
        .env_remove("KUBECONFIG")
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .output()
        .expect("kubectl runs (scripts/test installs it)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "kubectl cronshard {args:?}: {text}{}", String::from_utf8_lossy(&out.stderr));
    text
}

/// The rows of a `get` table as column name -> value.
fn rows(table: &str) -> Vec<std::collections::HashMap<String, String>> {
    let mut lines = table.lines();
    let header = lines.next().expect("header");
    // Columns start where a header name starts; names contain single spaces only.
    let starts: Vec<usize> = header
        .char_indices()
        .filter(|(i, c)| *c != ' ' && (*i == 0 || header[..*i].ends_with("  ")))
        .map(|(i, _)| i)
        .collect();
    let cell = |line: &str, k: usize| {
        let end = starts.get(k + 1).copied().unwrap_or(line.len()).min(line.len());
        line.get(starts[k]..end).unwrap_or_default().trim().to_owned()
    };
    lines.map(|line| (0..starts.len()).map(|k| (cell(header, k), cell(line, k))).collect()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_runs_in_cluster_and_kubectl_cronshard_shows_where_each_cronjob_runs() {
    let reference = tokio::task::spawn_blocking(build_image).await.expect("image");
    the_image_is_the_binary_alone(&reference);
    let testbed = tokio::task::spawn_blocking(|| Testbed::start(&Options::default())).await.expect("join");
    let testbed = testbed.expect("control plane");
    let admin = testbed.admin_kubeconfig();
    let kubeconfig = admin.to_str().expect("utf-8");
    let install = ["install", "cronshard", "charts/cronshard", "--namespace", "cronshard", "--create-namespace"];
    let out = tool("helm", &[&install[..], &["--wait=false", "--kubeconfig", kubeconfig]].concat());
    assert!(out.status.success(), "helm install: {}", String::from_utf8_lossy(&out.stderr));

    let started = Instant::now();
    let (mut container, url) = run_image(&reference, &testbed, &format!("cronshard-image-{}", std::process::id()));
    wait_until("/readyz 200 from the container", Duration::from_secs(60), || async {
        (status_of(&format!("{url}/readyz")) == Some(200)).then_some(())
    })
    .await;
    let client = testbed.client().await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "cronshard");
    wait_until("the container holds every bucket", Duration::from_secs(60), || async {
        let held = holders(&leases).await;
        (held.len() == BUCKETS as usize && held.values().all(|h| h == IDENTITY)).then_some(())
    })
    .await;

    let ready = started.elapsed();
    let ns = testbed.namespace("image").await;
    let every_minute = create_cronjob(&client, &ns, &cronjob("every-minute", "* * * * *", json!({}))).await;
    let zoned = json!({"timeZone": "America/New_York", "suspend": true});
    create_cronjob(&client, &ns, &cronjob("zoned", "30 2 * * *", zoned)).await;
    let mut spread = cronjob("spread", "0 * * * *", json!({}));
    spread.metadata.annotations = Some([("cronshard.io/spread".to_owned(), "10m".to_owned())].into());
    spread.metadata.labels = Some([("team".to_owned(), "b".to_owned())].into());
    create_cronjob(&client, &ns, &spread).await;
    the_plugin_shows_every_cronjob(&admin, &ns, &every_minute).await;

    wait_until("a Job of every-minute, created by the container", Duration::from_secs(90), || async {
        jobs(&client, &ns)
            .await
            .into_iter()
            .find(|j| j.metadata.name.as_deref().is_some_and(|n| n.starts_with("every-minute-")))
    })
    .await;

    let asked = Instant::now();
    let code = common::terminate_within(&mut container, GRACE);
    assert_eq!(code, Some(0), "the container exits 0 on SIGTERM within {GRACE:?}");
    let stopped = asked.elapsed();
    let released = holders(&leases).await;
    assert!(released.is_empty(), "every bucket handed back on SIGTERM, {stopped:?} after it: {released:?}");
    let _ = writeln!(
        std::io::stderr(),
        "the container: ready with {BUCKETS} buckets {ready:.1?} after podman run; exited {stopped:.1?} after SIGTERM"
    );
}

/// `kubectl cronshard get` in each of kubectl's ways to name the cluster and the namespace.
async fn the_plugin_shows_every_cronjob(admin: &Path, ns: &str, every_minute: &k8s_openapi::api::batch::v1::CronJob) {
    let kubeconfig = admin.to_str().expect("utf-8");
    let all = kubectl_cronshard(&["get", "-A", "--kubeconfig", kubeconfig], &[]);
    let listed = rows(&all);
    assert_eq!(listed.len(), 3, "{all}");
    let count = NonZeroU32::new(BUCKETS).expect("count");
    for row in &listed {
        assert!(row["NEXT"].starts_with("in "), "NEXT for every CronJob: {all}");
        assert_eq!(row["REPLICA"], IDENTITY, "{all}");
        assert_eq!(row["NAMESPACE"], ns, "{all}");
    }
    let minute = listed.iter().find(|r| r["NAME"] == "every-minute").expect("every-minute row");
    let uid = every_minute.metadata.uid.as_deref().expect("uid");
    assert_eq!(minute["BUCKET"], cronshard_types::bucket_of_uid(uid, count).to_string(), "{all}");
    let zoned = listed.iter().find(|r| r["NAME"] == "zoned").expect("zoned row");
    assert_eq!((zoned["TIMEZONE"].as_str(), zoned["SUSPEND"].as_str()), ("America/New_York", "True"), "{all}");

    // KUBECONFIG and --context instead of --kubeconfig; -n and -l narrow the list.
    let by_env =
        kubectl_cronshard(&["get", "-n", ns, "-l", "team=b", "--context", "testbed"], &[("KUBECONFIG", admin)]);
    let narrowed = rows(&by_env);
    assert_eq!(narrowed.len(), 1, "{by_env}");
    assert_eq!(narrowed[0]["NAME"], "spread", "{by_env}");
    assert!(!by_env.contains("NAMESPACE"), "{by_env}");
    let status = kubectl_cronshard(&["status", "-n", "cronshard"], &[("KUBECONFIG", admin)]);
    assert!(status.contains(IDENTITY) && status.contains("bucket function uid"), "{status}");
}
