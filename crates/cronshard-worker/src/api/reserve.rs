//! Reservations: the syncs each bucket has due at its next instant, so that the limiter holds
//! lower-priority work back just before a herd and its creates find the budget there.
//!
//! Why: the limiter serves due creates first among the callers waiting in it, but not among
//! the requests already out. A replica working through a backlog of status writes and Events
//! keeps all its places taken, and at a server that admits 200 writes/s those 64 requests
//! hold the first create of a herd back by a third of a second; the whole deployment's by
//! twice that. Holding the backlog back for as long as the requests out take to be answered
//! lets the boundary find the places free and the token bucket full, at the price of that
//! long a pause of background work per herd. Only a herd earns it: runs spread over the
//! minute never add up to one, so background work is never starved by them.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

/// Syncs due within the lead that make a herd worth a pause of lower-priority work: a third
/// of the places a replica with every bucket has out (`MAX_IN_FLIGHT`; fewer creates than
/// that gain less than the pause costs).
pub const HERD_SYNCS: usize = 32;
/// How far ahead a bucket looks for its largest herd: the longest lead, and the bucket's
/// longest sleep between two looks.
pub const HORIZON: Duration = Duration::from_secs(4);
/// How long after the due instant the pause lasts: the time a bucket takes from its timer to
/// the creates of the syncs it starts (the herd's creates go first anyway once they wait).
pub const GRACE: Duration = Duration::from_millis(250);

/// Each bucket's largest herd ahead: its instant, and how many syncs are due then.
#[derive(Debug, Default)]
pub struct Reservations {
    by_bucket: HashMap<u32, (Instant, usize)>,
}

impl Reservations {
    /// `bucket`'s next due instant and its syncs then; `None` clears it (the bucket stopped or
    /// has nothing due).
    pub fn set(&mut self, bucket: u32, next: Option<(Instant, usize)>) {
        match next {
            Some(next) => self.by_bucket.insert(bucket, next),
            None => self.by_bucket.remove(&bucket),
        };
    }

    /// Until when lower-priority work waits at `now`: while the syncs due after `now - GRACE`
    /// and up to `now + lead` add up to a herd, until [`GRACE`] after the last of them (always
    /// later than `now`).
    pub fn hold_until(&self, now: Instant, lead: Duration) -> Option<Instant> {
        let start = now.checked_sub(GRACE).unwrap_or(now);
        let soon = self.by_bucket.values().filter(|(at, _)| *at > start && *at <= now + lead);
        let (syncs, last) = soon
            .fold((0, None::<Instant>), |(n, last), (at, count)| (n + count, Some(last.map_or(*at, |l| l.max(*at)))));
        if syncs < HERD_SYNCS {
            return None;
        }
        last.map(|at| at + GRACE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEAD: Duration = Duration::from_millis(600);

    #[tokio::test(start_paused = true)]
    async fn a_herd_across_buckets_holds_from_its_lead_to_its_grace() {
        let herd = Instant::now() + Duration::from_secs(10);
        let mut r = Reservations::default();
        for bucket in 0..4 {
            r.set(bucket, Some((herd, HERD_SYNCS / 4)));
        }
        let before_lead = herd - LEAD - Duration::from_millis(1);
        assert_eq!(r.hold_until(before_lead, LEAD), None, "too early");
        assert_eq!(r.hold_until(herd - LEAD, LEAD), Some(herd + GRACE));
        let last_moment = herd + GRACE - Duration::from_millis(1);
        assert_eq!(r.hold_until(last_moment, LEAD), Some(herd + GRACE));
        assert_eq!(r.hold_until(herd + GRACE, LEAD), None, "over");
    }

    #[tokio::test(start_paused = true)]
    async fn runs_spread_over_the_minute_never_hold() {
        let start = Instant::now();
        let mut r = Reservations::default();
        // 1,000 runs spread over 60 s across 64 buckets: each bucket's next instant differs.
        for bucket in 0..64_u32 {
            let at = start + Duration::from_millis(u64::from(bucket) * 937);
            r.set(bucket, Some((at, 1)));
        }
        for ms in (0..60_000).step_by(100) {
            assert_eq!(r.hold_until(start + Duration::from_millis(ms), LEAD), None, "at {ms} ms");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_cleared_bucket_no_longer_counts() {
        let herd = Instant::now() + Duration::from_secs(1);
        let mut r = Reservations::default();
        r.set(0, Some((herd, HERD_SYNCS)));
        assert!(r.hold_until(herd, LEAD).is_some());
        r.set(0, None);
        assert_eq!(r.hold_until(herd, LEAD), None);
    }
}
