//! Composition and overrides end to end: `extends` chains and `--set` arguments through the
//! binary, with committed diagnostics, and through the library with an in-memory set of files.
//!
//! Each directory under `tests/data/compose/` is one case: `main.toml` (plus the files it
//! extends) and, optionally, `args.txt` (extra arguments, one per line). The case's
//! `expected.out` holds the exit code and the standard error of `simbench validate main.toml
//! ARGS…`; `SIMBENCH_BLESS=1 cargo test --release --test it compose` rewrites them.

use crate::support::simbench;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use proptest::prelude::*;

use simbench::compile::{self, BUILTIN_BURSTY_TOML, LoadOptions, Override};
use simbench::diagnostics::{RenderOptions, ScenarioErrors};
use simbench::world::World;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Loads `main` from an in-memory set of files, with `--set` overrides.
fn load_from(files: &[(&str, &str)], main: &str, set: &[&str]) -> Result<World, ScenarioErrors> {
    let map: BTreeMap<PathBuf, &str> = files.iter().map(|(p, t)| (PathBuf::from(p), *t)).collect();
    let read = |p: &Path| {
        map.get(p)
            .map(|t| t.as_bytes().to_vec())
            .ok_or_else(|| "no such file".to_owned())
    };
    let overrides: Vec<Override> = set
        .iter()
        .enumerate()
        .map(|(i, t)| Override {
            origin: format!("--set #{}", i + 1),
            text: (*t).to_owned(),
        })
        .collect();
    let text = map.get(Path::new(main)).copied().unwrap_or_default();
    let options = LoadOptions {
        read: &read,
        read_data: &read,
        overrides: &overrides,
    };
    compile::load_with(main, text.as_bytes(), &options)
}

/// `origin:line:column: message` for every finding.
fn where_(errors: &ScenarioErrors) -> Vec<String> {
    errors
        .findings()
        .iter()
        .map(|f| format!("{}:{}:{}: {}", f.origin, f.line, f.column, f.message))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Committed cases through the binary.

#[test]
fn compose_cases_match_their_diagnostics() {
    let dir = root().join("tests/data/compose");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/data/compose exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 12, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let relative = case.strip_prefix(root()).expect("under the crate");
        let main = relative.join("main.toml").display().to_string();
        let extra = std::fs::read_to_string(case.join("args.txt")).unwrap_or_default();
        let mut args = vec!["validate", main.as_str()];
        args.extend(extra.lines().filter(|l| !l.is_empty()));
        let out = simbench(&args);
        let actual = format!(
            "exit: {}\n--- stderr\n{}",
            out.status.code().unwrap_or(-1),
            stderr(&out)
        );
        if !out.stdout.is_empty() {
            failures.push(format!("{}: wrote to stdout", relative.display()));
        }
        let snapshot = case.join("expected.out");
        if std::env::var_os("SIMBENCH_BLESS").is_some_and(|v| v == "1") {
            std::fs::write(&snapshot, &actual).expect("snapshot is writable");
            continue;
        }
        let expected = std::fs::read_to_string(&snapshot).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "--- {} (committed)\n{expected}\n--- actual\n{actual}",
                snapshot.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n\n(refresh with SIMBENCH_BLESS=1 if the change is intended)",
        failures.join("\n")
    );
}

/// The exit codes the cases pin, stated once more where a reader looks for them.
#[test]
fn compose_exit_codes() {
    let code = |case: &str| {
        let text = std::fs::read_to_string(
            root()
                .join("tests/data/compose")
                .join(case)
                .join("expected.out"),
        )
        .expect("snapshot");
        text.lines().next().unwrap_or_default().to_owned()
    };
    assert_eq!(code("override_by_id"), "exit: 0");
    for invalid in [
        "cycle",
        "missing_base",
        "error_in_base",
        "bad_set_path",
        "bad_set_value",
    ] {
        assert_eq!(code(invalid), "exit: 1", "{invalid}");
    }
    assert_eq!(code("malformed_set"), "exit: 2");
}

// ---------------------------------------------------------------------------------------------
// The library, with files on disk and in memory.

#[test]
fn compose_endpoints_are_overridden_by_id() {
    let dir = root().join("tests/data/compose/override_by_id");
    let read = |p: &Path| std::fs::read(p).map_err(|e| e.to_string());
    let main = dir.join("main.toml");
    let bytes = std::fs::read(&main).expect("case");
    let options = LoadOptions {
        read: &read,
        read_data: &read,
        overrides: &[],
    };
    let w = compile::load_with(&main.display().to_string(), &bytes, &options)
        .unwrap_or_else(|e| panic!("{}", e.render_plain()));
    assert_eq!(
        (w.name(), w.summary(), w.jobs()),
        ("child", "A small base world.", 50)
    );
    assert_eq!((w.cycle().trough, w.cycle().peak), (0.2, 0.8));
    let ids: Vec<&str> = w.endpoints().iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["primary", "backup", "spare"]);
    let [primary, backup, spare] = w.endpoints() else {
        panic!("three endpoints");
    };
    assert_eq!((primary.capacity, primary.latency.median_s), (8, 0.3));
    let bucket = primary.rate_limit.as_ref().expect("metered by the base");
    assert_eq!((bucket.per_window, bucket.window_s), (120, 30.0));
    assert_eq!((backup.capacity, backup.weight), (2, 0.5));
    assert_eq!((spare.capacity, spare.latency.mean_s), (1, 2.0));
}

#[test]
fn compose_the_shipped_composition_differs_from_bursty_only_where_it_says() {
    let path = root().join("scenarios/bursty_tight_metered.toml");
    let read = |p: &Path| std::fs::read(p).map_err(|e| e.to_string());
    let options = LoadOptions {
        read: &read,
        read_data: &read,
        overrides: &[],
    };
    let bytes = std::fs::read(&path).expect("the example exists");
    let tight = compile::load_with(&path.display().to_string(), &bytes, &options)
        .unwrap_or_else(|e| panic!("{}", e.render_plain()));
    let bursty = compile::builtin_bursty();
    assert_eq!(tight.name(), "bursty_tight_metered");
    assert_eq!((tight.jobs(), tight.seed()), (bursty.jobs(), bursty.seed()));
    assert_eq!(tight.unsuited(), bursty.unsuited());
    let metered = &tight.endpoints()[2];
    assert_eq!(
        (metered.id.as_str(), metered.quota_units),
        ("metered", Some(60.0))
    );
    let bucket = metered.rate_limit.as_ref().expect("metered");
    assert_eq!(
        (bucket.per_window, bucket.burst, bucket.retry_after_s),
        (60, 1.2, 3.0)
    );
    assert_eq!(
        bucket.tightening, 0.35,
        "the rest of the bucket is bursty's"
    );
    for (a, b) in tight.endpoints()[..2].iter().zip(&bursty.endpoints()[..2]) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
}

#[test]
fn compose_overrides_apply_to_the_resolved_world() {
    let files = [
        ("w/base.toml", BUILTIN_BURSTY_TOML),
        ("w/main.toml", "extends = \"base.toml\"\nname = \"child\"\n"),
    ];
    let w = load_from(
        &files,
        "w/main.toml",
        &[
            "endpoints.metered.rate_limit.per_window=240",
            "retry.max_attempts = 3",
            "retry.jitter=equal",
            "endpoints.0.latency={ median_s = 0.3 }",
            "load.model=\"open\"",
            "load.rate_per_s=2.5",
        ],
    )
    .unwrap_or_else(|e| panic!("{}", e.render_plain()));
    assert_eq!(
        w.endpoints()[2].rate_limit.as_ref().map(|r| r.per_window),
        Some(240)
    );
    assert_eq!(w.retry().max_attempts, 3);
    let latency = &w.endpoints()[0].latency;
    assert_eq!(
        (latency.median_s, latency.sigma),
        (0.3, 0.55),
        "a table value replaces"
    );
    assert!(matches!(w.load(), simbench::world::Load::Open { .. }));
}

#[test]
fn compose_override_errors_point_into_the_argument() {
    let files = [("main.toml", BUILTIN_BURSTY_TOML)];
    let errors = load_from(
        &files,
        "main.toml",
        &[
            "jobs=5",
            "endpoints.metered.rate_limit.per_window=-5",
            "cycle.trough=2",
        ],
    )
    .expect_err("out of range");
    assert_eq!(
        where_(&errors),
        [
            "--set #2:1:41: `endpoints[2].rate_limit.per_window` = -5 is out of range",
            "--set #3:1:14: `cycle.trough` (2) is greater than `cycle.peak` (1)",
        ]
    );
    let f = &errors.findings()[0];
    assert_eq!(&errors.source_text_of(f)[f.span.clone()], "-5");
    // A key of more parts than the TOML reader takes is named as that, not as "not a key".
    let long = format!("{}=1", vec!["retry"; 100].join("."));
    let errors = load_from(&files, "main.toml", &[long.as_str()]).expect_err("too long");
    assert_eq!(
        where_(&errors),
        [
            "--set #1:1:1: the key of an override has 100 dotted parts; the TOML reader takes at most 80"
        ]
    );
}

#[test]
fn compose_a_base_problem_is_reported_in_the_base_and_the_child_problem_in_the_child() {
    let files = [
        (
            "a/base.toml",
            "name = \"b\"\nsummary = \"s\"\njobs = 0\n[[endpoints]]\nid = \"x\"\ncapacity = 1\nlatency = {}\n",
        ),
        ("a/main.toml", "extends = \"base.toml\"\nconcurrency = 0\n"),
    ];
    let errors = load_from(&files, "a/main.toml", &[]).expect_err("two problems");
    assert_eq!(
        where_(&errors),
        [
            "a/main.toml:2:15: `concurrency` = 0 is out of range",
            "a/base.toml:3:8: `jobs` = 0 is out of range",
        ]
    );
    let rendered = errors.render(RenderOptions {
        colour: false,
        width: 100,
    });
    assert!(rendered.contains("╭─[a/base.toml:3:8]"), "{rendered}");
    assert!(rendered.contains("╭─[a/main.toml:2:15]"), "{rendered}");
}

/// A child can switch a latency shape or load model; the base's keys for the old one are
/// leftovers, not mistakes. Keys the child itself writes for the wrong shape still are.
#[test]
fn compose_a_switched_shape_ignores_the_bases_leftovers() {
    let base = "name = \"b\"\nsummary = \"s\"\n[load]\nmodel = \"open\"\nrate_per_s = 2.0\n\
                [[endpoints]]\nid = \"x\"\ncapacity = 1\nlatency = { median_s = 0.3 }\n";
    let switched = "extends = \"base.toml\"\n[load]\nmodel = \"closed\"\n[[endpoints]]\nid = \"x\"\n\
                    latency = { distribution = \"constant\", mean_s = 1.0 }\n";
    let files = [("base.toml", base), ("main.toml", switched)];
    let w = load_from(&files, "main.toml", &[]).unwrap_or_else(|e| panic!("{}", e.render_plain()));
    assert_eq!(w.endpoints()[0].latency.mean_s, 1.0);
    assert_eq!(*w.load(), simbench::world::Load::Closed { think: None });
    let wrong = "extends = \"base.toml\"\n[[endpoints]]\nid = \"x\"\nlatency = { mean_s = 1.0 }\n";
    let files = [("base.toml", base), ("main.toml", wrong)];
    // An override switching the model counts as a later layer too.
    let errors = load_from(&files, "main.toml", &["load.model=closed"]).expect_err("stray");
    assert_eq!(
        where_(&errors),
        ["main.toml:4:13: `mean_s` is not used by `distribution = \"lognormal\"`"]
    );
}

/// Switching away from a latency from tokens drops the base's token keys like any other
/// shape's; a token key the switching layer writes itself is still an error.
#[test]
fn compose_a_switch_away_from_tokens_ignores_the_bases_token_keys() {
    let base = "name = \"b\"\nsummary = \"s\"\n[tokens]\n\
                input = { distribution = \"constant\", value = 1000 }\n\
                output = { distribution = \"constant\", value = 200 }\nmax_tokens = 400\n\
                [[endpoints]]\nid = \"x\"\ncapacity = 1\nlatency = { distribution = \"tokens\", \
                ttft_s = 0.4, ttft_load = 0.5, decode_tokens_per_s = 60 }\n";
    let switched = "extends = \"base.toml\"\n[[endpoints]]\nid = \"x\"\n\
                    latency = { distribution = \"constant\", mean_s = 1.0 }\n";
    let files = [("base.toml", base), ("main.toml", switched)];
    let w = load_from(&files, "main.toml", &[]).unwrap_or_else(|e| panic!("{}", e.render_plain()));
    assert_eq!(w.endpoints()[0].latency.mean_s, 1.0);
    // An override switching the shape counts as a later layer too.
    let files = [
        ("base.toml", base),
        ("main.toml", "extends = \"base.toml\"\n"),
    ];
    let set = ["endpoints.x.latency.distribution=\"lognormal\""];
    load_from(&files, "main.toml", &set).unwrap_or_else(|e| panic!("{}", e.render_plain()));
    let wrong = "extends = \"base.toml\"\n[[endpoints]]\nid = \"x\"\n\
                 latency = { distribution = \"lognormal\", ttft_s = 1.0 }\n";
    let files = [("base.toml", base), ("main.toml", wrong)];
    let errors = load_from(&files, "main.toml", &[]).expect_err("stray");
    assert_eq!(
        where_(&errors),
        ["main.toml:4:41: `ttft_s` is only used by `distribution = \"tokens\"`"]
    );
}

#[test]
fn compose_without_a_reader_extends_is_reported() {
    let errors = compile::load("x.toml", b"extends = \"base.toml\"\n").expect_err("no files");
    assert_eq!(
        where_(&errors),
        [
            "x.toml:1:11: cannot read the base file `base.toml`: this loader reads no files (load \
          the scenario with `compile::load_with`)"
        ]
    );
}

#[test]
fn compose_a_long_chain_is_cut() {
    let texts: Vec<(String, String)> = (0..40)
        .map(|i| {
            (
                format!("f{i}.toml"),
                format!("extends = \"f{}.toml\"\n", i + 1),
            )
        })
        .collect();
    let files: Vec<(&str, &str)> = texts
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let errors = load_from(&files, "f0.toml", &[]).expect_err("too deep");
    assert!(
        where_(&errors)[0].contains("chain is more than 16 files deep"),
        "{:?}",
        where_(&errors)
    );
}

/// The limit counts files: a chain of 16 loads, one of 17 does not.
#[test]
fn compose_a_chain_of_sixteen_files_is_the_longest() {
    let chain = |files: usize| -> Vec<(String, String)> {
        (0..files)
            .map(|i| {
                let text = if i + 1 == files {
                    "name = \"w\"\nsummary = \"w\"\n[[endpoints]]\nid = \"a\"\ncapacity = 2\n\
                     latency = { median_s = 0.2 }\n"
                        .to_owned()
                } else {
                    format!("extends = \"f{}.toml\"\n", i + 1)
                };
                (format!("f{i}.toml"), text)
            })
            .collect()
    };
    for (files, loads) in [(16, true), (17, false)] {
        let texts = chain(files);
        let refs: Vec<(&str, &str)> = texts
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        assert_eq!(
            load_from(&refs, "f0.toml", &[]).is_ok(),
            loads,
            "{files} files"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The CLI: `run --set`.

#[test]
fn compose_run_applies_set_and_reports_bad_ones() {
    let ok = simbench(&[
        "run",
        "scenarios/bursty_tight_metered.toml",
        "--seeds",
        "1",
        "--algorithms",
        "wait",
        "--jobs",
        "40",
        "--set",
        "name=renamed",
        "--set",
        "endpoints.metered.capacity=2",
    ]);
    let err = stderr(&ok);
    assert_eq!(ok.status.code(), Some(0), "{err}");
    assert!(err.contains("on `renamed` (40 jobs"), "{err}");
    assert!(
        err.contains("overrides: jobs=40, name=renamed, endpoints.metered.capacity=2"),
        "{err}"
    );

    let bad = simbench(&["run", "--set", "endpoints.nope.capacity=2", "--jobs", "40"]);
    let err = stderr(&bad);
    assert_eq!(bad.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: 1 problem in <built-in bursty>"),
        "{err}"
    );
    assert!(err.contains("╭─[--set #1:1:11]"), "{err}");
    assert!(bad.stdout.is_empty());

    let malformed = simbench(&["run", "--set", "=3"]);
    assert_eq!(malformed.status.code(), Some(2));
    assert!(
        stderr(&malformed).contains("found nothing before `=`"),
        "{}",
        stderr(&malformed)
    );
}

// ---------------------------------------------------------------------------------------------
// Never a panic.

/// Fragments for the texts and overrides the property below composes.
const PIECES: &[&str] = &[
    "extends = \"base.toml\"\n",
    "extends = \"main.toml\"\n",
    "extends = 3\n",
    "[[endpoints]]\nid = \"metered\"\ncapacity = 0\n",
    "[[endpoints]]\nid = \"new\"\n",
    "[[endpoints]]\n",
    "[cycle]\ntrough = 2\n",
    "endpoints = 5\n",
    "name = \"\"\n",
    "jobs = nan\n",
    "[retry\n",
    "latency = { distribution = \"constant\" }\n",
];

const SETS: &[&str] = &[
    "jobs=0",
    "endpoints.metered.capacity=3",
    "endpoints.9.capacity=3",
    "endpoints.x.y.z=1",
    "cycle={ trough = 0.9, peak = 0.1 }",
    "endpoints=[]",
    "a..b=1",
    "name=\"\"\"",
    "retry.jitter=ful",
    "endpoints.metered=3",
    "jobs.x=1",
    "extends=\"x\"",
    "unsuited.\"my algo\"=\"x\"",
];

fn check_never_panics(base: &str, main: &str, sets: &[&str]) {
    let files = [("d/base.toml", base), ("d/main.toml", main)];
    if let Err(errors) = load_from(&files, "d/main.toml", sets) {
        assert!(!errors.findings().is_empty());
        for f in errors.findings() {
            let len = errors.source_text_of(f).len();
            assert!(f.span.start <= f.span.end && f.span.end <= len, "{f:?}");
        }
        let rendered = errors.render(RenderOptions {
            colour: false,
            width: 100,
        });
        assert!(rendered.contains("problem"));
    }
}

proptest! {
    #![proptest_config(crate::support::proptest_config(3000))]
    #[test]
    fn compose_merging_then_loading_never_panics(
        base_cut in 0usize..4000,
        base_pieces in proptest::collection::vec(0..PIECES.len(), 0..3),
        main_pieces in proptest::collection::vec(0..PIECES.len(), 0..4),
        sets in proptest::collection::vec(0..SETS.len(), 0..3),
    ) {
        // The base: bursty, cut somewhere (often mid-table) with a few pieces appended.
        let mut cut = base_cut.min(BUILTIN_BURSTY_TOML.len());
        while !BUILTIN_BURSTY_TOML.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut base = BUILTIN_BURSTY_TOML[..cut].to_owned();
        base.push('\n');
        base.extend(base_pieces.iter().map(|&i| PIECES[i]));
        let mut main = String::from("extends = \"base.toml\"\n");
        main.extend(main_pieces.iter().map(|&i| PIECES[i]));
        let sets: Vec<&str> = sets.iter().map(|&i| SETS[i]).collect();
        check_never_panics(&base, &main, &sets);
    }
}

// ---------------------------------------------------------------------------------------------
// The docs show real output.

#[test]
fn compose_docs_examples_are_real() {
    let doc = std::fs::read_to_string(root().join("docs/scenario-format.md")).expect("docs");
    let out = simbench(&[
        "validate",
        "scenarios/bursty.toml",
        "--set",
        "endpoints.metered.rate_limit.per_window=-5",
    ]);
    let err = stderr(&out);
    let report = err.split("1 file:").next().unwrap_or_default().trim_end();
    assert!(
        doc.contains(report),
        "the docs show other output:\n{report}"
    );
    let cycle = std::fs::read_to_string(root().join("tests/data/compose/cycle/expected.out"))
        .expect("snapshot");
    let cycle = cycle["exit: 1\n--- stderr\n".len()..]
        .split("1 file:")
        .next()
        .unwrap_or_default()
        .trim_end();
    assert!(doc.contains(cycle), "the docs show another cycle:\n{cycle}");
}
