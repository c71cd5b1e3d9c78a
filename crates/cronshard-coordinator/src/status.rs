//! `cronshard status`: the bucket map as the Leases tell it, for people.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams};
use serde::Serialize;

use crate::lease::{LeaseInfo, ROLE_LABEL, Role};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    pub identity: String,
    pub buckets_flag: Option<u32>,
    /// Seconds since the last renewal by the server's timestamps (a one-shot reader has no
    /// observation history; the replicas themselves judge on their own clocks).
    pub renewed_seconds_ago: Option<f64>,
    pub expired: bool,
    pub buckets: Vec<u32>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Transition {
    pub bucket: u32,
    pub holder: String,
    pub epoch: i32,
    pub acquire_time: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub namespace: String,
    /// The bucket count of record (Lease `cronshard-config`), else the one asked for.
    pub buckets: u32,
    /// The count of record is stored (false: no replica has recorded one yet).
    pub recorded: bool,
    /// The bucket function of record (`uid`, `name`, or `unknown` for one this release does
    /// not know); absent while none is recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket_function: Option<String>,
    pub members: Vec<Member>,
    /// Buckets with no Lease, a released one, or a holder that is not a live member.
    pub unowned: Vec<u32>,
    /// The latest claims, newest first.
    pub last_transitions: Vec<Transition>,
}

fn age(lease: &Lease, now: k8s_openapi::jiff::Timestamp) -> Option<f64> {
    let renewed = lease.spec.as_ref()?.renew_time.as_ref()?.0;
    Some(now.duration_since(renewed).as_secs_f64())
}

/// Reads every cronshard Lease in the namespace.
pub async fn read(api: &Api<Lease>, namespace: &str, buckets: u32) -> crate::error::Result<Report> {
    let leases = api.list(&ListParams::default().labels(ROLE_LABEL)).await?;
    let now = k8s_openapi::jiff::Timestamp::now();
    let mut members: BTreeMap<String, Member> = BTreeMap::new();
    let mut holders: BTreeMap<u32, (LeaseInfo, Option<String>)> = BTreeMap::new();
    let (mut record, mut function) = (None, None);
    for lease in &leases.items {
        let Some(info) = LeaseInfo::from_lease(lease) else { continue };
        match &info.role {
            Role::Member(id) => {
                let ago = age(lease, now);
                let duration = lease.spec.as_ref().and_then(|s| s.lease_duration_seconds).unwrap_or(15);
                members.insert(
                    id.clone(),
                    Member {
                        identity: id.clone(),
                        buckets_flag: info.bucket_count,
                        renewed_seconds_ago: ago.map(|a| (a * 10.0).round() / 10.0),
                        expired: ago.is_none_or(|a| a > f64::from(duration)),
                        buckets: Vec::new(),
                    },
                );
            }
            Role::Bucket(b) => {
                let acquired = lease.spec.as_ref().and_then(|s| s.acquire_time.as_ref()).map(|t| t.0.to_string());
                holders.insert(*b, (info, acquired));
            }
            Role::Config => {
                record = info.bucket_count;
                function = Some(info.bucket_function.map_or("unknown", |f| f.as_str()).to_owned());
            }
        }
    }
    let buckets = record.unwrap_or(buckets);
    let mut unowned = Vec::new();
    for b in 0..buckets {
        let holder = holders.get(&b).and_then(|(i, _)| i.holder.clone()).filter(|h| !h.is_empty());
        match holder.and_then(|h| members.get_mut(&h).filter(|m| !m.expired)) {
            Some(m) => m.buckets.push(b),
            None => unowned.push(b),
        }
    }
    let mut last_transitions: Vec<Transition> = holders
        .iter()
        .filter_map(|(b, (info, acquired))| {
            Some(Transition {
                bucket: *b,
                holder: info.holder.clone().unwrap_or_default(),
                epoch: info.transitions,
                acquire_time: acquired.clone()?,
            })
        })
        .collect();
    last_transitions.sort_by(|a, b| b.acquire_time.cmp(&a.acquire_time).then(a.bucket.cmp(&b.bucket)));
    last_transitions.truncate(10);
    Ok(Report {
        namespace: namespace.to_owned(),
        buckets,
        recorded: record.is_some(),
        bucket_function: function.filter(|_| record.is_some()),
        members: members.into_values().collect(),
        unowned,
        last_transitions,
    })
}

/// Compact bucket lists: `0-3,7,9-10`.
fn ranges(buckets: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < buckets.len() {
        let start = buckets[i];
        let mut end = start;
        while i + 1 < buckets.len() && buckets[i + 1] == end + 1 {
            i += 1;
            end = buckets[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        let _ = if start == end { write!(out, "{start}") } else { write!(out, "{start}-{end}") };
        i += 1;
    }
    if out.is_empty() { "-".to_owned() } else { out }
}

/// The report as a table.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let recorded = if report.recorded { "" } else { " (none recorded yet)" };
    let _ = writeln!(
        out,
        "namespace {}, {} buckets{recorded}, {} members",
        report.namespace,
        report.buckets,
        report.members.len()
    );
    if let Some(function) = &report.bucket_function {
        let _ = writeln!(out, "bucket function {function}");
    }
    let _ = writeln!(out, "\n{:<40} {:>8} {:>9} {:>8}  BUCKETS", "MEMBER", "RENEWED", "--buckets", "OWNED");
    for m in &report.members {
        let renewed = match (m.renewed_seconds_ago, m.expired) {
            (_, true) => "expired".to_owned(),
            (Some(a), false) => format!("{a:.1}s ago"),
            (None, false) => "-".to_owned(),
        };
        let flag = m.buckets_flag.map_or_else(|| "?".to_owned(), |c| c.to_string());
        let _ = writeln!(
            out,
            "{:<40} {:>8} {:>9} {:>8}  {}",
            m.identity,
            renewed,
            flag,
            m.buckets.len(),
            ranges(&m.buckets)
        );
    }
    let _ = writeln!(out, "\nunowned buckets: {} ({})", report.unowned.len(), ranges(&report.unowned));
    if !report.last_transitions.is_empty() {
        let _ = writeln!(out, "\nlast transitions:");
        for t in &report.last_transitions {
            let holder = if t.holder.is_empty() { "(released)" } else { &t.holder };
            let _ = writeln!(out, "  {}  bucket {:<4} epoch {:<4} {}", t.acquire_time, t.bucket, t.epoch, holder);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    //! The bucket list in short.

    use super::*;

    #[test]
    fn bucket_ranges() {
        assert_eq!(ranges(&[0, 1, 2, 3, 7, 9, 10]), "0-3,7,9-10");
        assert_eq!(ranges(&[]), "-");
        assert_eq!(ranges(&[5]), "5");
    }
}
