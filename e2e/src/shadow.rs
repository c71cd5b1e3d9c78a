//! `cronshard shadow` checked against the audit log: the same run judged twice, once by
//! shadow mode from its watches and once by the harness from the simulator's audit log.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::analysis::Analysis;

/// The user `cronshard shadow` runs as in the benchmark.
pub const SHADOW_USER: &str = "shadow";

/// What both sides count.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counts {
    pub created: u64,
    /// Runs with no Job: missed, or still pending when the run ended.
    pub missed: u64,
    pub duplicates: u64,
    pub skew_p50_s: f64,
    pub skew_p99_s: f64,
}

/// Shadow mode's verdicts beside the audit log's, and what shadow mode sent the server.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ShadowCheck {
    pub audit: Counts,
    pub shadow: Counts,
    /// Requests by the shadow user that read (get, list, watch).
    pub reads: usize,
    /// Requests by the shadow user of any other verb: must be 0.
    pub writes: usize,
}

impl ShadowCheck {
    /// Missed and duplicates equal, and skew percentiles within `tolerance_s`.
    pub fn agrees(&self, tolerance_s: f64) -> bool {
        let (a, s) = (&self.audit, &self.shadow);
        a.created == s.created
            && a.missed == s.missed
            && a.duplicates == s.duplicates
            && (a.skew_p50_s - s.skew_p50_s).abs() <= tolerance_s
            && (a.skew_p99_s - s.skew_p99_s).abs() <= tolerance_s
    }
}

/// Compares the audit log's `analysis` with shadow mode's JSON report; `records` is the
/// audit log, for what the shadow user sent.
pub fn check(analysis: &Analysis, report: &Value, records: &[Value]) -> ShadowCheck {
    let total = |key: &str| report["totals"][key].as_u64().unwrap_or(0);
    let by_shadow = || records.iter().filter(|r| r["user"] == SHADOW_USER);
    let is_read = |r: &&Value| matches!(r["verb"].as_str(), Some("get" | "list" | "watch"));
    ShadowCheck {
        audit: Counts {
            created: analysis.created as u64,
            missed: analysis.missed as u64,
            duplicates: analysis.duplicates as u64,
            skew_p50_s: analysis.skew_s.p50,
            skew_p99_s: analysis.skew_s.p99,
        },
        shadow: Counts {
            created: total("created"),
            missed: total("missed") + total("pending"),
            duplicates: total("duplicate"),
            skew_p50_s: report["skew_s"]["p50"].as_f64().unwrap_or(f64::NAN),
            skew_p99_s: report["skew_s"]["p99"].as_f64().unwrap_or(f64::NAN),
        },
        reads: by_shadow().filter(is_read).count(),
        writes: by_shadow().filter(|r| !is_read(r)).count(),
    }
}

/// With `--shadow`: a line per arm (its name and check), shadow mode's counts beside the audit
/// log's.
pub fn lines<'a>(arms: impl Iterator<Item = (&'a str, &'a ShadowCheck)>, out: &mut String) {
    for (name, c) in arms {
        let (s, x) = (&c.shadow, &c.audit);
        let _ = writeln!(
            out,
            "cronshard shadow beside {} (audit log in brackets): created {} ({}), missed {} ({}), duplicates {} ({}), \
             p50 {:.2} s ({:.2}), p99 {:.2} s ({:.2}); its requests: {} reads, {} writes",
            name,
            s.created,
            x.created,
            s.missed,
            x.missed,
            s.duplicates,
            x.duplicates,
            s.skew_p50_s,
            x.skew_p50_s,
            s.skew_p99_s,
            x.skew_p99_s,
            c.reads,
            c.writes
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::analysis::Percentiles;

    #[test]
    fn pending_runs_count_as_missed_and_any_other_verb_is_a_write() {
        let analysis = Analysis {
            created: 10,
            missed: 3,
            duplicates: 0,
            skew_s: Percentiles { p50: 1.0, p99: 4.0, max: 4.0 },
            ..Analysis::default()
        };
        let report = json!({"totals": {"created": 10, "missed": 2, "pending": 1, "duplicate": 0},
            "skew_s": {"p50": 1.2, "p99": 3.6}});
        let records = vec![
            json!({"user": "shadow", "verb": "list"}),
            json!({"user": "shadow", "verb": "watch"}),
            json!({"user": "bench-0", "verb": "create"}),
        ];
        let c = check(&analysis, &report, &records);
        assert_eq!((c.reads, c.writes), (2, 0));
        assert!(c.agrees(0.5), "{c:?}");
        assert!(!c.agrees(0.3), "p99 is 0.4 s apart");
        let mut written = records.clone();
        written.push(json!({"user": "shadow", "verb": "patch"}));
        assert_eq!(check(&analysis, &report, &written).writes, 1);
    }
}
