//! The workload kinds served (CronJob, Job, Lease, both Events, Namespace) and the core
//! types they share, field by field as Go writes them (see the parent module).

use k8s_pb::api::batch::v1 as batch;
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::events::v1 as events;

use super::message;

message! { batch::Job {
    metadata: Req "metadata",
    spec: Req "spec",
    status: Req "status",
} }
message! { batch::JobStatus {
    conditions: Omit "conditions",
    start_time: Opt "startTime",
    completion_time: Opt "completionTime",
    active: Omit "active",
    succeeded: Omit "succeeded",
    failed: Omit "failed",
    terminating: Opt "terminating",
    completed_indexes: Omit "completedIndexes",
    failed_indexes: Opt "failedIndexes",
    uncounted_terminated_pods: Opt "uncountedTerminatedPods",
    ready: Opt "ready",
} }
message! { batch::UncountedTerminatedPods {
    succeeded: Omit "succeeded",
    failed: Omit "failed",
} }
message! { batch::JobCondition {
    r#type: Req "type",
    status: Req "status",
    last_probe_time: Req "lastProbeTime",
    last_transition_time: Req "lastTransitionTime",
    reason: Omit "reason",
    message: Omit "message",
} }
message! { batch::JobSpec {
    parallelism: Opt "parallelism",
    completions: Opt "completions",
    active_deadline_seconds: Opt "activeDeadlineSeconds",
    pod_failure_policy: Opt "podFailurePolicy",
    success_policy: Opt "successPolicy",
    backoff_limit: Opt "backoffLimit",
    backoff_limit_per_index: Opt "backoffLimitPerIndex",
    max_failed_indexes: Opt "maxFailedIndexes",
    selector: Opt "selector",
    manual_selector: Opt "manualSelector",
    template: Req "template",
    ttl_seconds_after_finished: Opt "ttlSecondsAfterFinished",
    completion_mode: Opt "completionMode",
    suspend: Opt "suspend",
    pod_replacement_policy: Opt "podReplacementPolicy",
    managed_by: Opt "managedBy",
} }
message! { batch::SuccessPolicy {
    rules: Req "rules",
} }
message! { batch::SuccessPolicyRule {
    succeeded_indexes: Opt "succeededIndexes",
    succeeded_count: Opt "succeededCount",
} }
message! { batch::PodFailurePolicy {
    rules: Req "rules",
} }
message! { batch::PodFailurePolicyRule {
    action: Req "action",
    on_exit_codes: Opt "onExitCodes",
    on_pod_conditions: Omit "onPodConditions",
} }
message! { batch::PodFailurePolicyOnPodConditionsPattern {
    r#type: Req "type",
    status: Req "status",
} }
message! { batch::PodFailurePolicyOnExitCodesRequirement {
    container_name: Opt "containerName",
    operator: Req "operator",
    values: Req "values",
} }
message! { batch::CronJob {
    metadata: Req "metadata",
    spec: Req "spec",
    status: Req "status",
} }
message! { batch::CronJobStatus {
    active: Omit "active",
    last_schedule_time: Opt "lastScheduleTime",
    last_successful_time: Opt "lastSuccessfulTime",
} }
message! { batch::CronJobSpec {
    schedule: Req "schedule",
    time_zone: Opt "timeZone",
    starting_deadline_seconds: Opt "startingDeadlineSeconds",
    concurrency_policy: Omit "concurrencyPolicy",
    suspend: Opt "suspend",
    job_template: Req "jobTemplate",
    successful_jobs_history_limit: Opt "successfulJobsHistoryLimit",
    failed_jobs_history_limit: Opt "failedJobsHistoryLimit",
} }
message! { batch::JobTemplateSpec {
    metadata: Req "metadata",
    spec: Req "spec",
} }
message! { coordination::Lease {
    metadata: Req "metadata",
    spec: Req "spec",
} }
message! { coordination::LeaseSpec {
    holder_identity: Opt "holderIdentity",
    lease_duration_seconds: Opt "leaseDurationSeconds",
    acquire_time: Opt "acquireTime",
    renew_time: Opt "renewTime",
    lease_transitions: Opt "leaseTransitions",
    strategy: Opt "strategy",
    preferred_holder: Opt "preferredHolder",
} }
message! { core::Event {
    metadata: Req "metadata",
    involved_object: Req "involvedObject",
    reason: Omit "reason",
    message: Omit "message",
    source: Req "source",
    first_timestamp: Req "firstTimestamp",
    last_timestamp: Req "lastTimestamp",
    count: Omit "count",
    r#type: Omit "type",
    event_time: Req "eventTime",
    series: Opt "series",
    action: Omit "action",
    related: Opt "related",
    reporting_component: Req "reportingComponent",
    reporting_instance: Req "reportingInstance",
} }
message! { core::ObjectReference {
    kind: Omit "kind",
    namespace: Omit "namespace",
    name: Omit "name",
    uid: Omit "uid",
    api_version: Omit "apiVersion",
    resource_version: Omit "resourceVersion",
    field_path: Omit "fieldPath",
} }
message! { core::EventSeries {
    count: Omit "count",
    last_observed_time: Req "lastObservedTime",
} }
message! { core::EventSource {
    component: Omit "component",
    host: Omit "host",
} }
message! { core::Namespace {
    metadata: Req "metadata",
    spec: Req "spec",
    status: Req "status",
} }
message! { core::NamespaceStatus {
    phase: Omit "phase",
    conditions: Omit "conditions",
} }
message! { core::NamespaceCondition {
    r#type: Req "type",
    status: Req "status",
    last_transition_time: Req "lastTransitionTime",
    reason: Omit "reason",
    message: Omit "message",
} }
message! { core::NamespaceSpec {
    finalizers: Omit "finalizers",
} }
message! { core::PodTemplateSpec {
    metadata: Req "metadata",
    spec: Req "spec",
} }
message! { events::Event {
    metadata: Req "metadata",
    event_time: Req "eventTime",
    series: Opt "series",
    reporting_controller: Omit "reportingController",
    reporting_instance: Omit "reportingInstance",
    action: Omit "action",
    reason: Omit "reason",
    regarding: Req "regarding",
    related: Opt "related",
    note: Omit "note",
    r#type: Omit "type",
    deprecated_source: Req "deprecatedSource",
    deprecated_first_timestamp: Req "deprecatedFirstTimestamp",
    deprecated_last_timestamp: Req "deprecatedLastTimestamp",
    deprecated_count: Omit "deprecatedCount",
} }
message! { events::EventSeries {
    count: Req "count",
    last_observed_time: Req "lastObservedTime",
} }
