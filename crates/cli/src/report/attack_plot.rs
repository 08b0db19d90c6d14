//! The attack plot (PNG and SVG): one panel per goal, showing over time the requests the pattern
//! sent, what the script admitted and what an exact sliding log admitted, each counted over the
//! trailing window, against the limit. Drawn with the report module's embedded font.
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::report::plot::{register_font, FAMILY};
use limitlab_emulator::{Error, Result};

/// One line: a name and (ms after the origin, units in the window ending there).
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub name: String,
    pub points: Vec<(i64, u64)>,
}

/// One goal's panel.
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    pub caption: String,
    /// Sent, admitted by the script, admitted by the exact log.
    pub sent: Line,
    pub script: Line,
    pub exact: Line,
}

/// At most this many points per line.
const MAX_POINTS: i64 = 3000;

/// The units in `(x - window, x]` for x over a span around `times` (ms after the origin, sorted).
pub fn trailing(times: &[i64], window: i64, from: i64, to: i64) -> Vec<(i64, u64)> {
    let step = ((to - from) / MAX_POINTS).max(1);
    let (mut head, mut tail) = (0usize, 0usize);
    let mut points = Vec::new();
    let mut x = from;
    while x <= to {
        while head < times.len() && times[head] <= x {
            head += 1;
        }
        while tail < head && times[tail] <= x - window {
            tail += 1;
        }
        points.push((x, (head - tail) as u64));
        x += step;
    }
    points
}

/// The span a panel covers: from a tenth of a window before the first request to a window after
/// the last (so the trailing counts fall back to 0).
pub fn span(ms: &[i64], window: i64) -> (i64, i64) {
    let lo = ms.first().copied().unwrap_or(0);
    let hi = ms.last().copied().unwrap_or(0);
    (lo - (window / 10).max(1), hi + window)
}

/// The points as a step line (each value holds until the next point), without the points that
/// change nothing. Only right angles remain, so wide lines have no miter spikes where a count
/// drops and rises again within one step.
fn steps(points: &[(i64, u64)]) -> Vec<(i64, u64)> {
    let mut out: Vec<(i64, u64)> = Vec::with_capacity(points.len());
    for (i, &(x, y)) in points.iter().enumerate() {
        match out.last() {
            Some(&(_, prev)) if prev == y && i + 1 < points.len() => continue,
            Some(&(_, prev)) if prev != y => out.push((x, prev)),
            _ => {}
        }
        out.push((x, y));
    }
    out
}

/// Writes the panels side by side as a PNG and an SVG.
pub fn write(title: &str, limit: u64, window_ms: u64, panels: &[Panel], png: &Path, svg: &Path) -> Result<()> {
    register_font();
    let size = (1300, 560);
    let fail = |path: &Path, e: String| Error::Io { path: path.to_path_buf(), source: std::io::Error::other(e) };
    {
        let root = BitMapBackend::new(png, size).into_drawing_area();
        draw(&root, title, limit, window_ms, panels).map_err(|e| fail(png, e))?;
        root.present().map_err(|e| fail(png, e.to_string()))?;
    }
    {
        let root = SVGBackend::new(svg, size).into_drawing_area();
        draw(&root, title, limit, window_ms, panels).map_err(|e| fail(svg, e))?;
        root.present().map_err(|e| fail(svg, e.to_string()))?;
    }
    Ok(())
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    limit: u64,
    window_ms: u64,
    panels: &[Panel],
) -> std::result::Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let root = root.titled(title, (FAMILY, 22)).map_err(e)?;
    let areas = root.split_evenly((1, panels.len().max(1)));
    let blue = RGBColor(31, 119, 180);
    let grey = RGBColor(150, 150, 150);
    let dark = RGBColor(60, 60, 60);
    for (area, p) in areas.iter().zip(panels) {
        let xs = p.sent.points.iter().chain(&p.script.points).map(|q| q.0);
        let (x_lo, x_hi) = xs.fold((i64::MAX, i64::MIN), |(a, b), x| (a.min(x), b.max(x)));
        let (x_lo, x_hi) = if x_lo > x_hi { (0, 1) } else { (x_lo, x_hi.max(x_lo + 1)) };
        let y_max = [&p.sent, &p.script, &p.exact].iter().flat_map(|l| l.points.iter().map(|q| q.1)).max().unwrap_or(0);
        let y_max = y_max.max(limit);
        // Head room for the legend above the lines.
        let y_hi = y_max + y_max * 3 / 8 + 1;
        let mut chart = ChartBuilder::on(area)
            .caption(&p.caption, (FAMILY, 17))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(52)
            .build_cartesian_2d(x_lo..x_hi, 0u64..y_hi)
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("ms after a window boundary")
            .y_desc(format!("requests in the last {window_ms} ms"))
            .label_style((FAMILY, 13))
            .axis_desc_style((FAMILY, 14))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(e)?;
        // Window boundaries.
        let w = window_ms.max(1) as i64;
        let mut b = x_lo.div_euclid(w) * w;
        while b <= x_hi {
            if b >= x_lo {
                chart
                    .draw_series(LineSeries::new(vec![(b, 0), (b, y_hi)], grey.mix(0.35).stroke_width(1)))
                    .map_err(e)?;
            }
            b += w;
        }
        chart
            .draw_series(LineSeries::new(vec![(x_lo, limit), (x_hi, limit)], BLACK.stroke_width(1)))
            .map_err(e)?
            .label(format!("limit ({limit})"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
        for (line, color, width) in [(&p.sent, grey, 1), (&p.exact, dark, 2), (&p.script, blue, 3)] {
            let style = color.stroke_width(width);
            chart
                .draw_series(LineSeries::new(steps(&line.points), style))
                .map_err(e)?
                .label(line.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FAMILY, 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(e)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_counts_the_window_ending_at_each_point() {
        let times = [0, 0, 5, 9, 10];
        let p = trailing(&times, 10, -1, 12);
        let at = |x: i64| p.iter().find(|q| q.0 == x).map(|q| q.1);
        assert_eq!(at(-1), Some(0));
        assert_eq!(at(0), Some(2));
        assert_eq!(at(9), Some(4));
        assert_eq!(at(10), Some(3), "(0, 10] drops the two at 0");
        assert_eq!(at(12), Some(3));
    }

    #[test]
    fn step_lines_turn_at_right_angles_only() {
        let p = [(0, 1), (1, 1), (2, 5), (3, 5), (4, 0), (5, 0)];
        assert_eq!(steps(&p), [(0, 1), (2, 1), (2, 5), (4, 5), (4, 0), (5, 0)]);
    }
}
