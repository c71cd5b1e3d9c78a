//! Shard selectors (KEP-5866, kube-apiserver's `ShardedListAndWatch` feature gate): ranges of
//! the FNV-1a 64 hash of an object's uid or namespace, ORed, as `ListOptions.shardSelector`
//! spells them; a filtered list echoes the selector in `metadata.shardInfo`.

use crate::error::{ApiError, Result};
use crate::store::Object;

/// Which field a shard selector hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Uid,
    Namespace,
}

/// A parsed `shardSelector`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardSelector {
    key: Key,
    /// `[start, end)` over the 64-bit hash space (end up to 2⁶⁴).
    ranges: Vec<(u128, u128)>,
    /// As given, for `metadata.shardInfo.selector`.
    pub text: String,
}

fn invalid(why: String) -> ApiError {
    ApiError::BadRequest(format!("invalid shard selector: {why}"))
}

/// A bound: `'0x'` and 16 lowercase hex digits (17 for 2⁶⁴), quoted.
fn bound(text: &str, which: &str) -> Result<u128> {
    let quoted = text.trim();
    let inner = quoted
        .strip_prefix('\'')
        .and_then(|t| t.strip_suffix('\''))
        .ok_or_else(|| invalid(format!("{which} must be a single-quoted string, got {quoted}")))?;
    let digits = inner.strip_prefix("0x").unwrap_or("");
    let is_max = inner == "0x10000000000000000";
    if !(is_max || digits.len() == 16 && digits.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))) {
        return Err(invalid(format!("{which} must be a 0x-prefixed 16-digit hex value, got {inner:?}")));
    }
    u128::from_str_radix(digits, 16).map_err(|e| invalid(format!("{which}: {e}")))
}

impl ShardSelector {
    /// Parses `shardRange(object.metadata.uid, '0x…', '0x…') || …`.
    pub fn parse(text: &str) -> Result<Self> {
        let mut key = None;
        let mut ranges = Vec::new();
        for term in text.split("||") {
            let inner = term
                .trim()
                .strip_prefix("shardRange(")
                .and_then(|t| t.strip_suffix(')'))
                .ok_or_else(|| invalid("expected shardRange() call or || operator".to_owned()))?;
            let parts: Vec<&str> = inner.split(',').collect();
            let [field, start, end] = parts[..] else {
                return Err(invalid("shardRange() takes a field and two bounds".to_owned()));
            };
            let this = match field.trim() {
                "object.metadata.uid" => Key::Uid,
                "object.metadata.namespace" => Key::Namespace,
                other => return Err(invalid(format!("unsupported field {other:?}"))),
            };
            if key.is_some_and(|k| k != this) {
                return Err(invalid("all shardRange() calls must use the same field".to_owned()));
            }
            key = Some(this);
            let (start, end) = (bound(start, "hexStart")?, bound(end, "hexEnd")?);
            if start >= end {
                return Err(invalid("hexStart must be less than hexEnd".to_owned()));
            }
            ranges.push((start, end));
        }
        let key = key.ok_or_else(|| invalid("empty".to_owned()))?;
        Ok(ShardSelector { key, ranges, text: text.to_owned() })
    }

    pub fn matches(&self, object: &Object) -> bool {
        let value = match self.key {
            Key::Uid => object.uid.as_str(),
            Key::Namespace => object.namespace.as_str(),
        };
        let hash = u128::from(fnv1a64(value.as_bytes()));
        self.ranges.iter().any(|(start, end)| (*start..*end).contains(&hash))
    }
}

/// FNV-1a 64, as Go's `hash/fnv` computes it.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse_as_kube_apiserver_reads_them() {
        let s = ShardSelector::parse(
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || \
             shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')",
        )
        .expect("valid");
        assert_eq!(s.ranges, vec![(0, 1 << 63), (0xc000_0000_0000_0000, 1 << 64)]);
        for bad in [
            "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
            "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
            "garbage",
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
        ] {
            assert!(ShardSelector::parse(bad).is_err(), "{bad}");
        }
        // The hash kube-apiserver v1.37 computed for this uid (a CronJob it placed in the lower half).
        assert_eq!(fnv1a64(b"bd03d006-03d2-42a5-af54-1179e96c02c8"), 0x1dd8_b52f_66cb_888d);
    }
}
