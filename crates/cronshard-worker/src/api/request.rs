//! What every request of the replica shares: the bound on one request's time once sent.

use std::time::Duration;

/// Longest one request may take once the limiter has let it go. Only the request is timed,
/// never its wait for the budget: that wait is the limiter doing its job, and giving up
/// would only send the request to the back of its queue.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// `request`, bounded by [`REQUEST_TIMEOUT`] (a hung call must not hold its bucket).
pub async fn sent_within<T>(request: impl Future<Output = Result<T, kube::Error>>) -> Result<T, kube::Error> {
    match tokio::time::timeout(REQUEST_TIMEOUT, request).await {
        Ok(result) => result,
        Err(elapsed) => Err(kube::Error::Service(
            format!("no answer within {REQUEST_TIMEOUT:?} of sending the request ({elapsed})").into(),
        )),
    }
}
