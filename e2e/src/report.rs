//! The report: `report.json` in the shape docs/benchmarks.md ("Report") gives, a table, and an SVG picture
//! (skew over time per arm; herd drain time against its lower bound).

use std::fmt::Write as _;

use cronshard::plot::{self, Area, DrawError, FONT, LegendEntry, Mark, TEXT, TITLE, number, text_style, text_width};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Serialize;

use crate::analysis::{Analysis, Herd};

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
    /// CPU seconds of the simulator serving the arm (it shares the machine's cores).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sim_cpu_s: Option<f64>,
    /// With `--shadow`: `cronshard shadow`'s verdicts beside the audit log's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadow: Option<crate::shadow::ShadowCheck>,
    /// With `--target kube` or `cluster`: the real control plane's bound and processes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube: Option<KubeArm>,
    /// With `--target cluster`: each hop of the runs whose pods ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hops: Option<crate::hops::Hops>,
    /// With `--target cluster`: due time until the pod runs, and the largest herd's drain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_to_end: Option<crate::hops::EndToEnd>,
}

/// CPU seconds and peak RSS of one process.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessUsage {
    pub name: String,
    pub cpu_s: f64,
    pub peak_rss_mb: f64,
}

/// An arm on a real control plane: what a plain client achieved there, and what the control
/// plane's own processes used (they share the machine with the controllers).
#[derive(Clone, Debug, Serialize)]
pub struct KubeArm {
    /// Job creates per second by a plain client doing nothing else, on the same apiserver and etcd.
    pub bound_creates_per_s: f64,
    /// `--target cluster`: a plain client's as many Jobs as the largest herd, created at once,
    /// until every one of their pods runs (seconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_to_end_bound_s: Option<f64>,
    /// `--target cluster`: the whole cluster's settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<crate::hops::ClusterInfo>,
    pub processes: Vec<ProcessUsage>,
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
    let server = if report.arms.iter().any(|a| a.kube.is_some()) {
        "a real control plane (bounds measured per arm, below)".to_owned()
    } else {
        format!("admitted writes {}/s", report.sim.admitted_writes_per_s)
    };
    let _ = writeln!(
        out,
        "scenario {} · {} CronJobs · window {} s · {server}",
        report.scenario, report.cronjobs, report.window_s
    );
    let w = report.arms.iter().map(|a| a.name.len()).max().unwrap_or(0).max(13);
    let _ = writeln!(
        out,
        "{:<w$} {:>8} {:>8} {:>7} {:>5} {:>8} {:>8} {:>9} {:>13} {:>7} {:>6} {:>6} {:>7} {:>8}",
        "arm",
        "expected",
        "created",
        "missed",
        "dup",
        "p50 s",
        "p99 s",
        "max s",
        "worst herd",
        "peak/s",
        "410s",
        "429s",
        "cpu s",
        "rss MB"
    );
    for a in &report.arms {
        let x = &a.analysis;
        // The worst is the one furthest over its bound; one that never drained is worse still.
        let over = |h: &&crate::analysis::Herd| h.drain_s.map_or(f64::INFINITY, |d| d / h.lower_bound_s.max(1e-9));
        let herd = x
            .herds
            .iter()
            .max_by(|a, b| over(a).total_cmp(&over(b)))
            .map(|h| match h.drain_s {
                Some(d) => format!("{d:.1}/{:.1}", h.lower_bound_s),
                None => format!("-/{:.1}", h.lower_bound_s),
            })
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            out,
            "{:<w$} {:>8} {:>8} {:>7} {:>5} {:>8.2} {:>8.2} {:>9.2} {:>13} {:>7} {:>6} {:>6} {:>7.1} {:>8.0}",
            a.name,
            x.expected,
            x.created,
            x.missed,
            x.duplicates,
            x.skew_s.p50,
            x.skew_s.p99,
            x.skew_s.max,
            herd,
            x.peak_creates_per_s,
            x.http_410,
            x.http_429,
            a.cpu_s.iter().fold(0.0, |t, c| t + c),
            a.peak_rss_mb.iter().copied().fold(0.0, f64::max),
        );
    }
    let _ = writeln!(
        out,
        "(worst herd: drain s / lower bound s; '-' drain: some runs of that herd never came; peak/s: most Job creates in one second)"
    );
    crate::work::table(report.arms.iter().map(|a| (a.name.as_str(), &a.analysis.work, a.sim_cpu_s)), &mut out);
    crate::shadow::lines(report.arms.iter().filter_map(|a| a.shadow.as_ref().map(|c| (a.name.as_str(), c))), &mut out);
    kube_lines(report, &mut out);
    let hops = report.arms.iter().filter_map(|a| {
        let bound = a.kube.as_ref().and_then(|k| k.end_to_end_bound_s);
        Some((a.name.as_str(), a.hops.as_ref()?, a.end_to_end.as_ref()?, bound))
    });
    crate::hops::lines(hops, &mut out);
    for a in report.arms.iter().filter(|a| a.analysis.off_schedule > 0) {
        let n = a.analysis.off_schedule;
        let _ = writeln!(out, "{}: {n} Jobs for times their schedules do not have (a correctness failure)", a.name);
    }
    out
}

const COLORS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];
const GRID: RGBColor = RGBColor(0xe4, 0xe4, 0xe4);
const SIZE: (u32, u32) = (1100, 620);
/// The skew axis: 10 ms to 1000 s; skews outside are drawn at its ends.
const SKEW: (f64, f64) = (0.01, 1000.0);
/// At most this many points per arm keep the file small.
const MOST_POINTS: usize = 1500;
/// Herd rows are this many units apart: integer coordinates (which plotters' mesh labels with
/// our names) with room for a bar thinner than its row.
const ROW: i32 = 10;

fn color(arm: usize) -> RGBColor {
    COLORS[arm % COLORS.len()]
}

/// Skew of every run against its scheduled time, one colour per arm (log scale), and the drain
/// time of each arm's largest herd against its lower bound.
pub fn svg(report: &Report) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        draw(&root, report).and_then(|()| root.present()).map_err(|e| format!("drawing report.svg: {e}"))?;
    }
    Ok(out)
}

fn draw(root: &Area<'_>, report: &Report) -> Result<(), DrawError> {
    root.fill(&WHITE)?;
    let title = format!(
        "{}: {} CronJobs, {} s window, {} writes/s admitted",
        report.scenario,
        report.cronjobs,
        number(report.window_s),
        number(report.sim.admitted_writes_per_s)
    );
    let body = root.titled(&title, (FONT, TITLE))?;
    let mut entries: Vec<LegendEntry> = (report.arms.iter().enumerate())
        .map(|(i, a)| LegendEntry::new(Mark::Dot(color(i)), format!("{} (missed {})", a.name, a.analysis.missed)))
        .collect();
    entries.push(LegendEntry::new(Mark::Line(BLACK), "a herd's lower bound: its Jobs / writes admitted per s"));
    let (key, rest) = body.split_vertically(plot::legend_height(&entries, body.dim_in_pixel().0));
    plot::draw_legend(&key, &entries)?;
    // The herd panel gets room for the arms' names and a plot of at least 360 px beside them.
    let width = rest.dim_in_pixel().0;
    let names = report.arms.iter().map(|a| text_width(&a.name, TEXT)).max().unwrap_or(0);
    let herd_width = (names + 45 + 35 + 360).clamp(width * 2 / 5, width * 11 / 20);
    let (skews, herds) = rest.split_horizontally(width - herd_width);
    skew_chart(&skews, report)?;
    herd_chart(&herds, report)
}

fn skew_chart(area: &Area<'_>, report: &Report) -> Result<(), DrawError> {
    let window = report.window_s.max(1.0);
    let decades = vec![0.01, 0.1, 1.0, 10.0, 100.0, 1000.0];
    let mut chart = ChartBuilder::on(area)
        .caption("skew of each run against when its Job was created", (FONT, TEXT))
        .margin(10)
        .margin_right(25)
        .x_label_area_size(55)
        .y_label_area_size(text_width("1000 s", TEXT) + 45)
        .build_cartesian_2d(0.0..window, (SKEW.0..SKEW.1).log_scale().with_key_points(decades))?;
    chart
        .configure_mesh()
        .x_desc("Job created, seconds into the window")
        .y_desc("skew (log scale)")
        .x_labels(8)
        .x_label_formatter(&|t| number(*t))
        .y_label_formatter(&|s| format!("{} s", number(*s)))
        .label_style((FONT, TEXT))
        .axis_desc_style((FONT, TEXT))
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .draw()?;
    for (i, arm) in report.arms.iter().enumerate() {
        let step = (arm.analysis.skews.len() / MOST_POINTS).max(1);
        let style = color(i).mix(0.5).filled();
        chart.draw_series(
            arm.analysis
                .skews
                .iter()
                .step_by(step)
                .map(|&(t, skew)| Circle::new((t.clamp(0.0, window), skew.clamp(SKEW.0, SKEW.1)), 2, style)),
        )?;
    }
    Ok(())
}

/// Each arm's largest herd, by its Jobs.
fn largest_herd(arm: &ArmReport) -> Option<&Herd> {
    arm.analysis.herds.iter().max_by_key(|h| h.jobs)
}

/// One row per arm, first at the top: its largest herd's drain as a bar with its number, faded
/// to the axis's end when some runs never came, and the herd's lower bound as a black line.
fn herd_chart(area: &Area<'_>, report: &Report) -> Result<(), DrawError> {
    let longest = (report.arms.iter().filter_map(largest_herd))
        .map(|h| h.drain_s.unwrap_or(h.lower_bound_s).max(h.lower_bound_s))
        .fold(1.0, f64::max);
    // At least three rows, so one arm's bar is not as tall as the chart.
    let arms = i32::try_from(report.arms.len()).unwrap_or(i32::MAX);
    let rows = arms.max(3);
    let row_of = |i: usize| (rows - 1 - i32::try_from(i).unwrap_or(0)) * ROW;
    let names_w = report.arms.iter().map(|a| text_width(&a.name, TEXT)).max().unwrap_or(0);
    let mut chart = ChartBuilder::on(area)
        .caption("largest herd: drain time (bar) vs lower bound (line)", (FONT, TEXT))
        .margin(10)
        .margin_right(25)
        .x_label_area_size(55)
        .y_label_area_size(names_w + 45)
        .build_cartesian_2d(
            // Room right of the longest bar for its number.
            0.0..longest * 1.3,
            (-ROW / 2..rows * ROW - ROW / 2).with_key_points((0..arms).map(|i| (rows - 1 - i) * ROW).collect()),
        )?;
    let name = |y: &i32| {
        let index = usize::try_from(rows - 1 - y / ROW).unwrap_or(usize::MAX);
        report.arms.get(index).map(|a| a.name.clone()).unwrap_or_default()
    };
    chart
        .configure_mesh()
        .x_desc("seconds from the herd's minute to its last Job")
        .y_desc("arm")
        .x_labels(6)
        .x_label_formatter(&|s| number(*s))
        .y_label_formatter(&name)
        .label_style((FONT, TEXT))
        .axis_desc_style((FONT, TEXT))
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .draw()?;
    for (i, arm) in report.arms.iter().enumerate() {
        let y = row_of(i);
        let Some(herd) = largest_herd(arm) else {
            let note = Text::new("no herd", (4, 0), text_style(TEXT, BLACK, HPos::Left, VPos::Center));
            chart.draw_series(std::iter::once(EmptyElement::at((0.0, y)) + note))?;
            continue;
        };
        herd_row(&mut chart, herd, y, color(i), longest)?;
    }
    Ok(())
}

type HerdChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::combinators::WithKeyPoints<plotters::coord::types::RangedCoordi32>,
    >,
>;

/// One herd's bar with its number, and its lower bound as a line with its number.
fn herd_row(
    chart: &mut HerdChart<'_, '_>,
    herd: &Herd,
    y: i32,
    color: RGBColor,
    longest: f64,
) -> Result<(), DrawError> {
    let bound = herd.lower_bound_s;
    // Right of the bar (and of the line, when the bound is past the bar); under the faded bar
    // that stands for a drain that never ended, where the line does not cross it.
    let (end, fill, label, at, offset, v) = match herd.drain_s {
        Some(d) => (d, color.mix(0.85), format!("{} s", number(d)), (d.max(bound), y), (6, 0), VPos::Center),
        None => (longest, color.mix(0.25), "some runs never came".to_owned(), (0.0, y - 3), (0, 2), VPos::Top),
    };
    chart.draw_series(std::iter::once(Rectangle::new([(0.0, y - 2), (end, y + 2)], fill.filled())))?;
    chart
        .draw_series(std::iter::once(PathElement::new(vec![(bound, y - 3), (bound, y + 3)], BLACK.stroke_width(2))))?;
    let style = text_style(TEXT, BLACK, HPos::Left, v);
    chart.draw_series(std::iter::once(EmptyElement::at(at) + Text::new(label, offset, style)))?;
    // Above the line, on the side with room.
    let side = if bound > longest * 0.5 { HPos::Right } else { HPos::Left };
    let text = format!("{} Jobs, bound {} s", herd.jobs, number(bound));
    let style = text_style(TEXT, BLACK, side, VPos::Bottom);
    chart.draw_series(std::iter::once(EmptyElement::at((bound, y + 3)) + Text::new(text, (0, -3), style)))?;
    Ok(())
}

/// With `--target kube`: a line per arm, its herd against the measured bound and what the
/// control plane's processes used.
fn kube_lines(report: &Report, out: &mut String) {
    for (a, k) in report.arms.iter().filter_map(|a| a.kube.as_ref().map(|k| (a, k))) {
        let x = &a.analysis;
        // The largest herd, judged against the measured bound; without one (a herd smaller
        // than a second of the bound) every run is due at one instant, and the longest skew
        // is its drain time.
        let largest = x.herds.iter().max_by_key(|h| h.jobs);
        let (jobs, drain_s) = match largest {
            Some(h) => (h.jobs, h.drain_s),
            None => (x.expected, (x.missed == 0).then_some(x.skew_s.max)),
        };
        let bound_s = jobs as f64 / k.bound_creates_per_s.max(1e-9);
        let herd = match drain_s {
            Some(d) => {
                format!(
                    "the herd of {jobs} drained in {d:.1} s, {:.2}x the bound's {bound_s:.1} s",
                    d / bound_s.max(1e-9)
                )
            }
            None => {
                format!("some of the herd's {jobs} runs did not come within the window ({} missed in all)", x.missed)
            }
        };
        let processes: Vec<String> =
            k.processes.iter().map(|p| format!("{} {:.1} s CPU, {:.0} MB", p.name, p.cpu_s, p.peak_rss_mb)).collect();
        let _ = writeln!(
            out,
            "{} on the real control plane: plain-client bound {:.0} Job creates/s; {herd}; {}",
            a.name,
            k.bound_creates_per_s,
            processes.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Percentiles;

    /// The text of every `<text>` element, trimmed; the SVG must be XML.
    fn texts(svg: &str) -> Vec<String> {
        let doc = roxmltree::Document::parse(svg).expect("the SVG is XML");
        doc.descendants().filter(|n| n.has_tag_name("text")).map(|n| n.text().unwrap_or("").trim().to_owned()).collect()
    }

    fn herd(jobs: usize, drain_s: Option<f64>) -> Herd {
        Herd { at: "2026-12-01T00:00:00Z".into(), jobs, drain_s, lower_bound_s: jobs as f64 / 1000.0 }
    }

    fn arm(name: &str, missed: usize, herds: Vec<Herd>, skews: Vec<(f64, f64)>) -> ArmReport {
        let analysis = Analysis {
            expected: 10_000,
            created: 10_000 - missed,
            missed,
            skew_s: Percentiles { p50: 0.5, p99: 7.0, max: 9.0 },
            herds,
            skews,
            ..Analysis::default()
        };
        ArmReport {
            name: name.into(),
            replicas: 3,
            kind: "test".into(),
            analysis,
            cpu_s: vec![1.0],
            peak_rss_mb: vec![50.0],
            shadow: None,
            kube: None,
            hops: None,
            end_to_end: None,
            sim_cpu_s: None,
        }
    }

    /// Three arms: a drained herd, a herd some of whose runs never came, and no herd at all.
    fn report() -> Report {
        let curve: Vec<(f64, f64)> = (0..6000).map(|i| (20.0 + f64::from(i) / 1000.0, f64::from(i) / 700.0)).collect();
        let late: Vec<(f64, f64)> = (0..300).map(|i| (80.0 + f64::from(i) / 10.0, 40.0 + f64::from(i))).collect();
        Report {
            scenario: "herd".into(),
            cronjobs: 10_000,
            window_s: 120.0,
            date: "2026-12-01".into(),
            machine: "test".into(),
            sim: SimReport { admitted_writes_per_s: 1000.0, compaction_interval_s: 300 },
            arms: vec![
                arm("cronshard-3", 0, vec![herd(6000, Some(8.2)), herd(100, Some(0.2))], curve),
                arm("v2", 120, vec![herd(6000, None)], late),
                arm("quiet", 0, vec![], vec![(1.0, 0.005), (2.0, 5000.0)]),
            ],
        }
    }

    #[test]
    fn the_svg_has_axes_a_legend_and_numbered_bars() {
        let picture = svg(&report()).expect("drawn");
        // Set REPORT_SVG to a path to look at the picture.
        if let Some(path) = std::env::var_os("REPORT_SVG") {
            std::fs::write(path, &picture).expect("write REPORT_SVG");
        }
        assert!(picture.starts_with("<svg ") && picture.trim_end().ends_with("</svg>"));
        let texts = texts(&picture);
        for text in [
            "Job created, seconds into the window",
            "skew (log scale)",
            "0.01 s",
            "1000 s",
            "0",
            "seconds from the herd's minute to its last Job",
            "cronshard-3 (missed 0)",
            "v2 (missed 120)",
            "quiet (missed 0)",
            "8.2 s",
            "6000 Jobs, bound 6 s",
            "some runs never came",
            "no herd",
        ] {
            assert!(texts.iter().any(|t| t == text), "{text} missing from {texts:?}");
        }
        // Every arm's points are drawn, thinned to at most 1,500 each.
        let points = picture.matches("<circle").count();
        assert!((1500 + 300 + 2..=1500 + 300 + 2 + 10).contains(&points), "{points} points");
    }

    #[test]
    fn an_empty_report_still_draws() {
        let mut empty = report();
        empty.arms.clear();
        assert!(texts(&svg(&empty).expect("drawn")).iter().any(|t| t == "skew (log scale)"));
    }

    #[test]
    fn the_table_names_the_herd_furthest_over_its_bound_and_aligns_long_arm_names() {
        let mut r = report();
        r.arms[2].name = "cronshard-16-fixed".into();
        let table = table(&r);
        let lines: Vec<&str> = table.lines().collect();
        let row = |name: &str| lines.iter().find(|l| l.starts_with(name)).copied().unwrap_or_default();
        // 0.2 s against 0.1 s is twice its bound; 8.2 s against 6.0 s is 1.37 times.
        assert!(row("cronshard-3 ").contains(" 0.2/0.1 "), "{table}");
        assert!(row("v2 ").contains(" -/6.0 "), "{table}");
        let header = lines[1];
        for name in ["cronshard-3", "v2", "cronshard-16-fixed"] {
            assert_eq!(row(name).len(), header.len(), "{table}");
        }
    }
}
