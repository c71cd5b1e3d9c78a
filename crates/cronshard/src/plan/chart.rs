//! The plan as a picture: runs due per minute over the window on a log scale, the largest
//! herds' sizes, and the create capacity the plan gives.

use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use cronshard::plot::{
    self, Area, DrawError, FONT, LegendEntry, Mark, TEXT, TITLE, number as fmt_num, text_style, text_width,
};

use super::model::Plan;
use super::units::{utc, utc_second};
use crate::error::{Error, Result};

const SIZE: (u32, u32) = (1000, 560);
const RUNS: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const CAPACITY: RGBColor = RGBColor(0xd6, 0x27, 0x28);
const GRID: RGBColor = RGBColor(0xe4, 0xe4, 0xe4);
const GREY: RGBColor = RGBColor(0x55, 0x55, 0x55);
/// The bottom of the log scale: a bar of one run still shows.
const FLOOR: f64 = 0.5;
/// At most this many bars. A week has 10,080 minutes, more than the plot has pixels: each bar
/// then stands for a few minutes and is as tall as the largest of them, so herds still show.
const MOST_BARS: usize = 720;

/// The chart as an SVG document.
pub(crate) fn svg(plan: &Plan) -> Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        draw(&root, plan).and_then(|()| root.present()).map_err(|e| Error::Chart(e.to_string()))?;
    }
    Ok(out)
}

fn draw(root: &Area<'_>, plan: &Plan) -> Result<(), DrawError> {
    root.fill(&WHITE)?;
    let title = format!(
        "cronshard plan: runs due per minute, {} + {} h ({} runs)",
        utc(plan.window.start),
        plan.window.hours,
        plan.runs
    );
    let body = root.titled(&title, (FONT, TITLE))?;
    let entries = legend(plan);
    let (key, rest) = body.split_vertically(plot::legend_height(&entries, body.dim_in_pixel().0));
    plot::draw_legend(&key, &entries)?;
    chart(&rest, plan)
}

fn legend(plan: &Plan) -> Vec<LegendEntry> {
    let c = &plan.capacity;
    vec![
        LegendEntry::new(Mark::Square(RUNS), "runs due per minute (numbers: the largest herds)"),
        LegendEntry::new(
            Mark::Dashed(CAPACITY),
            format!(
                "planned Job create capacity per minute: {} ({} replicas x {}/s, p99 skew {} s)",
                fmt_num(c.planned_rate * 60.0),
                c.replicas,
                c.qps_per_replica,
                fmt_num(c.achievable_p99_skew_s)
            ),
        ),
    ]
}

/// The axes, the bars, the herds' numbers and the capacity line.
fn chart(area: &Area<'_>, plan: &Plan) -> Result<(), DrawError> {
    // Seconds into the window: integer coordinates, which plotters' mesh formats with ours.
    let end = i64::try_from(plan.load.per_minute.len().max(1)).unwrap_or(i64::MAX).saturating_mul(60);
    let capacity = (plan.capacity.planned_rate * 60.0).max(FLOOR);
    // Room above the tallest bar for its number, and above the capacity line.
    let top = 10_f64.powf((plan.stats.max as f64 * 3.0).max(capacity * 1.5).max(10.0).log10().ceil());
    let decades: Vec<f64> = (0..=top.log10().round() as i32).map(|e| 10_f64.powi(e)).collect();
    let ticks = hour_ticks(plan);
    let start_s = plan.window.start_s;
    let y_labels = text_width(&fmt_num(top), TEXT);
    let mut chart = ChartBuilder::on(area)
        .margin_left(10)
        // Half a date wider than the last tick label, which has a date under it at midnight.
        .margin_right(text_width("2026-12-01", TEXT) / 2 + 12)
        .margin_top(8)
        .margin_bottom(8)
        .x_label_area_size(70)
        .y_label_area_size(y_labels + 45)
        .build_cartesian_2d(
            (0..end).with_key_points(ticks.clone()),
            (FLOOR..top).log_scale().with_key_points(decades),
        )?;
    chart
        .configure_mesh()
        .x_desc("time (UTC)")
        .y_desc("runs due per minute (log scale)")
        .x_label_formatter(&|s| hh_mm(start_s + s))
        .y_label_formatter(&|v| fmt_num(*v))
        .label_style((FONT, TEXT))
        .axis_desc_style((FONT, TEXT))
        .bold_line_style(GRID)
        .draw()?;
    let bars = bars(&plan.load.per_minute);
    chart.draw_series(
        bars.iter().map(|&(from, to, runs)| Rectangle::new([(from, FLOOR), (to, runs as f64)], RUNS.filled())),
    )?;
    chart.draw_series(std::iter::once(DashedPathElement::new(
        vec![(0, capacity), (end, capacity)],
        6,
        4,
        CAPACITY.stroke_width(2),
    )))?;
    herd_numbers(&mut chart, plan)?;
    // The date under the first hour tick and under every midnight: the ticks say only hh:mm.
    let dates = ticks.iter().enumerate().filter(|&(i, s)| i == 0 || hh_mm(start_s + s) == "00:00");
    chart.draw_series(dates.map(|(_, &s)| {
        let date = utc_second(start_s + s).get(0..10).unwrap_or_default().to_owned();
        EmptyElement::at((s, FLOOR)) + Text::new(date, (0, 26), text_style(TEXT, GREY, HPos::Center, VPos::Top))
    }))?;
    Ok(())
}

/// The largest herds' runs above their bars, largest first; a number that would overlap one
/// already written is left out (its herd is no larger, and the text lists them all).
fn herd_numbers<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    plan: &Plan,
) -> Result<(), DrawError>
where
    X: Ranged<ValueType = i64>,
    Y: Ranged<ValueType = f64>,
{
    let start_s = plan.window.start_s;
    let (edge, _) = chart.plotting_area().get_pixel_range();
    let mut taken: Vec<(i32, i32, i32)> = Vec::new();
    let mut labels = Vec::new();
    for herd in &plan.herds {
        let at = (herd.minute - start_s + 30, herd.runs as f64);
        let text = herd.runs.to_string();
        let (x, y) = chart.backend_coord(&at);
        let half = i32::try_from(text_width(&text, TEXT) / 2).unwrap_or(i32::MAX) + 2;
        // Kept inside the plot, where it cannot run into the y axis's labels or off the picture.
        let x = x.clamp(edge.start + half, edge.end - half);
        if taken.iter().any(|&(tx, ty, th)| (tx - x).abs() < half + th && (ty - y).abs() < 20) {
            continue;
        }
        taken.push((x, y, half));
        let shift = x - chart.backend_coord(&at).0;
        let style = text_style(TEXT, BLACK, HPos::Center, VPos::Bottom);
        labels.push(EmptyElement::at(at) + Text::new(text, (shift, -4), style));
    }
    chart.draw_series(labels)?;
    Ok(())
}

/// (start, end, largest runs) of each bar with runs, in seconds into the window, at most
/// [`MOST_BARS`].
fn bars(per_minute: &[u64]) -> Vec<(i64, i64, u64)> {
    let width = per_minute.len().div_ceil(MOST_BARS).max(1);
    let seconds = |minute: usize| i64::try_from(minute).unwrap_or(i64::MAX).saturating_mul(60);
    per_minute
        .chunks(width)
        .enumerate()
        .filter_map(|(i, chunk)| {
            let runs = chunk.iter().copied().max().unwrap_or(0);
            (runs > 0).then(|| (seconds(i * width), seconds(i * width + chunk.len()), runs))
        })
        .collect()
}

/// Seconds into the window of the hour ticks: at most about a dozen, aligned to UTC midnight.
fn hour_ticks(plan: &Plan) -> Vec<i64> {
    let (start_s, end_s) = (plan.window.start_s, plan.window.end_s);
    let hours = i64::from(plan.window.hours);
    let step = [1_i64, 2, 3, 6, 12, 24].into_iter().find(|h| hours / h <= 12).unwrap_or(24) * 3600;
    let first = start_s.div_euclid(step) * step;
    let first = if first < start_s { first + step } else { first };
    (0..).map(|k| first + k * step).take_while(|t| *t <= end_s).map(|t| t - start_s).collect()
}

/// `hh:mm` in UTC.
fn hh_mm(unix: i64) -> String {
    utc_second(unix).get(11..16).unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plan::model::compute;
    use crate::plan::testkit::{cronjob, settings, window};
    use crate::plan::units::MIB;

    /// The text of every `<text>` element, trimmed; the SVG must be XML.
    fn texts(svg: &str) -> Vec<String> {
        let doc = roxmltree::Document::parse(svg).expect("the SVG is XML");
        doc.descendants().filter(|n| n.has_tag_name("text")).map(|n| n.text().unwrap_or("").trim().to_owned()).collect()
    }

    #[test]
    fn the_svg_shows_the_plan() {
        let mut broken = cronjob("broken", "61 * * * *");
        broken["metadata"]["namespace"] = json!("other");
        let items = [cronjob("five", "*/5 * * * *"), cronjob("hourly", "0 * * * *"), broken];
        let plan = compute(&items, window("2026-12-01T00:00:00Z", 2), settings(1.0, 1000.0, 1000.0, 512 * MIB));
        let picture = svg(&plan).expect("drawn");
        assert!(picture.starts_with("<svg "), "{picture}");
        assert!(picture.ends_with("</svg>\n"));
        let texts = texts(&picture);
        let has = |t: &str| texts.iter().any(|x| x == t);
        assert!(has("00:00") && has("01:00") && has("02:00"), "hour ticks: {texts:?}");
        assert!(has("2026-12-01"), "the date under the first tick: {texts:?}");
        assert!(has("time (UTC)") && has("runs due per minute (log scale)"), "axis descriptions: {texts:?}");
        assert!(has("1") && has("10") && has("100"), "y tick labels: {texts:?}");
        assert!(
            texts.iter().any(|t| t.starts_with("planned Job create capacity per minute: 6000 (2 replicas x 50/s")),
            "{texts:?}"
        );
        // The two largest herds, 2 runs at 00:00 and at 01:00, carry their number.
        assert_eq!(texts.iter().filter(|t| *t == "2").count(), 2, "{texts:?}");
    }

    #[test]
    fn a_week_has_at_most_720_bars_as_tall_as_their_largest_minute() {
        let mut per_minute = vec![1; 7 * 24 * 60];
        per_minute[15] = 40;
        let bars = bars(&per_minute);
        assert_eq!(bars.len(), 720);
        assert_eq!(bars[0], (0, 14 * 60, 1));
        assert_eq!(bars[1], (14 * 60, 28 * 60, 40));
        assert_eq!(super::bars(&[0, 3, 0]), vec![(60, 120, 3)]);
    }

    #[test]
    fn hour_ticks_are_aligned_to_utc() {
        let plan = compute(&[], window("2026-12-01T13:37:00Z", 2), settings(1.0, 1000.0, 1000.0, 512 * MIB));
        assert_eq!(hour_ticks(&plan), vec![23 * 60, 83 * 60]);
        assert_eq!(hh_mm(plan.window.start_s + 23 * 60), "14:00");
        let week = compute(&[], window("2026-12-01T00:00:00Z", 168), settings(1.0, 1000.0, 1000.0, 512 * MIB));
        assert_eq!(hour_ticks(&week).len(), 8);
    }
}
