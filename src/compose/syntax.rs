//! What a TOML syntax error means to someone writing a scenario: the key it is in and how to fix
//! it.
//!
//! The parser's messages describe the grammar ("string values must be quoted, expected literal
//! string" covers a missing value, a unit after a number and a missing comma alike) and it
//! builds no tree past the error, so this module reads the text up to the error itself:
//! [`place`] follows headers, keys, arrays and inline tables to name the key the error sits in
//! (`endpoints[1].latency`), and [`explain`] turns the parser's description and the offending
//! text into a message and a hint. It only reads text; it never decides whether a file is valid.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::Spanned;
use toml::de::DeTable;

use crate::diagnostics::{Finding, Seg, Source, finding, key_path, line_column};
use crate::text::plural;

/// The first syntax error, in file order, located and explained. The recovering parser's later
/// errors are often consequences of the first (an unclosed bracket swallows the next lines), so
/// they are counted, not shown.
pub(super) fn syntax_finding(
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
    if first.span().is_none()
        && first.message() == "recursion limit"
        && let Some((span, parts)) = long_key(text)
    {
        return long_key_finding(source, span, parts, more);
    }
    let mut span = first.span().unwrap_or(0..0);
    let mut place = place(text, span.start);
    let (what, mut help) = explain(first.message(), text, &mut span, &place, root);
    name_the_key(&mut place.path, first.message(), text.get(span.clone()));
    // A missing comma is between two items: the place is the array or inline table, not the
    // item before it.
    let container = match place.path.last() {
        Some(Seg::Index(_)) => place.inside == Inside::Array,
        Some(Seg::Key(_)) => place.inside == Inside::InlineTable,
        None => false,
    };
    if what.starts_with("missing comma") && container {
        place.path.pop();
    }
    let message = match place.path.len() {
        0 => format!("TOML syntax error: {what}"),
        // Past a few levels the path says no more than "deep": a pathological nesting
        // would fill the screen.
        n if n > MAX_SHOWN_DEPTH => format!(
            "TOML syntax error in `{}…` ({n} levels deep): {what}",
            key_path(&place.path[..MAX_SHOWN_DEPTH])
        ),
        _ => format!("TOML syntax error in `{}`: {what}", key_path(&place.path)),
    };
    if more > 0 {
        let note = format!(
            "{} after this one not shown; fix this one first",
            plural(more, "more syntax error")
        );
        help = format!("{help}\n{note}");
    }
    finding(
        source,
        span,
        &place.path,
        message,
        "here".into(),
        Some(help),
    )
}

/// The most levels of a key path a message shows.
const MAX_SHOWN_DEPTH: usize = 12;

/// Parts of a dotted key the TOML reader refuses (its recursion limit of 80 counts the parts
/// before the last), with an error that says where it is not.
pub(super) const KEY_PARTS_LIMIT: usize = 81;

/// The message and hint for a key of `parts` dotted parts, past what the reader takes.
pub(super) fn long_key_message(parts: usize) -> (String, String) {
    (
        format!(
            "{parts} dotted parts; the TOML reader takes at most {}",
            KEY_PARTS_LIMIT - 1
        ),
        "no scenario key is more than a few levels deep (`endpoints.latency.median_s`); check \
         the dots in this key"
            .into(),
    )
}

/// The span and part count of the first key with at least [`KEY_PARTS_LIMIT`] parts — a
/// `[header]`, a line's `key =`, or a key of an inline table (after `{` or `,`): the key the
/// reader's unlocated "recursion limit" is about.
fn long_key(text: &str) -> Option<(Range<usize>, usize)> {
    let b = text.as_bytes();
    let starts = std::iter::once(0).chain(
        b.iter()
            .enumerate()
            .filter(|(_, c)| matches!(c, b'\n' | b'[' | b'{' | b','))
            .map(|(i, _)| i + 1),
    );
    for start in starts {
        let from = skip_blanks(b, start);
        let (parts, end) = keys(b, from);
        if parts.len() >= KEY_PARTS_LIMIT {
            let end = from + text[from..end].trim_end().len();
            return Some((from..end, parts.len()));
        }
    }
    None
}

/// The number of parts of the dotted key at the start of `text`, and where it ends.
pub(super) fn key_parts(text: &str) -> (usize, usize) {
    let (parts, end) = keys(text.as_bytes(), 0);
    (parts.len(), end)
}

fn long_key_finding(source: &Source, span: Range<usize>, parts: usize, more: usize) -> Finding {
    let text = source.text.as_str();
    let (names, _) = keys(text.as_bytes(), span.start);
    let mut path = place(text, span.start).path;
    path.extend(names.into_iter().map(Seg::Key));
    let (what, mut help) = long_key_message(parts);
    if more > 0 {
        help = format!(
            "{help}\n{} after this one not shown; fix this one first",
            plural(more, "more syntax error")
        );
    }
    let message = format!(
        "TOML syntax error in `{}…` ({} levels deep): a key of {what}",
        key_path(&path[..MAX_SHOWN_DEPTH.min(path.len())]),
        path.len()
    );
    finding(source, span, &path, message, "here".into(), Some(help))
}

/// The bracket the error is inside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Inside {
    /// A `key = value` line of a table.
    Line,
    /// A `[table]` or `[[array]]` header.
    Header,
    Array,
    InlineTable,
}

/// Where in the scenario an offset of the text is.
#[derive(Debug, PartialEq, Eq)]
struct Place {
    /// The key the offset is in, as far as the text up to it tells.
    path: Vec<Seg>,
    inside: Inside,
}

/// What the reader expects next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    Key,
    Value,
    /// After a value: a comma, a closing bracket or the end of the line.
    After,
}

/// Reads `text` up to byte `offset` the way TOML nests it and says where `offset` is. Text that
/// does not parse is stepped over: the place is a best reading, and only the part before the
/// error (which the parser accepted) decides it.
fn place(text: &str, offset: usize) -> Place {
    let b = &text.as_bytes()[..offset.min(text.len())];
    let mut tables: BTreeMap<String, usize> = BTreeMap::new();
    let mut table: Vec<Seg> = Vec::new();
    let mut path: Vec<Seg> = Vec::new();
    // Open arrays (with the index of the current item) and inline tables, with the path's
    // length where each opened.
    let mut open: Vec<(Inside, usize, usize)> = Vec::new();
    let mut expect = Expect::Key;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'#' => i = line_end(b, i),
            b' ' | b'\t' | b'\r' => i += 1,
            b'\n' => {
                if open.is_empty() {
                    path.clone_from(&table);
                    expect = Expect::Key;
                }
                i += 1;
            }
            b'[' if open.is_empty() && expect == Expect::Key => {
                let array = b.get(i + 1) == Some(&b'[');
                let (names, end) = keys(b, i + if array { 2 } else { 1 });
                if end >= b.len() {
                    // The tables it names are those already open (`endpoints[1]` under a
                    // second `[[endpoints]]`), but for a name cut short at the error.
                    let mut names = names;
                    let cut = b.trim_ascii_end().last().is_some_and(|&c| c != b'.');
                    let last = if cut { names.pop() } else { None };
                    let mut path = header(&mut tables.clone(), names, false);
                    path.extend(last.map(Seg::Key));
                    return Place {
                        path,
                        inside: Inside::Header,
                    };
                }
                table = header(&mut tables, names, array);
                path.clone_from(&table);
                i = line_end(b, end);
                if i >= b.len() {
                    return Place {
                        path,
                        inside: Inside::Header,
                    };
                }
            }
            b'}' if expect != Expect::Value
                && open.last().is_some_and(|o| o.0 == Inside::InlineTable) =>
            {
                close(&mut open, &mut path);
                expect = Expect::After;
                i += 1;
            }
            _ if expect == Expect::Key => {
                let (names, end) = keys(b, i);
                path.extend(names.into_iter().map(Seg::Key));
                if end >= b.len() || b[end] != b'=' {
                    break;
                }
                expect = Expect::Value;
                i = end + 1;
            }
            b'[' if expect == Expect::Value => {
                open.push((Inside::Array, path.len(), 0));
                path.push(Seg::Index(0));
                i += 1;
            }
            b'{' if expect == Expect::Value => {
                open.push((Inside::InlineTable, path.len(), 0));
                expect = Expect::Key;
                i += 1;
            }
            b']' if open.last().is_some_and(|o| o.0 == Inside::Array) => {
                close(&mut open, &mut path);
                expect = Expect::After;
                i += 1;
            }
            b',' if expect == Expect::After => {
                if let Some((inside, len, index)) = open.last_mut() {
                    path.truncate(*len);
                    if *inside == Inside::Array {
                        *index += 1;
                        path.push(Seg::Index(*index));
                        expect = Expect::Value;
                    } else {
                        expect = Expect::Key;
                    }
                }
                i += 1;
            }
            b'"' | b'\'' if expect == Expect::Value => {
                i = string_end(b, i);
                expect = Expect::After;
            }
            _ if expect == Expect::Value => {
                while i < b.len() && !b" \t\r\n,]}#".contains(&b[i]) {
                    i += 1;
                }
                expect = Expect::After;
            }
            _ => i += 1,
        }
    }
    let inside = open.last().map_or(Inside::Line, |o| o.0);
    Place { path, inside }
}

/// Closes the innermost open bracket.
fn close(open: &mut Vec<(Inside, usize, usize)>, path: &mut Vec<Seg>) {
    if let Some((_, len, _)) = open.pop() {
        path.truncate(len);
    }
}

/// The path a header names, with the index of each array of tables on it; a `[[header]]` adds
/// an element to its own array.
fn header(tables: &mut BTreeMap<String, usize>, names: Vec<String>, array: bool) -> Vec<Seg> {
    let last = names.len().saturating_sub(1);
    let mut path = Vec::new();
    for (k, name) in names.into_iter().enumerate() {
        path.push(Seg::Key(name));
        let id = key_path(&path);
        let count = match array && k == last {
            true => {
                let n = tables.entry(id).or_insert(0);
                *n += 1;
                Some(*n)
            }
            false => tables.get(&id).copied(),
        };
        if let Some(n) = count {
            path.push(Seg::Index(n - 1));
        }
    }
    path
}

/// A dotted key from byte `i`: its parts (quotes removed) and the offset after it and the
/// spaces that follow.
fn keys(b: &[u8], mut i: usize) -> (Vec<String>, usize) {
    let mut names = Vec::new();
    loop {
        i = skip_blanks(b, i);
        let start = i;
        let name = match b.get(i) {
            Some(&q @ (b'"' | b'\'')) => {
                i = string_end(b, i);
                let inner = &b[start + 1..i.saturating_sub(1).max(start + 1)];
                let text = String::from_utf8_lossy(inner).into_owned();
                match q {
                    b'"' => text.replace("\\\"", "\"").replace("\\\\", "\\"),
                    _ => text,
                }
            }
            _ => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b"_-".contains(&b[i])) {
                    i += 1;
                }
                String::from_utf8_lossy(&b[start..i]).into_owned()
            }
        };
        if i > start {
            names.push(name);
        }
        i = skip_blanks(b, i);
        if b.get(i) != Some(&b'.') || i == start {
            return (names, i);
        }
        i += 1;
    }
}

fn skip_blanks(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t') {
        i += 1;
    }
    i
}

/// The offset of the end of the line holding `i` (its `\n`, or the end).
fn line_end(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |n| i + n)
}

/// The offset after the string that opens at `i`: basic or literal, one line or several; an
/// unclosed one runs to the end of its line (one line) or of the text.
fn string_end(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let multi = b.get(i..i + 3) == Some(&[q, q, q][..]);
    let mut j = i + if multi { 3 } else { 1 };
    while j < b.len() {
        match b[j] {
            b'\\' if q == b'"' => j += 2,
            b'\n' if !multi => return j,
            c if c == q && (!multi || b.get(j..j + 3) == Some(&[q, q, q][..])) => {
                let mut end = j + if multi { 3 } else { 1 };
                // A multi-line string may end in up to two more quotes of its own.
                while multi && end < b.len() && b[end] == q && end < j + 5 {
                    end += 1;
                }
                return end;
            }
            _ => j += 1,
        }
    }
    b.len()
}

/// For an error about a key itself (set twice, or dotted over a value), adds the key at the
/// span (`word`) to `path`, which names the table it is in: the finding's path is the key's.
fn name_the_key(path: &mut Vec<Seg>, message: &str, word: Option<&str>) {
    let about_a_key =
        message.starts_with("duplicate key") || message.starts_with("cannot extend value of type");
    let Some(word) = word.filter(|_| about_a_key) else {
        return;
    };
    for name in keys(word.as_bytes(), 0).0 {
        if path.last() != Some(&Seg::Key(name.clone())) {
            path.push(Seg::Key(name));
        }
    }
}

/// The message and the hint for the parser's `message` about `span` at `place`; `span` widens
/// to the whole of an unquoted word the parser read only part of.
fn explain(
    message: &str,
    text: &str,
    span: &mut Range<usize>,
    place: &Place,
    root: &Spanned<DeTable<'_>>,
) -> (String, String) {
    let word = text.get(span.clone()).unwrap_or_default();
    let kind = message.split(", expected").next().unwrap_or(message);
    let keep = || message.to_owned();
    // The parser reads a word as a failed boolean, a failed `nan`, …, and may stop at the
    // letter it stumbled on (`t/base.jsonl` as a failed `true`): say what the user meant.
    let run = bare_run(text, span);
    let whole = text.get(run.clone()).unwrap_or_default();
    let after_equals = text
        .get(..run.start)
        .is_some_and(|t| t.trim_end().ends_with('='));
    if unquoted(whole, after_equals, place) {
        *span = run;
        return unreadable_value(whole, after_equals, place);
    }
    if kind == "string values must be quoted" || unquoted(word, after_equals, place) {
        return unreadable_value(word, after_equals, place);
    }
    if word.starts_with(|c: char| c.is_control() && c != '\n') {
        return (
            keep(),
            "delete the control character; in a string, write it as an escape such as `\\u001b` \
             if you mean it"
                .to_owned(),
        );
    }
    if kind == "duplicate key" {
        let key = word.trim_matches('"');
        let help = "a key can be set only once per table (use [[...]] for a list of tables)";
        let earlier = earlier_in_table(text, key, span.start, place.inside == Inside::Header)
            .or_else(|| earlier_key(root, key, span.start))
            .or_else(|| earlier_header(text, span.start));
        let help = match earlier {
            Some(at) => format!(
                "`{key}` is already defined on line {}; {help}",
                line_column(text, at).0
            ),
            None => help.to_owned(),
        };
        return (format!("duplicate key `{key}`"), help);
    }
    if kind.starts_with("cannot extend value of type") {
        // The underlined word is the dotted key's first part, the key already set; the table
        // it sits in is `place.path` (an element of a list of tables is named by its list).
        let key = word.trim_matches('"').to_owned();
        let mut header: Vec<Seg> = place
            .path
            .iter()
            .filter(|s| matches!(s, Seg::Key(_)))
            .cloned()
            .collect();
        header.push(Seg::Key(key.clone()));
        let header = key_path(&header);
        return (
            keep(),
            format!(
                "`{key}` already holds a value; a dotted key can only add keys to a table: set \
                 `{key}` once, as `{key} = {{ … }}` with all its keys, or as the table \
                 `[{header}]`"
            ),
        );
    }
    if matches!(kind, "unquoted keys cannot be empty") && place.inside == Inside::Header {
        return (
            keep(),
            "write the table's name between the brackets, e.g. `[load]`".to_owned(),
        );
    }
    if kind == "unexpected key or value" && place.inside == Inside::Header {
        return (
            keep(),
            "a header is the table's name in brackets, alone on its line (a comment may follow)"
                .to_owned(),
        );
    }
    let help = HINTS
        .iter()
        .find(|(prefix, _)| kind.starts_with(prefix))
        .map_or(FALLBACK, |(_, hint)| hint);
    (keep(), (*help).to_owned())
}

/// The parser's catch-all for text it cannot read as a value: nothing at all, a number with a
/// unit, two values where one belongs, or words without quotes.
fn unreadable_value(word: &str, after_equals: bool, place: &Place) -> (String, String) {
    let word = word.trim();
    if word.is_empty() {
        return (
            "missing value".to_owned(),
            format!("write a value after `=`: {VALUES}, or delete the line"),
        );
    }
    let first = word.split_whitespace().next().unwrap_or(word);
    if first.len() < word.len() && is_value(first) {
        let (what, help) = match place.inside {
            Inside::Array => (
                "missing comma between array items",
                "separate the items with commas, e.g. `[0.5, 0.9]`",
            ),
            Inside::InlineTable => (
                "missing comma between the keys of an inline table",
                "separate the keys with commas, e.g. `{ median_s = 0.2, sigma = 0.5 }`",
            ),
            _ => (
                "more than one value",
                "a line holds one `key = value`; start a comment with `#`",
            ),
        };
        return (format!("{what} (`{word}`)"), help.to_owned());
    }
    if let Some((number, unit)) = with_unit(word) {
        return (
            format!("`{word}` has a unit; TOML numbers have none"),
            unit_hint(number, unit, place),
        );
    }
    if unquoted(word, after_equals, place) {
        return typed_word(word, place).unwrap_or_else(|| {
            let help = if word.contains('\\') {
                // In quotes a backslash starts an escape; in a literal string it is itself.
                format!("write `'{word}'`")
            } else {
                format!("write `\"{word}\"`")
            };
            ("string values must be quoted".to_owned(), help)
        });
    }
    (
        format!("`{word}` is not a value"),
        format!("a value is {VALUES}"),
    )
}

/// The message and hint for the value of a `--set key=value` that the parser refused with
/// `message` at `span` of `value`, or `None` where the parser's message says it best. `path` is
/// the key as written.
pub(super) fn override_value(
    message: &str,
    value: &str,
    span: Range<usize>,
    path: &[Seg],
) -> Option<(String, String)> {
    let kind = message.split(", expected").next().unwrap_or(message);
    const KEY: &str = "v = ";
    let mut place = place(&format!("{KEY}{value}"), span.start + KEY.len());
    place.path.splice(..1, path.iter().cloned());
    let whole = value.get(bare_run(value, &span)).unwrap_or_default();
    if unquoted(whole, true, &place) {
        return Some(unreadable_value(whole, true, &place));
    }
    let word = value.get(span).unwrap_or(value).trim();
    let first = word.split_whitespace().next().unwrap_or(word);
    let several = first.len() < word.len() && is_value(first);
    if several && place.inside == Inside::Line {
        let rest = word[first.len()..].trim_start();
        return Some(match rest.strip_prefix('#') {
            Some(_) => (
                "a comment after the value".to_owned(),
                format!("drop `{rest}`: an override takes no comment"),
            ),
            None => (
                format!("more than one value (`{word}`)"),
                "an override sets one value: write an array with commas, e.g. `[0.5, 0.9]`, or \
                 put text in quotes"
                    .to_owned(),
            ),
        });
    }
    if kind == "string values must be quoted" || unquoted(word, true, &place) {
        return Some(unreadable_value(word, true, &place));
    }
    HINTS
        .iter()
        .filter(|(prefix, _)| !matches!(*prefix, "unexpected key or value" | "unexpected content"))
        .find(|(prefix, _)| kind.starts_with(prefix))
        .map(|(_, hint)| (message.to_owned(), (*hint).to_owned()))
}

/// The message and hint for a bare `word` where the schema wants a number, a boolean or one of
/// some names: what the key takes, not only that text needs quotes. `None` where the schema
/// says nothing or wants free text.
fn typed_word(word: &str, place: &Place) -> Option<(String, String)> {
    let schema = crate::schema::field(&place.path)?.schema;
    let key = place.path.iter().rev().find_map(|s| match s {
        Seg::Key(k) => Some(k.as_str()),
        Seg::Index(_) => None,
    })?;
    let types: Vec<&str> = match schema.get("type") {
        Some(serde_json::Value::String(t)) => vec![t.as_str()],
        Some(serde_json::Value::Array(ts)) => ts.iter().filter_map(|t| t.as_str()).collect(),
        _ => Vec::new(),
    };
    let names: Vec<&str> = schema
        .get("enum")
        .and_then(|e| e.as_array())
        .map(|e| e.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    if types.iter().any(|t| matches!(*t, "number" | "integer")) {
        let range = crate::schema::range_text(&place.path)
            .map(|r| format!(" (allowed range: {r})"))
            .unwrap_or_default();
        let kind = if types.contains(&"integer") {
            "a whole number"
        } else {
            "a number"
        };
        return Some((
            format!("`{word}` is not a number"),
            format!("`{key}` takes {kind}{range}, written without quotes"),
        ));
    }
    if types.contains(&"boolean") {
        let meant = crate::schema::did_you_mean(word, ["true", "false"])
            .map(|b| format!(": write `{b}`"))
            .unwrap_or_default();
        return Some((
            format!("`{word}` is not `true` or `false`"),
            format!("`{key}` is `true` or `false`, without quotes{meant}"),
        ));
    }
    if names.is_empty() {
        return None;
    }
    let meant = names
        .contains(&word)
        .then_some(word)
        .or_else(|| crate::schema::did_you_mean(word, names.iter().copied()));
    let help = match meant {
        Some(name) => format!("write `\"{name}\"`"),
        None => {
            let quoted: Vec<String> = names.iter().map(|n| format!("`\"{n}\"`")).collect();
            format!("`{key}` is one of {}", quoted.join(", "))
        }
    };
    Some(("string values must be quoted".to_owned(), help))
}

/// Whether `word` is words where a value belongs: text the user forgot to quote. Words, or one
/// bare word with a path's or an address's marks (`t/base.jsonl`, `./x`, `C:\x`, `a@b`),
/// whatever it starts with.
fn unquoted(word: &str, after_equals: bool, place: &Place) -> bool {
    let word = word.trim();
    let words = word
        .chars()
        .all(|c| c.is_alphanumeric() || " _-.".contains(c))
        && word.starts_with(char::is_alphabetic)
        && !is_value(word.split_whitespace().next().unwrap_or(word));
    let path =
        word.chars().all(bare) && word.contains(|c: char| "/\\:~@".contains(c)) && !is_value(word);
    (words || path) && (after_equals || matches!(place.inside, Inside::Array))
}

/// Whether `c` can stand in a bare (unquoted) run of text: not a space, a quote, a bracket, a
/// brace, a comma, `=` or `#`, which end one.
fn bare(c: char) -> bool {
    !c.is_whitespace() && !"\"'[]{},=#".contains(c)
}

/// `span` widened to the bare run of text around it: the parser may point at part of a word
/// (`./base.jsonl` as a number whose mantissa is missing), or at none of it.
fn bare_run(text: &str, span: &Range<usize>) -> Range<usize> {
    let (start, end) = (span.start.min(text.len()), span.end.min(text.len()));
    let (Some(before), Some(after)) = (text.get(..start), text.get(end..)) else {
        return span.clone();
    };
    let back = before.len() - before.trim_end_matches(bare).len();
    let ahead = after.find(|c: char| !bare(c)).unwrap_or(after.len());
    start - back..end + ahead
}

/// The kinds of TOML value, for hints.
const VALUES: &str =
    "a number, a string in quotes, `true` or `false`, an array `[…]` or a table `{…}`";

/// Whether `word` alone reads as a TOML scalar.
fn is_value(word: &str) -> bool {
    let digits = word.replace('_', "");
    matches!(word, "true" | "false" | "inf" | "nan" | "+inf" | "-inf")
        || digits.parse::<f64>().is_ok()
        || word.len() >= 2 && (word.starts_with('"') || word.starts_with('\''))
}

/// A number directly followed by letters, such as `30s` or `1.5ms`: the number and the letters.
fn with_unit(word: &str) -> Option<(f64, &str)> {
    let split = word.find(|c: char| c.is_alphabetic() && c != 'e' && c != 'E')?;
    let (number, unit) = word.split_at(split);
    let number = number.replace('_', "").parse::<f64>().ok()?;
    unit.chars()
        .all(char::is_alphabetic)
        .then_some((number, unit))
}

/// How to write a number with a unit: a duration in seconds where the key is in seconds.
fn unit_hint(number: f64, unit: &str, place: &Place) -> String {
    let seconds = match unit {
        "ms" => Some(1e-3),
        "s" | "sec" => Some(1.0),
        "m" | "min" => Some(60.0),
        "h" | "hr" => Some(3600.0),
        "d" => Some(86_400.0),
        "us" | "µs" => Some(1e-6),
        _ => None,
    };
    let key = match place.path.iter().rev().find_map(|s| match s {
        Seg::Key(k) => Some(k.as_str()),
        Seg::Index(_) => None,
    }) {
        Some(k) => k,
        None => return "write the number alone, in the key's unit; quote it if it is text".into(),
    };
    let described = crate::schema::field(&place.path).and_then(|f| f.description);
    let in_seconds = key.ends_with("_s")
        || described.is_some_and(|d| d.contains("seconds") || d.contains("(s)"));
    match seconds {
        Some(factor) if in_seconds => format!(
            "`{key}` is in seconds: write `{}` for {number}{unit}",
            crate::diagnostics::show_number(number * factor)
        ),
        _ => match crate::schema::range_text(&place.path) {
            Some(range) => {
                format!("write the number alone, without a unit; allowed range: {range}")
            }
            None => "write the number alone, without a unit; quote it if it is text".to_owned(),
        },
    }
}

/// Hints by the start of the parser's description.
const HINTS: &[(&str, &str)] = &[
    ("unclosed table", "close the header with `]`, e.g. `[load]`"),
    (
        "unclosed array table",
        "close the header with `]]`, e.g. `[[endpoints]]`",
    ),
    (
        "unclosed array",
        "close the array with `]`; its items are separated by commas and may span lines",
    ),
    (
        "unclosed inline table",
        "close the table with `}`; its keys are separated by commas, e.g. `{ median_s = 0.2, sigma = 0.5 }`",
    ),
    (
        "invalid basic string",
        "close the string with `\"` before the end of the line; text over several lines goes between `\"\"\"` and `\"\"\"`",
    ),
    (
        "invalid literal string",
        "close the string with `'` before the end of the line; text over several lines goes between `'''` and `'''`",
    ),
    (
        "invalid multi-line basic string",
        "close the string with `\"\"\"`",
    ),
    (
        "invalid multi-line literal string",
        "close the string with `'''`",
    ),
    ("missing escaped value", ESCAPES),
    ("too few unicode value digits", ESCAPES),
    ("invalid escape", ESCAPES),
    ("invalid unicode", ESCAPES),
    (
        "invalid fraction",
        "write digits after the decimal point, e.g. `1.0` or `0.5`",
    ),
    (
        "invalid mantissa",
        "write a digit before the decimal point, e.g. `0.5`",
    ),
    (
        "invalid exponent",
        "write digits after the `e`, e.g. `1e-3`",
    ),
    (
        "unexpected leading zero",
        "write the number without leading zeros, e.g. `7` or `0.7`",
    ),
    (
        "`_` may only go between digits",
        "an underscore may only stand between two digits, e.g. `1_000_000`",
    ),
    ("integers with a radix cannot be signed", PLAIN_NUMBER),
    ("radix must be lowercase", PLAIN_NUMBER),
    ("redundant numeric sign", PLAIN_NUMBER),
    ("redundant integer number prefix", PLAIN_NUMBER),
    ("unexpected sign", PLAIN_NUMBER),
    (
        "unquoted keys cannot be empty",
        "write a key before `=`, e.g. `jobs = 100`",
    ),
    (
        "invalid unquoted key",
        "a key without quotes uses letters, digits, `-` and `_`; quote any other, e.g. `\"my key\" = 1`",
    ),
    (
        "key with no value",
        "write `=` and a value after the key, e.g. `jobs = 100`; a key with spaces must be quoted",
    ),
    (
        "missing assignment",
        "write `=` and a value after the key, e.g. `jobs = 100`; a key with spaces must be quoted",
    ),
    ("missing value", "write a value after `=`"),
    ("extra `=`", "write one `=` between the key and its value"),
    (
        "extra assignment",
        "write one `=` per key; in an inline table separate the keys with commas, e.g. `{ median_s = 0.2, sigma = 0.5 }`",
    ),
    (
        "unexpected `=` in array",
        "an array holds values; to hold keys, make each item a table, e.g. `[{ id = \"a\" }]`",
    ),
    (
        "unexpected key or value",
        "a line holds one `key = value`; start a comment with `#`",
    ),
    (
        "unexpected content",
        "a line holds one `key = value`; start a comment with `#`",
    ),
    ("extra comma", "remove the extra comma"),
    (
        "missing comma between array",
        "separate the items with commas, e.g. `[0.5, 0.9]`",
    ),
    (
        "missing comma between key-value",
        "separate the keys with commas, e.g. `{ median_s = 0.2, sigma = 0.5 }`",
    ),
    (
        "invalid comment character",
        "delete the control character: comments hold printable text",
    ),
    (
        "carriage return must be followed by newline",
        "save the file with LF (or CRLF) line endings",
    ),
    (
        "keys cannot be multi-line",
        "write the key as a one-line string, e.g. `\"my key\"`",
    ),
    ("invalid date", DATES),
    ("invalid time", DATES),
    ("invalid offset", DATES),
    ("invalid hour", DATES),
    ("invalid minute", DATES),
    ("invalid second", DATES),
    (
        "cannot recurse further",
        "brackets nest far deeper than any scenario does; check that each one is closed",
    ),
];

const ESCAPES: &str = "in a \"…\" string a backslash starts an escape such as `\\n` or `\\u00e9`: \
                       write `\\\\` for a backslash, or use single quotes, which keep backslashes";
const PLAIN_NUMBER: &str =
    "write a decimal number such as `-1` or `255`, or an unsigned `0x`, `0o` or `0b` number";
const DATES: &str = "no scenario key holds a date or time; if this is text, put it in quotes";
const FALLBACK: &str = "TOML's syntax is described at https://toml.io/en/v1.0.0";

/// Where a `[table]` header the same as the one on the line of `at` stands earlier in `text`:
/// the parser's partial tree keeps one of the two, so the first is found by reading the lines.
fn earlier_header(text: &str, at: usize) -> Option<usize> {
    let header = |line: &str| {
        let line = line.trim_start();
        (line.starts_with('[') && !line.starts_with("[[")).then(|| keys(line.as_bytes(), 1).0)
    };
    let start = text.get(..at)?.rfind('\n').map_or(0, |i| i + 1);
    let want = header(text.get(start..)?.lines().next()?)?;
    let mut offset = 0;
    let mut found = None;
    for line in text[..start].split_inclusive('\n') {
        if header(line).as_ref() == Some(&want) {
            found = Some(offset + line.len() - line.trim_start().len());
        }
        offset += line.len();
    }
    found
}

/// Where `key` was set in the table that the duplicate at `at` is added to, read from the text
/// (the parser's partial tree lacks the table still open, such as the last `[[endpoints]]`
/// entry): the first line of that table's own section that sets it, or `None`. For a header
/// (`[endpoints.latency]`), the table is the one its earlier names open; for a key, the one
/// of the header above it.
fn earlier_in_table(text: &str, key: &str, at: usize, in_header: bool) -> Option<usize> {
    let line_start = text.get(..at)?.rfind('\n').map_or(0, |i| i + 1);
    let header_of = |line: &str| -> Option<Vec<String>> {
        let line = line.trim_start();
        let depth = if line.starts_with("[[") { 2 } else { 1 };
        line.starts_with('[')
            .then(|| keys(line.as_bytes(), depth).0)
    };
    let parent = if in_header {
        let mut names = header_of(text.get(line_start..)?.lines().next()?)?;
        names.truncate(names.iter().position(|n| n == key)?);
        Some(names)
    } else {
        None
    };
    // The section of the table: after its last header (the file's start for the root), up to
    // the next header or the duplicate's line.
    let mut section: Option<usize> = parent.as_ref().is_some_and(Vec::is_empty).then_some(0);
    let mut found = None;
    let mut offset = 0;
    for line in text[..line_start].split_inclusive('\n') {
        if let Some(names) = header_of(line) {
            // Another table's header ends the section; its own starts a new entry afresh.
            let opens = parent.as_ref().is_none_or(|p| *p == names);
            section = opens.then_some(offset + line.len());
            if opens {
                found = None;
            }
        } else if section.is_some() && found.is_none() {
            let (names, end) = keys(line.as_bytes(), 0);
            let sets = matches!(line.as_bytes().get(end), Some(b'=' | b'.'));
            if names.first().is_some_and(|n| n == key) && sets {
                found = Some(offset + line.len() - line.trim_start().len());
            }
        }
        offset += line.len();
    }
    found
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

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, marker: &str) -> (String, Inside) {
        let offset = text.find(marker).expect("marker");
        let text = text.replacen(marker, "", 1);
        let p = place(&text, offset);
        (key_path(&p.path), p.inside)
    }

    #[test]
    fn places_follow_headers_keys_arrays_and_inline_tables() {
        assert_eq!(at("jobs = @", "@"), ("jobs".into(), Inside::Line));
        assert_eq!(
            at("[load]\njobs = 5 @5", "@"),
            ("load.jobs".into(), Inside::Line)
        );
        let endpoints = "name = \"x\"\n[[endpoints]]\nid = \"a\"\n[[endpoints]]\nid = \"b\"\n\
                         latency = { median_s = 0.2, sigma = @ }";
        assert_eq!(
            at(endpoints, "@"),
            ("endpoints[1].latency.sigma".into(), Inside::InlineTable)
        );
        let arrays = "quantiles = [0.5, # c\n 0.9, @]";
        assert_eq!(at(arrays, "@"), ("quantiles[2]".into(), Inside::Array));
        let inline =
            "endpoints = [\n { id = \"a\" },\n { id = \"b\", latency = { x = 1 } },\n { id @";
        assert_eq!(
            at(inline, "@"),
            ("endpoints[2].id".into(), Inside::InlineTable)
        );
        assert_eq!(at("[load]\n[a]@]", "@"), ("a".into(), Inside::Header));
        assert_eq!(at("[[endpoi@", "@"), ("endpoi".into(), Inside::Header));
        // Inside a header, the tables it names that are open already carry their index.
        let second = "[[endpoints]]\nid = 1\n[[endpoints]]\nid = 2\n";
        assert_eq!(
            at(&format!("{second}[endpoints.@latency]"), "@"),
            ("endpoints[1]".into(), Inside::Header)
        );
        assert_eq!(
            at(&format!("{second}[endpoints.lat@ency]"), "@"),
            ("endpoints[1].lat".into(), Inside::Header)
        );
    }

    #[test]
    fn strings_comments_and_quoted_keys_do_not_confuse_the_place() {
        let text = "a = \"x = [ { # \\\" \"\nb.\"c d\" = '''\n[x]\n''' # [y]\n[z]\nk = @";
        assert_eq!(at(text, "@"), ("z.k".into(), Inside::Line));
        let nested = "[[a]]\n[[a.b]]\n[[a]]\n[[a.b]]\n[[a.b]]\nk = @";
        assert_eq!(at(nested, "@"), ("a[1].b[1].k".into(), Inside::Line));
        let dotted = "[load]\nthink.spread = { x = [1, { y = @";
        assert_eq!(
            at(dotted, "@"),
            ("load.think.spread.x[1].y".into(), Inside::InlineTable)
        );
    }

    #[test]
    fn numbers_with_units_become_seconds_where_the_key_is_in_seconds() {
        let place = Place {
            path: vec![Seg::Key("load".into()), Seg::Key("horizon_s".into())],
            inside: Inside::Line,
        };
        let (message, help) = unreadable_value("10m", true, &place);
        assert_eq!(message, "`10m` has a unit; TOML numbers have none");
        assert_eq!(help, "`horizon_s` is in seconds: write `600` for 10m");
        assert_eq!(with_unit("1e3"), None);
        let jobs = [Seg::Key("jobs".into())];
        let (message, help) =
            override_value("string values must be quoted", "3k", 0..2, &jobs).expect("a unit");
        assert_eq!(message, "`3k` has a unit; TOML numbers have none");
        assert!(
            help.ends_with("allowed range: 1 <= jobs <= 10000000"),
            "{help}"
        );
    }

    /// The parser stops at the letter it stumbles on (`t/` as a failed `true`, `n/` as a
    /// failed `nan`, `./` as a number without digits, `2024/` as a number that goes on): the
    /// hint quotes the whole path, in a file and in an override alike.
    #[test]
    fn an_unquoted_path_is_quoted_whole_whatever_it_starts_with() {
        let trace = [Seg::Key("load".into()), Seg::Key("trace".into())];
        let cases = [
            ("t/base.jsonl", "invalid boolean, expected `true`", 0..12),
            ("n/x.jsonl", "invalid float, expected `nan`", 0..9),
            ("2024/x.jsonl", "invalid float, expected nothing", 4..12),
            ("./base.jsonl", "invalid mantissa, expected digits", 0..0),
            ("C:\\x.jsonl", "string values must be quoted", 0..1),
        ];
        for (value, message, span) in cases {
            let quoted = if value.contains('\\') {
                format!("write `'{value}'`")
            } else {
                format!("write `\"{value}\"`")
            };
            let (what, help) = override_value(message, value, span.clone(), &trace).unwrap();
            assert_eq!(
                (what.as_str(), &help),
                ("string values must be quoted", &quoted)
            );
            let text = format!("[load]\ntrace = {value}\n");
            let mut at = span.start + 15..span.end + 15;
            let place = place(&text, at.start);
            let root = toml::de::DeTable::parse("").unwrap();
            let (what, help) = explain(message, &text, &mut at, &place, &root);
            assert_eq!(
                (what.as_str(), &help),
                ("string values must be quoted", &quoted)
            );
            assert_eq!(&text[at], value);
        }
    }

    #[test]
    fn overrides_get_hints_for_what_a_shell_user_types() {
        let key = [Seg::Key("retry".into()), Seg::Key("max_attempts".into())];
        let hint = |value: &str, span: Range<usize>| {
            override_value("string values must be quoted", value, span, &key)
        };
        let comment = hint("5 # three is too few", 0..20).expect("a hint");
        assert_eq!(comment.0, "a comment after the value");
        let array = hint("[1 2]", 1..4).expect("a hint");
        assert_eq!(array.0, "missing comma between array items (`1 2`)");
        let words = hint("hello world", 0..11).expect("a hint");
        assert_eq!(words.0, "`hello world` is not a number");
        assert!(words.1.starts_with("`max_attempts` takes a whole number"));
        let name = [Seg::Key("name".into())];
        let words = override_value("string values must be quoted", "hello world", 0..11, &name);
        assert_eq!(words.expect("a hint").1, "write `\"hello world\"`");
        let zero = override_value(
            "unexpected leading zero, expected nothing",
            "07",
            0..1,
            &key,
        );
        assert!(zero.expect("a hint").1.contains("without leading zeros"));
        assert_eq!(override_value("unexpected content", "1]", 1..2, &key), None);
        assert_eq!(with_unit("2.5ms"), Some((2.5, "ms")));
    }
}
