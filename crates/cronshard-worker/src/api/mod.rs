//! The replica's way to the API server: the instrumented client, the bound on one request,
//! the write fence, and the limiter with its adaptive rate and herd reservations.

pub mod adaptive;
pub mod client;
pub mod fence;
pub mod limiter;
pub mod request;
pub mod reserve;
