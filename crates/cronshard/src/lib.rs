//! What the project's binaries (`cronshard`, `cronshard-sim`, the benchmark harness) share:
//! command-line helpers and the layout of the SVG charts.

pub mod cli;
pub mod plot;
