//! History cleanup: which finished Jobs beyond the CronJob's history limits go.

use crate::model::{ChildJob, CronJobState, Finished, JobRef};

/// The oldest finished Jobs beyond the history limits, by `status.startTime`, unset last,
/// ties by name. Only named here: the caller deletes them after the sync, in the
/// background. FIX: a Job for a run that `lastScheduleTime` does not record yet is never
/// named, or the run could be started twice.
pub(crate) fn history_to_delete(
    cj: &CronJobState,
    last_schedule_time: Option<cronshard_types::Timestamp>,
    children: &[ChildJob],
) -> Vec<JobRef> {
    let recorded_minutes = last_schedule_time.map(|t| t.as_second() / 60);
    let unrecorded = |job: &ChildJob| {
        let suffix = job.name.strip_prefix(&cj.name).and_then(|rest| rest.strip_prefix('-'));
        let minutes = suffix.and_then(|m| m.parse::<i64>().ok());
        minutes.is_some_and(|m| recorded_minutes.is_none_or(|r| m > r))
    };
    let mut names = Vec::new();
    for (kind, limit) in [
        (Finished::Complete, cj.spec.successful_jobs_history_limit),
        (Finished::Failed, cj.spec.failed_jobs_history_limit),
    ] {
        let Some(limit) = limit else { continue };
        let mut finished: Vec<&ChildJob> = children.iter().filter(|j| j.finished == Some(kind)).collect();
        let excess = finished.len().saturating_sub(usize::try_from(limit.max(0)).unwrap_or(0));
        if excess == 0 {
            continue;
        }
        finished.sort_by(|a, b| match (a.start_time, b.start_time) {
            (Some(x), Some(y)) if x != y => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            _ => a.name.cmp(&b.name),
        });
        names.extend(finished.into_iter().take(excess).filter(|job| !unrecorded(job)).map(ChildJob::job_ref));
    }
    names
}
