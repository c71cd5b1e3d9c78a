//! What the project's SVG charts share: one font, text widths to lay out by, and a legend band.
//!
//! The charts are drawn with plotters' SVG backend. An SVG names a font family and the viewer
//! picks the font, so no width computed here is exact: layouts use a generous estimate and keep
//! the legend in a band of its own above the plot, where a longer label cannot cover data.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A drawing area of an SVG that is being drawn.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// What drawing can fail with: plotters' errors around the SVG backend's I/O error.
pub type DrawError = DrawingAreaErrorKind<std::io::Error>;

/// The font family every chart names.
pub const FONT: &str = "sans-serif";
/// Font size of tick labels, axis descriptions and the legend (plotters' unit: the SVG gets
/// this over 1.24).
pub const TEXT: u32 = 15;
/// Font size of a chart's title.
pub const TITLE: u32 = 19;

/// The width in pixels of `text` at plotters' font `size`, never less than the viewer draws.
///
/// DejaVu Sans, the widest common sans-serif, averages about 0.6 em a character; plotters writes
/// `size / 1.24` as the SVG font size, so 0.62 em of that is half of `size`.
pub fn text_width(text: &str, size: u32) -> u32 {
    let chars = u32::try_from(text.chars().count()).unwrap_or(u32::MAX);
    chars.saturating_mul(size).div_ceil(2)
}

/// At most three decimals, no trailing zeros: 1089, 2.97, 0.099; tick values carry float noise.
pub fn number(x: f64) -> String {
    let text = format!("{x:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A style for text at `size` in the chart font, anchored at `h` and `v`.
pub fn text_style(size: u32, color: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    (FONT, size).into_font().color(&color).pos(Pos::new(h, v))
}

/// How a legend entry shows its series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mark {
    /// A filled square: bars and areas.
    Square(RGBColor),
    /// A filled dot: scattered points.
    Dot(RGBColor),
    /// A solid line.
    Line(RGBColor),
    /// A dashed line.
    Dashed(RGBColor),
}

/// One series in a legend.
#[derive(Clone, Debug, PartialEq)]
pub struct LegendEntry {
    pub mark: Mark,
    pub label: String,
}

impl LegendEntry {
    pub fn new(mark: Mark, label: impl Into<String>) -> Self {
        LegendEntry { mark, label: label.into() }
    }
}

const MARK: i32 = 16;
const ROW: i32 = 22;
const PAD: i32 = 8;
const GAP: i32 = 28;

/// The row and left edge of each entry, wrapping before `width`.
fn layout(entries: &[LegendEntry], width: u32) -> Vec<(i32, i32)> {
    let width = i32::try_from(width).unwrap_or(i32::MAX);
    let (mut row, mut x) = (0, PAD);
    let mut places = Vec::with_capacity(entries.len());
    for entry in entries {
        let w = MARK + 6 + i32::try_from(text_width(&entry.label, TEXT)).unwrap_or(i32::MAX);
        if x > PAD && x + w > width - PAD {
            row += 1;
            x = PAD;
        }
        places.push((row, x));
        x = x.saturating_add(w + GAP);
    }
    places
}

/// The height a legend band of `entries` needs in an area `width` pixels wide.
pub fn legend_height(entries: &[LegendEntry], width: u32) -> u32 {
    let rows = layout(entries, width).last().map_or(0, |&(row, _)| row + 1);
    u32::try_from(rows * ROW + 2 * PAD).unwrap_or(0)
}

/// Draws the entries in rows across `area`, which [`legend_height`] sized.
pub fn draw_legend(area: &Area<'_>, entries: &[LegendEntry]) -> Result<(), DrawError> {
    let (width, _) = area.dim_in_pixel();
    for (entry, (row, x)) in entries.iter().zip(layout(entries, width)) {
        let y = PAD + row * ROW + ROW / 2;
        let (left, right) = (x, x + MARK);
        match entry.mark {
            Mark::Square(c) => area.draw(&Rectangle::new([(left, y - 6), (right, y + 6)], c.filled()))?,
            Mark::Dot(c) => area.draw(&Circle::new((left + MARK / 2, y), 5, c.filled()))?,
            Mark::Line(c) => area.draw(&PathElement::new(vec![(left, y), (right, y)], c.stroke_width(2)))?,
            Mark::Dashed(c) => {
                area.draw(&DashedPathElement::new(vec![(left, y), (right, y)], 5, 3, c.stroke_width(2)))?
            }
        }
        area.draw(&Text::new(entry.label.clone(), (right + 6, y), text_style(TEXT, BLACK, HPos::Left, VPos::Center)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(labels: &[&str]) -> Vec<LegendEntry> {
        labels.iter().map(|l| LegendEntry::new(Mark::Square(BLACK), *l)).collect()
    }

    #[test]
    fn the_legend_wraps_before_the_edge() {
        let wide = "x".repeat(50);
        let e = entries(&[&wide, &wide, "short"]);
        // A wide entry is 397 px with its mark: two fit in 900 px with "short" on a row of its
        // own; in 450 px each gets its own row.
        assert_eq!(layout(&e, 900), vec![(0, PAD), (0, PAD + 397 + GAP), (1, PAD)]);
        assert_eq!(legend_height(&e, 900), legend_height(&entries(&["a"]), 900) + 22);
        assert_eq!(legend_height(&e, 450), legend_height(&entries(&["a"]), 450) + 44);
        assert_eq!(legend_height(&[], 900), 16);
    }

    #[test]
    fn widths_are_generous() {
        assert_eq!(text_width("", 15), 0);
        assert_eq!(text_width("10000", 15), 38);
        assert_eq!(text_width("é", 15), 8);
        assert_eq!(
            (number(2.5000000000000004), number(10.0), number(0.0991)),
            ("2.5".into(), "10".into(), "0.099".into())
        );
    }
}
