//! Scenarios as files: the CronJob mix, the simulator's settings, the faults. Seeded and
//! scalable (`--cronjobs`, `--window-s`), so every arm sees exactly the same objects.

use std::num::NonZeroU32;

use cronshard_types::{CronJobSchedule, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A share of the CronJobs with one schedule.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// Fraction of the scenario's CronJobs (shares are normalised).
    pub share: f64,
    pub schedule: String,
    /// `spec.timeZone` values, used round-robin; empty: none (UTC).
    #[serde(default)]
    pub time_zones: Vec<String>,
    /// `cronshard.io/spread` on each of the group's CronJobs.
    #[serde(default)]
    pub spread: Option<String>,
}

/// The simulator's settings, identical for every arm.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SimSettings {
    pub admitted_writes_per_s: f64,
    pub compaction_interval_s: u64,
    /// Fraction of creates answered 500.
    #[serde(default)]
    pub create_error_rate: f64,
}

/// A fault the harness applies during the window.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// SIGKILL a controller process (by index), restarted `restart_after_s` later.
    Kill { at_s: f64, replica: usize, restart_after_s: f64 },
    /// The process's requests hang for `for_s`.
    Partition { at_s: f64, replica: usize, for_s: f64 },
    /// Compact history every `every_s` from `at_s`.
    Compact { at_s: f64, every_s: f64 },
    /// Drop every watch every `every_s` from `at_s`.
    DropWatches { at_s: f64, every_s: f64 },
    /// A rolling restart as a Deployment with maxSurge 1, maxUnavailable 0 does it: from
    /// `at_s`, every `step_s` one replica gets a successor (a new process with a new
    /// identity), and `surge_s` later the old one gets SIGTERM.
    RollingRestart { at_s: f64, step_s: f64, surge_s: f64 },
}

/// CronJobs created while the controllers run.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Later {
    /// Relative to the scenario's `cronjobs` (0.72 = 72% more).
    pub ratio: f64,
    pub at_s: f64,
    pub groups: Vec<Group>,
}

/// One scenario file.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub seed: u64,
    pub cronjobs: usize,
    pub namespaces: usize,
    /// The measured window, in seconds of (simulated) time.
    pub window_s: f64,
    /// The clock starts this long before the next hour (so hourly and daily herds fall inside).
    pub lead_s: f64,
    /// Runs due in the last `grace_s` of the window are not counted (still in flight).
    pub grace_s: f64,
    /// The controllers were down this long: CronJobs were created this much earlier.
    #[serde(default)]
    pub downtime_s: f64,
    pub sim: SimSettings,
    pub groups: Vec<Group>,
    #[serde(default)]
    pub later: Option<Later>,
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// Replica counts of the cronshard arms this scenario is meant for.
    #[serde(default)]
    pub replicas: Vec<usize>,
}

/// One CronJob of a scenario.
#[derive(Clone, Debug)]
pub struct CronJobSeed {
    pub namespace: String,
    pub name: String,
    pub schedule: String,
    pub time_zone: Option<String>,
    pub created: Timestamp,
    /// Seconds from the window's start at which it appears.
    pub appears_s: f64,
    /// Its `cronshard.io/spread`.
    pub spread: Option<String>,
}

/// splitmix64: a tiny, pinned generator, so seeds mean the same on every machine.
fn mix(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Scenario {
    pub fn load(path: &std::path::Path) -> crate::Result<Scenario> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| crate::Error::Scenario { path: path.display().to_string(), message: e.to_string() })?;
        Scenario::parse(&text, &path.display().to_string())
    }

    /// Parses and validates a scenario; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> crate::Result<Scenario> {
        let err = |message: String| crate::Error::Scenario { path: origin.to_owned(), message };
        let s: Scenario = serde_json::from_str(text).map_err(|e| err(e.to_string()))?;
        s.validate().map_err(err)?;
        Ok(s)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.groups.is_empty() || self.groups.iter().any(|g| g.share.is_nan() || g.share <= 0.0) {
            return Err("groups must be non-empty with positive shares".into());
        }
        let all = self.groups.iter().chain(self.later.iter().flat_map(|l| l.groups.iter()));
        for g in all {
            let zones = if g.time_zones.is_empty() { vec![None] } else { g.time_zones.iter().map(Some).collect() };
            for z in zones {
                CronJobSchedule::new(&g.schedule, z.map(String::as_str))
                    .map_err(|e| format!("schedule {:?} (zone {z:?}): {e}", g.schedule))?;
            }
        }
        if self.window_s <= self.grace_s || self.namespaces == 0 {
            return Err("window_s must exceed grace_s, and namespaces must be positive".into());
        }
        Ok(())
    }

    /// The scenario scaled to `cronjobs` and/or a window.
    pub fn scaled(mut self, cronjobs: Option<usize>, window_s: Option<f64>) -> Scenario {
        if let Some(n) = cronjobs {
            self.namespaces = self.namespaces.min(n.max(1));
            self.cronjobs = n;
        }
        if let Some(w) = window_s {
            // Faults keep their place relative to the window.
            let k = w / self.window_s;
            for f in &mut self.faults {
                match f {
                    Fault::Kill { at_s, .. } | Fault::Partition { at_s, .. } | Fault::RollingRestart { at_s, .. } => {
                        *at_s *= k
                    }
                    Fault::Compact { at_s, .. } | Fault::DropWatches { at_s, .. } => *at_s *= k,
                }
            }
            if let Some(l) = &mut self.later {
                l.at_s *= k;
            }
            self.window_s = w;
        }
        self
    }

    fn expand(
        &self,
        groups: &[Group],
        count: usize,
        prefix: &str,
        created: Timestamp,
        appears_s: f64,
    ) -> Vec<CronJobSeed> {
        let total: f64 = groups.iter().map(|g| g.share).sum();
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            // A seeded, stratified choice: shares hold exactly up to rounding.
            let r = ((i as f64 + (mix(self.seed, i as u64) % 1000) as f64 / 1000.0) / count as f64) * total;
            let mut acc = 0.0;
            let (gi, g) = groups
                .iter()
                .enumerate()
                .find(|(_, g)| {
                    acc += g.share;
                    r < acc
                })
                .unwrap_or((groups.len() - 1, &groups[groups.len() - 1]));
            let ns = mix(self.seed ^ 0xa5a5, i as u64) as usize % self.namespaces;
            out.push(CronJobSeed {
                namespace: format!("ns-{ns:04}"),
                name: format!("{prefix}{gi}-{i:06}"),
                schedule: g.schedule.clone(),
                time_zone: if g.time_zones.is_empty() {
                    None
                } else {
                    Some(g.time_zones[i % g.time_zones.len()].clone())
                },
                created,
                appears_s,
                spread: g.spread.clone(),
            });
        }
        out
    }

    /// Every CronJob, with the window starting at `start`.
    pub fn cronjobs(&self, start: Timestamp) -> Vec<CronJobSeed> {
        let created = start.checked_sub(jiff::SignedDuration::from_secs_f64(self.downtime_s)).unwrap_or(start);
        let mut all = self.expand(&self.groups, self.cronjobs, "cj-", created, 0.0);
        if let Some(later) = &self.later {
            let at = start.checked_add(jiff::SignedDuration::from_secs_f64(later.at_s)).unwrap_or(start);
            let n = (self.cronjobs as f64 * later.ratio).round() as usize;
            all.extend(self.expand(&later.groups, n, "late-", at, later.at_s));
        }
        all
    }
}

/// The uid a seeded CronJob is loaded with: fixed by its namespace and name, so the harness
/// knows its bucket (and labels it) before the simulator stores it.
pub fn seed_uid(namespace: &str, name: &str) -> String {
    let fnv = cronshard_types::bucket::fnv1a64;
    let (hi, lo) =
        (fnv(&[namespace.as_bytes(), b"/", name.as_bytes()]), fnv(&[name.as_bytes(), b"/", namespace.as_bytes()]));
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

impl CronJobSeed {
    /// The object for the simulator's bulk load, labelled with its bucket of `buckets`.
    pub fn object(&self, buckets: NonZeroU32) -> Value {
        let uid = seed_uid(&self.namespace, &self.name);
        let b = cronshard_types::bucket_of_uid(&uid, buckets);
        let mut spec = json!({"schedule": self.schedule, "concurrencyPolicy": "Allow",
            "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1,
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}}});
        if let Some(z) = &self.time_zone {
            spec["timeZone"] = json!(z);
        }
        let labels = if self.appears_s > 0.0 { json!({}) } else { json!({"cronshard.io/bucket": b.to_string()}) };
        let mut object = json!({"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": self.name, "namespace": self.namespace, "labels": labels, "uid": uid,
                "creationTimestamp": cronshard_types::Zone::utc().format_rfc3339(self.created)},
            "spec": spec});
        if let Some(spread) = &self.spread {
            object["metadata"]["annotations"] = json!({ cronshard_types::spread::SPREAD_ANNOTATION: spread });
        }
        object
    }

    /// Seconds after its scheduled times that a run of this CronJob is due: the offset its
    /// spread gives it (0 without one, or with one the controller must ignore).
    pub fn spread_offset_s(&self) -> i64 {
        let Some(text) = &self.spread else { return 0 };
        let Ok(schedule) = CronJobSchedule::new(&self.schedule, self.time_zone.as_deref()) else { return 0 };
        let spread_s = cronshard_types::spread::seconds_for(&schedule, text, self.created).unwrap_or(0);
        i64::try_from(cronshard_types::spread::offset(&self.namespace, &self.name, spread_s)).unwrap_or(0)
    }

    /// Whether the schedule has a run in unix minute `minute` (an invalid schedule has none).
    pub fn fires_in_minute(&self, minute: i64) -> bool {
        let Ok(schedule) = CronJobSchedule::new(&self.schedule, self.time_zone.as_deref()) else { return false };
        let (Ok(before), Ok(end)) = (Timestamp::from_second(minute * 60 - 1), Timestamp::from_second(minute * 60 + 60))
        else {
            return false;
        };
        schedule.schedule().iter_after(before).next().is_some_and(|t| t < end)
    }

    /// Runs this CronJob should start in `(from, to]`; with `catch_up`, also the latest one
    /// missed before `from` (only that one may start after downtime).
    pub fn expected(&self, from: Timestamp, to: Timestamp, catch_up: bool) -> Vec<Timestamp> {
        let Ok(schedule) = CronJobSchedule::new(&self.schedule, self.time_zone.as_deref()) else { return Vec::new() };
        let lo = if self.created > from { self.created } else { from };
        let mut runs: Vec<Timestamp> = schedule.schedule().iter_after(lo).take_while(|t| *t <= to).collect();
        if catch_up
            && self.created < from
            && let Ok(due) = schedule.due(self.created, from, None)
            && let Some(t) = due.due
        {
            runs.insert(0, t);
        }
        runs
    }
}

/// The incident scenario, built in (the demo's default).
pub const INCIDENT: &str = include_str!("../scenarios/incident.json");

/// The scenarios shipped in `e2e/scenarios`, by name.
pub fn builtin_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(format!("{name}.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_scenario_loads_and_seeds_reproducibly() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).expect("scenarios") {
            let path = entry.expect("entry").path();
            let s = Scenario::load(&path).expect("valid").scaled(Some(1000), None);
            let start = Timestamp::from_second(1_800_000_000).expect("ts");
            let a: Vec<String> =
                s.cronjobs(start).iter().map(|c| format!("{}/{} {}", c.namespace, c.name, c.schedule)).collect();
            let b: Vec<String> =
                s.cronjobs(start).iter().map(|c| format!("{}/{} {}", c.namespace, c.name, c.schedule)).collect();
            assert_eq!(a, b);
            assert!(a.len() >= 1000);
            n += 1;
        }
        assert!(n >= 6, "the six scenarios of the spec");
    }

    #[test]
    fn shares_hold() {
        let s = Scenario {
            name: "t".into(),
            description: String::new(),
            seed: 7,
            cronjobs: 1000,
            namespaces: 10,
            window_s: 60.0,
            lead_s: 10.0,
            grace_s: 5.0,
            downtime_s: 0.0,
            sim: SimSettings { admitted_writes_per_s: 1000.0, compaction_interval_s: 300, create_error_rate: 0.0 },
            groups: vec![
                Group { share: 0.25, schedule: "* * * * *".into(), time_zones: vec![], spread: None },
                Group { share: 0.75, schedule: "0 * * * *".into(), time_zones: vec![], spread: None },
            ],
            later: None,
            faults: vec![],
            replicas: vec![],
        };
        let all = s.cronjobs(Timestamp::from_second(1_800_000_000).expect("ts"));
        let minutely = all.iter().filter(|c| c.schedule == "* * * * *").count();
        assert!((240..=260).contains(&minutely), "{minutely}");
    }

    #[test]
    fn expected_runs() {
        let start = Timestamp::from_second(1_800_000_000).expect("an hour boundary");
        let seed = CronJobSeed {
            namespace: "n".into(),
            name: "c".into(),
            schedule: "*/5 * * * *".into(),
            time_zone: None,
            created: start.checked_sub(jiff::SignedDuration::from_hours(2)).expect("ts"),
            appears_s: 0.0,
            spread: None,
        };
        let to = start.checked_add(jiff::SignedDuration::from_mins(10)).expect("ts");
        assert_eq!(seed.expected(start, to, false).len(), 2);
        let with_catch_up = seed.expected(start, to, true);
        assert_eq!(with_catch_up.len(), 3);
        assert_eq!(with_catch_up[0], start, "the run at the start itself is the latest missed");
    }
}
