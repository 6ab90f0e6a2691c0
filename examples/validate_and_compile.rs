//! Using simbench as a library: load a scenario, read the findings of a broken one as data, and
//! inspect the compiled world of a valid one.
//!
//! Run it with `cargo run --release --example validate_and_compile`; the test suite also runs
//! it (tests/it/scenario_files.rs), so its assertions are checked on every `cargo test`.

use simbench::compile;

/// A scenario with two mistakes: a misspelt key and an out-of-range probability.
const BROKEN: &str = r#"
name = "two-mistakes"
summary = "One endpoint, two typos."

[[endpoints]]
id = "api"
capacity = 8
latency = { median = 0.3 }
failures = { error_rate = 1.5 }
"#;

pub fn main() {
    // Every problem comes back at once, with a line, a column and a key path.
    let errors = compile::load("broken.toml", BROKEN.as_bytes())
        .expect_err("the broken scenario is rejected");
    for f in errors.findings() {
        println!("{}:{}: {} [{}]", f.line, f.column, f.message, f.key_path);
        if let Some(help) = &f.help {
            println!("    help: {help}");
        }
    }
    let where_: Vec<(usize, usize, &str)> = errors
        .findings()
        .iter()
        .map(|f| (f.line, f.column, f.key_path.as_str()))
        .collect();
    assert_eq!(
        where_,
        [
            (8, 13, "endpoints[0].latency.median"),
            (9, 27, "endpoints[0].failures.error_rate"),
        ]
    );
    assert_eq!(
        errors.findings()[0].help.as_deref(),
        Some("did you mean `median_s`?")
    );

    // The fixed file compiles into a frozen world with every default filled in.
    let fixed = BROKEN
        .replace("median =", "median_s =")
        .replace("1.5", "0.05");
    let world = compile::load("fixed.toml", fixed.as_bytes()).expect("the fixed scenario loads");
    let api = &world.endpoints()[0];
    assert_eq!(api.latency.median_s, 0.3);
    assert_eq!(api.failures.error_rate, 0.05);
    assert_eq!(world.jobs(), 3000, "default job count");
    assert!(api.rate_limit.is_none(), "no [rate_limit] means unmetered");

    // The built-in world is the reference's bursty_provider.
    let bursty = compile::builtin_bursty();
    assert_eq!(bursty.name(), "bursty_provider");
    assert_eq!(bursty.concurrency(), 12);
    let ids: Vec<&str> = bursty.endpoints().iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["fast-flaky", "slow-steady", "metered"]);
    println!(
        "ok: {} compiled with {} endpoints",
        bursty.name(),
        ids.len()
    );
}
