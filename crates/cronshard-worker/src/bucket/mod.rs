//! One bucket: its worker (the state machine, in [`worker`]) and what the worker is made of:
//! the cache index, the timer queue, the status writes, the history cleanup, the spread
//! offsets, the start delays, the API calls of a sync, and the set of buckets a replica runs.

mod calls;
mod cleanup;
mod index;
mod jobs;
mod offsets;
pub mod set;
mod start_delays;
mod timers;
mod worker;
mod writes;

pub use self::jobs::KubeJobs;
pub use self::worker::run;
