//! The units and formats every part of the plan shares: MiB, UTC times, tidy floats.

use cronshard_types::{Timestamp, Zone};

pub(super) const MIB: u64 = 1024 * 1024;

pub(super) fn utc(at: Timestamp) -> String {
    Zone::utc().format_rfc3339(at)
}

pub(super) fn utc_second(unix: i64) -> String {
    Timestamp::from_second(unix).map_or_else(|_| unix.to_string(), utc)
}

pub(super) fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

/// Six decimals at most, so the JSON does not carry float noise (1088.9999999999998).
pub(super) fn tidy(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}
