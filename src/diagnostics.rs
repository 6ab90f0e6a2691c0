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
//! is quoted (`retry."max attempts"`); the empty string means the whole file.
//! Columns count Unicode characters, not bytes, both in [`Finding::column`] and in the rendered
//! `file:line:column` header.

use std::fmt;
use std::ops::Range;

use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError,
    MietteSpanContents, SourceCode, SourceSpan, SpanContents,
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
/// `--set #2`). Spans of findings are byte ranges into `text`; `lines` finds the line and
/// column of an offset without rescanning the text, so a file with many problems is checked in
/// linear time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Source {
    pub name: String,
    pub text: String,
    lines: LineIndex,
}

impl Source {
    pub fn new(name: String, text: String) -> Source {
        let lines = LineIndex::new(&text);
        Source { name, text, lines }
    }

    /// 1-based line and character column of byte `offset`, as [`line_column`] counts them.
    pub fn line_column(&self, offset: usize) -> (usize, usize) {
        self.lines.line_column(&self.text, offset)
    }
}

/// Bytes per block of [`LineIndex::chars`].
const BLOCK: usize = 1024;

/// Where the lines of a text start, and how many characters precede each block of [`BLOCK`]
/// bytes: a lookup costs a binary search and at most one block of counting, whatever the length
/// of the line.
#[derive(Clone, Debug, PartialEq, Eq)]
struct LineIndex {
    /// Byte offset of the start of each line (the first is 0).
    starts: Vec<usize>,
    /// `chars[k]`: characters in the first `k * BLOCK` bytes.
    chars: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        for (i, b) in bytes.iter().enumerate() {
            match b {
                b'\n' => starts.push(i + 1),
                b'\r' if bytes.get(i + 1) != Some(&b'\n') => starts.push(i + 1),
                _ => {}
            }
        }
        let mut chars = vec![0];
        for block in bytes.chunks(BLOCK) {
            let last = chars.last().copied().unwrap_or(0);
            chars.push(last + count_chars(block));
        }
        LineIndex { starts, chars }
    }

    /// Characters before byte `offset` (a character boundary).
    fn chars_before(&self, text: &str, offset: usize) -> usize {
        let block = offset / BLOCK;
        self.chars[block] + count_chars(&text.as_bytes()[block * BLOCK..offset])
    }

    /// 0-based line of byte `offset`.
    fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset) - 1
    }

    fn line_column(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = floor_boundary(text, offset);
        let line = self.line_of(offset);
        let column =
            self.chars_before(text, offset) - self.chars_before(text, self.starts[line]) + 1;
        (line + 1, column)
    }

    /// The byte range of line `line` without its line ending.
    fn content(&self, text: &str, line: usize) -> Range<usize> {
        let start = self.starts[line];
        let mut end = self.starts.get(line + 1).copied().unwrap_or(text.len());
        let bytes = text.as_bytes();
        if end > start && bytes[end - 1] == b'\n' {
            end -= 1;
        }
        if end > start && bytes[end - 1] == b'\r' {
            end -= 1;
        }
        start..end
    }
}

/// Characters in a run of UTF-8 bytes: the bytes that do not continue a character.
fn count_chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b & 0xc0 != 0x80).count()
}

/// `offset` clamped to the text and moved back to a character boundary.
fn floor_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// A path as `--set` takes it: a TOML dotted key, indices as parts (`endpoints.1.latency`),
/// not the `[1]` of [`key_path`], which `--set` refuses.
pub(crate) fn set_path(path: &[Seg]) -> String {
    let parts: Vec<String> = path
        .iter()
        .map(|seg| match seg {
            Seg::Index(i) => i.to_string(),
            Seg::Key(_) => key_path(std::slice::from_ref(seg)),
        })
        .collect();
    parts.join(".")
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
/// miette does (`\n`, `\r\n` and a lone `\r` each end a line). Scans the text: for one
/// lookup; [`Source::line_column`] answers many.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    LineIndex::new(text).line_column(text, offset)
}

/// The most problems one load reports in full; the rest are counted ("and 12 more problems").
/// A file with thousands of unknown keys is one mistake (the wrong file, a generated table) and
/// a wall of identical reports helps nobody.
pub const MAX_SHOWN: usize = 100;

/// The widest source line a snippet shows, in characters; a longer line is cut to a window
/// around the problem, with `…` where it was cut.
pub const SNIPPET_WIDTH: usize = 120;

/// Characters a cut line keeps before the problem's column.
const SNIPPET_LEAD: usize = 40;

/// The few lines around one finding, escaped (see [`crate::text`]) and cut to
/// [`SNIPPET_WIDTH`], with the finding's span moved into them; miette draws from this text, so
/// drawing a report never rescans the file and never echoes a control character.
#[derive(Debug)]
struct Snippet {
    name: String,
    text: String,
    /// 0-based line of the source that the first line of `text` is.
    first_line: usize,
    /// 0-based character column of the span's start in the source line.
    column: usize,
    /// The span in `text` (never past the end of its line).
    span: Range<usize>,
}

impl Snippet {
    fn new(source: &Source, span: &Range<usize>) -> Snippet {
        let text = source.text.as_str();
        let lines = &source.lines;
        let start = floor_boundary(text, span.start);
        let line = lines.line_of(start);
        let own = lines.content(text, line);
        // One line is underlined: a span that runs on is cut at the end of its first line.
        let end = floor_boundary(text, span.end.max(start))
            .clamp(own.start.max(start), own.end.max(start));
        let first_line = line.saturating_sub(1);
        let last_line = (line + 1).min(lines.starts.len() - 1);
        let mut out = String::new();
        let mut mapped = 0..0;
        for l in first_line..=last_line {
            let content = lines.content(text, l);
            let anchor = if l == line { start } else { content.start };
            let at = window(text, content, anchor, &mut out, &[start, end]);
            if l == line {
                mapped = at[0]..at[1];
            }
            // A line keeps its end exactly when the source's does, so miette shows the same
            // lines (an empty last line included) as it would of the whole file.
            if l + 1 < lines.starts.len() {
                out.push('\n');
            }
        }
        Snippet {
            name: crate::text::escape(&source.name).into_owned(),
            text: out,
            first_line,
            column: source.line_column(start).1 - 1,
            span: mapped,
        }
    }
}

/// Appends the window of the line `content` that shows byte `anchor`, escaped, to `out`, and
/// returns where each of `marks` (byte offsets in the source, clamped to the window) lands in
/// `out`.
fn window(
    text: &str,
    content: Range<usize>,
    anchor: usize,
    out: &mut String,
    marks: &[usize; 2],
) -> [usize; 2] {
    let line = &text[content.clone()];
    let total = line.chars().count();
    let (from, to) = if total <= SNIPPET_WIDTH {
        (0, total)
    } else {
        let anchor_char = text[content.start..anchor.clamp(content.start, content.end)]
            .chars()
            .count();
        let from = anchor_char
            .saturating_sub(SNIPPET_LEAD)
            .min(total - SNIPPET_WIDTH);
        (from, from + SNIPPET_WIDTH)
    };
    if from > 0 {
        out.push('…');
    }
    let mut landed = [None, None];
    let record = |offset: usize, out: &String, landed: &mut [Option<usize>; 2]| {
        for (slot, &mark) in landed.iter_mut().zip(marks) {
            if slot.is_none() && mark <= offset {
                *slot = Some(out.len());
            }
        }
    };
    for (n, (i, c)) in line.char_indices().enumerate() {
        if n < from {
            continue;
        }
        if n >= to {
            break;
        }
        record(content.start + i, out, &mut landed);
        if c == '\t' {
            out.push(c);
        } else {
            crate::text::push_escaped(out, c);
        }
    }
    record(usize::MAX, out, &mut landed);
    let end = out.len();
    if to < total {
        out.push('…');
    }
    [landed[0].unwrap_or(end), landed[1].unwrap_or(end)]
}

impl SourceCode for Snippet {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let inner = self
            .text
            .read_span(span, context_lines_before, context_lines_after)?;
        // The header shows the source's line and character column, not the snippet's.
        let column = if context_lines_before == 0 {
            self.column
        } else {
            inner.column()
        };
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            *inner.span(),
            inner.line() + self.first_line,
            column,
            inner.line_count(),
        )))
    }
}

/// Every problem found in one scenario load, in source order (the loaded file first, then the
/// files it extends, then overrides); the first [`MAX_SHOWN`] are drawn in full.
#[derive(Debug)]
pub struct ScenarioErrors {
    /// Never empty: the loaded file first.
    sources: Vec<Source>,
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
    pub(crate) fn new(mut sources: Vec<Source>, mut findings: Vec<Finding>) -> ScenarioErrors {
        if sources.is_empty() {
            // Every load has at least its own file; keep the report drawable regardless.
            sources.push(Source::new(String::new(), String::new()));
        }
        let rank = |f: &Finding| sources.iter().position(|s| s.name == f.origin).unwrap_or(0);
        findings.sort_by_cached_key(|f| (rank(f), f.span.start, f.span.end, f.message.clone()));
        findings.dedup();
        let related = findings
            .iter()
            .take(MAX_SHOWN)
            .map(|f| OneFinding {
                finding: f.clone(),
                snippet: Snippet::new(&sources[rank(f)], &f.span),
            })
            .collect();
        ScenarioErrors {
            sources,
            findings,
            related,
        }
    }

    /// Every problem, in source order. Never empty.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// The problems a report shows in full: the first [`MAX_SHOWN`].
    pub fn shown(&self) -> &[Finding] {
        &self.findings[..self.findings.len().min(MAX_SHOWN)]
    }

    /// How many problems a report only counts (beyond [`ScenarioErrors::shown`]).
    pub fn omitted(&self) -> usize {
        self.findings.len() - self.shown().len()
    }

    /// The name the file was loaded under (its path, or `<built-in bursty>`).
    pub fn origin(&self) -> &str {
        &self.sources[0].name
    }

    /// The text of the loaded file (lossily decoded if it was not UTF-8).
    pub fn source_text(&self) -> &str {
        &self.sources[0].text
    }

    /// The text `finding`'s span points into: the loaded file, a base file or an override.
    pub fn source_text_of(&self, finding: &Finding) -> &str {
        self.sources
            .iter()
            .find(|s| s.name == finding.origin)
            .map_or_else(|| self.source_text(), |s| s.text.as_str())
    }

    /// Renders the report as miette's graphical output: the first [`MAX_SHOWN`] problems, then
    /// how many more there are.
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
                    crate::text::escape(&f.origin),
                    f.line,
                    f.column,
                    f.message
                ));
            }
            out.push('\n');
        }
        if let Some(more) = self.more_line() {
            out.push_str(&format!("{more}\n\n"));
        }
        out
    }

    /// "and 12 more problems (only the first 100 are shown)", when some are not shown.
    pub fn more_line(&self) -> Option<String> {
        let n = self.omitted();
        (n > 0).then(|| {
            format!(
                "and {n} more problem{} (only the first {MAX_SHOWN} are shown)",
                if n == 1 { "" } else { "s" }
            )
        })
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
        write!(
            f,
            "{n} problem{s} in {}",
            crate::text::escape(self.origin())
        )
    }
}

impl std::error::Error for ScenarioErrors {}

impl Diagnostic for ScenarioErrors {
    fn source_code(&self) -> Option<&dyn SourceCode> {
        // Every related finding carries its own snippet; this is only a fallback.
        Some(&self.sources[0].text)
    }

    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        Some(Box::new(self.related.iter().map(|f| f as &dyn Diagnostic)))
    }
}

/// One finding with the snippet of the source its span points into, so that it renders on its
/// own (without the "Error:" prefix miette gives related diagnostics) and as a related
/// diagnostic.
#[derive(Debug)]
struct OneFinding {
    finding: Finding,
    snippet: Snippet,
}

impl fmt::Display for OneFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.finding.fmt(f)
    }
}

impl std::error::Error for OneFinding {}

impl Diagnostic for OneFinding {
    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(&self.snippet)
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.finding.help()
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = LabeledSpan::new_primary_with_span(
            Some(self.finding.label.clone()),
            SourceSpan::from(self.snippet.span.clone()),
        );
        Some(Box::new(std::iter::once(span)))
    }
}

/// A number from a scenario as a message shows it: as Rust prints it (the shortest text that
/// reads back as the same value) between 1e-5 and 1e15, in scientific notation outside (`1e300`,
/// `5e-324`), so a message never spells out hundreds of digits.
pub(crate) fn show_number(x: f64) -> String {
    let size = x.abs();
    if size != 0.0 && size.is_finite() && !(1e-5..1e15).contains(&size) {
        format!("{x:e}")
    } else {
        format!("{x}")
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
    let (line, column) = source.line_column(span.start);
    let escape = |text: String| crate::text::escape(&text).into_owned();
    // Messages quote keys and values from the file: they reach the terminal escaped.
    Finding {
        origin: source.name.clone(),
        line,
        column,
        key_path: key_path(path),
        message: escape(message),
        label: escape(label),
        help: help.map(|h| {
            h.split('\n')
                .map(|l| escape(l.to_owned()))
                .collect::<Vec<_>>()
                .join("\n")
        }),
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

    fn snippet(text: &str, span: Range<usize>) -> (String, String) {
        let snippet = Snippet::new(&Source::new("f".into(), text.into()), &span);
        let under = snippet.text[snippet.span.clone()].to_owned();
        (snippet.text, under)
    }

    #[test]
    fn snippets_escape_control_characters_and_keep_the_span_on_them() {
        let text = "a = 1\nname = \"x\u{1b}[2J\u{7}\" junk\nb = 2\n";
        let at = text.find("junk").unwrap();
        let (shown, under) = snippet(text, at..at + 4);
        assert_eq!(shown, "a = 1\nname = \"x\\u{1b}[2J\\u{7}\" junk\nb = 2\n");
        assert_eq!(under, "junk");
        let esc = text.find('\u{1b}').unwrap();
        assert_eq!(snippet(text, esc..esc + 1).1, "\\u{1b}");
    }

    #[test]
    fn long_lines_are_cut_to_a_window_around_the_span() {
        let line = format!("x = \"{}\" oops {}", "a".repeat(5000), "b".repeat(5000));
        let text = format!("first\n{line}\nlast");
        let at = text.find("oops").unwrap();
        let (shown, under) = snippet(&text, at..at + 4);
        assert_eq!(under, "oops");
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[0], "first");
        assert_eq!(lines[2], "last");
        assert!(
            lines[1].starts_with('…') && lines[1].ends_with('…'),
            "{}",
            lines[1]
        );
        assert_eq!(lines[1].chars().count(), SNIPPET_WIDTH + 2);
        // A span that runs past its line is cut at the line's end.
        let (_, under) = snippet(&text, 0..text.len());
        assert_eq!(under, "first");
    }

    #[test]
    fn the_line_index_agrees_with_a_scan() {
        let text = "a = 1\r\nbé = 2\rc\n\nxyz";
        let source = Source::new("f".into(), text.into());
        for offset in 0..=text.len() + 2 {
            if text.get(offset.saturating_sub(1)..=offset) == Some("\r\n") {
                continue; // Between the two bytes of one line end: no span starts there.
            }
            let scanned = {
                let mut o = offset.min(text.len());
                while !text.is_char_boundary(o) {
                    o -= 1;
                }
                let before = &text[..o];
                let line = 1 + before.matches("\r\n").count() + before.matches('\n').count()
                    - before.matches("\r\n").count()
                    + before.matches('\r').count()
                    - before.matches("\r\n").count();
                let start = before.rfind(['\n', '\r']).map_or(0, |i| i + 1);
                (line, before[start..].chars().count() + 1)
            };
            assert_eq!(source.line_column(offset), scanned, "offset {offset}");
        }
    }

    #[test]
    fn numbers_in_messages_stay_short() {
        assert_eq!(show_number(1e300), "1e300");
        assert_eq!(show_number(-2.5e-300), "-2.5e-300");
        assert_eq!(show_number(5e-324), "5e-324");
        assert_eq!(show_number(0.25), "0.25");
        assert_eq!(show_number(0.0), "0");
        assert_eq!(show_number(1e12), "1000000000000");
        assert_eq!(show_number(1e15), "1e15");
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
        assert_eq!(set_path(&path), "endpoints.1.latency.median_s");
        assert_eq!(set_path(&odd), "unsuited.\"my algo\"");
        assert_eq!(key_path(&[]), "");
    }
}
