//! Reading one text into a document: the size limit, UTF-8, then TOML syntax.
//!
//! Each text a load reads (the file, each base it extends) passes through [`parse`], which
//! records the text as a source and returns its document, or the one finding that stops the
//! load: a file too large or not UTF-8 is not looked at further, and after a syntax error the
//! parser's view of the rest of the file is unreliable, so only the first error is shown. This
//! module never reads files and never validates values.

use toml::de::DeTable;

use super::MAX_FILE_BYTES;
use super::doc::{self, Node};
use super::syntax::syntax_finding;
use crate::diagnostics::{Finding, Source, finding};

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
    // A byte-order mark (editors on Windows write one) is not content: without it, columns on
    // the first line count as an editor shows them.
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
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
