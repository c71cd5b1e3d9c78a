//! Shadow mode's ledger: every run a CronJob should start, by cronshard's semantics, matched
//! to the Jobs the running controller created, with one verdict each. A plain index with
//! time passed in: the watches feed it, tests drive it directly.

use std::collections::{BTreeMap, HashMap, HashSet};

use cronshard_types::Timestamp;

use super::tally::Tally;
use super::verdict::{Judged, Verdict};
use super::views::{CronJobView, JobView, spread_offset};

/// What the ledger is told once.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// When shadow mode started: runs scheduled at or before it are not judged (their Jobs
    /// may be gone, cleaned up by history limits).
    pub(crate) started: Timestamp,
    /// Runs scheduled after this are not judged.
    pub(crate) until: Option<Timestamp>,
    /// A run created more than this after it was due is late.
    pub(crate) late_after_s: f64,
    /// How long after a run's deadline its Job may still show up: the Job watch's delay.
    pub(crate) grace_s: f64,
    /// An instant with at least this many runs due is a herd.
    pub(crate) herd_min_runs: usize,
}

/// One scheduled time of one CronJob.
#[derive(Clone, Debug)]
struct Run {
    due_s: f64,
    deadline_s: f64,
    suspended: bool,
    /// Forbid with a Job active at the due time: no Job is the right answer.
    blocked: bool,
    jobs: u32,
    /// A verdict on the run itself has been given.
    settled: bool,
}

#[derive(Clone, Debug)]
struct JobSeen {
    created_s: f64,
    ended_s: Option<f64>,
    /// The due time of the run it is the first Job of (on time or late), unix seconds.
    due_s: Option<f64>,
    /// A pod of it was seen ready, or it finished.
    started: bool,
}

#[derive(Clone, Debug)]
struct Tracked {
    view: CronJobView,
    /// Runs scheduled at or before this are not judged.
    judged_from: Timestamp,
    /// Runs scheduled up to this are in `runs`.
    expanded_to: Timestamp,
    runs: BTreeMap<i64, Run>,
    jobs: HashMap<String, JobSeen>,
}

/// How long settled runs are kept, to recognise a late duplicate.
const RETAIN_S: i64 = 3600;
/// How long a Job whose CronJob is not known yet is kept (the two watches race).
const ORPHAN_S: f64 = 120.0;

/// Every judged run of every CronJob shadow mode follows.
#[derive(Debug)]
pub(crate) struct Ledger {
    settings: Settings,
    cronjobs: HashMap<String, Tracked>,
    orphans: HashMap<String, Vec<JobView>>,
    tally: Tally,
    jobs_seen: u64,
    /// Start delays seen since the last [`Ledger::take_start_delays`], seconds.
    start_delays: Vec<f64>,
}

impl Ledger {
    pub(crate) fn new(settings: Settings) -> Self {
        let tally = Tally::new(settings.herd_min_runs);
        Ledger {
            settings,
            cronjobs: HashMap::new(),
            orphans: HashMap::new(),
            tally,
            jobs_seen: 0,
            start_delays: Vec::new(),
        }
    }

    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    pub(crate) fn tally(&self) -> &Tally {
        &self.tally
    }

    /// Jobs of followed CronJobs created since shadow mode started.
    pub(crate) fn jobs_seen(&self) -> u64 {
        self.jobs_seen
    }

    /// The start delays (due time until a pod ready or the Job done, as the watch saw it) of
    /// the runs judged since the last call, seconds.
    pub(crate) fn take_start_delays(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.start_delays)
    }

    /// CronJobs followed.
    pub(crate) fn cronjobs(&self) -> usize {
        self.cronjobs.len()
    }

    /// Runs due whose Job has not come and whose deadline has not passed.
    pub(crate) fn pending(&self) -> usize {
        let waiting = |r: &Run| !r.settled && r.jobs == 0 && !r.suspended && !r.blocked;
        self.cronjobs.values().map(|t| t.runs.values().filter(|r| waiting(r)).count()).sum()
    }

    /// A CronJob appeared or changed; the Jobs that came before it are matched now.
    pub(crate) fn apply_cronjob(&mut self, view: CronJobView, now: Timestamp) -> Vec<Judged> {
        let uid = view.uid.clone();
        match self.cronjobs.get_mut(&uid) {
            Some(t) => t.view = view,
            None => {
                let judged_from = view.creation.max(self.settings.started);
                let expanded_to = match view.schedule.as_ref().map(|s| s.schedule().kind()) {
                    // `@every` counts from the last run (or creation), not from the clock.
                    Some(cronshard_types::schedule::Kind::Every { .. }) => {
                        view.last_schedule_time.unwrap_or(view.creation).max(view.creation)
                    }
                    _ => judged_from,
                };
                self.cronjobs.insert(
                    uid.clone(),
                    Tracked { view, judged_from, expanded_to, runs: BTreeMap::new(), jobs: HashMap::new() },
                );
            }
        }
        let orphans = self.orphans.remove(&uid).unwrap_or_default();
        orphans.into_iter().flat_map(|job| self.apply_job(job, now)).collect()
    }

    /// The spread default of `namespace` is now `spread`: its CronJobs without a spread of
    /// their own take it for their next runs.
    pub(crate) fn apply_namespace_spread(&mut self, namespace: &str, spread: Option<&str>, now: Timestamp) {
        for t in self.cronjobs.values_mut().filter(|t| t.view.namespace == namespace && t.view.own_spread.is_none()) {
            t.view.spread_offset_s = spread_offset(&t.view, spread, now);
        }
    }

    pub(crate) fn delete_cronjob(&mut self, uid: &str) {
        self.cronjobs.remove(uid);
    }

    /// After a fresh list: the CronJobs not in it were deleted meanwhile.
    pub(crate) fn retain_cronjobs(&mut self, listed: &HashSet<String>) {
        self.cronjobs.retain(|uid, _| listed.contains(uid));
    }

    /// A Job appeared or changed: a new one gets its verdict.
    pub(crate) fn apply_job(&mut self, job: JobView, now: Timestamp) -> Vec<Judged> {
        let Some(t) = self.cronjobs.get_mut(&job.owner_uid) else {
            if job.created_s >= self.settings.started.as_second() as f64 {
                self.orphans.entry(job.owner_uid.clone()).or_default().push(job);
            }
            return Vec::new();
        };
        if let Some(seen) = t.jobs.get_mut(&job.uid) {
            seen.ended_s = seen.ended_s.or(job.ended_s);
            if job.started && !seen.started {
                seen.started = true;
                self.start_delays.extend(seen.due_s.map(|due| (seconds(now) - due).max(0.0)));
            }
            return Vec::new();
        }
        let seen = JobSeen { created_s: job.created_s, ended_s: job.ended_s, due_s: None, started: job.started };
        t.jobs.insert(job.uid.clone(), seen);
        if job.created_s >= self.settings.started.as_second() as f64 {
            self.jobs_seen += 1;
        }
        let verdict = judge_job(t, &job, &self.settings, &mut self.tally, now);
        // The first Job of a judged run (on time or late) is the one whose start counts.
        let due_s = verdict.as_ref().and_then(|(judged, due_s)| judged.skew_s.map(|_| *due_s));
        if let Some(seen) = t.jobs.get_mut(&job.uid) {
            seen.due_s = due_s;
        }
        if job.started {
            self.start_delays.extend(due_s.map(|due| (seconds(now) - due).max(0.0)));
        }
        if let Some((judged, due_s)) = &verdict {
            self.tally.record(&t.view, judged, Some((*due_s, job.created_s)));
        }
        verdict.map(|(j, _)| j).into_iter().collect()
    }

    /// A Job was deleted: for Forbid it is not active any more.
    pub(crate) fn delete_job(&mut self, owner_uid: &str, uid: &str, now: Timestamp) {
        if let Some(seen) = self.cronjobs.get_mut(owner_uid).and_then(|t| t.jobs.get_mut(uid)) {
            seen.ended_s = seen.ended_s.or(Some(seconds(now)));
        }
    }

    /// Runs whose time has come are added, runs past their deadline without a Job settled.
    pub(crate) fn tick(&mut self, now: Timestamp) -> Vec<Judged> {
        let now_s = seconds(now);
        self.orphans.retain(|_, jobs| {
            jobs.retain(|j| now_s - j.created_s < ORPHAN_S);
            !jobs.is_empty()
        });
        let mut judged = Vec::new();
        for t in self.cronjobs.values_mut() {
            let upto = now.as_second() - t.view.spread_offset_s as i64;
            expand(t, &self.settings, &mut self.tally, upto);
            for run in t.runs.values_mut() {
                if run.settled || run.jobs > 0 || now_s <= run.deadline_s + self.settings.grace_s {
                    continue;
                }
                run.settled = true;
                let verdict = if run.suspended || run.blocked { Verdict::Skipped } else { Verdict::Missed };
                let j = Judged { verdict, skew_s: None };
                self.tally.record(&t.view, &j, None);
                judged.push(j);
            }
            let oldest = now.as_second() - RETAIN_S;
            t.runs.retain(|at, run| *at >= oldest || !run.settled);
            t.jobs.retain(|_, j| j.ended_s.is_none_or(|e| e >= oldest as f64));
        }
        judged
    }
}

fn seconds(t: Timestamp) -> f64 {
    t.as_millisecond() as f64 / 1000.0
}

/// Adds the runs scheduled after `t.expanded_to`, up to `upto` (unix seconds).
fn expand(t: &mut Tracked, settings: &Settings, tally: &mut Tally, upto: i64) {
    let Some(schedule) = t.view.schedule.as_ref() else { return };
    let limit = settings.until.map_or(upto, |u| upto.min(u.as_second()));
    if t.expanded_to.as_second() >= limit {
        return;
    }
    for at in schedule.schedule().iter_after(t.expanded_to) {
        if at.as_second() > limit {
            break;
        }
        t.expanded_to = at;
        if at <= t.judged_from {
            continue;
        }
        let offset = t.view.spread_offset_s as f64;
        let due_s = at.as_second() as f64 + offset;
        let next_s = schedule.schedule().next_after(at).map_or(f64::INFINITY, |n| n.as_second() as f64 + offset);
        let deadline_s = t.view.starting_deadline_s.map_or(next_s, |d| next_s.min(due_s + d as f64));
        let blocked = t.view.forbid && t.jobs.values().any(|j| active_at(j, due_s));
        if !t.view.suspend && !blocked {
            tally.due(due_s);
        }
        t.runs.insert(
            at.as_second(),
            Run { due_s, deadline_s, suspended: t.view.suspend, blocked, jobs: 0, settled: false },
        );
    }
}

fn active_at(job: &JobSeen, at_s: f64) -> bool {
    job.created_s < at_s && job.ended_s.is_none_or(|e| e > at_s)
}

/// The verdict on a new Job of `t`, with its run's due time; `None` for a Job of a run
/// that is not judged (before shadow mode started, or after `until`).
fn judge_job(
    t: &mut Tracked,
    job: &JobView,
    settings: &Settings,
    tally: &mut Tally,
    now: Timestamp,
) -> Option<(Judged, f64)> {
    // The scheduled time's span: exact from the annotation, else the name's minute.
    let (first, last) = match job.scheduled {
        Some(at) => (at.as_second(), at.as_second()),
        None => {
            let minute: i64 = job.name.rsplit_once('-')?.1.parse().ok()?;
            (minute * 60, minute * 60 + 59)
        }
    };
    if last <= t.judged_from.as_second() || settings.until.is_some_and(|u| first > u.as_second()) {
        return None;
    }
    expand(t, settings, tally, last.max(now.as_second() - t.view.spread_offset_s as i64));
    let others_active = t.view.forbid && t.jobs.iter().any(|(uid, j)| *uid != job.uid && active_at(j, job.created_s));
    let unexpected = Judged { verdict: Verdict::Unexpected, skew_s: None };
    let Some((_, run)) = t.runs.range_mut(first..=last).next() else {
        return Some((unexpected, job.created_s));
    };
    run.jobs += 1;
    let due_s = run.due_s;
    if run.jobs > 1 {
        return Some((Judged { verdict: Verdict::Duplicate, skew_s: None }, due_s));
    }
    let too_late = run.settled;
    run.settled = true;
    if run.suspended || others_active || too_late {
        return Some((unexpected, due_s));
    }
    let skew_s = (job.created_s - due_s).max(0.0);
    let verdict = if skew_s > settings.late_after_s { Verdict::Late } else { Verdict::OnTime };
    Some((Judged { verdict, skew_s: Some(skew_s) }, due_s))
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;
