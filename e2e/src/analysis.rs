//! A run's result from the simulator's audit log: expected runs against created Jobs
//! (missed, duplicates), skew, herd drain times against their lower bound, request counts.

use std::collections::{BTreeMap, HashMap};

use cronshard_types::Timestamp;
use serde::Serialize;
use serde_json::Value;

use crate::scenario::CronJobSeed;

/// A Job creation seen in the audit log, keyed by what its deterministic name says.
#[derive(Clone, Debug, PartialEq)]
pub struct Created {
    pub namespace: String,
    pub cronjob: String,
    /// The scheduled time as unix minutes (the name's suffix).
    pub minute: i64,
    /// When the create was answered (server time), unix seconds.
    pub at: f64,
}

/// When the request `record` was answered, unix seconds.
pub(crate) fn seconds(record: &Value) -> Option<f64> {
    let t: Timestamp = record["time"].as_str()?.parse().ok()?;
    Some(t.as_millisecond() as f64 / 1000.0)
}

/// The successful Job creates in `records`.
pub fn creates(records: &[Value]) -> Vec<Created> {
    records
        .iter()
        .filter(|r| r["verb"] == "create" && r["resource"] == "jobs" && r["code"] == 201)
        .filter_map(|r| {
            let name = r["name"].as_str()?;
            let (cronjob, minute) = name.rsplit_once('-')?;
            Some(Created {
                namespace: r["namespace"].as_str()?.to_owned(),
                cronjob: cronjob.to_owned(),
                minute: minute.parse().ok()?,
                at: seconds(r)?,
            })
        })
        .collect()
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Percentiles {
    pub fn of(values: &mut [f64]) -> Percentiles {
        if values.is_empty() {
            return Percentiles::default();
        }
        values.sort_by(f64::total_cmp);
        let at = |p: f64| values[((values.len() as f64 * p) as usize).min(values.len() - 1)];
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        Percentiles { p50: round(at(0.50)), p99: round(at(0.99)), max: round(values[values.len() - 1]) }
    }
}

/// A minute with more runs due than the server admits writes in one second.
#[derive(Clone, Debug, Serialize)]
pub struct Herd {
    pub at: String,
    pub jobs: usize,
    /// Last create for that instant − the instant (`None`: some runs never came).
    pub drain_s: Option<f64>,
    pub lower_bound_s: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Analysis {
    pub expected: usize,
    pub created: usize,
    pub missed: usize,
    pub duplicates: usize,
    /// Created Jobs for scheduled times up to the window's end that were not expected
    /// (before the window, or back-fills the semantics do not start). Runs scheduled after
    /// the window's end are not judged.
    pub unexpected: usize,
    /// Created Jobs for times their CronJob's schedule does not have: a correctness failure.
    pub off_schedule: usize,
    pub skew_s: Percentiles,
    /// p99 skew of runs outside herds.
    pub skew_outside_herds_p99_s: f64,
    pub herds: Vec<Herd>,
    /// The most Job creates answered in one second of the window.
    pub peak_creates_per_s: usize,
    pub requests: BTreeMap<String, usize>,
    /// The accepted writes by kind: Events, status writes, labels and cleanups done.
    pub work: crate::work::Work,
    pub http_410: usize,
    pub http_429: usize,
    /// (seconds from the window start to the create, skew) of every created run.
    #[serde(skip)]
    pub skews: Vec<(f64, f64)>,
}

/// Compares what was due in `(from, to]` with what the audit log shows was created.
pub fn analyze(
    seeds: &[CronJobSeed],
    records: &[Value],
    from: Timestamp,
    to: Timestamp,
    catch_up: bool,
    admitted_writes_per_s: f64,
) -> Analysis {
    // Keyed by the scheduled minute (the Job's name); the value is when the run is due: its
    // scheduled time, plus its spread offset if it has one.
    let mut due: HashMap<(&str, &str, i64), i64> = HashMap::new();
    for s in seeds {
        let offset = s.spread_offset_s();
        for t in s.expected(from, to, catch_up) {
            due.insert((s.namespace.as_str(), s.name.as_str(), t.as_second() / 60), t.as_second() + offset);
        }
    }
    let by_name: HashMap<(&str, &str), &CronJobSeed> =
        seeds.iter().map(|s| ((s.namespace.as_str(), s.name.as_str()), s)).collect();
    // A herd is the runs due at one instant; catch-up runs (scheduled while the controllers
    // were down) are all due when they start, at `from`.
    let herd_at = |t: i64| if catch_up { t.max(from.as_second()) } else { t };
    let mut per_instant: BTreeMap<i64, usize> = BTreeMap::new();
    for t in due.values() {
        *per_instant.entry(herd_at(*t)).or_default() += 1;
    }
    let mut seen: HashMap<(String, String, i64), (usize, f64)> = HashMap::new();
    let mut per_second: HashMap<i64, usize> = HashMap::new();
    for c in creates(records) {
        if c.at >= from.as_second() as f64 && c.at <= to.as_second() as f64 {
            *per_second.entry(c.at.floor() as i64).or_default() += 1;
        }
        let e = seen.entry((c.namespace, c.cronjob, c.minute)).or_insert((0, c.at));
        e.0 += 1;
        e.1 = e.1.min(c.at);
    }
    let peak_creates_per_s = per_second.values().copied().max().unwrap_or(0);
    let mut a = Analysis { expected: due.len(), peak_creates_per_s, ..Analysis::default() };
    let herd_size = admitted_writes_per_s.max(1.0) as usize;
    let mut last_create: HashMap<i64, f64> = HashMap::new();
    let mut outside = Vec::new();
    for ((ns, name, minute), (count, at)) in &seen {
        if *count > 1 {
            a.duplicates += count - 1;
        }
        let Some(t) = due.get(&(ns.as_str(), name.as_str(), *minute)) else {
            match by_name.get(&(ns.as_str(), name.as_str())) {
                Some(seed) if !seed.fires_in_minute(*minute) => a.off_schedule += 1,
                _ if *minute * 60 > to.as_second() => {}
                _ => a.unexpected += 1,
            }
            continue;
        };
        a.created += 1;
        let skew = (at - *t as f64).max(0.0);
        a.skews.push((at - from.as_second() as f64, skew));
        let l = last_create.entry(herd_at(*t)).or_insert(*at);
        *l = l.max(*at);
        if per_instant.get(&herd_at(*t)).is_none_or(|n| *n <= herd_size) {
            outside.push(skew);
        }
    }
    a.missed = a.expected - a.created;
    let mut all: Vec<f64> = a.skews.iter().map(|(_, s)| *s).collect();
    a.skew_s = Percentiles::of(&mut all);
    a.skew_outside_herds_p99_s = Percentiles::of(&mut outside).p99;
    let created_per_instant: HashMap<i64, usize> = seen
        .iter()
        .filter_map(|((ns, name, m), _)| due.get(&(ns.as_str(), name.as_str(), *m)).map(|t| herd_at(*t)))
        .fold(HashMap::new(), |mut acc, t| {
            *acc.entry(t).or_default() += 1;
            acc
        });
    a.herds = herds(&per_instant, &created_per_instant, &last_create, admitted_writes_per_s);
    count_requests(records, &mut a);
    a.work = crate::work::Work::count(records);
    a
}

/// The instants with more runs due than the server admits writes in a second, and how long
/// each took to drain (`None` if some of its runs never came).
fn herds(
    per_instant: &BTreeMap<i64, usize>,
    created_per_instant: &HashMap<i64, usize>,
    last_create: &HashMap<i64, f64>,
    admitted_writes_per_s: f64,
) -> Vec<Herd> {
    let herd_size = admitted_writes_per_s.max(1.0) as usize;
    let herd = |(t, jobs): (&i64, &usize)| {
        let complete = created_per_instant.get(t) == Some(jobs);
        Herd {
            at: Timestamp::from_second(*t).map(|ts| ts.to_string()).unwrap_or_default(),
            jobs: *jobs,
            drain_s: complete
                .then(|| last_create.get(t).map(|l| ((l - *t as f64) * 1000.0).round() / 1000.0))
                .flatten(),
            lower_bound_s: *jobs as f64 / admitted_writes_per_s.max(1.0),
        }
    };
    per_instant.iter().filter(|(_, jobs)| **jobs > herd_size).map(herd).collect()
}

/// Requests by verb, and the 410s and 429s among them.
fn count_requests(records: &[Value], a: &mut Analysis) {
    for r in records {
        if let Some(verb) = r["verb"].as_str() {
            *a.requests.entry(verb.to_owned()).or_default() += 1;
        }
        match r["code"].as_u64() {
            Some(410) => a.http_410 += 1,
            Some(429) => a.http_429 += 1,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn missed_duplicates_skew_and_herds() {
        let hour = 1_800_000_000; // an hour boundary
        let from = Timestamp::from_second(hour - 30).expect("ts");
        let to = Timestamp::from_second(hour + 90).expect("ts");
        let seeds: Vec<CronJobSeed> = (0..3)
            .map(|i| CronJobSeed {
                namespace: "n".into(),
                name: format!("c{i}"),
                schedule: "0 * * * *".into(),
                time_zone: None,
                created: from,
                appears_s: 0.0,
                spread: None,
            })
            .collect();
        let at = |s: f64| Timestamp::from_millisecond(((hour as f64 + s) * 1000.0) as i64).expect("ts").to_string();
        let minute = hour / 60;
        let records = vec![
            json!({"verb": "create", "resource": "jobs", "code": 201, "namespace": "n", "name": format!("c0-{minute}"), "time": at(0.5)}),
            json!({"verb": "create", "resource": "jobs", "code": 201, "namespace": "n", "name": format!("c1-{minute}"), "time": at(2.0)}),
            json!({"verb": "create", "resource": "jobs", "code": 201, "namespace": "n", "name": format!("c1-{minute}"), "time": at(3.0)}),
            json!({"verb": "create", "resource": "jobs", "code": 429, "namespace": "n", "name": "", "time": at(1.0)}),
        ];
        let a = analyze(&seeds, &records, from, to, false, 2.0);
        assert_eq!((a.expected, a.created, a.missed, a.duplicates), (3, 2, 1, 1));
        assert_eq!(a.http_429, 1);
        assert_eq!(a.skew_s.max, 2.0);
        assert_eq!(a.herds.len(), 1, "3 due > 2 admitted per second");
        assert_eq!(a.herds[0].drain_s, None, "a run never came: no drain time");
        assert_eq!(a.herds[0].lower_bound_s, 1.5);
    }

    fn create(name: &str, time: String) -> Value {
        json!({"verb": "create", "resource": "jobs", "code": 201, "namespace": "n", "name": name, "time": time})
    }

    #[test]
    fn runs_after_the_window_are_not_judged_and_off_schedule_runs_are_failures() {
        let hour = 1_800_000_000;
        let (from, to) =
            (Timestamp::from_second(hour - 30).expect("ts"), Timestamp::from_second(hour + 30).expect("ts"));
        let seed = CronJobSeed {
            namespace: "n".into(),
            name: "every".into(),
            schedule: "* * * * *".into(),
            time_zone: None,
            created: from,
            appears_s: 0.0,
            spread: None,
        };
        let hourly = CronJobSeed { name: "hourly".into(), schedule: "0 * * * *".into(), ..seed.clone() };
        let at = |s: i64| Timestamp::from_second(hour + s).expect("ts").to_string();
        let minute = hour / 60;
        let records = vec![
            create(&format!("every-{minute}"), at(1)),
            create(&format!("hourly-{minute}"), at(1)),
            // The next boundary's run, in the grace after the window: correct, not judged.
            create(&format!("every-{}", minute + 1), at(61)),
            // An hourly CronJob run at :01: its schedule has no such time.
            create(&format!("hourly-{}", minute + 1), at(62)),
            // A run before the window: not expected there.
            create(&format!("every-{}", minute - 5), at(2)),
        ];
        let a = analyze(&[seed, hourly], &records, from, to, false, 1000.0);
        assert_eq!((a.expected, a.created, a.missed), (2, 2, 0), "every at :00 and hourly at :00 were due");
        assert_eq!((a.unexpected, a.off_schedule), (1, 1));
    }

    #[test]
    fn a_catch_up_herd_drains_from_the_start_of_the_window() {
        let hour = 1_800_000_000;
        let from = Timestamp::from_second(hour + 600).expect("ts");
        let to = Timestamp::from_second(hour + 660).expect("ts");
        let seeds: Vec<CronJobSeed> = (0..4)
            .map(|i| CronJobSeed {
                namespace: "n".into(),
                name: format!("h{i}"),
                schedule: "0 * * * *".into(),
                time_zone: None,
                created: Timestamp::from_second(hour - 7200).expect("ts"),
                appears_s: 0.0,
                spread: None,
            })
            .collect();
        let at = |s: i64| Timestamp::from_second(hour + s).expect("ts").to_string();
        let minute = hour / 60;
        let records: Vec<Value> = (0..4).map(|i| create(&format!("h{i}-{minute}"), at(602 + i))).collect();
        let a = analyze(&seeds, &records, from, to, true, 2.0);
        assert_eq!((a.expected, a.created), (4, 4));
        assert_eq!(a.herds.len(), 1);
        assert_eq!(a.herds[0].at, from.to_string(), "due when the controllers start");
        assert_eq!((a.herds[0].drain_s, a.herds[0].lower_bound_s), (Some(5.0), 2.0));
        assert!(a.skew_s.max > 600.0, "skew still counts from the scheduled time");
    }

    #[test]
    fn a_spread_run_is_judged_from_its_offset_and_the_peak_counts_creates_per_second() {
        let hour = 1_800_000_000;
        let (from, to) =
            (Timestamp::from_second(hour - 30).expect("ts"), Timestamp::from_second(hour + 90).expect("ts"));
        let seed = |name: &str, spread: Option<&str>| CronJobSeed {
            namespace: "n".into(),
            name: name.into(),
            schedule: "0 * * * *".into(),
            time_zone: None,
            created: from,
            appears_s: 0.0,
            spread: spread.map(str::to_owned),
        };
        let spread = seed("spread", Some("60s"));
        let offset = spread.spread_offset_s();
        assert_eq!(offset, cronshard_types::spread::offset("n", "spread", 60) as i64);
        let at = |s: f64| Timestamp::from_millisecond(((hour as f64 + s) * 1000.0) as i64).expect("ts").to_string();
        let minute = hour / 60;
        let records = vec![
            create(&format!("spread-{minute}"), at(offset as f64 + 0.25)),
            create(&format!("plain-{minute}"), at(0.5)),
            create(&format!("other-{minute}"), at(0.75)),
        ];
        let seeds = [spread, seed("plain", None), seed("other", None), seed("bad", Some("2h"))];
        let a = analyze(&seeds, &records, from, to, false, 1000.0);
        assert_eq!((a.expected, a.created), (4, 3));
        assert_eq!(a.skew_s.max, 0.75, "the spread run's skew counts from T + offset");
        assert_eq!(a.peak_creates_per_s, if offset == 0 { 3 } else { 2 });
        assert_eq!(seeds[3].spread_offset_s(), 0, "a spread the controller ignores (not under an hour) moves nothing");
    }
}
