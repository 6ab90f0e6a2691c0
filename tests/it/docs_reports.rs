//! The reports in docs/scenarios.md are `simbench run --markdown` output, byte for byte: each
//! sits between `<!-- report: ARGS -->` and `<!-- /report -->` and is the verdict paragraph and
//! metric table of `simbench run ARGS --quiet --markdown -`. `SIMBENCH_BLESS=1 cargo test
//! --release --test it docs_reports` rewrites them; the prose around them is checked by eye.

use std::path::Path;

use crate::support::simbench;

/// Splits `text` on spaces, keeping single-quoted parts whole (the quotes removed), as a shell
/// would for the arguments written in a marker.
fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            _ => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// The verdict paragraph and the metric table of the markdown report of `args`.
fn report(args: &[String]) -> String {
    let mut all: Vec<&str> = vec!["run"];
    all.extend(args.iter().map(String::as_str));
    all.extend(["--quiet", "--markdown", "-"]);
    let out = simbench(&all);
    let markdown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let start = markdown.find("**Verdict:**").expect("a verdict paragraph");
    let table = start
        + markdown[start..]
            .find("| metric |")
            .expect("a metric table");
    let end = table + markdown[table..].find("\n\n").expect("the table ends") + 1;
    markdown[start..end].to_string()
}

#[test]
fn docs_reports_in_scenarios_md_are_the_markdown_reports() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scenarios.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (open, close) = ("<!-- report: ", "<!-- /report -->");
    let mut fresh = String::new();
    let mut rest = doc.as_str();
    let mut blocks = 0;
    while let Some(at) = rest.find(open) {
        let line_end = at + rest[at..].find(" -->\n").expect("a marker ends its line");
        let args = words(&rest[at + open.len()..line_end]);
        let body_start = line_end + " -->\n".len();
        let body_end = body_start + rest[body_start..].find(close).expect("a closing marker");
        fresh.push_str(&rest[..body_start]);
        fresh.push_str(&report(&args));
        rest = &rest[body_end..];
        blocks += 1;
    }
    fresh.push_str(rest);
    assert!(blocks >= 10, "only {blocks} reports found");
    if std::env::var_os("SIMBENCH_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    if fresh != doc {
        let first = fresh
            .lines()
            .zip(doc.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "docs/scenarios.md is stale from line {}; rerun with SIMBENCH_BLESS=1 cargo test \
             --release --test it docs_reports",
            first + 1
        );
    }
}
