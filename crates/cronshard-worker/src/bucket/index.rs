//! The bucket's cache: its CronJobs by key and by uid, its Jobs by uid and by controlling
//! CronJob, and the runs already reported per CronJob. Fed by the watches, read by syncs.
//! CronJobs are kept as JSON and Jobs as projections (see [`crate::objects::cached`]).

use std::collections::{HashMap, HashSet};

use cronshard_types::Timestamp;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::ObjectReference;

use crate::objects::cached::CachedCronJob;
use crate::objects::convert::{cronjob_state, key};
use cronshard_sync::{ChildJob, CronJobState};

/// One CronJob due for a sync, with everything the sync reads. The decoded object is not
/// among it: a herd has thousands of these at once (see [`crate::objects::cached`]).
pub(super) struct Due {
    pub(super) key: String,
    pub(super) cronjob: CachedCronJob,
    /// The CronJob, as its Events name it.
    pub(super) reference: ObjectReference,
    pub(super) state: CronJobState,
    pub(super) children: Vec<ChildJob>,
    /// Seconds after their scheduled times that this CronJob's runs start (`cronshard.io/spread`).
    pub(super) spread_offset: Option<u64>,
}

#[derive(Default)]
pub(super) struct Index {
    cronjobs: HashMap<String, CachedCronJob>,
    uid_to_key: HashMap<String, String>,
    jobs: HashMap<String, ChildJob>,
    /// CronJob uid -> uids of the Jobs it controls.
    owned: HashMap<String, HashSet<String>>,
    /// Per CronJob, the runs already reported as missed or skipped (see `sync`).
    reported: HashMap<String, Timestamp>,
}

impl Index {
    /// Adds or replaces a CronJob; returns its key.
    pub(super) fn apply_cronjob(&mut self, cached: CachedCronJob) -> String {
        let k = cached.key().to_owned();
        if let Some(uid) = cached.uid() {
            self.uid_to_key.insert(uid.to_owned(), k.clone());
        }
        self.cronjobs.insert(k.clone(), cached);
        k
    }

    /// Forgets a CronJob (deleted, or out of this bucket).
    pub(super) fn delete_cronjob(&mut self, k: &str) {
        if let Some(uid) = self.cronjobs.remove(k).as_ref().and_then(CachedCronJob::uid) {
            self.uid_to_key.remove(uid);
        }
        self.reported.remove(k);
    }

    /// Replaces every CronJob with a fresh list; returns their keys. What was reported for
    /// a CronJob that is still there is kept, so a relist never reports a miss twice.
    pub(super) fn reset_cronjobs(&mut self, fresh: impl IntoIterator<Item = CachedCronJob>) -> Vec<String> {
        self.cronjobs.clear();
        self.uid_to_key.clear();
        let keys: Vec<String> = fresh.into_iter().map(|cj| self.apply_cronjob(cj)).collect();
        self.reported.retain(|k, _| self.cronjobs.contains_key(k));
        keys
    }

    /// Adds or replaces a Job; returns the key of the CronJob that controls it, if cached.
    pub(super) fn apply_job(&mut self, job: ChildJob) -> Option<String> {
        let (uid, owner) = (job.uid.clone(), job.controller_uid.clone());
        self.jobs.insert(uid.clone(), job);
        let owner = owner?;
        self.owned.entry(owner.clone()).or_default().insert(uid);
        self.uid_to_key.get(&owner).cloned()
    }

    /// Whether a Job is cached.
    pub(super) fn has_job(&self, uid: &str) -> bool {
        self.jobs.contains_key(uid)
    }

    /// Forgets a Job; returns the key of the CronJob that controlled it, if cached.
    pub(super) fn delete_job(&mut self, job: &ChildJob) -> Option<String> {
        self.jobs.remove(&job.uid);
        let owner = job.controller_uid.as_ref()?;
        if let Some(set) = self.owned.get_mut(owner) {
            set.remove(&job.uid);
            if set.is_empty() {
                self.owned.remove(owner);
            }
        }
        self.uid_to_key.get(owner).cloned()
    }

    /// Replaces every Job with a fresh list.
    pub(super) fn reset_jobs(&mut self, fresh: impl IntoIterator<Item = ChildJob>) {
        self.jobs.clear();
        self.owned.clear();
        for job in fresh {
            self.apply_job(job);
        }
    }

    /// Takes a fresher copy than the watch has delivered (a status write's answer), unless
    /// the watch is ahead.
    pub(super) fn apply_fresh(&mut self, fresh: CronJob) {
        let version = fresh.metadata.resource_version.as_deref().and_then(|v| v.parse::<u64>().ok());
        let current = self.cronjobs.get(&key(&fresh.metadata)).and_then(CachedCronJob::resource_version);
        if current.is_none_or(|c| version.is_some_and(|f| f >= c)) {
            self.apply_cronjob(CachedCronJob::new(fresh));
        }
    }

    pub(super) fn set_reported(&mut self, k: &str, through: Timestamp) {
        if self.cronjobs.contains_key(k) {
            self.reported.insert(k.to_owned(), through);
        }
    }

    pub(super) fn cronjob(&self, k: &str) -> Option<&CachedCronJob> {
        self.cronjobs.get(k)
    }

    pub(super) fn cronjob_keys(&self) -> Vec<String> {
        self.cronjobs.keys().cloned().collect()
    }

    /// (CronJobs, Jobs) cached.
    pub(super) fn counts(&self) -> (usize, usize) {
        (self.cronjobs.len(), self.jobs.len())
    }

    /// What a sync of `k` reads, and the decoded object for what else the caller needs of
    /// it; `None` if it is gone or lacks name, uid or creation time.
    pub(super) fn due(&self, k: &str) -> Option<(Due, CronJob)> {
        let cached = self.cronjobs.get(k)?;
        let cronjob = match cached.decode() {
            Ok(cronjob) => cronjob,
            Err(e) => {
                // Only JSON this index wrote itself is decoded here.
                tracing::error!(cronjob = k, error = %e, "a cached CronJob does not decode; it is not synced");
                return None;
            }
        };
        let mut state = cronjob_state(&cronjob)?;
        state.reported_through = self.reported.get(k).copied();
        state.schedule_changed_at = cached.schedule_changed_at();
        let children = self
            .owned
            .get(&state.uid)
            .map(|uids| uids.iter().filter_map(|u| self.jobs.get(u)).cloned().collect())
            .unwrap_or_default();
        let reference = kube::Resource::object_ref(&cronjob, &());
        let due = Due { key: k.to_owned(), cronjob: cached.clone(), reference, state, children, spread_offset: None };
        Some((due, cronjob))
    }
}

/// Where a watch's initial list stands; items of a list in progress are buffered, so the
/// cache is replaced at once when it completes.
pub(super) enum Listing<T> {
    /// No list has begun.
    Unlisted,
    /// The first list is arriving.
    First(Vec<T>),
    /// A list has completed; the cache follows the watch.
    Listed,
    /// A list has completed before, and a new one (after a 410 or a restart) is arriving.
    Relisting(Vec<T>),
}

impl<T> Listing<T> {
    pub(super) fn begin(&mut self) {
        *self = if self.listed() { Listing::Relisting(Vec::new()) } else { Listing::First(Vec::new()) };
    }

    pub(super) fn add(&mut self, item: T) {
        if let Listing::First(buffer) | Listing::Relisting(buffer) = self {
            buffer.push(item);
        }
    }

    /// The completed list; from now on the cache is [`Listing::Listed`].
    pub(super) fn done(&mut self) -> Vec<T> {
        match std::mem::replace(self, Listing::Listed) {
            Listing::First(items) | Listing::Relisting(items) => items,
            Listing::Unlisted | Listing::Listed => Vec::new(),
        }
    }

    /// Whether the cache holds a complete list (perhaps while a newer one arrives).
    pub(super) fn listed(&self) -> bool {
        matches!(self, Listing::Listed | Listing::Relisting(_))
    }
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
