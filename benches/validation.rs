//! Validation benchmarks (divan): how long `simbench validate` takes on a file of n unknown
//! keys (n = 10^3, 10^4, 10^5), loading and rendering the report, so that the time stays linear
//! in the number of problems. `cargo bench --bench validation`; figures in docs/performance.md.

use divan::counter::ItemsCount;
use divan::{Bencher, black_box};
use simbench::compile;
use simbench::diagnostics::RenderOptions;

fn main() {
    divan::main();
}

/// The built-in world preceded by `n` unknown top-level keys (`u0 = 1`, `u1 = 1`, …): under
/// the 1 MiB limit up to n = 10^5.
fn with_unknown_keys(n: usize) -> String {
    let mut text = String::with_capacity(n * 8 + compile::BUILTIN_BURSTY_TOML.len());
    for i in 0..n {
        text.push_str(&format!("u{i}=1\n"));
    }
    text.push_str(compile::BUILTIN_BURSTY_TOML);
    assert!(
        text.len() <= compile::MAX_FILE_BYTES,
        "{} bytes",
        text.len()
    );
    text
}

/// Load, check and render the report of a file with `n` unknown keys.
#[divan::bench(args = [1_000, 10_000, 100_000], sample_count = 5, sample_size = 1)]
fn unknown_keys(bencher: Bencher, n: usize) {
    let text = with_unknown_keys(n);
    let options = RenderOptions {
        colour: false,
        width: 100,
    };
    bencher.counter(ItemsCount::new(n)).bench(|| {
        let errors = compile::load("unknown.toml", black_box(text.as_bytes()))
            .expect_err("unknown keys are reported");
        assert_eq!(errors.findings().len(), n);
        black_box(errors.render(options))
    });
}
