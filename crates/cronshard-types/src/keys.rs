//! Label and annotation keys cronshard reads and writes.

/// The bucket a CronJob and its Jobs belong to, written once (`cronshard.io/bucket=<k>`).
pub const BUCKET_LABEL: &str = "cronshard.io/bucket";

/// Upstream's annotation on every Job a CronJob creates: the scheduled time in RFC 3339, in
/// the CronJob's `spec.timeZone` (UTC when unset).
pub const SCHEDULED_TIMESTAMP_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// What `kubectl create job --from=cronjob/NAME` writes on the Job it creates (value
/// `manual`): a run started by hand, not one of the schedule's.
pub const INSTANTIATE_ANNOTATION: &str = "cronjob.kubernetes.io/instantiate";

/// Which replica created a Job and under which bucket Lease epoch (`leaseTransitions`), so an
/// audit can prove who fired what.
pub const CREATED_BY_ANNOTATION: &str = "cronshard.io/created-by";

/// Role of a cronshard Lease: `member` or `bucket`.
pub const ROLE_LABEL: &str = "cronshard.io/role";
