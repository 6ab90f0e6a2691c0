//! The markdown report (`--markdown PATH`): the scenario, the full table (mean ± stdev and
//! min–max per cell), admissions per endpoint, error classes, and the notes.
//!
//! Owns the layout of the file teams paste into reviews. Returns a `String`; never writes it.

use super::format::{fixed, seeds, thousands};
use super::terminal::{MetricChoice, chosen_rows, column_title, notes, verdict_text};
use super::{Column, Report, Row};
use crate::metrics::Direction;
use crate::text::plural;

/// Renders the markdown report.
/// The verdict paragraph: the decision in bold, then the objective and what others break.
fn verdict_paragraph(out: &mut String, report: &Report) {
    let d = &report.decision;
    out.push_str(&format!(
        "**Verdict:** {}.\n\n",
        crate::text::escape(&d.headline())
    ));
    out.push_str(&format!("- {}\n", capitalised(&d.objective_line())));
    for line in d.notes() {
        out.push_str(&format!("- {}\n", crate::text::escape(&line)));
    }
    if let Some(stop) = &report.sequential {
        out.push_str(&format!("- {}\n", capitalised(&stop.describe())));
    }
    out.push('\n');
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

pub fn render(report: &Report) -> String {
    render_rows(report, &MetricChoice::All)
}

/// [`render`] with the metric table cut to `choice`'s rows (`--metrics`); the markdown's
/// default is every row, since it is the full report teams paste into reviews.
pub fn render_rows(report: &Report, choice: &MetricChoice) -> String {
    let mut out = String::new();
    let w = &report.world;
    out.push_str(&format!(
        "### {}\n\n{}\n\n",
        crate::text::md_code(&w.name),
        crate::text::md_text(&w.summary)
    ));
    out.push_str(&format!(
        "{} {} · {} · horizon {} s simulated · wall {} s · world `{}`\n\n",
        plural(report.sweep.seeds.len(), "seed"),
        seeds(&report.sweep.seeds),
        super::format::world_size(w.jobs, w.steps_per_job, w.calls_per_step, &w.load),
        super::format::seconds(w.horizon_s),
        fixed(report.sweep.wall_s, 1),
        w.hash
    ));
    verdict_paragraph(&mut out, report);
    metric_table(&mut out, report, choice);
    endpoint_table(&mut out, report);
    error_class_table(&mut out, report);
    out.push_str("#### Notes\n\n");
    for line in notes(report, "**bold**").iter().skip(1) {
        // An indented note belongs to the one above it (a strategy's seeds, its metrics).
        let nested = if line.starts_with(' ') { "  " } else { "" };
        out.push_str(&format!("{nested}- {}\n", line.trim_start()));
    }
    out.push_str("- Each cell: mean ± stdev, then min – max over the finished runs.\n");
    out
}

/// `| a | b |` and a line break; a `|` inside a cell (an endpoint id may hold one) is escaped so
/// it does not start another column.
fn table_row(cells: &[String]) -> String {
    let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
    format!("| {} |\n", cells.join(" | "))
}

fn table_header(out: &mut String, first: &[&str], columns: &[Column], last: &[&str]) {
    let mut cells: Vec<String> = first.iter().map(|s| s.to_string()).collect();
    cells.extend(
        columns
            .iter()
            .map(|c| crate::text::md_code(&column_title(c))),
    );
    cells.extend(last.iter().map(|s| s.to_string()));
    out.push_str(&table_row(&cells));
    out.push_str(&"|---".repeat(cells.len()));
    out.push_str("|\n");
}

fn metric_table(out: &mut String, report: &Report, choice: &MetricChoice) {
    table_header(
        out,
        &["metric", "unit", "better"],
        &report.columns,
        &["verdict"],
    );
    for row in chosen_rows(report, choice) {
        let info = row.info;
        let mut cells = vec![
            format!(
                "{}{}{}",
                info.name,
                if info.gated { " †" } else { "" },
                if info.latency { "‡" } else { "" }
            ),
            info.unit.to_string(),
            match info.direction {
                Direction::Higher => "higher".into(),
                Direction::Lower => "lower".into(),
                Direction::Neutral => "—".into(),
            },
        ];
        cells.extend(report.columns.iter().map(|c| cell(row, c)));
        cells.push(verdict(row));
        out.push_str(&table_row(&cells));
    }
    out.push('\n');
}

/// `**mean** ± stdev<br>min – max`, bold for a winner, bracketed if excluded by the gate.
fn cell(row: &Row, column: &Column) -> String {
    let Some(s) = column.summary(row.info.metric) else {
        return if column.stats.is_empty() {
            "—".into()
        } else {
            "n/a".into()
        };
    };
    let d = row.decimals;
    let mean = thousands(s.mean, d);
    let mean = if row.verdict.winners.contains(&column.algorithm) {
        format!("**{mean}**")
    } else {
        mean
    };
    let text = format!(
        "{mean} ± {}<br>{} – {}",
        thousands(s.stdev, d),
        thousands(s.min, d),
        thousands(s.max, d)
    );
    if row
        .verdict
        .excluded
        .iter()
        .any(|e| e.algorithm == column.algorithm)
        || row.verdict.invalid.contains(&column.algorithm)
    {
        format!("({text})")
    } else {
        text
    }
}

fn verdict(row: &Row) -> String {
    verdict_text(&row.verdict, &crate::text::md_code)
}

fn endpoint_table(out: &mut String, report: &Report) {
    out.push_str("#### Admitted requests per endpoint (mean per finished run)\n\n");
    let mut header: Vec<String> = vec!["algorithm".into()];
    header.extend(
        report
            .world
            .endpoints
            .iter()
            .map(|e| crate::text::md_code(e)),
    );
    out.push_str(&table_row(&header));
    out.push_str(&"|---".repeat(header.len()));
    out.push_str("|\n");
    for column in &report.columns {
        let mut cells = vec![crate::text::md_code(&column.algorithm)];
        cells.extend(column.endpoint_admitted.iter().map(|&n| thousands(n, 1)));
        out.push_str(&table_row(&cells));
    }
    out.push('\n');
}

fn error_class_table(out: &mut String, report: &Report) {
    let mut classes: Vec<&str> = report
        .columns
        .iter()
        .flat_map(|c| c.error_classes.keys().map(String::as_str))
        .collect();
    classes.sort_unstable();
    classes.dedup();
    out.push_str("#### Failed attempts by error class (mean per finished run)\n\n");
    if classes.is_empty() {
        out.push_str("No attempt failed.\n\n");
        return;
    }
    let mut header: Vec<String> = vec!["algorithm".into()];
    header.extend(classes.iter().map(|c| format!("`{c}`")));
    out.push_str(&table_row(&header));
    out.push_str(&"|---".repeat(header.len()));
    out.push_str("|\n");
    for column in &report.columns {
        let mut cells = vec![crate::text::md_code(&column.algorithm)];
        cells.extend(
            classes
                .iter()
                .map(|c| thousands(column.error_classes.get(*c).copied().unwrap_or(0.0), 1)),
        );
        out.push_str(&table_row(&cells));
    }
    out.push('\n');
}
