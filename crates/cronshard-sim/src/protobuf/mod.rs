//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`, what kubectl's generator
//! commands send), decoded with k8s-pb into the JSON that kube-apiserver's Go types encode to.
//!
//! A body is the magic `k8s\0` and a `runtime.Unknown` whose `raw` holds the object. The
//! object becomes JSON field by field, following Go's `encoding/json` on the Go type: a
//! pointer field is written when set (zero included), an `omitempty` field only when not
//! zero, any other field always (a zero time as `null`, an unset list as `null`), and an
//! inline struct's fields in its parent. The tables in the submodules say which is which for
//! every field; they come from the Go types of Kubernetes 1.37 (their `json` tags and
//! pointers), and each destructures its message without `..`, so a field k8s-pb adds does
//! not compile until it is listed. A field that k8s-pb does not know (one newer than its
//! protobuf files) would be dropped by prost without a word, so every body is walked first
//! and such a field refuses the whole body.

mod meta;
mod pod;
mod volume;
mod workloads;

use std::collections::BTreeMap;

use k8s_pb::api;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, Result};
use crate::resource::Resource;

/// The media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// What every Kubernetes protobuf body starts with.
const MAGIC: &[u8] = b"k8s\0";

/// Decodes a protobuf body for `resource` into its JSON form, with `apiVersion` and `kind`
/// from the envelope (or the URL's, when the envelope leaves them out, as upstream's decoder
/// defaults them). Errors are kube-apiserver's 400s for a body it cannot read, or 415 for a
/// field only a newer protobuf schema has.
pub fn decode(resource: Resource, body: &[u8]) -> Result<Value> {
    let unrecognized = |problem: &str| {
        ApiError::BadRequest(format!(
            "the object provided is unrecognized (must be of type {}): {problem} ({})",
            resource.kind(),
            summary(body)
        ))
    };
    let raw_envelope = match body.strip_prefix(MAGIC) {
        _ if body.is_empty() => return Err(unrecognized("empty data")),
        None => {
            return Err(unrecognized(
                "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
            ));
        }
        Some([]) => return Err(unrecognized("empty body")),
        Some(rest) => rest,
    };
    let envelope = Unknown::decode(raw_envelope).map_err(|e| unrecognized(&e.to_string()))?;
    let type_meta = envelope.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.filter(|v| !v.is_empty()).unwrap_or(resource.api_version().to_owned());
    let kind = type_meta.kind.filter(|k| !k.is_empty()).unwrap_or(resource.kind().to_owned());
    let mut object = json!({"apiVersion": api_version, "kind": kind});
    resource.check_type(&object)?;
    let raw = envelope.raw.unwrap_or_default();
    let version = api_version.rsplit('/').next().unwrap_or_default();
    let decoded = match resource {
        Resource::CronJobs => object_json::<api::batch::v1::CronJob>(&raw),
        Resource::Jobs => object_json::<api::batch::v1::Job>(&raw),
        Resource::Leases => object_json::<api::coordination::v1::Lease>(&raw),
        Resource::Events => object_json::<api::events::v1::Event>(&raw),
        Resource::CoreEvents => object_json::<api::core::v1::Event>(&raw),
        Resource::Namespaces => object_json::<api::core::v1::Namespace>(&raw),
    };
    let fields = decoded.map_err(|problem| match problem {
        Problem::Unknown(path, tag) => ApiError::UndecodableProtobuf(format!(
            "field {tag} of {} is not in the protobuf schema cronshard-sim decodes (k8s-pb {}); send this \
             object as application/json",
            if path.is_empty() { kind.clone() } else { path },
            K8S_PB_VERSION
        )),
        Problem::Malformed(e) => ApiError::BadRequest(format!(
            "{kind} in version {version:?} cannot be handled as a {}: {e}",
            resource.kind()
        )),
    })?;
    if let (Some(object), Value::Object(fields)) = (object.as_object_mut(), fields) {
        object.extend(fields);
    }
    Ok(object)
}

/// The k8s-pb release whose protobuf schema the tables follow (named in 415 answers).
const K8S_PB_VERSION: &str = "0.9.0";

/// Why a body could not be converted.
#[derive(Debug)]
enum Problem {
    /// A field this schema does not have: the JSON path of its message, and its tag.
    Unknown(String, u32),
    /// Bytes that are not protobuf, or a value Go could not decode either.
    Malformed(String),
}

fn object_json<M: Message + Default + ToJson>(raw: &[u8]) -> Result<Value, Problem> {
    let object = M::decode(raw).map_err(|e| Problem::Malformed(e.to_string()))?;
    M::check_known(raw, "")?;
    object.to_json()
}

/// kube-apiserver's summary of an undecodable body: its start, as text or hex.
fn summary(body: &[u8]) -> String {
    let start = &body[..body.len().min(30)];
    let more = if body.len() > 30 { " ..." } else { "" };
    if body.first() == Some(&b'{') {
        format!("{}{more}", String::from_utf8_lossy(start))
    } else {
        let hex: String = start.iter().map(|b| format!("{b:02x}")).collect();
        format!("{hex}{more}")
    }
}

/// A k8s-pb value as JSON, the way Go encodes the value it decodes to.
trait ToJson {
    fn to_json(&self) -> Result<Value, Problem>;

    /// Go's zero value, which `omitempty` leaves out.
    fn is_zero(&self) -> bool {
        false
    }

    /// Refuses a field of this message (at any depth) that the schema does not have;
    /// `payload` is the message's own bytes. Scalars have no fields.
    fn check_known(_payload: &[u8], _path: &str) -> Result<(), Problem> {
        Ok(())
    }
}

macro_rules! scalar {
    ($($ty:ty => $zero:expr),* $(,)?) => {$(
        impl ToJson for $ty {
            fn to_json(&self) -> Result<Value, Problem> {
                Ok(json!(self))
            }
            fn is_zero(&self) -> bool {
                *self == $zero
            }
        }
    )*};
}

scalar!(bool => false, i32 => 0, i64 => 0);

impl ToJson for String {
    fn to_json(&self) -> Result<Value, Problem> {
        Ok(json!(self))
    }
    fn is_zero(&self) -> bool {
        self.is_empty()
    }
}

impl<T: ToJson> ToJson for Vec<T> {
    fn to_json(&self) -> Result<Value, Problem> {
        self.iter().map(ToJson::to_json).collect::<Result<Vec<_>, _>>().map(Value::Array)
    }
    fn is_zero(&self) -> bool {
        self.is_empty()
    }
}

impl<T: ToJson> ToJson for BTreeMap<String, T> {
    fn to_json(&self) -> Result<Value, Problem> {
        let mut out = Map::new();
        for (key, value) in self {
            out.insert(key.clone(), value.to_json()?);
        }
        Ok(Value::Object(out))
    }
    fn is_zero(&self) -> bool {
        self.is_empty()
    }
}

/// How Go writes a field: a pointer when set, `omitempty` when not zero, otherwise always
/// (`Req`), or an inline struct's fields in the parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Opt,
    Omit,
    Req,
    Inline,
}

/// Whether a prost field holds anything (any `Option`, list or map).
trait Presence {
    fn is_set(&self) -> bool;
}

impl<T> Presence for Option<T> {
    fn is_set(&self) -> bool {
        self.is_some()
    }
}

impl<T> Presence for Vec<T> {
    fn is_set(&self) -> bool {
        !self.is_empty()
    }
}

impl<K, V> Presence for BTreeMap<K, V> {
    fn is_set(&self) -> bool {
        !self.is_empty()
    }
}

/// A prost field (`Option`, list or map of a [`ToJson`] value) as Go writes it.
trait Slot: Presence {
    /// The JSON value for this field, or `None` to leave it out.
    fn emit(&self, mode: Mode) -> Result<Option<Value>, Problem>;
    /// Checks one occurrence of this field on the wire (its payload).
    fn check_payload(payload: &[u8], path: &str) -> Result<(), Problem>;
}

impl<T: ToJson + Default> Slot for Option<T> {
    fn emit(&self, mode: Mode) -> Result<Option<Value>, Problem> {
        match (self, mode) {
            (Some(value), Mode::Omit) if value.is_zero() => Ok(None),
            (Some(value), _) => value.to_json().map(Some),
            // A struct or scalar that is not a pointer is its zero value when absent.
            (None, Mode::Req | Mode::Inline) => T::default().to_json().map(Some),
            (None, Mode::Opt | Mode::Omit) => Ok(None),
        }
    }
    fn check_payload(payload: &[u8], path: &str) -> Result<(), Problem> {
        T::check_known(payload, path)
    }
}

impl<T: ToJson> Slot for Vec<T> {
    fn emit(&self, mode: Mode) -> Result<Option<Value>, Problem> {
        match (self.is_empty(), mode) {
            // A nil slice without omitempty is `null`.
            (true, Mode::Req) => Ok(Some(Value::Null)),
            (true, _) => Ok(None),
            (false, _) => self.to_json().map(Some),
        }
    }
    fn check_payload(payload: &[u8], path: &str) -> Result<(), Problem> {
        T::check_known(payload, path)
    }
}

impl<T: ToJson> Slot for BTreeMap<String, T> {
    fn emit(&self, mode: Mode) -> Result<Option<Value>, Problem> {
        match (self.is_empty(), mode) {
            (true, Mode::Req) => Ok(Some(Value::Null)),
            (true, _) => Ok(None),
            (false, _) => self.to_json().map(Some),
        }
    }
    fn check_payload(payload: &[u8], path: &str) -> Result<(), Problem> {
        // A map entry is a message: key 1, value 2.
        for field in wire::fields(payload) {
            let field = field?;
            if field.tag == 2 {
                T::check_known(field.payload, path)?;
            }
        }
        Ok(())
    }
}

/// Writes one field into a message's JSON object.
fn emit<S: Slot>(out: &mut Map<String, Value>, name: &str, mode: Mode, slot: &S) -> Result<(), Problem> {
    match (slot.emit(mode)?, mode) {
        (Some(Value::Object(fields)), Mode::Inline) => out.extend(fields),
        (Some(value), _) => {
            out.insert(name.to_owned(), value);
        }
        (None, _) => {}
    }
    Ok(())
}

/// Refuses one field of the wire if it landed in none of the message's fields, and checks
/// inside it if it did.
fn check_slot<S: Slot>(slot: &S, payload: &[u8], path: &str, name: &str, known: &mut bool) -> Result<(), Problem> {
    if !slot.is_set() {
        return Ok(());
    }
    *known = true;
    let path = match (path.is_empty(), name.is_empty()) {
        (_, true) => path.to_owned(),
        (true, false) => name.to_owned(),
        (false, false) => format!("{path}.{name}"),
    };
    S::check_payload(payload, &path)
}

/// `ToJson` for a k8s-pb message, one line per field: `rust_name: Mode "jsonName"`. Fields
/// listed under `skip` are not Kubernetes 1.37's (its server ignores them on the wire).
macro_rules! message {
    ($ty:path { $($field:ident: $mode:ident $json:literal),* $(,)? } $(skip { $($skip:ident),* })?) => {
        impl $crate::protobuf::ToJson for $ty {
            fn to_json(&self) -> Result<serde_json::Value, $crate::protobuf::Problem> {
                // No `..`: a field k8s-pb adds does not compile until it is listed here.
                let Self { $($field,)* $($($skip: _,)*)? } = self;
                let mut out = serde_json::Map::new();
                $($crate::protobuf::emit(&mut out, $json, $crate::protobuf::Mode::$mode, $field)?;)*
                Ok(serde_json::Value::Object(out))
            }

            fn check_known(payload: &[u8], path: &str) -> Result<(), $crate::protobuf::Problem> {
                for field in $crate::protobuf::wire::fields(payload) {
                    let field = field?;
                    let mut one = Self::default();
                    prost::Message::merge(&mut one, field.bytes)
                        .map_err(|e| $crate::protobuf::Problem::Malformed(e.to_string()))?;
                    let Self { $($field,)* $($($skip,)*)? } = &one;
                    #[allow(unused_mut)]
                    let mut known = false;
                    $($crate::protobuf::check_slot($field, field.payload, path, $json, &mut known)?;)*
                    $($(known |= $crate::protobuf::Presence::is_set($skip);)*)?
                    if !known {
                        return Err($crate::protobuf::Problem::Unknown(path.to_owned(), field.tag));
                    }
                }
                Ok(())
            }
        }
    };
}
use message;

/// Just enough of the protobuf wire format to walk a message's fields.
mod wire {
    use super::Problem;

    /// One field as it is on the wire.
    pub(super) struct Field<'a> {
        pub(super) tag: u32,
        /// The whole field, key included (a message of just this field).
        pub(super) bytes: &'a [u8],
        /// A length-delimited field's content; empty for the others.
        pub(super) payload: &'a [u8],
    }

    fn varint(data: &[u8], at: &mut usize) -> Result<u64, Problem> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *data.get(*at).ok_or_else(|| Problem::Malformed("unexpected end of data".into()))?;
            *at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Problem::Malformed("varint overflow".into()))
    }

    pub(super) fn fields(data: &[u8]) -> impl Iterator<Item = Result<Field<'_>, Problem>> {
        let mut at = 0;
        std::iter::from_fn(move || {
            (at < data.len()).then(|| {
                let start = at;
                let key = varint(data, &mut at)?;
                let tag = u32::try_from(key >> 3).map_err(|_| Problem::Malformed("bad field key".into()))?;
                let mut payload = &data[0..0];
                match key & 7 {
                    0 => drop(varint(data, &mut at)?),
                    1 => at += 8,
                    5 => at += 4,
                    2 => {
                        let len = usize::try_from(varint(data, &mut at)?).unwrap_or(usize::MAX);
                        let end = at.checked_add(len).filter(|end| *end <= data.len());
                        let end = end.ok_or_else(|| Problem::Malformed("field runs past the data".into()))?;
                        payload = &data[at..end];
                        at = end;
                    }
                    other => return Err(Problem::Malformed(format!("unsupported wire type {other}"))),
                }
                let bytes = data.get(start..at).ok_or_else(|| Problem::Malformed("unexpected end of data".into()))?;
                Ok(Field { tag, bytes, payload })
            })
        })
    }
}
