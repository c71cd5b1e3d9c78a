//! `kubectl cronshard get`'s table: one row per CronJob, with its next run computed by the
//! controller's own schedule engine and the bucket and replica that run it. Pure: the objects
//! and the time come in, text goes out.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::num::NonZeroU32;

use cronshard_types::spread::{self, SPREAD_ANNOTATION};
use cronshard_types::{BucketFunction, CronJobSchedule, DstPolicy, Timestamp};
use cronshard_worker::objects::convert::from_k8s;
use k8s_openapi::api::batch::v1::CronJob;

/// Which bucket each CronJob is in and who holds it: the deployment's record and its Leases.
#[derive(Clone, Debug, Default)]
pub(crate) struct Placement {
    /// The recorded function and count; `None` while no deployment has recorded one (or the
    /// function is one this release does not know).
    pub(crate) layout: Option<(BucketFunction, NonZeroU32)>,
    /// Bucket -> the live replica that holds it.
    pub(crate) holders: BTreeMap<u32, String>,
}

/// What the NEXT column is computed with besides the CronJob.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock<'a> {
    pub(crate) now: Timestamp,
    /// The deployment's `--dst-policy`.
    pub(crate) policy: DstPolicy,
    /// Namespace -> its `cronshard.io/spread` default.
    pub(crate) namespace_spreads: &'a BTreeMap<String, String>,
}

/// The columns of one CronJob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) schedule: String,
    pub(crate) time_zone: String,
    pub(crate) suspend: String,
    pub(crate) active: usize,
    pub(crate) last_schedule: String,
    pub(crate) next: String,
    /// NEXT as an instant in the CronJob's time zone (`-o wide`).
    pub(crate) next_at: String,
    pub(crate) bucket: String,
    pub(crate) replica: String,
    pub(crate) age: String,
}

const NONE: &str = "<none>";

/// The row of `cj`.
pub(crate) fn row(cj: &CronJob, clock: &Clock<'_>, placement: &Placement) -> Row {
    let meta = &cj.metadata;
    let namespace = meta.namespace.clone().unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    let status = cj.status.as_ref();
    let last = status.and_then(|s| s.last_schedule_time.as_ref()).map(from_k8s);
    let (next, next_at) = match next_start(cj, clock) {
        Ok(Some((at, zone_time))) => (format!("in {}", human(at.duration_since(clock.now))), zone_time),
        Ok(None) => ("<never>".to_owned(), NONE.to_owned()),
        Err(_) => ("<invalid schedule>".to_owned(), NONE.to_owned()),
    };
    let bucket = placement
        .layout
        .map(|(function, count)| function.bucket(&namespace, &name, meta.uid.as_deref().unwrap_or_default(), count));
    Row {
        schedule: cj.spec.schedule.clone(),
        time_zone: cj.spec.time_zone.clone().unwrap_or_else(|| NONE.to_owned()),
        suspend: if cj.spec.suspend.unwrap_or(false) { "True" } else { "False" }.to_owned(),
        active: status.and_then(|s| s.active.as_ref()).map_or(0, Vec::len),
        last_schedule: last.map_or_else(|| NONE.to_owned(), |t| human(clock.now.duration_since(t))),
        next,
        next_at,
        bucket: bucket.map_or_else(|| NONE.to_owned(), |b| b.to_string()),
        replica: bucket.and_then(|b| placement.holders.get(&b).cloned()).unwrap_or_else(|| NONE.to_owned()),
        age: meta
            .creation_timestamp
            .as_ref()
            .map_or_else(|| NONE.to_owned(), |t| human(clock.now.duration_since(from_k8s(t)))),
        namespace,
        name,
    }
}

/// When the CronJob's next run starts, as the controller would start it: the first scheduled
/// time after its latest one (an `@every` schedule counts from `lastScheduleTime`, else the
/// creation), plus its spread offset; a run already due whose offset has not passed yet comes
/// first. `None`: the schedule never fires again. Also that instant in the CronJob's zone.
fn next_start(cj: &CronJob, clock: &Clock<'_>) -> cronshard_types::Result<Option<(Timestamp, String)>> {
    let schedule = CronJobSchedule::new(&cj.spec.schedule, cj.spec.time_zone.as_deref())?.with_dst_policy(clock.policy);
    let status = cj.status.as_ref();
    let earliest = status
        .and_then(|s| s.last_schedule_time.as_ref())
        .or(cj.metadata.creation_timestamp.as_ref())
        .map_or(clock.now, from_k8s);
    let due = match schedule.due(earliest, clock.now, None) {
        Err(cronshard_types::Error::NoFireTime { .. }) => return Ok(None),
        due => due?,
    };
    let offset = spread_offset(cj, &schedule, clock);
    let start = |t: Timestamp| t.checked_add(jiff::SignedDuration::from_secs(offset)).ok();
    let pending = due.due.and_then(start).filter(|at| *at > clock.now);
    let next = match pending {
        Some(at) => Some(at),
        None => schedule.schedule().next_after(due.due.unwrap_or(earliest)).and_then(start),
    };
    Ok(next.map(|at| (at, schedule.time_zone().format_rfc3339(at))))
}

/// The CronJob's spread offset in seconds: its own annotation, else its Namespace's; 0 when
/// none applies (one the controller would ignore, with a Warning, is ignored here too).
fn spread_offset(cj: &CronJob, schedule: &CronJobSchedule, clock: &Clock<'_>) -> i64 {
    let namespace = cj.metadata.namespace.as_deref().unwrap_or_default();
    let own = cj.metadata.annotations.as_ref().and_then(|a| a.get(SPREAD_ANNOTATION));
    let Some(text) = own.or_else(|| clock.namespace_spreads.get(namespace)) else { return 0 };
    match spread::seconds_for(schedule, text, clock.now) {
        Ok(seconds) => {
            let name = cj.metadata.name.as_deref().unwrap_or_default();
            i64::try_from(spread::offset(namespace, name, seconds)).unwrap_or(0)
        }
        Err(_) => 0,
    }
}

/// A duration the way kubectl prints ages (`42s`, `3m12s`, `5h`, `2d3h`).
pub(crate) fn human(d: jiff::SignedDuration) -> String {
    let s = d.as_secs().max(0);
    let (m, h, days) = (s / 60, s / 3600, s / 86_400);
    if s < 120 {
        format!("{s}s")
    } else if s < 600 && s % 60 != 0 {
        format!("{m}m{}s", s % 60)
    } else if s < 10_800 {
        format!("{m}m")
    } else if s < 28_800 && m % 60 != 0 {
        format!("{h}h{}m", m % 60)
    } else if s < 172_800 {
        format!("{h}h")
    } else if s < 691_200 && h % 24 != 0 {
        format!("{days}d{}h", h % 24)
    } else if s < 63_072_000 {
        format!("{days}d")
    } else {
        format!("{}y", days / 365)
    }
}

/// The table, kubectl-style: a NAMESPACE column with `all_namespaces`, NEXT AT with `wide`.
pub(crate) fn render(rows: &[Row], all_namespaces: bool, wide: bool) -> String {
    let mut header = vec!["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "NEXT"];
    if wide {
        header.push("NEXT AT");
    }
    header.extend(["BUCKET", "REPLICA", "AGE"]);
    if all_namespaces {
        header.insert(0, "NAMESPACE");
    }
    let mut lines: Vec<Vec<String>> = vec![header.iter().map(|h| (*h).to_owned()).collect()];
    for r in rows {
        let mut line = vec![r.name.clone(), r.schedule.clone(), r.time_zone.clone(), r.suspend.clone()];
        line.extend([r.active.to_string(), r.last_schedule.clone(), r.next.clone()]);
        if wide {
            line.push(r.next_at.clone());
        }
        line.extend([r.bucket.clone(), r.replica.clone(), r.age.clone()]);
        if all_namespaces {
            line.insert(0, r.namespace.clone());
        }
        lines.push(line);
    }
    let widths: Vec<usize> =
        (0..lines[0].len()).map(|c| lines.iter().map(|l| l[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for line in &lines {
        let mut text = String::new();
        for (c, cell) in line.iter().enumerate() {
            let _ = write!(text, "{cell:<width$}   ", width = widths[c]);
        }
        let _ = writeln!(out, "{}", text.trim_end());
    }
    out
}

#[cfg(test)]
#[path = "get_table_tests.rs"]
mod tests;
