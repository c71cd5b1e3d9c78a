//! The rules of one sync, in the order upstream applies them; each stops the sync or hands on.

use std::ops::ControlFlow::{self, Break, Continue};

use cronshard_types::cronjob::job_name;
use cronshard_types::{CronJobSchedule, Error as ScheduleError, Timestamp};
use jiff::SignedDuration;

use crate::error::SyncError;
use crate::history::history_to_delete;
use crate::missed::{count_missed, rfc1123z};
use crate::model::{
    ChildJob, ConcurrencyPolicy, CreateResult, CronJobState, CronJobStatus, Event, EventType, Finished, Invalid,
    JobRef, JobRequest, Jobs, MissReason, Outcome, history_deleted,
};

/// How a sync ends.
enum End {
    /// Nothing more to do now; sync again at this time (`None`: on a change only).
    Requeue(Option<Timestamp>),
    /// A failure, retried with backoff but no later than `requeue_at`.
    Failed { error: SyncError, requeue_at: Option<Timestamp> },
    /// The spec cannot run; only a change to it helps.
    Invalid(Invalid),
    /// A run's Job was created.
    Started { job: ChildJob, scheduled: Timestamp, requeue_at: Option<Timestamp> },
}

/// The state one sync builds up: the status it will write, its Events and missed runs.
struct Sync<'a> {
    cj: &'a CronJobState,
    status: CronJobStatus,
    now: Timestamp,
    changed: bool,
    events: Vec<Event>,
    missed: Vec<(MissReason, u64)>,
    reported_through: Option<Timestamp>,
    history: Vec<JobRef>,
}

/// One sync of `cj` at `now`. `children` are the Jobs the owner index holds for it (by
/// controller uid), never a namespace scan.
pub async fn sync<J: Jobs>(cj: &CronJobState, children: &[ChildJob], now: Timestamp, jobs: &mut J) -> Outcome {
    let mut s = Sync {
        cj,
        status: cj.status.clone(),
        now,
        changed: false,
        events: Vec::new(),
        missed: Vec::new(),
        reported_through: cj.reported_through,
        history: Vec::new(),
    };
    let (Break(end) | Continue(end)) = s.rules(children, jobs).await;
    s.outcome(end)
}

/// One sync of a CronJob whose runs start `offset_s` seconds after their scheduled times
/// (`cronshard.io/spread`). The rules see the clock that much earlier: a run's name,
/// `lastScheduleTime` and concurrency are those of its scheduled time T, it starts at
/// T + offset, its starting deadline counts from T + offset, and the next sync is asked for
/// that much later too.
pub async fn sync_spread<J: Jobs>(
    cj: &CronJobState,
    children: &[ChildJob],
    now: Timestamp,
    offset_s: u64,
    jobs: &mut J,
) -> Outcome {
    if offset_s == 0 {
        return sync(cj, children, now, jobs).await;
    }
    let offset = SignedDuration::from_secs(i64::try_from(offset_s).unwrap_or(i64::MAX));
    let mut outcome = sync(cj, children, now.checked_sub(offset).unwrap_or(now), jobs).await;
    outcome.requeue_at = outcome.requeue_at.map(|at| at.checked_add(offset).unwrap_or(at));
    outcome
}

impl Sync<'_> {
    /// Upstream's order: children, schedule, the due run, concurrency, the create; the
    /// history to clean up is named on the way (finished Jobs only, so the create cannot
    /// change it) and deleted by the caller afterwards.
    async fn rules<J: Jobs>(&mut self, children: &[ChildJob], jobs: &mut J) -> ControlFlow<End, End> {
        self.reconcile_children(children);
        self.confirm_missing_active(children, jobs).await?;
        if self.cj.deleting {
            return Break(End::Requeue(None));
        }
        self.history = history_to_delete(self.cj, self.status.last_schedule_time, children);
        let schedule = self.runnable_schedule()?;
        let scheduled = self.due_run(&schedule)?;
        let name = job_name(&self.cj.name, scheduled);
        if self.status.active.iter().any(|r| r.name == name) || self.status.last_schedule_time == Some(scheduled) {
            return Break(End::Requeue(self.requeue(&schedule)));
        }
        self.apply_concurrency_policy(&schedule, scheduled, jobs).await?;
        let request = JobRequest { name, scheduled, scheduled_timestamp: schedule.scheduled_timestamp(scheduled) };
        Continue(self.create_run(&schedule, request, jobs).await)
    }

    /// Finished children leave `status.active`, with Events; the newest completion is recorded.
    /// FIX: a run started by hand is not "unexpected" (upstream warns, kubernetes#126384); like
    /// upstream it is never in `status.active`, so Forbid and Replace do not count it.
    fn reconcile_children(&mut self, children: &[ChildJob]) {
        for job in children {
            let in_active = self.in_active(&job.uid);
            match job.finished {
                None if !in_active && !job.manual => self.event(
                    EventType::Warning,
                    "UnexpectedJob",
                    format!("Saw a job that the controller did not create or forgot: {}", job.name),
                ),
                Some(condition) if in_active => {
                    self.remove_active(&job.uid);
                    self.event(
                        EventType::Normal,
                        "SawCompletedJob",
                        format!("Saw completed job: {}, condition: {condition:?}", job.name),
                    );
                }
                _ => {}
            }
            if job.finished == Some(Finished::Complete)
                && let Some(done) = job.completion_time
                && self.status.last_successful_time.is_none_or(|t| done > t)
            {
                self.status.last_successful_time = Some(done);
                self.changed = true;
            }
        }
    }

    /// Active entries with no Job in the cache are confirmed with a live GET before they go.
    async fn confirm_missing_active<J: Jobs>(&mut self, children: &[ChildJob], jobs: &mut J) -> ControlFlow<End> {
        let missing: Vec<_> =
            self.status.active.iter().filter(|r| !children.iter().any(|j| j.uid == r.uid)).cloned().collect();
        for entry in missing {
            match jobs.get(&entry.name).await {
                Ok(None) => {
                    self.event(EventType::Normal, "MissingJob", format!("Active job went missing: {}", entry.name));
                    self.remove_active(&entry.uid);
                }
                Ok(Some(_)) => {}
                Err(e) => {
                    return Break(self.failed(SyncError::GetJob { name: entry.name, source: SyncError::cause(e) }));
                }
            }
        }
        Continue(())
    }

    /// The schedule, unless the time zone or the schedule is invalid or the CronJob suspended.
    fn runnable_schedule(&mut self) -> ControlFlow<End, CronJobSchedule> {
        let spec = &self.cj.spec;
        let read = CronJobSchedule::new(&spec.schedule, spec.time_zone.as_deref());
        let schedule = match read.map(|s| s.with_dst_policy(self.cj.dst_policy)) {
            Err(ScheduleError::UnknownTimeZone { name, reason }) => {
                self.event(EventType::Warning, "UnknownTimeZone", format!("invalid timeZone: {name:?}: {reason}"));
                return Break(End::Invalid(Invalid::UnknownTimeZone));
            }
            other => other,
        };
        if spec.suspend {
            // Runs while suspended are skipped on purpose, not missed.
            self.reported(self.now);
            return Break(End::Requeue(None));
        }
        let schedule = match schedule {
            Ok(schedule) => schedule,
            Err(e) => {
                let message = format!("unparseable schedule: {:?} : {e}", spec.schedule);
                self.event(EventType::Warning, "UnparseableSchedule", message);
                return Break(End::Invalid(Invalid::UnparseableSchedule));
            }
        };
        if schedule.zone_in_schedule() {
            self.event(
                EventType::Warning,
                "UnsupportedSchedule",
                format!(
                    "CRON_TZ or TZ used in schedule {:?} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
                    spec.schedule
                ),
            );
        }
        Continue(schedule)
    }

    /// The run to start now, after counting the missed ones; none if it is not time yet, it
    /// shares a minute with the last run, or its starting deadline has passed.
    fn due_run(&mut self, schedule: &CronJobSchedule) -> ControlFlow<End, Timestamp> {
        let earliest = self.earliest();
        let due = match schedule.due(earliest, self.now, self.cj.spec.starting_deadline_seconds) {
            Ok(due) => due,
            Err(e) => {
                let message = format!("invalid schedule: {} : {e}", self.cj.spec.schedule);
                self.event(EventType::Warning, "InvalidSchedule", message);
                return Break(End::Invalid(Invalid::InvalidSchedule));
            }
        };
        if due.too_many_missed {
            self.event(
                EventType::Warning,
                "TooManyMissedTimes",
                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew"
                    .to_owned(),
            );
        }
        if let (Some(last), Some(scheduled)) = (self.status.last_schedule_time, due.due) {
            self.wait_for_next_minute(last, scheduled)?;
        }
        let missed = count_missed(schedule, earliest, self.reported_through, &due);
        self.events.extend(missed.events);
        for (reason, count) in missed.counts {
            self.miss(reason, count);
        }
        if let Some(through) = missed.reported_through {
            self.reported(through);
        }
        let Some(scheduled) = due.due else {
            return Break(End::Requeue(self.requeue(schedule)));
        };
        if let Some(deadline) = self.cj.spec.starting_deadline_seconds
            && scheduled.checked_add(SignedDuration::from_secs(deadline)).is_ok_and(|late| late < self.now)
        {
            let message = format!("Missed scheduled time to start a job: {}", rfc1123z(scheduled));
            self.event(EventType::Warning, "MissSchedule", message);
            self.miss(MissReason::MissSchedule, 1);
            self.reported(scheduled);
            return Break(End::Requeue(self.requeue(schedule)));
        }
        Continue(scheduled)
    }

    /// Job names are per minute: a later run in the minute of the last one (`@every 10s`)
    /// cannot have a Job of its own. Upstream tries, gets AlreadyExists and backs off until
    /// the minute turns; this waits for the minute without a request, and the minute's other
    /// runs are skipped by the naming rule, not missed.
    fn wait_for_next_minute(&mut self, last: Timestamp, scheduled: Timestamp) -> ControlFlow<End> {
        let minute = scheduled.as_second().div_euclid(60);
        if last >= scheduled || last.as_second().div_euclid(60) != minute {
            return Continue(());
        }
        let next_minute = Timestamp::from_second((minute + 1) * 60).ok();
        if let Some(minute_end) = next_minute.and_then(|n| n.checked_sub(SignedDuration::from_nanos(1)).ok()) {
            self.reported(minute_end);
        }
        Break(End::Requeue(next_minute.and_then(|n| n.checked_add(cronshard_types::cronjob::REQUEUE_DELAY).ok())))
    }

    /// Forbid skips the run while one is active; Replace deletes the active ones first.
    async fn apply_concurrency_policy<J: Jobs>(
        &mut self,
        schedule: &CronJobSchedule,
        scheduled: Timestamp,
        jobs: &mut J,
    ) -> ControlFlow<End> {
        match self.cj.spec.concurrency_policy {
            ConcurrencyPolicy::Forbid if !self.status.active.is_empty() => {
                self.event(
                    EventType::Normal,
                    "JobAlreadyActive",
                    "Not starting job because prior execution is running and concurrency policy is Forbid".to_owned(),
                );
                // Skipped by the CronJob's own policy, not missed.
                self.reported(scheduled);
                Break(End::Requeue(self.requeue(schedule)))
            }
            ConcurrencyPolicy::Replace => {
                for entry in self.status.active.clone() {
                    match jobs.get(&entry.name).await {
                        Err(e) => {
                            self.event(EventType::Warning, "FailedGet", format!("Get job: {e}"));
                            let source = SyncError::cause(e);
                            return Break(self.failed(SyncError::GetJob { name: entry.name, source }));
                        }
                        // Gone already: nothing to replace.
                        Ok(None) => self.remove_active(&entry.uid),
                        Ok(Some(job)) => {
                            if let Err(source) = delete_job(self, &job, jobs).await {
                                return Break(self.failed(SyncError::DeleteJob { name: job.name, source }));
                            }
                        }
                    }
                }
                Continue(())
            }
            _ => Continue(()),
        }
    }

    /// Creates the run's Job and records it; an existing Job of this CronJob is adopted.
    async fn create_run<J: Jobs>(&mut self, schedule: &CronJobSchedule, request: JobRequest, jobs: &mut J) -> End {
        let (name, scheduled) = (&request.name, request.scheduled);
        match jobs.create(&request).await {
            Err(e) => {
                self.event(EventType::Warning, "FailedCreate", format!("Error creating job: {e}"));
                self.failed(SyncError::CreateJob { name: name.clone(), source: SyncError::cause(e) })
            }
            Ok(CreateResult::Rejected(reason)) => {
                // Refused (a quota, RBAC, an admission webhook): as upstream, retried with
                // backoff, and no later than the next run; if that comes first, this run
                // counts as missed.
                self.event(EventType::Warning, "FailedCreate", format!("Error creating job: {reason}"));
                let error = SyncError::CreateRefused { name: name.clone(), message: reason };
                End::Failed { error, requeue_at: self.requeue(schedule) }
            }
            Ok(CreateResult::Created(job)) => {
                self.event(EventType::Normal, "SuccessfulCreate", format!("Created job {}", job.name));
                self.status.active.push(job.job_ref());
                self.reported(scheduled);
                self.status.last_schedule_time = Some(scheduled);
                self.changed = true;
                End::Started { job, scheduled, requeue_at: self.requeue(schedule) }
            }
            Ok(CreateResult::AlreadyExists) => self.adopt_existing(schedule, name, scheduled, jobs).await,
        }
    }

    /// Our own earlier attempt (a crash before the status write, or a handover) or someone
    /// else's Job: the live object decides.
    async fn adopt_existing<J: Jobs>(
        &mut self,
        schedule: &CronJobSchedule,
        name: &str,
        scheduled: Timestamp,
        jobs: &mut J,
    ) -> End {
        let existing = match jobs.get(name).await {
            Ok(Some(job)) => job,
            Ok(None) => return self.failed(SyncError::ExistingJobUnreadable { name: name.to_owned() }),
            Err(e) => return self.failed(SyncError::GetJob { name: name.to_owned(), source: SyncError::cause(e) }),
        };
        if existing.controller_uid.as_deref() != Some(self.cj.uid.as_str()) {
            // FIX: upstream silently drops the key; this says so and retries with backoff.
            self.event(
                EventType::Warning,
                "FailedCreate",
                format!("Error creating job: job {name} already exists and is not controlled by this CronJob"),
            );
            return self.failed(SyncError::NameTaken { name: name.to_owned() });
        }
        if !self.in_active(&existing.uid) {
            self.status.active.push(existing.job_ref());
            self.status.last_schedule_time = Some(scheduled);
            self.changed = true;
        }
        End::Requeue(self.requeue(schedule))
    }

    /// After what the schedule's runs count: the last run recorded (else the creation), or
    /// the schedule's last change if later. FIX: an edit of the schedule never starts a run
    /// by itself (upstream starts a "missed" run of the new schedule: kubernetes#130838).
    fn earliest(&self) -> Timestamp {
        let last = self.status.last_schedule_time.unwrap_or(self.cj.creation_timestamp);
        self.cj.schedule_changed_at.map_or(last, |changed| last.max(changed))
    }

    /// The next sync time: the schedule's next run after the last one recorded.
    fn requeue(&self, schedule: &CronJobSchedule) -> Option<Timestamp> {
        schedule.requeue_at(self.earliest(), self.now)
    }

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

    fn failed(&self, error: SyncError) -> End {
        End::Failed { error, requeue_at: None }
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

    fn outcome(self, end: End) -> Outcome {
        let mut outcome = Outcome {
            status: self.status,
            status_changed: self.changed,
            events: self.events,
            requeue_at: None,
            created: None,
            error: None,
            invalid: None,
            missed: self.missed,
            reported_through: self.reported_through,
            history: self.history,
        };
        match end {
            End::Requeue(at) => outcome.requeue_at = at,
            End::Failed { error, requeue_at } => (outcome.error, outcome.requeue_at) = (Some(error), requeue_at),
            End::Invalid(invalid) => outcome.invalid = Some(invalid),
            End::Started { job, scheduled, requeue_at } => {
                (outcome.created, outcome.requeue_at) = (Some((job, scheduled)), requeue_at);
            }
        }
        outcome
    }
}

/// Deletes an active Job (Replace; Background propagation) and drops it from `status.active`.
async fn delete_job<J: Jobs>(s: &mut Sync<'_>, job: &ChildJob, jobs: &mut J) -> Result<(), crate::error::Cause> {
    let result = jobs.delete(&job.name).await;
    if result.is_ok() {
        s.remove_active(&job.uid);
    }
    let said = result.as_ref().map(|_| ()).map_err(ToString::to_string);
    s.events.push(history_deleted(&job.name, said));
    result.map_err(SyncError::cause)
}
