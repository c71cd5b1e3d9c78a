//! Bytes of heap per object in a bucket's cache, counted by dhat's allocator: a CronJob
//! decoded as k8s-openapi holds it against the cache's JSON form, and a Job decoded against
//! its projection. Printed for the README, and bounded so a regression fails.

use std::io::Write;

use cronshard_sync::ChildJob;
use cronshard_worker::objects::cached::CachedCronJob;
use k8s_openapi::api::batch::v1::{CronJob, Job};

#[path = "common/objects.rs"]
mod objects;

use objects::{cronjob, job};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const OBJECTS: usize = 1000;

/// Heap bytes per object that `make` leaves allocated, over [`OBJECTS`] objects.
fn bytes_per_object<T>(make: impl Fn(usize) -> T) -> usize {
    let before = dhat::HeapStats::get().curr_bytes;
    let held: Vec<T> = (0..OBJECTS).map(make).collect();
    let after = dhat::HeapStats::get().curr_bytes;
    drop(held);
    (after - before) / OBJECTS
}

#[test]
fn the_cache_holds_a_fraction_of_the_decoded_objects() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let decode_cronjob = |i| serde_json::from_value::<CronJob>(cronjob(i)).expect("a valid CronJob");
    let decode_job = |i| serde_json::from_value::<Job>(job(i)).expect("a valid Job");
    let cronjob_decoded = bytes_per_object(decode_cronjob);
    let cronjob_cached = bytes_per_object(|i| CachedCronJob::new(decode_cronjob(i)));
    let job_decoded = bytes_per_object(decode_job);
    let job_projected =
        bytes_per_object(|i| -> ChildJob { cronshard_worker::objects::convert::child_job(&decode_job(i)) });
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "heap bytes per object (dhat), {OBJECTS} objects:");
    let _ = writeln!(out, "  CronJob decoded {cronjob_decoded:>6}   cached as JSON  {cronjob_cached:>6}");
    let _ = writeln!(out, "  Job     decoded {job_decoded:>6}   projected       {job_projected:>6}");
    assert!(cronjob_cached * 3 < cronjob_decoded, "{cronjob_cached} vs {cronjob_decoded}");
    assert!(job_projected * 8 < job_decoded, "{job_projected} vs {job_decoded}");
}
