//! The terminal table: one row per metric, one column per algorithm, a verdict column, and the
//! notes that explain every blank or bracketed cell.
//!
//! Owns the layout of `simbench run`'s standard output. Returns a `String`; whether it is
//! coloured is the caller's decision (a terminal without `NO_COLOR`), never detected here.

use tabled::builder::Builder;
use tabled::settings::object::{Cell, Columns, Rows};
use tabled::settings::{Alignment, Color, Style};

use super::format::{fixed, percent, seeds, whole_percent};
use super::rank::{COMPLETION_FLOOR, Kind, SIGNIFICANCE_K, TIE_TOLERANCE, Verdict};
use super::{Column, Report, Row};
use crate::metrics::{Direction, Metric, MetricInfo};
use crate::text::plural;

/// How to render the table.
#[derive(Clone, Debug, Default)]
pub struct TerminalOptions {
    /// Colour winners, excluded cells and unfinished columns with ANSI escapes.
    pub colour: bool,
    /// Which metric rows to show.
    pub metrics: MetricChoice,
    /// Characters per line to fit in (the terminal's width); `None` for no limit.
    pub width: Option<usize>,
}

impl TerminalOptions {
    /// Every metric, no width limit: the whole table.
    pub fn full(colour: bool) -> TerminalOptions {
        TerminalOptions {
            colour,
            metrics: MetricChoice::All,
            width: None,
        }
    }
}

/// Which metric rows the table shows (always only those that apply to the world).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum MetricChoice {
    /// The objective's metrics and [`KEY_METRICS`].
    #[default]
    Compact,
    /// Every metric of the catalogue.
    All,
    /// These, in catalogue order.
    Only(Vec<Metric>),
}

/// The metrics the compact table shows besides the objective's: what a team reads first
/// (and `stall_rate` when some run stalled).
pub const KEY_METRICS: &[Metric] = &[
    Metric::JobsDone,
    Metric::ThroughputRps,
    Metric::AttemptsPerCompletedJob,
    Metric::RefusalRate,
    Metric::ErrorRate,
    Metric::SuccessfulJobLatencyP99Ms,
    Metric::ObservedP99Ms,
    Metric::QueueShare,
    Metric::TtftP99Ms,
    Metric::TokensWasted,
    Metric::Cost,
];

/// Columns before the first algorithm: metric (with its unit), better.
const LEAD: usize = 2;

/// Renders the verdict, the table and its notes.
pub fn render(report: &Report, options: &TerminalOptions) -> String {
    let mut out = verdict(report);
    out.push_str(&table(report, options));
    match options.width {
        Some(width) => wrap_lines(&out, width),
        None => out,
    }
}

/// The verdict block printed above the table.
pub fn verdict(report: &Report) -> String {
    let d = &report.decision;
    let mut out = format!("verdict: {}\n", crate::text::escape(&d.headline()));
    out.push_str(&format!("  {}\n", d.objective_line()));
    for line in d.notes() {
        out.push_str(&format!("  {}\n", crate::text::escape(&line)));
    }
    if let Some(stop) = &report.sequential {
        out.push_str(&format!("  {}\n", stop.describe()));
    }
    out
}

/// The rows `choice` shows, in catalogue order (never the wall time: it is in the footer).
pub(super) fn chosen_rows<'a>(report: &'a Report, choice: &MetricChoice) -> Vec<&'a Row> {
    let objective = report.decision.objective.metrics();
    // A stall is news: its rate joins the compact table whenever some run stalled.
    let stalled = report.columns.iter().any(|c| !c.stalls.is_empty());
    report
        .shown_rows()
        .filter(|r| r.info.metric != Metric::WallS)
        .filter(|r| match choice {
            MetricChoice::All => true,
            MetricChoice::Compact => {
                objective.contains(&r.info.metric)
                    || KEY_METRICS.contains(&r.info.metric)
                    || (stalled && r.info.metric == Metric::StallRate)
            }
            MetricChoice::Only(list) => list.contains(&r.info.metric),
        })
        .collect()
}

/// The table, split into blocks of algorithm columns that each fit `options.width`; the
/// verdict column comes with the last block.
fn table(report: &Report, options: &TerminalOptions) -> String {
    let rows = chosen_rows(report, &options.metrics);
    let columns: Vec<&Column> = report.columns.iter().collect();
    let blocks = blocks(report, &rows, &columns, options.width);
    let mut out = String::new();
    for (i, block) in blocks.iter().enumerate() {
        let last = i + 1 == blocks.len();
        out.push_str(&block_table(&rows, block, last, options.colour));
        out.push('\n');
    }
    for line in notes(report, "*") {
        out.push_str(&line);
        out.push('\n');
    }
    let shown = rows.len();
    let applicable = report
        .shown_rows()
        .filter(|r| r.info.metric != Metric::WallS)
        .count();
    if shown < applicable {
        out.push_str(&format!(
            "showing {shown} of {applicable} metrics: --all-metrics for every one, --metrics a,b,c for a choice.\n"
        ));
    }
    out
}

/// Algorithm columns grouped so that each block's table fits `width`.
fn blocks<'a>(
    report: &Report,
    rows: &[&Row],
    columns: &[&'a Column],
    width: Option<usize>,
) -> Vec<Vec<&'a Column>> {
    let Some(width) = width else {
        return vec![columns.to_vec()];
    };
    let widest = |cells: &mut dyn Iterator<Item = String>| {
        cells.map(|c| c.chars().count()).max().unwrap_or(0) + 3
    };
    let lead = widest(&mut rows.iter().map(|r| body_row_lead(r)[0].clone()))
        + widest(
            &mut rows
                .iter()
                .map(|r| body_row_lead(r)[1].clone())
                .chain(["better".into()]),
        )
        + 1;
    let verdict = widest(
        &mut rows
            .iter()
            .map(|r| verdict_text(&r.verdict, &|n| crate::text::escape(n).into_owned()))
            .chain(["verdict".into()]),
    );
    let column_width =
        |c: &Column| widest(&mut rows.iter().map(|r| cell(r, c)).chain([column_title(c)]));
    let mut out: Vec<Vec<&Column>> = vec![Vec::new()];
    let mut used = lead;
    for column in columns {
        let w = column_width(column);
        let current = out.last_mut().expect("a block");
        if !current.is_empty() && used + w > width {
            out.push(Vec::new());
            used = lead;
        }
        out.last_mut().expect("a block").push(column);
        used += w;
    }
    if used + verdict > width
        && out.last().is_some_and(|b| !b.is_empty())
        && report.columns.len() > 1
    {
        // The verdict column gets a block of its own rather than an overlong line.
        out.push(Vec::new());
    }
    out
}

/// One block's table: the lead columns, `columns`, and the verdict column when `last`.
fn block_table(rows: &[&Row], columns: &[&Column], last: bool, colour_on: bool) -> String {
    let mut builder = Builder::default();
    let mut head = vec!["metric [unit]".to_string(), "better".into()];
    head.extend(columns.iter().map(|c| column_title(c)));
    if last {
        head.push("verdict".into());
    }
    builder.push_record(head);
    for row in rows {
        let mut cells = body_row_lead(row);
        cells.extend(columns.iter().map(|c| cell(row, c)));
        if last {
            cells.push(verdict_text(&row.verdict, &|n| {
                crate::text::escape(n).into_owned()
            }));
        }
        builder.push_record(cells);
    }
    let mut table = builder.build();
    table.with(Style::rounded());
    table.modify(Columns::new(LEAD..LEAD + columns.len()), Alignment::right());
    table.modify(Rows::first(), Alignment::center());
    if colour_on {
        colour(&mut table, rows, columns, last);
    }
    table.to_string()
}

/// Greedy word wrap of every line longer than `width`, continuing with the line's indent
/// plus two spaces; table lines (box drawing) are never wrapped.
fn wrap_lines(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let boxed = line.starts_with(['╭', '│', '├', '╰']);
        if boxed || line.chars().count() <= width {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let hanging = " ".repeat(indent + 2);
        let mut current = line[..indent].to_string();
        let mut fresh = true;
        for word in line.split_whitespace() {
            let needed = current.chars().count() + usize::from(!fresh) + word.chars().count();
            if !fresh && needed > width {
                out.push_str(&current);
                out.push('\n');
                current = hanging.clone();
                fresh = true;
            }
            if !fresh {
                current.push(' ');
            }
            current.push_str(word);
            fresh = false;
        }
        out.push_str(&current);
        out.push('\n');
    }
    out
}

/// The algorithm's name, marked `(n/a)` if unsuited and with its unfinished- and stalled-run
/// counts.
pub(super) fn column_title(column: &Column) -> String {
    let mut title = crate::text::escape(&column.algorithm).into_owned();
    if column.unsuited.is_some() {
        title.push_str(" (n/a)");
    }
    if !column.unfinished.is_empty() {
        title.push_str(&format!(
            " ({}/{} {})",
            column.unfinished.len(),
            column.runs,
            column.unfinished_word()
        ));
    }
    if !column.stalls.is_empty() {
        title.push_str(&format!(
            " ({}/{} {})",
            column.stalls.len(),
            column.runs,
            column.stall_word()
        ));
    }
    title
}

/// The metric's name with its unit and marks, and which way is better.
fn body_row_lead(row: &Row) -> Vec<String> {
    let info = row.info;
    let gated = if info.gated { " †" } else { "" };
    let latency = if info.latency { "‡" } else { "" };
    let name = format!("{} [{}]{gated}{latency}", info.name, info.unit);
    vec![name, better(info).to_string()]
}

fn better(info: &MetricInfo) -> &'static str {
    match info.direction {
        Direction::Higher => "higher",
        Direction::Lower => "lower",
        Direction::Neutral => "—",
    }
}

/// `mean ± stdev` and a marker: `*` for a winner, brackets for an algorithm the gate excluded.
fn cell(row: &Row, column: &Column) -> String {
    let (info, verdict) = (row.info, &row.verdict);
    let Some(summary) = column.summary(info.metric) else {
        return if column.stats.is_empty() {
            "—".into()
        } else {
            "n/a ".into()
        };
    };
    let d = row.decimals;
    let text = format!("{} ± {}", fixed(summary.mean, d), fixed(summary.stdev, d));
    if verdict.winners.contains(&column.algorithm) {
        format!("{text}*")
    } else if excluded(verdict, column) {
        format!("({text})")
    } else {
        format!("{text} ")
    }
}

fn excluded(verdict: &Verdict, column: &Column) -> bool {
    verdict
        .excluded
        .iter()
        .any(|e| e.algorithm == column.algorithm)
        || verdict.invalid.contains(&column.algorithm)
}

/// The verdict column: who won, or why nobody did; `name` spells an algorithm's name.
pub(super) fn verdict_text(verdict: &Verdict, name: &dyn Fn(&str) -> String) -> String {
    match (
        verdict.kind,
        verdict.winners.as_slice(),
        &verdict.not_compared,
    ) {
        (Kind::Neutral, ..) => "—".into(),
        (_, _, Some(only)) => format!("only {} eligible", name(only)),
        (Kind::TooFew, ..) => "too few to compare".into(),
        (Kind::AllZero, ..) => "zero for all".into(),
        (Kind::Ranked, [one], _) => name(one),
        (Kind::Ranked, several, _) => {
            let names: Vec<String> = several.iter().map(|n| name(n)).collect();
            format!("tie: {}", names.join(", "))
        }
    }
}

fn colour(table: &mut tabled::Table, rows: &[&Row], columns: &[&Column], with_verdict: bool) {
    for (c, column) in columns.iter().enumerate() {
        let col = LEAD + c;
        if !column.unfinished.is_empty() {
            table.modify(Cell::new(0, col), Color::FG_RED);
        }
        for (r, row) in rows.iter().enumerate() {
            let winner = row.verdict.winners.contains(&column.algorithm);
            if winner {
                table.modify(Cell::new(r + 1, col), Color::FG_GREEN);
            } else if column.unsuited.is_some() || excluded(&row.verdict, column) {
                table.modify(Cell::new(r + 1, col), Color::FG_BRIGHT_BLACK);
            }
        }
    }
    if !with_verdict {
        return;
    }
    let verdict_col = LEAD + columns.len();
    for (r, row) in rows.iter().enumerate() {
        if row.verdict.kind == Kind::Ranked {
            table.modify(Cell::new(r + 1, verdict_col), Color::FG_GREEN);
        }
    }
}

/// The lines under the table: what ran, how to read it, and every exception; `winner` names
/// how a winning cell is marked. Escaped (see [`crate::text`]).
pub(super) fn notes(report: &Report, winner: &str) -> Vec<String> {
    let w = &report.world;
    let mut lines = vec![
        format!(
            "{} · {} {} · {} · horizon {} s · wall {} s · world {}",
            w.name,
            plural(report.sweep.seeds.len(), "seed"),
            seeds(&report.sweep.seeds),
            super::format::world_size(w.jobs, w.steps_per_job, w.calls_per_step, &w.load),
            super::format::seconds(w.horizon_s),
            fixed(report.sweep.wall_s, 1),
            w.hash
        ),
        format!(
            "mean ± sample stdev over seeds. {winner} = best mean, or not separable from the leader: within {} of it, or within {} paired standard errors of the per-seed differences (the reference's winner rule{}).",
            whole_percent(TIE_TOLERANCE),
            fixed(SIGNIFICANCE_K, 0),
            super::rank::rule_confidence_note(
                report.sweep.seeds.len(),
                report.decision.objective.confidence
            ),
        ),
        format!(
            "† gated: only algorithms whose mean jobs_done reaches {} of the best compete; (brackets) = excluded by that gate.",
            whole_percent(COMPLETION_FLOOR)
        ),
    ];
    if !report.gate.excluded.is_empty() {
        let list: Vec<String> = report
            .gate
            .excluded
            .iter()
            .map(|e| format!("{} {}", e.algorithm, percent(e.completion_ratio)))
            .collect();
        lines.push(format!(
            "excluded from † rows (completion vs the best): {}",
            list.join(", ")
        ));
    }
    if report.shown_rows().any(|r| r.info.latency) {
        lines.push(format!(
            "‡ latency: only algorithms whose every run passes the validity gate compete (p99 queue wait under {} of p99 observed{}); (brackets) = INVALID.",
            whole_percent(report.world.max_queue_share),
            report
                .world
                .knee_concurrency
                .map_or(String::new(), |k| format!(", at most {k} jobs in flight"))
        ));
    }
    let settings: Vec<String> = report.settings_that_ran().map(|s| s.describe()).collect();
    if !settings.is_empty() {
        lines.push(format!(
            "as configured by the file: {}.",
            settings.join("; ")
        ));
    }
    if let Some(text) = report.not_applicable_text() {
        lines.push(format!(
            "not applicable to this world, so not shown: {text}."
        ));
    }
    let undefined = report.undefined_lines();
    if !undefined.is_empty() {
        lines.push(
            "undefined (nothing to compute from; n/a where no run has a value, otherwise the mean of the runs that have one):".into(),
        );
        lines.extend(undefined.into_iter().map(|l| format!("  {l}")));
    }
    for column in report.columns.iter().filter(|c| !c.invalid.is_empty()) {
        let (_, first) = &column.invalid[0];
        lines.push(format!(
            "INVALID {}: {} of {} runs — {first}",
            column.algorithm,
            column.invalid.len(),
            column.runs
        ));
    }
    lines.extend(not_compared_line(report));
    for column in &report.columns {
        if let Some(reason) = &column.unsuited {
            lines.push(format!(
                "n/a: {} is unsuited to this world and never ranked: {reason}",
                column.algorithm
            ));
        }
    }
    for (name, reason) in &report.not_run {
        lines.push(format!(
            "not run: {name} is unsuited to this world ({reason}); `--algorithms {name}` runs it, \
             shown but never ranked."
        ));
    }
    for column in report.columns.iter().filter(|c| !c.stalls.is_empty()) {
        lines.push(format!(
            "{}: {} on {} of {} seeds (stall_rate); a stalled run counts with what it did until \
             the stall, its stuck jobs under jobs_stalled.",
            column.algorithm,
            column.stall_word(),
            column.stalls.len(),
            column.runs,
        ));
        for (seed, _, reason) in &column.stalls {
            lines.push(format!("  seed {seed}: {reason}"));
        }
    }
    for column in report.columns.iter().filter(|c| !c.unfinished.is_empty()) {
        lines.push(format!(
            "{}: {} of {} runs {}; it is left out of every ranking.",
            column.algorithm,
            column.unfinished.len(),
            column.runs,
            column.unfinished_word()
        ));
        for (seed, _, reason) in &column.unfinished {
            lines.push(format!("  seed {seed}: {reason}"));
        }
    }
    // Names, ids and reasons come from the scenario file: control characters stay visible.
    lines
        .iter()
        .map(|l| crate::text::escape(l).into_owned())
        .collect()
}

/// `not compared: sticky on every † row` or `… on throughput_rps, utilization`.
fn not_compared_line(report: &Report) -> Option<String> {
    let pairs: Vec<(&str, &str)> = report
        .shown_rows()
        .filter_map(|r| r.verdict.not_compared.as_deref().map(|a| (a, r.info.name)))
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let gated = report.shown_rows().filter(|r| r.info.gated).count();
    let mut algorithms: Vec<&str> = pairs.iter().map(|p| p.0).collect();
    algorithms.dedup();
    let parts: Vec<String> = algorithms
        .iter()
        .map(|&a| {
            let metrics: Vec<&str> = pairs.iter().filter(|p| p.0 == a).map(|p| p.1).collect();
            if metrics.len() == gated {
                format!("{a} on every † row")
            } else {
                format!("{a} on {}", metrics.join(", "))
            }
        })
        .collect();
    Some(format!(
        "not compared (the only eligible algorithm, so not crowned): {}",
        parts.join("; ")
    ))
}
