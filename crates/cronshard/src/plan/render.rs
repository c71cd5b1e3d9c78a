//! The plan as text for a person and as JSON for a script.

use std::fmt::Write as _;

use serde_json::{Value, json};

use cronshard::plot::number as fmt_num;

use super::cluster::{ClusterPlan, Need};
use super::model::{MIN_REPLICAS, Plan, SHOWN, WRITES_PER_RUN};
use super::settings::{MEMORY_BASE_BYTES, MEMORY_PER_CRONJOB_BYTES};
use super::spread_comparison::{Comparison, Drain};
use super::units::{MIB, mib, tidy, utc, utc_second};

/// The formula the plan states, in the text and the JSON.
const FORMULA: &str = "needed_create_rate = 0.99 * H / T";

/// The plan for a person.
pub(crate) fn render_text(plan: &Plan) -> String {
    let (load, stats) = (&plan.load, &plan.stats);
    let mut out = String::new();
    let _ = writeln!(out, "Window: {} + {} h", utc(plan.window.start), plan.window.hours);
    let _ = writeln!(
        out,
        "CronJobs: {} total, {} valid, {} suspended, {} invalid",
        load.total,
        load.valid,
        load.suspended,
        load.invalid.len()
    );
    for bad in load.invalid.iter().take(SHOWN) {
        let _ = writeln!(out, "  invalid {}: {}", bad.name, bad.reason);
    }
    if load.invalid.len() > SHOWN {
        let _ = writeln!(out, "  ... and {} more (-o json lists them all)", load.invalid.len() - SHOWN);
    }
    let _ = writeln!(out, "Runs: {} in {} h ({} per day)", plan.runs, plan.window.hours, fmt_num(plan.runs_per_day()));
    let _ = writeln!(
        out,
        "Runs per minute: mean {}, p50 {}, p99 {}, max {}",
        fmt_num(stats.mean),
        stats.p50,
        stats.p99,
        stats.max
    );
    if plan.herds.is_empty() {
        let _ = writeln!(out, "Largest herds: none (no runs in the window)");
    } else {
        let _ = writeln!(out, "Largest herds (minute UTC, runs due):");
        for herd in &plan.herds {
            let _ = writeln!(out, "  {}  {}", utc_second(herd.minute), herd.runs);
        }
    }
    let _ = writeln!(
        out,
        "API writes: {WRITES_PER_RUN} per run (Job create, CronJob status update, Event, Job delete in history \
         cleanup): {} per day, {} in the peak minute",
        fmt_num(plan.writes_per_day()),
        stats.max * WRITES_PER_RUN
    );
    write_capacity(&mut out, plan);
    write_cluster(&mut out, &plan.cluster);
    if let Some(spread) = &plan.spread {
        write_spread(&mut out, spread);
    }
    out
}

/// The window without and with `--spread`.
fn write_spread(out: &mut String, c: &Comparison) {
    let _ = writeln!(
        out,
        "Spread --spread {}: moves {} CronJobs ({} have their own cronshard.io/spread, {} selected have a schedule \
         too short for it); runs created at {}/s, first come first served:",
        c.text,
        c.spread_by_flag,
        c.own_annotation,
        c.unsuited,
        fmt_num(c.rate)
    );
    let _ = writeln!(out, "                         without   with");
    let row = |label: &str, a: String, b: String| format!("  {label:<22} {a:>8} {b:>6}");
    let _ = writeln!(
        out,
        "{}",
        row("most runs due in 1 s", c.without.peak_due_per_s.to_string(), c.with.peak_due_per_s.to_string())
    );
    let seconds = |x: f64| format!("{} s", fmt_num(x));
    let _ = writeln!(out, "{}", row("p99 skew", seconds(c.without.p99_skew_s), seconds(c.with.p99_skew_s)));
    let _ = writeln!(out, "{}", row("max skew", seconds(c.without.max_skew_s), seconds(c.with.max_skew_s)));
    let _ = writeln!(
        out,
        "  Skew of a spread run counts from its scheduled time plus its offset: a spread run starts up to {} later \
         than its schedule says.",
        c.text
    );
}

fn spread_json(c: &Comparison) -> Value {
    let drain = |d: &Drain| json!({"peak_due_per_s": d.peak_due_per_s, "p99_skew_s": tidy(d.p99_skew_s), "max_skew_s": tidy(d.max_skew_s)});
    json!({
        "spread": c.text,
        "cronjobs_moved": c.spread_by_flag,
        "cronjobs_with_own_spread": c.own_annotation,
        "cronjobs_unsuited": c.unsuited,
        "create_rate": tidy(c.rate),
        "without": drain(&c.without),
        "with": drain(&c.with),
    })
}

/// The capacity part of the text: the formula with its numbers, then the recommendation.
fn write_capacity(out: &mut String, plan: &Plan) {
    let (load, c, s) = (&plan.load, &plan.capacity, &plan.settings);
    let t = fmt_num(c.skew_target_s);
    let _ = writeln!(out, "Plan for a p99 skew of at most {t} s (largest herd H = {} runs, T = {t} s):", c.herd);
    let _ = writeln!(
        out,
        "  Job creates needed: {FORMULA} = {}/s (only creates are on the critical path: each replica's \
         limiter sends them first)",
        fmt_num(c.needed_create_rate)
    );
    if c.server_limited {
        let a = fmt_num(s.admitted_writes_per_s);
        let _ = writeln!(
            out,
            "  The API server admits {a} writes/s, shared by all replicas: no replica count reaches a p99 of {t} s."
        );
        let _ = writeln!(out, "  Achievable p99 skew = 0.99 * H / {a} = {} s", fmt_num(c.achievable_p99_skew_s));
    }
    if s.qps > 0.0 {
        let _ = writeln!(
            out,
            "  replicas for the client budget = ceil({} / --qps {}) = {}",
            fmt_num(c.client_rate),
            fmt_num(s.qps),
            c.replicas_for_qps
        );
    } else {
        let _ = writeln!(out, "  replicas for the client budget: {} (--qps 0: unlimited)", c.replicas_for_qps);
    }
    let _ = writeln!(
        out,
        "  replicas for memory = ceil({} CronJobs * {} KiB / ({} MiB - {} MiB)) = {}",
        load.total,
        fmt_num(MEMORY_PER_CRONJOB_BYTES as f64 / 1024.0),
        fmt_num(mib(s.memory_per_replica)),
        MEMORY_BASE_BYTES / MIB,
        c.replicas_for_memory
    );
    let _ = writeln!(
        out,
        "  replicas: {} (the largest of the two, at least {MIN_REPLICAS} for availability; limited by {})",
        c.replicas, c.limited_by
    );
    let _ = writeln!(out, "  --qps per replica: {}", c.qps_per_replica);
    let _ = writeln!(
        out,
        "  --deployment-qps: {} (where the replicas' shared rate starts: the server's admitted writes; it adapts from there)",
        fmt_num(c.planned_rate.ceil())
    );
    let _ = writeln!(out, "  memory per replica: about {} MiB at peak", fmt_num(mib(c.memory_per_replica).ceil()));
    if !c.server_limited {
        let _ = writeln!(out, "  achievable p99 skew: {} s", fmt_num(c.achievable_p99_skew_s));
    }
}

/// The whole cluster's part of the text: each client's need with its flags, then the
/// herd's drain at the cluster's settings now.
fn write_cluster(out: &mut String, c: &ClusterPlan) {
    let t = fmt_num(c.start_target_s);
    let _ = writeln!(
        out,
        "Whole cluster: the largest herd's pods running within {t} s of their due time (--start-target), \
         H = {} runs:",
        c.herd
    );
    let (jc_now, scheduler_now) = c.settings_now;
    let need = |name: &str, unit: &str, n: &Need, now: super::cluster::Client| {
        format!(
            "  {name}: {} requests per {unit} * H / {t} s = {}/s needed; at {} QPS, burst {} (now) the herd waits {} s \
             for it",
            fmt_num(n.requests_per_run),
            fmt_num(n.needed_qps),
            fmt_num(now.qps),
            fmt_num(now.burst),
            fmt_num(n.drain_now_s)
        )
    };
    let jc = &c.job_controller;
    let _ = writeln!(out, "{}", need("Job controller", "run", jc, jc_now));
    let _ = writeln!(
        out,
        "    kube-controller-manager --kube-api-qps {} --kube-api-burst {} --concurrent-job-syncs {}",
        jc.qps, jc.burst, c.job_syncs
    );
    let s = &c.scheduler;
    let _ = writeln!(out, "{}", need("kube-scheduler", "pod", s, scheduler_now));
    let _ = writeln!(
        out,
        "    kube-scheduler --kube-api-qps {} --kube-api-burst {} (clientConnection.qps and .burst in its configuration file)",
        s.qps, s.burst
    );
    let _ = writeln!(
        out,
        "  Predicted end-to-end herd drain now: {} s (limited by {})",
        fmt_num(c.predicted_drain_s),
        c.limited_by
    );
}

fn cluster_json(c: &ClusterPlan) -> Value {
    let need = |n: &Need| {
        json!({
            "requests_per_run": tidy(n.requests_per_run),
            "needed_qps": tidy(n.needed_qps),
            "qps": n.qps,
            "burst": n.burst,
            "drain_now_s": tidy(n.drain_now_s),
        })
    };
    let mut job_controller = need(&c.job_controller);
    job_controller["concurrent_job_syncs"] = json!(c.job_syncs);
    json!({
        "start_target_s": tidy(c.start_target_s),
        "largest_herd": c.herd,
        "job_controller": job_controller,
        "scheduler": need(&c.scheduler),
        "predicted_drain_s": tidy(c.predicted_drain_s),
        "limited_by": c.limited_by,
    })
}

/// The plan for a script: the same numbers as the text, tidied of float noise.
pub(crate) fn to_json(plan: &Plan) -> Value {
    let (load, stats, c) = (&plan.load, &plan.stats, &plan.capacity);
    let invalid: Vec<Value> = load.invalid.iter().map(|i| json!({"name": i.name, "reason": i.reason})).collect();
    let herds: Vec<Value> =
        plan.herds.iter().map(|h| json!({"minute": utc_second(h.minute), "runs": h.runs})).collect();
    let mut value = json!({
        "cronjobs": {
            "total": load.total,
            "valid": load.valid,
            "suspended": load.suspended,
            "invalid": load.invalid.len(),
        },
        "invalid": invalid,
        "window": {"from": utc(plan.window.start), "hours": plan.window.hours},
        "runs": {"total": plan.runs, "per_day": tidy(plan.runs_per_day())},
        "per_minute": {"mean": tidy(stats.mean), "p50": stats.p50, "p99": stats.p99, "max": stats.max},
        "herds": herds,
        "writes": {
            "per_run": WRITES_PER_RUN,
            "per_day": tidy(plan.writes_per_day()),
            "peak_minute": stats.max * WRITES_PER_RUN,
        },
        "plan": {
            "formula": FORMULA,
            "largest_herd": c.herd,
            "skew_target_s": tidy(c.skew_target_s),
            "needed_create_rate": tidy(c.needed_create_rate),
            "replicas_for_qps": c.replicas_for_qps,
            "replicas_for_memory": c.replicas_for_memory,
            "replicas": c.replicas,
            "qps_per_replica": c.qps_per_replica,
            "deployment_qps": c.planned_rate.ceil(),
            "memory_per_replica_mib": mib(c.memory_per_replica).ceil(),
            "achievable_p99_skew_s": tidy(c.achievable_p99_skew_s),
            "limited_by": c.limited_by,
        },
    });
    value["cluster"] = cluster_json(&plan.cluster);
    if let Some(spread) = &plan.spread {
        value["spread"] = spread_json(spread);
    }
    value
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plan::model::compute;
    use crate::plan::testkit::{cronjob, settings, window};
    use crate::plan::units::MIB;

    #[test]
    fn text_and_json_show_the_plan() {
        let mut broken = cronjob("broken", "61 * * * *");
        broken["metadata"]["namespace"] = json!("other");
        let items = [cronjob("five", "*/5 * * * *"), cronjob("hourly", "0 * * * *"), broken];
        let plan = compute(&items, window("2026-12-01T00:00:00Z", 2), settings(1.0, 1000.0, 1000.0, 512 * MIB));
        let text = render_text(&plan);
        assert!(text.contains("CronJobs: 3 total, 2 valid, 0 suspended, 1 invalid\n"), "{text}");
        assert!(text.contains("  invalid other/broken: UnparseableSchedule: "), "{text}");
        assert!(text.contains("Runs: 26 in 2 h (312 per day)\n"), "{text}");
        assert!(text.contains("Runs per minute: mean 0.217, p50 0, p99 2, max 2\n"), "{text}");
        assert!(text.contains("  2026-12-01T00:00:00Z  2\n  2026-12-01T01:00:00Z  2\n  2026-12-01T00:05:00Z  1\n"));
        assert!(text.contains(": 1248 per day, 8 in the peak minute\n"), "{text}");
        assert!(text.contains("needed_create_rate = 0.99 * H / T = 1.98/s"), "{text}");
        let value = to_json(&plan);
        assert_eq!(value["cronjobs"], json!({"total": 3, "valid": 2, "suspended": 0, "invalid": 1}));
        assert_eq!(value["herds"][0], json!({"minute": "2026-12-01T00:00:00Z", "runs": 2}));
        assert_eq!(value["window"], json!({"from": "2026-12-01T00:00:00Z", "hours": 2}));
        assert_eq!(value["plan"]["needed_create_rate"], json!(1.98));
        assert_eq!(value["plan"]["replicas"], json!(2));
        assert_eq!(value["writes"]["peak_minute"], json!(8));
    }
}
