//! The document with origins: an owned TOML tree in which every value and every key remembers
//! the source it came from (a file, a base file, a `--set` argument) and its byte span there.
//!
//! Composition builds one such tree out of several texts, and every later stage (the JSON
//! instance, schema errors, cross-field rules) asks it where a key path lands, so a problem is
//! shown in the text that wrote the value. This module owns the tree, its conversion from the
//! parser's borrowed tree, path lookup, and the conversion to a plain [`toml::Value`] for typed
//! deserialization. It never parses text, never merges and never judges values.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::diagnostics::Seg;

/// Index of a [`crate::diagnostics::Source`] in the load's list of sources.
pub(crate) type SourceId = usize;

/// A place in one source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct At {
    pub source: SourceId,
    pub span: Range<usize>,
}

/// A value and where it was written.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub value: Value,
    pub at: At,
}

/// A TOML value. Numbers keep their literal text so that values JSON cannot hold (nan, integers
/// beyond 64 bits) are reported by the schema stage exactly as written.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    String(String),
    Integer { text: String, radix: u32 },
    Float(String),
    Boolean(bool),
    Datetime(toml::value::Datetime),
    Array(Vec<Node>),
    Table(Table),
}

/// A table in written order, with an index by key so that a lookup in a table of many keys
/// does not scan it (a file with 100,000 unknown keys is looked up once per key).
#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    entries: Vec<Entry>,
    index: BTreeMap<String, usize>,
}

/// One key of a table: its name, where the key was written, and its value.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub key: String,
    pub key_at: At,
    pub node: Node,
}

impl Table {
    /// The entries in written order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entries in written order, to change their values (not their keys: the index
    /// would go stale).
    pub fn entries_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        self.entries.iter_mut()
    }

    /// The entries in written order, by value.
    pub fn into_entries(self) -> Vec<Entry> {
        self.entries
    }

    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.index.get(key).map(|&i| &self.entries[i])
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Entry> {
        self.index.get(key).map(|&i| &mut self.entries[i])
    }

    /// Replaces the entry of the same key in place, or appends it; returns its value.
    pub fn set(&mut self, entry: Entry) -> &mut Node {
        let i = match self.index.get(&entry.key) {
            Some(&i) => {
                self.entries[i] = entry;
                i
            }
            None => {
                self.index.insert(entry.key.clone(), self.entries.len());
                self.entries.push(entry);
                self.entries.len() - 1
            }
        };
        &mut self.entries[i].node
    }
}

impl Table {
    /// The value of `entry.key`, after appending `entry` if the key is absent.
    pub fn get_or_insert(&mut self, entry: Entry) -> &mut Node {
        match self.index.get(&entry.key) {
            Some(&i) => &mut self.entries[i].node,
            None => self.set(entry),
        }
    }
}

impl FromIterator<Entry> for Table {
    fn from_iter<I: IntoIterator<Item = Entry>>(iter: I) -> Table {
        let mut table = Table::default();
        for entry in iter {
            table.set(entry);
        }
        table
    }
}

impl Value {
    /// The TOML type name, as the parser spells it (`"integer"`, `"table"`, …).
    pub fn type_str(&self) -> &'static str {
        match self {
            Value::String(_) => "string",
            Value::Integer { .. } => "integer",
            Value::Float(_) => "float",
            Value::Boolean(_) => "boolean",
            Value::Datetime(_) => "datetime",
            Value::Array(_) => "array",
            Value::Table(_) => "table",
        }
    }
}

impl Node {
    /// The string value of `key` if this node is a table that has one.
    pub fn str_at(&self, key: &str) -> Option<&str> {
        match &self.value {
            Value::Table(t) => match &t.get(key)?.node.value {
                Value::String(s) => Some(s),
                _ => None,
            },
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// From the parser's tree.

/// Converts a parsed file. Spans are shifted by `offset` (non-zero when the parsed text is a
/// slice of a larger source, as the value of a `--set` argument is).
pub(crate) fn from_table(root: &Spanned<DeTable<'_>>, source: SourceId, offset: usize) -> Node {
    Node {
        value: Value::Table(table(root.get_ref(), source, offset)),
        at: at(source, offset, root.span()),
    }
}

/// Converts one parsed value (see [`from_table`] for `offset`).
pub(crate) fn from_value(value: &Spanned<DeValue<'_>>, source: SourceId, offset: usize) -> Node {
    let converted = match value.get_ref() {
        DeValue::String(s) => Value::String(s.to_string()),
        DeValue::Integer(i) => Value::Integer {
            text: i.as_str().to_owned(),
            radix: i.radix(),
        },
        DeValue::Float(f) => Value::Float(f.as_str().to_owned()),
        DeValue::Boolean(b) => Value::Boolean(*b),
        DeValue::Datetime(d) => Value::Datetime(*d),
        DeValue::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| from_value(item, source, offset))
                .collect(),
        ),
        DeValue::Table(t) => Value::Table(table(t, source, offset)),
    };
    Node {
        value: converted,
        at: at(source, offset, value.span()),
    }
}

fn table(t: &DeTable<'_>, source: SourceId, offset: usize) -> Table {
    t.iter()
        .map(|(key, value)| Entry {
            key: key.get_ref().to_string(),
            key_at: at(source, offset, key.span()),
            node: from_value(value, source, offset),
        })
        .collect()
}

fn at(source: SourceId, offset: usize, span: Range<usize>) -> At {
    At {
        source,
        span: span.start + offset..span.end + offset,
    }
}

// ---------------------------------------------------------------------------------------------
// Lookup.

/// Where a key path lands in the document.
pub(crate) struct Located {
    /// The value at the path, or the nearest enclosing value that exists.
    pub value: At,
    /// The last key, when the path exists and ends in a key.
    pub key: Option<At>,
    /// Whether the whole path exists (false for defaulted or missing keys).
    pub exact: bool,
    /// TOML type of the value at the path, when it exists.
    pub kind: Option<&'static str>,
}

/// Walks the document along `path`.
pub(crate) fn locate(root: &Node, path: &[Seg]) -> Located {
    let mut here = Located {
        value: root.at.clone(),
        key: None,
        exact: true,
        kind: Some(root.value.type_str()),
    };
    let mut node = root;
    for seg in path {
        let next = match (seg, &node.value) {
            (Seg::Key(k), Value::Table(t)) => t.get(k).map(|e| (Some(e.key_at.clone()), &e.node)),
            (Seg::Index(i), Value::Array(items)) => items.get(*i).map(|n| (None, n)),
            _ => None,
        };
        let Some((key, value)) = next else {
            here.exact = false;
            here.key = None;
            here.kind = None;
            return here;
        };
        here.value = value.at.clone();
        here.key = key;
        here.kind = Some(value.value.type_str());
        node = value;
    }
    here
}

// ---------------------------------------------------------------------------------------------
// To a plain TOML value.

/// The document as a [`toml::Value`], for typed deserialization of a tree already checked by
/// the schema. Numbers the schema stage has rejected cannot reach this point; they become 0
/// rather than a panic.
pub(crate) fn to_toml(node: &Node) -> toml::Value {
    match &node.value {
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Integer { text, radix } => {
            toml::Value::Integer(i64::from_str_radix(text, *radix).unwrap_or(0))
        }
        Value::Float(text) => toml::Value::Float(text.parse().unwrap_or(0.0)),
        Value::Boolean(b) => toml::Value::Boolean(*b),
        Value::Datetime(d) => toml::Value::Datetime(*d),
        Value::Array(items) => toml::Value::Array(items.iter().map(to_toml).collect()),
        Value::Table(t) => toml::Value::Table(
            t.entries()
                .iter()
                .map(|e| (e.key.clone(), to_toml(&e.node)))
                .collect(),
        ),
    }
}
