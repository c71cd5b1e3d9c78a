//! The `cronshard` controller's library side: what its command lines share with the project's
//! other binaries (`cronshard-sim`, the benchmark harness), one replica's glue, the capacity
//! plan behind `cronshard plan`, shadow mode, and what the project's SVG charts share.

pub mod cli;
mod error;
pub mod plan;
pub mod plot;
pub mod replica;
pub mod shadow;

pub use error::{Error, Result};
