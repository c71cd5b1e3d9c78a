//! Shadow mode (`cronshard shadow`): watches CronJobs and their Jobs without writing anything,
//! computes every run that should start by cronshard's semantics, and judges how the running
//! controller kept them: on time, late, missed, duplicate, unexpected.

pub mod ledger;
pub mod metrics;
pub mod tally;
mod watch;

use std::num::NonZeroU32;
use std::str::FromStr;

use cronshard_types::keys::SCHEDULED_TIMESTAMP_ANNOTATION;
use cronshard_types::spread::SPREAD_ANNOTATION;
use cronshard_types::{CronJobSchedule, Timestamp};
use cronshard_worker::convert::{controller_uid, from_k8s};
use k8s_openapi::api::batch::v1::{CronJob, Job};

pub use self::ledger::{CronJobView, JobView, Ledger, Settings, Verdict};
pub use self::tally::Report;
pub use self::watch::{Options, run};

/// One shard of the CronJobs, `i/N`: those whose bucket among N is i (cronshard's own
/// bucket hash, computed here), so that several shadow processes share a huge cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: NonZeroU32,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?} is not a shard: give i/N with 0 <= i < N, such as 0/4");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: NonZeroU32 = n.trim().parse().map_err(|_| bad())?;
        if index >= count.get() {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    pub fn holds(&self, namespace: &str, name: &str) -> bool {
        cronshard_types::bucket(namespace, name, self.count) == self.index
    }
}

/// What shadow mode reads of a CronJob, with its Namespace's spread default; `None` without
/// name, uid or creation time.
pub fn cronjob_view(cj: &CronJob, namespace_spread: Option<&str>, now: Timestamp) -> Option<CronJobView> {
    let meta = &cj.metadata;
    let mut view = CronJobView {
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone()?,
        uid: meta.uid.clone()?,
        creation: from_k8s(meta.creation_timestamp.as_ref()?),
        schedule: CronJobSchedule::new(&cj.spec.schedule, cj.spec.time_zone.as_deref()).ok(),
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
pub fn job_view(job: &Job, observed: Timestamp) -> Option<JobView> {
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
        created_s: ledger::created_estimate(creation, seconds(observed)),
        ended_s: completion.or(finished_condition),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_is_i_of_n_and_anything_else_is_refused() {
        let s: Shard = "1/4".parse().expect("valid");
        assert_eq!((s.index, s.count.get()), (1, 4));
        assert_eq!(s.to_string(), "1/4");
        for bad in ["4/4", "1", "a/4", "1/0", "-1/4", "1/4/2", ""] {
            let e = bad.parse::<Shard>().expect_err(bad);
            assert!(e.contains("i/N"), "{e}");
        }
        let n = NonZeroU32::new(4).expect("4");
        let held = (0..4).filter(|i| Shard { index: *i, count: n }.holds("team-a", "nightly")).count();
        assert_eq!(held, 1, "every CronJob is in exactly one shard");
        assert!(Shard { index: cronshard_types::bucket("team-a", "nightly", n), count: n }.holds("team-a", "nightly"));
    }

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
