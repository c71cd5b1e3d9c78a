//! The simulator's clock: real time plus an adjustable offset shared with processes under test.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use jiff::{SignedDuration, Timestamp};

/// Wall clock with an offset, so tests can cross minute and hour boundaries without waiting.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    offset_ms: Arc<AtomicI64>,
}

impl Clock {
    pub fn now(&self) -> Timestamp {
        let offset = SignedDuration::from_millis(self.offset_ms.load(Ordering::Relaxed));
        Timestamp::now().checked_add(offset).unwrap_or(Timestamp::now())
    }

    /// RFC 3339 with whole seconds, as metav1.Time serialises.
    pub fn now_rfc3339(&self) -> String {
        cronshard_types::Zone::utc().format_rfc3339(self.now())
    }

    pub fn offset(&self) -> SignedDuration {
        SignedDuration::from_millis(self.offset_ms.load(Ordering::Relaxed))
    }

    pub fn set_offset(&self, offset: SignedDuration) {
        self.offset_ms.store(offset.as_millis() as i64, Ordering::Relaxed);
    }
}
