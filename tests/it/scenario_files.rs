//! Scenario files end to end: the canonical scenarios load and mean what the reference says,
//! every invalid case under `tests/data/invalid/` produces exactly its committed diagnostic
//! through the CLI, and the generated artefacts (schema, docs tables) are fresh.
//!
//! Snapshots are refreshed with `SIMBENCH_BLESS=1 cargo test --release --test it scenario`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use simbench::compile::{self, BUILTIN_BURSTY_TOML, MAX_FILE_BYTES};
use simbench::world::{Jitter, World};

#[path = "../../examples/validate_and_compile.rs"]
mod validate_and_compile_example;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn blessing() -> bool {
    std::env::var_os("SIMBENCH_BLESS").is_some_and(|v| v == "1")
}

fn simbench(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_simbench"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .output()
        .expect("the simbench binary runs")
}

/// Loads a file as `simbench validate` does: following `extends` on disk.
fn load_file(path: &Path) -> Result<World, simbench::diagnostics::ScenarioErrors> {
    let bytes = std::fs::read(path).expect("test data is readable");
    let read = |p: &Path| std::fs::read(p).map_err(|e| e.to_string());
    let options = compile::LoadOptions {
        read: &read,
        read_data: &read,
        overrides: &[],
    };
    compile::load_with(&path.display().to_string(), &bytes, &options)
}

/// Compares `actual` with the committed file, or rewrites the file in bless mode. Returns a
/// description of the mismatch instead of panicking, so one run lists every stale snapshot.
fn compare_snapshot(path: &Path, actual: &str) -> Option<String> {
    if blessing() {
        std::fs::write(path, actual).expect("snapshot is writable");
        return None;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_default();
    (expected != actual).then(|| {
        format!(
            "--- {} (committed)\n{expected}\n--- actual\n{actual}",
            path.display()
        )
    })
}

fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("test data directory exists")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

// ---------------------------------------------------------------------------------------------
// The bursty world.

#[test]
fn scenario_bursty_matches_the_reference_values() {
    let w = compile::builtin_bursty();
    assert_eq!(w.name(), "bursty_provider");
    assert!(w.summary().len() > 100, "a summary paragraph");
    assert_eq!(
        (w.seed(), w.jobs(), w.concurrency(), w.horizon_s()),
        (20260917, 3000, 12, 600.0)
    );
    assert_eq!((w.steps_per_job(), w.calls_per_step()), (3, 2));
    let c = w.cycle();
    assert_eq!(
        (c.period_s, c.trough, c.peak, c.phase_s),
        (120.0, 0.35, 1.0, 0.0)
    );
    let r = w.retry();
    assert_eq!(r.max_attempts, 5);
    assert_eq!(
        (r.backoff.base, r.backoff.factor, r.backoff.cap),
        (0.5, 2.0, 8.0)
    );
    assert_eq!(r.backoff.jitter, Jitter::Full);
    assert!(r.retry_classified && !r.retry_unknown && r.max_total_s.is_none());
    let b = w.breaker();
    assert_eq!((b.degrade_after, b.dead_after, b.cooldown_s), (3, 8, 30.0));
    assert_eq!(w.capacity_retry_after_s(), 0.25);
    let k = w.failure_kinds();
    assert_eq!((k.http_503, k.connection, k.timeout), (0.5, 0.3, 0.2));
    let unsuited: Vec<&str> = w.unsuited().keys().map(String::as_str).collect();
    assert_eq!(unsuited, ["failover", "least_busy"]);
    assert!(w.unsuited().values().all(|reason| !reason.is_empty()));

    // (id, capacity, weight, quota, latency, failures, bucket) exactly as in §1.8.
    type Row = (
        &'static str,
        u32,
        f64,
        f64,
        [f64; 4],
        [f64; 5],
        (u64, [f64; 6]),
    );
    let expected: [Row; 3] = [
        (
            "fast-flaky",
            6,
            1.0,
            1200.0,
            [0.25, 0.5, 0.02, 5.0],
            [0.03, 0.08, 10.0, 30.0, 0.6],
            (1200, [60.0, 2.0, 1.0, 0.5, 0.25, 1.0]),
        ),
        (
            "slow-steady",
            12,
            1.2,
            2400.0,
            [1.2, 0.3, 0.01, 4.0],
            [0.004, 0.02, 10.0, 30.0, 0.5],
            (2400, [60.0, 1.5, 1.0, 0.5, 0.25, 1.0]),
        ),
        (
            "metered",
            4,
            1.0,
            180.0,
            [0.5, 0.6, 0.03, 6.0],
            [0.01, 0.05, 10.0, 30.0, 0.5],
            (180, [60.0, 1.4, 1.5, 0.35, 0.25, 1.0]),
        ),
    ];
    assert_eq!(w.endpoints().len(), 3);
    for (e, (id, capacity, weight, quota, lat, fail, (per_window, bucket))) in
        w.endpoints().iter().zip(expected)
    {
        assert_eq!(e.id, id);
        assert_eq!(
            (e.capacity, e.weight, e.quota_units),
            (capacity, weight, Some(quota))
        );
        let l = &e.latency;
        assert_eq!(
            [l.median_s, l.sigma, l.tail_rate, l.tail_factor],
            lat,
            "{id}"
        );
        let f = &e.failures;
        assert_eq!(
            [
                f.error_rate,
                f.storm_rate,
                f.storm_check_s,
                f.storm_duration_s,
                f.storm_error_rate
            ],
            fail,
            "{id}"
        );
        let rl = e
            .rate_limit
            .as_ref()
            .expect("every bursty endpoint is metered");
        assert_eq!(rl.per_window, per_window);
        assert_eq!(
            [
                rl.window_s,
                rl.burst,
                rl.retry_after_s,
                rl.tightening,
                rl.tightening_floor,
                rl.recovery_per_window
            ],
            bucket,
            "{id}"
        );
    }
}

#[test]
fn scenario_bursty_derived_facts_match_the_reference() {
    let w = compile::builtin_bursty();
    let e = w.endpoints();
    let buckets: Vec<(f64, f64)> = e
        .iter()
        .map(|e| {
            let r = e.rate_limit.as_ref().expect("metered");
            (r.refill_per_s, r.burst_size)
        })
        .collect();
    // 180 * 1.4 is 251.99999999999997 in binary floating point, as in the reference.
    let want = [(20.0, 2400.0), (40.0, 3600.0), (3.0, 252.0)];
    for ((refill, burst), (want_refill, want_burst)) in buckets.into_iter().zip(want) {
        assert_eq!(refill, want_refill);
        assert!((burst - want_burst).abs() < 1e-9, "{burst} vs {want_burst}");
    }
    let means: Vec<f64> = e
        .iter()
        .map(|e| (e.latency.expected_s() * 1000.0).round() / 1000.0)
        .collect();
    assert_eq!(means, [0.306, 1.293, 0.688]);
    assert!((w.cycle().integral(0.0, 600.0) - 405.0).abs() < 1e-9);
    // Spot values of the provider's effective capacity (t -> fast-flaky/slow-steady/metered).
    let spots = [
        (0.0, [2, 5, 1]),
        (10.0, [2, 6, 2]),
        (20.0, [3, 7, 2]),
        (30.0, [4, 10, 3]),
        (40.0, [5, 12, 3]),
        (50.0, [6, 14, 4]),
        (60.0, [6, 14, 4]),
    ];
    for (t, want) in spots {
        let got: Vec<f64> = e
            .iter()
            .map(|e| {
                (e.capacity as f64 * e.weight * w.cycle().factor(t))
                    .round_ties_even()
                    .max(1.0)
            })
            .collect();
        assert_eq!(got, want.map(f64::from), "t = {t}");
    }
}

#[test]
fn scenario_builtin_is_the_committed_file() {
    let on_disk = std::fs::read_to_string(root().join("scenarios/bursty.toml")).expect("file");
    assert_eq!(on_disk, BUILTIN_BURSTY_TOML);
    assert!(BUILTIN_BURSTY_TOML.starts_with("#:schema ../schema/scenario.schema.json\n"));
}

#[test]
fn scenario_every_canonical_and_valid_file_loads() {
    let mut files = files_with_extension(&root().join("scenarios"), "toml");
    files.extend(files_with_extension(
        &root().join("tests/data/valid"),
        "toml",
    ));
    assert!(files.len() >= 3);
    for file in files {
        if let Err(e) = load_file(&file) {
            panic!("{}", e.render_plain());
        }
    }
}

/// Every canonical scenario also runs: every default algorithm, one seed, a small job count.
#[test]
fn scenario_every_canonical_file_runs() {
    for file in files_with_extension(&root().join("scenarios"), "toml") {
        let relative = file.strip_prefix(root()).expect("under the crate");
        let shown = relative.display().to_string();
        let out = simbench(
            root(),
            &["run", &shown, "--seeds", "1", "--jobs", "100", "--quiet"],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{shown}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stdout.is_empty(), "{shown}: no table");
    }
}

#[test]
fn scenario_defaults_are_the_reference_defaults() {
    let w = load_file(&root().join("tests/data/valid/minimal.toml")).expect("valid");
    assert_eq!(
        (w.seed(), w.jobs(), w.concurrency(), w.horizon_s()),
        (20260917, 3000, 32, 600.0)
    );
    assert_eq!((w.steps_per_job(), w.calls_per_step()), (3, 2));
    let c = w.cycle();
    assert_eq!(
        (c.period_s, c.trough, c.peak, c.phase_s),
        (120.0, 0.35, 1.0, 0.0)
    );
    let r = w.retry();
    assert_eq!(
        (
            r.max_attempts,
            r.backoff.base,
            r.backoff.factor,
            r.backoff.cap
        ),
        (5, 0.5, 2.0, 8.0)
    );
    assert_eq!(r.backoff.jitter, Jitter::Full);
    assert!(r.retry_classified && !r.retry_unknown && r.max_total_s.is_none());
    let b = w.breaker();
    assert_eq!((b.degrade_after, b.dead_after, b.cooldown_s), (3, 8, 30.0));
    assert_eq!(w.capacity_retry_after_s(), 0.25);
    let k = w.failure_kinds();
    assert_eq!((k.http_503, k.connection, k.timeout), (0.5, 0.3, 0.2));
    assert!(w.unsuited().is_empty());
    let e = &w.endpoints()[0];
    assert_eq!((e.weight, e.quota_units), (1.0, None));
    let l = &e.latency;
    assert_eq!(
        [l.median_s, l.sigma, l.tail_rate, l.tail_factor],
        [0.4, 0.55, 0.02, 6.0]
    );
    let f = &e.failures;
    assert_eq!(
        [
            f.error_rate,
            f.storm_rate,
            f.storm_check_s,
            f.storm_duration_s,
            f.storm_error_rate
        ],
        [0.01, 0.05, 10.0, 30.0, 0.5]
    );
    assert!(e.rate_limit.is_none(), "absent rate_limit means unmetered");
}

#[test]
fn scenario_rate_limit_defaults_and_quota_zero() {
    let text = "name = \"x\"\nsummary = \"y\"\n[[endpoints]]\nid = \"a\"\ncapacity = 1\n\
                quota_units = 0\nlatency = {}\nrate_limit = {}\n";
    let w = compile::load("inline", text.as_bytes()).expect("valid");
    let e = &w.endpoints()[0];
    assert_eq!(e.quota_units, None, "quota 0 means no quota");
    let r = e.rate_limit.as_ref().expect("metered");
    assert_eq!(r.per_window, 300);
    assert_eq!(
        [
            r.window_s,
            r.burst,
            r.retry_after_s,
            r.tightening,
            r.tightening_floor,
            r.recovery_per_window
        ],
        [60.0, 1.5, 1.0, 0.5, 0.25, 1.0]
    );
    assert_eq!((r.refill_per_s, r.burst_size), (5.0, 450.0));
}

// ---------------------------------------------------------------------------------------------
// Invalid files: committed diagnostics, checked through the CLI.

#[test]
fn scenario_invalid_files_match_their_diagnostics() {
    let dir = root().join("tests/data/invalid");
    let cases = files_with_extension(&dir, "toml");
    assert!(cases.len() >= 35, "only {} invalid cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let relative = case.strip_prefix(root()).expect("under the crate");
        let out = simbench(root(), &["validate", &relative.display().to_string()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(1) {
            failures.push(format!(
                "{}: exit {:?}",
                relative.display(),
                out.status.code()
            ));
        }
        if !out.stdout.is_empty() {
            failures.push(format!("{}: wrote to stdout", relative.display()));
        }
        let errors = load_file(relative).expect_err("an invalid case must not load");
        for f in errors.findings() {
            let header = format!("{}:{}:{}]", relative.display(), f.line, f.column);
            if !stderr.contains(&header) {
                failures.push(format!("{}: no `{header}` in output", relative.display()));
            }
        }
        if let Some(diff) = compare_snapshot(&case.with_extension("stderr"), &stderr) {
            failures.push(diff);
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n\n(refresh with SIMBENCH_BLESS=1 if the change is intended)",
        failures.join("\n")
    );
}

/// A syntax error names the key it is in, however deep, and says how to fix it: the parser's
/// own message names neither.
#[test]
fn scenario_syntax_errors_name_their_key_and_a_fix() {
    let cases = [
        (
            "syntax_missing_value",
            "load.jobs",
            "write a value after `=`",
        ),
        (
            "syntax_number_with_unit",
            "endpoints[1].latency.median_s",
            "write `0.25` for 250ms",
        ),
        ("syntax_missing_comma", "incidents[0].endpoints", "commas"),
        ("syntax_unclosed_string", "summary", "close the string"),
        ("syntax_unclosed_header", "endpoints[0]", "`]]`"),
        ("syntax_unquoted_string", "name", "write `\"tiny\"`"),
        (
            "float_underflow",
            "cycle.phase_s",
            "write 0 if that is what you mean",
        ),
        (
            "syntax_word_for_number",
            "concurrency",
            "takes a whole number (allowed range: 1 <= concurrency <= 100000)",
        ),
        ("syntax_word_for_choice", "retry.jitter", "write `\"full\"`"),
        (
            "syntax_word_for_boolean",
            "retry.retry_classified",
            "`true` or `false`",
        ),
        ("duplicate_key", "jobs", "already defined on line"),
        ("duplicate_table", "cycle", "already defined on line"),
        // The entry still open when the parser stops is read from the text, not its tree.
        (
            "duplicate_subtable",
            "endpoints[1].latency",
            "already defined on line 13;",
        ),
    ];
    for (file, key, fix) in cases {
        let path = root().join(format!("tests/data/invalid/{file}.toml"));
        let errors = load_file(&path).expect_err("invalid");
        let first = &errors.findings()[0];
        assert_eq!(first.key_path, key, "{file}");
        let help = first.help.as_deref().unwrap_or_default();
        assert!(help.contains(fix), "{file}: {help}");
    }
}

/// A file over the size limit, generated rather than committed.
#[test]
fn scenario_oversized_file_is_rejected_before_parsing() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let mut text = String::from("name = \"big\"\n");
    while text.len() <= MAX_FILE_BYTES {
        text.push_str("# padding padding padding padding padding padding padding padding\n");
    }
    std::fs::write(dir.join("oversized.toml"), &text).expect("temp file");
    let out = simbench(&dir, &["validate", "oversized.toml"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let snapshot = root().join("tests/data/generated/oversized.stderr");
    if let Some(diff) = compare_snapshot(&snapshot, &stderr) {
        panic!("{diff}");
    }
    let errors = compile::load("big", text.as_bytes()).expect_err("too large");
    assert_eq!(errors.findings().len(), 1);
    assert_eq!(
        (errors.findings()[0].line, errors.findings()[0].column),
        (1, 1)
    );
    // Exactly at the limit is fine as far as size goes.
    let at_limit = vec![b'#'; MAX_FILE_BYTES];
    let errors = compile::load("edge", &at_limit).expect_err("no name");
    assert!(
        errors.findings()[0]
            .message
            .contains("missing required key")
    );
}

#[test]
fn scenario_json_findings_are_data() {
    let errors = load_file(&root().join("tests/data/invalid/errors_in_two_endpoints.toml"))
        .expect_err("invalid");
    let paths: Vec<&str> = errors
        .findings()
        .iter()
        .map(|f| f.key_path.as_str())
        .collect();
    assert_eq!(
        paths,
        [
            "endpoints[0].latency.sigma",
            "endpoints[1].failures.error_rate"
        ]
    );
    let near = load_file(&root().join("tests/data/invalid/near_miss_key.toml")).expect_err("bad");
    let f = &near.findings()[0];
    assert_eq!(f.key_path, "endpoints[0].latency.median");
    assert_eq!(f.help.as_deref(), Some("did you mean `median_s`?"));
}

// ---------------------------------------------------------------------------------------------
// Generated artefacts.

#[test]
fn scenario_schema_file_is_fresh() {
    let path = root().join("schema/scenario.schema.json");
    let generated = simbench::schema::scenario_schema_text();
    if let Some(diff) = compare_snapshot(&path, &generated) {
        panic!(
            "schema/scenario.schema.json is stale; regenerate it with \
             `SIMBENCH_BLESS=1 cargo test --release --test it scenario_schema` \
             (or `simbench schema > schema/scenario.schema.json`)\n{diff}"
        );
    }
    let value = simbench::schema::scenario_schema();
    assert_eq!(
        value["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
}

/// What an editor does with a file's `#:schema` line: every shipped and valid file, as written
/// (a layer that `extends` a base included, before any merge), against the committed schema.
#[test]
fn scenario_files_as_written_satisfy_the_schema_editors_read() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schema/scenario.schema.json")).expect("schema"),
    )
    .expect("JSON");
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .expect("a valid schema");
    let as_json = |text: &str| toml::from_str::<serde_json::Value>(text).expect("TOML");
    let mut files = files_with_extension(&root().join("scenarios"), "toml");
    files.extend(files_with_extension(
        &root().join("tests/data/valid"),
        "toml",
    ));
    let mut layers = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("file");
        let doc = as_json(&text);
        layers += usize::from(doc.get("extends").is_some());
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", file.display());
    }
    assert!(layers >= 2, "only {layers} files extend a base");
    let refused = |text: &str, missing: &str| {
        let errors: Vec<String> = validator
            .iter_errors(&as_json(text))
            .map(|e| e.to_string())
            .collect();
        assert!(
            errors.iter().any(|e| e.contains(missing)),
            "{missing}: {errors:?}"
        );
    };
    // A file without `extends` must still be whole: no endpoint without capacity, no world
    // without a name, no half of a price.
    for (text, missing) in [
        (
            "summary = \"s\"\n[[endpoints]]\nid = \"a\"\ncapacity = 1\nlatency = {}\n",
            "name",
        ),
        (
            "name = \"n\"\nsummary = \"s\"\n[[endpoints]]\nid = \"a\"\nlatency = {}\n",
            "capacity",
        ),
        (
            "name = \"n\"\nsummary = \"s\"\n[[endpoints]]\nid = \"a\"\ncapacity = 1\n\
             latency = {}\nprice = { input_per_mtok = 1.0 }\n",
            "output_per_mtok",
        ),
    ] {
        refused(text, missing);
    }
    // A layer may leave out what its base supplies, but an endpoint it adds still needs an id,
    // and a replaced array's items stay whole.
    let layer = "extends = \"bursty.toml\"\n[[endpoints]]\nid = \"eu-1\"\ncapacity = 2\n";
    assert_eq!(validator.iter_errors(&as_json(layer)).count(), 0);
    for (text, missing) in [
        ("extends = \"b.toml\"\n[[endpoints]]\ncapacity = 2\n", "id"),
        (
            "extends = \"b.toml\"\n[[incidents]]\nkind = \"outage\"\n",
            "start_s",
        ),
    ] {
        refused(text, missing);
    }
}

#[test]
fn scenario_schema_describes_every_key() {
    fn walk(node: &serde_json::Value, at: &str, missing: &mut Vec<String>) {
        if let Some(props) = node.get("properties").and_then(|p| p.as_object()) {
            for (name, prop) in props {
                let described = prop
                    .get("description")
                    .and_then(|d| d.as_str())
                    .is_some_and(|d| d.len() > 20);
                if !described {
                    missing.push(format!("{at}{name}"));
                }
            }
        }
        if let Some(defs) = node.get("$defs").and_then(|d| d.as_object()) {
            for (name, def) in defs {
                walk(def, &format!("{name}."), missing);
            }
        }
    }
    let mut missing = Vec::new();
    walk(&simbench::schema::scenario_schema(), "", &mut missing);
    assert!(
        missing.is_empty(),
        "keys without a description: {missing:?}"
    );
}

#[test]
fn scenario_docs_tables_are_fresh() {
    const BEGIN: &str =
        "<!-- BEGIN GENERATED: reference tables (SIMBENCH_BLESS=1 cargo test) -->\n";
    const END: &str = "<!-- END GENERATED -->\n";
    let path = root().join("docs/scenario-format.md");
    let doc = std::fs::read_to_string(&path).expect("docs/scenario-format.md exists");
    let (Some(start), Some(end)) = (doc.find(BEGIN), doc.find(END)) else {
        panic!("docs/scenario-format.md lacks the generated-section markers");
    };
    let fresh = format!(
        "{}{BEGIN}{}{}",
        &doc[..start],
        simbench::schema::reference_tables(),
        &doc[end..]
    );
    if fresh != doc {
        if blessing() {
            std::fs::write(&path, fresh).expect("docs are writable");
        } else {
            panic!(
                "the reference tables in docs/scenario-format.md are stale; regenerate them with \
                 `SIMBENCH_BLESS=1 cargo test --release --test it scenario_docs`"
            );
        }
    }
}

/// The worked example in docs/scenario-format.md is valid, and the error shown for it is real.
#[test]
fn scenario_docs_worked_example_is_valid() {
    let doc = std::fs::read_to_string(root().join("docs/scenario-format.md")).expect("docs");
    let section = &doc[doc.find("## A worked example").expect("section")..];
    let start = section.find("```toml\n").expect("a toml block") + "```toml\n".len();
    let example = &section[start..start + section[start..].find("```").expect("closed")];
    let world = compile::load("two_regions.toml", example.as_bytes())
        .unwrap_or_else(|e| panic!("{}", e.render_plain()));
    assert_eq!(world.name(), "two_regions");
    let broken = example.replacen("median_s = 0.3", "median_s = -0.3", 1);
    let errors = compile::load("two_regions.toml", broken.as_bytes()).expect_err("negative");
    let f = &errors.findings()[0];
    assert_eq!((f.line, f.column), (28, 24));
    let rendered = errors.render(simbench::diagnostics::RenderOptions {
        colour: false,
        width: 100,
    });
    assert!(
        doc.contains(&rendered),
        "the docs show different output:\n{rendered}"
    );
}

/// `ScenarioErrors` is a plain miette diagnostic too (for callers that install a miette hook):
/// each finding is a related diagnostic with its own snippet of the shared source.
#[test]
fn scenario_errors_render_through_any_miette_handler() {
    let errors = load_file(&root().join("tests/data/invalid/errors_in_two_endpoints.toml"))
        .expect_err("invalid");
    let handler =
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor());
    let mut out = String::new();
    handler.render_report(&mut out, &errors).expect("renders");
    assert!(out.contains("2 problems in"), "{out}");
    assert!(out.contains("errors_in_two_endpoints.toml:8:37]"), "{out}");
    assert!(out.contains("errors_in_two_endpoints.toml:14:27]"), "{out}");
}

#[test]
fn scenario_example_runs() {
    validate_and_compile_example::main();
}
