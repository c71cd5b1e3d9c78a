//! A replica's coordination settings, and the wall clock it writes into Leases.

use std::fmt;
use std::num::NonZeroU32;
use std::sync::Arc;

use cronshard_types::BucketFunction;
use k8s_openapi::jiff::Timestamp;

use crate::error::{Error, Result};
use crate::lease::{Layout, member_name};
use crate::membership::Timing;

/// The replica's wall clock: every time the coordinator writes into a Lease (acquireTime,
/// renewTime) and the wall time it judges acquireTimes against come from it. Intervals and
/// deadlines run on tokio's monotonic clock instead.
pub type WallClock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// A replica's coordination settings.
#[derive(Clone)]
pub struct Settings {
    pub identity: String,
    /// Where the Leases live (the release namespace).
    pub namespace: String,
    pub buckets: NonZeroU32,
    /// How CronJobs map to buckets ([`Settings::new`]: by uid).
    pub bucket_function: BucketFunction,
    pub timing: Timing,
    /// The replica's one wall clock ([`Settings::new`]: the system's).
    pub wall_clock: WallClock,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("identity", &self.identity)
            .field("namespace", &self.namespace)
            .field("buckets", &self.buckets)
            .field("bucket_function", &self.bucket_function)
            .field("timing", &self.timing)
            .finish_non_exhaustive()
    }
}

impl Settings {
    /// Settings on the system's wall clock ([`Timestamp::now`]).
    pub fn new(identity: impl Into<String>, namespace: impl Into<String>, buckets: NonZeroU32, timing: Timing) -> Self {
        Settings {
            identity: identity.into(),
            namespace: namespace.into(),
            buckets,
            bucket_function: BucketFunction::Uid,
            timing,
            wall_clock: Arc::new(Timestamp::now),
        }
    }

    /// The bucket count and function, as written on the Leases.
    pub fn layout(&self) -> Layout {
        Layout { buckets: self.buckets.get(), function: self.bucket_function }
    }

    pub fn validate(&self) -> Result<()> {
        self.timing.validate()?;
        let name = member_name(&self.identity);
        let valid = !self.identity.is_empty()
            && name.len() <= 253
            && self.identity.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.')
            && self.identity.as_bytes()[self.identity.len() - 1].is_ascii_alphanumeric();
        if !valid {
            return Err(Error::Settings(format!(
                "identity {:?} cannot name a Lease: use lower-case letters, digits, '-' and '.' (a pod name)",
                self.identity
            )));
        }
        Ok(())
    }
}
