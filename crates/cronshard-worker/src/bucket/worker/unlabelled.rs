//! Unlabellable CronJobs of this bucket (see [`crate::watches::leftovers`]): read one by one, never
//! written to, and synced like the labelled ones.

use std::time::Duration;

use tokio::time::Instant;

use k8s_openapi::api::batch::v1::CronJob;
use kube::api::Api;

use super::Worker;
use crate::api::limiter::Priority;
use crate::bucket::calls::report_undecodable;
use crate::objects::decoded::Decoded;

/// How soon a failed read of a leftover is tried again.
const RETRY: Duration = Duration::from_secs(10);

impl Worker {
    /// Brings the cache's leftovers in line with the replica's list: reads new and changed
    /// ones, forgets those that were labelled after all or deleted.
    pub(super) async fn merge_leftovers(&mut self) {
        self.leftovers_due = None;
        let wanted = self.ctx.leftovers.of_bucket(self.bucket);
        let gone: Vec<String> = self.leftovers.keys().filter(|k| !wanted.contains_key(*k)).cloned().collect();
        for k in gone {
            self.leftovers.remove(&k);
            // Labelled since: the bucket's own watch has it now.
            if self.index.cronjob(&k).and_then(|cj| cj.decode().ok()).is_some_and(|cj| !labelled(&cj)) {
                self.forget_cronjob(&k);
            }
        }
        for (k, rv) in wanted {
            if self.leftovers.get(&k) == Some(&rv) {
                continue;
            }
            let Some((namespace, name)) = k.split_once('/') else { continue };
            let place = self.ctx.limiter.acquire(Priority::Background).await;
            let api = Api::<Decoded<CronJob>>::namespaced(self.ctx.client.clone(), namespace);
            let read = crate::api::request::sent_within(api.get_opt(name)).await;
            drop(place);
            match read {
                Ok(Some(Decoded::Ok(cj))) => {
                    self.leftovers.insert(k, rv);
                    if !labelled(&cj) {
                        self.insert_cronjob(cj);
                    }
                }
                Ok(Some(Decoded::Undecodable { metadata, error })) => {
                    self.leftovers.insert(k, rv);
                    let bad = crate::objects::decoded::Undecodable { metadata: *metadata, error };
                    report_undecodable(&self.ctx, "CronJob", bad);
                }
                Ok(None) => {}
                Err(e) => {
                    self.ctx.log_warn("leftovers", &format!("cannot read unlabelled CronJob {k}: {e}"));
                    self.leftovers_due = Some(Instant::now() + RETRY);
                }
            }
        }
        self.count();
    }
}

fn labelled(cj: &CronJob) -> bool {
    cj.metadata.labels.as_ref().is_some_and(|l| l.contains_key(cronshard_types::keys::BUCKET_LABEL))
}
