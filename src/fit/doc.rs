//! The fitted world as commented TOML: every value carries what it rests on, and every value
//! the data could not give is written as the default used, saying so.

use std::fmt::Write as _;

/// The note of a value fitted with another, before that one's key.
const TOGETHER: &str = "fitted together with ";

/// How an assumed value's note starts.
const NOT_IDENTIFIED: &str = "not identified: ";

/// The reason of a value that goes with an assumed one, before that one's key.
const AS_WELL: &str = "not identified: as ";

/// One `key = value  # note` line.
#[derive(Clone, Debug)]
struct Item {
    key: String,
    value: String,
    note: String,
}

/// A table (or the top level when `header` is empty) with its lines, or a block of TOML
/// copied as it is (`raw`).
#[derive(Clone, Debug)]
struct Table {
    header: String,
    comment: Vec<String>,
    items: Vec<Item>,
    raw: Option<String>,
}

/// One line of the fit report: a value written, with its basis, or a default.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportLine {
    /// The key, dotted, with endpoints by id (`endpoints.a.latency.median_s`).
    pub key: String,
    /// The value as written.
    pub value: String,
    /// How many requests it rests on and how well it fits; or why the default was used.
    pub note: String,
    /// Whether the data identified it (else it is a default).
    pub identified: bool,
}

/// The document under construction.
#[derive(Clone, Debug, Default)]
pub struct Doc {
    preamble: Vec<String>,
    tables: Vec<Table>,
    /// Every value, for `--report`.
    pub report: Vec<ReportLine>,
    prefix: String,
    /// The client's world, whose keys replace the fitted ones.
    pub client: Option<super::client::Client>,
}

impl Doc {
    /// A comment line above the current table's header.
    pub fn comment(&mut self, line: impl Into<String>) {
        let table = self.tables.last_mut().expect("a table is open");
        table.comment.push(line.into());
    }

    /// A comment line at the top of the file.
    pub fn preamble(&mut self, line: impl Into<String>) {
        self.preamble.push(line.into());
    }

    /// Starts a table: `[name]`, `[[name]]`, or the top level for `""`. `report_prefix` is
    /// the dotted path its keys are reported under.
    pub fn table(&mut self, header: &str, report_prefix: &str, comment: &[String]) {
        self.tables.push(Table {
            header: header.to_owned(),
            comment: comment.to_vec(),
            items: Vec::new(),
            raw: None,
        });
        self.prefix = report_prefix.to_owned();
    }

    /// A block copied from the client's world, reported under `key`.
    pub fn raw(&mut self, key: &str, text: String, from: &str) {
        self.report.push(ReportLine {
            key: key.to_owned(),
            value: format!("[{key}]"),
            note: format!("from {from}"),
            identified: true,
        });
        self.tables.push(Table {
            header: String::new(),
            comment: vec![format!(
                "From {from}: the client's own setting, not in any log."
            )],
            items: Vec::new(),
            raw: Some(text),
        });
    }

    /// An endpoint of the client's world that no log shows, copied whole (reported as not
    /// identified: its provider values are the world's, not fitted).
    pub fn unseen_endpoint(&mut self, id: &str, text: String, from: &str) {
        self.report.push(ReportLine {
            key: format!("endpoints.{id}"),
            value: "[[endpoints]]".into(),
            note: format!(
                "not identified: never in the logs, so copied whole from {from} (its provider \
                 values are that world's, not fitted)"
            ),
            identified: false,
        });
        self.tables.push(Table {
            header: String::new(),
            comment: vec![format!(
                "From {from}: endpoint `{id}` is in no log, so it is copied as that world \
                 describes it (not fitted)."
            )],
            items: Vec::new(),
            raw: Some(text),
        });
    }

    /// With a client's world, its table `name`: `Some(None)` when it leaves the table to the
    /// defaults (then nothing is written); `None` without a client (then the fit writes it).
    pub fn client_table(&self, name: &str) -> Option<Option<(String, String)>> {
        let client = self.client.as_ref()?;
        Some(client.table_text(name).map(|t| (t, client.name.clone())))
    }

    /// A fitted value. Without a note of its own it was fitted together with the value above
    /// it that has one (a lognormal's `sigma` with its `median_s`), and says so: every value
    /// says what it rests on, and the report lists it.
    pub fn fitted(&mut self, key: &str, value: String, note: impl Into<String>) {
        let mut note = note.into();
        if note.is_empty()
            && let Some(base) = self.tables.last().and_then(|t| {
                t.items.iter().rev().find(|i| {
                    !i.note.is_empty()
                        && !i.note.starts_with(TOGETHER)
                        && !i.note.starts_with(AS_WELL)
                })
            })
        {
            // A value that goes with a default is a default too.
            if base.note.starts_with(NOT_IDENTIFIED) {
                let why = format!("as `{}`", base.key);
                return self.assumed(key, value, why);
            }
            note = format!("{TOGETHER}`{}`", base.key);
        }
        self.push(key, value, note, true);
    }

    /// A value copied from the client's world.
    pub fn copied(&mut self, key: &str, value: String, from: &str) {
        let full = if self.prefix.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.prefix)
        };
        self.report.push(ReportLine {
            key: full,
            value: value.clone(),
            note: format!("from {from}"),
            identified: true,
        });
        let table = self.tables.last_mut().expect("a table is open");
        table.items.push(Item {
            key: key.to_owned(),
            value,
            note: format!("from {from}"),
        });
    }

    /// Whether a key of the current table was written.
    pub fn has(&self, key: &str) -> bool {
        self.tables
            .last()
            .is_some_and(|t| t.items.iter().any(|i| i.key == key))
    }

    /// A value the data could not identify: the default used and why.
    pub fn assumed(&mut self, key: &str, value: String, why: impl Into<String>) {
        self.push(key, value, format!("{NOT_IDENTIFIED}{}", why.into()), false);
    }

    fn push(&mut self, key: &str, value: String, note: String, identified: bool) {
        let full = if self.prefix.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.prefix)
        };
        if let Some(c) = &self.client
            && c.owns(&full)
            && c.value(&full).is_none()
        {
            let note = format!(
                "left to the default, as in {}; the logs give {value}",
                c.name
            );
            self.report.push(ReportLine {
                key: full,
                value: "(default)".into(),
                note,
                identified: true,
            });
            return;
        }
        let from_client = self.client.as_ref().and_then(|c| {
            let v = c.value(&full)?;
            Some((v.to_string(), c.name.clone()))
        });
        let why = if note.is_empty() {
            String::new()
        } else {
            format!(" ({note})")
        };
        let (value, note, identified) = match from_client {
            Some((mine, from)) if mine != value => (
                mine,
                format!("from {from}; the logs give {value}{why}"),
                true,
            ),
            Some((mine, from)) => (mine, format!("from {from}; the logs agree{why}"), true),
            None => (value, note, identified),
        };
        self.report.push(ReportLine {
            key: full,
            value: value.clone(),
            note: note.clone(),
            identified,
        });
        let table = self.tables.last_mut().expect("a table is open");
        table.items.push(Item {
            key: key.to_owned(),
            value,
            note,
        });
    }

    /// The TOML text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for line in &self.preamble {
            let line = crate::text::escape(line);
            if line.starts_with("#:") {
                let _ = writeln!(out, "{line}");
            } else {
                let _ = writeln!(out, "# {line}");
            }
        }
        for table in &self.tables {
            if !out.is_empty() {
                out.push('\n');
            }
            for line in &table.comment {
                let _ = writeln!(out, "# {}", crate::text::escape(line));
            }
            if let Some(raw) = &table.raw {
                out.push_str(raw);
                continue;
            }
            if !table.header.is_empty() {
                let _ = writeln!(out, "{}", table.header);
            }
            let width = table
                .items
                .iter()
                .map(|i| i.key.len() + i.value.len() + 3)
                .filter(|w| *w <= 48)
                .max()
                .unwrap_or(0);
            for item in &table.items {
                let line = format!("{} = {}", item.key, item.value);
                if item.note.is_empty() {
                    let _ = writeln!(out, "{line}");
                } else {
                    let _ = writeln!(out, "{line:width$}  # {}", crate::text::escape(&item.note));
                }
            }
        }
        out
    }
}

/// A TOML float with at most `digits` significant digits (always with a decimal point).
pub fn float(x: f64, digits: usize) -> String {
    if x == 0.0 {
        return "0.0".into();
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (digits as i32 - 1 - magnitude).max(1) as usize;
    let mut text = format!("{x:.decimals$}");
    if text.contains('.') {
        while text.ends_with('0') && !text.ends_with(".0") {
            text.pop();
        }
    }
    text
}

/// A TOML string.
pub fn string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_keep_their_significant_digits_and_a_point() {
        assert_eq!(float(0.250_123_4, 4), "0.2501");
        assert_eq!(float(1200.0, 4), "1200.0");
        assert_eq!(float(0.0, 4), "0.0");
        assert_eq!(float(60.000_01, 6), "60.0");
        assert_eq!(float(1.5e-5, 3), "0.000015");
    }

    #[test]
    fn notes_are_aligned_comments_and_reported() {
        let mut doc = Doc::default();
        doc.table("", "", &[]);
        doc.fitted("jobs", "10".into(), "from 10 jobs");
        doc.table("[cycle]", "cycle", &["The capacity cycle.".into()]);
        doc.assumed("period_s", "0.0".into(), "no refusal");
        let text = doc.render();
        assert!(text.contains("jobs = 10  # from 10 jobs"), "{text}");
        assert!(
            text.contains(
                "# The capacity cycle.\n[cycle]\nperiod_s = 0.0  # not identified: no refusal"
            ),
            "{text}"
        );
        assert_eq!(doc.report[1].key, "cycle.period_s");
        assert!(!doc.report[1].identified);
    }

    /// A newline in a name written into a comment stays in the comment, escaped: the text is
    /// the same TOML with or without it.
    #[test]
    fn a_control_character_in_a_comment_is_escaped_not_written() {
        let mut doc = Doc::default();
        doc.preamble("log \"a\nseed = 5\"");
        doc.table("", "", &["endpoint a\r\nb = 1\u{7f}".into()]);
        doc.fitted("jobs", "10".into(), "from x\ny = 2\tz");
        let text = doc.render();
        assert!(text.contains("# log \"a\\u{a}seed = 5\""), "{text}");
        assert!(
            text.contains("# endpoint a\\u{d}\\u{a}b = 1\\u{7f}"),
            "{text}"
        );
        assert!(text.contains("# from x\\u{a}y = 2\\u{9}z"), "{text}");
        let table: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(table.keys().collect::<Vec<_>>(), ["jobs"]);
    }
}
