//! get and list: from the store, at the resourceVersion asked for, with selectors and pages.

use std::collections::HashMap;
use std::time::Duration;

use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use serde_json::json;

use super::outcome::Outcome;
use crate::SimState;
use crate::error::{ApiError, Result};
use crate::request::{ContinueToken, ListParams, Match, Target, name_of, namespace_of};
use crate::shard::ShardSelector;
use crate::store::{Object, ReadAt};

pub(super) fn get(state: &SimState, target: &Target) -> Result<Outcome> {
    let object = state
        .store()
        .get(target.resource, namespace_of(target), name_of(target))
        .ok_or_else(|| ApiError::NotFound { resource: target.resource, name: name_of(target).to_owned() })?;
    Ok(Outcome::object(StatusCode::OK, object, &[]))
}

pub(super) fn selector_filter(
    target: &Target,
    params: &ListParams,
    shard: Option<ShardSelector>,
) -> impl Fn(&Object) -> bool + Send + Sync + 'static {
    let labels = params.labels.clone();
    let fields = params.fields.clone();
    let namespace = target.namespace.clone();
    move |o: &Object| {
        namespace.as_deref().is_none_or(|ns| o.namespace == ns)
            && labels.matches(&o.labels)
            && fields.matches(o)
            && shard.as_ref().is_none_or(|s| s.matches(o))
    }
}

/// The request's shard selector, if the `ShardedListAndWatch` gate is on (off, kube-apiserver
/// drops the field unread).
pub(super) fn shard_selector(state: &SimState, params: &ListParams) -> Result<Option<ShardSelector>> {
    match &params.shard {
        Some(text) if state.0.faults.snapshot().sharded_list_and_watch => Ok(Some(ShardSelector::parse(text)?)),
        _ => Ok(None),
    }
}

pub(super) async fn list(state: &SimState, target: &Target, query: &HashMap<String, String>) -> Result<Outcome> {
    let params = ListParams::parse(query, target.resource)?;
    let store = state.store();
    let shard = shard_selector(state, &params)?;
    let shard_text = shard.as_ref().map(|s| s.text.clone());
    let filter = selector_filter(target, &params, shard);
    // Which revision, and whether from storage (paginated, costs per object) or the watch
    // cache (newest state, `limit` ignored), follows kube-apiserver's rules.
    let (at, from_storage) = match (&params.continue_token, params.resource_version, params.rv_match) {
        (Some(token), _, _) => (ReadAt::Exact(token.rv), true),
        (None, None, _) => (ReadAt::Latest, true),
        (None, Some(0), _) => (ReadAt::Latest, false),
        (None, Some(rv), Some(Match::Exact)) => (ReadAt::Exact(rv), true),
        (None, Some(rv), None) if params.limit > 0 => (ReadAt::Exact(rv), true),
        (None, Some(rv), _) => {
            wait_for_revision(state, rv).await?;
            (ReadAt::Latest, false)
        }
    };
    let limit = if from_storage { params.limit } else { 0 };
    let after = params.continue_token.as_ref().map(|t| t.after.as_str());
    let page =
        store.list(target.resource, target.namespace.as_deref(), at, after, limit, &filter).map_err(|e| {
            match (e, &params.continue_token) {
                (ApiError::ResourceVersionTooOld { .. }, Some(token)) => ApiError::ContinueExpired {
                    inconsistent_continue: ContinueToken { rv: store.revision(), after: token.after.clone() }.encode(),
                },
                (ApiError::ResourceVersionTooOld { .. }, None) => ApiError::ListTooOld,
                (other, _) => other,
            }
        })?;
    if from_storage {
        let per_object = state.0.faults.snapshot().latency.list_per_object_us;
        let cost = Duration::from_micros(per_object.saturating_mul(page.scanned as u64));
        if !cost.is_zero() {
            tokio::time::sleep(cost).await;
        }
    }
    let mut metadata = json!({"resourceVersion": page.revision.to_string()});
    if let Some(after) = page.continue_after {
        metadata["continue"] = json!(ContinueToken { rv: page.revision, after }.encode());
    }
    if let Some(selector) = shard_text {
        metadata["shardInfo"] = json!({ "selector": selector });
    }
    let head = format!(
        "{{\"kind\":\"{}List\",\"apiVersion\":\"{}\",\"metadata\":{metadata},\"items\":[",
        target.resource.kind(),
        target.resource.api_version()
    );
    let mut body = Vec::with_capacity(head.len() + page.items.iter().map(|o| o.body.len() + 1).sum::<usize>() + 2);
    body.extend_from_slice(head.as_bytes());
    for (i, item) in page.items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(&item.body);
    }
    body.extend_from_slice(b"]}");
    Ok(Outcome::plain(([(header::CONTENT_TYPE, "application/json")], body).into_response()))
}

/// A NotOlderThan read of a revision the server has not reached waits up to 3 s, then 504.
pub(super) async fn wait_for_revision(state: &SimState, rv: u64) -> Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while state.store().revision() < rv {
        if tokio::time::Instant::now() >= deadline {
            return Err(ApiError::ResourceVersionTooLarge { requested: rv, current: state.store().revision() });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}
