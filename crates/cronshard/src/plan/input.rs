//! Input: the CronJobs of `kubectl get cronjobs -A -o json` as untyped JSON, the fields of
//! each that the plan reads, and Kubernetes memory quantities.

use std::io::Read;
use std::path::Path;

use cronshard_types::Timestamp;
use serde_json::Value;

use crate::error::{Error, Result};

/// The fields of one item the plan reads.
#[derive(Clone, Copy, Debug)]
pub(super) struct Spec<'a> {
    pub(super) schedule: &'a str,
    pub(super) time_zone: Option<&'a str>,
    pub(super) suspend: bool,
}

pub(super) fn read_spec(item: &Value) -> Result<Spec<'_>, String> {
    if let Some(kind) = item.get("kind").and_then(Value::as_str)
        && kind != "CronJob"
    {
        return Err(format!("kind {kind}, not CronJob"));
    }
    let spec = item.get("spec");
    let field = |name: &str| spec.and_then(|s| s.get(name));
    let schedule = field("schedule").and_then(Value::as_str).ok_or("spec.schedule is missing or not a string")?;
    let time_zone = match field("timeZone") {
        None | Some(Value::Null) => None,
        Some(Value::String(zone)) => Some(zone.as_str()),
        Some(_) => return Err("spec.timeZone is not a string".to_owned()),
    };
    let suspend = field("suspend").and_then(Value::as_bool).unwrap_or(false);
    Ok(Spec { schedule, time_zone, suspend })
}

fn meta_str<'a>(item: &'a Value, key: &str) -> Option<&'a str> {
    item.get("metadata")?.get(key)?.as_str()
}

/// `namespace/name`, as kubectl prints it with `-A`.
pub(super) fn item_name(item: &Value, index: usize) -> String {
    match (meta_str(item, "namespace"), meta_str(item, "name")) {
        (Some(namespace), Some(name)) => format!("{namespace}/{name}"),
        (None, Some(name)) => name.to_owned(),
        (_, None) => format!("items[{index}]"),
    }
}

/// Where an `@every` CronJob's fire times are counted from, as the controller counts them:
/// `status.lastScheduleTime`, else `metadata.creationTimestamp`.
pub(super) fn anchor(item: &Value) -> Option<i64> {
    ["/status/lastScheduleTime", "/metadata/creationTimestamp"]
        .into_iter()
        .find_map(|pointer| item.pointer(pointer)?.as_str()?.parse::<Timestamp>().ok())
        .map(Timestamp::as_second)
}

/// A Kubernetes quantity as bytes: `512Mi`, `1Gi`, `800M`, `1.5Gi`, `1e9`, `2048`.
pub(crate) fn parse_quantity(text: &str) -> Result<u64, String> {
    let invalid = |why: &str| format!("invalid quantity {text:?}: {why} (for example 512Mi, 1Gi, 800M)");
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| invalid("it does not start with a number"))?;
    let kib = 1024.0_f64;
    let multiplier = match suffix {
        "" => 1.0,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => kib,
        "Mi" => kib.powi(2),
        "Gi" => kib.powi(3),
        "Ti" => kib.powi(4),
        "Pi" => kib.powi(5),
        "Ei" => kib.powi(6),
        _ => match suffix.strip_prefix('e').or_else(|| suffix.strip_prefix('E')).and_then(|e| e.parse::<i32>().ok()) {
            Some(exponent) => 10.0_f64.powi(exponent),
            None => return Err(invalid("unknown suffix")),
        },
    };
    let bytes = (value * multiplier).ceil();
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(invalid("too large"));
    }
    if bytes < 1.0 {
        return Err(invalid("must be above zero"));
    }
    Ok(bytes as u64)
}

/// Reads the file (`-` is stdin) and returns its CronJobs as JSON values.
pub(crate) fn read_items(path: &Path) -> Result<Vec<Value>> {
    if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin().lock().read_to_end(&mut bytes).map_err(|e| Error::Input(format!("stdin: {e}")))?;
        return items_of("stdin", &bytes);
    }
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::Input(format!("{name}: {e}")))?;
    items_of(&name, &bytes)
}

/// The items of a `List`, of a JSON array, or one CronJob. Items stay untyped: real clusters
/// carry fields no schema here knows.
fn items_of(name: &str, bytes: &[u8]) -> Result<Vec<Value>> {
    let no_items = || {
        Error::Input(format!(
            "{name}: no items: expected the output of `kubectl get cronjobs -A -o json` \
             (a List with items), one CronJob, or a JSON array of CronJobs"
        ))
    };
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| Error::Input(format!("{name}: not JSON: {e}")))?;
    match doc {
        Value::Array(items) => Ok(items),
        Value::Object(mut map) => match map.remove("items") {
            Some(Value::Array(items)) => Ok(items),
            Some(_) => Err(Error::Input(format!("{name}: items is not an array"))),
            None if map.get("kind").and_then(Value::as_str) == Some("CronJob") => Ok(vec![Value::Object(map)]),
            None => Err(no_items()),
        },
        _ => Err(no_items()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plan::testkit::cronjob;
    use crate::plan::units::MIB;

    #[test]
    fn quantities() {
        assert_eq!(parse_quantity("512Mi"), Ok(512 * MIB));
        assert_eq!(parse_quantity("1Gi"), Ok(1024 * MIB));
        assert_eq!(parse_quantity("800M"), Ok(800_000_000));
        assert_eq!(parse_quantity("1.5Gi"), Ok(1536 * MIB));
        assert_eq!(parse_quantity("2048"), Ok(2048));
        assert_eq!(parse_quantity("64Ki"), Ok(65_536));
        assert_eq!(parse_quantity("1e9"), Ok(1_000_000_000));
        assert_eq!(parse_quantity("2k"), Ok(2000));
        for bad in ["", "Mi", "-1Gi", "0", "12XB", "1.2.3Mi", "5m", "512mi"] {
            assert!(parse_quantity(bad).is_err(), "{bad:?} should not parse");
        }
        assert!(parse_quantity("12XB").expect_err("bad").contains("\"12XB\""));
    }

    #[test]
    fn reads_lists_arrays_and_single_cronjobs() {
        let one = cronjob("a", "0 * * * *");
        let list =
            json!({"apiVersion": "v1", "kind": "List", "items": [one, one], "metadata": {"resourceVersion": ""}});
        assert_eq!(items_of("f", list.to_string().as_bytes()).expect("list").len(), 2);
        assert_eq!(items_of("f", json!([one]).to_string().as_bytes()).expect("array").len(), 1);
        assert_eq!(items_of("f", one.to_string().as_bytes()).expect("one").len(), 1);
        assert!(items_of("f", br#"{"kind":"List","items":[]}"#).expect("empty").is_empty());
        let err = items_of("cronjobs.yaml", b"apiVersion: v1\nkind: List\n").expect_err("yaml").to_string();
        assert!(err.starts_with("cronjobs.yaml: not JSON"), "{err}");
        let err = items_of("pod.json", br#"{"kind":"Pod"}"#).expect_err("pod").to_string();
        assert!(err.starts_with("pod.json: no items"), "{err}");
        let err = items_of("x.json", br#"{"items":{}}"#).expect_err("items object").to_string();
        assert_eq!(err, "x.json: items is not an array");
        assert!(items_of("n.json", b"42").expect_err("number").to_string().contains("no items"));
    }
}
