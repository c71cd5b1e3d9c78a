//! What kube-apiserver checks in a body before it stores it: the kind and apiVersion, the
//! decoding through the typed Kubernetes struct, and each resource's validation (for Events on
//! the stored form, as upstream's works on its internal type).

use serde_json::{Value, json};

use crate::error::{ApiError, Cause, Result};
use crate::event;
use crate::resource::Resource;

impl Resource {
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
            Resource::Events => validate_event(&event::to_core(object.clone()), true, creating, &mut causes),
            Resource::CoreEvents => validate_event(object, false, creating, &mut causes),
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
fn qualified_name_problem(value: &str) -> Option<String> {
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

/// kube-apiserver's Event validation, on the stored form: the legacy rules for every write,
/// and on a create through events.k8s.io/v1 (`via_events`) the rules of the new API. Fields
/// carry the internal type's names (`involvedObject`, `message`), as the real server reports
/// them.
fn validate_event(core: &Value, via_events: bool, creating: bool, causes: &mut Vec<Cause>) {
    let text = |path: &str| core.pointer(path).and_then(Value::as_str).unwrap_or("");
    let set = |field: &str| core.get(field).is_some_and(|v| !v.is_null());
    let namespace = text("/metadata/namespace");
    let involved_namespace = text("/involvedObject/namespace");
    if !set("eventTime") {
        let matches = if involved_namespace.is_empty() {
            matches!(namespace, "" | "default")
        } else {
            namespace == involved_namespace
        };
        if !matches {
            causes.push(Cause::invalid(
                "involvedObject.namespace",
                involved_namespace,
                "does not match event.namespace",
            ));
        }
    } else {
        validate_reporting(core, via_events, causes);
    }
    if !(via_events && creating) {
        return;
    }
    if let Some(series) = core.get("series").filter(|s| !s.is_null()) {
        if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
            causes.push(Cause::invalid("series.count", "", "should be at least 2"));
        }
        if series.get("lastObservedTime").is_none_or(Value::is_null) {
            causes.push(Cause::required("series.lastObservedTime"));
        }
    }
    if !set("eventTime") {
        causes.push(Cause::required("eventTime"));
    }
    let kind = text("/type");
    if kind != "Normal" && kind != "Warning" {
        causes.push(Cause::invalid("type", "", &format!("has invalid value: {kind}")));
    }
    for field in ["firstTimestamp", "lastTimestamp"] {
        if set(field) {
            causes.push(Cause::invalid(field, "", "needs to be unset"));
        }
    }
    if core.get("count").and_then(Value::as_i64).is_some_and(|c| c != 0) {
        causes.push(Cause::invalid("count", "", "needs to be unset"));
    }
    if !text("/source/component").is_empty() || !text("/source/host").is_empty() {
        causes.push(Cause::invalid("source", "", "needs to be unset"));
    }
}

/// The legacy rules for an Event with an `eventTime`: who reported it, and the lengths.
fn validate_reporting(core: &Value, via_events: bool, causes: &mut Vec<Cause>) {
    let text = |path: &str| core.pointer(path).and_then(Value::as_str).unwrap_or("");
    let namespace = text("/metadata/namespace");
    if text("/involvedObject/namespace").is_empty() && !matches!(namespace, "default" | "kube-system") {
        causes.push(Cause::invalid("involvedObject.namespace", "", "does not match event.namespace"));
    }
    // Upstream names the field as the API it was written through calls it.
    let controller_field = if via_events { "reportingController" } else { "reportingComponent" };
    let controller = text("/reportingComponent");
    if controller.is_empty() {
        causes.push(Cause::required(controller_field));
    }
    if let Some(problem) = qualified_name_problem(controller) {
        causes.push(Cause::invalid(controller_field, controller, &problem));
    }
    for (field, limit) in [("reportingInstance", 128), ("action", 128), ("reason", 128)] {
        let value = text(&format!("/{field}"));
        if value.is_empty() {
            causes.push(Cause::required(field));
        } else if value.len() > limit {
            causes.push(Cause::invalid(field, "", &format!("can have at most {limit} characters")));
        }
    }
    if text("/message").len() > 1024 {
        causes.push(Cause::invalid("message", "", "can have at most 1024 characters"));
    }
}
