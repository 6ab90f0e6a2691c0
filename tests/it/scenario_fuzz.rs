//! The loader never panics: arbitrary bytes, TOML-shaped noise and mutations of valid scenarios
//! all come back as `Ok` or `Err`, and every `Err` renders.
//!
//! The default is 120 000 cases in total (a few seconds in release). For a longer run set
//! `PROPTEST_CASES`, which is the case count of *each* of the three properties, e.g.
//! `PROPTEST_CASES=1000000 cargo test --release --test it scenario_fuzz`.

use proptest::prelude::*;

use simbench::compile::{self, BUILTIN_BURSTY_TOML};
use simbench::diagnostics::RenderOptions;

const BYTES_CASES: u32 = 40_000;
const NOISE_CASES: u32 = 30_000;
const MUTATION_CASES: u32 = 50_000;

/// Loads and, on error, renders: both must return normally, and every finding must point inside
/// the source it came with.
fn check(bytes: &[u8]) {
    if let Err(errors) = compile::load("fuzz.toml", bytes) {
        assert!(!errors.findings().is_empty());
        let len = errors.source_text().len();
        for f in errors.findings() {
            assert!(f.span.start <= f.span.end && f.span.end <= len, "{f:?}");
            assert!(f.line >= 1 && f.column >= 1);
        }
        let rendered = errors.render(RenderOptions {
            colour: false,
            width: 100,
        });
        assert!(rendered.contains("problem"));
    }
}

const MINIMAL: &str = "name = \"m\"\nsummary = \"s\"\n[[endpoints]]\nid = \"a\"\ncapacity = 1\n\
                       latency = { median_s = 0.1 }\nrate_limit = { per_window = 5 }\n";

/// Fragments that tend to reach interesting code: special floats, huge integers, headers,
/// unbalanced brackets, non-ASCII and control characters.
const TOKENS: &[&str] = &[
    "nan",
    "+inf",
    "-inf",
    "1e999",
    "-0.0",
    "0",
    "-1",
    "99999999999999999999",
    "0xffffffffffffffff",
    "4294967296",
    "1979-05-27",
    "true",
    "\"\"",
    "\"x\"",
    "'",
    "\"",
    "=",
    ".",
    ",",
    "[",
    "]",
    "{",
    "}",
    "[[endpoints]]",
    "[cycle]",
    "[provider.failure_kinds]",
    "[unsuited]",
    "\n",
    "\r",
    "\r\n",
    "\t",
    "#",
    "é",
    "\u{0}",
    "\u{feff}",
    "\u{1F600}",
    "median",
    "id = \"a\"",
    "failover = \"r\"",
    "endpoints = []",
    "latency = {}",
    "a.b.c = 1",
    "\"\"\"",
    "'''",
];

/// Valid files to mutate: the built-in world, a minimal one, and the shipped worlds that use
/// pools, incidents, caches, recovery rules and strategy parameters.
const BASES: [&str; 6] = [
    BUILTIN_BURSTY_TOML,
    MINIMAL,
    include_str!("../../scenarios/multi_vendor.toml"),
    include_str!("../../scenarios/dead_endpoint.toml"),
    include_str!("../../scenarios/recovery_herd.toml"),
    include_str!("../../scenarios/cache_reuse.toml"),
];

fn mutation() -> impl Strategy<Value = (usize, usize, usize, usize)> {
    (any::<usize>(), 0usize..40, any::<usize>(), any::<usize>())
}

/// Applies a deletion and an insertion at char boundaries chosen by the random numbers.
fn mutate(text: &str, (at, del, tok, kind): (usize, usize, usize, usize)) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    let at = at % (bytes.len() + 1);
    let end = (at + del).min(bytes.len());
    let token = TOKENS[tok % TOKENS.len()].as_bytes();
    match kind % 4 {
        0 => {
            bytes.splice(at..end, token.iter().copied());
        }
        1 => {
            bytes.drain(at..end);
        }
        2 => {
            bytes.splice(at..at, token.iter().copied());
        }
        _ => {
            // Duplicate a slice: repeated keys and tables.
            let copy = bytes[at..end].to_vec();
            bytes.splice(end..end, copy);
        }
    }
    bytes
}

proptest! {
    #![proptest_config(crate::support::proptest_config(BYTES_CASES))]
    #[test]
    fn scenario_fuzz_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        check(&bytes);
    }
}

proptest! {
    #![proptest_config(crate::support::proptest_config(NOISE_CASES))]
    #[test]
    fn scenario_fuzz_toml_shaped_noise(
        text in "([a-z_]{1,8}( ?= ?)(-?[0-9_.e+]{1,6}|\"[a-z]{0,4}\"|nan|inf|\\[\\]|\\{\\}|true)\n|\\[\\[?[a-z_.]{1,12}\\]\\]?\n){0,12}"
    ) {
        check(text.as_bytes());
    }
}

proptest! {
    #![proptest_config(crate::support::proptest_config(MUTATION_CASES))]
    #[test]
    fn scenario_fuzz_mutated_valid_files(
        which in 0usize..BASES.len(),
        edits in proptest::collection::vec(mutation(), 1..4),
    ) {
        let base = BASES[which];
        let mut bytes = base.as_bytes().to_vec();
        for edit in edits {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            bytes = mutate(&text, edit);
        }
        check(&bytes);
    }
}

/// A fixed pseudo-random sequence (a 64-bit LCG's high bits) for tests that sample without
/// proptest, so their sample is the same on every run.
fn sequence(mut state: u64) -> impl FnMut() -> usize {
    move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    }
}

/// The mutation strategy is only worth its cases if it reaches past the parser: a fixed sample
/// of mutations must produce valid worlds, syntax errors and schema/rule errors alike.
#[test]
fn scenario_fuzz_mutations_reach_every_stage() {
    let mut next = sequence(0x9E37_79B9_7F4A_7C15);
    let (mut ok, mut syntax, mut other) = (0, 0, 0);
    for _ in 0..2000 {
        let bytes = mutate(BUILTIN_BURSTY_TOML, (next(), next() % 40, next(), next()));
        match compile::load("sample.toml", &bytes) {
            Ok(_) => ok += 1,
            Err(e) if e.findings()[0].message.starts_with("TOML syntax error") => syntax += 1,
            Err(_) => other += 1,
        }
    }
    assert!(
        ok > 100 && syntax > 100 && other > 100,
        "ok {ok}, syntax {syntax}, other {other}"
    );
}

/// A mutated file that compiles is a world like any other: every strategy runs it to an end
/// (finished, stalled or out of its event budget) without a panic, and a finished run keeps the
/// accounting identities (which the engine asserts at the end of every run).
#[test]
fn scenario_fuzz_mutated_worlds_that_compile_also_run() {
    use simbench::client::registry::ALGORITHMS;
    use simbench::harness::{self, Outcome, RngScheme, RunConfig};
    use simbench::world::Overrides;
    use std::cell::Cell;

    let mut next = sequence(0x2545_F491_4F6C_DD1D);
    let (mut worlds, mut finished) = (0, 0);
    for i in 0..4000 {
        let base = BASES[i % BASES.len()];
        let bytes = mutate(base, (next(), next() % 40, next(), next()));
        let Ok(world) = compile::load("sample.toml", &bytes) else {
            continue;
        };
        worlds += 1;
        let small = world.with_overrides(&Overrides {
            jobs: Some(world.jobs().min(40)),
            ..Overrides::default()
        });
        let info = &ALGORITHMS[next() % ALGORITHMS.len()];
        let strategy = simbench::sweep::strategy(&small, info.name).expect("registered");
        // The out-of-time hook is polled every few thousand events: 200 polls is a generous
        // event budget for 40 jobs, and a deterministic stand-in for a wall clock.
        let polls = Cell::new(0u32);
        let out_of_time = || {
            polls.set(polls.get() + 1);
            polls.get() > 200
        };
        let config = RunConfig {
            seed: small.seed(),
            rng: RngScheme::Native,
            trace: false,
            window_s: None,
            out_of_time: &out_of_time,
        };
        let result = harness::run(&small, strategy.as_ref(), &config);
        if result.outcome == Outcome::Ok {
            finished += 1;
            let m = result.metrics.expect("a finished run has metrics");
            assert!(m.iter().all(|(_, v)| v.is_finite()), "{}", info.name);
        }
    }
    assert!(worlds > 500, "only {worlds} mutated worlds compiled");
    assert!(finished > worlds / 2, "{finished} of {worlds} finished");
}
