//! Heap bytes a Job's watch event allocates while it is decoded, counted by dhat's
//! allocator: through a whole-object tree (as before [`Unread`] existed), typed in one pass,
//! and as a bucket decodes it (the pod template and managedFields skipped). Printed for the
//! docs, and bounded so a regression fails.
//!
//! [`Unread`]: cronshard_worker::objects::unread::Unread

use std::io::Write;

use cronshard_worker::objects::decoded::Decoded;
use k8s_openapi::api::batch::v1::Job;
use kube::api::WatchEvent;
use serde::Deserialize;

#[path = "common/objects.rs"]
mod objects;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const EVENTS: usize = 1000;

fn events() -> Vec<Vec<u8>> {
    (0..EVENTS).map(|i| objects::watch_event("MODIFIED", &objects::job(i)).into_bytes()).collect()
}

/// Heap bytes allocated per event while `decode` runs over every event (freed or not).
fn allocated_per_event(lines: &[Vec<u8>], decode: impl Fn(&[u8])) -> u64 {
    let before = dhat::HeapStats::get().total_bytes;
    for line in lines {
        decode(line);
    }
    (dhat::HeapStats::get().total_bytes - before) / EVENTS as u64
}

#[test]
fn a_bucket_decodes_a_job_event_without_its_template_and_managed_fields() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let lines = events();
    let through_tree = allocated_per_event(&lines, |line| {
        let event: WatchEvent<serde_json::Value> = serde_json::from_slice(line).expect("an event");
        let WatchEvent::Modified(value) = event else { panic!("a MODIFIED event") };
        std::hint::black_box(Job::deserialize(&value).expect("a Job"));
    });
    let typed = allocated_per_event(&lines, |line| {
        std::hint::black_box(serde_json::from_slice::<WatchEvent<Job>>(line).expect("an event"));
    });
    let bucket = allocated_per_event(&lines, |line| {
        let event: WatchEvent<Decoded<Job>> = serde_json::from_slice(line).expect("an event");
        let WatchEvent::Modified(Decoded::Ok(job)) = event else { panic!("a decodable MODIFIED event") };
        assert!(job.spec.is_none() && job.metadata.managed_fields.is_none() && job.status.is_some());
        std::hint::black_box(job);
    });
    let mut out = std::io::stdout().lock();
    let _ =
        writeln!(out, "heap bytes allocated per Job watch event (dhat), {EVENTS} events of {} bytes:", lines[0].len());
    let _ = writeln!(out, "  through a whole-object tree {through_tree:>6}");
    let _ = writeln!(out, "  typed in one pass           {typed:>6}");
    let _ = writeln!(out, "  as a bucket decodes it      {bucket:>6}");
    assert!(bucket * 3 < through_tree, "{bucket} vs {through_tree}");
    assert!(bucket * 2 < typed, "{bucket} vs {typed}");
}
