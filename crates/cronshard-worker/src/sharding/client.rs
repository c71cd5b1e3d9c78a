//! A bucket's client when the server filters: every request carries the bucket's
//! `shardSelector`, and every list answer must echo it in `metadata.shardInfo`, or the
//! replica learns that the server stopped filtering (a relist is a probe of its own).

use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use futures::future::BoxFuture;
use http_body_util::BodyExt;
use kube::client::Body;

/// `url` with `shardSelector=selector` added to its query.
pub(super) fn with_shard_selector(url: &str, selector: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    let encoded: String = form_urlencoded::byte_serialize(selector.as_bytes()).collect();
    format!("{url}{separator}shardSelector={encoded}")
}

/// Whether a list answer says the server applied `selector`.
pub(super) fn echoes(list: &serde_json::Value, selector: &str) -> bool {
    list.pointer("/metadata/shardInfo/selector").and_then(serde_json::Value::as_str) == Some(selector)
}

/// What a sharded client tells when a list answer does not echo its selector.
pub(super) type OnUnfiltered = Arc<dyn Fn(&str) + Send + Sync>;

/// A client for one bucket's CronJob list and watch: `client`'s requests (counted, fenced,
/// retried as the replica's are) with `selector` added.
pub(super) fn sharded(client: kube::Client, selector: String, on_unfiltered: OnUnfiltered) -> kube::Client {
    let namespace = client.default_namespace().to_owned();
    kube::Client::new(Sharded { client, selector: Arc::from(selector), on_unfiltered }, namespace)
}

#[derive(Clone)]
struct Sharded {
    client: kube::Client,
    selector: Arc<str>,
    on_unfiltered: OnUnfiltered,
}

fn is_watch(uri: &http::Uri) -> bool {
    uri.query().unwrap_or_default().split('&').any(|p| p == "watch=true" || p == "watch=1")
}

impl tower::Service<http::Request<Body>> for Sharded {
    type Response = http::Response<Body>;
    type Error = kube::Error;
    type Future = BoxFuture<'static, Result<http::Response<Body>, kube::Error>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), kube::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let uri = with_shard_selector(&request.uri().to_string(), &this.selector);
            *request.uri_mut() = uri.parse().map_err(|e: http::uri::InvalidUri| kube::Error::HttpError(e.into()))?;
            let list = !is_watch(request.uri());
            let response = this.client.send(request).await?;
            if !list || !response.status().is_success() {
                return Ok(response);
            }
            let (parts, body) = response.into_parts();
            let bytes = body.collect().await?.to_bytes();
            match serde_json::from_slice::<serde_json::Value>(&bytes) {
                Ok(answer) if echoes(&answer, &this.selector) => {}
                Ok(_) => (this.on_unfiltered)("a CronJob list came back without its shardInfo"),
                // Not JSON: the caller reports the decoding error; nothing is learnt here.
                Err(_) => {}
            }
            Ok(http::Response::from_parts(parts, Body::from(bytes)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selector_is_added_to_the_query() {
        let selector = cronshard_types::shard_selector(1, std::num::NonZeroU32::new(2).expect("2"));
        let url = with_shard_selector("/apis/batch/v1/cronjobs?limit=500", &selector);
        assert_eq!(
            url,
            "/apis/batch/v1/cronjobs?limit=500&shardSelector=shardRange%28object.metadata.uid%2C+%270x8000000000000000%27%2C+%270x10000000000000000%27%29"
        );
        assert!(with_shard_selector("/apis/batch/v1/cronjobs", &selector).starts_with("/apis/batch/v1/cronjobs?shard"));
        let echoed = serde_json::json!({"metadata": {"shardInfo": {"selector": selector}}, "items": []});
        assert!(echoes(&echoed, &selector));
        assert!(!echoes(&serde_json::json!({"metadata": {}, "items": []}), &selector));
    }
}
