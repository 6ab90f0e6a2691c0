//! The CSV export (`--csv PATH`): one row per (algorithm, seed) with every metric, for
//! spreadsheets and plotting.
//!
//! Owns the column layout: `scenario,world_hash,rng,algorithm,seed,outcome,valid` (so files
//! from several runs stack), then the catalogue's metric names in order, the same for every
//! world. Values are rounded to 6 decimals (money below 0.1 to 6 significant digits); a run that did not finish
//! has empty metric cells, and so does a metric that does not apply to the world or that the
//! run has nothing to compute from (see the JSON's `undefined` for the reason). RFC 4180
//! quoting, `\n` line ends; a text cell's control and bidi characters are written as the
//! terminal shows them (`\u{1b}`), so every row is one line and printing the file is safe. Streams into any `io::Write`, row by row; where it goes is the
//! caller's decision.

use std::io::{self, Write};

use super::format::round_value;
use super::{Outcome, Report, Run};
use crate::metrics::{CATALOGUE, Metric};

/// Renders the CSV export.
pub fn render(report: &Report) -> String {
    let mut bytes = Vec::new();
    write(report, &mut bytes).expect("writing to memory cannot fail");
    String::from_utf8(bytes).expect("the cells are UTF-8")
}

/// Writes the CSV export.
pub fn write(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let mut header = vec![
        "scenario",
        "world_hash",
        "rng",
        "algorithm",
        "seed",
        "outcome",
        "valid",
    ];
    header.extend(CATALOGUE.iter().map(|m| m.name));
    writeln!(out, "{}", header.join(","))?;
    for run in &report.runs {
        let mut cells = key_cells(report, run);
        let valid = report.invalid_reason(run).is_none();
        cells.extend(outcome_cells(run, valid, &|m| report.applies(m)));
        writeln!(out, "{}", cells.join(","))?;
    }
    Ok(())
}

/// A run's key cells: `scenario,world_hash,rng,algorithm,seed` (shared with the timeseries
/// export, so its rows join this file's).
pub(crate) fn key_cells(report: &Report, run: &Run) -> Vec<String> {
    vec![
        field(&report.world.name),
        report.world.hash.clone(),
        report.sweep.rng.to_owned(),
        field(&run.algorithm),
        run.seed.to_string(),
    ]
}

/// The cells after a row's key columns: `outcome,valid`, then every metric in catalogue order
/// (empty for a run a budget stopped or a metric that does not `apply`). Shared with
/// `simbench sweep`'s CSV.
pub(crate) fn outcome_cells(
    run: &Run,
    valid: bool,
    applies: &dyn Fn(Metric) -> bool,
) -> Vec<String> {
    let kind = run.stall().map_or("ok", |(kind, _)| kind);
    match &run.outcome {
        Outcome::Finished(values)
        | Outcome::Stalled {
            metrics: values, ..
        } => [kind.to_string(), valid.to_string()]
            .into_iter()
            .chain(values.iter_defined().map(|(info, v)| match v {
                Some(v) if applies(info.metric) => round_value(info.unit, v).to_string(),
                _ => String::new(),
            }))
            .collect(),
        Outcome::Unfinished { kind, .. } => [(*kind).to_string(), String::new()]
            .into_iter()
            .chain(CATALOGUE.iter().map(|_| String::new()))
            .collect(),
    }
}

/// Quotes a field if it holds a comma, a quote or a line break.
pub(crate) fn field(text: &str) -> String {
    // A control character (ESC recolours the terminal the file is printed on) or a bidi
    // override is written as the terminal shows it, `\u{1b}`; line breaks too, one row a line.
    let text = crate::text::escape(text);
    if text.contains([',', '"']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(field("wait"), "wait");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn control_and_bidi_characters_are_escaped() {
        assert_eq!(field("esc\u{1b}[31mred"), "esc\\u{1b}[31mred");
        assert_eq!(field("a\nb,c"), "\"a\\u{a}b,c\"");
        assert_eq!(field("evil\u{202e}"), "evil\\u{202e}");
    }
}
