//! cronshard's Lease objects: names, labels, what a Lease says (`LeaseInfo`) and how the
//! member and bucket Leases are written.

use std::collections::BTreeMap;

use cronshard_types::BucketFunction;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;

/// The role label every cronshard Lease carries.
pub use cronshard_types::keys::ROLE_LABEL;
/// The bucket count a member (or a bucket Lease's holder) runs with; on the config Lease, the
/// count of record of a deployment whose bucket function is `name`.
pub const BUCKETS_ANNOTATION: &str = "cronshard.io/buckets";
/// The bucket function a member runs with, and the one of record on the config Lease (absent:
/// `name`, the only one before there was a choice).
pub const BUCKET_FUNCTION_ANNOTATION: &str = "cronshard.io/bucket-function";
/// On the config Lease of a deployment whose bucket function is not `name`: its count of
/// record. Not [`BUCKETS_ANNOTATION`], so a release that knows only `name` finds no record
/// there and never acts on buckets it would compute differently.
pub const BUCKET_COUNT_ANNOTATION: &str = "cronshard.io/bucket-count";
/// A random value each process writes on its member Lease: a different one appearing after
/// this process has written the Lease means another process runs with the same identity.
pub const INCARNATION_ANNOTATION: &str = "cronshard.io/incarnation";
pub const MEMBER_PREFIX: &str = "cronshard-member-";
pub const BUCKET_PREFIX: &str = "cronshard-bucket-";
/// The Lease that records the deployment's bucket count: written once by the first replica,
/// so which replicas may act never depends on which of them is older.
pub const CONFIG_NAME: &str = "cronshard-config";

/// What a Lease is for.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Member(String),
    Bucket(u32),
    /// The bucket count of record ([`CONFIG_NAME`]).
    Config,
}

/// The parts of a Lease the protocol reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseInfo {
    pub role: Role,
    pub name: String,
    pub resource_version: String,
    pub holder: Option<String>,
    pub transitions: i32,
    pub bucket_count: Option<u32>,
    /// The bucket function it names (`None`: one this release does not know).
    pub bucket_function: Option<BucketFunction>,
    /// RFC 3339, as written (ordered as text: the server writes one format).
    pub acquire_time: Option<String>,
    /// Member Leases: the writing process's [`INCARNATION_ANNOTATION`].
    pub incarnation: Option<String>,
}

impl LeaseInfo {
    /// `acquire_time` as microseconds since the epoch (`i64::MIN` when absent or unreadable),
    /// for ordering: RFC 3339 text with varying fractional digits does not sort as text.
    pub fn acquired_us(&self) -> i64 {
        self.acquire_time.as_deref().and_then(|t| t.parse::<Timestamp>().ok()).map_or(i64::MIN, |t| t.as_microsecond())
    }

    /// Reads a Lease; `None` for Leases that are not cronshard's.
    pub fn from_lease(lease: &Lease) -> Option<LeaseInfo> {
        let name = lease.metadata.name.clone()?;
        let role = lease.metadata.labels.as_ref()?.get(ROLE_LABEL)?;
        let role = match role.as_str() {
            "member" => Role::Member(name.strip_prefix(MEMBER_PREFIX)?.to_owned()),
            "bucket" => Role::Bucket(name.strip_prefix(BUCKET_PREFIX)?.parse().ok()?),
            "config" if name == CONFIG_NAME => Role::Config,
            _ => return None,
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let annotation = |key: &str| lease.metadata.annotations.as_ref().and_then(|a| a.get(key)).cloned();
        let function = annotation(BUCKET_FUNCTION_ANNOTATION);
        let count_key = match (&role, function.as_deref()) {
            (Role::Config, Some(f)) if f != BucketFunction::Name.as_str() => BUCKET_COUNT_ANNOTATION,
            _ => BUCKETS_ANNOTATION,
        };
        Some(LeaseInfo {
            role,
            name,
            resource_version: lease.metadata.resource_version.clone().unwrap_or_default(),
            holder: spec.holder_identity,
            transitions: spec.lease_transitions.unwrap_or(0),
            bucket_count: annotation(count_key).and_then(|c| c.parse().ok()),
            bucket_function: function.map_or(Some(BucketFunction::Name), |f| f.parse().ok()),
            acquire_time: spec.acquire_time.map(|t| t.0.to_string()),
            incarnation: annotation(INCARNATION_ANNOTATION),
        })
    }
}

pub fn member_name(identity: &str) -> String {
    format!("{MEMBER_PREFIX}{identity}")
}

pub fn bucket_name(bucket: u32) -> String {
    format!("{BUCKET_PREFIX}{bucket}")
}

fn meta(name: String, role: &str, buckets: u32, resource_version: Option<String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        labels: Some(BTreeMap::from([(ROLE_LABEL.to_owned(), role.to_owned())])),
        annotations: Some(BTreeMap::from([(BUCKETS_ANNOTATION.to_owned(), buckets.to_string())])),
        resource_version,
        ..ObjectMeta::default()
    }
}

/// The bucket count and function a deployment runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub buckets: u32,
    pub function: BucketFunction,
}

/// A member Lease (new when `resource_version` is `None`) written by process `incarnation`,
/// renewed at `now` on the replica's wall clock (acquired then too, unless `acquired`).
pub fn member_lease(
    identity: &str,
    incarnation: &str,
    layout: Layout,
    duration_s: i32,
    acquired: Option<MicroTime>,
    resource_version: Option<String>,
    now: Timestamp,
) -> Lease {
    let mut metadata = meta(member_name(identity), "member", layout.buckets, resource_version);
    let annotations = metadata.annotations.get_or_insert_default();
    annotations.insert(INCARNATION_ANNOTATION.to_owned(), incarnation.to_owned());
    annotations.insert(BUCKET_FUNCTION_ANNOTATION.to_owned(), layout.function.as_str().to_owned());
    Lease {
        metadata,
        spec: Some(LeaseSpec {
            holder_identity: Some(identity.to_owned()),
            lease_duration_seconds: Some(duration_s),
            acquire_time: Some(acquired.unwrap_or(MicroTime(now))),
            renew_time: Some(MicroTime(now)),
            ..LeaseSpec::default()
        }),
    }
}

/// The bucket count and function of record, created by the first replica of a deployment. A
/// `name` record is written as releases before the choice wrote it, so they can run beside
/// this one; any other function keeps its count where they do not look.
pub fn config_lease(layout: Layout) -> Lease {
    let mut metadata = meta(CONFIG_NAME.to_owned(), "config", layout.buckets, None);
    if layout.function != BucketFunction::Name {
        metadata.annotations = Some(BTreeMap::from([
            (BUCKET_FUNCTION_ANNOTATION.to_owned(), layout.function.as_str().to_owned()),
            (BUCKET_COUNT_ANNOTATION.to_owned(), layout.buckets.to_string()),
        ]));
    }
    Lease { metadata, spec: Some(LeaseSpec::default()) }
}

/// A bucket Lease held by `holder` (empty: released) after `transitions` hand-offs, written
/// at `now` on the replica's wall clock.
pub fn bucket_lease(
    bucket: u32,
    holder: &str,
    buckets: u32,
    duration_s: i32,
    transitions: i32,
    resource_version: Option<String>,
    now: Timestamp,
) -> Lease {
    Lease {
        metadata: meta(bucket_name(bucket), "bucket", buckets, resource_version),
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.to_owned()),
            lease_duration_seconds: Some(duration_s),
            lease_transitions: Some(transitions),
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            ..LeaseSpec::default()
        }),
    }
}

/// Claims bucket `bucket` for `holder` over the Lease as last seen (`current`): a create if
/// there was none, else a PUT carrying its resourceVersion, so of two claimants working from
/// the same copy exactly one wins and the other gets 409. The epoch (leaseTransitions) goes
/// up by one with every claim. `now` is the replica's wall clock.
pub async fn claim(
    api: &kube::Api<Lease>,
    bucket: u32,
    holder: &str,
    buckets: u32,
    duration_s: i32,
    current: Option<&LeaseInfo>,
    now: Timestamp,
) -> kube::Result<Lease> {
    let transitions = current.map_or(0, |c| c.transitions.saturating_add(1));
    let rv = current.map(|c| c.resource_version.clone());
    let lease = bucket_lease(bucket, holder, buckets, duration_s, transitions, rv, now);
    match current {
        None => api.create(&kube::api::PostParams::default(), &lease).await,
        Some(_) => api.replace(&bucket_name(bucket), &kube::api::PostParams::default(), &lease).await,
    }
}

#[cfg(test)]
mod tests {
    //! Leases read back as written.

    use super::*;

    #[test]
    fn leases_round_trip() {
        let at = Timestamp::UNIX_EPOCH;
        let info = LeaseInfo::from_lease(&bucket_lease(7, "r1", 64, 15, 3, Some("42".into()), at)).expect("ours");
        assert_eq!(info.role, Role::Bucket(7));
        assert_eq!(info.holder.as_deref(), Some("r1"));
        assert_eq!((info.transitions, info.bucket_count, info.resource_version.as_str()), (3, Some(64), "42"));
        let info = LeaseInfo::from_lease(&member_lease("pod-a", "n1", UID_64, 15, None, None, at)).expect("ours");
        assert_eq!(info.role, Role::Member("pod-a".into()));
        assert!(info.acquire_time.is_some());
        assert_eq!(info.incarnation.as_deref(), Some("n1"));
        assert_eq!((info.bucket_count, info.bucket_function), (Some(64), Some(BucketFunction::Uid)));
        for function in [BucketFunction::Uid, BucketFunction::Name] {
            let info = LeaseInfo::from_lease(&config_lease(Layout { buckets: 32, function })).expect("ours");
            assert_eq!((info.role, info.bucket_count, info.bucket_function), (Role::Config, Some(32), Some(function)));
        }
        let foreign =
            Lease { metadata: ObjectMeta { name: Some("kube-scheduler".into()), ..Default::default() }, spec: None };
        assert!(LeaseInfo::from_lease(&foreign).is_none());
    }

    const UID_64: Layout = Layout { buckets: 64, function: BucketFunction::Uid };

    #[test]
    fn a_uid_record_has_no_count_where_releases_that_know_only_name_read_it() {
        let uid = config_lease(Layout { buckets: 64, function: BucketFunction::Uid });
        let annotations = uid.metadata.annotations.expect("annotations");
        assert_eq!(annotations.get(BUCKETS_ANNOTATION), None);
        let name = config_lease(Layout { buckets: 64, function: BucketFunction::Name });
        let annotations = name.metadata.annotations.expect("annotations");
        assert_eq!(annotations.len(), 1, "{annotations:?}");
        assert_eq!(annotations.get(BUCKETS_ANNOTATION).map(String::as_str), Some("64"));
        // A function this release does not know is read as unknown, never as a known one.
        let mut future = config_lease(Layout { buckets: 64, function: BucketFunction::Uid });
        future.metadata.annotations.as_mut().expect("set").insert(BUCKET_FUNCTION_ANNOTATION.into(), "other".into());
        assert_eq!(LeaseInfo::from_lease(&future).expect("ours").bucket_function, None);
    }

    #[test]
    fn the_times_written_are_the_ones_passed_in() {
        let at: Timestamp = "2030-01-02T03:04:05.678901Z".parse().expect("a timestamp");
        let earlier = MicroTime(Timestamp::UNIX_EPOCH);
        let spec = member_lease("pod-a", "n1", UID_64, 15, Some(earlier.clone()), None, at).spec.expect("spec");
        assert_eq!((spec.acquire_time, spec.renew_time), (Some(earlier), Some(MicroTime(at))));
        let spec = bucket_lease(7, "r1", 64, 15, 3, None, at).spec.expect("spec");
        assert_eq!((spec.acquire_time, spec.renew_time), (Some(MicroTime(at)), Some(MicroTime(at))));
    }
}
