//! The bucket workers a replica runs, started and stopped as ownership moves.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use crate::context::Context;

/// The bucket workers a replica runs now, started and stopped as ownership moves.
#[derive(Debug)]
pub struct BucketSet {
    ctx: Arc<Context>,
    ready: Arc<AtomicUsize>,
    running: HashMap<u32, (tokio::sync::watch::Sender<bool>, tokio::task::JoinHandle<()>)>,
}

impl BucketSet {
    /// `ready` counts running buckets whose initial lists are in.
    pub fn new(ctx: Arc<Context>, ready: Arc<AtomicUsize>) -> Self {
        BucketSet { ctx, ready, running: HashMap::new() }
    }

    fn count(&self) {
        self.ctx.metrics.buckets_owned.set(self.running.len() as i64);
    }

    /// Starts `bucket`'s worker; `epoch` goes into every Job's audit annotation.
    pub fn start(&mut self, bucket: u32, epoch: i32) {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(super::worker::run(self.ctx.clone(), bucket, epoch, stopped, self.ready.clone()));
        if let Some((old_stop, old)) = self.running.insert(bucket, (stop, task)) {
            let _ = old_stop.send(true);
            old.abort();
        }
        self.count();
    }

    /// Stops `bucket`'s worker; resolves when its in-flight syncs have finished.
    pub fn stop(&mut self, bucket: u32) -> impl Future<Output = ()> + Send + 'static {
        let running = self.running.remove(&bucket);
        self.count();
        async move {
            if let Some((stop, task)) = running {
                let _ = stop.send(true);
                let _ = task.await;
            }
        }
    }

    /// Stops every worker now, in-flight calls abandoned (fencing).
    pub fn abort_all(&mut self) {
        for (_, (stop, task)) in self.running.drain() {
            let _ = stop.send(true);
            task.abort();
        }
        self.count();
    }
}
