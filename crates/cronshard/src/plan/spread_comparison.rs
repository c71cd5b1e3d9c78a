//! `cronshard plan --spread`: the window with and without a spread. Each run is due at its
//! scheduled second plus its CronJob's offset, and the runs are created first come, first
//! served at the plan's create rate, which gives every run's skew.

use std::collections::{BTreeMap, HashMap};

use cronshard_types::schedule::Kind;
use cronshard_types::selector::LabelSelector;
use cronshard_types::spread::{self, SPREAD_ANNOTATION};
use cronshard_types::{CronJobSchedule, Timestamp};
use serde_json::Value;

use super::input::{anchor, read_spec};
use super::settings::Window;
use crate::error::{Error, Result};

/// The only Namespace label the plan knows: the CronJobs file has no Namespace objects.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// `--spread` and `--spread-selector`, checked.
#[derive(Clone, Debug)]
pub(crate) struct SpreadSettings {
    text: String,
    spread_s: u64,
    selector: LabelSelector,
}

impl SpreadSettings {
    /// `selector` picks namespaces by their labels, of which the plan knows only
    /// `kubernetes.io/metadata.name`; empty: every namespace.
    pub(crate) fn new(text: &str, selector: Option<&str>) -> Result<Self> {
        let spread_s = spread::parse(text).map_err(|e| Error::Setting(format!("--spread: {e}")))?;
        let selector = LabelSelector::parse(selector.unwrap_or_default())
            .map_err(|e| Error::Setting(format!("--spread-selector: {e}")))?;
        if let Some(key) = selector.keys().find(|k| *k != NAMESPACE_NAME_LABEL) {
            return Err(Error::Setting(format!(
                "--spread-selector tests {key:?}, but the CronJobs file has no Namespace labels: \
                 only {NAMESPACE_NAME_LABEL} (the namespace's name) can be tested"
            )));
        }
        Ok(SpreadSettings { text: text.to_owned(), spread_s, selector })
    }
}

/// How the runs of the window drain at one create rate.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Drain {
    /// The most runs due in one second.
    pub(super) peak_due_per_s: u64,
    pub(super) p99_skew_s: f64,
    pub(super) max_skew_s: f64,
}

/// The window without `--spread` (each CronJob's own annotation still applies, as the
/// controller applies it) and with it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Comparison {
    pub(super) text: String,
    /// CronJobs that `--spread` moves (selected, no annotation of their own, a schedule it suits).
    pub(super) spread_by_flag: u64,
    /// CronJobs with their own valid `cronshard.io/spread`.
    pub(super) own_annotation: u64,
    /// Selected CronJobs whose schedule is too short for the spread (or `@every`): not moved.
    pub(super) unsuited: u64,
    pub(super) rate: f64,
    pub(super) without: Drain,
    pub(super) with: Drain,
}

/// Runs due per second of the window and beyond it (a spread moves runs past its end).
struct DuePerSecond(BTreeMap<i64, u64>);

/// Compares the window without and with `settings` when `rate` runs are created per second.
pub(super) fn compare(items: &[Value], window: &Window, settings: &SpreadSettings, rate: f64) -> Comparison {
    let mut c = Comparison {
        text: settings.text.clone(),
        spread_by_flag: 0,
        own_annotation: 0,
        unsuited: 0,
        rate,
        without: Drain { peak_due_per_s: 0, p99_skew_s: 0.0, max_skew_s: 0.0 },
        with: Drain { peak_due_per_s: 0, p99_skew_s: 0.0, max_skew_s: 0.0 },
    };
    let (mut without, mut with) = (DuePerSecond(BTreeMap::new()), DuePerSecond(BTreeMap::new()));
    let mut parsed: HashMap<(&str, Option<&str>), Option<CronJobSchedule>> = HashMap::new();
    for item in items {
        let Ok(spec) = read_spec(item) else { continue };
        let schedule = parsed.entry((spec.schedule, spec.time_zone)).or_insert_with(|| {
            CronJobSchedule::new(spec.schedule, spec.time_zone).ok().map(|s| s.with_dst_policy(window.dst))
        });
        let Some(schedule) = schedule.as_ref().filter(|_| !spec.suspend) else { continue };
        let own = own_offset(item, schedule, window.start);
        let flag =
            if own.is_some() { ByFlag::NotSelected } else { flag_offset(item, schedule, window.start, settings) };
        let base = own.unwrap_or(0);
        let moved = match (own, flag) {
            (Some(offset), _) => {
                c.own_annotation += 1;
                offset
            }
            (None, ByFlag::Offset(offset)) => {
                c.spread_by_flag += 1;
                offset
            }
            (None, ByFlag::Unsuited) => {
                c.unsuited += 1;
                0
            }
            (None, ByFlag::NotSelected) => 0,
        };
        for t in runs(schedule, item, window) {
            *without.0.entry(t + base).or_default() += 1;
            *with.0.entry(t + moved).or_default() += 1;
        }
    }
    c.without = without.drain(rate);
    c.with = with.drain(rate);
    c
}

/// The offset of a CronJob's own valid `cronshard.io/spread` (`None` without one, or with one
/// the controller ignores).
fn own_offset(item: &Value, schedule: &CronJobSchedule, from: Timestamp) -> Option<i64> {
    let text = item.pointer("/metadata/annotations")?.get(SPREAD_ANNOTATION)?.as_str()?;
    let spread_s = spread::seconds_for(schedule, text, from).ok().filter(|s| *s > 0)?;
    offset_of(item, spread_s)
}

/// What `--spread` does to one CronJob.
#[derive(Clone, Copy, Debug)]
enum ByFlag {
    NotSelected,
    /// Selected, but the spread does not suit its schedule.
    Unsuited,
    Offset(i64),
}

fn flag_offset(item: &Value, schedule: &CronJobSchedule, from: Timestamp, s: &SpreadSettings) -> ByFlag {
    let namespace = item.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
    let labels = BTreeMap::from([(NAMESPACE_NAME_LABEL.to_owned(), namespace.to_owned())]);
    if s.spread_s == 0 || !s.selector.matches(&labels) {
        return ByFlag::NotSelected;
    }
    if spread::check(schedule, &s.text, s.spread_s, from).is_err() {
        return ByFlag::Unsuited;
    }
    offset_of(item, s.spread_s).map_or(ByFlag::NotSelected, ByFlag::Offset)
}

fn offset_of(item: &Value, spread_s: u64) -> Option<i64> {
    let namespace = item.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
    let name = item.pointer("/metadata/name")?.as_str()?;
    i64::try_from(spread::offset(namespace, name, spread_s)).ok()
}

/// The scheduled seconds of a CronJob's runs in the window.
fn runs(schedule: &CronJobSchedule, item: &Value, window: &Window) -> Vec<i64> {
    match schedule.schedule().kind() {
        Kind::Every { seconds } => {
            let seconds = (*seconds).max(1);
            let anchor = anchor(item).unwrap_or(window.start_s - seconds);
            let first = anchor + ((window.start_s - anchor).max(1) + seconds - 1).div_euclid(seconds) * seconds;
            (0..).map(|k| first + k * seconds).take_while(|t| *t < window.end_s).collect()
        }
        Kind::Spec(_) => schedule
            .schedule()
            .iter_after(window.after)
            .map(Timestamp::as_second)
            .take_while(|t| *t < window.end_s)
            .collect(),
    }
}

impl DuePerSecond {
    /// Creates the runs first come, first served at `rate` per second (a fluid queue): the
    /// i-th run of a second that finds `backlog` runs waiting is created (backlog + i) / rate
    /// after its due second.
    fn drain(&self, rate: f64) -> Drain {
        let peak_due_per_s = self.0.values().copied().max().unwrap_or(0);
        if rate <= 0.0 || self.0.is_empty() {
            return Drain { peak_due_per_s, p99_skew_s: 0.0, max_skew_s: 0.0 };
        }
        // (backlog found, runs due) per second with runs due.
        let mut batches = Vec::with_capacity(self.0.len());
        let (mut backlog, mut last) = (0.0_f64, None::<i64>);
        for (&second, &due) in &self.0 {
            if let Some(last) = last {
                backlog = (backlog - rate * (second - last) as f64).max(0.0);
            }
            batches.push((backlog, due as f64));
            backlog += due as f64;
            last = Some(second);
        }
        let total: f64 = batches.iter().map(|(_, d)| d).sum();
        let max_skew_s = batches.iter().map(|(b, d)| (b + d) / rate).fold(0.0, f64::max);
        // The smallest skew that 99% of the runs are within, by bisection.
        let within = |skew: f64| batches.iter().map(|(b, d)| (skew * rate - b).clamp(0.0, *d)).sum::<f64>();
        let (mut lo, mut hi) = (0.0, max_skew_s);
        for _ in 0..60 {
            let mid = (lo + hi) / 2.0;
            if within(mid) >= 0.99 * total { hi = mid } else { lo = mid }
        }
        Drain { peak_due_per_s, p99_skew_s: hi, max_skew_s }
    }
}

#[cfg(test)]
mod tests;
