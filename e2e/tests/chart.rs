//! The Helm chart: it renders (default and other values) into manifests that parse as
//! k8s-openapi types, the Deployment runs the binary with flags it has, `helm lint` (Helm's own
//! library, through helm-sdkpy) is clean, and the alert rules pass promtool's checks and unit
//! tests. (The RBAC proof is in chart_rbac.rs, the dashboard check in dashboard.rs.)

mod common;

use std::collections::BTreeSet;

use common::{render_chart, tool};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::flowcontrol::v1::FlowSchema;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde_json::Value;

const NONDEFAULT: &str = "charts/cronshard/ci/nondefault-values.yaml";

/// Parses a manifest as `T`, checking its apiVersion and kind are `T`'s.
fn typed<T: k8s_openapi::Resource + serde::de::DeserializeOwned>(doc: &Value) -> T {
    assert_eq!(doc["apiVersion"], T::API_VERSION, "{}", doc["metadata"]["name"]);
    serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{} {}: {e}", T::KIND, doc["metadata"]["name"]))
}

fn kinds(docs: &[Value]) -> BTreeSet<String> {
    docs.iter().map(|d| d["kind"].as_str().unwrap_or_default().to_owned()).collect()
}

fn deployment(docs: &[Value]) -> Deployment {
    typed(docs.iter().find(|d| d["kind"] == "Deployment").expect("a Deployment"))
}

/// Every manifest parses; CRD kinds (ServiceMonitor, PrometheusRule) are checked by shape.
fn parse_all(docs: &[Value]) {
    for doc in docs {
        match doc["kind"].as_str().unwrap_or_default() {
            "Deployment" => drop(typed::<Deployment>(doc)),
            "ServiceAccount" => drop(typed::<ServiceAccount>(doc)),
            "ClusterRole" => drop(typed::<ClusterRole>(doc)),
            "ClusterRoleBinding" => drop(typed::<ClusterRoleBinding>(doc)),
            "Role" => drop(typed::<Role>(doc)),
            "RoleBinding" => drop(typed::<RoleBinding>(doc)),
            "Service" => drop(typed::<Service>(doc)),
            "ConfigMap" => drop(typed::<ConfigMap>(doc)),
            "PodDisruptionBudget" => drop(typed::<PodDisruptionBudget>(doc)),
            "FlowSchema" => drop(typed::<FlowSchema>(doc)),
            "ServiceMonitor" => {
                assert_eq!(doc["apiVersion"], "monitoring.coreos.com/v1");
                assert_eq!(doc["spec"]["endpoints"][0]["port"], "metrics");
            }
            "PrometheusRule" => {
                assert_eq!(doc["apiVersion"], "monitoring.coreos.com/v1");
                let file: Value = serde_yaml_ng::from_str(
                    &std::fs::read_to_string(common::workspace().join("charts/cronshard/files/alerts.yaml"))
                        .expect("alerts.yaml"),
                )
                .expect("alerts.yaml is YAML");
                assert_eq!(doc["spec"]["groups"], file["groups"], "the PrometheusRule carries the tested rules");
            }
            other => panic!("unexpected kind {other} in the chart"),
        }
    }
}

#[test]
fn the_chart_renders_into_kubernetes_types_with_default_and_other_values() {
    let defaults = render_chart(&[]);
    parse_all(&defaults);
    let expected = [
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "FlowSchema",
        "PodDisruptionBudget",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ];
    assert_eq!(kinds(&defaults), expected.iter().map(|k| (*k).to_owned()).collect());

    let other = render_chart(&[NONDEFAULT]);
    parse_all(&other);
    let other_kinds = kinds(&other);
    assert!(other_kinds.contains("ServiceMonitor") && other_kinds.contains("PrometheusRule"));
    assert!(!other_kinds.contains("FlowSchema") && !other_kinds.contains("ServiceAccount"));
    let d = deployment(&other);
    let spec = d.spec;
    assert_eq!(spec.replicas, Some(5));
    let pod = spec.template.spec.expect("pod spec");
    assert_eq!(pod.service_account_name.as_deref(), Some("cronshard-existing"));
    let args = pod.containers[0].args.clone().unwrap_or_default();
    assert!(args.iter().any(|a| a == "--selector=cronshard.io/managed=true"), "{args:?}");
    assert!(args.iter().any(|a| a == "--fixed-rate"), "{args:?}");
}

#[test]
fn the_deployment_is_hardened_and_runs_the_binary_with_flags_it_has() {
    let d = deployment(&render_chart(&[]));
    let spec = d.spec;
    let strategy = spec.strategy.and_then(|s| s.rolling_update).expect("rolling update");
    // A new pod joins before an old one leaves: within the join grace it inherits the old
    // pod's buckets (each bucket moves once in a rollout).
    assert_eq!(serde_json::to_value(strategy.max_surge).expect("json"), 1);
    assert_eq!(serde_json::to_value(strategy.max_unavailable).expect("json"), 0);
    let pod = spec.template.spec.expect("pod spec");
    assert!(pod.termination_grace_period_seconds.expect("grace") > 25, "longer than the 25 s handover");
    let c = &pod.containers[0];
    let sc = c.security_context.clone().expect("container securityContext");
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(sc.run_as_non_root, Some(true));
    let seccomp = sc
        .seccomp_profile
        .or_else(|| pod.security_context.clone().and_then(|p| p.seccomp_profile))
        .expect("seccomp profile");
    assert_eq!(seccomp.type_, "RuntimeDefault");
    let path = |p: &Option<k8s_openapi::api::core::v1::Probe>| {
        p.as_ref().and_then(|p| p.http_get.as_ref()).and_then(|h| h.path.clone())
    };
    assert_eq!(path(&c.liveness_probe).as_deref(), Some("/healthz"));
    assert_eq!(path(&c.readiness_probe).as_deref(), Some("/readyz"));
    let env: BTreeSet<String> = c.env.iter().flatten().map(|e| e.name.clone()).collect();
    assert!(env.contains("POD_NAME") && env.contains("POD_NAMESPACE"));

    let args = c.args.clone().unwrap_or_default();
    assert_eq!(args.first().map(String::as_str), Some("run"), "{args:?}");
    assert!(!args.iter().any(|a| a == "--fixed-rate"), "the rate adapts by default: {args:?}");
    let out = std::process::Command::new(common::cronshard()).args(["run", "--help"]).output().expect("help");
    let help = String::from_utf8_lossy(&out.stdout);
    for arg in &args[1..] {
        let flag = arg.split('=').next().unwrap_or_default();
        assert!(
            help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
            "{flag} is not a flag of `cronshard run`"
        );
    }
}

#[test]
fn helm_lint_is_clean_through_helms_own_library() {
    for extra in [&[][..], &["--values", NONDEFAULT][..]] {
        let mut args = vec!["scripts/helm_lint.py", "charts/cronshard"];
        args.extend_from_slice(extra);
        let out = tool("python3", &args);
        assert!(
            out.status.success(),
            "helm lint {extra:?}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_alert_rules_pass_promtool_checks_and_unit_tests() {
    for args in [
        &["check", "rules", "charts/cronshard/files/alerts.yaml"][..],
        &["test", "rules", "charts/cronshard/files/alerts_test.yaml"][..],
    ] {
        let out = tool("promtool", args);
        assert!(
            out.status.success(),
            "promtool {args:?}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn shadow_mode_renders_one_read_only_pod_with_no_write_verb() {
    let docs = render_chart(&["charts/cronshard/ci/shadow-values.yaml"]);
    parse_all(&docs);
    let found = kinds(&docs);
    for absent in ["Role", "RoleBinding", "FlowSchema", "PodDisruptionBudget", "PrometheusRule"] {
        assert!(!found.contains(absent), "{absent} is for the controller, not shadow mode: {found:?}");
    }
    let role: ClusterRole = typed(docs.iter().find(|d| d["kind"] == "ClusterRole").expect("a ClusterRole"));
    let rules = role.rules.unwrap_or_default();
    assert!(!rules.is_empty());
    for rule in &rules {
        for verb in &rule.verbs {
            assert!(["get", "list", "watch"].contains(&verb.as_str()), "write verb {verb} in {rule:?}");
        }
    }
    let covered: BTreeSet<&str> = rules.iter().flat_map(|r| r.resources.iter().flatten().map(String::as_str)).collect();
    assert_eq!(covered, BTreeSet::from(["cronjobs", "jobs", "namespaces"]));
    let spec = deployment(&docs).spec;
    assert_eq!(spec.replicas, Some(1), "one shadow process judges each run once");
    let args = spec.template.spec.expect("pod").containers[0].args.clone().unwrap_or_default();
    assert_eq!(args.first().map(String::as_str), Some("shadow"), "{args:?}");
    for expected in ["--late-after=30s", "--shard=1/4", "--selector=team=payments"] {
        assert!(args.iter().any(|a| a == expected), "{expected} in {args:?}");
    }
    let out = std::process::Command::new(common::cronshard()).args(["shadow", "--help"]).output().expect("help");
    let help = String::from_utf8_lossy(&out.stdout);
    for arg in &args[1..] {
        let flag = arg.split('=').next().unwrap_or_default();
        assert!(help.contains(&format!("{flag} ")), "{flag} is not a flag of `cronshard shadow`");
    }
}

/// What a release ships agrees: `helm package` makes the chart's archive, and the chart's
/// default image (`image.repository` and its appVersion) is the reference `scripts/image`
/// tags, whose version is the workspace's.
#[test]
fn the_release_artefacts_agree_and_the_chart_packages() {
    let root = common::workspace();
    let cargo = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let package = cargo.split("[workspace.package]").nth(1).expect("[workspace.package]");
    let version = package.lines().find_map(|l| l.strip_prefix("version = ")).expect("version").trim_matches('"');
    let read_yaml = |path: &str| -> Value {
        let text = std::fs::read_to_string(root.join(path)).expect(path);
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let chart = read_yaml("charts/cronshard/Chart.yaml");
    let values = read_yaml("charts/cronshard/values.yaml");
    assert_eq!(chart["appVersion"], version, "Chart.yaml appVersion is Cargo.toml's version");
    let out = std::process::Command::new(root.join("scripts/image")).arg("reference").output().expect("scripts/image");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reference = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let repository = values["image"]["repository"].as_str().expect("image.repository");
    assert_eq!(reference, format!("{repository}:{version}"), "the chart's default image is what scripts/image tags");
    assert_eq!(values["image"]["tag"], "", "the tag defaults to appVersion");

    let dir = std::env::temp_dir().join(format!("cronshard-package-{}", std::process::id()));
    let out = tool("helm", &["package", "charts/cronshard", "--destination", dir.to_str().expect("utf-8")]);
    assert!(out.status.success(), "helm package: {}", String::from_utf8_lossy(&out.stderr));
    let chart_version = chart["version"].as_str().expect("chart version");
    let archive = dir.join(format!("cronshard-{chart_version}.tgz"));
    assert!(archive.is_file(), "helm package wrote {}", archive.display());
    let out = tool("helm", &["show", "chart", archive.to_str().expect("utf-8")]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains(&format!("appVersion: {version}")), "the archive's Chart.yaml: {shown}");
    let _ = std::fs::remove_dir_all(&dir);
}
