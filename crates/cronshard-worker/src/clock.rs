//! The controller's one clock: every timestamp it writes, and every timer it sets, read here.
//!
//! Time is tokio's: the wall clock moved by however far tokio's clock is from the real one.
//! On a running replica the two agree and `now` is the host's wall clock (NTP steps
//! included); under tokio's paused time (tests) `now` advances with the paused clock, so a
//! test can run a controller through minutes without waiting for them. With the
//! `testing-clock` feature (never in the shipped binary) the clock can also follow a
//! simulator's offset, so that every process of a test shares the simulator's time.

use std::time::Duration;

use cronshard_types::Timestamp;
use jiff::SignedDuration;

/// How long a bucket sleeps at most before it looks at its timers again: a step of the
/// host's clock is noticed within this time.
#[cfg(not(feature = "testing-clock"))]
const MAX_SLEEP: Duration = Duration::from_secs(60);
/// With a testing clock, an offset that moves is noticed within a second too.
#[cfg(feature = "testing-clock")]
const MAX_SLEEP: Duration = Duration::from_secs(1);

/// The controller's notion of now. Cheap to clone; clones share a testing offset.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    #[cfg(feature = "testing-clock")]
    offset: testing::Offset,
}

impl Clock {
    /// Now, on tokio's clock.
    pub fn now(&self) -> Timestamp {
        let now = Timestamp::now();
        let now = now.checked_add(tokio_lead()).unwrap_or(now);
        #[cfg(feature = "testing-clock")]
        let now = self.offset.apply(now);
        now
    }

    /// How long until `at` on this clock (zero if past).
    pub fn until(&self, at: Timestamp) -> Duration {
        Duration::try_from(at.duration_since(self.now())).unwrap_or_default()
    }

    /// The longest a timer may sleep before it looks at this clock again.
    pub fn max_sleep(&self) -> Duration {
        MAX_SLEEP
    }

    /// Resolves when the clock jumps (timers must be recomputed): only a testing clock does.
    pub async fn changed(&self) {
        #[cfg(feature = "testing-clock")]
        self.offset.changed().await;
        #[cfg(not(feature = "testing-clock"))]
        std::future::pending::<()>().await;
    }
}

/// How far tokio's clock is ahead of the real one: zero on a running replica, the time
/// skipped under paused time.
fn tokio_lead() -> SignedDuration {
    let real = std::time::Instant::now();
    let virtual_now = tokio::time::Instant::now().into_std();
    match virtual_now.checked_duration_since(real) {
        Some(ahead) => SignedDuration::try_from(ahead).unwrap_or(SignedDuration::ZERO),
        None => -SignedDuration::try_from(real - virtual_now).unwrap_or(SignedDuration::ZERO),
    }
}

#[cfg(feature = "testing-clock")]
mod testing;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn now_advances_with_tokios_paused_clock() {
        let clock = Clock::default();
        let before = clock.now();
        tokio::time::sleep(Duration::from_secs(3600)).await;
        // The wall clock and the monotonic clock are read one after the other, so `now`
        // carries a few nanoseconds of jitter between the two reads.
        let moved = clock.now().duration_since(before);
        let off = (moved - SignedDuration::from_secs(3600)).abs();
        assert!(off < SignedDuration::from_millis(1), "{moved:?}");
        assert_eq!(clock.until(before), Duration::ZERO);
    }

    #[tokio::test]
    async fn on_a_running_runtime_now_is_the_wall_clock() {
        let lag = Timestamp::now().duration_since(Clock::default().now()).abs();
        assert!(lag < SignedDuration::from_millis(50), "{lag:?}");
    }
}
