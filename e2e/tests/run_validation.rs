//! `cronshard run` refuses bad settings at start with exit code 2 and a message naming the
//! flag, without a single request to the server; a missing namespace is refused at once; logs
//! are plain text on a pipe, or JSON by flag.

mod common;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::process::Command;

fn kubeconfig(dir: &std::path::Path, server: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\nusers:\n- name: u\n  user:\n    \
         token: t\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n    namespace: default\ncurrent-context: c\n"
    );
    std::fs::write(&path, text).expect("kubeconfig");
    path
}

fn run(kubeconfig: &std::path::Path, extra: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(common::cronshard())
        .args(["run", "--kubeconfig", kubeconfig.to_str().expect("utf-8"), "--metrics-addr", "127.0.0.1:0"])
        .args(extra)
        .output()
        .expect("cronshard runs");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_settings_exit_2_before_any_request() {
    let dir = std::env::temp_dir().join(format!("cronshard-validation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    // A server that only counts connections: none may arrive.
    let server = TcpListener::bind("127.0.0.1:0").expect("bind");
    server.set_nonblocking(true).expect("nonblocking");
    let kubeconfig = kubeconfig(&dir, &format!("http://{}", server.local_addr().expect("addr")));
    let cases: [(&[&str], &str); 12] = [
        (&["--selector", "!!!=,,"], "--selector"),
        (&["--buckets", "4294967295"], "--buckets"),
        (&["--buckets", "4097"], "--buckets"),
        (&["--buckets", "0"], "--buckets"),
        (&["--qps", "NaN"], "--qps"),
        (&["--qps=-1"], "--qps"),
        (&["--deployment-qps=-5"], "--deployment-qps"),
        (&["--renew-period", "1ns"], "renew period"),
        (&["--lease-duration", "24000h"], "lease duration"),
        (&["--bucket-function", "crc"], "--bucket-function"),
        (&["--server-side-sharding", "maybe"], "--server-side-sharding"),
        (&["--server-side-sharding", "on", "--bucket-function", "name"], "--bucket-function uid"),
    ];
    for (args, names) in cases {
        let (code, stderr) = run(&kubeconfig, args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(names), "{args:?} names {names}: {stderr}");
    }
    match server.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("a request reached the server: {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_namespace_exits_2_at_once() {
    let dir = std::env::temp_dir().join(format!("cronshard-namespace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let kubeconfig = dir.join("sim.kubeconfig");
    let (mut sim, _url) =
        common::spawn_sim(&["--listen", "127.0.0.1:0", "--kubeconfig-out", kubeconfig.to_str().expect("utf-8")]);
    let (code, stderr) = run(&kubeconfig, &["--namespace", "does-not-exist", "--identity", "r1"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("namespace \"does-not-exist\" does not exist"), "{stderr}");
    // Logs on a pipe are plain text: no colour codes.
    assert!(stderr.contains("cronshard running") && !stderr.contains('\u{1b}'), "{stderr:?}");
    // Or JSON, one object per line, by flag.
    let (code, stderr) =
        run(&kubeconfig, &["--namespace", "does-not-exist", "--identity", "r1", "--log-format", "json"]);
    assert_eq!(code, Some(2), "{stderr}");
    let logs: Vec<&str> = stderr.lines().filter(|l| l.starts_with('{')).collect();
    assert!(!logs.is_empty(), "{stderr}");
    for line in logs {
        let record: serde_json::Value = serde_json::from_str(line).expect("a JSON log line");
        assert!(record["level"].is_string() && record["fields"].is_object(), "{line}");
    }
    assert_eq!(common::terminate(&mut sim), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn connection_errors_name_the_server() {
    use std::io::{BufRead, BufReader};
    let dir = std::env::temp_dir().join(format!("cronshard-unreachable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    // A port that refuses connections: bound, then closed.
    let port = TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let server = format!("http://127.0.0.1:{port}");
    let kubeconfig = kubeconfig(&dir, &server);
    let mut child = Command::new(common::cronshard())
        .args(["run", "--kubeconfig", kubeconfig.to_str().expect("utf-8"), "--metrics-addr", "127.0.0.1:0"])
        .args(["--identity", "r1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cronshard runs");
    // A watchdog, so a missing line fails the test instead of hanging it; it acts only while
    // the child is still unreaped (the test sets `done` before it kills and waits).
    let (pid, done) = (child.id(), std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)));
    let watching = done.clone();
    std::thread::spawn(move || {
        for _ in 0..600 {
            if watching.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = Command::new("sh").args(["-c", &format!("kill -9 {pid} 2>/dev/null")]).status();
    });
    let stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let failure = stderr
        .lines()
        .map_while(Result::ok)
        .find(|l| l.contains("cannot read or create Lease"))
        .expect("the failed request is logged");
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = child.kill();
    let _ = child.wait();
    assert!(failure.contains(&server), "{failure}");
    let _ = std::fs::remove_dir_all(&dir);
}
