//! [`Jobs`] over the Kubernetes API, through the replica's rate limiter.

use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DeleteParams, PostParams};

use cronshard_types::spread::SPREAD_OFFSET_ANNOTATION;

use crate::api::limiter::Priority;
use crate::api::request::sent_within;
use crate::context::Context;
use crate::objects::cached::CachedCronJob;
use crate::objects::convert::{build_job, child_job};
use cronshard_sync::{ChildJob, CreateResult, CronJobState, JobRequest, Jobs};

/// The Jobs of one CronJob's namespace, for one sync.
#[derive(Debug)]
pub struct KubeJobs<'a> {
    ctx: &'a Context,
    api: Api<Job>,
    cronjob: &'a CachedCronJob,
    bucket: u32,
    epoch: i32,
    /// The spread offset of the runs, recorded on each Job.
    spread_offset: Option<u64>,
}

impl<'a> KubeJobs<'a> {
    /// For one sync of `cronjob` (as `state` reads it), in `bucket` claimed at `epoch`, whose
    /// runs start `spread_offset` seconds after their scheduled times.
    pub fn new(
        ctx: &'a Context,
        cronjob: &'a CachedCronJob,
        state: &CronJobState,
        bucket: u32,
        epoch: i32,
        spread_offset: Option<u64>,
    ) -> Self {
        let api = Api::namespaced(ctx.client.clone(), &state.namespace);
        KubeJobs { ctx, api, cronjob, bucket, epoch, spread_offset }
    }
}

impl Jobs for KubeJobs<'_> {
    type Error = kube::Error;

    async fn get(&mut self, name: &str) -> Result<Option<ChildJob>, kube::Error> {
        let _place = self.ctx.limiter.acquire(Priority::Create).await;
        Ok(sent_within(self.api.get_opt(name)).await?.as_ref().map(child_job))
    }

    /// A sync deletes only the active Job a Replace run replaces: part of the due run, so
    /// as urgent as its create (history cleanup is the bucket's, in the background).
    async fn delete(&mut self, name: &str) -> Result<(), kube::Error> {
        let _place = self.ctx.limiter.acquire(Priority::Create).await;
        match sent_within(self.api.delete(name, &DeleteParams::background())).await {
            // Already gone is what we wanted.
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn create(&mut self, request: &JobRequest) -> Result<CreateResult, kube::Error> {
        let _place = self.ctx.limiter.acquire(Priority::Create).await;
        // Decoded only now: the template is read per run, not held per CronJob.
        let cronjob = self.cronjob.decode().map_err(kube::Error::SerdeError)?;
        let created_by = format!("{}/{}/{}", self.ctx.settings.identity, self.bucket, self.epoch);
        let mut job = build_job(&cronjob, request, self.bucket, &created_by);
        if let Some(offset) = self.spread_offset {
            let annotations = job.metadata.annotations.get_or_insert_default();
            annotations.insert(SPREAD_OFFSET_ANNOTATION.to_owned(), format!("{offset}s"));
        }
        match sent_within(self.api.create(&PostParams::default(), &job)).await {
            Ok(job) => Ok(CreateResult::Created(child_job(&job))),
            Err(kube::Error::Api(status)) if status.code == 409 && status.reason == "AlreadyExists" => {
                Ok(CreateResult::AlreadyExists)
            }
            // Refused for good: invalid (a name over 63 characters), forbidden, bad request.
            Err(kube::Error::Api(status)) if matches!(status.code, 400 | 403 | 422) => {
                Ok(CreateResult::Rejected(status.message.clone()))
            }
            Err(e) => Err(e),
        }
    }
}
