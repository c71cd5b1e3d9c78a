//! The replica following the coordinator's ownership: the owned set fed to the labellers,
//! and the replica's share of the client budget given to the limiter (which adapts the rate
//! to the server's answers itself: `keep_adapting`).

use std::collections::BTreeSet;
use std::sync::Arc;

use cronshard_coordinator::Ownership;
use cronshard_worker::Context;
use tokio::sync::watch;

/// The share of the buckets that `ownership` gives this replica, of `buckets`.
fn share(ownership: &Ownership, buckets: u32) -> f64 {
    ownership.desired.len().max(ownership.owned.len()) as f64 / f64::from(buckets.max(1))
}

/// Follows the coordinator's ownership until it ends: the owned set goes to the labellers
/// (only when it changes), and the limiter gets this replica's share of the budget.
pub(crate) async fn follow_ownership(
    mut ownership: watch::Receiver<Ownership>,
    owned: watch::Sender<BTreeSet<u32>>,
    ctx: Arc<Context>,
    buckets: u32,
) {
    while ownership.changed().await.is_ok() {
        let (now_owned, share) = {
            let o = ownership.borrow_and_update();
            (o.owned.clone(), share(&o, buckets))
        };
        owned.send_if_modified(|current| std::mem::replace(current, now_owned.clone()) != now_owned);
        ctx.limiter.set_share(share);
        ctx.metrics.client_rate.set(ctx.limiter.qps());
    }
}
