//! [`Jobs`] over the Kubernetes API, through the replica's rate limiter.

use std::collections::HashSet;

use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::api::{Api, DeleteParams, PostParams};

use crate::context::Context;
use crate::convert::{build_job, child_job};
use crate::limiter::Priority;
use crate::sync::{ChildJob, CreateResult, JobRequest, Jobs};

/// The Jobs of one CronJob's namespace, for one sync.
pub(crate) struct KubeJobs<'a> {
    pub(crate) ctx: &'a Context,
    pub(crate) api: Api<Job>,
    pub(crate) cronjob: &'a CronJob,
    pub(crate) bucket: u32,
    /// Names in status.active: deleting one of those is part of a Replace run (urgent),
    /// deleting anything else is history cleanup (background).
    pub(crate) active: HashSet<String>,
}

fn code(err: &kube::Error) -> u16 {
    match err {
        kube::Error::Api(status) => status.code,
        _ => 0,
    }
}

impl Jobs for KubeJobs<'_> {
    type Error = kube::Error;

    async fn get(&mut self, name: &str) -> Result<Option<ChildJob>, kube::Error> {
        self.ctx.limiter.acquire(Priority::Create).await;
        let result = self.api.get_opt(name).await;
        self.ctx.metrics.request("get", if result.is_ok() { 200 } else { result.as_ref().err().map_or(0, code) });
        Ok(result?.as_ref().map(child_job))
    }

    async fn delete(&mut self, name: &str) -> Result<(), kube::Error> {
        let priority = if self.active.contains(name) { Priority::Create } else { Priority::Background };
        self.ctx.limiter.acquire(priority).await;
        let result = self.api.delete(name, &DeleteParams::background()).await;
        match result {
            Ok(_) => {
                self.ctx.metrics.request("delete", 200);
                Ok(())
            }
            // Already gone is what we wanted.
            Err(kube::Error::Api(status)) if status.code == 404 => {
                self.ctx.metrics.request("delete", 404);
                Ok(())
            }
            Err(e) => {
                self.ctx.metrics.request("delete", code(&e));
                Err(e)
            }
        }
    }

    async fn create(&mut self, request: &JobRequest) -> Result<CreateResult, kube::Error> {
        self.ctx.limiter.acquire(Priority::Create).await;
        let created_by = format!("{}/{}/{}", self.ctx.settings.identity, self.bucket, 0);
        let job = build_job(self.cronjob, request, self.bucket, &created_by);
        match self.api.create(&PostParams::default(), &job).await {
            Ok(job) => {
                self.ctx.metrics.request("create", 201);
                Ok(CreateResult::Created(child_job(&job)))
            }
            Err(kube::Error::Api(status)) if status.code == 409 && status.reason == "AlreadyExists" => {
                self.ctx.metrics.request("create", 409);
                Ok(CreateResult::AlreadyExists)
            }
            // Refused for good: invalid (a name over 63 characters), forbidden, bad request.
            Err(kube::Error::Api(status)) if matches!(status.code, 400 | 403 | 422) => {
                self.ctx.metrics.request("create", status.code);
                Ok(CreateResult::Rejected(status.message.clone()))
            }
            Err(e) => {
                self.ctx.metrics.request("create", code(&e));
                Err(e)
            }
        }
    }
}
