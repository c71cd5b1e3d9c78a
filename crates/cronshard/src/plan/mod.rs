//! `cronshard plan`: replicas, per-replica QPS and memory for the CronJobs of a cluster.
//!
//! [`input`] reads what `kubectl get cronjobs -A -o json` printed, [`settings`] checks the
//! flags, [`load`] counts the runs per minute exactly as the controller would fire them,
//! [`model`] turns that into herds and a capacity plan, [`cluster`] adds the Job controller's
//! and kube-scheduler's rates for the largest herd's pods, [`spread_comparison`] compares the
//! window with and without `--spread`, and [`render`] and [`chart`] show the plan. Everything
//! here is pure except [`read_items`]; `plan_cmd` only parses flags and writes the results.

mod chart;
mod cluster;
mod input;
mod load;
mod model;
mod render;
mod settings;
mod spread_comparison;
#[cfg(test)]
mod testkit;
mod units;

pub(crate) use chart::svg;
pub(crate) use cluster::{Client, ClusterSettings};
pub(crate) use input::{parse_quantity, read_items};
pub(crate) use model::compute;
pub(crate) use render::{render_text, to_json};
pub(crate) use settings::{Settings, Window, next_full_hour};
pub(crate) use spread_comparison::SpreadSettings;
