//! A pod template's types other than volumes, field by field as Go writes them (see the
//! parent module).

use k8s_pb::api::core::v1 as core;

use super::message;

// `workloadRef` (tag 42) was Kubernetes 1.35's alpha field; 1.37 has no such field and
// skips it on the wire, as this does.
message! { core::PodSpec {
    volumes: Omit "volumes",
    init_containers: Omit "initContainers",
    containers: Req "containers",
    ephemeral_containers: Omit "ephemeralContainers",
    restart_policy: Omit "restartPolicy",
    termination_grace_period_seconds: Opt "terminationGracePeriodSeconds",
    active_deadline_seconds: Opt "activeDeadlineSeconds",
    dns_policy: Omit "dnsPolicy",
    node_selector: Omit "nodeSelector",
    service_account_name: Omit "serviceAccountName",
    service_account: Omit "serviceAccount",
    automount_service_account_token: Opt "automountServiceAccountToken",
    node_name: Omit "nodeName",
    host_network: Omit "hostNetwork",
    host_pid: Omit "hostPID",
    host_ipc: Omit "hostIPC",
    share_process_namespace: Opt "shareProcessNamespace",
    security_context: Opt "securityContext",
    image_pull_secrets: Omit "imagePullSecrets",
    hostname: Omit "hostname",
    subdomain: Omit "subdomain",
    affinity: Opt "affinity",
    scheduler_name: Omit "schedulerName",
    tolerations: Omit "tolerations",
    host_aliases: Omit "hostAliases",
    priority_class_name: Omit "priorityClassName",
    priority: Opt "priority",
    dns_config: Opt "dnsConfig",
    readiness_gates: Omit "readinessGates",
    runtime_class_name: Opt "runtimeClassName",
    enable_service_links: Opt "enableServiceLinks",
    preemption_policy: Opt "preemptionPolicy",
    overhead: Omit "overhead",
    topology_spread_constraints: Omit "topologySpreadConstraints",
    set_hostname_as_fqdn: Opt "setHostnameAsFQDN",
    os: Opt "os",
    host_users: Opt "hostUsers",
    scheduling_gates: Omit "schedulingGates",
    resource_claims: Omit "resourceClaims",
    resources: Opt "resources",
    hostname_override: Opt "hostnameOverride",
} skip { workload_ref } }
message! { core::ResourceRequirements {
    limits: Omit "limits",
    requests: Omit "requests",
    claims: Omit "claims",
} }
message! { core::ResourceClaim {
    name: Req "name",
    request: Omit "request",
} }
message! { core::PodResourceClaim {
    name: Req "name",
    resource_claim_name: Opt "resourceClaimName",
    resource_claim_template_name: Opt "resourceClaimTemplateName",
} }
message! { core::PodSchedulingGate {
    name: Req "name",
} }
message! { core::PodOs {
    name: Req "name",
} }
message! { core::TopologySpreadConstraint {
    max_skew: Req "maxSkew",
    topology_key: Req "topologyKey",
    when_unsatisfiable: Req "whenUnsatisfiable",
    label_selector: Opt "labelSelector",
    min_domains: Opt "minDomains",
    node_affinity_policy: Opt "nodeAffinityPolicy",
    node_taints_policy: Opt "nodeTaintsPolicy",
    match_label_keys: Omit "matchLabelKeys",
} }
message! { core::PodReadinessGate {
    condition_type: Req "conditionType",
} }
message! { core::PodDnsConfig {
    nameservers: Omit "nameservers",
    searches: Omit "searches",
    options: Omit "options",
} }
message! { core::PodDnsConfigOption {
    name: Omit "name",
    value: Opt "value",
} }
message! { core::HostAlias {
    ip: Req "ip",
    hostnames: Omit "hostnames",
} }
message! { core::Toleration {
    key: Omit "key",
    operator: Omit "operator",
    value: Omit "value",
    effect: Omit "effect",
    toleration_seconds: Opt "tolerationSeconds",
} }
message! { core::Affinity {
    node_affinity: Opt "nodeAffinity",
    pod_affinity: Opt "podAffinity",
    pod_anti_affinity: Opt "podAntiAffinity",
} }
message! { core::PodAntiAffinity {
    required_during_scheduling_ignored_during_execution: Omit "requiredDuringSchedulingIgnoredDuringExecution",
    preferred_during_scheduling_ignored_during_execution: Omit "preferredDuringSchedulingIgnoredDuringExecution",
} }
message! { core::WeightedPodAffinityTerm {
    weight: Req "weight",
    pod_affinity_term: Req "podAffinityTerm",
} }
message! { core::PodAffinityTerm {
    label_selector: Opt "labelSelector",
    namespaces: Omit "namespaces",
    topology_key: Req "topologyKey",
    namespace_selector: Opt "namespaceSelector",
    match_label_keys: Omit "matchLabelKeys",
    mismatch_label_keys: Omit "mismatchLabelKeys",
} }
message! { core::PodAffinity {
    required_during_scheduling_ignored_during_execution: Omit "requiredDuringSchedulingIgnoredDuringExecution",
    preferred_during_scheduling_ignored_during_execution: Omit "preferredDuringSchedulingIgnoredDuringExecution",
} }
message! { core::NodeAffinity {
    required_during_scheduling_ignored_during_execution: Opt "requiredDuringSchedulingIgnoredDuringExecution",
    preferred_during_scheduling_ignored_during_execution: Omit "preferredDuringSchedulingIgnoredDuringExecution",
} }
message! { core::PreferredSchedulingTerm {
    weight: Req "weight",
    preference: Req "preference",
} }
message! { core::NodeSelectorTerm {
    match_expressions: Omit "matchExpressions",
    match_fields: Omit "matchFields",
} }
message! { core::NodeSelectorRequirement {
    key: Req "key",
    operator: Req "operator",
    values: Omit "values",
} }
message! { core::NodeSelector {
    node_selector_terms: Req "nodeSelectorTerms",
} }
message! { core::LocalObjectReference {
    name: Omit "name",
} }
message! { core::PodSecurityContext {
    se_linux_options: Opt "seLinuxOptions",
    windows_options: Opt "windowsOptions",
    run_as_user: Opt "runAsUser",
    run_as_group: Opt "runAsGroup",
    run_as_non_root: Opt "runAsNonRoot",
    supplemental_groups: Omit "supplementalGroups",
    supplemental_groups_policy: Opt "supplementalGroupsPolicy",
    fs_group: Opt "fsGroup",
    sysctls: Omit "sysctls",
    fs_group_change_policy: Opt "fsGroupChangePolicy",
    seccomp_profile: Opt "seccompProfile",
    app_armor_profile: Opt "appArmorProfile",
    se_linux_change_policy: Opt "seLinuxChangePolicy",
} }
message! { core::AppArmorProfile {
    r#type: Req "type",
    localhost_profile: Opt "localhostProfile",
} }
message! { core::SeccompProfile {
    r#type: Req "type",
    localhost_profile: Opt "localhostProfile",
} }
message! { core::Sysctl {
    name: Req "name",
    value: Req "value",
} }
message! { core::WindowsSecurityContextOptions {
    gmsa_credential_spec_name: Opt "gmsaCredentialSpecName",
    gmsa_credential_spec: Opt "gmsaCredentialSpec",
    run_as_user_name: Opt "runAsUserName",
    host_process: Opt "hostProcess",
} }
message! { core::SeLinuxOptions {
    user: Omit "user",
    role: Omit "role",
    r#type: Omit "type",
    level: Omit "level",
} }
message! { core::EphemeralContainer {
    ephemeral_container_common: Inline "",
    target_container_name: Omit "targetContainerName",
} }
message! { core::EphemeralContainerCommon {
    name: Req "name",
    image: Omit "image",
    command: Omit "command",
    args: Omit "args",
    working_dir: Omit "workingDir",
    ports: Omit "ports",
    env_from: Omit "envFrom",
    env: Omit "env",
    resources: Req "resources",
    resize_policy: Omit "resizePolicy",
    restart_policy: Opt "restartPolicy",
    restart_policy_rules: Omit "restartPolicyRules",
    volume_mounts: Omit "volumeMounts",
    volume_devices: Omit "volumeDevices",
    liveness_probe: Opt "livenessProbe",
    readiness_probe: Opt "readinessProbe",
    startup_probe: Opt "startupProbe",
    lifecycle: Opt "lifecycle",
    termination_message_path: Omit "terminationMessagePath",
    termination_message_policy: Omit "terminationMessagePolicy",
    image_pull_policy: Omit "imagePullPolicy",
    security_context: Opt "securityContext",
    stdin: Omit "stdin",
    stdin_once: Omit "stdinOnce",
    tty: Omit "tty",
} }
message! { core::SecurityContext {
    capabilities: Opt "capabilities",
    privileged: Opt "privileged",
    se_linux_options: Opt "seLinuxOptions",
    windows_options: Opt "windowsOptions",
    run_as_user: Opt "runAsUser",
    run_as_group: Opt "runAsGroup",
    run_as_non_root: Opt "runAsNonRoot",
    read_only_root_filesystem: Opt "readOnlyRootFilesystem",
    allow_privilege_escalation: Opt "allowPrivilegeEscalation",
    proc_mount: Opt "procMount",
    seccomp_profile: Opt "seccompProfile",
    app_armor_profile: Opt "appArmorProfile",
} }
message! { core::Capabilities {
    add: Omit "add",
    drop: Omit "drop",
} }
message! { core::Lifecycle {
    post_start: Opt "postStart",
    pre_stop: Opt "preStop",
    stop_signal: Opt "stopSignal",
} }
message! { core::LifecycleHandler {
    exec: Opt "exec",
    http_get: Opt "httpGet",
    tcp_socket: Opt "tcpSocket",
    sleep: Opt "sleep",
} }
message! { core::SleepAction {
    seconds: Req "seconds",
} }
message! { core::TcpSocketAction {
    port: Req "port",
    host: Omit "host",
} }
message! { core::HttpGetAction {
    path: Omit "path",
    port: Req "port",
    host: Omit "host",
    scheme: Omit "scheme",
    http_headers: Omit "httpHeaders",
} }
message! { core::HttpHeader {
    name: Req "name",
    value: Req "value",
} }
message! { core::ExecAction {
    command: Omit "command",
} }
message! { core::Probe {
    handler: Inline "",
    initial_delay_seconds: Omit "initialDelaySeconds",
    timeout_seconds: Omit "timeoutSeconds",
    period_seconds: Omit "periodSeconds",
    success_threshold: Omit "successThreshold",
    failure_threshold: Omit "failureThreshold",
    termination_grace_period_seconds: Opt "terminationGracePeriodSeconds",
} }
message! { core::ProbeHandler {
    exec: Opt "exec",
    http_get: Opt "httpGet",
    tcp_socket: Opt "tcpSocket",
    grpc: Opt "grpc",
} }
message! { core::GrpcAction {
    port: Req "port",
    service: Opt "service",
} }
message! { core::VolumeDevice {
    name: Req "name",
    device_path: Req "devicePath",
} }
message! { core::VolumeMount {
    name: Req "name",
    read_only: Omit "readOnly",
    recursive_read_only: Opt "recursiveReadOnly",
    mount_path: Req "mountPath",
    sub_path: Omit "subPath",
    mount_propagation: Opt "mountPropagation",
    sub_path_expr: Omit "subPathExpr",
} }
message! { core::ContainerRestartRule {
    action: Omit "action",
    exit_codes: Opt "exitCodes",
} }
message! { core::ContainerRestartRuleOnExitCodes {
    operator: Omit "operator",
    values: Omit "values",
} }
message! { core::ContainerResizePolicy {
    resource_name: Req "resourceName",
    restart_policy: Req "restartPolicy",
} }
message! { core::EnvVar {
    name: Req "name",
    value: Omit "value",
    value_from: Opt "valueFrom",
} }
message! { core::EnvVarSource {
    field_ref: Opt "fieldRef",
    resource_field_ref: Opt "resourceFieldRef",
    config_map_key_ref: Opt "configMapKeyRef",
    secret_key_ref: Opt "secretKeyRef",
    file_key_ref: Opt "fileKeyRef",
} }
message! { core::FileKeySelector {
    volume_name: Req "volumeName",
    path: Req "path",
    key: Req "key",
    optional: Opt "optional",
} }
message! { core::SecretKeySelector {
    local_object_reference: Inline "",
    key: Req "key",
    optional: Opt "optional",
} }
message! { core::ConfigMapKeySelector {
    local_object_reference: Inline "",
    key: Req "key",
    optional: Opt "optional",
} }
message! { core::ResourceFieldSelector {
    container_name: Omit "containerName",
    resource: Req "resource",
    divisor: Req "divisor",
} }
message! { core::ObjectFieldSelector {
    api_version: Omit "apiVersion",
    field_path: Req "fieldPath",
} }
message! { core::EnvFromSource {
    prefix: Omit "prefix",
    config_map_ref: Opt "configMapRef",
    secret_ref: Opt "secretRef",
} }
message! { core::SecretEnvSource {
    local_object_reference: Inline "",
    optional: Opt "optional",
} }
message! { core::ConfigMapEnvSource {
    local_object_reference: Inline "",
    optional: Opt "optional",
} }
message! { core::ContainerPort {
    name: Omit "name",
    host_port: Omit "hostPort",
    container_port: Req "containerPort",
    protocol: Omit "protocol",
    host_ip: Omit "hostIP",
} }
message! { core::Container {
    name: Req "name",
    image: Omit "image",
    command: Omit "command",
    args: Omit "args",
    working_dir: Omit "workingDir",
    ports: Omit "ports",
    env_from: Omit "envFrom",
    env: Omit "env",
    resources: Req "resources",
    resize_policy: Omit "resizePolicy",
    restart_policy: Opt "restartPolicy",
    restart_policy_rules: Omit "restartPolicyRules",
    volume_mounts: Omit "volumeMounts",
    volume_devices: Omit "volumeDevices",
    liveness_probe: Opt "livenessProbe",
    readiness_probe: Opt "readinessProbe",
    startup_probe: Opt "startupProbe",
    lifecycle: Opt "lifecycle",
    termination_message_path: Omit "terminationMessagePath",
    termination_message_policy: Omit "terminationMessagePolicy",
    image_pull_policy: Omit "imagePullPolicy",
    security_context: Opt "securityContext",
    stdin: Omit "stdin",
    stdin_once: Omit "stdinOnce",
    tty: Omit "tty",
} }
