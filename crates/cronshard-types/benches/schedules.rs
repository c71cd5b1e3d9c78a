//! Parse and next-fire-time for 100,000 mixed schedules, as one replica would at start-up.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use cronshard_types::{CronJobSchedule, Timestamp};

const COUNT: usize = 100_000;

/// A deterministic mix of what clusters run: every-N-minutes, hourly, daily at odd minutes,
/// weekday business hours, monthly, descriptors, `@every`, and a share in DST zones.
fn mixed_schedules() -> Vec<(String, Option<&'static str>)> {
    const ZONES: [Option<&str>; 6] =
        [None, None, None, Some("America/New_York"), Some("Europe/Berlin"), Some("Asia/Kolkata")];
    (0..COUNT)
        .map(|i| {
            let m = i % 60;
            let h = i % 24;
            let schedule = match i % 10 {
                0 => "* * * * *".to_owned(),
                1 => format!("*/{} * * * *", 1 + i % 30),
                2 => format!("{m} * * * *"),
                3 => format!("{m} {h} * * *"),
                4 => format!("{m} 9-17 * * MON-FRI"),
                5 => format!("{m} {h} {} * *", 1 + i % 28),
                6 => format!("{m} {h} 1,15 * 1-5"),
                7 => ["@hourly", "@daily", "@weekly", "@monthly", "@yearly"][i % 5].to_owned(),
                8 => format!("@every {}m", 1 + i % 90),
                _ => format!("{m} {h} * {} ?", 1 + i % 12),
            };
            (schedule, ZONES[i % ZONES.len()])
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let inputs = mixed_schedules();
    let parsed: Vec<CronJobSchedule> =
        inputs.iter().map(|(s, z)| CronJobSchedule::new(s, *z).expect("valid schedule")).collect();
    let now: Timestamp = "2026-11-30T12:34:56Z".parse().expect("timestamp");
    let long_ago: Timestamp = "2024-01-01T00:00:00Z".parse().expect("timestamp");

    let mut group = c.benchmark_group("100k-schedules");
    group.sample_size(10);
    group.bench_function("parse", |b| {
        b.iter(|| {
            for (s, z) in &inputs {
                black_box(CronJobSchedule::new(black_box(s), *z).ok());
            }
        })
    });
    group.bench_function("next", |b| {
        b.iter(|| {
            for s in &parsed {
                black_box(s.schedule().next_after(black_box(now)));
            }
        })
    });
    group.bench_function("due-after-3-years-down", |b| {
        b.iter(|| {
            for s in &parsed {
                black_box(s.due(black_box(long_ago), now, None).ok());
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
