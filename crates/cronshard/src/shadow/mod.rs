//! Shadow mode (`cronshard shadow`): watches CronJobs and their Jobs without writing anything,
//! computes every run that should start by cronshard's semantics, and judges how the running
//! controller kept them: on time, late, missed, duplicate, unexpected.
//!
//! [`views`] reads the objects, [`ledger`] judges their runs ([`verdict`]), [`tally`] keeps
//! the totals and [`report`] writes them; [`watch`] runs the watches, [`metrics`] exports.

mod ledger;
pub(crate) mod metrics;
mod report;
mod shard;
mod tally;
mod verdict;
mod views;
mod watch;

pub(crate) use self::ledger::Settings;
pub(crate) use self::shard::Shard;
pub(crate) use self::watch::{Options, run};
