//! Statistical agreement of the native scheme with the reference on its own world.
//!
//! The native scheme draws different dice than the reference, so single runs differ; the
//! distributions must not. Over the reference's seeds 20260917–26 (tests/reference/), for every
//! default algorithm and the headline metrics: simbench's 10-seed median lies inside the
//! reference's 10-seed [min, max], and a two-sided Mann–Whitney test does not separate the two
//! samples (p ≥ 0.001, a Bonferroni-style bound for the 40 comparisons). With the reference's
//! dice, the simulator issue's literal criterion (also within 12 % of the reference's median)
//! holds on all 40 cells. docs/fidelity.md §2 shows the tables and why the 12 % test cannot
//! judge a different set of dice.

use serde_json::Value;
use simbench::client::registry;
use simbench::compile;
use simbench::harness::{self, RngScheme, RunConfig};
use simbench::metrics::Metric;

const METRICS: [&str; 8] = [
    "jobs_done",
    "throughput_rps",
    "refusal_rate",
    "error_rate",
    "attempt_inflation",
    "utilization",
    "request_latency_p50_ms",
    "endpoint_spread",
];

fn never() -> bool {
    false
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Two-sided Mann–Whitney U test, normal approximation with tie-averaged ranks.
fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut rank_sum_a = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum_a += all[i..=j].iter().filter(|x| x.1).count() as f64 * rank;
        i = j + 1;
    }
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let z = (u - n1 * n2 / 2.0) / (n1 * n2 * (n1 + n2 + 1.0) / 12.0).sqrt();
    2.0 * (1.0 - standard_normal_cdf(z.abs()))
}

fn standard_normal_cdf(z: f64) -> f64 {
    // Abramowitz–Stegun 7.1.26 for erf; accurate to 1.5e-7, plenty for a p-value bound.
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    0.5 * (1.0 + (1.0 - poly * (-x * x).exp()))
}

#[test]
fn mann_whitney_sanity() {
    let a: Vec<f64> = (0..10).map(f64::from).collect();
    let shifted: Vec<f64> = (100..110).map(f64::from).collect();
    assert!(mann_whitney_p(&a, &a) > 0.99);
    assert!(mann_whitney_p(&a, &shifted) < 0.001);
}

/// One (algorithm, metric) cell of the comparison over the reference's ten seeds.
struct Cell {
    label: String,
    /// The reference's 10-seed values.
    theirs: Vec<f64>,
    /// simbench's 10-seed values on the same seeds.
    mine: Vec<f64>,
}

impl Cell {
    fn range(&self) -> (f64, f64) {
        self.theirs
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
                (l.min(x), h.max(x))
            })
    }
    fn median_in_range(&self) -> bool {
        let (lo, hi) = self.range();
        (lo..=hi).contains(&median(&self.mine))
    }
    /// Relative gap of the medians.
    fn gap(&self) -> f64 {
        let reference = median(&self.theirs);
        (median(&self.mine) - reference).abs() / reference.abs()
    }
    fn describe(&self) -> String {
        let (lo, hi) = self.range();
        format!(
            "{}: median {} vs reference {} [{lo}, {hi}], gap {:.1} %, p = {:.4}",
            self.label,
            median(&self.mine),
            median(&self.theirs),
            100.0 * self.gap(),
            mann_whitney_p(&self.theirs, &self.mine)
        )
    }
}

/// The 40 cells of the simulator issue's comparison (tests/reference/bursty_seeds10.json),
/// with simbench's runs drawn from `rng`.
fn cells(rng: RngScheme) -> Vec<Cell> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/reference/bursty_seeds10.json");
    let reference: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let world = compile::builtin_bursty();
    let seeds: Vec<u64> = reference["seeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    let mut cells = Vec::new();
    for algorithm in ["immediate", "wait", "backoff", "sticky", "quota_aware"] {
        let strategy = registry::find(algorithm).unwrap().build_default();
        let ours: Vec<_> = seeds
            .iter()
            .map(|&seed| {
                let config = RunConfig {
                    seed,
                    rng,
                    trace: false,
                    window_s: None,
                    out_of_time: &never,
                };
                harness::run(&world, strategy.as_ref(), &config)
                    .metrics
                    .expect("finished")
            })
            .collect();
        for name in METRICS {
            let theirs: Vec<f64> = reference["runs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["algorithm"] == algorithm)
                .map(|r| r["metrics"][name].as_f64().unwrap())
                .collect();
            let metric = Metric::from_name(name).unwrap();
            let mine = ours.iter().map(|m| m.get(metric)).collect();
            cells.push(Cell {
                label: format!("{algorithm} {name}"),
                theirs,
                mine,
            });
        }
    }
    assert_eq!(cells.len(), 40);
    cells
}

#[test]
fn native_scheme_agrees_with_the_reference_statistically() {
    let failures: Vec<String> = cells(RngScheme::Native)
        .iter()
        .filter(|c| !c.median_in_range() || mann_whitney_p(&c.theirs, &c.mine) < 0.001)
        .map(Cell::describe)
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The simulator issue's criterion as written — every 10-seed median inside the reference's
/// [min, max] and within 12 % of its median — holds with the reference's dice. (With native
/// dice it is a coin that even the reference, judged against ten other seeds of itself, wins
/// 0.4 % of the time: docs/fidelity.md §2.)
#[test]
fn reference_scheme_meets_the_ten_seed_criterion_on_every_cell() {
    let failures: Vec<String> = cells(RngScheme::Reference)
        .iter()
        .filter(|c| !c.median_in_range() || c.gap() > 0.12)
        .map(Cell::describe)
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Per algorithm, over `seeds` seeds from `first`: runs in which some endpoint went
/// DEAD at least once, and runs that ended with one DEAD for good (or stalled, every endpoint
/// DEAD with a worker still waiting).
fn dead_runs(rng: RngScheme, algorithm: &str, first: u64, seeds: u64) -> (usize, usize) {
    use simbench::client::pool::State;
    let world = compile::builtin_bursty();
    let strategy = registry::find(algorithm).unwrap().build_default();
    let (mut ever, mut for_good) = (0, 0);
    for seed in first..first + seeds {
        let config = RunConfig {
            seed,
            rng,
            trace: false,
            window_s: None,
            out_of_time: &never,
        };
        let result = harness::run(&world, strategy.as_ref(), &config);
        let stalled = matches!(result.outcome, harness::Outcome::Stalled { .. });
        ever += usize::from(stalled || result.endpoints.iter().any(|e| e.pool.dead > 0));
        for_good += usize::from(
            stalled
                || result
                    .endpoints
                    .iter()
                    .any(|e| e.pool.final_state == State::Dead),
        );
    }
    (ever, for_good)
}

/// Reference §11.2: "A DEAD event occurred in 5/10 wait, 4/10 backoff, 4/10 sticky, 6/10
/// quota_aware runs (some resurrected), never in immediate." The reference's JSON does not carry
/// the pool's state, so this is checked on the replay, which reproduces those runs exactly.
#[test]
fn reference_scheme_reproduces_the_reference_s_dead_events() {
    let counts: Vec<usize> = ["immediate", "wait", "backoff", "sticky", "quota_aware"]
        .iter()
        .map(|a| dead_runs(RngScheme::Reference, a, 20260917, 10).0)
        .collect();
    assert_eq!(counts, [0, 5, 4, 4, 6]);
}

/// `DEAD_SEEDS=400 DEAD_FIRST=30000000 DEAD_ALGORITHMS=sticky cargo test --release --test it
/// print_dead_rates -- --ignored --nocapture` (defaults: 10 and 400 seeds from 20260917, the
/// five reference algorithms).
#[test]
#[ignore = "prints the native and replayed death rates for docs/fidelity.md; slow"]
fn print_dead_rates() {
    let env = |key: &str, default: &str| std::env::var(key).unwrap_or_else(|_| default.into());
    let first: u64 = env("DEAD_FIRST", "20260917").parse().unwrap();
    let algorithms = env(
        "DEAD_ALGORITHMS",
        "immediate,wait,backoff,sticky,quota_aware",
    );
    for seeds in env("DEAD_SEEDS", "10,400").split(',') {
        let seeds: u64 = seeds.parse().unwrap();
        for algorithm in algorithms.split(',') {
            let native = dead_runs(RngScheme::Native, algorithm, first, seeds);
            let reference = dead_runs(RngScheme::Reference, algorithm, first, seeds);
            println!("{seeds} from {first} {algorithm}: reference {reference:?} native {native:?}");
        }
    }
}

/// One hundred seeds per algorithm, native against the replayed reference (which reproduces
/// the reference run for run: tests/it/replay.rs, docs/fidelity.md §1). Ten seeds can only
/// catch gross errors; a hundred make the Mann–Whitney test see a shift of about half a standard
/// deviation in any of the 40 cells. Stalled runs (no metrics) are left out on both sides.
#[test]
fn native_scheme_agrees_with_the_replayed_reference_over_a_hundred_seeds() {
    use simbench::report::Run;
    use simbench::sweep::{self, SweepConfig};
    let world = compile::builtin_bursty();
    let names: Vec<String> = ["immediate", "wait", "backoff", "sticky", "quota_aware"]
        .iter()
        .map(|a| a.to_string())
        .collect();
    let seeds = sweep::seeds(&world, 100);
    let plan = sweep::plan(&names, &seeds);
    let frozen = || 0.0;
    let sample = |rng| {
        let config = SweepConfig {
            rng,
            threads: 2,
            wall_budget_s: 600.0,
            clock: &frozen,
            on_run: &|_| {},
            window_s: None,
        };
        sweep::sweep(&world, &plan, &config)
    };
    let (reference, native) = (sample(RngScheme::Reference), sample(RngScheme::Native));
    let values = |runs: &[Run], algorithm: &str, metric: Metric| -> Vec<f64> {
        runs.iter()
            .filter(|r| r.algorithm == algorithm)
            .filter_map(|r| r.metrics().map(|m| m.get(metric)))
            .collect()
    };
    let mut failures = Vec::new();
    for algorithm in &names {
        for name in METRICS {
            let metric = Metric::from_name(name).unwrap();
            let cell = Cell {
                label: format!("{algorithm} {name}"),
                theirs: values(&reference, algorithm, metric),
                mine: values(&native, algorithm, metric),
            };
            assert!(
                cell.theirs.len() >= 95 && cell.mine.len() >= 95,
                "{}",
                cell.label
            );
            if !cell.median_in_range() || mann_whitney_p(&cell.theirs, &cell.mine) < 0.001 {
                failures.push(cell.describe());
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
