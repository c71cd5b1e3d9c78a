//! History cleanup: the oldest finished Jobs beyond the CronJob's history limits go.

use super::rules::{Sync, delete_job};
use super::{ChildJob, Finished, Jobs};

/// Deletes the oldest finished Jobs beyond the history limits: by `status.startTime`, unset
/// last, ties by name. FIX: a Job for a run that `lastScheduleTime` does not record yet is
/// never deleted, or the run could be started twice.
pub(super) async fn cleanup_history<J: Jobs>(s: &mut Sync<'_>, children: &[ChildJob], jobs: &mut J) {
    let recorded_minutes = s.status.last_schedule_time.map(|t| t.as_second() / 60);
    let unrecorded = |job: &ChildJob| {
        let suffix = job.name.strip_prefix(&s.cj.name).and_then(|rest| rest.strip_prefix('-'));
        let minutes = suffix.and_then(|m| m.parse::<i64>().ok());
        minutes.is_some_and(|m| recorded_minutes.is_none_or(|r| m > r))
    };
    for (kind, limit) in [
        (Finished::Complete, s.cj.spec.successful_jobs_history_limit),
        (Finished::Failed, s.cj.spec.failed_jobs_history_limit),
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
        for job in finished.into_iter().take(excess) {
            if unrecorded(job) {
                continue;
            }
            // A failed delete is reported and retried on the next sync; it does not stop the run.
            let _ = delete_job(s, job, jobs).await;
        }
    }
}
