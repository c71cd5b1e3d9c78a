//! The work an arm got done: its accepted writes by kind, so that a faster herd is seen not
//! to come from dropped Events, status writes, labels or history cleanups.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

/// Writes the server accepted (2xx), by what they are for, over the whole run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Work {
    pub job_creates: usize,
    /// Events created, and repeats of one folded into a patch (client-go's correlator does).
    pub events: usize,
    /// Updates and patches of `cronjobs/status`.
    pub status_writes: usize,
    /// Patches of CronJobs and Jobs themselves: the bucket labels.
    pub label_patches: usize,
    /// Jobs deleted: history cleanup.
    pub job_deletes: usize,
}

impl Work {
    /// Counts the accepted writes among audit `records` (`verb`, `resource`, `code`).
    pub fn count(records: &[Value]) -> Work {
        let mut w = Work::default();
        for r in records {
            if !r["code"].as_u64().is_some_and(|c| (200..300).contains(&c)) {
                continue;
            }
            let slot = match (r["verb"].as_str().unwrap_or(""), r["resource"].as_str().unwrap_or("")) {
                ("create", "jobs") => &mut w.job_creates,
                ("create" | "patch", "events") => &mut w.events,
                ("update" | "patch", "cronjobs/status") => &mut w.status_writes,
                ("patch", "cronjobs" | "jobs") => &mut w.label_patches,
                ("delete", "jobs") => &mut w.job_deletes,
                _ => continue,
            };
            *slot += 1;
        }
        w
    }
}

/// The table of every arm's accepted writes, with the simulator's CPU seconds where known,
/// for the report's text.
pub fn table<'a>(arms: impl Iterator<Item = (&'a str, &'a Work, Option<f64>)>, out: &mut String) {
    let arms: Vec<(&str, &Work, Option<f64>)> = arms.collect();
    let w = arms.iter().map(|(name, ..)| name.len()).max().unwrap_or(0).max(13);
    let _ = writeln!(
        out,
        "{:<w$} {:>11} {:>8} {:>13} {:>13} {:>11} {:>10}",
        "work done", "job creates", "events", "status writes", "label patches", "job deletes", "sim cpu s"
    );
    for (name, x, sim_cpu_s) in arms {
        let sim = sim_cpu_s.map_or_else(|| "-".to_owned(), |s| format!("{s:.1}"));
        let _ = writeln!(
            out,
            "{name:<w$} {:>11} {:>8} {:>13} {:>13} {:>11} {sim:>10}",
            x.job_creates, x.events, x.status_writes, x.label_patches, x.job_deletes
        );
    }
    let _ = writeln!(out, "(writes the server accepted over the whole run, by kind; sim cpu s: the simulator's CPU)");
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_accepted_writes_count_each_by_its_kind() {
        let r = |verb: &str, resource: &str, code: u64| json!({"verb": verb, "resource": resource, "code": code});
        let records = vec![
            r("create", "jobs", 201),
            r("create", "jobs", 429),
            r("create", "jobs", 409),
            r("create", "events", 201),
            r("patch", "events", 200),
            r("update", "cronjobs/status", 200),
            r("update", "cronjobs/status", 409),
            r("patch", "cronjobs/status", 200),
            r("patch", "cronjobs", 200),
            r("patch", "jobs", 200),
            r("delete", "jobs", 200),
            r("delete", "jobs", 404),
            r("update", "leases", 200),
            r("list", "jobs", 200),
        ];
        let work = Work::count(&records);
        let expected = Work { job_creates: 1, events: 2, status_writes: 2, label_patches: 2, job_deletes: 1 };
        assert_eq!(work, expected);
        let mut out = String::new();
        table([("cronshard-2", &work, Some(12.34)), ("v2", &work, None)].into_iter(), &mut out);
        let numbers = |row: usize| -> Vec<String> {
            let line = out.lines().nth(row).expect("a row per arm");
            line.split_whitespace().skip(1).map(str::to_owned).collect()
        };
        assert_eq!(numbers(1), ["1", "2", "2", "2", "1", "12.3"]);
        assert_eq!(numbers(2), ["1", "2", "2", "2", "1", "-"]);
    }
}
