//! Command-line overrides: `--set dotted.key=value` applied to the document before validation.
//!
//! The key is a TOML dotted key (`retry.max_attempts`, `endpoints."eu.west 1".capacity`); an
//! array is addressed by the `id` of its element or by a numeric index
//! (`endpoints.metered.capacity`, `endpoints.2.capacity`, `incidents.0.start_s`); an override
//! changes an element the document has and never creates one. The value is a TOML value (`240`,
//! `2.5`, `"full"`, `true`, `{ median_s = 0.3 }`); a bare word such as `open` is taken as a
//! string, because shells eat the quotes of `"open"`. The whole argument becomes a source of its
//! own, so every problem an override causes (a bad path here, a bad value in the schema stage)
//! points into it. A key is checked against the schema while the path is walked, so a typo
//! never creates a table. A table value replaces the whole table. This module never reads files
//! and never validates values.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

use super::doc::{self, At, Entry, Node, SourceId, Table, Value};
use crate::diagnostics::{Finding, Seg, Source, finding, key_path};
use crate::schema;

const KEY_HELP: &str = "write keys like `retry.max_attempts` or `endpoints.metered.capacity`; \
                        quote a key with dots or spaces: `endpoints.\"eu.west 1\".capacity`";
const VALUE_HELP: &str = "write `240`, `2.5`, `true`, `\"full\"` or `{ median_s = 0.3 }`";
const EXTENDS_HELP: &str = "the base of a file is read before any override applies; edit the \
                            file, or write a small file that extends the one you want";

/// One command-line override, as typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    /// How diagnostics name it, e.g. `--set #2` or `--jobs`.
    pub origin: String,
    /// The argument: `dotted.key=value`.
    pub text: String,
}

/// Checks the shape of a `--set` argument the way a command-line parser should: a `=` and a
/// non-empty key before it. Everything else is a diagnostic of the load.
///
/// # Errors
/// A one-line message when there is no `=` or nothing before it.
pub fn check_shape(text: &str) -> Result<(), String> {
    match split(text) {
        None => Err("expected `dotted.key=value`, found no `=`".into()),
        Some(eq) if text[..eq].trim().is_empty() => {
            Err("expected `dotted.key=value`, found nothing before `=`".into())
        }
        Some(_) => Ok(()),
    }
}

/// The origin prefix of a grid axis's override (`--grid retry.max_attempts`): each axis must
/// set a setting of its own, or the grid would report values that no run used.
pub(crate) const AXIS_ORIGIN: &str = "--grid ";

/// Applies `ov` to `root`, recording its text in `sources`. `axes` holds the settings earlier
/// overrides and grid axes of this load set (origin and resolved path, an entry's id read as its
/// index); an axis that sets one of them, a table holding one, or a key inside one is refused,
/// as is an axis over `seed`.
///
/// # Errors
/// The finding that makes the override unusable: a malformed argument, a key that is not TOML,
/// a value that is not TOML, a path that leads nowhere, or an axis that overlaps another.
pub(crate) fn apply(
    root: &mut Node,
    sources: &mut Vec<Source>,
    ov: &Override,
    axes: &mut Vec<(String, Vec<Seg>)>,
) -> Result<(), Box<Finding>> {
    let id = sources.len();
    sources.push(Source::new(ov.origin.clone(), ov.text.clone()));
    let source = &sources[id];
    let fail = |span: Range<usize>, message: String, label: &str, help: Option<String>| {
        Box::new(finding(source, span, &[], message, label.to_owned(), help))
    };
    let Some(eq) = split(&ov.text) else {
        return Err(fail(
            0..ov.text.len(),
            "an override needs `dotted.key=value`".into(),
            "no `=`",
            Some("for example `--set retry.max_attempts=3`".into()),
        ));
    };
    let (parts, _) = super::syntax::key_parts(&ov.text[..eq]);
    if parts >= super::syntax::KEY_PARTS_LIMIT {
        let (what, help) = super::syntax::long_key_message(parts);
        let message = format!("the key of an override has {what}");
        return Err(fail(0..eq, message, "too many parts", Some(help)));
    }
    let keys = parse_key(&ov.text[..eq], id).map_err(|span| {
        let message = "the key of an override must be a TOML dotted key";
        fail(span, message.into(), "not a key", Some(KEY_HELP.into()))
    })?;
    if let Some((name, at)) = keys.first().filter(|(name, _)| name == "extends") {
        let message = format!("`{name}` cannot be overridden");
        let help = Some(EXTENDS_HELP.into());
        return Err(fail(at.span.clone(), message, "not overridable", help));
    }
    let value = parse_value(&ov.text, eq + 1, id).map_err(|(span, message)| {
        let path: Vec<Seg> = keys.iter().map(|(k, _)| Seg::Key(k.clone())).collect();
        let value = &ov.text[eq + 1..];
        let at = span.start.saturating_sub(eq + 1)..span.end.saturating_sub(eq + 1);
        let (message, help) = super::syntax::override_value(&message, value, at, &path)
            .unwrap_or_else(|| (message, VALUE_HELP.to_owned()));
        fail(
            span,
            format!("the value of an override must be a TOML value: {message}"),
            "not a TOML value",
            Some(help),
        )
    })?;
    let path = set(root, &keys, value)
        .map_err(|e| Box::new(finding(source, e.span, &e.path, e.message, e.label, e.help)))?;
    if ov.origin.starts_with(AXIS_ORIGIN) {
        let key_span = 0..eq;
        if path == [Seg::Key("seed".into())] {
            return Err(fail(
                key_span,
                "a grid axis cannot be `seed`: the seeds are the plan's own axis".into(),
                "not an axis",
                Some(
                    "use --seeds N: every cell runs the same N seeds, which is what pairs \
                     cells for the best-cell verdict"
                        .into(),
                ),
            ));
        }
        // An axis inside a table an override sets refines it (`--set algorithms.x={kind=…}`
        // with `--grid algorithms.x.factor=…`): the override's other keys stay at every point.
        let overlap = axes.iter().find(|(other, other_path)| {
            let n = other_path.len().min(path.len());
            let refines = !other.starts_with(AXIS_ORIGIN) && other_path.len() < path.len();
            other_path[..n] == path[..n] && !refines
        });
        if let Some((other, other_path)) = overlap {
            let (mine, theirs) = (key_path(&path), key_path(other_path));
            let message = match other_path.len().cmp(&path.len()) {
                std::cmp::Ordering::Equal => {
                    format!("{} sets `{mine}`, which {other} sets too", ov.origin)
                }
                std::cmp::Ordering::Greater => format!(
                    "{} sets `{mine}`, which holds `{theirs}`, which {other} sets",
                    ov.origin
                ),
                std::cmp::Ordering::Less => format!(
                    "{} sets `{mine}`, inside `{theirs}`, which {other} sets",
                    ov.origin
                ),
            };
            let (label, help) = if other.starts_with(AXIS_ORIGIN) {
                (
                    "set by another axis too",
                    format!(
                        "one axis per setting (the later one would overwrite {other}, and the \
                         grid would report values no run used): give all the values in one --grid"
                    ),
                )
            } else {
                (
                    "set by an override too",
                    format!(
                        "the axis would overwrite {other} at every point, so {other} would \
                         change nothing: drop it, or make its value one of the axis's"
                    ),
                )
            };
            return Err(fail(key_span, message, label, Some(help)));
        }
    }
    // Every setting is kept: a later axis may not overwrite an override (`--set`, `--jobs`)
    // either, though a later override may (the last one wins).
    axes.push((ov.origin.clone(), path));
    Ok(())
}

/// The byte offset of the first `=` outside quotes.
fn split(text: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '=') => return Some(i),
            _ => {}
        }
    }
    None
}

/// The parts of a dotted key as TOML reads it (`algorithms."my-v".step` has three), or `None`
/// if it is not one.
pub fn key_parts(key: &str) -> Option<Vec<String>> {
    parse_key(key, 0)
        .ok()
        .map(|parts| parts.into_iter().map(|(name, _)| name).collect())
}

/// The key of an override `key=value` as a path (a whole-number part is an index), or `None`
/// if it has no key that parses.
pub(crate) fn key_path_of(text: &str) -> Option<Vec<Seg>> {
    let parts = key_parts(&text[..split(text)?])?;
    let seg = |p: String| p.parse().map_or(Seg::Key(p), Seg::Index);
    Some(parts.into_iter().map(seg).collect())
}

/// The segments of a dotted key with their spans, by parsing `key = 0` as TOML and walking the
/// nested tables it makes. On failure, the span to blame.
fn parse_key(key: &str, source: SourceId) -> Result<Vec<(String, At)>, Range<usize>> {
    let whole = 0..key.len();
    if key.contains(['\n', '\r', '#']) {
        return Err(whole);
    }
    let probe = format!("{key}=0");
    let table = DeTable::parse(&probe).map_err(|e| {
        e.span().map_or(whole.clone(), |s| {
            s.start.min(key.len())..s.end.min(key.len())
        })
    })?;
    let mut segments = Vec::new();
    let mut here: &DeTable<'_> = table.get_ref();
    loop {
        let mut entries = here.iter();
        let (Some((k, v)), None) = (entries.next(), entries.next()) else {
            return Err(whole);
        };
        segments.push((
            k.get_ref().to_string(),
            At {
                source,
                span: k.span(),
            },
        ));
        match v.get_ref() {
            DeValue::Table(t) => here = t,
            _ => return Ok(segments),
        }
    }
}

/// The value after the `=` at `start`, parsed as TOML, with spans in the whole argument.
fn parse_value(text: &str, start: usize, source: SourceId) -> Result<Node, (Range<usize>, String)> {
    let raw = &text[start..];
    let trimmed = raw.trim();
    let offset = start + (raw.len() - raw.trim_start().len());
    let span = offset..offset + trimmed.len();
    if trimmed.is_empty() {
        // Underline the `=` (and any blanks after it): an empty span would show nothing.
        return Err((start - 1..text.len(), "nothing after `=`".into()));
    }
    match DeValue::parse(trimmed) {
        Ok(value) => Ok(doc::from_value(&value, source, offset)),
        Err(_) if bare_word(trimmed) => Ok(Node {
            value: Value::String(trimmed.to_owned()),
            at: At { source, span },
        }),
        Err(e) => {
            // An empty span (the error is "at the end") would underline nothing; blame the value.
            let at = e
                .span()
                .filter(|s| !s.is_empty())
                .map_or(span.clone(), |s| s.start + offset..s.end + offset);
            Err((at, e.message().trim_end().to_owned()))
        }
    }
}

/// A word that TOML rejects only for its missing quotes: `open`, `full`, `fast-flaky`.
pub(crate) fn bare_word(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_alphabetic())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A path that leads nowhere, before it has a source.
struct PathError {
    span: Range<usize>,
    path: Vec<Seg>,
    message: String,
    label: String,
    help: Option<String>,
}

/// Walks `keys` from the root, creating missing tables, and puts `value` at the end; the path
/// it took, an entry's id read as its index.
fn set(root: &mut Node, keys: &[(String, At)], value: Node) -> Result<Vec<Seg>, PathError> {
    let mut path = Vec::new();
    let mut node = root;
    for (n, (key, key_at)) in keys.iter().enumerate() {
        let last = n + 1 == keys.len();
        node = match &mut node.value {
            Value::Table(table) => {
                check_key(&path, key, key_at)?;
                path.push(Seg::Key(key.clone()));
                if last {
                    table.set(Entry {
                        key: key.clone(),
                        key_at: key_at.clone(),
                        node: value,
                    });
                    return Ok(path);
                }
                if table.get(key).is_none() && is_array(&path) {
                    return Err(no_entries(&path, &keys[n + 1]));
                }
                child_table(table, key, key_at)
            }
            Value::Array(items) => {
                let i = element(items, &path, key, key_at)?;
                path.push(Seg::Index(i));
                if last {
                    items[i] = value;
                    return Ok(path);
                }
                &mut items[i]
            }
            other => return Err(not_a_table(&path, other.type_str(), key_at)),
        };
    }
    Ok(path)
}

/// Whether the schema makes the key at `path` an array (of tables).
fn is_array(path: &[Seg]) -> bool {
    schema::field(path)
        .is_some_and(|f| f.schema.get("type").and_then(|t| t.as_str()) == Some("array"))
}

/// An override that reaches into an array the document does not have: there is no element to
/// change, and an override does not create one.
fn no_entries(path: &[Seg], (next, next_at): &(String, At)) -> PathError {
    let here = key_path(path);
    PathError {
        span: next_at.span.clone(),
        path: path.to_vec(),
        message: format!(
            "`{here}` has no entries in this scenario, so there is no `{next}` to set"
        ),
        label: "no such entry".into(),
        help: Some(add_entry_help(path)),
    }
}

/// How to give an array its first entry in TOML: a `[[header]]` names the array without
/// indices, and one inside an array of tables belongs below that entry's own header.
fn add_entry_help(path: &[Seg]) -> String {
    let keys: Vec<&str> = path
        .iter()
        .filter_map(|s| match s {
            Seg::Key(k) => Some(k.as_str()),
            Seg::Index(_) => None,
        })
        .collect();
    let header = keys.join(".");
    let mut help = format!(
        "an override changes an entry the file has; add a `[[{header}]]` table to the file"
    );
    if let Some(i) = path.iter().rposition(|s| matches!(s, Seg::Index(_))) {
        help += &format!(", below the header of `{}`", key_path(&path[..=i]));
    }
    help
}

/// The table at `key`, created (blamed on the override's key) when absent.
fn child_table<'t>(table: &'t mut Table, key: &str, key_at: &At) -> &'t mut Node {
    table.get_or_insert(Entry {
        key: key.to_owned(),
        key_at: key_at.clone(),
        node: Node {
            value: Value::Table(Table::default()),
            at: key_at.clone(),
        },
    })
}

/// Rejects a key the schema does not know at `path`, listing the ones it does.
fn check_key(path: &[Seg], key: &str, key_at: &At) -> Result<(), PathError> {
    let mut at = path.to_vec();
    at.push(Seg::Key(key.to_owned()));
    if schema::field(&at).is_some() {
        return Ok(());
    }
    let known = schema::known_keys(path);
    let mut help = format!("valid keys {}: {}", where_(path), backticked(&known));
    if let Some(best) = schema::did_you_mean(key, known.iter().copied()) {
        help = format!("did you mean `{best}`? {help}");
    }
    Err(PathError {
        span: key_at.span.clone(),
        path: at,
        message: format!("unknown key `{key}` {}", where_(path)),
        label: "unknown key".into(),
        help: Some(help),
    })
}

/// The index an array segment names: an element's `id`, or a number.
fn element(items: &[Node], path: &[Seg], key: &str, key_at: &At) -> Result<usize, PathError> {
    let ids: Vec<&str> = items.iter().filter_map(|n| n.str_at("id")).collect();
    if let Some(i) = items.iter().position(|n| n.str_at("id") == Some(key)) {
        return Ok(i);
    }
    let here = key_path(path);
    let count = items.len();
    let (message, mut help) = match key.parse::<usize>() {
        Ok(i) if i < count => return Ok(i),
        Ok(i) if count == 0 => (
            format!("`{here}` has no entries, so there is no index {i}"),
            add_entry_help(path),
        ),
        Ok(i) => (
            format!(
                "`{here}` has {count} entr{}, so there is no index {i}",
                if count == 1 { "y" } else { "ies" }
            ),
            "indices start at 0".to_owned(),
        ),
        Err(_) => (
            format!("no entry of `{here}` has id `{key}`"),
            String::new(),
        ),
    };
    let listed = if ids.is_empty() {
        format!("`{here}` has no ids; use an index from 0")
    } else {
        format!("ids in `{here}`: {}", backticked(&ids))
    };
    help = [help, listed]
        .into_iter()
        .filter(|h| !h.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    // An index out of range is not a misspelt id (`3` is one edit from an id `c`).
    let index = key.parse::<usize>().is_ok();
    if let Some(best) = schema::did_you_mean(key, ids.iter().copied()).filter(|_| !index) {
        help = format!("did you mean `{best}`? {help}");
    }
    Err(PathError {
        span: key_at.span.clone(),
        path: path.to_vec(),
        message,
        label: "no such entry".into(),
        help: Some(help),
    })
}

fn not_a_table(path: &[Seg], kind: &str, key_at: &At) -> PathError {
    let here = key_path(path);
    PathError {
        span: key_at.span.clone(),
        path: path.to_vec(),
        message: format!("`{here}` is {}, so it has no keys", super::article(kind)),
        label: "no keys below this point".into(),
        help: Some(format!(
            "set the value itself: `--set {}=…`",
            crate::diagnostics::set_path(path)
        )),
    }
}

fn where_(path: &[Seg]) -> String {
    if path.is_empty() {
        "at the top level".to_owned()
    } else {
        format!("in `{}`", key_path(path))
    }
}

fn backticked(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_finds_the_first_unquoted_equals() {
        assert_eq!(split("a.b=1"), Some(3));
        assert_eq!(split("a.\"x=y\"=1"), Some(7));
        assert_eq!(split("a.b"), None);
    }

    #[test]
    fn shape_needs_an_equals_and_a_key() {
        assert!(check_shape("jobs=5").is_ok());
        assert!(check_shape("jobs").is_err());
        assert!(check_shape(" =5").is_err());
    }

    #[test]
    fn keys_are_toml_dotted_keys() {
        let names =
            |k: &str| parse_key(k, 0).map(|s| s.into_iter().map(|(n, _)| n).collect::<Vec<_>>());
        assert_eq!(names("a.b").unwrap(), ["a", "b"]);
        assert_eq!(
            names("unsuited.\"my algo\"").unwrap(),
            ["unsuited", "my algo"]
        );
        assert_eq!(
            names("endpoints.0.capacity").unwrap(),
            ["endpoints", "0", "capacity"]
        );
        assert!(names("a..b").is_err());
        assert!(names("a#b").is_err());
    }

    #[test]
    fn bare_words_are_strings_and_other_junk_is_not() {
        let value = |t: &str| parse_value(t, 2, 0).map(|n| doc::to_toml(&n).to_string());
        assert_eq!(value("k=open").unwrap(), "\"open\"");
        assert_eq!(value("k= 240 ").unwrap(), "240");
        assert_eq!(value("k={ median_s = 0.3 }").unwrap(), "{ median_s = 0.3 }");
        assert!(value("k=1e").is_err());
        assert!(value("k=").is_err());
    }
}
