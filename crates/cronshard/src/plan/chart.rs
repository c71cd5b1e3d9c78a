//! The plan as a picture: runs due per minute over the window against the planned capacity.

use std::fmt::Write as _;

use super::model::Plan;
use super::{fmt_num, utc, utc_second};

/// Runs due per minute as bars on a log scale, hour ticks in UTC, and the plan's create
/// capacity per minute as a line.
pub fn svg(plan: &Plan) -> String {
    let (width, height, left, top, plot_w, plot_h) = (1000.0, 490.0, 70.0, 80.0, 880.0, 340.0);
    let bottom = top + plot_h;
    let right = left + plot_w;
    let minutes = plan.load.per_minute.len().max(1) as f64;
    let line = plan.capacity.planned_rate * 60.0;
    // A log scale: a 1 s target puts the capacity line about 60 times above the largest herd.
    let decades = (plan.stats.max as f64).max(line).max(1.0).log10().ceil().max(1.0);
    let floor = 0.5_f64.log10();
    let y_of = |v: f64| bottom - (v.max(0.5).log10() - floor) / (decades - floor) * plot_h;
    let x_of = |minute: f64| left + minute / minutes * plot_w;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{left}\" y=\"22\" font-size=\"15\">cronshard plan: runs due per minute, {} + {} h ({} runs)</text>\n",
        utc(plan.window.start),
        plan.window.hours,
        plan.runs
    );
    let mut value: u64 = 1;
    for _ in 0..=(decades as u32) {
        let y = y_of(value as f64);
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" x2=\"{right}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{value}</text>",
            left - 6.0,
            y + 4.0
        );
        value = value.saturating_mul(10);
    }
    let _ = writeln!(s, "<text x=\"5\" y=\"{}\">runs / minute</text>", top - 8.0);
    // Hour ticks, at most about a dozen labels, aligned to UTC midnight.
    let hours = i64::from(plan.window.hours);
    let step = [1_i64, 2, 3, 6, 12, 24].into_iter().find(|h| hours / h <= 12).unwrap_or(24) * 3600;
    let mut t = plan.window.start_s.div_euclid(step) * step;
    if t < plan.window.start_s {
        t += step;
    }
    let mut first = true;
    while t <= plan.window.end_s {
        let x = x_of(((t - plan.window.start_s) / 60) as f64);
        let stamp = utc_second(t);
        let hhmm = stamp.get(11..16).unwrap_or("");
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top}\" y2=\"{}\" stroke=\"#eee\"/>\
             <text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{hhmm}</text>",
            bottom + 5.0,
            bottom + 18.0
        );
        // The date under the first tick and under every midnight.
        if first || hhmm == "00:00" {
            let _ = writeln!(
                s,
                "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"#666\">{}</text>",
                bottom + 32.0,
                stamp.get(0..10).unwrap_or("")
            );
        }
        first = false;
        t += step;
    }
    let _ =
        writeln!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">UTC</text>", left + plot_w / 2.0, bottom + 52.0);
    // One path of vertical strokes, one per minute with runs.
    let mut d = String::new();
    for (index, &runs) in plan.load.per_minute.iter().enumerate() {
        if runs > 0 {
            let _ = write!(d, "M{:.2} {bottom:.1}V{:.1}", x_of(index as f64 + 0.5), y_of(runs as f64));
        }
    }
    if !d.is_empty() {
        let _ = writeln!(
            s,
            "<path d=\"{d}\" stroke=\"#1f77b4\" stroke-width=\"{:.2}\" fill=\"none\"/>",
            (plot_w / minutes).max(1.0)
        );
    }
    let c = &plan.capacity;
    let y = y_of(line);
    let _ = writeln!(
        s,
        "<line x1=\"{left}\" x2=\"{right}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\
         <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#d62728\">plan: {} Job creates/min ({} replicas x {}/s, p99 skew {} s)</text>",
        right - 4.0,
        y - 5.0,
        fmt_num(line),
        c.replicas,
        c.qps_per_replica,
        fmt_num(c.achievable_p99_skew_s)
    );
    let _ = writeln!(
        s,
        "<line x1=\"{left}\" x2=\"{left}\" y1=\"{top}\" y2=\"{bottom}\" stroke=\"black\"/>\
         <line x1=\"{left}\" x2=\"{right}\" y1=\"{bottom}\" y2=\"{bottom}\" stroke=\"black\"/>"
    );
    // Legend, under the title, above the plot (the capacity line's label may be at its top).
    let _ = writeln!(
        s,
        "<rect x=\"{left}\" y=\"31\" width=\"12\" height=\"12\" fill=\"#1f77b4\"/>\
         <text x=\"{}\" y=\"41\">runs due per minute (log scale)</text>\n\
         <line x1=\"{left}\" x2=\"{}\" y1=\"53\" y2=\"53\" stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\
         <text x=\"{}\" y=\"57\">planned Job create capacity per minute</text>",
        left + 18.0,
        left + 12.0,
        left + 18.0
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plan::MIB;
    use crate::plan::model::compute;
    use crate::plan::testkit::{cronjob, settings, window};

    #[test]
    fn the_svg_shows_the_plan() {
        let mut broken = cronjob("broken", "61 * * * *");
        broken["metadata"]["namespace"] = json!("other");
        let items = [cronjob("five", "*/5 * * * *"), cronjob("hourly", "0 * * * *"), broken];
        let plan = compute(&items, window("2026-12-01T00:00:00Z", 2), settings(1.0, 1000.0, 1000.0, 512 * MIB));
        let picture = svg(&plan);
        assert!(picture.starts_with("<svg "), "{picture}");
        assert!(picture.ends_with("</svg>\n"));
        assert!(picture.contains(">00:00<") && picture.contains(">01:00<") && picture.contains(">02:00<"));
        assert!(picture.contains("planned Job create capacity per minute"));
    }
}
