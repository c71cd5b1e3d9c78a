//! Bucket Leases: claiming with a resourceVersion precondition, two-phase release, and the
//! graceful exit.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{DeleteParams, PostParams};
use tokio::time::Instant;

use super::Coordinator;
use crate::coordinator::decide::Held;
use crate::coordinator::work::Buckets;
use crate::lease::{LeaseInfo, bucket_lease, bucket_name, claim, member_name};

/// Claims sent at once. A takeover of a dead peer's share, or a start-up, then costs about
/// one round trip instead of one per bucket (under load, one after another took seconds on
/// top of the lease duration); batches keep a step short enough to renew between them.
const CLAIMS_AT_ONCE: usize = 16;
/// Longest a graceful shutdown waits for buckets to stop and be released.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(25);

impl<B: Buckets> Coordinator<B> {
    /// Claims `buckets` with resourceVersion preconditions (a create where there is no
    /// Lease), [`CLAIMS_AT_ONCE`] at a time, renewing between batches when due. Returns
    /// false when the renew deadline passed on the way: the view is stale, nothing more is
    /// claimed, and the next step fences.
    pub(super) async fn claim_all(&mut self, buckets: &[u32]) -> bool {
        for batch in buckets.chunks(CLAIMS_AT_ONCE) {
            // Many claims (start-up, a takeover under load) must not starve renewals.
            if self.state.renew_due(Instant::now()) {
                self.renew().await;
            }
            if self.state.lapsed(Instant::now()) {
                return false;
            }
            let seen: Vec<(u32, Option<LeaseInfo>)> = batch.iter().map(|&b| (b, self.state.claiming(b))).collect();
            let (api, identity, count) = (&self.api, self.settings.identity.as_str(), self.settings.buckets.get());
            let (duration_s, wait, now) = (self.lease_duration_s(), self.settings.timing.renew_period, self.wall_now());
            let calls = seen.iter().map(|(b, current)| async move {
                let claimed = claim(api, *b, identity, count, duration_s, current.as_ref(), now);
                (*b, tokio::time::timeout(wait, claimed).await)
            });
            for (b, answer) in futures::future::join_all(calls).await {
                self.claim_answered(b, answer);
            }
        }
        true
    }

    fn claim_answered(&mut self, b: u32, answer: Result<kube::Result<Lease>, tokio::time::error::Elapsed>) {
        match answer {
            Ok(Ok(fresh)) => {
                let resource_version = fresh.metadata.resource_version.clone().unwrap_or_default();
                let transitions = fresh.spec.as_ref().and_then(|s| s.lease_transitions).unwrap_or(0);
                tracing::info!(bucket = b, epoch = transitions, "claimed bucket");
                let held = Held { resource_version, transitions };
                self.state.claimed(b, held, LeaseInfo::from_lease(&fresh), Instant::now());
                self.metrics.lease_transitions.inc();
                self.buckets.start(b, transitions);
            }
            // Someone else got there first (409), or our copy was stale: the watch will tell.
            Ok(Err(kube::Error::Api(status))) if status.code == 409 => {
                tracing::debug!(bucket = b, "lost a claim race");
            }
            Ok(Err(e)) => self.log_warn("claim", &format!("claim of bucket {b} failed: {e}")),
            Err(_) => self.log_warn("claim", &format!("claim of bucket {b} timed out")),
        }
    }

    /// Two-phase handover: stop the bucket's work (in-flight calls finish), then release
    /// the Lease; only then can the new owner claim it. Runs in the background so renewals
    /// go on.
    pub(super) fn release(&mut self, b: u32) {
        let Some(held) = self.state.releasing(b) else { return };
        let stopped = self.buckets.stop(b);
        let api = self.api.clone();
        let lease = bucket_lease(
            b,
            "",
            self.settings.buckets.get(),
            self.lease_duration_s(),
            held.transitions,
            Some(held.resource_version),
            self.wall_now(),
        );
        self.handovers.spawn(async move {
            let started = Instant::now();
            stopped.await;
            match tokio::time::timeout(
                Duration::from_secs(5),
                api.replace(&bucket_name(b), &PostParams::default(), &lease),
            )
            .await
            {
                Ok(Ok(_)) => tracing::info!(bucket = b, "released bucket"),
                // 409: the Lease moved on without us (we were judged dead): nothing to release.
                Ok(Err(e)) => tracing::warn!(bucket = b, error = %e, "release failed"),
                Err(_) => tracing::warn!(bucket = b, "release timed out"),
            }
            (b, started.elapsed())
        });
    }

    pub(super) fn handover_done(&mut self, done: Result<(u32, Duration), tokio::task::JoinError>) {
        if let Ok((b, took)) = done {
            self.state.released(b);
            self.metrics.handover_seconds.observe(took.as_secs_f64());
        }
    }

    /// Graceful exit: release every bucket (stopping its work first), then leave.
    pub(super) async fn shutdown(&mut self) {
        let held = self.state.owned();
        tracing::info!(buckets = held.len(), "releasing every bucket before exit");
        for b in held {
            self.release(b);
        }
        let drain = async {
            while let Some(done) = self.handovers.join_next().await {
                self.handover_done(done);
            }
        };
        if tokio::time::timeout(SHUTDOWN_WAIT, drain).await.is_err() {
            // The member Lease stays: deleted, it would let peers take the buckets at once,
            // while writes of the aborted work may still wait in the server's queue until
            // the fence deadline. Left to expire, it holds them off for a lease duration.
            tracing::warn!("buckets did not stop in time; their Leases expire with the member Lease");
            self.buckets.abort_all();
            return;
        }
        if self.state.is_duplicate() {
            // The member Lease is the other process's now.
            return;
        }
        let name = member_name(&self.settings.identity);
        match tokio::time::timeout(Duration::from_secs(2), self.api.delete(&name, &DeleteParams::default())).await {
            Ok(Ok(_)) => tracing::info!("left the member set"),
            Ok(Err(e)) => tracing::warn!(error = %e, "could not delete the member Lease; it will expire"),
            Err(_) => tracing::warn!("deleting the member Lease timed out; it will expire"),
        }
    }
}
