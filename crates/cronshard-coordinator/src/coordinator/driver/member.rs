//! This replica's own Leases: renewing the member Lease, noticing another process with the
//! same identity, and the bucket count of record.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::PostParams;
use tokio::time::Instant;

use super::{Coordinator, MemberLease};
use crate::coordinator::work::Buckets;
use crate::error::Error;
use crate::lease::{CONFIG_NAME, LeaseInfo, Role, config_lease, member_lease, member_name};

/// A 404 whose subject is the namespace itself (not the object).
fn namespace_missing(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(s) if s.code == 404 && s.details.as_ref().is_some_and(|d| d.kind == "namespaces"))
}

/// Someone else wrote the member Lease (409), or it was deleted (404 on the Lease itself).
fn conflict_or_gone(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(s) if s.code == 409 || s.code == 404) && !namespace_missing(error)
}

impl<B: Buckets> Coordinator<B> {
    /// Makes sure the bucket count of record exists before anything else: creates it with
    /// this replica's count if there is none (the first replica of a deployment), reads it
    /// otherwise. A missing namespace is an error at once; other failures are retried.
    pub(super) async fn record_bucket_count(
        &mut self,
        stop: &mut tokio::sync::watch::Receiver<bool>,
    ) -> crate::error::Result<()> {
        let mut wait = Duration::from_millis(200);
        loop {
            match self.write_record().await {
                Ok(()) => return Ok(()),
                Err(source) if namespace_missing(&source) => {
                    return Err(Error::NamespaceMissing { namespace: self.settings.namespace.clone(), source });
                }
                Err(e) => self.log_warn("record", &format!("cannot read or create Lease {CONFIG_NAME}: {e}")),
            }
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                _ = stop.changed() => return Ok(()),
            }
            wait = (wait * 2).min(self.settings.timing.renew_period);
        }
    }

    /// Creates the config Lease with this replica's count (409: someone has; read theirs).
    async fn write_record(&mut self) -> kube::Result<()> {
        let record = match self.api.create(&PostParams::default(), &config_lease(self.settings.layout())).await {
            Ok(created) => {
                let (buckets, function) = (self.settings.buckets.get(), self.settings.bucket_function.as_str());
                tracing::info!(buckets, function, "recorded the deployment's bucket count and function");
                created
            }
            Err(kube::Error::Api(s)) if s.code == 409 => self.api.get(CONFIG_NAME).await?,
            Err(e) => return Err(e),
        };
        if let Some(info) = LeaseInfo::from_lease(&record) {
            self.state.observed(info, Instant::now());
        }
        Ok(())
    }

    /// The config Lease was deleted under a running deployment: put the remembered record
    /// back (only a replica that agrees with it gets here), at most once per renew period.
    pub(super) async fn restore_record(&mut self) {
        if let Err(e) = self.write_record().await {
            self.log_warn("record", &format!("cannot restore Lease {CONFIG_NAME}: {e}"));
        }
    }

    /// A member Lease of this identity written by another process after this one wrote it:
    /// two replicas run with one identity, and both would work every bucket it holds.
    pub(super) fn check_identity(&mut self, info: &LeaseInfo) {
        let ours = matches!(&info.role, Role::Member(id) if *id == self.settings.identity);
        let newer = |rv: &str| {
            let number = |v: &str| v.parse::<u64>().ok();
            number(rv).zip(self.member.resource_version().and_then(number)).is_some_and(|(seen, wrote)| seen > wrote)
        };
        if ours
            && matches!(self.member, MemberLease::Written { .. })
            && info.incarnation.as_deref().is_some_and(|other| other != self.incarnation)
            && newer(&info.resource_version)
        {
            self.duplicate(info.incarnation.as_deref().unwrap_or_default());
        }
    }

    fn duplicate(&mut self, other: &str) {
        let reason = format!(
            "another process (incarnation {other}) writes the member Lease of identity {:?} (this process is {}): two \
             replicas run with the same identity; refusing to act. Give each replica its own --identity (default: \
             $POD_NAME, else the hostname with a random suffix)",
            self.settings.identity, self.incarnation
        );
        tracing::error!("{reason}");
        if self.state.duplicate().is_some() {
            self.fence();
        }
        self.refusal = Some(reason);
        self.metrics.refused.set(1);
    }

    /// Renews (or first creates) the member Lease.
    pub(super) async fn renew(&mut self) {
        let timing = self.settings.timing;
        let sent = Instant::now();
        let acquired = match &self.member {
            MemberLease::Written { acquired, .. } => acquired.clone(),
            MemberLease::Unwritten { .. } => None,
        };
        let resource_version = self.member.resource_version().map(str::to_owned);
        let lease = member_lease(
            &self.settings.identity,
            &self.incarnation,
            self.settings.layout(),
            self.lease_duration_s(),
            acquired,
            resource_version.clone(),
            self.wall_now(),
        );
        let name = member_name(&self.settings.identity);
        let call = async {
            match resource_version {
                None => self.api.create(&PostParams::default(), &lease).await,
                Some(_) => self.api.replace(&name, &PostParams::default(), &lease).await,
            }
        };
        // Bounded, so a hung call cannot hold the loop; but a slow server (a herd queueing in
        // flow control) gets until the renew deadline before the next attempt.
        let left = self.state.renew_window(Instant::now());
        match tokio::time::timeout(left.max(timing.renew_period), call).await {
            Ok(Ok(fresh)) => self.member_renewed(sent, &fresh),
            Ok(Err(e)) if conflict_or_gone(&e) => self.reread_member(&name).await,
            Ok(Err(e)) => {
                let hint = if namespace_missing(&e) { " (the namespace is gone)" } else { "" };
                self.log_warn("renew", &format!("member Lease renewal failed{hint}: {e}"));
                self.state.renew_failed(Instant::now());
            }
            Err(_) => self.log_warn("renew", "member Lease renewal timed out"),
        }
    }

    fn member_renewed(&mut self, sent: Instant, fresh: &Lease) {
        self.member = MemberLease::Written {
            resource_version: fresh.metadata.resource_version.clone(),
            acquired: fresh.spec.as_ref().and_then(|s| s.acquire_time.clone()),
        };
        if !self.state.healthy() {
            tracing::info!(identity = %self.settings.identity, "member Lease renewed; (re)joining");
        }
        self.state.renewed(sent, Instant::now(), LeaseInfo::from_lease(fresh));
        self.buckets.writes_until(sent + self.settings.timing.renew_deadline);
    }

    /// Someone else wrote this identity's member Lease, or deleted it: a previous incarnation
    /// (a restart) is taken over as a new one; after this process has written it, another
    /// live process is a duplicate.
    async fn reread_member(&mut self, name: &str) {
        match self.api.get_opt(name).await {
            Ok(Some(current)) => {
                let info = LeaseInfo::from_lease(&current);
                let other = info.as_ref().and_then(|i| i.incarnation.clone()).unwrap_or_default();
                let written = matches!(self.member, MemberLease::Written { .. });
                if written && other != self.incarnation {
                    self.duplicate(&other);
                    return;
                }
                let resource_version = current.metadata.resource_version.clone();
                // A new incarnation: a new acquireTime.
                self.member = match written {
                    true => MemberLease::Written { resource_version, acquired: None },
                    false => MemberLease::Unwritten { resource_version },
                };
            }
            Ok(None) => match &mut self.member {
                MemberLease::Unwritten { resource_version } | MemberLease::Written { resource_version, .. } => {
                    *resource_version = None;
                }
            },
            Err(e) => self.log_warn("renew", &format!("cannot read the member Lease: {e}")),
        }
    }
}
