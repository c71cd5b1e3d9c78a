//! The coordination loop: renew the member Lease, follow every cronshard Lease through one
//! label-selected watch, claim the buckets the assignment gives this replica when they are
//! free or their holder is dead, hand over the others in two phases, and fence on a missed
//! renew deadline before doing anything else.
//!
//! `decide` is the state machine (time in, actions out; its state changes only through its
//! own methods), `driver` the one type that carries its actions out against the API server
//! (`driver/mod.rs` owns it), and `settings` and `work` what the caller hands in and gets.

mod decide;
mod driver;
mod settings;
mod work;

pub use self::driver::run::run;
pub use self::settings::{Settings, WallClock};
pub use self::work::{Buckets, Ownership};
