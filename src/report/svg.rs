//! Inline SVG charts for the HTML report: a [`Chart`] is a frame with a title, two linear axes
//! with "nice" ticks and units, and marks (points, intervals, lines, shaded spans) placed in
//! data coordinates. It returns markup as a `String`; no script, font or style is fetched.
//!
//! Every mark carries a class (`pt` for a plotted data point, `ci` for an interval, `series`
//! for a line, `band` for a shaded span, `marker` for a rule) so the report's own stylesheet
//! and its browser test can find them. Coordinates are written to a tenth of a pixel, so the
//! same data give the same bytes. A chart's legend follows it as HTML, so it wraps.

use std::fmt::Write;

/// The Okabe–Ito palette, reordered so the first colours are the most distinct on white
/// (its yellow, hard to see on white, comes late).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442",
];

/// The palette colour of the `i`-th series.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Escapes text for XML and HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters and the invisible ones that reorder a line (bidi overrides).
            c if crate::text::needs_escape(c) && c != '\n' && c != '\t' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A linear axis: its data range and its label (with the unit).
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// Low end of the range.
    pub lo: f64,
    /// High end of the range.
    pub hi: f64,
    /// Label, e.g. `goodput [jobs/s]`.
    pub label: String,
    /// Names of whole-number positions 0, 1, …, shown instead of numeric ticks.
    pub categories: Vec<String>,
    /// Where the ticks go, when not at round steps (a sweep's levels).
    pub ticks_at: Vec<f64>,
}

impl Axis {
    /// An axis covering every finite value of `values` (and `include`, e.g. 0), padded a little
    /// so no point sits on the frame; a single value gets a range around it.
    pub fn covering(values: impl IntoIterator<Item = f64>, include: &[f64], label: &str) -> Axis {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.into_iter().chain(include.iter().copied()) {
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        if !lo.is_finite() {
            return Axis {
                lo: 0.0,
                hi: 1.0,
                label: label.to_owned(),
                categories: Vec::new(),
                ticks_at: Vec::new(),
            };
        }
        if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
            if lo == 0.0 {
                // All zero: a rate or count that never happened.
                (lo, hi) = (0.0, 1.0);
            } else {
                let pad = lo.abs() * 0.1;
                (lo, hi) = (lo - pad, hi + pad);
            }
        } else {
            let pad = (hi - lo) * 0.04;
            let at_zero_lo = include.contains(&lo);
            let at_zero_hi = include.contains(&hi);
            lo -= if at_zero_lo { 0.0 } else { pad };
            hi += if at_zero_hi { 0.0 } else { pad };
        }
        Axis {
            lo,
            hi,
            label: label.to_owned(),
            categories: Vec::new(),
            ticks_at: Vec::new(),
        }
    }

    /// This axis with its ticks at `values` (labelled as written with the fewest decimals).
    pub fn with_ticks_at(mut self, values: &[f64]) -> Axis {
        self.ticks_at = values.to_vec();
        self
    }

    /// A categorical axis: position `i` is `names[i]`.
    pub fn categories(names: Vec<String>, label: &str) -> Axis {
        Axis {
            lo: -0.5,
            hi: names.len() as f64 - 0.5,
            label: label.to_owned(),
            categories: names,
            ticks_at: Vec::new(),
        }
    }

    /// Tick positions and their labels.
    fn ticks(&self) -> Vec<(f64, String)> {
        if !self.categories.is_empty() {
            return self
                .categories
                .iter()
                .enumerate()
                .map(|(i, name)| (i as f64, name.clone()))
                .collect();
        }
        if !self.ticks_at.is_empty() {
            return self.ticks_at.iter().map(|&v| (v, format!("{v}"))).collect();
        }
        let step = nice_step((self.hi - self.lo) / 5.0);
        let first = (self.lo / step).ceil() as i64;
        let last = (self.hi / step).floor() as i64;
        (first..=last)
            .map(|k| {
                let v = k as f64 * step;
                (v, tick_label(v, step))
            })
            .collect()
    }
}

/// The step among 1, 2, 5 × 10^k nearest above `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    let scaled = raw / magnitude;
    let nice = if scaled <= 1.0 {
        1.0
    } else if scaled <= 2.0 {
        2.0
    } else if scaled <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// A tick's label: thousands as `k`, millions as `M`, and as many decimals as the step needs.
pub fn tick_label(v: f64, step: f64) -> String {
    let (scale, suffix) = if step >= 1e6 {
        (1e6, "M")
    } else if step >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    if v == 0.0 {
        return "0".into();
    }
    let decimals = (-(step / scale).log10().floor()).max(0.0) as usize;
    let text = format!("{:.*}", decimals, v / scale);
    // `-0` reads as a different number than `0`.
    let text = if text
        .trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        text.trim_start_matches('-').to_owned()
    } else {
        text
    };
    format!("{text}{suffix}")
}

/// A pixel coordinate, written with one decimal (a tenth of a pixel is below what shows).
fn px(v: f64) -> String {
    let text = format!("{v:.1}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.into()
    }
}

/// How a line is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stroke {
    /// Colour.
    pub colour: &'static str,
    /// Dashed, for a second quantity of the same series (a capacity against its in-flight).
    pub dashed: bool,
}

/// A chart under construction.
pub struct Chart {
    width: f64,
    height: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    x: Axis,
    y: Axis,
    title: String,
    marks: String,
    legend: Vec<(String, Stroke)>,
}

impl Chart {
    /// A `width` × `height` chart titled `title`; the left margin grows with the y labels.
    pub fn new(title: &str, width: f64, height: f64, x: Axis, y: Axis) -> Chart {
        let longest = y.ticks().iter().map(|(_, l)| l.chars().count()).max();
        let left = 30.0 + 6.5 * longest.unwrap_or(1) as f64;
        Chart {
            width,
            height,
            left: left.min(width * 0.45),
            right: 12.0,
            top: 28.0,
            bottom: 40.0,
            x,
            y,
            title: title.to_owned(),
            marks: String::new(),
            legend: Vec::new(),
        }
    }

    fn sx(&self, v: f64) -> f64 {
        let span = self.x.hi - self.x.lo;
        self.left + (v - self.x.lo) / span * (self.width - self.left - self.right)
    }

    fn sy(&self, v: f64) -> f64 {
        let span = self.y.hi - self.y.lo;
        self.height - self.bottom - (v - self.y.lo) / span * (self.height - self.top - self.bottom)
    }

    /// Clamps a y value into the frame (a line leaving it is drawn along its edge).
    fn clamp_y(&self, v: f64) -> f64 {
        v.clamp(self.y.lo, self.y.hi)
    }

    /// A data point, with a tooltip; nothing for a value that is not finite.
    pub fn point(&mut self, x: f64, y: f64, colour: &str, tip: &str) {
        if !(x.is_finite() && y.is_finite()) {
            return;
        }
        let _ = write!(
            self.marks,
            r##"<circle class="pt" cx="{}" cy="{}" r="3.2" fill="{colour}" fill-opacity="0.8" stroke="#333333" stroke-width="0.5"><title>{}</title></circle>"##,
            px(self.sx(x)),
            px(self.sy(y)),
            escape(tip)
        );
    }

    /// A horizontal interval `[x0, x1]` at `y` with a tick at `mid` (a mean and its interval),
    /// cut at the frame.
    pub fn interval_x(&mut self, x0: f64, x1: f64, y: f64, mid: f64, colour: &str, tip: &str) {
        if ![x0, x1, y, mid].iter().all(|v| v.is_finite()) {
            return;
        }
        let clamp = |v: f64| v.clamp(self.x.lo, self.x.hi);
        let (a, b, m, yy) = (
            self.sx(clamp(x0)),
            self.sx(clamp(x1)),
            self.sx(mid),
            self.sy(y),
        );
        self.ci(
            tip,
            colour,
            [a, yy + 7.0, b, yy + 7.0],
            [m, yy + 2.0, m, yy + 12.0],
        );
    }

    /// A vertical interval `[y0, y1]` at `x` with a tick at `mid`, cut at the frame.
    pub fn interval_y(&mut self, x: f64, y0: f64, y1: f64, mid: f64, colour: &str, tip: &str) {
        if ![x, y0, y1, mid].iter().all(|v| v.is_finite()) {
            return;
        }
        let (a, b, m, xx) = (
            self.sy(self.clamp_y(y0)),
            self.sy(self.clamp_y(y1)),
            self.sy(mid),
            self.sx(x),
        );
        self.ci(tip, colour, [xx, a, xx, b], [xx - 6.0, m, xx + 6.0, m]);
    }

    /// An interval's mark: its bar and the tick at its mean, each `[x1, y1, x2, y2]` in pixels.
    fn ci(&mut self, tip: &str, colour: &str, bar: [f64; 4], tick: [f64; 4]) {
        let line = |[x1, y1, x2, y2]: [f64; 4], width: &str| {
            format!(
                r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{colour}" stroke-width="{width}"/>"#,
                px(x1),
                px(y1),
                px(x2),
                px(y2)
            )
        };
        let _ = write!(
            self.marks,
            r#"<g class="ci"><title>{}</title>{}{}</g>"#,
            escape(tip),
            line(bar, "1.6"),
            line(tick, "2.4")
        );
    }

    /// A line through `points` (gaps where a value is not finite), named in the legend.
    pub fn line(&mut self, points: &[(f64, f64)], stroke: Stroke, name: &str) {
        let mut runs: Vec<Vec<String>> = vec![Vec::new()];
        for &(x, y) in points {
            if x.is_finite() && y.is_finite() {
                let y = self.clamp_y(y);
                runs.last_mut().expect("never empty").push(format!(
                    "{},{}",
                    px(self.sx(x)),
                    px(self.sy(y))
                ));
            } else if !runs.last().expect("never empty").is_empty() {
                runs.push(Vec::new());
            }
        }
        let dash = if stroke.dashed {
            r#" stroke-dasharray="5 3""#
        } else {
            ""
        };
        for run in runs.iter().filter(|r| !r.is_empty()) {
            let _ = write!(
                self.marks,
                r#"<polyline class="series" data-series="{}" fill="none" stroke="{}" stroke-width="1.5"{dash} points="{}"/>"#,
                escape(name),
                stroke.colour,
                run.join(" ")
            );
        }
        self.legend.push((name.to_owned(), stroke));
    }

    /// A shaded span of x (an incident), with a tooltip.
    pub fn band(&mut self, x0: f64, x1: f64, tip: &str) {
        if x0.is_nan() || x1.is_nan() {
            return;
        }
        let a = self.sx(x0.max(self.x.lo));
        let b = self.sx(x1.min(self.x.hi));
        if b <= a {
            return;
        }
        let (top, bottom) = (self.top, self.height - self.bottom);
        let _ = write!(
            self.marks,
            r##"<rect class="band" x="{}" y="{}" width="{}" height="{}" fill="#999999" fill-opacity="0.22"><title>{}</title></rect>"##,
            px(a),
            px(top),
            px(b - a),
            px(bottom - top),
            escape(tip)
        );
    }

    /// A vertical rule at `x` labelled `text` (the knee).
    pub fn rule_x(&mut self, x: f64, text: &str, colour: &str) {
        if !x.is_finite() {
            return;
        }
        let xx = self.sx(x);
        let _ = write!(
            self.marks,
            r#"<g class="marker"><line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="{colour}" stroke-width="1.2" stroke-dasharray="2 2"/><text x="{3}" y="{4}" font-size="10" fill="{colour}">{5}</text></g>"#,
            px(xx),
            px(self.top),
            px(self.height - self.bottom),
            px(xx + 3.0),
            px(self.top + 10.0),
            escape(text)
        );
    }

    /// The finished `<svg>` (frame, grid, ticks, axis labels, marks), then its legend.
    pub fn finish(self) -> String {
        let mut out = String::new();
        let (w, h) = (self.width, self.height);
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" role="img" font-family="sans-serif" font-size="11"><title>{}</title>"#,
            px(w),
            px(h),
            escape(&self.title)
        );
        let _ = write!(
            out,
            r#"<text class="title" x="{}" y="16" font-size="12.5" font-weight="bold">{}</text>"#,
            px(self.left),
            escape(&self.title)
        );
        let (x0, x1) = (self.left, w - self.right);
        let (y0, y1) = (self.top, h - self.bottom);
        for (v, label) in self.x.ticks() {
            let x = self.sx(v);
            let _ = write!(
                out,
                r##"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#e3e3e3"/><text x="{0}" y="{3}" text-anchor="middle">{4}</text>"##,
                px(x),
                px(y0),
                px(y1),
                px(y1 + 13.0),
                escape(&label)
            );
        }
        for (v, label) in self.y.ticks() {
            let y = self.sy(v);
            let _ = write!(
                out,
                r##"<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="#e3e3e3"/><text x="{3}" y="{4}" text-anchor="end">{5}</text>"##,
                px(x0),
                px(y),
                px(x1),
                px(x0 - 4.0),
                px(y + 3.5),
                escape(&label)
            );
        }
        let _ = write!(
            out,
            r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#777777"/>"##,
            px(x0),
            px(y0),
            px(x1 - x0),
            px(y1 - y0)
        );
        let _ = write!(
            out,
            r#"<text class="axis-x" x="{}" y="{}" text-anchor="middle">{}</text>"#,
            px((x0 + x1) / 2.0),
            px(h - 8.0),
            escape(&self.x.label)
        );
        if self.y.categories.is_empty() {
            let _ = write!(
                out,
                r#"<text class="axis-y" transform="translate(11 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
                px((y0 + y1) / 2.0),
                escape(&self.y.label)
            );
        }
        out.push_str(&self.marks);
        out.push_str("</svg>");
        legend(&mut out, &self.legend);
        out
    }
}

/// The legend, as HTML after the chart (it wraps on a narrow screen): a short stroke in the
/// series' colour and dash, then its name, cut with an ellipsis at the panel's width (a long
/// endpoint id ran across the next panel) and whole in its tooltip.
fn legend(out: &mut String, entries: &[(String, Stroke)]) {
    if entries.is_empty() {
        return;
    }
    out.push_str(r#"<div class="legend">"#);
    for (name, stroke) in entries {
        let dash = if stroke.dashed {
            r#" stroke-dasharray="5 3""#
        } else {
            ""
        };
        let _ = write!(
            out,
            r#"<span title="{name}"><svg width="22" height="8" aria-hidden="true"><line x1="1" y1="4" x2="21" y2="4" stroke="{}" stroke-width="2.2"{dash}/></svg>{name}</span>"#,
            stroke.colour,
            name = escape(name)
        );
    }
    out.push_str("</div>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(0.13), 0.2);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(1200.0), 2000.0);
        assert_eq!(nice_step(0.0), 1.0);
    }

    #[test]
    fn tick_labels_use_the_steps_decimals_and_suffixes() {
        assert_eq!(tick_label(0.4, 0.2), "0.4");
        assert_eq!(tick_label(2000.0, 1000.0), "2k");
        assert_eq!(tick_label(2500.0, 500.0), "2500");
        assert_eq!(tick_label(3e6, 1e6), "3M");
        assert_eq!(tick_label(-0.0001, 0.5), "0.0");
        assert_eq!(tick_label(0.0, 1000.0), "0");
    }

    #[test]
    fn ticks_fall_inside_the_axis() {
        let axis = Axis::covering([3.0, 17.0], &[0.0], "x");
        assert_eq!(axis.lo, 0.0);
        let ticks = axis.ticks();
        assert!(ticks.iter().all(|(v, _)| *v >= axis.lo && *v <= axis.hi));
        assert_eq!(ticks[0].1, "0");
        assert!(ticks.len() >= 3);
    }

    #[test]
    fn a_single_value_gets_a_range_around_it() {
        let axis = Axis::covering([5.0, 5.0], &[], "x");
        assert!(axis.lo < 5.0 && axis.hi > 5.0);
        let empty = Axis::covering([f64::NAN], &[], "x");
        assert_eq!((empty.lo, empty.hi), (0.0, 1.0));
    }

    #[test]
    fn marks_land_in_the_frame_with_their_classes() {
        let x = Axis::covering([0.0, 10.0], &[0.0], "t [s]");
        let y = Axis::covering([0.0, 4.0], &[0.0], "n");
        let mut chart = Chart::new("A <chart>", 400.0, 200.0, x, y);
        chart.point(5.0, 2.0, colour(0), "seed 1");
        chart.line(
            &[(0.0, 1.0), (1.0, f64::NAN), (2.0, 3.0), (3.0, 9.0)],
            Stroke {
                colour: colour(1),
                dashed: true,
            },
            "limit",
        );
        chart.band(2.0, 4.0, "outage");
        let svg = chart.finish();
        assert_eq!(svg.matches(r#"class="pt""#).count(), 1);
        // The NaN splits the line in two.
        assert_eq!(svg.matches(r#"class="series""#).count(), 2);
        assert_eq!(svg.matches(r#"class="band""#).count(), 1);
        assert!(svg.contains("A &lt;chart&gt;"));
        assert!(svg.starts_with("<svg") && svg.contains("</svg><div class=\"legend\">"));
        assert!(svg.contains("stroke-dasharray=\"5 3\"/></svg>limit</span>"));
    }

    #[test]
    fn values_that_are_not_finite_draw_nothing() {
        let axis = || Axis::covering([0.0, 1.0], &[], "v");
        let mut chart = Chart::new("t", 300.0, 150.0, axis(), axis());
        chart.point(f64::INFINITY, 0.5, colour(0), "x");
        chart.point(0.5, f64::NAN, colour(0), "x");
        chart.interval_x(0.0, f64::INFINITY, 0.5, 0.5, colour(0), "x");
        chart.interval_y(0.5, f64::NAN, 1.0, 0.5, colour(0), "x");
        chart.rule_x(f64::NAN, "knee", colour(0));
        chart.band(f64::NAN, 1.0, "x");
        let svg = chart.finish();
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        assert!(!svg.contains("class=\"pt\"") && !svg.contains("class=\"ci\""));
    }

    #[test]
    fn escaping_covers_markup_and_control_characters() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(escape("a\u{1b}b"), "a\\u{1b}b");
    }
}
