//! The worker's sync rules' test double: Jobs in memory, and the CronJobs and times the rule
//! tests are written in.
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;

use cronshard_sync::*;
use cronshard_types::{DstPolicy, Timestamp};

/// Jobs in memory, with scripted failures, recording every call.
#[derive(Default)]
pub struct FakeJobs {
    pub live: BTreeMap<String, ChildJob>,
    pub calls: Vec<String>,
    pub fail_get: bool,
    pub fail_delete: bool,
    pub fail_create: bool,
    pub reject_create: bool,
    pub created_at: Option<Timestamp>,
    /// Every create request, in order.
    pub requests: Vec<JobRequest>,
}

/// A scripted failure of the fake API server.
#[derive(Debug)]
pub struct FakeError(pub String);

impl std::fmt::Display for FakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FakeError {}

/// The error every scripted failure returns.
fn timed_out() -> FakeError {
    FakeError("etcdserver: request timed out".into())
}

impl Jobs for FakeJobs {
    type Error = FakeError;

    async fn get(&mut self, name: &str) -> Result<Option<ChildJob>, FakeError> {
        self.calls.push(format!("get {name}"));
        if self.fail_get {
            return Err(timed_out());
        }
        Ok(self.live.get(name).cloned())
    }

    async fn delete(&mut self, name: &str) -> Result<(), FakeError> {
        self.calls.push(format!("delete {name}"));
        if self.fail_delete {
            return Err(timed_out());
        }
        self.live.remove(name);
        Ok(())
    }

    async fn create(&mut self, request: &JobRequest) -> Result<CreateResult, FakeError> {
        self.calls.push(format!("create {}", request.name));
        self.requests.push(request.clone());
        if self.fail_create {
            return Err(timed_out());
        }
        if self.reject_create {
            return Ok(CreateResult::Rejected(
                "Job.batch is invalid: metadata.name: must be no more than 63 characters".into(),
            ));
        }
        if self.live.contains_key(&request.name) {
            return Ok(CreateResult::AlreadyExists);
        }
        let job = ChildJob {
            name: request.name.clone(),
            uid: format!("uid-{}", request.name),
            resource_version: "100".into(),
            controller_uid: Some("cj-uid".into()),
            creation_timestamp: self.created_at.unwrap_or(request.scheduled),
            start_time: None,
            completion_time: None,
            finished: None,
            manual: false,
        };
        self.live.insert(job.name.clone(), job.clone());
        Ok(CreateResult::Created(job))
    }
}

pub fn t(s: &str) -> Timestamp {
    s.parse().expect("timestamp")
}

pub fn cronjob(schedule: &str) -> CronJobState {
    CronJobState {
        namespace: "default".into(),
        name: "nightly".into(),
        uid: "cj-uid".into(),
        creation_timestamp: t("2026-11-30T08:00:00Z"),
        deleting: false,
        spec: CronJobSpec {
            schedule: schedule.into(),
            successful_jobs_history_limit: Some(3),
            failed_jobs_history_limit: Some(1),
            ..CronJobSpec::default()
        },
        status: CronJobStatus::default(),
        reported_through: None,
        dst_policy: DstPolicy::default(),
        schedule_changed_at: None,
    }
}

pub fn job(name: &str, finished: Option<Finished>, start: Option<&str>) -> ChildJob {
    ChildJob {
        name: name.into(),
        uid: format!("uid-{name}"),
        resource_version: "7".into(),
        controller_uid: Some("cj-uid".into()),
        creation_timestamp: t("2026-11-30T08:00:00Z"),
        start_time: start.map(t),
        completion_time: finished.filter(|f| *f == Finished::Complete).and(start.map(t)),
        finished,
        manual: false,
    }
}

pub fn active(job: &ChildJob) -> JobRef {
    JobRef { name: job.name.clone(), uid: job.uid.clone(), resource_version: job.resource_version.clone() }
}

pub fn reasons(outcome: &Outcome) -> Vec<&'static str> {
    outcome.events.iter().map(|e| e.reason).collect()
}

pub async fn run(cj: &CronJobState, children: &[ChildJob], now: &str, jobs: &mut FakeJobs) -> Outcome {
    sync(cj, children, t(now), jobs).await
}

/// `<name>-<unix minutes>` of an RFC 3339 time.
pub fn name_at(cj: &str, at: &str) -> String {
    format!("{cj}-{}", t(at).as_second() / 60)
}
