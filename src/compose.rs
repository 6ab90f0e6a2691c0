//! Composition: from a file's bytes, the files it `extends` and the command-line overrides to
//! one document whose every value remembers the text it came from.
//!
//! `document` parses the file, follows its `extends` chain (each path relative to the file
//! that names it), merges the chain from the deepest base up (`merge`) and applies the
//! overrides in order (`set`). A problem with the chain — a base that cannot be read, a cycle,
//! an `extends` that is not a string — is reported at the `extends` value of the file that names
//! it, and a problem inside a base is reported in that base. This module never touches the
//! filesystem: the caller hands it a reader, so the core stays pure and tests use a map of
//! files. It never validates values either; [`crate::compile`] does that on the result.

mod csv;
pub(crate) mod doc;
mod merge;
mod parse;
mod set;
mod syntax;

use std::path::{Path, PathBuf};

pub use csv::MAX_CSV_BYTES;
use doc::{At, Node, Value};
pub(crate) use set::bare_word;
pub use set::{Override, check_shape, key_parts};

use crate::diagnostics::{Finding, Seg, Source, finding, line_column};

/// The largest scenario file composition parses, in bytes (1 MiB), a base's included. Real
/// scenarios are a few KiB; the limit stops a wrong argument (a log, a binary) from being
/// parsed at length.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;

/// How deep an `extends` chain may go. Real chains are one or two files deep; the limit also
/// stops a cycle that neither path comparison nor the reader sees.
pub const MAX_EXTENDS_DEPTH: usize = 16;

/// Reads the file at a path (already joined to the directory of the file that names it, `..`
/// steps left for the operating system to resolve). Returns its bytes, or a one-line reason it
/// cannot be read. Composition catches a cycle whose paths are spelled alike; a reader on a real
/// filesystem also refuses a file it has already read in this load (compared by identity, not
/// by spelling), which is how a cycle through `..` or a link is reported.
pub type Reader<'a> = dyn Fn(&Path) -> Result<Vec<u8>, String> + 'a;

/// The composed document, every source it read, and the problems found on the way. A
/// `Some` document may still come with problems (overrides that could not be applied); `None`
/// means the chain itself failed and nothing is worth validating.
pub(crate) struct Composed {
    /// The file, its bases (deepest last), then the overrides.
    pub sources: Vec<Source>,
    pub doc: Option<Node>,
    pub findings: Vec<Finding>,
    /// How many of `sources` are the file and its bases (quantile files and overrides follow).
    pub files: usize,
    /// The keys of the overrides that could not be applied: a rule about them (`model =
    /// "trace"` needs `trace`) would only repeat their finding.
    pub unapplied: Vec<Vec<Seg>>,
}

/// Builds the document of `name` (see the module docs).
pub(crate) fn document(
    name: &str,
    bytes: &[u8],
    read: &Reader<'_>,
    read_data: &Reader<'_>,
    overrides: &[Override],
) -> Composed {
    let mut sources = Vec::new();
    let chain = chain(&mut sources, name, bytes, read);
    let files = sources.len();
    let mut findings = Vec::new();
    let mut doc = match chain {
        Ok(mut layers) => {
            for (i, layer) in layers.iter_mut().enumerate() {
                let name = sources[i].name.clone();
                findings.extend(csv::expand(layer, &name, &mut sources, read_data, None));
            }
            layers.into_iter().rev().reduce(merge::merge)
        }
        Err(f) => {
            return Composed {
                files: sources.len(),
                sources,
                doc: None,
                findings: vec![*f],
                unapplied: Vec::new(),
            };
        }
    };
    let mut unapplied = Vec::new();
    if let Some(root) = doc.as_mut() {
        let first_override = sources.len();
        let mut axes = Vec::new();
        for ov in overrides {
            if let Err(f) = set::apply(root, &mut sources, ov, &mut axes) {
                findings.push(*f);
                unapplied.extend(set::key_path_of(&ov.text));
            }
        }
        // Only an override can have left a CSV path: its path is relative to the working folder.
        findings.extend(csv::expand(
            root,
            "",
            &mut sources,
            read_data,
            Some(first_override),
        ));
    }
    Composed {
        sources,
        doc,
        findings,
        files,
        unapplied,
    }
}

/// The file and its bases, the file first.
fn chain(
    sources: &mut Vec<Source>,
    name: &str,
    bytes: &[u8],
    read: &Reader<'_>,
) -> Result<Vec<Node>, Box<Finding>> {
    let mut layers = vec![parse::parse(sources, name, bytes)?];
    let mut names = vec![name.to_owned()];
    loop {
        let current = layers.len() - 1;
        let Some((target, at)) = extends(&layers[current], &sources[current])? else {
            return Ok(layers);
        };
        let path = join(&names[current], &target);
        let shown = path.display().to_string();
        let blame = |message: String, label: &str, help: String| {
            Box::new(finding(
                &sources[at.source],
                at.span.clone(),
                &[Seg::Key("extends".into())],
                message,
                label.to_owned(),
                Some(help),
            ))
        };
        if let Some(first) = names.iter().position(|n| same_file(n, &shown)) {
            let mut cycle: Vec<String> = names[first..].iter().map(|n| format!("`{n}`")).collect();
            cycle.push(format!("`{shown}`"));
            return Err(blame(
                format!("`extends` makes a cycle: `{shown}` already extends this file"),
                "cycle",
                format!(
                    "{}; a file cannot be its own base, directly or through others",
                    cycle.join(" extends ")
                ),
            ));
        }
        // The chain already holds `layers.len()` files; the base would be one more.
        if layers.len() >= MAX_EXTENDS_DEPTH {
            return Err(blame(
                format!("`extends` chain is more than {MAX_EXTENDS_DEPTH} files deep"),
                "too deep",
                "real chains are a file or two deep; look for a cycle through a link".into(),
            ));
        }
        let bytes = read(&path).map_err(|reason| {
            blame(
                format!("cannot read the base file `{shown}`: {reason}"),
                "cannot read this base",
                format!(
                    "`extends` is a path relative to the file that names it ({}), so this is `{shown}`",
                    names[current]
                ),
            )
        })?;
        layers.push(parse::parse(sources, &shown, &bytes)?);
        names.push(shown);
    }
}

/// The `extends` path of a parsed file and where it is written, if it has one.
fn extends(doc: &Node, source: &Source) -> Result<Option<(String, At)>, Box<Finding>> {
    let Value::Table(table) = &doc.value else {
        return Ok(None);
    };
    let Some(entry) = table.get("extends") else {
        return Ok(None);
    };
    let at = &entry.node.at;
    let fail = |message: String, label: &str, help: &str| {
        Box::new(finding(
            source,
            at.span.clone(),
            &[Seg::Key("extends".into())],
            message,
            label.to_owned(),
            Some(help.to_owned()),
        ))
    };
    match &entry.node.value {
        Value::String(s) if !s.trim().is_empty() => Ok(Some((s.clone(), at.clone()))),
        Value::String(_) => Err(fail(
            "`extends` must not be empty".into(),
            "empty path",
            "`extends` names the base file, e.g. `extends = \"bursty.toml\"`",
        )),
        other => Err(fail(
            format!(
                "`extends` must be a string, found {}",
                article(other.type_str())
            ),
            "expected a string",
            "`extends` names the base file, e.g. `extends = \"bursty.toml\"`",
        )),
    }
}

fn article(kind: &str) -> String {
    match kind {
        "integer" | "array" => format!("an {kind}"),
        "datetime" => "a date-time".into(),
        _ => format!("a {kind}"),
    }
}

/// `target` relative to the directory of the file `from` as written, left for the operating
/// system to resolve. Only `.` steps are dropped (they change nothing); `..` is kept, because
/// `lnk/..` is the parent of the folder `lnk` points to, not the folder holding `lnk`, and only
/// the filesystem knows which. A scenario reached through a symbolic link to a file finds its
/// bases next to the link, as its path is written.
pub(crate) fn join(from: &str, target: &str) -> PathBuf {
    let base = Path::new(from).parent().unwrap_or(Path::new(""));
    let joined: PathBuf = base.join(target).components().collect();
    if joined.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        joined
    }
}

/// Whether two paths are spelled the same once `.` steps are dropped: then they are one file.
/// Different spellings of one file (through `..` or a link) are the reader's to recognise; see
/// [`Reader`].
fn same_file(a: &str, b: &str) -> bool {
    Path::new(a).components().eq(Path::new(b).components())
}

/// "line 12" when `at` is in source `from`, "line 12 of base.toml" when it is in another.
pub(crate) fn describe(sources: &[Source], at: &At, from: doc::SourceId) -> String {
    let Some(source) = sources.get(at.source) else {
        return "elsewhere".into();
    };
    let line = line_column(&source.text, at.span.start).0;
    if from == at.source {
        format!("line {line}")
    } else {
        format!("line {line} of {}", source.name)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// `p` as a filesystem without links resolves it: `dir/..` pairs cancel.
    fn without_links(p: &Path) -> PathBuf {
        let mut out = PathBuf::new();
        for c in p.components() {
            match c {
                std::path::Component::ParentDir if out.file_name().is_some() => {
                    out.pop();
                }
                other => out.push(other),
            }
        }
        out
    }

    /// Composes `main.toml` from an in-memory set of files and renders the findings, if any.
    fn compose(files: &[(&str, &str)], overrides: &[&str]) -> Result<String, String> {
        let map: BTreeMap<PathBuf, &str> =
            files.iter().map(|(p, t)| (PathBuf::from(p), *t)).collect();
        let read = |p: &Path| {
            map.get(&without_links(p))
                .map(|t| t.as_bytes().to_vec())
                .ok_or_else(|| "no such file".to_owned())
        };
        let overrides: Vec<Override> = overrides
            .iter()
            .enumerate()
            .map(|(i, t)| Override {
                origin: format!("--set #{}", i + 1),
                text: (*t).to_owned(),
            })
            .collect();
        let main = map
            .get(Path::new("dir/main.toml"))
            .copied()
            .unwrap_or_default();
        let out = document("dir/main.toml", main.as_bytes(), &read, &read, &overrides);
        if out.findings.is_empty() {
            let doc = out.doc.expect("a document without findings");
            Ok(doc::to_toml(&doc).to_string())
        } else {
            let lines: Vec<String> = out
                .findings
                .iter()
                .map(|f| format!("{}:{}:{}: {}", f.origin, f.line, f.column, f.message))
                .collect();
            Err(lines.join("\n"))
        }
    }

    #[test]
    fn a_chain_merges_from_the_deepest_base() {
        let files = [
            ("dir/main.toml", "extends = \"sub/mid.toml\"\nc = 3\n"),
            (
                "dir/sub/mid.toml",
                "extends = \"../base.toml\"\nb = 2\na = 20\n",
            ),
            ("dir/base.toml", "a = 1\nb = 1\n"),
        ];
        let got = compose(&files, &[]).expect("composes");
        assert_eq!(got, "{ a = 20, b = 2, c = 3, extends = \"sub/mid.toml\" }");
    }

    #[test]
    fn cycles_are_reported_at_the_extends_that_closes_them() {
        let files = [
            ("dir/main.toml", "extends = \"b.toml\"\n"),
            ("dir/b.toml", "x = 1\nextends = \"./main.toml\"\n"),
        ];
        let err = compose(&files, &[]).expect_err("a cycle");
        assert_eq!(
            err,
            "dir/b.toml:2:11: `extends` makes a cycle: `dir/main.toml` already extends this file"
        );
        let own = [("dir/main.toml", "extends = \"main.toml\"\n")];
        assert!(
            compose(&own, &[])
                .expect_err("self")
                .starts_with("dir/main.toml:1:11:")
        );
    }

    #[test]
    fn a_missing_base_and_a_broken_base_are_reported_where_they_are() {
        let missing = [("dir/main.toml", "a = 1\nextends = \"nope.toml\"\n")];
        assert_eq!(
            compose(&missing, &[]).expect_err("missing"),
            "dir/main.toml:2:11: cannot read the base file `dir/nope.toml`: no such file"
        );
        let broken = [
            ("dir/main.toml", "extends = \"b.toml\"\n"),
            ("dir/b.toml", "a = 1\nb = \n"),
        ];
        assert!(
            compose(&broken, &[])
                .expect_err("syntax")
                .starts_with("dir/b.toml:2:")
        );
        let typed = [("dir/main.toml", "extends = 3\n")];
        assert_eq!(
            compose(&typed, &[]).expect_err("not a string"),
            "dir/main.toml:1:11: `extends` must be a string, found an integer"
        );
    }

    #[test]
    fn paths_are_relative_to_the_naming_file_and_dot_dot_is_left_to_the_os() {
        let shown = |from: &str, to: &str| join(from, to).display().to_string();
        assert_eq!(
            shown("scenarios/x.toml", "./bursty.toml"),
            "scenarios/bursty.toml"
        );
        // `b` may be a link to another folder: only the filesystem knows what `b/..` is.
        assert_eq!(shown("a/b/x.toml", "../c/../y.toml"), "a/b/../c/../y.toml");
        assert_eq!(
            shown("lnk/deep.toml", "../../base.toml"),
            "lnk/../../base.toml"
        );
        assert_eq!(shown("x.toml", "../y.toml"), "../y.toml");
        assert_eq!(shown("x.toml", "/abs/y.toml"), "/abs/y.toml");
        assert_eq!(shown("x.toml", "."), ".");
        assert_eq!(shown("d/x.toml", "."), "d");
        assert!(same_file("a/./b.toml", "a/b.toml"));
        assert!(!same_file("a/c/../b.toml", "a/b.toml"));
        assert!(!same_file("a/b.toml", "b.toml"));
    }

    #[test]
    fn overrides_apply_after_merging() {
        let files = [("dir/main.toml", "[retry]\nbase = 1\n")];
        let got = compose(&files, &["retry.jitter=full", "cycle = { peak = 1 }"]).expect("applies");
        assert_eq!(
            got,
            "{ cycle = { peak = 1 }, retry = { base = 1, jitter = \"full\" } }"
        );
    }
}
