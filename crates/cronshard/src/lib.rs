//! The `cronshard` controller's library side: what its command lines share with the project's
//! other binaries (`cronshard-sim`, the benchmark harness), and one replica's glue.

pub mod cli;
pub mod replica;
