//! The chart on a real kube-apiserver: `helm install` with every optional object (the
//! ServiceMonitor and PrometheusRule against prometheus-operator's published CRDs) passes real
//! validation; `helm upgrade` that changes `buckets` or `bucketFunction` is refused; and
//! `cronshard run` with the chart's service-account token, under the real RBAC authorizer, is
//! forbidden nothing while it labels, runs, writes status, records Events, cleans up history
//! and holds Leases, while with any one of the chart's rules removed it is refused something.

mod common;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::real::{
    Cluster, Options, Testbed, create_cronjob, create_owned_job, cronjob, event_reasons, jobs, minute_of, now_seconds,
    replica, rfc3339, set_cronjob_status, wait_until,
};
use common::{http, terminate, tool, workspace};
use k8s_openapi::api::rbac::v1::{ClusterRole, Role};
use kube::api::{Api, PostParams};
use serde_json::json;

fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    let mut all = vec!["--kubeconfig", kubeconfig.to_str().expect("utf-8")];
    all.extend(args);
    tool("kubectl", &all)
}

fn helm(kubeconfig: &Path, args: &[&str]) -> Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--kubeconfig", kubeconfig.to_str().expect("utf-8")]);
    tool("helm", &all)
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

const INSTALL: [&str; 14] = [
    "cronshard",
    "charts/cronshard",
    "--namespace",
    "cronshard",
    "--create-namespace",
    "--set",
    "serviceMonitor.enabled=true",
    "--set",
    "prometheusRule.enabled=true",
    "--set",
    "dashboard.enabled=true",
    "--set",
    "flowSchema.enabled=true",
    "--wait=false",
];

/// Seeds a namespace with a CronJob whose run is overdue (it starts at once: a Job create, a
/// status write, an Event), two finished runs beyond its history limit (a delete) and an
/// unlabelled earlier run (the Job labelling pass patches it); the CronJob itself is
/// unlabelled (the CronJob labeller patches it).
async fn seed(testbed: &Testbed, client: &kube::Client, prefix: &str) -> String {
    let ns = testbed.namespace(prefix).await;
    let minute = minute_of(now_seconds());
    let spec = json!({"successfulJobsHistoryLimit": 1});
    let cj = create_cronjob(client, &ns, &cronjob("overdue", "* * * * *", spec)).await;
    for age in [9, 8] {
        create_owned_job(client, &cj, &format!("overdue-{}", minute - age), &[]).await;
    }
    set_cronjob_status(client, &ns, "overdue", json!({"lastScheduleTime": rfc3339((minute - 5) * 60)})).await;
    ns
}

/// Whether the replica was refused anything: a 403 in its request metrics or its log.
fn forbidden(metrics_text: &str, log: &Path) -> bool {
    let refused =
        metrics_text.lines().any(|l| l.starts_with("cronshard_api_requests_total") && l.contains("code=\"403\""));
    refused || std::fs::read_to_string(log).unwrap_or_default().contains("forbidden")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chart_installs_and_its_rbac_is_exactly_enough_on_a_real_server() {
    let options = Options { cluster: Some(Cluster::default()), ..Options::default() };
    let testbed = tokio::task::spawn_blocking(move || Testbed::shared(&options)).await.expect("testbed");
    let admin = testbed.admin_kubeconfig();
    let client = testbed.client().await;
    install_monitoring_crds(&admin);
    let out = helm(&admin, &[&["install"][..], &INSTALL].concat());
    assert!(out.status.success(), "helm install on a real server: {}", text(&out));
    let out = kubectl(
        &admin,
        &[
            "get",
            "-n",
            "cronshard",
            "deployment,serviceaccount,role,rolebinding,service,poddisruptionbudget,servicemonitor,prometheusrule,configmap",
            "-o",
            "name",
        ],
    );
    let listed = text(&out);
    for object in [
        "deployment.apps/cronshard",
        "serviceaccount/cronshard",
        "servicemonitor.monitoring.coreos.com/cronshard",
        "prometheusrule.monitoring.coreos.com/cronshard",
    ] {
        assert!(listed.contains(object), "{object} was not created: {listed}");
    }
    // Count and function are fixed for a running deployment: an upgrade changing either fails.
    for (change, refusal) in [
        ("buckets=128", "changing the bucket count of a deployment is not supported"),
        ("bucketFunction=name", "maps CronJobs to buckets by uid and this upgrade asks for name"),
    ] {
        let mut upgrade = vec!["upgrade"];
        upgrade.extend(INSTALL.iter().filter(|a| **a != "--create-namespace"));
        upgrade.extend(["--set", change]);
        let out = helm(&admin, &upgrade);
        assert!(!out.status.success(), "an upgrade with {change} is refused");
        assert!(text(&out).contains(refusal), "{}", text(&out));
    }
    the_chart_rbac_is_enough(testbed, &client).await;
    each_rule_is_needed(testbed, &client).await;
}

/// The prometheus-operator CRDs the chart's ServiceMonitor and PrometheusRule need.
fn install_monitoring_crds(admin: &Path) {
    let crds = std::process::Command::new(workspace().join("scripts/kube-testbed"))
        .arg("monitoring-crds")
        .output()
        .expect("kube-testbed monitoring-crds");
    assert!(crds.status.success(), "{}", text(&crds));
    for crd in String::from_utf8_lossy(&crds.stdout).lines() {
        let out = kubectl(admin, &["apply", "--server-side", "-f", crd]);
        assert!(out.status.success(), "{}", text(&out));
    }
    let established = [
        "wait",
        "--for",
        "condition=Established",
        "crd/servicemonitors.monitoring.coreos.com",
        "crd/prometheusrules.monitoring.coreos.com",
        "--timeout",
        "60s",
    ];
    let out = kubectl(admin, &established);
    assert!(out.status.success(), "{}", text(&out));
}

const REPLICA_ARGS: [&str; 6] = ["--namespace", "cronshard", "--buckets", "64", "--join-grace", "1s"];

/// The whole scenario under the chart's RBAC: nothing forbidden.
async fn the_chart_rbac_is_enough(testbed: &Testbed, client: &kube::Client) {
    let sa = testbed.cronshard_kubeconfig();
    let ns = seed(testbed, client, "rbac").await;
    let log = testbed.dir().join("rbac-full.log");
    let (mut run, metrics) = replica(&sa, "rbac-full", &REPLICA_ARGS, &log);
    wait_until("the overdue run, its status, its Events and the cleanup", Duration::from_secs(60), || async {
        let all = jobs(client, &ns).await;
        let labelled =
            all.iter().all(|j| j.metadata.labels.as_ref().is_some_and(|l| l.contains_key("cronshard.io/bucket")));
        let reasons = event_reasons(client, &ns, "overdue").await;
        let status = common::real::get_cronjob(client, &ns, "overdue").await.status?;
        (labelled
            && all.len() <= 2
            && reasons.iter().any(|r| r == "SuccessfulDelete")
            && reasons.iter().any(|r| r == "SuccessfulCreate")
            && status.last_successful_time.is_some())
        .then_some(())
    })
    .await;
    let metrics_text = http("GET", &format!("{metrics}/metrics"), None);
    assert!(!forbidden(&metrics_text, &log), "the chart's RBAC refused something; log: {}", log.display());
    assert_eq!(terminate(&mut run), Some(0), "SIGTERM: Leases released and the member Lease deleted");
    assert!(!std::fs::read_to_string(&log).unwrap_or_default().contains("forbidden"), "shutdown was refused something");
}

/// Without any one rule, the same scenario is refused something.
async fn each_rule_is_needed(testbed: &Testbed, client: &kube::Client) {
    let sa = testbed.cronshard_kubeconfig();
    let cluster_roles: Api<ClusterRole> = Api::all(client.clone());
    let roles: Api<Role> = Api::namespaced(client.clone(), "cronshard");
    let cluster_rules = cluster_roles.get("cronshard").await.expect("clusterrole").rules.unwrap_or_default();
    let role_rules = roles.get("cronshard").await.expect("role").rules.unwrap_or_default();
    for drop in 0..cluster_rules.len() + role_rules.len() {
        let without = |rules: &[k8s_openapi::api::rbac::v1::PolicyRule], offset: usize| {
            rules.iter().enumerate().filter(|(i, _)| i + offset != drop).map(|(_, r)| r.clone()).collect::<Vec<_>>()
        };
        set_rules(&cluster_roles, &roles, without(&cluster_rules, 0), without(&role_rules, cluster_rules.len())).await;
        let ns = seed(testbed, client, "rbac-drop").await;
        let log = testbed.dir().join(format!("rbac-drop-{drop}.log"));
        let (mut run, metrics) = replica(&sa, &format!("rbac-drop-{drop}"), &REPLICA_ARGS, &log);
        wait_until(&format!("a 403 without rule {drop}"), Duration::from_secs(60), || async {
            let metrics_text = http("GET", &format!("{metrics}/metrics"), None);
            forbidden(&metrics_text, &log).then_some(())
        })
        .await;
        let _ = terminate(&mut run);
        drop_namespace(client, &ns).await;
        set_rules(&cluster_roles, &roles, cluster_rules.clone(), role_rules.clone()).await;
    }
}

async fn set_rules(
    cluster_roles: &Api<ClusterRole>,
    roles: &Api<Role>,
    cluster_rules: Vec<k8s_openapi::api::rbac::v1::PolicyRule>,
    role_rules: Vec<k8s_openapi::api::rbac::v1::PolicyRule>,
) {
    let mut cluster_role = cluster_roles.get("cronshard").await.expect("clusterrole");
    cluster_role.rules = Some(cluster_rules);
    cluster_roles.replace("cronshard", &PostParams::default(), &cluster_role).await.expect("replace clusterrole");
    let mut role = roles.get("cronshard").await.expect("role");
    role.rules = Some(role_rules);
    roles.replace("cronshard", &PostParams::default(), &role).await.expect("replace role");
}

/// Removes a namespace's CronJobs so that later replicas do not work on them.
async fn drop_namespace(client: &kube::Client, ns: &str) {
    let cronjobs: Api<k8s_openapi::api::batch::v1::CronJob> = Api::namespaced(client.clone(), ns);
    let _ = cronjobs.delete_collection(&Default::default(), &Default::default()).await;
}
