//! The error type of scenario loading: every problem found in one file, as data and as a miette
//! report that shares the file's source.
//!
//! A [`Finding`] is one problem with the source it points into, a byte span, a 1-based line and
//! column, a key path, a message, a short label for the underline and an optional help line.
//! [`ScenarioErrors`] holds all findings of one load in source order, implements
//! [`miette::Diagnostic`] (each finding is a `related` diagnostic with its own snippet of its own
//! source) and can render itself to a string. One load can span several sources: the file, the
//! files it `extends`, and `--set` arguments; each finding names the one it is about. This module
//! never decides *what* is wrong (that is [`crate::schema`] and [`crate::compile`]) and never
//! prints.
//!
//! Key paths are written the way a TOML user would address the key: dotted keys with array
//! indices in brackets, e.g. `endpoints[1].latency.median_s`; a key that is not a bare TOML key
//! is quoted (`unsuited."my algo"`); the empty string means the whole file.
//! Columns count Unicode characters, not bytes, both in [`Finding::column`] and in the rendered
//! `file:line:column` header.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError,
    MietteSpanContents, NamedSource, SourceCode, SourceSpan, SpanContents,
};

/// One problem in a scenario file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The source the span points into: the file's path, a base file it extends, or a
    /// command-line override such as `--set #2`.
    pub origin: String,
    /// 1-based line of the start of [`Finding::span`].
    pub line: usize,
    /// 1-based column (in characters) of the start of [`Finding::span`].
    pub column: usize,
    /// Where in the scenario the problem is, e.g. `endpoints[1].latency.median_s`; empty for
    /// the file as a whole (see the module docs).
    pub key_path: String,
    /// What is wrong, as one sentence.
    pub message: String,
    /// Short text shown under the underlined source.
    pub label: String,
    /// How to fix it: the allowed range, the expected type, the valid choices, a near-miss key.
    pub help: Option<String>,
    /// Byte range in the source that the problem is about (may be empty).
    pub span: Range<usize>,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Finding {}

impl Diagnostic for Finding {
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = LabeledSpan::new_primary_with_span(
            Some(self.label.clone()),
            SourceSpan::from(self.span.clone()),
        );
        Some(Box::new(std::iter::once(span)))
    }
}

/// One step of a key path: a table key or an array index.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// One text a load reads: a file (named by its path) or a command-line override (named like
/// `--set #2`). Spans of findings are byte ranges into `text`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Source {
    pub name: String,
    pub text: String,
}

/// Renders a key path as documented in the module docs.
pub(crate) fn key_path(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                let bare = !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if bare {
                    out.push_str(k);
                } else {
                    out.push_str(&format!("{k:?}"));
                }
            }
        }
    }
    out
}

/// 1-based line and character column of byte `offset` in `text`, counting lines the way
/// miette does (`\n`, `\r\n` and a lone `\r` each end a line).
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text.as_bytes()[..offset];
    let mut line = 1;
    let mut line_start = 0;
    let mut i = 0;
    while i < before.len() {
        match before[i] {
            b'\n' => {
                line += 1;
                line_start = i + 1;
            }
            b'\r' if before.get(i + 1) != Some(&b'\n') => {
                line += 1;
                line_start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let column = text[line_start..offset].chars().count() + 1;
    (line, column)
}

/// The file a set of findings is about, with character-based columns for miette's header.
#[derive(Debug)]
struct ScenarioSource(NamedSource<String>);

impl SourceCode for ScenarioSource {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let inner = self
            .0
            .read_span(span, context_lines_before, context_lines_after)?;
        // miette counts the header column in bytes; count characters, like `Finding::column`.
        let column = if context_lines_before == 0 {
            line_column(self.0.inner(), span.offset()).1 - 1
        } else {
            inner.column()
        };
        Ok(Box::new(MietteSpanContents::new_named(
            self.0.name().to_owned(),
            inner.data(),
            *inner.span(),
            inner.line(),
            column,
            inner.line_count(),
        )))
    }
}

/// Every problem found in one scenario load, in source order (the loaded file first, then the
/// files it extends, then overrides).
#[derive(Debug)]
pub struct ScenarioErrors {
    root: Arc<ScenarioSource>,
    findings: Vec<Finding>,
    related: Vec<OneFinding>,
}

/// How [`ScenarioErrors::render`] draws a report.
#[derive(Clone, Copy, Debug)]
pub struct RenderOptions {
    /// Use ANSI colours (only for a terminal that wants them).
    pub colour: bool,
    /// Wrap prose at this many columns.
    pub width: usize,
}

impl ScenarioErrors {
    /// Builds the report; sorts the findings by source, then position, and drops exact
    /// duplicates. `sources[0]` is the loaded file; a finding whose origin names no source is
    /// shown against it.
    pub(crate) fn new(sources: Vec<Source>, mut findings: Vec<Finding>) -> ScenarioErrors {
        let mut sources: Vec<Arc<ScenarioSource>> = sources
            .into_iter()
            .map(|s| Arc::new(ScenarioSource(NamedSource::new(s.name, s.text))))
            .collect();
        if sources.is_empty() {
            // Every load has at least its own file; keep the report drawable regardless.
            sources.push(Arc::new(ScenarioSource(NamedSource::new(
                "",
                String::new(),
            ))));
        }
        let root = sources[0].clone();
        let rank = |f: &Finding| {
            sources
                .iter()
                .position(|s| s.0.name() == f.origin)
                .unwrap_or(0)
        };
        findings.sort_by(|a, b| {
            (rank(a), a.span.start, a.span.end, &a.message).cmp(&(
                rank(b),
                b.span.start,
                b.span.end,
                &b.message,
            ))
        });
        findings.dedup();
        let related = findings
            .iter()
            .map(|f| OneFinding {
                finding: f.clone(),
                source: sources[rank(f)].clone(),
            })
            .collect();
        ScenarioErrors {
            root,
            findings,
            related,
        }
    }

    /// The problems, in source order. Never empty.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// The name the file was loaded under (its path, or `<built-in bursty>`).
    pub fn origin(&self) -> &str {
        self.root.0.name()
    }

    /// The text of the loaded file (lossily decoded if it was not UTF-8).
    pub fn source_text(&self) -> &str {
        self.root.0.inner()
    }

    /// The text `finding`'s span points into: the loaded file, a base file or an override.
    pub fn source_text_of(&self, finding: &Finding) -> &str {
        self.related
            .iter()
            .find(|r| r.finding.origin == finding.origin)
            .map_or_else(|| self.source_text(), |r| r.source.0.inner().as_str())
    }

    /// Renders the whole report as miette's graphical output.
    pub fn render(&self, options: RenderOptions) -> String {
        let theme = if options.colour {
            GraphicalTheme::unicode()
        } else {
            GraphicalTheme::unicode_nocolor()
        };
        let handler = GraphicalReportHandler::new_themed(theme)
            .with_width(options.width)
            .with_links(false);
        let mut out = format!("error: {self}\n\n");
        for one in &self.related {
            if handler.render_report(&mut out, one).is_err() {
                // A span miette cannot read would be our bug; keep the finding as plain text.
                let f = &one.finding;
                out.push_str(&format!(
                    "{}:{}:{}: {}\n",
                    f.origin, f.line, f.column, f.message
                ));
            }
            out.push('\n');
        }
        out
    }

    /// One line per finding: `source:line:column: message (help)`.
    pub fn render_plain(&self) -> String {
        let mut out = String::new();
        for f in &self.findings {
            out.push_str(&format!(
                "{}:{}:{}: {}",
                f.origin, f.line, f.column, f.message
            ));
            if let Some(help) = &f.help {
                out.push_str(&format!(" (help: {help})"));
            }
            out.push('\n');
        }
        out
    }
}

impl fmt::Display for ScenarioErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.findings.len();
        let s = if n == 1 { "" } else { "s" };
        write!(f, "{n} problem{s} in {}", self.origin())
    }
}

impl std::error::Error for ScenarioErrors {}

impl Diagnostic for ScenarioErrors {
    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(self.root.as_ref())
    }

    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        Some(Box::new(self.related.iter().map(|f| f as &dyn Diagnostic)))
    }
}

/// One finding with the source its span points into, so that it renders on its own (without
/// the "Error:" prefix miette gives related diagnostics) and as a related diagnostic.
#[derive(Debug)]
struct OneFinding {
    finding: Finding,
    source: Arc<ScenarioSource>,
}

impl fmt::Display for OneFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.finding.fmt(f)
    }
}

impl std::error::Error for OneFinding {}

impl Diagnostic for OneFinding {
    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(self.source.as_ref())
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.finding.help()
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        self.finding.labels()
    }
}

/// Builds a finding at `span` of `source`, computing line and column.
pub(crate) fn finding(
    source: &Source,
    span: Range<usize>,
    path: &[Seg],
    message: String,
    label: String,
    help: Option<String>,
) -> Finding {
    let (line, column) = line_column(&source.text, span.start);
    Finding {
        origin: source.name.clone(),
        line,
        column,
        key_path: key_path(path),
        message,
        label,
        help,
        span,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_characters_and_line_endings() {
        let text = "a = 1\r\nbé = 2\nc";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 7), (2, 1));
        // "bé = " is 6 bytes but 5 characters.
        assert_eq!(line_column(text, 7 + 6), (2, 6));
        assert_eq!(line_column(text, text.len()), (3, 2));
        assert_eq!(line_column(text, 10_000), (3, 2));
    }

    #[test]
    fn key_paths_read_like_toml() {
        let path = [
            Seg::Key("endpoints".into()),
            Seg::Index(1),
            Seg::Key("latency".into()),
            Seg::Key("median_s".into()),
        ];
        assert_eq!(key_path(&path), "endpoints[1].latency.median_s");
        let odd = [Seg::Key("unsuited".into()), Seg::Key("my algo".into())];
        assert_eq!(key_path(&odd), "unsuited.\"my algo\"");
        assert_eq!(key_path(&[]), "");
    }
}
