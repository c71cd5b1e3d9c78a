//! One sync of one CronJob: reconcile its Jobs, clean up history, decide on a run, create it.

mod history;
mod missed;

use cronshard_types::cronjob::job_name;
use cronshard_types::{CronJobSchedule, Error as ScheduleError, Timestamp};

use self::history::cleanup_history;
use self::missed::count_missed;
pub use self::missed::{MISSED_COUNT_CAP, MissReason};

/// `spec.concurrencyPolicy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConcurrencyPolicy {
    #[default]
    Allow,
    Forbid,
    Replace,
}

/// The parts of `spec` a sync reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CronJobSpec {
    pub schedule: String,
    pub time_zone: Option<String>,
    pub starting_deadline_seconds: Option<i64>,
    pub concurrency_policy: ConcurrencyPolicy,
    pub suspend: bool,
    /// `None` keeps every successful Job (the apiserver defaults it to 3).
    pub successful_jobs_history_limit: Option<i32>,
    /// `None` keeps every failed Job (the apiserver defaults it to 1).
    pub failed_jobs_history_limit: Option<i32>,
}

/// A reference in `status.active`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRef {
    pub name: String,
    pub uid: String,
    pub resource_version: String,
}

/// `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CronJobStatus {
    pub active: Vec<JobRef>,
    pub last_schedule_time: Option<Timestamp>,
    pub last_successful_time: Option<Timestamp>,
}

/// What the controller knows of one CronJob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronJobState {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub creation_timestamp: Timestamp,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    pub spec: CronJobSpec,
    pub status: CronJobStatus,
    /// Runs at or before this time have been reported (as missed, or as skipped on purpose)
    /// by this controller already; the worker remembers it between syncs, so a miss is
    /// counted once.
    pub reported_through: Option<Timestamp>,
}

/// How a Job ended: a `Complete` or `Failed` condition with status True.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finished {
    Complete,
    Failed,
}

/// A Job, as far as a sync cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildJob {
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    /// The uid in the controller ownerReference, if any.
    pub controller_uid: Option<String>,
    pub creation_timestamp: Timestamp,
    pub start_time: Option<Timestamp>,
    pub completion_time: Option<Timestamp>,
    pub finished: Option<Finished>,
}

impl ChildJob {
    fn job_ref(&self) -> JobRef {
        JobRef { name: self.name.clone(), uid: self.uid.clone(), resource_version: self.resource_version.clone() }
    }
}

/// A Job to create for a run; the caller builds it from `spec.jobTemplate`, with the owner
/// reference, the bucket label and the audit annotation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRequest {
    pub name: String,
    pub scheduled: Timestamp,
    /// Value of `batch.kubernetes.io/cronjob-scheduled-timestamp`.
    pub scheduled_timestamp: String,
}

/// The answer to a create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CreateResult {
    Created(ChildJob),
    AlreadyExists,
    /// Refused for good (422 Invalid, 403): retrying the same request cannot help.
    Rejected(String),
}

/// The narrow I/O a sync needs. Errors are transient (the sync is retried with backoff).
pub trait Jobs {
    type Error: std::fmt::Display;
    /// A live GET; `None` is NotFound.
    fn get(&mut self, name: &str) -> impl Future<Output = Result<Option<ChildJob>, Self::Error>>;
    /// DELETE with Background propagation.
    fn delete(&mut self, name: &str) -> impl Future<Output = Result<(), Self::Error>>;
    fn create(&mut self, request: &JobRequest) -> impl Future<Output = Result<CreateResult, Self::Error>>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

/// A Kubernetes Event to record on the CronJob, with upstream's reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventType,
    pub reason: &'static str,
    pub message: String,
}

/// Why a CronJob cannot run at all (counted by a metric, labelled by variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalid {
    UnknownTimeZone,
    UnparseableSchedule,
    /// Parses, but never fires (`0 0 30 2 *`).
    InvalidSchedule,
}

/// What one sync did and wants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The status to write (only if `status_changed`), at most once per sync.
    pub status: CronJobStatus,
    pub status_changed: bool,
    pub events: Vec<Event>,
    /// When to sync again; `None` when only a change to the object can help.
    pub requeue_at: Option<Timestamp>,
    /// The Job created by this sync and its scheduled time (for the skew histogram).
    pub created: Option<(ChildJob, Timestamp)>,
    /// A failure: retry with backoff, but no later than `requeue_at`.
    pub error: Option<String>,
    pub invalid: Option<Invalid>,
    /// Runs this sync found missed, by reason (counted once: see `reported_through`).
    pub missed: Vec<(MissReason, u64)>,
    /// The new `reported_through` for the worker to remember.
    pub reported_through: Option<Timestamp>,
}

/// Go's `time.RFC1123Z`, which upstream's MissSchedule message uses.
pub(crate) fn rfc1123z(t: Timestamp) -> String {
    t.strftime("%a, %d %b %Y %H:%M:%S +0000").to_string()
}

struct Sync<'a> {
    cj: &'a CronJobState,
    status: CronJobStatus,
    changed: bool,
    events: Vec<Event>,
    missed: Vec<(MissReason, u64)>,
    reported_through: Option<Timestamp>,
}

impl Sync<'_> {
    fn event(&mut self, kind: EventType, reason: &'static str, message: String) {
        self.events.push(Event { kind, reason, message });
    }

    fn remove_active(&mut self, uid: &str) {
        let before = self.status.active.len();
        self.status.active.retain(|r| r.uid != uid);
        self.changed |= self.status.active.len() != before;
    }

    fn in_active(&self, uid: &str) -> bool {
        self.status.active.iter().any(|r| r.uid == uid)
    }

    fn finish(self, requeue_at: Option<Timestamp>) -> Outcome {
        Outcome {
            status: self.status,
            status_changed: self.changed,
            events: self.events,
            requeue_at,
            created: None,
            error: None,
            invalid: None,
            missed: self.missed,
            reported_through: self.reported_through,
        }
    }

    /// Marks every run up to `through` reported.
    fn reported(&mut self, through: Timestamp) {
        self.reported_through = Some(self.reported_through.map_or(through, |r| r.max(through)));
    }

    fn miss(&mut self, reason: MissReason, count: u64) {
        if count > 0 {
            self.missed.push((reason, count));
        }
    }

    fn fail(self, error: String) -> Outcome {
        Outcome { error: Some(error), ..self.finish(None) }
    }
}

/// One sync of `cj` at `now`. `children` are the Jobs the owner index holds for it (by
/// controller uid), never a namespace scan.
pub async fn sync<J: Jobs>(cj: &CronJobState, children: &[ChildJob], now: Timestamp, jobs: &mut J) -> Outcome {
    let mut s = Sync {
        cj,
        status: cj.status.clone(),
        changed: false,
        events: Vec::new(),
        missed: Vec::new(),
        reported_through: cj.reported_through,
    };

    // Reconcile children against status.active.
    for job in children {
        let in_active = s.in_active(&job.uid);
        match job.finished {
            None if !in_active => s.event(
                EventType::Warning,
                "UnexpectedJob",
                format!("Saw a job that the controller did not create or forgot: {}", job.name),
            ),
            Some(condition) if in_active => {
                s.remove_active(&job.uid);
                s.event(
                    EventType::Normal,
                    "SawCompletedJob",
                    format!("Saw completed job: {}, condition: {condition:?}", job.name),
                );
            }
            _ => {}
        }
        if job.finished == Some(Finished::Complete)
            && let Some(done) = job.completion_time
            && s.status.last_successful_time.is_none_or(|t| done > t)
        {
            s.status.last_successful_time = Some(done);
            s.changed = true;
        }
    }
    // Active entries with no Job in the cache: confirm with a live GET before dropping them.
    let missing: Vec<JobRef> =
        s.status.active.iter().filter(|r| !children.iter().any(|j| j.uid == r.uid)).cloned().collect();
    for entry in missing {
        match jobs.get(&entry.name).await {
            Ok(None) => {
                s.event(EventType::Normal, "MissingJob", format!("Active job went missing: {}", entry.name));
                s.remove_active(&entry.uid);
            }
            Ok(Some(_)) => {}
            Err(e) => return s.fail(format!("get job {}: {e}", entry.name)),
        }
    }
    if cj.deleting {
        return s.finish(None);
    }

    // History cleanup, before deciding on a run.
    cleanup_history(&mut s, children, jobs).await;

    let schedule = match CronJobSchedule::new(&cj.spec.schedule, cj.spec.time_zone.as_deref()) {
        Err(ScheduleError::UnknownTimeZone { name, reason }) => {
            s.event(EventType::Warning, "UnknownTimeZone", format!("invalid timeZone: {name:?}: {reason}"));
            return Outcome { invalid: Some(Invalid::UnknownTimeZone), ..s.finish(None) };
        }
        other => other,
    };
    if cj.spec.suspend {
        // Runs while suspended are skipped on purpose, not missed.
        s.reported(now);
        return s.finish(None);
    }
    let schedule = match schedule {
        Ok(schedule) => schedule,
        Err(e) => {
            s.event(
                EventType::Warning,
                "UnparseableSchedule",
                format!("unparseable schedule: {:?} : {e}", cj.spec.schedule),
            );
            return Outcome { invalid: Some(Invalid::UnparseableSchedule), ..s.finish(None) };
        }
    };
    if schedule.zone_in_schedule() {
        s.event(
            EventType::Warning,
            "UnsupportedSchedule",
            format!(
                "CRON_TZ or TZ used in schedule {:?} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
                cj.spec.schedule
            ),
        );
    }

    let earliest = s.status.last_schedule_time.unwrap_or(cj.creation_timestamp);
    let due = match schedule.due(earliest, now, cj.spec.starting_deadline_seconds) {
        Ok(due) => due,
        Err(e) => {
            s.event(EventType::Warning, "InvalidSchedule", format!("invalid schedule: {} : {e}", cj.spec.schedule));
            return Outcome { invalid: Some(Invalid::InvalidSchedule), ..s.finish(None) };
        }
    };
    if due.too_many_missed {
        s.event(
            EventType::Warning,
            "TooManyMissedTimes",
            "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew".to_owned(),
        );
    }
    // Job names are per minute: a later run in the minute of the last one (`@every 10s`)
    // cannot have a Job of its own. Upstream tries, gets AlreadyExists and backs off until
    // the minute turns; this waits for the minute without a request, and the minute's other
    // runs are skipped by the naming rule, not missed.
    if let (Some(last), Some(scheduled)) = (s.status.last_schedule_time, due.due)
        && last < scheduled
        && last.as_second().div_euclid(60) == scheduled.as_second().div_euclid(60)
    {
        let next_minute = Timestamp::from_second((scheduled.as_second().div_euclid(60) + 1) * 60).ok();
        if let Some(minute_end) = next_minute.and_then(|n| n.checked_sub(jiff::SignedDuration::from_nanos(1)).ok()) {
            s.reported(minute_end);
        }
        return s.finish(next_minute.and_then(|n| n.checked_add(cronshard_types::cronjob::REQUEUE_DELAY).ok()));
    }
    count_missed(&mut s, &schedule, earliest, &due);
    let requeue =
        |status: &CronJobStatus| schedule.requeue_at(status.last_schedule_time.unwrap_or(cj.creation_timestamp), now);
    let Some(scheduled) = due.due else {
        let at = requeue(&s.status);
        return s.finish(at);
    };
    if let Some(deadline) = cj.spec.starting_deadline_seconds
        && scheduled.checked_add(jiff::SignedDuration::from_secs(deadline)).is_ok_and(|late| late < now)
    {
        s.event(
            EventType::Warning,
            "MissSchedule",
            format!("Missed scheduled time to start a job: {}", rfc1123z(scheduled)),
        );
        s.miss(MissReason::MissSchedule, 1);
        s.reported(scheduled);
        let at = requeue(&s.status);
        return s.finish(at);
    }
    let name = job_name(&cj.name, scheduled);
    if s.status.active.iter().any(|r| r.name == name) || s.status.last_schedule_time == Some(scheduled) {
        let at = requeue(&s.status);
        return s.finish(at);
    }
    match cj.spec.concurrency_policy {
        ConcurrencyPolicy::Forbid if !s.status.active.is_empty() => {
            s.event(
                EventType::Normal,
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid".to_owned(),
            );
            // Skipped by the CronJob's own policy, not missed.
            s.reported(scheduled);
            let at = requeue(&s.status);
            return s.finish(at);
        }
        ConcurrencyPolicy::Replace => {
            for entry in s.status.active.clone() {
                match jobs.get(&entry.name).await {
                    Err(e) => {
                        s.event(EventType::Warning, "FailedGet", format!("Get job: {e}"));
                        return s.fail(format!("get job {}: {e}", entry.name));
                    }
                    // Gone already: nothing to replace.
                    Ok(None) => s.remove_active(&entry.uid),
                    Ok(Some(job)) => {
                        if let Err(e) = delete_job(&mut s, &job, jobs).await {
                            return s.fail(format!("could not replace job {}: {e}", job.name));
                        }
                    }
                }
            }
        }
        _ => {}
    }

    let request =
        JobRequest { name: name.clone(), scheduled, scheduled_timestamp: schedule.scheduled_timestamp(scheduled) };
    let created = match jobs.create(&request).await {
        Err(e) => {
            s.event(EventType::Warning, "FailedCreate", format!("Error creating job: {e}"));
            return s.fail(format!("create job {name}: {e}"));
        }
        Ok(CreateResult::Rejected(reason)) => {
            // Refused (a quota, RBAC, an admission webhook): as upstream, retried with backoff,
            // and no later than the next run; if that comes first, this run counts as missed.
            s.event(EventType::Warning, "FailedCreate", format!("Error creating job: {reason}"));
            let at = requeue(&s.status);
            return Outcome { error: Some(format!("create job {name} refused: {reason}")), ..s.finish(at) };
        }
        Ok(CreateResult::Created(job)) => {
            s.event(EventType::Normal, "SuccessfulCreate", format!("Created job {}", job.name));
            Some(job)
        }
        Ok(CreateResult::AlreadyExists) => {
            // Our own earlier attempt (a crash before the status write, or a handover) or
            // someone else's Job: the live object decides.
            let existing = match jobs.get(&name).await {
                Ok(Some(job)) => job,
                Ok(None) => return s.fail(format!("job {name} already exists but cannot be read")),
                Err(e) => return s.fail(format!("get job {name}: {e}")),
            };
            if existing.controller_uid.as_deref() != Some(cj.uid.as_str()) {
                // FIX: upstream silently drops the key; this says so and retries with backoff.
                s.event(
                    EventType::Warning,
                    "FailedCreate",
                    format!("Error creating job: job {name} already exists and is not controlled by this CronJob"),
                );
                return s.fail(format!("job {name} exists and is not controlled by this CronJob"));
            }
            if s.in_active(&existing.uid) {
                let at = requeue(&s.status);
                return s.finish(at);
            }
            s.status.active.push(existing.job_ref());
            s.status.last_schedule_time = Some(scheduled);
            s.changed = true;
            let at = requeue(&s.status);
            return s.finish(at);
        }
    };
    if let Some(job) = &created {
        s.status.active.push(job.job_ref());
    }
    s.reported(scheduled);
    s.status.last_schedule_time = Some(scheduled);
    s.changed = true;
    let at = requeue(&s.status);
    Outcome { created: created.map(|job| (job, scheduled)), ..s.finish(at) }
}

/// Deletes a Job (Background propagation) and drops it from `status.active`.
async fn delete_job<J: Jobs>(s: &mut Sync<'_>, job: &ChildJob, jobs: &mut J) -> Result<(), String> {
    match jobs.delete(&job.name).await {
        Ok(()) => {
            s.remove_active(&job.uid);
            s.event(EventType::Normal, "SuccessfulDelete", format!("Deleted job {}", job.name));
            Ok(())
        }
        Err(e) => {
            s.event(EventType::Warning, "FailedDelete", format!("Deleted job: {e}"));
            Err(e.to_string())
        }
    }
}
