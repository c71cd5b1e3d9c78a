//! What shadow mode reads of CronJobs and Jobs, and where a spread puts a CronJob's runs.

use cronshard_types::keys::SCHEDULED_TIMESTAMP_ANNOTATION;
use cronshard_types::spread::SPREAD_ANNOTATION;
use cronshard_types::{CronJobSchedule, DstPolicy, Timestamp};
use cronshard_worker::objects::convert::{controller_uid, from_k8s, job_started};
use k8s_openapi::api::batch::v1::{CronJob, Job};

/// A CronJob as shadow mode reads it.
#[derive(Clone, Debug)]
pub(crate) struct CronJobView {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) uid: String,
    pub(crate) creation: Timestamp,
    /// `None`: the schedule or time zone does not parse; its runs cannot be judged.
    pub(crate) schedule: Option<CronJobSchedule>,
    pub(crate) suspend: bool,
    pub(crate) forbid: bool,
    pub(crate) starting_deadline_s: Option<i64>,
    /// The CronJob's own `cronshard.io/spread`, which wins over its Namespace's default.
    pub(crate) own_spread: Option<String>,
    /// The spread's offset (its own, else its Namespace's): the run at T is due at T + offset.
    pub(crate) spread_offset_s: u64,
    /// `status.lastScheduleTime`: where `@every` schedules count from.
    pub(crate) last_schedule_time: Option<Timestamp>,
}

/// A Job owned by a CronJob, as shadow mode reads it.
#[derive(Clone, Debug)]
pub(crate) struct JobView {
    pub(crate) owner_uid: String,
    pub(crate) uid: String,
    pub(crate) name: String,
    /// `batch.kubernetes.io/cronjob-scheduled-timestamp`, when present and readable.
    pub(crate) scheduled: Option<Timestamp>,
    /// When it was created, unix seconds (see [`created_estimate`]).
    pub(crate) created_s: f64,
    /// When it finished (or was deleted), unix seconds.
    pub(crate) ended_s: Option<f64>,
    /// A pod of it is ready, or it finished.
    pub(crate) started: bool,
}

/// `metadata.creationTimestamp` has whole seconds: the create happened in `[cts, cts + 1)`,
/// and before the watch delivered it. The midpoint of what is left is within 0.5 s of the
/// true time, and much closer when the watch is prompt.
pub(crate) fn created_estimate(creation_s: f64, observed_s: f64) -> f64 {
    let upper = (creation_s + 1.0).min(observed_s.max(creation_s));
    (creation_s + upper) / 2.0
}

/// What shadow mode reads of a CronJob, with its Namespace's spread default; `None` without
/// name, uid or creation time.
pub(crate) fn cronjob_view(
    cj: &CronJob,
    namespace_spread: Option<&str>,
    now: Timestamp,
    dst_policy: DstPolicy,
) -> Option<CronJobView> {
    let meta = &cj.metadata;
    let mut view = CronJobView {
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone()?,
        uid: meta.uid.clone()?,
        creation: from_k8s(meta.creation_timestamp.as_ref()?),
        schedule: CronJobSchedule::new(&cj.spec.schedule, cj.spec.time_zone.as_deref())
            .ok()
            .map(|s| s.with_dst_policy(dst_policy)),
        suspend: cj.spec.suspend.unwrap_or(false),
        forbid: cj.spec.concurrency_policy.as_deref() == Some("Forbid"),
        starting_deadline_s: cj.spec.starting_deadline_seconds,
        own_spread: meta.annotations.as_ref().and_then(|a| a.get(SPREAD_ANNOTATION)).cloned(),
        spread_offset_s: 0,
        last_schedule_time: cj.status.as_ref().and_then(|s| s.last_schedule_time.as_ref()).map(from_k8s),
    };
    view.spread_offset_s = spread_offset(&view, namespace_spread, now);
    Some(view)
}

/// The offset of `view`'s runs: its own spread, else `namespace_spread`. A spread the
/// controller ignores (too long, on `@every`, unparsable) moves nothing here either.
pub(crate) fn spread_offset(view: &CronJobView, namespace_spread: Option<&str>, now: Timestamp) -> u64 {
    let (Some(schedule), Some(text)) = (&view.schedule, view.own_spread.as_deref().or(namespace_spread)) else {
        return 0;
    };
    let spread_s = cronshard_types::spread::seconds_for(schedule, text, now).unwrap_or(0);
    cronshard_types::spread::offset(&view.namespace, &view.name, spread_s)
}

/// What shadow mode reads of a Job a CronJob owns (`None` for any other Job), seen at `observed`.
pub(crate) fn job_view(job: &Job, observed: Timestamp) -> Option<JobView> {
    let meta = &job.metadata;
    let owned_by_cronjob = meta
        .owner_references
        .as_ref()
        .is_some_and(|refs| refs.iter().any(|r| r.controller == Some(true) && r.kind == "CronJob"));
    if !owned_by_cronjob {
        return None;
    }
    let seconds = |t: Timestamp| t.as_millisecond() as f64 / 1000.0;
    let creation = seconds(from_k8s(meta.creation_timestamp.as_ref()?));
    let status = job.status.as_ref();
    let finished_condition = status.and_then(|s| s.conditions.as_ref()).and_then(|conditions| {
        conditions
            .iter()
            .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
            .map(|c| c.last_transition_time.as_ref().map_or(seconds(observed), |t| seconds(from_k8s(t))))
    });
    let completion = status.and_then(|s| s.completion_time.as_ref()).map(|t| seconds(from_k8s(t)));
    Some(JobView {
        owner_uid: controller_uid(meta)?,
        uid: meta.uid.clone()?,
        name: meta.name.clone()?,
        scheduled: meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(SCHEDULED_TIMESTAMP_ANNOTATION))
            .and_then(|t| t.parse::<Timestamp>().ok()),
        created_s: created_estimate(creation, seconds(observed)),
        ended_s: completion.or(finished_condition),
        started: job_started(job),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_reads_its_owner_scheduled_time_creation_and_end() {
        let job: Job = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "nightly-29000000", "namespace": "a", "uid": "j1",
                "creationTimestamp": "2026-01-01T00:00:03Z",
                "annotations": {"batch.kubernetes.io/cronjob-scheduled-timestamp": "2026-01-01T01:00:00+01:00"},
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "c1", "controller": true}]},
            "status": {"conditions": [{"type": "Failed", "status": "True", "lastTransitionTime": "2026-01-01T00:05:00Z"}]}
        }))
        .expect("a Job");
        let observed: Timestamp = "2026-01-01T00:00:03.2Z".parse().expect("ts");
        let v = job_view(&job, observed).expect("owned by a CronJob");
        assert_eq!((v.owner_uid.as_str(), v.uid.as_str()), ("c1", "j1"));
        assert_eq!(v.scheduled, Some("2026-01-01T00:00:00Z".parse().expect("ts")), "the annotation's zone is read");
        let created: Timestamp = "2026-01-01T00:00:03Z".parse().expect("ts");
        assert!((v.created_s - (created.as_second() as f64 + 0.1)).abs() < 1e-6, "{}", v.created_s);
        assert_eq!(v.ended_s, Some(created.as_second() as f64 + 297.0), "a failed Job ends at its condition");
        let mut other = job.clone();
        other.metadata.owner_references.as_mut().expect("refs")[0].kind = "ReplicaSet".into();
        assert!(job_view(&other, observed).is_none(), "only Jobs a CronJob owns are followed");
    }
}
