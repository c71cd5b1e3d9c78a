//! The resource kinds the simulator serves, their defaults and the validation cronshard relies on.

use std::fmt;

use serde_json::{Value, json};

use crate::error::{ApiError, Cause, Result};
use crate::event;

/// A served resource type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    CronJobs,
    Jobs,
    Leases,
    Events,
    CoreEvents,
    Namespaces,
}

impl Resource {
    pub const ALL: [Resource; 6] = [
        Resource::CronJobs,
        Resource::Jobs,
        Resource::Leases,
        Resource::Events,
        Resource::CoreEvents,
        Resource::Namespaces,
    ];

    pub fn group(self) -> &'static str {
        match self {
            Resource::CronJobs | Resource::Jobs => "batch",
            Resource::Leases => "coordination.k8s.io",
            Resource::Events => "events.k8s.io",
            Resource::CoreEvents | Resource::Namespaces => "",
        }
    }

    pub fn version(self) -> &'static str {
        "v1"
    }

    pub fn api_version(self) -> &'static str {
        match self {
            Resource::CronJobs | Resource::Jobs => "batch/v1",
            Resource::Leases => "coordination.k8s.io/v1",
            Resource::Events => "events.k8s.io/v1",
            Resource::CoreEvents | Resource::Namespaces => "v1",
        }
    }

    pub fn plural(self) -> &'static str {
        match self {
            Resource::CronJobs => "cronjobs",
            Resource::Jobs => "jobs",
            Resource::Leases => "leases",
            Resource::Events | Resource::CoreEvents => "events",
            Resource::Namespaces => "namespaces",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Resource::CronJobs => "CronJob",
            Resource::Jobs => "Job",
            Resource::Leases => "Lease",
            Resource::Events | Resource::CoreEvents => "Event",
            Resource::Namespaces => "Namespace",
        }
    }

    pub fn singular(self) -> &'static str {
        match self {
            Resource::CronJobs => "cronjob",
            Resource::Jobs => "job",
            Resource::Leases => "lease",
            Resource::Events | Resource::CoreEvents => "event",
            Resource::Namespaces => "namespace",
        }
    }

    pub fn short_names(self) -> &'static [&'static str] {
        match self {
            Resource::CronJobs => &["cj"],
            Resource::CoreEvents => &["ev"],
            Resource::Events => &["ev"],
            Resource::Namespaces => &["ns"],
            Resource::Jobs | Resource::Leases => &[],
        }
    }

    pub fn namespaced(self) -> bool {
        self != Resource::Namespaces
    }

    /// A PUT to a missing object creates it (leases and events, as kube-apiserver's strategies say).
    pub fn allow_create_on_update(self) -> bool {
        matches!(self, Resource::Leases | Resource::Events | Resource::CoreEvents)
    }

    /// The table this resource is kept in: kube-apiserver keeps one Event store and serves it
    /// through both core v1 and events.k8s.io/v1.
    pub fn storage(self) -> Resource {
        if self == Resource::Events { Resource::CoreEvents } else { self }
    }

    /// The resources with a table of their own.
    pub fn stored() -> impl Iterator<Item = Resource> {
        Resource::ALL.into_iter().filter(|r| r.storage() == *r)
    }

    /// An object of this resource in its table's form.
    pub fn to_storage(self, object: Value) -> Value {
        match self {
            Resource::Events => event::to_core(object),
            Resource::CoreEvents => event::core_shape(object),
            _ => object,
        }
    }

    /// An object of this resource's table as this resource serves it.
    pub fn from_storage(self, object: Value) -> Value {
        if self == Resource::Events { event::from_core(object) } else { object }
    }

    /// Has a `/status` subresource.
    pub fn has_status(self) -> bool {
        matches!(self, Resource::CronJobs | Resource::Jobs | Resource::Namespaces)
    }

    /// The resource served at `/api/v1/<plural>` (group "") or `/apis/<group>/<version>/<plural>`.
    pub fn from_path(group: &str, version: &str, plural: &str) -> Option<Resource> {
        if version != "v1" {
            return None;
        }
        Resource::ALL.into_iter().find(|r| r.group() == group && r.plural() == plural)
    }

    /// Checks the body's kind and apiVersion (empty means "as the URL says", as the real decoder allows).
    pub fn check_type(self, body: &Value) -> Result<()> {
        let api_version = body.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = body.get("kind").and_then(Value::as_str).unwrap_or("");
        if !api_version.is_empty() && api_version != self.api_version() {
            return Err(ApiError::BadRequest(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({})",
                self.api_version()
            )));
        }
        if !kind.is_empty() && kind != self.kind() {
            return Err(ApiError::BadRequest(format!(
                "the kind in the data ({kind}) does not match the expected kind ({})",
                self.kind()
            )));
        }
        Ok(())
    }

    /// Round-trips a body through the typed Kubernetes struct, as the apiserver's decoder does:
    /// wrong types are a 400, unknown fields are reported (and dropped).
    pub fn decode(self, body: Value) -> Result<(Value, Vec<String>)> {
        fn typed<T: serde::de::DeserializeOwned + serde::Serialize>(body: Value) -> Result<(Value, Vec<String>)> {
            let mut unknown = Vec::new();
            let object: T = serde_ignored::deserialize(body, |path| unknown.push(field_path(&path.to_string())))
                .map_err(|e| ApiError::BadRequest(format!("unable to decode request body: {e}")))?;
            let value = serde_json::to_value(object).map_err(|e| ApiError::InternalError(e.to_string()))?;
            Ok((value, unknown))
        }
        use k8s_openapi::api;
        match self {
            Resource::CronJobs => typed::<api::batch::v1::CronJob>(body),
            Resource::Jobs => typed::<api::batch::v1::Job>(body),
            Resource::Leases => typed::<api::coordination::v1::Lease>(body),
            Resource::Events => typed::<api::events::v1::Event>(body),
            Resource::CoreEvents => typed::<api::core::v1::Event>(body),
            Resource::Namespaces => typed::<api::core::v1::Namespace>(body),
        }
    }

    /// Fills in the defaults kube-apiserver sets (the ones cronshard reads).
    pub fn apply_defaults(self, object: &mut Value, uid: &str) {
        let spec = || json!({});
        match self {
            Resource::CronJobs => {
                let spec = object.as_object_mut().map(|o| o.entry("spec").or_insert_with(spec));
                if let Some(spec) = spec.and_then(Value::as_object_mut) {
                    spec.entry("concurrencyPolicy").or_insert(json!("Allow"));
                    spec.entry("suspend").or_insert(json!(false));
                    spec.entry("successfulJobsHistoryLimit").or_insert(json!(3));
                    spec.entry("failedJobsHistoryLimit").or_insert(json!(1));
                }
                // A new object's status starts empty, not absent (the create dropped any given).
                if let Some(o) = object.as_object_mut() {
                    o.entry("status").or_insert(json!({}));
                }
            }
            Resource::Jobs => {
                let generated_selector = object.pointer("/spec/manualSelector") != Some(&json!(true));
                let spec = object.as_object_mut().map(|o| o.entry("spec").or_insert_with(spec));
                if let Some(spec) = spec.and_then(Value::as_object_mut) {
                    if !spec.contains_key("completions") && !spec.contains_key("parallelism") {
                        spec.insert("completions".into(), json!(1));
                        spec.insert("parallelism".into(), json!(1));
                    }
                    spec.entry("parallelism").or_insert(json!(1));
                    spec.entry("backoffLimit").or_insert(json!(6));
                    spec.entry("completionMode").or_insert(json!("NonIndexed"));
                    spec.entry("suspend").or_insert(json!(false));
                    spec.entry("podReplacementPolicy").or_insert(json!("TerminatingOrFailed"));
                    if generated_selector && !spec.contains_key("selector") {
                        spec.insert(
                            "selector".into(),
                            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
                        );
                    }
                }
            }
            Resource::Namespaces => {
                if let Some(o) = object.as_object_mut() {
                    o.entry("spec").or_insert(json!({"finalizers": ["kubernetes"]}));
                    o.entry("status").or_insert(json!({"phase": "Active"}));
                }
            }
            // Events get their shape from the conversion to and from the stored form.
            Resource::Leases | Resource::Events | Resource::CoreEvents => {}
        }
    }

    /// What kube-apiserver's strategies set on every create, whatever the body said: a new
    /// Namespace is `Active`, has the `kubernetes` finalizer and is labelled with its name.
    pub fn prepare_for_create(self, object: &mut Value) {
        if self != Resource::Namespaces {
            return;
        }
        object["status"] = json!({"phase": "Active"});
        // As the namespace strategy's Canonicalize: a label that always says the name.
        let name = object["metadata"]["name"].clone();
        if !object["metadata"]["labels"].is_object() {
            object["metadata"]["labels"] = json!({});
        }
        object["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
        if !object["spec"].is_object() {
            object["spec"] = json!({});
        }
        let finalizers = object["spec"].as_object_mut().map(|s| s.entry("finalizers").or_insert_with(|| json!([])));
        if let Some(list) = finalizers.and_then(Value::as_array_mut)
            && !list.iter().any(|f| f == "kubernetes")
        {
            list.push(json!("kubernetes"));
        }
    }

    /// Validation for what cronshard depends on, answered as 422 Invalid.
    pub fn validate(self, object: &Value, creating: bool) -> Result<()> {
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
        let mut causes = Vec::new();
        if name.is_empty() {
            causes.push(Cause::required("metadata.name"));
        } else if let Some(problem) = dns_subdomain_problem(name, self == Resource::Namespaces) {
            causes.push(Cause::invalid("metadata.name", name, &problem));
        }
        if self == Resource::CronJobs {
            if creating && name.len() > 52 {
                causes.push(Cause::invalid("metadata.name", name, "must be no more than 52 characters"));
            }
            validate_cronjob_spec(object, creating, &mut causes);
        }
        if self == Resource::Jobs && creating && name.len() > 63 {
            // kube-apiserver labels the pod template with the Job's name (`job-name`,
            // `batch.kubernetes.io/job-name`), and a label value is at most 63 characters.
            causes.push(Cause::invalid("spec.template.labels", name, "must be no more than 63 characters"));
        }
        match self {
            Resource::Events => event::validate(&event::to_core(object.clone()), true, creating, &mut causes),
            Resource::CoreEvents => event::validate(object, false, creating, &mut causes),
            _ => {}
        }
        if causes.is_empty() {
            return Ok(());
        }
        Err(ApiError::Invalid { kind: self.kind(), group: self.group(), name: name.to_owned(), causes })
    }
}

fn validate_cronjob_spec(object: &Value, creating: bool, causes: &mut Vec<Cause>) {
    let schedule = object.pointer("/spec/schedule").and_then(Value::as_str).unwrap_or("");
    let time_zone = object.pointer("/spec/timeZone").and_then(Value::as_str);
    if schedule.is_empty() {
        causes.push(Cause::required("spec.schedule"));
    } else if schedule.contains("TZ") && time_zone.is_some() {
        causes.push(Cause::invalid(
            "spec.schedule",
            schedule,
            "cannot use both timeZone field and TZ or CRON_TZ in schedule",
        ));
    } else if schedule.contains("TZ") && creating {
        causes.push(Cause::invalid(
            "spec.schedule",
            schedule,
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ));
    } else if let Err(e) = cronshard_types::Schedule::parse(schedule, &cronshard_types::Zone::utc()) {
        causes.push(Cause::invalid("spec.schedule", schedule, &e.to_string()));
    }
    match time_zone {
        Some("") => causes.push(Cause::invalid("spec.timeZone", "", "timeZone must be nil or non-empty string")),
        Some(tz) if tz.eq_ignore_ascii_case("local") => causes.push(Cause::invalid(
            "spec.timeZone",
            tz,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        )),
        Some(tz) => {
            if let Err(e) = cronshard_types::Zone::load(tz) {
                causes.push(Cause::invalid("spec.timeZone", tz, &e.to_string()));
            }
        }
        None => {}
    }
    if let Some(deadline) = object.pointer("/spec/startingDeadlineSeconds").and_then(Value::as_i64)
        && deadline < 0
    {
        causes.push(Cause::invalid(
            "spec.startingDeadlineSeconds",
            &deadline.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    match object.pointer("/spec/concurrencyPolicy").and_then(Value::as_str) {
        None | Some("Allow" | "Forbid" | "Replace") => {}
        Some(other) => causes.push(Cause {
            field: "spec.concurrencyPolicy".into(),
            reason: "FieldValueNotSupported",
            message: format!(
                "Unsupported value: {}: supported values: \"Allow\", \"Forbid\", \"Replace\"",
                json!(other)
            ),
        }),
    }
}

/// apimachinery's qualified name (`[prefix/]name`, the name at most 63 characters of
/// alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric), with its message.
pub(crate) fn qualified_name_problem(value: &str) -> Option<String> {
    let name = value
        .rsplit_once('/')
        .map_or(value, |(prefix, name)| if dns_subdomain_problem(prefix, false).is_some() { "" } else { name });
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let inner = name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if name.is_empty() || name.len() > 63 || !inner || !edge(name.chars().next()) || !edge(name.chars().last()) {
        return Some(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end \
             with an alphanumeric character"
                .to_owned(),
        );
    }
    None
}

/// serde_ignored's `spec.?.containers.0.?.foo` as the apiserver writes it:
/// `spec.containers[0].foo`.
fn field_path(raw: &str) -> String {
    let mut out = String::new();
    for segment in raw.split('.').filter(|s| *s != "?") {
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{segment}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(segment);
        }
    }
    out
}

/// RFC 1123 subdomain (or label, for namespaces), with the apiserver's messages.
fn dns_subdomain_problem(name: &str, label: bool) -> Option<String> {
    let max = if label { 63 } else { 253 };
    if name.len() > max {
        return Some(format!("must be no more than {max} characters"));
    }
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || (!label && c == '.');
    let ends_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !name.chars().all(allowed) || !ends_ok(name.chars().next()) || !ends_ok(name.chars().last()) {
        let what = if label { "RFC 1123 label" } else { "RFC 1123 subdomain" };
        return Some(format!(
            "a lowercase {what} must consist of lower case alphanumeric characters, '-'{} and must start and end with an alphanumeric character",
            if label { "" } else { " or '.'," }
        ));
    }
    None
}

impl fmt::Display for Resource {
    /// `cronjobs.batch`, or just `namespaces` for the core group: how errors name a resource.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group().is_empty() {
            f.write_str(self.plural())
        } else {
            write!(f, "{}.{}", self.plural(), self.group())
        }
    }
}
