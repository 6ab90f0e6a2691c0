//! Deep merge of a base document with a child that extends it.
//!
//! Tables merge key by key, recursively; the top-level `endpoints` array merges element by
//! element, matched by `id` (a child endpoint with a known id overrides fields of that base
//! endpoint; a new id is appended in the child's order); every other value, arrays included, is
//! replaced by the child's. Every merged value keeps the origin of the text that wrote it, and a
//! table written by both takes the child's, so a problem that only exists after merging is
//! shown where the child wrote it. This module never reads, parses or validates.

use super::doc::{Entry, Node, Table, Value};

/// The array merged by `id` rather than replaced.
const BY_ID: &str = "endpoints";

/// `child` laid over `base`.
pub(crate) fn merge(base: Node, child: Node) -> Node {
    merge_at(base, child, true)
}

fn merge_at(base: Node, child: Node, top: bool) -> Node {
    match (base.value, child.value) {
        (Value::Table(b), Value::Table(c)) => Node {
            value: Value::Table(merge_tables(b, c, top)),
            at: child.at,
        },
        (_, value) => Node {
            value,
            at: child.at,
        },
    }
}

fn merge_tables(mut base: Table, child: Table, top: bool) -> Table {
    for entry in child.into_entries() {
        let Some(old) = base.get_mut(&entry.key) else {
            base.set(entry);
            continue;
        };
        let placeholder = Node {
            value: Value::Boolean(false),
            at: entry.node.at.clone(),
        };
        let was = std::mem::replace(&mut old.node, placeholder);
        let node = if top && entry.key == BY_ID {
            merge_by_id(was, entry.node)
        } else {
            merge_at(was, entry.node, false)
        };
        *old = Entry {
            key: entry.key,
            key_at: entry.key_at,
            node,
        };
    }
    base
}

/// Merges two arrays of tables by their `id` key. Each base element is matched at most once, so
/// a child that repeats an id appends the repeat, and the duplicate-id rule reports it.
fn merge_by_id(base: Node, child: Node) -> Node {
    let (mut items, extra) = match (base.value, child.value) {
        (Value::Array(items), Value::Array(extra)) => (items, extra),
        (_, value) => {
            return Node {
                value,
                at: child.at,
            };
        }
    };
    let known = items.len();
    let mut matched = vec![false; known];
    for item in extra {
        let slot = item
            .str_at("id")
            .and_then(|id| (0..known).find(|&i| !matched[i] && items[i].str_at("id") == Some(id)));
        match slot {
            Some(i) => {
                matched[i] = true;
                let placeholder = Node {
                    value: Value::Boolean(false),
                    at: item.at.clone(),
                };
                let was = std::mem::replace(&mut items[i], placeholder);
                items[i] = merge_at(was, item, false);
            }
            None => items.push(item),
        }
    }
    Node {
        value: Value::Array(items),
        at: child.at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compose::doc::{self, At};

    /// Parses `text` as source `source` (no syntax errors expected in these tests).
    fn parse(text: &str, source: usize) -> Node {
        let (root, errors) = toml::de::DeTable::parse_recoverable(text);
        assert!(errors.is_empty(), "{errors:?}");
        doc::from_table(&root, source, 0)
    }

    /// The merged document as compact TOML, each leaf followed by the source it came from.
    fn show(node: &Node) -> String {
        match &node.value {
            Value::Table(t) => {
                let inner: Vec<String> = t
                    .entries()
                    .iter()
                    .map(|e| format!("{} = {}", e.key, show(&e.node)))
                    .collect();
                format!("{{ {} }}", inner.join(", "))
            }
            Value::Array(items) => {
                let inner: Vec<String> = items.iter().map(show).collect();
                format!("[{}]", inner.join(", "))
            }
            _ => format!("{}@{}", doc::to_toml(node), node.at.source),
        }
    }

    fn check(base: &str, child: &str, expected: &str) {
        let merged = merge(parse(base, 0), parse(child, 1));
        assert_eq!(show(&merged), expected);
    }

    #[test]
    fn tables_merge_key_by_key_and_scalars_are_replaced() {
        check(
            "a = 1\n[t]\nx = 1\ny = 2\n[t.u]\nz = 3\n",
            "b = 2\n[t]\ny = 20\n[t.u]\nw = 4\n",
            // The parser hands keys over sorted; merging keeps the base's order, then the child's.
            "{ a = 1@0, t = { u = { z = 3@0, w = 4@1 }, x = 1@0, y = 20@1 }, b = 2@1 }",
        );
    }

    #[test]
    fn other_arrays_and_type_changes_replace() {
        check(
            "a = [1, 2]\nt = { x = 1 }\n",
            "a = [3]\nt = 5\n",
            "{ a = [3@1], t = 5@1 }",
        );
    }

    #[test]
    fn endpoints_are_matched_by_id_and_new_ids_appended() {
        check(
            "[[endpoints]]\nid = \"a\"\nc = 1\n[[endpoints]]\nid = \"b\"\nc = 2\n",
            "[[endpoints]]\nid = \"c\"\nc = 9\n[[endpoints]]\nid = \"b\"\nc = 5\n",
            "{ endpoints = [{ c = 1@0, id = \"a\"@0 }, { c = 5@1, id = \"b\"@1 }, \
             { c = 9@1, id = \"c\"@1 }] }",
        );
    }

    #[test]
    fn a_repeated_or_missing_id_is_appended() {
        check(
            "[[endpoints]]\nid = \"a\"\nc = 1\n",
            "[[endpoints]]\nid = \"a\"\nc = 2\n[[endpoints]]\nid = \"a\"\n[[endpoints]]\nc = 3\n",
            "{ endpoints = [{ c = 2@1, id = \"a\"@1 }, { id = \"a\"@1 }, { c = 3@1 }] }",
        );
    }

    #[test]
    fn endpoints_below_the_top_level_are_an_ordinary_array() {
        check(
            "[t]\nendpoints = [{ id = \"a\", c = 1 }]\n",
            "[t]\nendpoints = [{ id = \"a\" }]\n",
            "{ t = { endpoints = [{ id = \"a\"@1 }] } }",
        );
    }

    #[test]
    fn a_table_written_by_both_takes_the_childs_origin() {
        let merged = merge(parse("[t]\nx = 1\n", 0), parse("[t]\ny = 2\n", 1));
        let located = doc::locate(&merged, &[crate::diagnostics::Seg::Key("t".into())]);
        assert_eq!(located.value.source, 1);
        assert_eq!(
            merged.at,
            At {
                source: 1,
                span: merged.at.span.clone()
            }
        );
    }
}
