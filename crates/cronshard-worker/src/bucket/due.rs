//! A bucket's due syncs, several at once, while its watches keep being read: a herd's syncs
//! can take a minute, and a sync that starts late should see the Jobs created meanwhile
//! rather than ask the server for them.

use std::collections::VecDeque;
use std::time::Duration;

use futures::stream::{BoxStream, Fuse, FuturesUnordered};
use futures::{Future, StreamExt};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::runtime::watcher;

use super::calls::sync_due;
use super::index::Due;
use super::{PARALLEL_SYNCS, Worker};
use crate::decoded::Decoded;
use crate::sync::Outcome;

/// Longest a stopping bucket waits for the syncs it has in flight (a handover must not wait
/// for a create that is still queued for the budget). Dropping one cancels its request: the
/// connection closes, and the API server (Go's `net/http`, as the simulator) cancels a
/// request whose client went away. One whose create landed anyway is found by the next
/// owner, whose create gets AlreadyExists and adopts the Job.
const STOP_WAIT: Duration = Duration::from_secs(15);

type Watch<K> = Fuse<BoxStream<'static, Result<watcher::Event<Decoded<K>>, watcher::Error>>>;

/// What a bucket listens to: its two watches and the signal to stop.
pub(super) struct Streams {
    pub(super) cronjobs: Watch<CronJob>,
    pub(super) jobs: Watch<Job>,
    pub(super) stop: tokio::sync::watch::Receiver<bool>,
}

impl Worker {
    /// Syncs every CronJob that is due, [`PARALLEL_SYNCS`] at once, each from what the cache
    /// holds when its sync starts. Watch events are applied meanwhile (a CronJob they touch
    /// syncs again in the next round, never twice at once). Once told to stop, no further
    /// sync starts; those in flight get [`STOP_WAIT`] to finish. Status writes and history cleanup start when the
    /// round is done, so that while a herd is created they do not take the gaps between its
    /// creates at the server.
    pub(super) async fn run_due(&mut self, streams: &mut Streams) {
        let now = self.ctx.clock.now();
        let mut keys: VecDeque<String> = self.timers.pop_due(now).into();
        let mut syncing = FuturesUnordered::new();
        // A dropped sender can no longer say stop: the bucket is being torn down anyway.
        let mut stop_closed = false;
        let mut give_up_at = None;
        loop {
            let stopping = stop_closed || *streams.stop.borrow();
            if stopping && give_up_at.is_none() {
                give_up_at = Some(tokio::time::Instant::now() + STOP_WAIT);
            }
            while syncing.len() < PARALLEL_SYNCS && !stopping {
                let Some(k) = keys.pop_front() else { break };
                if let Some(due) = self.due(&k) {
                    syncing.push(self.sync_task(due));
                }
            }
            if syncing.is_empty() {
                break;
            }
            tokio::select! {
                Some((due, outcome)) = syncing.next() => self.finish(due, outcome),
                Some(event) = streams.cronjobs.next() => self.on_watch_event("CronJob", event, Worker::on_cronjob),
                Some(event) = streams.jobs.next() => self.on_watch_event("Job", event, Worker::on_job),
                changed = streams.stop.changed(), if !stop_closed => stop_closed = changed.is_err(),
                () = tokio::time::sleep_until(give_up_at.unwrap_or_else(tokio::time::Instant::now)), if give_up_at.is_some() => break,
            }
        }
        // Not started because the bucket stops: its next owner syncs them.
        for k in keys {
            self.timers.schedule(&k, now);
        }
        self.start_writes();
        // A stopping bucket deletes no more history: the next owner's syncs name the Jobs.
        if !(stop_closed || *streams.stop.borrow()) {
            self.history.start(&self.ctx);
        }
        self.ctx.metrics.queue_depth.set(self.timers.len() as i64);
    }

    fn sync_task(&self, due: Due) -> impl Future<Output = (Due, Outcome)> + use<> {
        let (ctx, bucket, epoch) = (self.ctx.clone(), self.bucket, self.epoch);
        async move {
            let outcome = sync_due(&ctx, bucket, epoch, &due).await;
            (due, outcome)
        }
    }
}
