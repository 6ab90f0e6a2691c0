//! `quantiles_csv`: a quantile table kept in a CSV file beside the world (as a measurement
//! tool exports it), read as if its rows were written inline as `quantiles`.
//!
//! Each file of an `extends` chain has its CSV paths expanded before the chain is merged, so a
//! path is relative to the file that names it (as `extends` is) and a child's `quantiles`
//! replaces a base's `quantiles_csv` like any other key. Every number keeps its place in the
//! CSV text, so a later check on a point (quantiles that fall, a negative time) is reported at
//! the CSV's line and column.

use super::Reader;
use super::doc::{At, Entry, Node, Value};
use crate::diagnostics::{Finding, Seg, Source, finding};
use crate::text::plural;

/// The key that names a CSV file of quantiles.
pub(crate) const CSV_KEY: &str = "quantiles_csv";

/// The largest quantile CSV read, in bytes (16 MiB): a table of 100,000 points, the most a
/// world holds, is about 3 MB.
pub const MAX_CSV_BYTES: usize = 16 * 1024 * 1024;

/// Replaces every `quantiles_csv` of `layer` (a file named `name`, or an override when `name`
/// is empty: then paths are relative to the working folder) by the `quantiles` it holds.
/// `overrides_from`: `None` for one file, in which `quantiles` and `quantiles_csv` together are
/// a mistake; else the first override source, whose CSVs replace whatever the files wrote
/// (a file's CSV that could not be read is left as it was, already reported).
pub(crate) fn expand(
    layer: &mut Node,
    name: &str,
    sources: &mut Vec<Source>,
    read: &Reader<'_>,
    overrides_from: Option<usize>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (path, table) in quantile_tables(layer) {
        if let Err(f) = expand_table(table, &path, name, sources, read, overrides_from) {
            findings.push(*f);
        }
    }
    findings
}

/// The tables that may hold quantiles, with their paths: `tokens.input`, `tokens.output` and
/// each `endpoints[i].latency`.
fn quantile_tables(root: &mut Node) -> Vec<(Vec<Seg>, &mut Node)> {
    let mut out = Vec::new();
    let Value::Table(top) = &mut root.value else {
        return out;
    };
    let key = |k: &str| Seg::Key(k.to_owned());
    for entry in top.entries_mut() {
        match (entry.key.as_str(), &mut entry.node.value) {
            ("tokens", Value::Table(tokens)) => {
                for sub in tokens.entries_mut() {
                    if matches!(sub.key.as_str(), "input" | "output") {
                        let path = vec![key("tokens"), key(&sub.key)];
                        out.push((path, &mut sub.node));
                    }
                }
            }
            ("endpoints", Value::Array(items)) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let Value::Table(endpoint) = &mut item.value else {
                        continue;
                    };
                    for sub in endpoint.entries_mut() {
                        if sub.key == "latency" {
                            let path = vec![key("endpoints"), Seg::Index(i), key("latency")];
                            out.push((path, &mut sub.node));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn expand_table(
    node: &mut Node,
    path: &[Seg],
    name: &str,
    sources: &mut Vec<Source>,
    read: &Reader<'_>,
    overrides_from: Option<usize>,
) -> Result<(), Box<Finding>> {
    let Value::Table(table) = &mut node.value else {
        return Ok(());
    };
    let Some(entry) = table.get(CSV_KEY) else {
        return Ok(());
    };
    let Value::String(target) = &entry.node.value else {
        return Ok(()); // the schema stage reports a value that is not a path
    };
    if overrides_from.is_some_and(|first| entry.node.at.source < first) {
        return Ok(());
    }
    let (target, at, key_at) = (target.clone(), entry.node.at.clone(), entry.key_at.clone());
    let mut key_path = path.to_vec();
    key_path.push(Seg::Key(CSV_KEY.to_owned()));
    let blame = |sources: &[Source], message: String, label: &str, help: String| {
        Box::new(finding(
            &sources[at.source],
            at.span.clone(),
            &key_path,
            message,
            label.to_owned(),
            Some(help),
        ))
    };
    if overrides_from.is_none() && table.get("quantiles").is_some() {
        return Err(blame(
            sources,
            "`quantiles` and `quantiles_csv` are both given".into(),
            "one source of quantiles only",
            "write the points inline as `quantiles` or name a CSV file with `quantiles_csv`, \
             not both"
                .into(),
        ));
    }
    let file = super::join(name, &target);
    let shown = file.display().to_string();
    let bytes = read(&file).map_err(|reason| {
        blame(
            sources,
            format!("cannot read the quantile file `{shown}`: {reason}"),
            "cannot read this file",
            format!(
                "`quantiles_csv` is a path relative to the file that names it{}, so this is \
                 `{shown}`",
                if name.is_empty() {
                    " (the working folder for an override)".to_owned()
                } else {
                    format!(" ({name})")
                }
            ),
        )
    })?;
    let id = sources.len();
    let text = match check_text(&shown, &bytes) {
        Ok(text) => text,
        Err(failed) => {
            let (source, f) = *failed;
            sources.push(source);
            return Err(Box::new(f));
        }
    };
    sources.push(Source::new(shown.clone(), text));
    let points = parse_points(&sources[id], id, &key_path)?;
    if points.is_empty() {
        return Err(Box::new(finding(
            &sources[id],
            0..0,
            &key_path,
            format!("the quantile file `{shown}` holds no point"),
            "no `quantile,value` row".into(),
            Some(row_help()),
        )));
    }
    let entries: Vec<Entry> = std::mem::take(table)
        .into_entries()
        .into_iter()
        .filter(|e| e.key != "quantiles")
        .map(|e| {
            if e.key != CSV_KEY {
                return e;
            }
            Entry {
                key: "quantiles".into(),
                key_at: key_at.clone(),
                node: Node {
                    value: Value::Array(points.clone()),
                    at: at.clone(),
                },
            }
        })
        .collect();
    *table = entries.into_iter().collect();
    Ok(())
}

fn row_help() -> String {
    "write one `quantile,value` row per point (quantiles from 0 to 1), e.g. `0.5,0.42`; a first \
     line of column names and lines starting with `#` are skipped"
        .into()
}

/// The size limit and UTF-8; otherwise a finding and the source it is located in, pushed in the
/// file's place (empty for a file too large, the text as far as it reads for one not UTF-8).
fn check_text(shown: &str, bytes: &[u8]) -> Result<String, Box<(Source, Finding)>> {
    let empty = Source::new(shown.to_owned(), String::new());
    if bytes.len() > MAX_CSV_BYTES {
        let f = finding(
            &empty,
            0..0,
            &[],
            format!(
                "the quantile file `{shown}` is larger than the {MAX_CSV_BYTES}-byte (16 MiB) \
                 limit"
            ),
            "file starts here".into(),
            Some("a quantile table needs at most 100,000 rows; thin the table".into()),
        );
        return Err(Box::new((empty, f)));
    }
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        // The lossy text has the same prefix, then U+FFFD (3 bytes) for the bad sequence.
        let source = Source::new(
            shown.to_owned(),
            String::from_utf8_lossy(bytes).into_owned(),
        );
        let span = at..(at + 3).min(source.text.len());
        let f = finding(
            &source,
            span,
            &[],
            format!(
                "the quantile file `{shown}` is not UTF-8 (invalid byte 0x{:02x})",
                bytes[at]
            ),
            "not UTF-8".into(),
            Some("save the CSV as UTF-8 text".into()),
        );
        Box::new((source, f))
    })
}

/// The rows of a quantile CSV as `[quantile, value]` nodes located in `source` (`id`).
fn parse_points(source: &Source, id: usize, key_path: &[Seg]) -> Result<Vec<Node>, Box<Finding>> {
    let text = source.text.as_str();
    // A byte-order mark (spreadsheets on Windows write one) is not content.
    let bom = if text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    };
    let text = &text[bom..];
    let mut points = Vec::new();
    let mut offset = bom;
    let mut first_row = true;
    for raw in text.split_inclusive('\n') {
        let start = offset;
        offset += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']);
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields = split_fields(line, start);
        // Column names have letters: `0;0.1` is a row with the wrong separator, not a header.
        let header = first_row
            && fields
                .iter()
                .all(|(t, _)| t.parse::<f64>().is_err() && t.chars().any(char::is_alphabetic));
        first_row = false;
        if header {
            continue;
        }
        let bad = |span: std::ops::Range<usize>, message: String, label: &str| {
            Box::new(finding(
                source,
                span,
                key_path,
                message,
                label.to_owned(),
                Some(row_help()),
            ))
        };
        if fields.len() != 2 {
            let separator = [';', '\t', '|']
                .into_iter()
                .find(|c| fields.len() == 1 && line.contains(*c))
                .map_or(String::new(), |c| {
                    format!(
                        ": it is separated by `{}`, not by a comma",
                        c.escape_default()
                    )
                });
            return Err(bad(
                start..start + line.len(),
                format!(
                    "a row has {}, not 2{separator}",
                    plural(fields.len(), "field")
                ),
                "expected `quantile,value`",
            ));
        }
        let mut pair = Vec::with_capacity(2);
        for (text, span) in fields {
            match text.parse::<f64>() {
                Ok(x) if x.is_finite() => pair.push(Node {
                    value: Value::Float(text.to_owned()),
                    at: At {
                        source: id,
                        span: span.clone(),
                    },
                }),
                _ => {
                    return Err(bad(
                        span,
                        format!("`{text}` is not a finite number"),
                        "not a number",
                    ));
                }
            }
        }
        points.push(Node {
            value: Value::Array(pair),
            at: At {
                source: id,
                span: start..start + line.len(),
            },
        });
    }
    Ok(points)
}

/// Comma-separated fields, trimmed, each with its byte span in the text.
fn split_fields(line: &str, start: usize) -> Vec<(&str, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    let mut at = 0;
    for field in line.split(',') {
        let lead = field.len() - field.trim_start().len();
        let text = field.trim();
        let from = start + at + lead;
        out.push((text, from..from + text.len()));
        at += field.len() + 1;
    }
    out
}
