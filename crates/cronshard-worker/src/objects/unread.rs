//! What of an object the controller never reads, left out while it is decoded: a Job's pod
//! template and managedFields are most of its bytes, and every Job event of a herd would
//! otherwise build them into a tree only to drop them.

use std::fmt;

use k8s_openapi::api::batch::v1::{CronJob, Job};
use serde::Deserializer;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The fields of a kind that are skipped while decoding, as dotted paths from the object's
/// top (`metadata.managedFields`). What reads the decoded object must not need them.
pub trait Unread {
    const UNREAD: &'static [&'static str] = &[];
}

/// Every field: the CronJob's template builds its Jobs, and its managedFields say when its
/// schedule changed.
impl Unread for CronJob {}

/// A bucket and shadow mode read a Job's metadata (owner, annotations, times) and status.
impl Unread for Job {
    const UNREAD: &'static [&'static str] = &["spec", "metadata.managedFields"];
}

/// Decodes any value into a [`Value`], skipping the map entries at `unread` (paths relative
/// to this value) without building them. A value of another shape than expected (metadata
/// that is not a map) is kept whole, so that the typed decode after it reports the error.
#[derive(Clone, Copy, Debug)]
pub struct Trimmed<'a> {
    pub unread: &'a [&'a str],
}

impl<'de> DeserializeSeed<'de> for Trimmed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        if self.unread.is_empty() {
            return serde::Deserialize::deserialize(deserializer);
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Trimmed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if self.unread.contains(&key.as_str()) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let below: Vec<&str> =
                self.unread.iter().filter_map(|path| path.strip_prefix(key.as_str())?.strip_prefix('.')).collect();
            let value = map.next_value_seed(Trimmed { unread: &below })?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(value) = seq.next_element::<Value>()? {
            out.push(value);
        }
        Ok(Value::Array(out))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use serde::de::DeserializeSeed;
    use serde_json::json;

    use super::Trimmed;

    fn trimmed(text: &str, unread: &[&str]) -> serde_json::Value {
        let mut de = serde_json::Deserializer::from_str(text);
        Trimmed { unread }.deserialize(&mut de).expect("valid JSON")
    }

    #[test]
    fn the_unread_paths_are_left_out_and_everything_else_kept() {
        let text = r#"{"kind": "Job", "spec": {"template": {"x": [1, 2]}},
            "metadata": {"name": "a", "managedFields": [{"manager": "m"}], "labels": {"spec": "kept"}},
            "status": {"ready": 1, "conditions": [{"type": "Complete"}], "ratio": 0.5, "gone": null, "ok": true}}"#;
        let value = trimmed(text, &["spec", "metadata.managedFields"]);
        assert_eq!(
            value,
            json!({"kind": "Job", "metadata": {"name": "a", "labels": {"spec": "kept"}},
                "status": {"ready": 1, "conditions": [{"type": "Complete"}], "ratio": 0.5, "gone": null, "ok": true}})
        );
        assert_eq!(trimmed(text, &[]), serde_json::from_str::<serde_json::Value>(text).expect("valid"));
    }

    #[test]
    fn a_value_of_another_shape_is_kept_for_the_typed_decode_to_judge() {
        let value = trimmed(r#"{"metadata": "not a map", "spec": 5}"#, &["spec", "metadata.managedFields"]);
        assert_eq!(value, json!({"metadata": "not a map"}));
        assert_eq!(trimmed("[1, \"a\"]", &["spec"]), json!([1, "a"]));
    }
}
