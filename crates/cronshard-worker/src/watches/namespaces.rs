//! The watch of the Namespaces' `cronshard.io/spread` defaults: one per replica, filling the
//! plain index ([`NamespaceSpreads`]) that the bucket workers read.

use std::collections::HashMap;
use std::sync::Arc;

use cronshard_types::spread::SPREAD_ANNOTATION;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};

use crate::context::Context;

fn spread_of(ns: &Namespace) -> Option<String> {
    ns.metadata.annotations.as_ref()?.get(SPREAD_ANNOTATION).cloned()
}

/// Follows the Namespaces' spread annotations into `ctx.namespace_spreads` until `stop`.
pub async fn run_namespace_watch(ctx: Arc<Context>, mut stop: tokio::sync::watch::Receiver<bool>) {
    let api = Api::<Namespace>::all(ctx.client.clone());
    let mut events = watcher(api, watcher::Config::default()).default_backoff().boxed();
    let mut listing = HashMap::new();
    loop {
        tokio::select! {
            () = crate::stop::stop_signal(&mut stop) => return,
            event = events.next() => match event {
                Some(Ok(watcher::Event::Init)) => listing.clear(),
                Some(Ok(watcher::Event::InitApply(ns))) => {
                    if let (Some(name), Some(spread)) = (ns.metadata.name.clone(), spread_of(&ns)) {
                        listing.insert(name, spread);
                    }
                }
                Some(Ok(watcher::Event::InitDone)) => ctx.namespace_spreads.reset(std::mem::take(&mut listing)),
                Some(Ok(watcher::Event::Apply(ns))) => {
                    if let Some(name) = &ns.metadata.name {
                        ctx.namespace_spreads.apply(name, spread_of(&ns));
                    }
                }
                Some(Ok(watcher::Event::Delete(ns))) => {
                    if let Some(name) = &ns.metadata.name {
                        ctx.namespace_spreads.apply(name, None);
                    }
                }
                Some(Err(e)) => ctx.log_warn("namespaces", &format!("Namespace watch failed; retrying: {e}")),
                None => return,
            },
        }
    }
}
