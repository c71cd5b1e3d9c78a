//! apimachinery's types: object metadata, and the ones whose JSON is not their protobuf
//! shape (times, quantities, int-or-string, managed fields).

use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use super::{Problem, ToJson, message};

/// A protobuf time, `None` for Go's zero time (which upstream encodes as an empty message).
fn timestamp(seconds: Option<i64>, nanos: Option<i32>) -> Result<Option<jiff::Timestamp>, Problem> {
    if seconds.is_none() && nanos.is_none() {
        return Ok(None);
    }
    jiff::Timestamp::new(seconds.unwrap_or(0), nanos.unwrap_or(0))
        .map(Some)
        .map_err(|e| Problem::Malformed(format!("time out of range: {e}")))
}

/// `metav1.Time`: RFC 3339 in UTC to the second, `null` when zero.
impl ToJson for meta::Time {
    fn to_json(&self) -> Result<Value, Problem> {
        Ok(timestamp(self.seconds, self.nanos)?
            .map_or(Value::Null, |t| json!(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())))
    }
}

/// `metav1.MicroTime`: RFC 3339 in UTC with six fractional digits, `null` when zero.
impl ToJson for meta::MicroTime {
    fn to_json(&self) -> Result<Value, Problem> {
        Ok(timestamp(self.seconds, self.nanos)?.map_or(Value::Null, |t| {
            let micros = t.subsec_nanosecond().rem_euclid(1_000_000_000) / 1000;
            json!(format!("{}.{micros:06}Z", t.strftime("%Y-%m-%dT%H:%M:%S")))
        }))
    }
}

/// `resource.Quantity`: its string, as sent (the JSON path keeps it as sent too); a zero
/// Quantity is `"0"`.
impl ToJson for Quantity {
    fn to_json(&self) -> Result<Value, Problem> {
        Ok(json!(self.string.as_deref().unwrap_or("0")))
    }
}

/// `intstr.IntOrString`: a number, or a string when its type is 1.
impl ToJson for IntOrString {
    fn to_json(&self) -> Result<Value, Problem> {
        Ok(match self.r#type {
            Some(1) => json!(self.str_val.as_deref().unwrap_or("")),
            _ => json!(self.int_val.unwrap_or(0)),
        })
    }
}

/// `metav1.FieldsV1`: its raw JSON.
impl ToJson for meta::FieldsV1 {
    fn to_json(&self) -> Result<Value, Problem> {
        match self.raw.as_deref() {
            None | Some([]) => Ok(Value::Null),
            Some(raw) => serde_json::from_slice(raw).map_err(|e| Problem::Malformed(format!("fieldsV1: {e}"))),
        }
    }
}

message! { meta::ObjectMeta {
    name: Omit "name",
    generate_name: Omit "generateName",
    namespace: Omit "namespace",
    self_link: Omit "selfLink",
    uid: Omit "uid",
    resource_version: Omit "resourceVersion",
    generation: Omit "generation",
    creation_timestamp: Req "creationTimestamp",
    deletion_timestamp: Opt "deletionTimestamp",
    deletion_grace_period_seconds: Opt "deletionGracePeriodSeconds",
    labels: Omit "labels",
    annotations: Omit "annotations",
    owner_references: Omit "ownerReferences",
    finalizers: Omit "finalizers",
    managed_fields: Omit "managedFields",
} }
message! { meta::ManagedFieldsEntry {
    manager: Omit "manager",
    operation: Omit "operation",
    api_version: Omit "apiVersion",
    time: Opt "time",
    fields_type: Omit "fieldsType",
    fields_v1: Opt "fieldsV1",
    subresource: Omit "subresource",
} }
message! { meta::OwnerReference {
    api_version: Req "apiVersion",
    kind: Req "kind",
    name: Req "name",
    uid: Req "uid",
    controller: Opt "controller",
    block_owner_deletion: Opt "blockOwnerDeletion",
} }
message! { meta::LabelSelector {
    match_labels: Omit "matchLabels",
    match_expressions: Omit "matchExpressions",
} }
message! { meta::LabelSelectorRequirement {
    key: Req "key",
    operator: Req "operator",
    values: Omit "values",
} }
