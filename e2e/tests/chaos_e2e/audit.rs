//! Reading the simulator's audit log: who wrote what, and when each bucket changed hands.

use std::collections::HashMap;

use serde_json::Value;

pub(crate) fn seconds(record: &Value) -> f64 {
    let t: jiff::Timestamp = record["time"].as_str().expect("time").parse().expect("timestamp");
    t.as_millisecond() as f64 / 1000.0
}

/// How long after the fault (audit record `cut`) the last of `who`'s buckets was claimed
/// again (by a peer, or by `who`'s restarted process: the dead or cut-off one writes nothing).
pub(crate) fn takeover_seconds(audit: &[Value], cut: usize, who: &str) -> f64 {
    let ok_write = |r: &Value| r["verb"] == "update" || r["verb"] == "create";
    let ok = |r: &Value| r["code"].as_u64().is_some_and(|c| (200..300).contains(&c));
    let fault = seconds(&audit[cut]);
    let mut holder: HashMap<&str, &str> = HashMap::new();
    for r in audit[..cut].iter().filter(|r| r["resource"] == "leases" && ok(r) && ok_write(r)) {
        if let Some(name) = r["name"].as_str().filter(|n| n.starts_with("cronshard-bucket-")) {
            holder.insert(name, r["user"].as_str().unwrap_or_default());
        }
    }
    let held: Vec<&str> = holder.iter().filter(|(_, u)| **u == who).map(|(n, _)| *n).collect();
    assert!(!held.is_empty(), "{who} held buckets: {holder:?}");
    held.iter()
        .map(|lease| {
            let taken = audit[cut..]
                .iter()
                .find(|r| r["name"] == *lease && ok(r) && ok_write(r))
                .unwrap_or_else(|| panic!("{lease} of {who} taken over"));
            seconds(taken) - fault
        })
        .fold(0.0, f64::max)
}

/// Jobs created per name, from the audit log.
pub(crate) fn creates(audit: &[Value]) -> HashMap<&str, usize> {
    let mut creates: HashMap<&str, usize> = HashMap::new();
    for r in audit.iter().filter(|r| r["verb"] == "create" && r["resource"] == "jobs" && r["code"] == 201) {
        *creates.entry(r["name"].as_str().unwrap_or_default()).or_default() += 1;
    }
    creates
}

pub(crate) fn ok_write(r: &Value) -> bool {
    r["code"].as_u64().is_some_and(|c| (200..300).contains(&c))
        && matches!(r["verb"].as_str(), Some("create" | "update" | "patch" | "delete"))
}

/// Holder intervals from the audit log: a bucket is held by the holder its Lease was last
/// written with (released: nobody). Every successful write to an object of a bucket must
/// come from that bucket's holder at that moment, so no replica acts on a bucket outside its
/// interval, and no two replicas' intervals overlap in writes. Returns how many writes were
/// checked and the violations.
pub(crate) fn writes_outside_holder_intervals(audit: &[Value]) -> (usize, Vec<String>) {
    let mut holder: HashMap<String, String> = HashMap::new();
    let (mut checked, mut violations) = (0, Vec::new());
    for r in audit.iter().filter(|r| ok_write(r)) {
        let user = r["user"].as_str().unwrap_or_default();
        let name = r["name"].as_str().unwrap_or_default();
        if r["resource"] == "leases" {
            if let Some(b) = name.strip_prefix("cronshard-bucket-") {
                holder.insert(b.to_owned(), r["holder"].as_str().unwrap_or_default().to_owned());
            }
            continue;
        }
        let Some(b) = r["bucket"].as_str() else { continue };
        checked += 1;
        if holder.get(b).map(String::as_str) != Some(user) {
            violations.push(format!(
                "seq {}: {user} wrote {} {name} in bucket {b} held by {:?}",
                r["seq"],
                r["resource"],
                holder.get(b)
            ));
        }
    }
    (checked, violations)
}

/// Bucket Leases taken from a holder that did not release them (previous holder, new holder,
/// audit seq), in log order.
pub(crate) fn takeovers(audit: &[Value]) -> Vec<(String, String, u64)> {
    let mut holder: HashMap<&str, String> = HashMap::new();
    let mut taken = Vec::new();
    for r in audit.iter().filter(|r| ok_write(r) && r["resource"] == "leases") {
        let Some(name) = r["name"].as_str().filter(|n| n.starts_with("cronshard-bucket-")) else { continue };
        let now = r["holder"].as_str().unwrap_or_default().to_owned();
        if let Some(before) = holder.insert(name, now.clone())
            && !before.is_empty()
            && !now.is_empty()
            && before != now
        {
            taken.push((before, now, r["seq"].as_u64().unwrap_or_default()));
        }
    }
    taken
}

/// Each bucket Lease's last successful writer.
pub(crate) fn bucket_writers(audit: &[Value]) -> HashMap<String, String> {
    let mut last = HashMap::new();
    for r in audit {
        let Some(name) = r["name"].as_str().filter(|n| n.starts_with("cronshard-bucket-")) else { continue };
        let ok = r["code"].as_u64().is_some_and(|c| (200..300).contains(&c));
        if r["resource"] == "leases" && ok && matches!(r["verb"].as_str(), Some("create" | "update")) {
            last.insert(name.to_owned(), r["user"].as_str().unwrap_or_default().to_owned());
        }
    }
    last
}
