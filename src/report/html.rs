//! The HTML report (`--html PATH`): one self-contained page — inline SVG charts ([`super::svg`])
//! and an inline stylesheet, no script and nothing fetched — that a laptop shows and a printer
//! prints.
//!
//! A comparison's page holds the verdict and the metric table, one dot panel per metric (every
//! seed's value per strategy, with the mean and its confidence interval), and per strategy the
//! recorder's time series of its first seed: goodput, refusals and errors, in-flight against
//! capacity per endpoint with breaker changes, the adaptive limit or the router's cooldowns,
//! queue wait — the world's
//! incidents shaded on each. A sweep's page charts throughput, refusal rate and the p99s
//! against the swept level, every seed's value and the mean's interval, the knee marked.
//!
//! Every plotted seed value is a `circle.pt` inside a `figure` naming its metric
//! (`data-metric`), so a reader (or the browser test) can count them.

use std::fmt::Write;

use super::format::{decimals_at, fixed, scale_of, seeds, thousands};
use super::stats::{Summary, t_quantile};
use super::svg::{Axis, Chart, Stroke, colour, escape};
use super::sweep::SweepView;
use super::terminal::{column_title, notes, verdict_text};
use super::{Column, IncidentSpan, Report, Row, Run};
use crate::client::pool::State;
use crate::metrics::{CATALOGUE, Direction, Metric, MetricInfo};
use crate::recorder::{Timeseries, Window};
use crate::text::plural;

/// Most points a time-series line keeps; longer series have adjacent windows summed.
const MAX_POINTS: usize = 300;

/// Most seed dots a strategy's line (or a sweep level) shows. Beyond it a panel shows this many
/// seeds at evenly spaced ranks, the least and greatest value included: the distribution's
/// shape at a size a browser opens (100,000 seeds of every dot made a 1.2 GB page).
const MAX_DOTS: usize = 500;

/// The seeds a panel draws: all of them up to [`MAX_DOTS`], else [`MAX_DOTS`] at evenly spaced
/// ranks of their values (ties by seed, so the choice is deterministic).
fn dots(mut values: Vec<(u64, f64)>) -> Vec<(u64, f64)> {
    let n = values.len();
    if n <= MAX_DOTS {
        return values;
    }
    values.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let last = (n - 1) as f64 / (MAX_DOTS - 1) as f64;
    (0..MAX_DOTS)
        .map(|j| values[(j as f64 * last).round() as usize])
        .collect()
}

/// A named line of a time-series panel: its name, how it is drawn, its `(t, value)` points.
type Series = (String, Stroke, Vec<(f64, f64)>);

/// Confidence of the intervals drawn around a mean.
const INTERVAL: f64 = 0.95;

/// Renders a comparison's page.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let w = &report.world;
    head(&mut out, &format!("simbench · {}", w.name));
    let _ = write!(
        out,
        "<header><h1>{}</h1><p class=\"summary\">{}</p><p class=\"facts\">{}</p></header>",
        escape(&w.name),
        escape(&w.summary),
        escape(&facts(report))
    );
    verdict(&mut out, report);
    metric_table(&mut out, report);
    metric_panels(&mut out, report);
    timelines(&mut out, report);
    endpoint_table(&mut out, report);
    out.push_str("<section><h2>Notes</h2><ul class=\"notes\">");
    for line in notes(report, "bold").iter().skip(1) {
        let _ = write!(out, "<li>{}</li>", escape(line.trim_start()));
    }
    let _ = write!(
        out,
        "<li>Dot panels: each dot is one seed's value{}; the bar is the mean and its {} confidence interval (Student's t over the seeds), cut at the panel's edge.</li></ul></section>",
        thinned_note(report.sweep.seeds.len()),
        super::decision::pct(INTERVAL)
    );
    out.push_str("</main></body></html>\n");
    out
}

/// What a panel of more than [`MAX_DOTS`] seeds shows instead of every seed.
fn thinned_note(seeds: usize) -> String {
    if seeds <= MAX_DOTS {
        return String::new();
    }
    format!(
        " ({MAX_DOTS} of the {} seeds per strategy, at evenly spaced ranks from the least value \
         to the greatest, so the page stays small; the JSON and CSV hold every seed)",
        thousands(seeds as f64, 0)
    )
}

/// `3 seeds 1, 2, 3 · 2000 jobs × …`: how the comparison was made.
fn facts(report: &Report) -> String {
    let w = &report.world;
    format!(
        "{} {} · {} · horizon {} s simulated · rng {} · world {}",
        plural(report.sweep.seeds.len(), "seed"),
        seeds(&report.sweep.seeds),
        super::format::world_size(w.jobs, w.steps_per_job, w.calls_per_step, &w.load),
        super::format::seconds(w.horizon_s),
        report.sweep.rng,
        w.hash
    )
}

/// The document head with the stylesheet, and the opening of the body.
fn head(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{STYLE}</style></head><body><main>",
        escape(title)
    );
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;color:#1a1a1a;background:#fff;margin:0}\
main{max-width:1180px;margin:0 auto;padding:16px 20px 40px}\
h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.2rem;margin-top:1.8rem;border-bottom:1px solid #ccc}\
h3{font-size:1rem;margin:1.2rem 0 .3rem}.summary{margin:.2rem 0;max-width:70ch}\
.facts,.caption{color:#555;font-size:.85rem}\
.verdict{border-left:4px solid #0072B2;background:#f2f7fb;padding:.5rem 1rem;margin:1rem 0}\
.verdict p{margin:.3rem 0;font-size:1.05rem}.verdict ul{margin:.3rem 0;padding-left:1.2rem}\
.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:.8rem;margin:.5rem 0}\
th,td{border:1px solid #d5d5d5;padding:3px 6px;text-align:right;vertical-align:top;white-space:nowrap}\
th{background:#f3f3f3}td.name,th.name{text-align:left}td.win{font-weight:bold;background:#e6f3ec}\
td.out{color:#888}tbody td:first-child{position:sticky;left:0;background:#fff}thead th:first-child{position:sticky;left:0}.range{color:#666;font-size:.72rem}\
.panels{display:grid;grid-template-columns:repeat(auto-fill,minmax(480px,1fr));gap:10px}\
figure{margin:0;border:1px solid #e2e2e2;padding:4px;break-inside:avoid;page-break-inside:avoid}\
figure>svg{width:100%;height:auto;display:block}.legend{font-size:.75rem;padding:0 4px}.legend span{margin-right:10px;white-space:nowrap;display:inline-block;max-width:100%;overflow:hidden;text-overflow:ellipsis;vertical-align:bottom}.legend svg{vertical-align:middle;margin-right:3px}figcaption{font-size:.75rem;color:#555;padding:0 4px}\
.notes{font-size:.8rem;color:#333}\
@media print{main{max-width:none;padding:0}.scroll{overflow:visible}.panels{grid-template-columns:repeat(2,1fr)}h2{break-after:avoid}section.timeline{break-inside:avoid}}";

fn verdict(out: &mut String, report: &Report) {
    let d = &report.decision;
    let _ = write!(
        out,
        "<section class=\"verdict\"><p><strong>Verdict:</strong> {}.</p><ul><li>{}</li>",
        escape(&d.headline()),
        escape(&d.objective_line())
    );
    for line in d.notes() {
        let _ = write!(out, "<li>{}</li>", escape(&line));
    }
    if let Some(stop) = &report.sequential {
        let _ = write!(out, "<li>{}</li>", escape(&stop.describe()));
    }
    out.push_str("</ul></section>");
}

fn metric_table(out: &mut String, report: &Report) {
    out.push_str("<section><h2>Metrics</h2><div class=\"scroll\"><table class=\"metrics\"><thead><tr><th class=\"name\">metric</th><th>unit</th><th>better</th>");
    for column in &report.columns {
        let _ = write!(out, "<th>{}</th>", escape(&column_title(column)));
    }
    out.push_str("<th class=\"name\">verdict</th></tr></thead><tbody>");
    for row in shown(report) {
        let info = row.info;
        let mark = match (info.gated, info.latency) {
            (true, true) => " †‡",
            (true, false) => " †",
            (false, true) => " ‡",
            (false, false) => "",
        };
        let _ = write!(
            out,
            "<tr><td class=\"name\">{}{mark}</td><td>{}</td><td>{}</td>",
            info.name,
            escape(info.unit),
            better(info)
        );
        for column in &report.columns {
            out.push_str(&cell(row, column));
        }
        let _ = write!(
            out,
            "<td class=\"name\">{}</td></tr>",
            escape(&verdict_text(&row.verdict, &|n| n.to_owned()))
        );
    }
    out.push_str("</tbody></table></div><p class=\"caption\">Each cell: mean ± stdev over the finished runs, then min – max. Bold: the row's winner; grey: excluded by a gate or invalid.</p></section>");
}

fn better(info: &MetricInfo) -> &'static str {
    match info.direction {
        Direction::Higher => "higher",
        Direction::Lower => "lower",
        Direction::Neutral => "—",
    }
}

fn cell(row: &Row, column: &Column) -> String {
    let Some(s) = column.summary(row.info.metric) else {
        let text = if column.stats.is_empty() {
            "—"
        } else {
            "n/a"
        };
        return format!("<td>{text}</td>");
    };
    let d = row.decimals;
    let class = if row.verdict.winners.contains(&column.algorithm) {
        " class=\"win\""
    } else if row
        .verdict
        .excluded
        .iter()
        .any(|e| e.algorithm == column.algorithm)
        || row.verdict.invalid.contains(&column.algorithm)
    {
        " class=\"out\""
    } else {
        ""
    };
    format!(
        "<td{class}>{} ± {}<br><span class=\"range\">{} – {}</span></td>",
        thousands(s.mean, d),
        thousands(s.stdev, d),
        thousands(s.min, d),
        thousands(s.max, d)
    )
}

/// The mean's interval at [`INTERVAL`]; `None` for fewer than two values.
fn interval(s: &Summary) -> Option<(f64, f64)> {
    if s.n < 2 {
        return None;
    }
    let half = t_quantile(0.5 + INTERVAL / 2.0, (s.n - 1) as f64) * s.stdev / (s.n as f64).sqrt();
    Some((s.mean - half, s.mean + half))
}

/// The rows that apply to the world, less the wall time: a machine's speed is no property of
/// a strategy, and without it the page is the same bytes on any machine and thread count.
fn shown(report: &Report) -> impl Iterator<Item = &Row> {
    report
        .shown_rows()
        .filter(|r| r.info.metric != Metric::WallS)
}

/// The rows to chart: the objective's metrics first, then the catalogue's order.
fn charted_rows(report: &Report) -> Vec<&Row> {
    let objective = report.decision.objective.metrics();
    let mut rows: Vec<&Row> = shown(report)
        .filter(|r| {
            report
                .columns
                .iter()
                .any(|c| c.summary(r.info.metric).is_some())
        })
        .collect();
    rows.sort_by_key(|r| !objective.contains(&r.info.metric));
    rows
}

fn metric_panels(out: &mut String, report: &Report) {
    out.push_str("<section><h2>Every seed, per metric</h2>");
    let thinned = thinned_note(report.sweep.seeds.len());
    if let Some(note) = thinned.strip_prefix(" (").and_then(|n| n.strip_suffix(')')) {
        let _ = write!(out, "<p class=\"caption\">Each line shows {note}.</p>");
    }
    out.push_str("<div class=\"panels\">");
    for row in charted_rows(report) {
        out.push_str(&metric_panel(report, row));
    }
    out.push_str("</div></section>");
}

/// A dot panel: a line per strategy, a dot per seed, the mean's interval beneath.
fn metric_panel(report: &Report, row: &Row) -> String {
    let metric = row.info.metric;
    let values = |name: &str| -> Vec<(u64, f64)> {
        report
            .runs
            .iter()
            .filter(|r| r.algorithm == name)
            .filter_map(|r| Some((r.seed, r.metrics()?.value(metric)?)))
            .collect()
    };
    let names: Vec<String> = report.columns.iter().map(|c| c.algorithm.clone()).collect();
    // The axis covers the values and means; an interval wider than that is cut at the frame
    // (with few seeds a t interval can reach far past any value a run can take).
    let all: Vec<f64> = names
        .iter()
        .flat_map(|n| values(n).into_iter().map(|(_, v)| v))
        .collect();
    let unit = row.info.unit;
    let d = row.decimals;
    let x = Axis::covering(all, &[], &axis_label(row.info.name, unit));
    // Newest at the top reads down the page like the table's columns read across.
    let y = Axis::categories(names.iter().rev().cloned().collect(), "strategy");
    let height = 48.0 + 19.0 * names.len() as f64 + 10.0;
    let title = panel_title(row.info);
    let mut chart = Chart::new(&title, 520.0, height, x, y);
    for (i, column) in report.columns.iter().enumerate() {
        let at = (names.len() - 1 - i) as f64;
        let hue = colour(i);
        if let Some(s) = column.summary(metric)
            && let Some((lo, hi)) = interval(s)
        {
            let tip = format!(
                "{}: mean {} ({} CI {} – {})",
                column.algorithm,
                thousands(s.mean, d),
                super::decision::pct(INTERVAL),
                thousands(lo, d),
                thousands(hi, d)
            );
            chart.interval_x(lo, hi, at, s.mean, hue, &tip);
        }
        for (seed, v) in dots(values(&column.algorithm)) {
            let tip = format!(
                "{} seed {seed}: {} {unit}",
                column.algorithm,
                thousands(v, d)
            );
            chart.point(v, at, hue, &tip);
        }
    }
    format!(
        "<figure class=\"metric\" data-metric=\"{}\">{}</figure>",
        row.info.name,
        chart.finish()
    )
}

/// `jobs_done (higher better)`; a metric without a direction is named alone.
fn panel_title(info: &MetricInfo) -> String {
    match info.direction {
        Direction::Neutral => info.name.to_owned(),
        _ => format!("{} ({} better)", info.name, better(info)),
    }
}

fn axis_label(name: &str, unit: &str) -> String {
    if unit.is_empty() || unit == "-" {
        name.to_owned()
    } else {
        format!("{name} [{unit}]")
    }
}

/// The time-series section: one block per strategy, its first recorded seed.
fn timelines(out: &mut String, report: &Report) {
    let recorded: Vec<&Run> = report
        .columns
        .iter()
        .filter_map(|c| {
            report
                .runs
                .iter()
                .find(|r| r.algorithm == c.algorithm && r.timeseries.is_some())
        })
        .collect();
    if recorded.is_empty() {
        return;
    }
    out.push_str("<section><h2>Over time, per strategy</h2><p class=\"caption\">The first seed of each strategy, window by window of simulated time. Grey bands: the world's incidents (hover for which).</p>");
    for run in recorded {
        if let Some(series) = &run.timeseries {
            timeline(out, report, run, series);
        }
    }
    out.push_str("</section>");
}

/// Windows summed `k` at a time so that at most [`MAX_POINTS`] remain: `(start_s, width_s,
/// counts, index of the first window)`. The last bucket counted only until the run's end, so
/// its width stops there: a rate over the whole of it would show every run collapsing at its
/// end. A last bucket less than half full joins the one before, whose rate it would otherwise
/// make from a sliver of time.
fn buckets(series: &Timeseries) -> Vec<(f64, f64, Window, usize)> {
    let k = series.windows.len().div_ceil(MAX_POINTS).max(1);
    let w = series.window_s;
    let mut b: Vec<(f64, f64, Window, usize)> = series
        .windows
        .chunks(k)
        .enumerate()
        .map(|(b, chunk)| {
            let mut sum = Window::default();
            for window in chunk {
                sum.merge(window);
            }
            (b as f64 * k as f64 * w, chunk.len() as f64 * w, sum, b * k)
        })
        .collect();
    if let Some(last) = b.last_mut() {
        let run = series.end_s - last.0;
        if run < last.1 {
            last.1 = run;
        }
    }
    if b.len() >= 2 && b[b.len() - 1].1 < k as f64 * w / 2.0 {
        let (_, width, counts, _) = b.pop().expect("two buckets");
        let before = b.last_mut().expect("two buckets");
        before.1 += width;
        before.2.merge(&counts);
    } else if let Some(last) = b.last_mut().filter(|last| last.1 <= 0.0) {
        // A run that ended where its only window starts: the nominal width, not a division
        // by nothing.
        last.1 = k as f64 * w;
    }
    b
}

fn timeline(out: &mut String, report: &Report, run: &Run, series: &Timeseries) {
    let _ = write!(
        out,
        "<section class=\"timeline\" data-algorithm=\"{}\"><h3>{} · seed {}</h3><div class=\"panels\">",
        escape(&run.algorithm),
        escape(&run.algorithm),
        run.seed
    );
    // A run that ended early: its series stop there, and the page says why.
    let early = match &run.outcome {
        super::Outcome::Finished(_) => None,
        super::Outcome::Stalled { kind, reason, .. }
        | super::Outcome::Unfinished { kind, reason } => Some((kind, reason)),
    };
    if let Some((kind, reason)) = early {
        let _ = write!(
            out,
            "<p class=\"caption early\">This run ended early ({}): {}. Its series stop there.</p>",
            escape(kind),
            escape(reason.trim_end_matches('.'))
        );
    }
    let b = buckets(series);
    let end = b.last().map_or(series.window_s, |(s, w, ..)| s + w);
    let mid = |(start, width, ..): &(f64, f64, Window, usize)| start + width / 2.0;
    let rate = |f: fn(&Window) -> u64| -> Vec<(f64, f64)> {
        b.iter()
            .map(|bucket| (mid(bucket), f(&bucket.2) as f64 / bucket.1))
            .collect()
    };
    let incidents = &report.world.incidents;
    let panel = |title: &str, y_label: &str, lines: Vec<Series>| {
        series_panel(title, y_label, end, incidents, lines)
    };
    let solid = |i: usize| Stroke {
        colour: colour(i),
        dashed: false,
    };
    out.push_str(&panel(
        "Goodput",
        "per second",
        vec![
            ("ok answers".into(), solid(0), rate(|w| w.ok)),
            ("jobs done".into(), solid(2), rate(|w| w.jobs_done)),
        ],
    ));
    out.push_str(&panel(
        "Refusals and errors",
        "per second",
        vec![
            (
                "429s".into(),
                solid(1),
                rate(|w| w.refused_capacity + w.refused_quota + w.refused_limit),
            ),
            ("overloaded".into(), solid(4), rate(|w| w.overloaded)),
            ("errors".into(), solid(3), rate(|w| w.errors)),
            (
                "client timeouts".into(),
                solid(5),
                rate(|w| w.client_timeouts),
            ),
            ("rejected".into(), solid(6), rate(|w| w.rejected)),
        ],
    ));
    out.push_str(&in_flight_panel(report, series, &b, end));
    let limits: Vec<(f64, f64)> = b
        .iter()
        .map(|bucket| {
            let limit = series.limits.get(bucket.3).copied().flatten();
            (bucket.0, limit.unwrap_or(f64::NAN))
        })
        .collect();
    if limits.iter().any(|(_, v)| v.is_finite()) {
        let in_flight: Vec<(f64, f64)> = b
            .iter()
            .map(|bucket| {
                let snaps = series.snapshots.get(bucket.3);
                let total = snaps.map_or(0, |s| s.iter().map(|s| u64::from(s.in_flight)).sum());
                (bucket.0, total as f64)
            })
            .collect();
        out.push_str(&panel(
            "Adaptive limit",
            "requests",
            vec![
                ("limit".into(), solid(4), limits),
                ("in flight, all endpoints".into(), solid(0), in_flight),
            ],
        ));
    }
    let cools = series
        .snapshots
        .iter()
        .any(|s| s.iter().any(|s| s.cooldown.is_some()));
    if cools {
        let counted = |f: fn(&crate::recorder::Snapshot) -> bool| -> Vec<(f64, f64)> {
            b.iter()
                .map(|bucket| {
                    let snaps = series.snapshots.get(bucket.3);
                    let n = snaps.map_or(0, |s| s.iter().filter(|s| f(s)).count());
                    (bucket.0, n as f64)
                })
                .collect()
        };
        out.push_str(&panel(
            "Endpoints out of use",
            "endpoints",
            vec![
                (
                    "in the strategy's cooldown".into(),
                    solid(1),
                    counted(|s| s.cooldown == Some(true)),
                ),
                (
                    "breaker not ready".into(),
                    solid(3),
                    counted(|s| s.state != State::Ready),
                ),
            ],
        ));
    }
    let wait = |f: fn(&Window) -> f64| -> Vec<(f64, f64)> {
        b.iter()
            .map(|bucket| {
                let v = if bucket.2.leases > 0 {
                    f(&bucket.2)
                } else {
                    f64::NAN
                };
                (mid(bucket), v)
            })
            .collect()
    };
    out.push_str(&panel(
        "Queue wait for a lease",
        "ms",
        vec![
            (
                "mean".into(),
                solid(0),
                wait(|w| w.queue_wait_sum_ms / w.leases as f64),
            ),
            (
                "max".into(),
                Stroke {
                    colour: colour(0),
                    dashed: true,
                },
                wait(|w| w.queue_wait_max_ms),
            ),
        ],
    ));
    out.push_str("</div></section>");
}

/// Most endpoints the in-flight panel draws one by one; a world of more draws its busiest and
/// sums the rest, so the page grows with the chart, not with the endpoints.
const MAX_ENDPOINT_LINES: usize = 12;

/// The endpoints the in-flight panel draws one by one, in world order: all of them, or the
/// [`MAX_ENDPOINT_LINES`] with the most requests in flight over the run (the first on ties).
fn drawn_endpoints(series: &Timeseries, endpoints: usize) -> Vec<usize> {
    if endpoints <= MAX_ENDPOINT_LINES {
        return (0..endpoints).collect();
    }
    let mut load = vec![0u64; endpoints];
    for snapshot in &series.snapshots {
        for (e, s) in snapshot.iter().enumerate().take(endpoints) {
            load[e] += u64::from(s.in_flight);
        }
    }
    let mut busiest: Vec<usize> = (0..endpoints).collect();
    busiest.sort_by_key(|&e| (std::cmp::Reverse(load[e]), e));
    busiest.truncate(MAX_ENDPOINT_LINES);
    busiest.sort_unstable();
    busiest
}

/// In flight (solid) against capacity (dashed) per endpoint drawn, the others summed; breaker
/// deaths of the endpoints drawn as rules.
fn in_flight_panel(
    report: &Report,
    series: &Timeseries,
    b: &[(f64, f64, Window, usize)],
    end: f64,
) -> String {
    type Read = fn(&crate::recorder::Snapshot) -> u32;
    let ids = &report.world.endpoints;
    let drawn = drawn_endpoints(series, ids.len());
    let others = ids.len() - drawn.len();
    // The sum of `f` over the endpoints `pick` keeps, bucket by bucket.
    let at = |f: Read, pick: &dyn Fn(usize) -> bool| -> Vec<(f64, f64)> {
        b.iter()
            .map(|bucket| {
                let value = series.snapshots.get(bucket.3).map_or(f64::NAN, |s| {
                    let kept = s.iter().enumerate().filter(|(e, _)| pick(*e));
                    kept.map(|(_, s)| f64::from(f(s))).sum()
                });
                (bucket.0, value)
            })
            .collect()
    };
    let pair = |name: &str, colour: &'static str, pick: &dyn Fn(usize) -> bool| -> [Series; 2] {
        [
            (false, "in flight", (|s| s.in_flight) as Read),
            (true, "capacity", |s| s.capacity),
        ]
        .map(|(dashed, what, f)| {
            (
                format!("{name} {what}"),
                Stroke { colour, dashed },
                at(f, pick),
            )
        })
    };
    let mut lines = Vec::new();
    for &e in &drawn {
        lines.extend(pair(&ids[e], colour(e), &|x| x == e));
    }
    if others > 0 {
        let name = format!("the other {others} endpoints (sum)");
        lines.extend(pair(&name, "#888888", &|x| {
            drawn.binary_search(&x).is_err()
        }));
    }
    let (mut chart, caption) = series_chart(
        "In flight against capacity",
        "requests",
        end,
        &report.world.incidents,
        lines,
    );
    for change in &series.changes {
        if matches!(change.state, State::Dead | State::Revoked)
            && drawn.binary_search(&change.endpoint).is_ok()
        {
            let id = ids.get(change.endpoint).map_or("?", String::as_str);
            let word = super::timeseries::state_name(change.state);
            chart.rule_x(
                change.at_s,
                &format!("{id} {word}"),
                colour(change.endpoint),
            );
        }
    }
    let dead = series.deaths;
    let unkept = dead.saturating_sub(series.changes.len() as u64);
    let unkept = if unkept > 0 {
        format!(", rules for the first {} only", series.changes.len())
    } else {
        String::new()
    };
    let busiest = if others > 0 {
        format!(
            " The {} busiest of {} endpoints one by one (rules for them only), the other {others} summed in grey.",
            drawn.len(),
            ids.len()
        )
    } else {
        String::new()
    };
    format!(
        "<figure class=\"series\" data-panel=\"in_flight\">{}<figcaption>{caption} Dashed: capacity (cycle and incidents applied); dotted rules: breaker trips ({}{unkept}).{busiest}</figcaption></figure>",
        chart.finish(),
        plural(dead as usize, "endpoint death")
    )
}

/// A time-series chart with `lines`, incidents shaded; and the caption's note on them.
fn series_chart(
    title: &str,
    y_label: &str,
    end: f64,
    incidents: &[IncidentSpan],
    lines: Vec<Series>,
) -> (Chart, String) {
    let x = Axis::covering([0.0, end], &[0.0, end], "simulated time [s]");
    let values = lines.iter().flat_map(|(_, _, pts)| pts.iter().map(|p| p.1));
    let y = Axis::covering(values, &[0.0], y_label);
    let mut chart = Chart::new(title, 520.0, 220.0, x, y);
    let mut shaded = 0;
    for incident in incidents {
        if incident.start_s < end {
            shaded += 1;
            let tip = format!(
                "{} on {} from {} s{}",
                incident.what,
                incident.on,
                fixed(incident.start_s, 1),
                if incident.end_s.is_finite() {
                    format!(" to {} s", fixed(incident.end_s, 1))
                } else {
                    String::new()
                }
            );
            chart.band(incident.start_s, incident.end_s, &tip);
        }
    }
    // A series at zero throughout would hide under the axis; the caption names it instead.
    let mut zero = Vec::new();
    for (name, stroke, points) in &lines {
        if points.iter().all(|p| !p.1.is_finite() || p.1 == 0.0) {
            zero.push(name.as_str());
        } else {
            chart.line(points, *stroke, name);
        }
    }
    let mut caption = Vec::new();
    if shaded > 0 {
        caption.push(format!("{} shaded.", plural(shaded, "incident")));
    }
    if !zero.is_empty() {
        caption.push(format!("Zero throughout: {}.", zero.join(", ")));
    }
    (chart, escape(&caption.join(" ")))
}

fn series_panel(
    title: &str,
    y_label: &str,
    end: f64,
    incidents: &[IncidentSpan],
    lines: Vec<Series>,
) -> String {
    let (chart, caption) = series_chart(title, y_label, end, incidents, lines);
    let caption = if caption.is_empty() {
        String::new()
    } else {
        format!("<figcaption>{caption}</figcaption>")
    };
    format!(
        "<figure class=\"series\">{}{caption}</figure>",
        chart.finish()
    )
}

fn endpoint_table(out: &mut String, report: &Report) {
    out.push_str("<section><h2>Admitted requests per endpoint</h2><div class=\"scroll\"><table><thead><tr><th class=\"name\">strategy</th>");
    for id in &report.world.endpoints {
        let _ = write!(out, "<th>{}</th>", escape(id));
    }
    out.push_str("</tr></thead><tbody>");
    for column in &report.columns {
        let _ = write!(
            out,
            "<tr><td class=\"name\">{}</td>",
            escape(&column.algorithm)
        );
        for n in &column.endpoint_admitted {
            let _ = write!(out, "<td>{}</td>", thousands(*n, 1));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div><p class=\"caption\">Mean per finished run.</p></section>");
}

/// The sweep's page: the verdict and its reasons, then a chart per shown metric against the
/// level, the knee marked.
pub fn render_sweep(view: &SweepView<'_>) -> String {
    let mut out = String::new();
    head(&mut out, &format!("simbench sweep · {}", view.scenario));
    let _ = write!(
        out,
        "<header><h1>{} · {} sweep of {}</h1><p class=\"facts\">{} {} · {} jobs · {} levels · rng {} · world {}</p></header>",
        escape(view.scenario),
        view.knob.name(),
        escape(view.algorithm),
        plural(view.seeds.len(), "seed"),
        seeds(view.seeds),
        view.jobs,
        view.levels.len(),
        view.rng,
        view.world_hash
    );
    out.push_str("<section class=\"verdict\"><ul>");
    for line in super::sweep::reasons(view)
        .into_iter()
        .chain(super::sweep::operating_point(view))
        .chain(super::sweep::run_notes(view))
    {
        let _ = write!(out, "<li>{}</li>", escape(line.trim_start()));
    }
    out.push_str("</ul></section><section><h2>Against the level</h2><div class=\"panels\">");
    for metric in crate::knee::SHOWN {
        if view.applies.get(metric as usize).copied().unwrap_or(true) {
            out.push_str(&sweep_panel(view, metric));
        }
    }
    let _ = write!(
        out,
        "</div><p class=\"caption\">Each dot is one seed's value at a level{}; the bar is the mean and its {} confidence interval. The dotted rule marks the knee (the most load at which the harness still measures the provider).</p></section></main></body></html>",
        thinned_note(view.seeds.len()).replace("per strategy", "per level"),
        super::decision::pct(INTERVAL)
    );
    out.push('\n');
    out
}

fn sweep_panel(view: &SweepView<'_>, metric: Metric) -> String {
    let info = &CATALOGUE[metric as usize];
    let per_level: Vec<Vec<(u64, f64)>> = view
        .runs
        .iter()
        .map(|runs| {
            runs.iter()
                .filter_map(|r| Some((r.seed, r.metrics()?.value(metric)?)))
                .collect()
        })
        .collect();
    let summaries: Vec<Option<Summary>> = per_level
        .iter()
        .map(|vs| Summary::of(&vs.iter().map(|v| v.1).collect::<Vec<_>>()))
        .collect();
    let values = per_level.iter().flatten().map(|v| v.1);
    let x = Axis::covering(view.levels.iter().copied(), &[], &view.knob.axis_label())
        .with_ticks_at(view.levels);
    let y = Axis::covering(values, &[0.0], &axis_label(info.name, info.unit));
    let title = panel_title(info);
    let mut chart = Chart::new(&title, 520.0, 240.0, x, y);
    let d = decimals_at(info.unit, scale_of(per_level.iter().flatten().map(|v| v.1)));
    let means: Vec<(f64, f64)> = view
        .levels
        .iter()
        .zip(&summaries)
        .map(|(&level, s)| (level, s.as_ref().map_or(f64::NAN, |s| s.mean)))
        .collect();
    chart.line(
        &means,
        Stroke {
            colour: colour(0),
            dashed: false,
        },
        "mean",
    );
    for (i, &level) in view.levels.iter().enumerate() {
        let name = SweepView::level_name(view.knob, level);
        if let Some(s) = &summaries[i]
            && let Some((lo, hi)) = interval(s)
        {
            let tip = format!(
                "{name}: mean {} (CI {} – {})",
                thousands(s.mean, d),
                thousands(lo, d),
                thousands(hi, d)
            );
            chart.interval_y(level, lo, hi, s.mean, colour(0), &tip);
        }
        for (seed, v) in dots(per_level[i].clone()) {
            let tip = format!("{name}, seed {seed}: {} {}", thousands(v, d), info.unit);
            chart.point(level, v, colour(1), &tip);
        }
    }
    let knee = view.analysis.knee.level;
    if let Some(&level) = view.levels.get(knee) {
        let word = if view.analysis.knee.flagged() {
            "knee (fallback)"
        } else {
            "knee"
        };
        chart.rule_x(level, word, colour(3));
    }
    format!(
        "<figure class=\"metric\" data-metric=\"{}\">{}</figure>",
        info.name,
        chart.finish()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile;
    use crate::recorder::Snapshot;
    use crate::sweep::{self, SweepConfig};

    /// A world of many endpoints draws the busiest twelve, in world order, the first on ties;
    /// a small one draws all.
    #[test]
    fn the_in_flight_panel_draws_the_busiest_endpoints() {
        let snap = |in_flight| Snapshot {
            in_flight,
            capacity: 4,
            state: State::Ready,
            cooldown: None,
        };
        // Endpoint e has e % 7 in flight in the first window and 1 in the second.
        let series = Timeseries {
            end_s: 2.0,
            window_s: 1.0,
            windows: vec![Window::default(); 2],
            snapshots: vec![(0..30).map(|e| snap(e % 7)).collect(), vec![snap(1); 30]],
            limits: vec![None; 2],
            changes: Vec::new(),
            deaths: 0,
        };
        assert_eq!(
            drawn_endpoints(&series, 30),
            [4, 5, 6, 11, 12, 13, 18, 19, 20, 25, 26, 27]
        );
        assert_eq!(drawn_endpoints(&series, 12), (0..12).collect::<Vec<_>>());
    }

    fn report(algorithms: &[&str], seeds: u32, window_s: Option<f64>) -> Report {
        let world = compile::builtin_bursty();
        let names: Vec<String> = algorithms.iter().map(|s| (*s).to_owned()).collect();
        let seed_list = sweep::seeds(&world, seeds);
        let plan = sweep::plan(&names, &seed_list);
        let clock = || 0.0;
        let config = SweepConfig {
            rng: crate::harness::RngScheme::Native,
            threads: 1,
            wall_budget_s: 600.0,
            clock: &clock,
            on_run: &|_| {},
            window_s,
        };
        let runs = sweep::sweep(&world, &plan, &config);
        let info = super::super::SweepInfo {
            seeds: seed_list,
            rng: "native",
            wall_s: 0.0,
        };
        super::super::analyse(&world, info, runs)
    }

    #[test]
    fn a_metric_panel_plots_one_dot_per_seed_and_strategy() {
        let report = report(&["wait", "aimd"], 3, Some(1.0));
        let html = render(&report);
        let panel = html
            .split("<figure class=\"metric\" data-metric=\"jobs_done\">")
            .nth(1)
            .and_then(|rest| rest.split("</figure>").next())
            .expect("a jobs_done panel");
        assert_eq!(panel.matches("class=\"pt\"").count(), 6);
        assert_eq!(panel.matches("class=\"ci\"").count(), 2);
        // A timeline per strategy, and aimd's adaptive limit among its panels.
        assert_eq!(html.matches("<section class=\"timeline\"").count(), 2);
        assert!(html.contains("Adaptive limit"));
        assert!(!html.contains("<script"));
        assert!(
            !html.contains("http://")
                || html.matches("http://").count()
                    == html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
        );
    }

    /// Past [`MAX_DOTS`] seeds a line shows that many at evenly spaced ranks, the extremes
    /// included; up to it, every seed in run order.
    #[test]
    fn many_seeds_are_thinned_to_evenly_spaced_ranks() {
        let few: Vec<(u64, f64)> = (0..MAX_DOTS as u64).map(|s| (s, -(s as f64))).collect();
        assert_eq!(dots(few.clone()), few);
        // 10,000 seeds, values a shuffle of 0..10000 (seed s has value 7s mod 10001 - 1).
        let many: Vec<(u64, f64)> = (1..=10_000u64)
            .map(|s| (s, ((7 * s) % 10_001) as f64 - 1.0))
            .collect();
        let shown = dots(many.clone());
        assert_eq!(shown.len(), MAX_DOTS);
        assert_eq!(shown.first().map(|d| d.1), Some(0.0));
        assert_eq!(shown.last().map(|d| d.1), Some(9_999.0));
        // Rank j of 500 is value round(j · 9999 / 499): the quantiles, in order.
        for (j, (seed, v)) in shown.iter().enumerate() {
            assert_eq!(*v, (j as f64 * 9_999.0 / 499.0).round(), "rank {j}");
            assert!(many.contains(&(*seed, *v)), "a real seed's value");
        }
        assert!(thinned_note(MAX_DOTS).is_empty());
        assert!(thinned_note(10_000).contains("500 of the 10,000 seeds"));
    }

    #[test]
    fn without_the_recorder_there_are_no_timelines_and_the_page_is_deterministic() {
        let report = report(&["wait"], 2, None);
        let html = render(&report);
        assert!(!html.contains("class=\"timeline\""));
        assert_eq!(html, render(&report));
    }

    #[test]
    fn buckets_sum_every_window() {
        let mut series = Timeseries {
            end_s: f64::INFINITY,
            window_s: 0.5,
            windows: Vec::new(),
            snapshots: Vec::new(),
            limits: Vec::new(),
            changes: Vec::new(),
            deaths: 0,
        };
        for i in 0..1001 {
            series.windows.push(Window {
                requests: i,
                ..Window::default()
            });
        }
        let b = buckets(&series);
        assert!(b.len() <= MAX_POINTS);
        let total: u64 = b.iter().map(|x| x.2.requests).sum();
        assert_eq!(total, (0..1001).sum::<u64>());
        assert_eq!(b[1].0, 2.0);
    }

    /// The last window counts only until the run's end: its rate is over that stretch, and a
    /// sliver at the end joins the bucket before it.
    #[test]
    fn the_last_bucket_is_as_wide_as_the_run_went() {
        let series = |end_s: f64, windows: usize| Timeseries {
            end_s,
            window_s: 100.0,
            windows: vec![
                Window {
                    ok: 50,
                    ..Window::default()
                };
                windows
            ],
            snapshots: Vec::new(),
            limits: Vec::new(),
            changes: Vec::new(),
            deaths: 0,
        };
        // 609.65 s in 100 s windows: the last, [600, 700), ran 9.65 s and joins [500, 600).
        let b = buckets(&series(609.65, 7));
        assert_eq!(b.len(), 6);
        assert!((b[5].1 - 109.65).abs() < 1e-9);
        assert_eq!(b[5].2.ok, 100);
        // 660 s: the last ran 60 s of 100, and its rate is over those.
        let b = buckets(&series(660.0, 7));
        assert_eq!(b.len(), 7);
        assert!((b[6].1 - 60.0).abs() < 1e-9);
        // One window wider than the run: the run's own length.
        let b = buckets(&series(30.0, 1));
        assert_eq!((b.len(), b[0].1), (1, 30.0));
        // A run that ended where its only window starts.
        let b = buckets(&series(0.0, 1));
        assert_eq!(b[0].1, 100.0);
    }
}
