//! The report: `report.json` in the shape of spec/benchmarks.md, a table, and an SVG picture
//! (skew over time per arm; herd drain time against its lower bound).

use std::fmt::Write as _;

use serde::Serialize;

use crate::analysis::Analysis;

#[derive(Clone, Debug, Serialize)]
pub struct SimReport {
    pub admitted_writes_per_s: f64,
    pub compaction_interval_s: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ArmReport {
    pub name: String,
    pub replicas: usize,
    /// What the arm is: cronshard, or a re-implementation of an upstream algorithm.
    pub kind: String,
    #[serde(flatten)]
    pub analysis: Analysis,
    pub cpu_s: Vec<f64>,
    pub peak_rss_mb: Vec<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub scenario: String,
    pub cronjobs: usize,
    pub window_s: f64,
    pub date: String,
    pub machine: String,
    pub sim: SimReport,
    pub arms: Vec<ArmReport>,
}

/// The table printed on stdout.
pub fn table(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scenario {} · {} CronJobs · window {} s · admitted writes {}/s",
        report.scenario, report.cronjobs, report.window_s, report.sim.admitted_writes_per_s
    );
    let _ = writeln!(
        out,
        "{:<13} {:>8} {:>8} {:>7} {:>5} {:>8} {:>8} {:>9} {:>13} {:>6} {:>6} {:>7} {:>8}",
        "arm",
        "expected",
        "created",
        "missed",
        "dup",
        "p50 s",
        "p99 s",
        "max s",
        "worst herd",
        "410s",
        "429s",
        "cpu s",
        "rss MB"
    );
    for a in &report.arms {
        let x = &a.analysis;
        let herd = x
            .herds
            .iter()
            .map(|h| match h.drain_s {
                Some(d) => format!("{d:.1}/{:.1}", h.lower_bound_s),
                None => format!("-/{:.1}", h.lower_bound_s),
            })
            .max_by_key(String::len)
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            out,
            "{:<13} {:>8} {:>8} {:>7} {:>5} {:>8.2} {:>8.2} {:>9.2} {:>13} {:>6} {:>6} {:>7.1} {:>8.0}",
            a.name,
            x.expected,
            x.created,
            x.missed,
            x.duplicates,
            x.skew_s.p50,
            x.skew_s.p99,
            x.skew_s.max,
            herd,
            x.http_410,
            x.http_429,
            a.cpu_s.iter().fold(0.0, |t, c| t + c),
            a.peak_rss_mb.iter().copied().fold(0.0, f64::max),
        );
    }
    let _ = writeln!(out, "(worst herd: drain s / lower bound s; '-' drain: some runs of that herd never came)");
    out
}

const COLORS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"];

/// Skew of every run against its scheduled time, one colour per arm (log scale), and drain
/// time of each arm's herds next to the lower bound.
pub fn svg(report: &Report) -> String {
    let (w, h, left, top, plot_w, plot_h) = (900.0, 520.0, 70.0, 40.0, 560.0, 400.0);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{left}\" y=\"20\" font-size=\"14\">{}: skew of each run (log scale) against when it was created</text>\n",
        report.scenario
    );
    let y_of = |skew: f64| {
        let v = skew.max(0.01).log10(); // 10 ms .. 1000 s
        top + plot_h - (v + 2.0) / 5.0 * plot_h
    };
    let x_of = |t: f64| left + (t / report.window_s.max(1.0)).clamp(0.0, 1.0) * plot_w;
    for (label, v) in
        [("0.01 s", 0.01), ("0.1 s", 0.1), ("1 s", 1.0), ("10 s", 10.0), ("100 s", 100.0), ("1000 s", 1000.0)]
    {
        let y = y_of(v);
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"5\" y=\"{:.1}\">{label}</text>",
            left + plot_w,
            y + 4.0
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\">Job created, seconds into the window</text>",
        left + 150.0,
        top + plot_h + 30.0
    );
    for (i, arm) in report.arms.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        // At most 1,500 points per arm keep the file small.
        let step = (arm.analysis.skews.len() / 1500).max(1);
        for (t, skew) in arm.analysis.skews.iter().step_by(step) {
            let _ = writeln!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"1.5\" fill=\"{color}\" fill-opacity=\"0.5\"/>",
                x_of(*t),
                y_of(*skew)
            );
        }
        let _ = writeln!(
            s,
            "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{color}\"/><text x=\"{}\" y=\"{}\">{} (missed {})</text>",
            left + plot_w + 20.0,
            top + 10.0 + i as f64 * 18.0,
            left + plot_w + 35.0,
            top + 19.0 + i as f64 * 18.0,
            arm.name,
            arm.analysis.missed
        );
    }
    // Herd bars: drain vs lower bound for each arm's largest herd.
    let bars_top = top + 40.0 + report.arms.len() as f64 * 18.0;
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{bars_top}\">largest herd: drain (bar) vs lower bound (line)</text>",
        left + plot_w + 20.0
    );
    let longest = report
        .arms
        .iter()
        .flat_map(|a| a.analysis.herds.iter())
        .map(|hd| hd.drain_s.unwrap_or(hd.lower_bound_s).max(hd.lower_bound_s))
        .fold(1.0, f64::max);
    for (i, arm) in report.arms.iter().enumerate() {
        let Some(herd) = arm.analysis.herds.iter().max_by_key(|hd| hd.jobs) else { continue };
        let y = bars_top + 12.0 + i as f64 * 22.0;
        let scale = 230.0 / longest;
        let x0 = left + plot_w + 20.0;
        let drain = herd.drain_s.unwrap_or(longest);
        let _ = writeln!(
            s,
            "<rect x=\"{x0}\" y=\"{y}\" width=\"{:.1}\" height=\"14\" fill=\"{}\" fill-opacity=\"{}\"/>",
            drain * scale,
            COLORS[i % COLORS.len()],
            if herd.drain_s.is_some() { "0.8" } else { "0.25" }
        );
        let lb = x0 + herd.lower_bound_s * scale;
        let _ = writeln!(
            s,
            "<line x1=\"{lb:.1}\" x2=\"{lb:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"black\" stroke-width=\"2\"/>",
            y - 2.0,
            y + 16.0
        );
    }
    s.push_str("</svg>\n");
    s
}
