//! Engine benchmarks (divan): the event queue alone, the floor under one request, one bursty run,
//! the default comparison, a 1,000,000-job run, simulated requests per second, and a token world
//! beside bursty. `cargo bench`; CI does not run them and no test asserts a time. Whole-command
//! timings against the reference: scripts/bench.sh.

use divan::counter::ItemsCount;
use divan::{Bencher, black_box};
use simbench::client::registry;
use simbench::compile;
use simbench::harness::queue::{Event, EventQueue};
use simbench::harness::{self, RngScheme, RunConfig, RunResult};
use simbench::metrics::Metric;
use simbench::world::World;

fn main() {
    divan::main();
}

fn never() -> bool {
    false
}

fn run(world: &World, algorithm: &str, seed: u64, rng: RngScheme) -> RunResult {
    let strategy = registry::find(algorithm)
        .expect("registered")
        .build_default();
    let config = RunConfig {
        seed,
        rng,
        trace: false,
        window_s: None,
        out_of_time: &never,
    };
    harness::run(world, strategy.as_ref(), &config)
}

/// The bursty world with `jobs` jobs, an unbounded horizon, and a breaker that cannot kill an
/// endpoint for good (so a long run measures the engine instead of stalling).
fn long_bursty(jobs: u64) -> World {
    let text = compile::BUILTIN_BURSTY_TOML
        .replace("jobs = 3000", &format!("jobs = {jobs}"))
        .replace("horizon_s = 600.0", "horizon_s = 1e12")
        .replace("dead_after = 8", "dead_after = 1000000");
    compile::load("long-bursty", text.as_bytes()).expect("valid world")
}

/// The test-only LLM world (two vendors, request and token limits, latency from tokens, price)
/// with `jobs` jobs, an unbounded horizon and a breaker that never retires an endpoint.
fn long_token_world(jobs: u64) -> World {
    let text = include_str!("../tests/data/worlds/llm_eval_harness.toml")
        .replace("jobs = 1500", &format!("jobs = {jobs}"))
        .replace("horizon_s = 3600", "horizon_s = 1e12");
    let text = format!("{text}\n[breaker]\ndead_after = 1000000\n");
    compile::load("long-llm", text.as_bytes()).expect("valid world")
}

fn requests(result: &RunResult) -> u64 {
    result
        .metrics
        .as_ref()
        .expect("finished")
        .get(Metric::Requests) as u64
}

/// Push then pop 10,000 events at pseudo-random times, 16 pending at a time (like 12 workers).
#[divan::bench]
fn event_queue(bencher: Bencher) {
    let times: Vec<f64> = (0..10_000u64)
        .map(|i| (simbench::rng::mix64(i) >> 11) as f64 / (1u64 << 53) as f64)
        .collect();
    bencher.counter(ItemsCount::new(times.len())).bench(|| {
        let mut queue = EventQueue::with_capacity(32);
        let mut now = 0.0;
        for (i, dt) in times.iter().enumerate() {
            queue.push(now + dt, Event::Resume(i as u32 % 16));
            if queue.len() >= 16 {
                now = queue.pop().expect("non-empty").0;
            }
        }
        while let Some((at, event)) = queue.pop() {
            black_box((at, event));
        }
    });
}

/// One `wait` run of the built-in bursty world (3000 jobs, horizon 600 s).
#[divan::bench(args = ["wait", "backoff", "sticky", "quota_aware"])]
fn bursty_run(bencher: Bencher, algorithm: &str) {
    let world = compile::builtin_bursty();
    let n = requests(&run(&world, algorithm, world.seed(), RngScheme::Native));
    bencher
        .counter(ItemsCount::new(n))
        .bench(|| run(&world, algorithm, world.seed(), RngScheme::Native));
}

/// The same run replaying the reference's random numbers.
#[divan::bench]
fn bursty_run_reference_rng(bencher: Bencher) {
    let world = compile::builtin_bursty();
    let n = requests(&run(&world, "wait", world.seed(), RngScheme::Reference));
    bencher
        .counter(ItemsCount::new(n))
        .bench(|| run(&world, "wait", world.seed(), RngScheme::Reference));
}

/// The reference's default comparison, serially: 5 algorithms × 3 seeds.
#[divan::bench(sample_count = 20)]
fn default_comparison(bencher: Bencher) {
    let world = compile::builtin_bursty();
    let algorithms = ["immediate", "wait", "backoff", "sticky", "quota_aware"];
    bencher.bench(|| {
        for algorithm in algorithms {
            for k in 0..3 {
                black_box(run(&world, algorithm, world.seed() + k, RngScheme::Native));
            }
        }
    });
}

/// Cost against jobs: 10^4, 10^5 and 10^6 jobs of `wait`, every job run to completion.
#[divan::bench(args = [10_000, 100_000, 1_000_000], sample_count = 3, sample_size = 1)]
fn jobs_scaling(bencher: Bencher, jobs: u64) {
    let world = long_bursty(jobs);
    let n = requests(&run(&world, "wait", world.seed(), RngScheme::Native));
    bencher
        .counter(ItemsCount::new(n))
        .bench(|| run(&world, "wait", world.seed(), RngScheme::Native));
}

/// Open-loop cost against jobs: 10^4, 10^5 and 10^6 jobs of `wait` arriving at 10^9 per second
/// (all at once: every job waits in the pool's waiter list, the herd a release wakes), each run
/// to completion. Near-linear growth shows the waiter list costs O(log n) per release.
#[divan::bench(args = [10_000, 100_000, 1_000_000], sample_count = 3, sample_size = 1)]
fn open_loop_scaling(bencher: Bencher, jobs: u64) {
    let text = compile::BUILTIN_BURSTY_TOML
        .replace("jobs = 3000", &format!("jobs = {jobs}"))
        .replace("horizon_s = 600.0", "horizon_s = 1e12")
        .replace("dead_after = 8", "dead_after = 1000000");
    let text = format!("{text}\n[load]\nmodel = \"open\"\nrate_per_s = 1e9\n");
    let world = compile::load("open-bursty", text.as_bytes()).expect("valid world");
    bencher
        .counter(ItemsCount::new(jobs))
        .bench(|| run(&world, "wait", world.seed(), RngScheme::Native));
}

/// Simulated requests per second of `wait` over 100,000 jobs, the token world beside bursty in
/// one run, so that their ratio is measured on the same machine at the same time.
#[divan::bench(args = ["bursty", "llm_eval_harness"], sample_count = 5, sample_size = 1)]
fn token_world_against_bursty(bencher: Bencher, world: &str) {
    let world = match world {
        "bursty" => long_bursty(100_000),
        _ => long_token_world(100_000),
    };
    let n = requests(&run(&world, "wait", world.seed(), RngScheme::Native));
    bencher
        .counter(ItemsCount::new(n))
        .bench(|| run(&world, "wait", world.seed(), RngScheme::Native));
}

/// The floor under one simulated request: only the primitives an engine of this model must run
/// for an admitted request whatever its design — the request's own keyed random stream (common
/// random numbers) with its failure draw, a lognormal latency (a normal and an exponential) and
/// a tail draw, one event scheduled and taken off a queue of 14 pending (12 workers and a few
/// timers), and its service time, observed time and latency recorded for percentiles. `upto`
/// adds them in that order, so the steps between the rows price each. 600,000 requests, about
/// those of a 100,000-job run, so a sample bins its first 65,536 values once, as there. Its rate beside
/// `token_world_against_bursty`'s bursty rate says how much of a request's time the engine's
/// own logic (selection, the provider's state, retries, accounting) takes.
#[divan::bench(args = ["stream", "latency", "queue", "samples"], sample_count = 20)]
fn request_floor(bencher: Bencher, upto: &str) {
    use simbench::metrics::Samples;
    use simbench::rng::{Native, RandomSource, Stream};
    const N: u64 = 600_000;
    let parts = ["stream", "latency", "queue", "samples"];
    let level = parts.iter().position(|p| *p == upto).expect("a part");
    let rng = Native::new(20_260_917, ["fast-flaky", "slow-steady", "metered"]);
    bencher.counter(ItemsCount::new(N)).bench(|| {
        let mut queue = EventQueue::with_capacity(32);
        for w in 0..14u32 {
            queue.push(f64::from(w) * 0.01, Event::Resume(w));
        }
        let [mut service, mut observed, mut latency] = [(); 3].map(|()| Samples::bounded());
        let mut failures = 0u32;
        let (mut now, mut event) = queue.pop().expect("pending");
        for ordinal in 1..=N {
            let mut stream = rng.request((ordinal % 3) as usize, ordinal);
            failures += u32::from(stream.uniform() < 0.02);
            let mut s = 0.4;
            if level >= 1 {
                s *= (0.6 * stream.gauss()).exp();
                if stream.uniform() < 0.05 {
                    s *= 4.0;
                }
            }
            if level >= 2 {
                let Event::Resume(w) = event else {
                    unreachable!("only resumes are scheduled")
                };
                queue.push(now + s, Event::Resume(w));
                (now, event) = queue.pop().expect("pending");
            }
            if level >= 3 {
                service.push(s * 1000.0);
                observed.push(s * 1000.0);
                latency.push(s * 1000.0);
            }
            black_box(s);
        }
        black_box((failures, service.len(), observed.len(), latency.len()))
    });
}
