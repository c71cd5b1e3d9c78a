//! How a replica's long-running tasks learn that they should end.

/// Resolves once `stop` is true, or its sender is gone: nothing can say stop any more, so
/// whoever started the task is tearing it down. (Waiting for `changed()` alone would be ready
/// at once, again and again, after the sender is dropped: a loop around it would spin.)
pub(crate) async fn stop_signal(stop: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}
