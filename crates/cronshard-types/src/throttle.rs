//! A log throttle: a repeated message goes out at most once per period, with a count of the
//! ones held back, so an outage costs a line every few seconds instead of a flood.

use std::time::{Duration, Instant};

/// How often each repeated message may be logged.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// One repeated message's throttle. Time is passed in.
#[derive(Clone, Debug)]
pub struct Throttle {
    period: Duration,
    last: Option<Instant>,
    held_back: u64,
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle::new(LOG_EVERY)
    }
}

impl Throttle {
    pub fn new(period: Duration) -> Self {
        Throttle { period, last: None, held_back: 0 }
    }

    /// `Some(n)` when the message may go out now, `n` being how many were held back since
    /// the last one; `None` when it must be held back.
    pub fn admit(&mut self, now: Instant) -> Option<u64> {
        if self.last.is_some_and(|last| now.saturating_duration_since(last) < self.period) {
            self.held_back += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.held_back))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_per_period_with_the_count_held_back() {
        let t0 = Instant::now();
        let mut t = Throttle::new(Duration::from_secs(10));
        assert_eq!(t.admit(t0), Some(0));
        assert_eq!(t.admit(t0 + Duration::from_secs(1)), None);
        assert_eq!(t.admit(t0 + Duration::from_secs(9)), None);
        assert_eq!(t.admit(t0 + Duration::from_secs(10)), Some(2));
        assert_eq!(t.admit(t0 + Duration::from_secs(11)), None);
        assert_eq!(t.admit(t0 + Duration::from_secs(30)), Some(1));
    }
}
