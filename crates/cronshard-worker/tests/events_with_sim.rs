//! Events against the in-process simulator: a repeat becomes the series of the first Event,
//! and a different note or object is an Event of its own.

mod common;

use common::{objects, serve, wait_for};
use cronshard_sim::{Config, Resource, SimState};
use cronshard_sync::{Event, EventType};
use cronshard_worker::Clock;
use k8s_openapi::api::core::v1::ObjectReference;

fn reference(name: &str, uid: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".into()),
        kind: Some("CronJob".into()),
        namespace: Some("default".into()),
        name: Some(name.into()),
        uid: Some(uid.into()),
        resource_version: Some("7".into()),
        ..ObjectReference::default()
    }
}

fn warning(message: &str) -> Event {
    Event { kind: EventType::Warning, reason: "InvalidSpread", message: message.into() }
}

/// (regarding name, note, series count) of every Event, sorted.
fn events(sim: &SimState) -> Vec<(String, String, i64)> {
    let mut all: Vec<(String, String, i64)> = objects(sim, Resource::Events)
        .iter()
        .map(|e| {
            let name = e["regarding"]["name"].as_str().unwrap_or_default().to_owned();
            let note = e["note"].as_str().unwrap_or_default().to_owned();
            (name, note, e["series"]["count"].as_i64().unwrap_or(1))
        })
        .collect();
    all.sort();
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_event_is_one_object_with_a_series_count() {
    let sim = SimState::new(Config { runner: None, ..Config::default() });
    let ctx = common::context(serve(sim.clone()).await, &Clock::default());
    let same = || warning("spread \"x\" is not a duration");
    cronshard_worker::events::publish(ctx.clone(), reference("a", "u-a"), vec![same(), same(), same()]);
    wait_for("the series count 3", || events(&sim).first().is_some_and(|e| e.2 == 3)).await;
    cronshard_worker::events::publish(ctx.clone(), reference("a", "u-a"), vec![warning("another note")]);
    cronshard_worker::events::publish(ctx.clone(), reference("b", "u-b"), vec![same()]);
    wait_for("three Events", || events(&sim).len() == 3).await;
    assert_eq!(
        events(&sim),
        [
            ("a".into(), "another note".into(), 1),
            ("a".into(), "spread \"x\" is not a duration".into(), 3),
            ("b".into(), "spread \"x\" is not a duration".into(), 1),
        ]
    );
}
