//! Reading one text into a document: the size limit, UTF-8, then TOML syntax.
//!
//! Each text a load reads (the file, each base it extends) passes through [`parse`], which
//! records the text as a source and returns its document, or the one finding that stops the
//! load: a file too large or not UTF-8 is not looked at further, and after a syntax error the
//! parser's view of the rest of the file is unreliable, so only the first error is shown. This
//! module never reads files and never validates values.

use toml::Spanned;
use toml::de::DeTable;

use super::MAX_FILE_BYTES;
use super::doc::{self, Node};
use crate::diagnostics::{Finding, Source, finding, line_column};

/// Checks and parses `bytes`, named `name` in diagnostics, and appends it to `sources`.
pub(crate) fn parse(
    sources: &mut Vec<Source>,
    name: &str,
    bytes: &[u8],
) -> Result<Node, Box<Finding>> {
    let text = match check_bytes(name, bytes) {
        Ok(text) => text,
        Err(failed) => {
            let (source, f) = *failed;
            sources.push(source);
            return Err(Box::new(f));
        }
    };
    let source = Source::new(name.to_owned(), text.to_owned());
    let (root, syntax) = DeTable::parse_recoverable(text);
    let result = if syntax.is_empty() {
        Ok(doc::from_table(&root, sources.len(), 0))
    } else {
        Err(Box::new(syntax_finding(&root, &source, syntax)))
    };
    sources.push(source);
    result
}

/// Checks the size limit and UTF-8 before any parsing.
fn check_bytes<'b>(origin: &str, bytes: &'b [u8]) -> Result<&'b str, Box<(Source, Finding)>> {
    if bytes.len() > MAX_FILE_BYTES {
        // Keep only the first line as context: the rest is not worth holding or showing.
        let head = &bytes[..bytes.len().min(200)];
        let head = String::from_utf8_lossy(head);
        let first_line = head.lines().next().unwrap_or_default().to_owned();
        let source = Source::new(origin.to_owned(), first_line);
        let f = finding(
            &source,
            0..0,
            &[],
            format!(
                "file is larger than the {MAX_FILE_BYTES}-byte (1 MiB) limit ({} bytes or more)",
                bytes.len()
            ),
            "file starts here".into(),
            Some(
                "scenario files are small TOML files; check that this is the file you meant".into(),
            ),
        );
        return Err(Box::new((source, f)));
    }
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let text = String::from_utf8_lossy(bytes).into_owned();
        // The lossy text has the same prefix, then U+FFFD (3 bytes) for the bad sequence.
        let span = at..(at + 3).min(text.len());
        let what = match bytes.get(at) {
            Some(b) if e.error_len().is_some() => format!("invalid byte 0x{b:02x}"),
            _ => "an incomplete character at the end".to_owned(),
        };
        let source = Source::new(origin.to_owned(), text);
        let f = finding(
            &source,
            span,
            &[],
            format!("file is not valid UTF-8: {what}"),
            "not UTF-8".into(),
            Some("TOML files must be UTF-8; re-save the file as UTF-8".into()),
        );
        Box::new((source, f))
    })
}

/// The first syntax error, in file order. The recovering parser's later errors are often
/// consequences of the first (an unclosed bracket swallows the next lines), so they are counted,
/// not shown.
fn syntax_finding(
    root: &Spanned<DeTable<'_>>,
    source: &Source,
    mut errors: Vec<toml::de::Error>,
) -> Finding {
    let text = source.text.as_str();
    errors.sort_by_key(|e| e.span().map_or(0, |s| s.start));
    let more = errors.len().saturating_sub(1);
    let Some(first) = errors.first() else {
        let message = "TOML syntax error".to_owned();
        return finding(source, 0..0, &[], message, "here".into(), None);
    };
    let span = first.span().unwrap_or(0..0);
    let mut message = format!("TOML syntax error: {}", first.message());
    let mut help = None;
    let word = text.get(span.clone()).unwrap_or_default();
    let bare_word = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        && word.starts_with(|c: char| c.is_alphabetic())
        && !matches!(word, "true" | "false" | "nan" | "inf");
    if bare_word
        && text
            .get(..span.start)
            .is_some_and(|t| t.trim_end().ends_with('='))
    {
        // The parser reads an unquoted word as a failed boolean; say what the user meant.
        message = "TOML syntax error: string values must be quoted".to_owned();
        help = Some(format!("write `\"{word}\"`"));
    }
    if first.message() == "duplicate key" {
        let key = text.get(span.clone()).unwrap_or_default().trim_matches('"');
        message = format!("TOML syntax error: duplicate key `{key}`");
        help = Some(match earlier_key(root, key, span.start) {
            Some(at) => format!(
                "`{key}` is already defined on line {}; a key can be set only once per table \
                 (use [[...]] for a list of tables)",
                line_column(text, at).0
            ),
            None => {
                "a key can be set only once per table (use [[...]] for a list of tables)".to_owned()
            }
        });
    }
    if more > 0 {
        let note = format!(
            "{more} more syntax error{} after this one not shown; fix this one first",
            if more == 1 { "" } else { "s" }
        );
        help = Some(match help {
            Some(h) => format!("{h}\n{note}"),
            None => note,
        });
    }
    finding(source, span, &[], message, "here".into(), help)
}

/// The start of the closest definition of `key` before `before`, anywhere in the tree.
fn earlier_key(root: &Spanned<DeTable<'_>>, key: &str, before: usize) -> Option<usize> {
    fn walk(table: &DeTable<'_>, key: &str, before: usize, best: &mut Option<usize>) {
        for (k, v) in table.iter() {
            let start = k.span().start;
            if k.get_ref().as_ref() == key && start < before {
                *best = Some(best.map_or(start, |b: usize| b.max(start)));
            }
            walk_value(v.get_ref(), key, before, best);
        }
    }
    fn walk_value(
        value: &toml::de::DeValue<'_>,
        key: &str,
        before: usize,
        best: &mut Option<usize>,
    ) {
        match value {
            toml::de::DeValue::Table(t) => walk(t, key, before, best),
            toml::de::DeValue::Array(a) => {
                for item in a.iter() {
                    walk_value(item.get_ref(), key, before, best);
                }
            }
            _ => {}
        }
    }
    let mut best = None;
    walk(root.get_ref(), key, before, &mut best);
    best
}
