//! Kubernetes Events about CronJobs, sent in the background at the lowest priority. Their
//! names always validate: kube-runtime's recorder (like client-go's) names an Event
//! `<object name>.<nanoseconds in hex>`, which is too long for an object whose own name is
//! near the 253-character limit (a CronJob stored before validation capped it), so such
//! Events are written here with the object's name cut short.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};

use crate::context::Context;
use crate::limiter::Priority;
use crate::sync::{Event, EventType};

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
            ctx.limiter.acquire(Priority::Background).await;
            // Boxed: tens of thousands of these tasks may wait for the budget after a herd,
            // and the request's future is ten times the size of what waits.
            let result = Box::pin(send(&ctx, &reference, event)).await;
            if let Err(e) = result {
                tracing::debug!(error = %e, "could not record an Event");
            }
        }
    });
}

async fn send(ctx: &Context, reference: &ObjectReference, event: Event) -> Result<(), kube::Error> {
    if reference.name.as_ref().is_some_and(|n| n.len() > LONGEST_NAME) {
        create(ctx, reference, event).await
    } else {
        record(ctx, reference, event).await
    }
}

async fn record(ctx: &Context, reference: &ObjectReference, event: Event) -> Result<(), kube::Error> {
    let published = kube::runtime::events::Event {
        type_: match event.kind {
            EventType::Normal => kube::runtime::events::EventType::Normal,
            EventType::Warning => kube::runtime::events::EventType::Warning,
        },
        reason: event.reason.to_owned(),
        note: Some(event.message),
        action: "Sync".into(),
        secondary: None,
    };
    ctx.recorder.publish(&published, reference).await
}

/// The recorder's Event, under a name that validates (no series: such objects are rare).
async fn create(ctx: &Context, reference: &ObjectReference, event: Event) -> Result<(), kube::Error> {
    let now = k8s_openapi::jiff::Timestamp::now();
    let namespace = reference.namespace.clone().unwrap_or_default();
    let body = K8sEvent {
        metadata: ObjectMeta {
            name: Some(event_name(reference.name.as_deref().unwrap_or("cronshard"), now.as_nanosecond())),
            namespace: Some(namespace.clone()),
            ..ObjectMeta::default()
        },
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
    Api::<K8sEvent>::namespaced(ctx.client.clone(), &namespace).create(&PostParams::default(), &body).await.map(drop)
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
