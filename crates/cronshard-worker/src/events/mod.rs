//! Kubernetes Events about CronJobs (events.k8s.io/v1), sent in the background at the
//! lowest priority. Repeats of one Event become its series ([`series`]). Names always
//! validate: client-go's and kube-runtime's recorders name an Event `<object name>.<nanoseconds
//! in hex>`, which is too long for an object whose own name is near the 253-character limit
//! (a CronJob stored before validation capped it), so the object's name is cut short.

pub mod series;

use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, Patch, PatchParams, PostParams};

use crate::api::limiter::Priority;
use crate::context::Context;
use cronshard_sync::{Event, EventType};

use self::series::{Series, SeriesKey};

/// Longest object name kube's recorder can put in an Event name (253 − '.' − 16 hex digits).
const LONGEST_NAME: usize = 253 - 17;

/// The name of an Event about `object` written at `nanos`, valid whatever the object's name.
pub fn event_name(object: &str, nanos: i128) -> String {
    let mut cut = object.len().min(LONGEST_NAME);
    while !object.is_char_boundary(cut) {
        cut -= 1;
    }
    let stem = object[..cut].trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    format!("{stem}.{:x}", nanos as u64)
}

/// Records `events` about `reference` in the background.
pub fn publish(ctx: Arc<Context>, reference: ObjectReference, events: Vec<Event>) {
    if events.is_empty() {
        return;
    }
    tokio::spawn(async move {
        for event in events {
            // Held for the write: a series patch that finds its Event gone creates one.
            let _place = ctx.limiter.acquire(Priority::Background).await;
            // Boxed: tens of thousands of these tasks may wait for the budget after a herd,
            // and the request's future is many times the size of what waits.
            if let Err(e) = Box::pin(crate::api::request::sent_within(write(&ctx, &reference, event))).await {
                tracing::debug!(error = %e, "could not record an Event");
            }
        }
    });
}

/// Writes `event` now: a new Event, or the next count of the series it repeats.
pub async fn write(ctx: &Context, reference: &ObjectReference, event: Event) -> Result<(), kube::Error> {
    let at = ctx.clock.now();
    // k8s-openapi's times are of its own jiff version.
    let now = k8s_openapi::jiff::Timestamp::from_nanosecond(at.as_nanosecond())
        .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
    let key = SeriesKey {
        namespace: reference.namespace.clone().unwrap_or_default(),
        uid: reference.uid.clone().unwrap_or_default(),
        warning: event.kind == EventType::Warning,
        reason: event.reason,
        note: event.message.clone(),
    };
    let repeat = lock(&ctx.event_series).repeat(&key, at);
    if let Some((name, count)) = repeat {
        let api = Api::<K8sEvent>::namespaced(ctx.client.clone(), &key.namespace);
        let patch = serde_json::json!({"series": {"count": count, "lastObservedTime": MicroTime(now)}});
        match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Err(kube::Error::Api(status)) if status.code == 404 => lock(&ctx.event_series).forget(&key),
            result => return result.map(drop),
        }
    }
    let name = create(ctx, reference, event, now).await?;
    lock(&ctx.event_series).created(key, name, at);
    Ok(())
}

fn lock(series: &Mutex<Series>) -> std::sync::MutexGuard<'_, Series> {
    series.lock().unwrap_or_else(|e| e.into_inner())
}

/// A new Event, as kube-runtime's recorder writes it; returns its name.
async fn create(
    ctx: &Context,
    reference: &ObjectReference,
    event: Event,
    now: k8s_openapi::jiff::Timestamp,
) -> Result<String, kube::Error> {
    let namespace = reference.namespace.clone().unwrap_or_default();
    let name = event_name(reference.name.as_deref().unwrap_or("cronshard"), now.as_nanosecond());
    let body = K8sEvent {
        metadata: ObjectMeta { name: Some(name.clone()), namespace: Some(namespace.clone()), ..ObjectMeta::default() },
        action: Some("Sync".into()),
        reason: Some(event.reason.to_owned()),
        note: Some(event.message),
        type_: Some(match event.kind {
            EventType::Normal => "Normal".into(),
            EventType::Warning => "Warning".into(),
        }),
        event_time: Some(MicroTime(now)),
        regarding: Some(reference.clone()),
        reporting_controller: Some("cronshard".into()),
        reporting_instance: Some(ctx.settings.identity.clone()),
        ..K8sEvent::default()
    };
    Api::<K8sEvent>::namespaced(ctx.client.clone(), &namespace).create(&PostParams::default(), &body).await?;
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_always_validate() {
        assert_eq!(event_name("nightly", 255), "nightly.ff");
        let long = format!("{}-{}", "a".repeat(240), "b".repeat(9));
        let name = event_name(&long, i128::from(u64::MAX));
        assert!(name.len() <= 253, "{}", name.len());
        assert!(name.starts_with(&"a".repeat(236)) && name.ends_with(".ffffffffffffffff"));
        // A cut that would end in '-' or '.' is trimmed back to an alphanumeric.
        let dashed = format!("{}-{}", "a".repeat(235), "b".repeat(20));
        assert!(event_name(&dashed, 1).starts_with(&format!("{}.", "a".repeat(235))));
    }
}
