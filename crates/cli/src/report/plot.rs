//! Plots (PNG and SVG, with plotters): units admitted in the trailing window over time, one line per
//! script, against the limit. The font is embedded (DejaVu Sans, see `fonts/LICENSE-DejaVu.txt`), so
//! drawing needs no system font.
use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::Owner;
use limitlab_emulator::{Error, Result};
use limitlab_engine::sim::Trace;

/// DejaVu Sans 2.37 (Bitstream Vera license, which allows embedding and redistribution).
static FONT: &[u8] = include_bytes!("fonts/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

/// The family name the embedded font is registered under.
pub(crate) const FAMILY: &str = "sans-serif";

/// Registers the embedded font under [`FAMILY`] (once); every plot calls it before drawing.
pub(crate) fn register_font() {
    REGISTER.call_once(|| {
        // The bytes are a valid TrueType font (tested), so this cannot fail at run time.
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT);
    });
}

/// One line of a plot: a script's admitted units in the trailing window, per millisecond.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    /// Whose script it is: each owner's lines get a panel of their own.
    pub owner: Owner,
    /// (ms relative to the plot's origin, units admitted in the window ending there).
    pub points: Vec<(i64, u64)>,
}

/// What to draw.
#[derive(Clone, Debug, PartialEq)]
pub struct Plot {
    pub title: String,
    pub limit: u64,
    pub window_ms: u64,
    /// The absolute time (unix ms) x = 0 stands for: the first window boundary at or after the
    /// first arrival.
    pub origin_ms: i64,
    pub series: Vec<Series>,
}

/// At most this many points per line; longer runs are sampled evenly.
const MAX_POINTS: i64 = 4000;

impl Plot {
    /// Builds the lines of `traces` (all of the same limit and window): for every millisecond from
    /// a little before the first arrival to a little after the last, the units admitted in
    /// `(t - window_ms, t]`.
    pub fn from_traces(title: impl Into<String>, traces: &[Trace]) -> Plot {
        let (limit, window) = traces.first().map_or((1, 1), |t| (t.params.limit, t.params.window_ms));
        let w = window as i64;
        let times = traces.iter().flat_map(|t| t.records.iter().map(|r| r.now_ms));
        let (lo, hi) = times.fold((i64::MAX, i64::MIN), |(a, b), t| (a.min(t), b.max(t)));
        let (lo, hi) = if lo > hi { (0, 0) } else { (lo, hi) };
        let origin = lo.div_euclid(w) * w + if lo.rem_euclid(w) == 0 { 0 } else { w };
        let margin = ((hi - lo) / 10).max(5);
        let (from, to) = (lo - margin, hi + margin);
        let step = ((to - from) / MAX_POINTS).max(1);
        let series = traces
            .iter()
            .map(|t| {
                let mut admitted: Vec<(i64, u64)> =
                    t.records.iter().filter(|r| r.decision.allowed).map(|r| (r.now_ms, r.cost)).collect();
                admitted.sort_by_key(|a| a.0);
                let mut points = Vec::new();
                let (mut head, mut tail, mut sum) = (0usize, 0usize, 0u64);
                let mut x = from;
                while x <= to {
                    while head < admitted.len() && admitted[head].0 <= x {
                        sum += admitted[head].1;
                        head += 1;
                    }
                    while tail < head && admitted[tail].0 <= x - w {
                        sum -= admitted[tail].1;
                        tail += 1;
                    }
                    points.push((x - origin, sum));
                    x += step;
                }
                Series { name: t.name.clone(), owner: Owner::of_variant(t.variant), points }
            })
            .collect();
        Plot { title: title.into(), limit, window_ms: window, origin_ms: origin, series }
    }

    /// Writes the plot as a PNG and as an SVG.
    pub fn write(&self, png: &Path, svg: &Path) -> Result<()> {
        register_font();
        let size = (1200, 560);
        let fail = |path: &Path, e: String| Error::Io { path: path.to_path_buf(), source: std::io::Error::other(e) };
        {
            let root = BitMapBackend::new(png, size).into_drawing_area();
            self.draw(&root).map_err(|e| fail(png, e))?;
            root.present().map_err(|e| fail(png, e.to_string()))?;
        }
        {
            let root = SVGBackend::new(svg, size).into_drawing_area();
            self.draw(&root).map_err(|e| fail(svg, e))?;
            root.present().map_err(|e| fail(svg, e.to_string()))?;
        }
        Ok(())
    }

    /// The panels drawn, left to right: one per owner with a line, with its caption (one panel
    /// for a plot without lines).
    pub fn panels(&self) -> Vec<(&'static str, Owner)> {
        let all = [
            ("The seed article's scripts", Owner::Seed),
            ("limitlab's production scripts", Owner::Production),
            ("Your scripts", Owner::User),
        ];
        let drawn: Vec<_> = all.into_iter().filter(|(_, o)| self.series.iter().any(|s| s.owner == *o)).collect();
        if drawn.is_empty() {
            all[1..2].to_vec()
        } else {
            drawn
        }
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> std::result::Result<(), String> {
        let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
        root.fill(&WHITE).map_err(e)?;
        let root = root.titled(&self.title, (FAMILY, 22)).map_err(e)?;
        let groups = self.panels();
        let panels = root.split_evenly((1, groups.len().max(1)));
        let x_lo = self.series.iter().flat_map(|s| s.points.first()).map(|p| p.0).min().unwrap_or(0);
        let x_hi = self.series.iter().flat_map(|s| s.points.last()).map(|p| p.0).max().unwrap_or(1).max(x_lo + 1);
        let y_max = self.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).max().unwrap_or(0).max(self.limit);
        let y_hi = y_max + y_max / 8 + 1;
        for (panel, (caption, owner)) in panels.iter().zip(groups) {
            let mut chart = ChartBuilder::on(panel)
                .caption(caption, (FAMILY, 17))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(52)
                .build_cartesian_2d(x_lo..x_hi, 0u64..y_hi)
                .map_err(e)?;
            chart
                .configure_mesh()
                .x_desc("ms from the window boundary")
                .y_desc(format!("admitted in the last {} ms", self.window_ms))
                .label_style((FAMILY, 13))
                .axis_desc_style((FAMILY, 14))
                .light_line_style(WHITE.mix(0.0))
                .draw()
                .map_err(e)?;
            let limit = self.limit;
            chart
                .draw_series(LineSeries::new(vec![(x_lo, limit), (x_hi, limit)], BLACK.stroke_width(1)))
                .map_err(e)?
                .label(format!("limit ({limit})"))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
            let group: Vec<&Series> = self.series.iter().filter(|s| s.owner == owner).collect();
            for (i, s) in group.iter().enumerate() {
                let color = Palette99::pick(i * 3 + owner as usize).to_rgba();
                // Earlier lines are wider, so a line drawn over another leaves its edges visible.
                let width = 2 + (group.len() - 1 - i) as u32;
                let style = color.stroke_width(width);
                chart
                    .draw_series(LineSeries::new(s.points.iter().copied(), style))
                    .map_err(e)?
                    .label(s.name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3)));
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .label_font((FAMILY, 13))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.4))
                .draw()
                .map_err(e)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(name: &str, owner: Owner) -> Series {
        Series { name: name.into(), owner, points: vec![(0, 1)] }
    }

    #[test]
    fn each_owner_gets_a_panel_and_no_panel_is_empty() {
        let mut p = Plot { title: "t".into(), limit: 1, window_ms: 1, origin_ms: 0, series: Vec::new() };
        assert_eq!(p.panels(), [("limitlab's production scripts", Owner::Production)]);
        p.series = vec![series("mine", Owner::User), series("token_bucket", Owner::Production)];
        assert_eq!(p.panels(), [("limitlab's production scripts", Owner::Production), ("Your scripts", Owner::User)]);
        p.series.push(series("seed_fixed_window", Owner::Seed));
        assert_eq!(p.panels().len(), 3);
        p.series = vec![series("mine", Owner::User)];
        assert_eq!(p.panels(), [("Your scripts", Owner::User)]);
    }

    #[test]
    fn the_embedded_font_is_a_font() {
        assert!(plotters::style::register_font("limitlab-test", FontStyle::Normal, FONT).is_ok());
    }
}
