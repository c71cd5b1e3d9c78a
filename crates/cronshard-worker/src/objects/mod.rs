//! Objects as a replica keeps them: CronJobs compact between syncs, objects that may not
//! decode, and the conversions to and from the plain structs the sync rules work on.

pub mod cached;
pub mod convert;
pub mod decoded;
pub mod namespace_spreads;
pub mod unread;
