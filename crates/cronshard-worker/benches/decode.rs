//! Decoding one Job watch event as kube-apiserver sends it during a herd: through a
//! whole-object tree (as before [`Unread`] existed), typed in one pass (no tolerance for an
//! undecodable object), and as a bucket decodes it (the pod template and managedFields
//! skipped).
//!
//! [`Unread`]: cronshard_worker::objects::unread::Unread

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use cronshard_worker::objects::decoded::Decoded;
use k8s_openapi::api::batch::v1::Job;
use kube::api::WatchEvent;
use serde::Deserialize;

#[path = "../tests/common/objects.rs"]
mod objects;

fn decode(c: &mut Criterion) {
    let line = objects::watch_event("MODIFIED", &objects::job(7)).into_bytes();
    let mut group = c.benchmark_group("job_watch_event");
    group.bench_function("through_a_whole_object_tree", |b| {
        b.iter(|| {
            let event: WatchEvent<serde_json::Value> = serde_json::from_slice(black_box(&line)).expect("an event");
            let WatchEvent::Modified(value) = event else { panic!("a MODIFIED event") };
            Job::deserialize(&value).expect("a Job")
        });
    });
    group.bench_function("typed_in_one_pass", |b| {
        b.iter(|| serde_json::from_slice::<WatchEvent<Job>>(black_box(&line)).expect("an event"));
    });
    group.bench_function("as_a_bucket_decodes_it", |b| {
        b.iter(|| serde_json::from_slice::<WatchEvent<Decoded<Job>>>(black_box(&line)).expect("an event"));
    });
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
