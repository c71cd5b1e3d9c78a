//! The `cronshard` controller's library side: what its command lines share with the project's
//! other binaries (`cronshard-sim`, the benchmark harness), one replica's glue, and the capacity
//! plan behind `cronshard plan`.

pub mod cli;
pub mod plan;
pub mod replica;
