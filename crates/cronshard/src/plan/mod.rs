//! `cronshard plan`: replicas, per-replica QPS and memory for the CronJobs of a cluster.
//!
//! [`input`] reads what `kubectl get cronjobs -A -o json` printed, [`load`] counts the runs
//! per minute exactly as the controller would fire them, [`model`] turns that into herds and
//! a capacity plan, [`spread`] compares the window with and without `--spread`, and [`render`]
//! and [`chart`] show the plan. Everything here is pure except
//! [`read_items`]; the `cronshard` binary only parses flags and writes the results.

mod chart;
mod input;
mod load;
mod model;
mod render;
mod spread;
#[cfg(test)]
mod testkit;

pub use chart::svg;
pub use input::{parse_quantity, read_items};
pub use model::{Plan, Settings, Window, compute, next_full_hour};
pub use render::{render_text, to_json};
pub use spread::SpreadSettings;

use cronshard_types::{Timestamp, Zone};

use crate::plot::number as fmt_num;

const MIB: u64 = 1024 * 1024;

fn utc(at: Timestamp) -> String {
    Zone::utc().format_rfc3339(at)
}

fn utc_second(unix: i64) -> String {
    Timestamp::from_second(unix).map_or_else(|_| unix.to_string(), utc)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

/// Six decimals at most, so the JSON does not carry float noise (1088.9999999999998).
fn tidy(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}
