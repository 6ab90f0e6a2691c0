//! The sweep: every algorithm on every seed, spread over threads, results back in plan order.
//!
//! Owns scheduling independent runs on a fixed number of threads and turning each
//! [`harness::RunResult`] into a [`crate::report::Run`]. Every run is a pure function of (world,
//! algorithm, seed), and results are stored by plan index, so the output is identical whatever
//! the thread count or finishing order. It never reads a clock: wall time comes from the
//! caller's `clock` closure (the CLI passes a real one, tests a frozen one).
//!
//! It also owns the one place where an algorithm name meets a world: [`resolve`] turns a name
//! into a registry entry and parameter values (a named variant of the world, or a registered
//! strategy with the world's `[algorithms.<name>]` values), and the CLI, the sweep and the tests
//! all go through it.

use std::sync::Mutex;

use crate::client::params::Params;
use crate::client::registry::{self, AlgorithmInfo};
use crate::client::strategy::Strategy;
use crate::harness::{self, RngScheme, RunConfig, RunResult};
use crate::metrics::Metric;
use crate::report::{ErrorCounts, Outcome, Run};
use crate::world::World;
use schedule::Schedule;

mod schedule;

/// How to carry out a sweep.
pub struct SweepConfig<'a> {
    /// The random-number scheme of every run.
    pub rng: RngScheme,
    /// Threads to run on (at least one is used).
    pub threads: usize,
    /// Real seconds one run may take before it is stopped as timed out.
    pub wall_budget_s: f64,
    /// Seconds since an arbitrary fixed instant; only differences are used.
    pub clock: &'a (dyn Fn() -> f64 + Sync),
    /// Called after each run finishes, from the thread that ran it (for progress display).
    pub on_run: &'a (dyn Fn(&Run) + Sync),
    /// Record every run's windows this wide \[s\] ([`crate::recorder`]); `None` records none.
    pub window_s: Option<f64>,
}

/// Resolves an algorithm name against `world`: a named variant (its kind, with its values) or a
/// registered strategy (its defaults, with the world's `[algorithms.<name>]` values if any).
/// `None` if the name is neither, or if a value does not fit the registry (impossible for a
/// compiled world, whose values were checked against the same registry).
pub fn resolve(world: &World, name: &str) -> Option<(&'static AlgorithmInfo, Params)> {
    let (kind, values) = match world.variant(name) {
        Some(variant) => (variant.kind.as_str(), variant.params.as_slice()),
        None => (name, &[][..]),
    };
    let info = registry::find(kind)?;
    let fits = |(param, value): &(String, f64)| {
        info.param(param)
            .is_some_and(|p| (p.min..=p.max).contains(value))
    };
    if !values.iter().all(fits) {
        return None;
    }
    let params = info.values(values.iter().map(|(p, v)| (p.as_str(), *v)));
    Some((info, params))
}

/// The strategy `name` stands for in `world` (see [`resolve`]).
pub fn strategy(world: &World, name: &str) -> Option<Box<dyn Strategy>> {
    resolve(world, name).map(|(info, params)| (info.make)(&params))
}

/// Every algorithm `world` can be compared on, in report order: the registered strategies it
/// does not mark unsuited, then its named variants in name order.
pub fn default_algorithms(world: &World) -> Vec<String> {
    let registered = registry::names()
        .filter(|name| !world.unsuited().contains_key(*name))
        .map(str::to_string);
    let variants = world.named_variants().map(|v| v.name.clone());
    registered.chain(variants).collect()
}

/// The largest seed a run may use: the scenario format's seeds are 63-bit (0 to i64::MAX) so
/// that every JSON reader can hold them.
pub const MAX_SEED: u64 = i64::MAX as u64;

/// Checks that an `n`-seed sweep's last seed, seed + n − 1, stays within [`MAX_SEED`]; `asked`
/// is the `--seeds` value as the user wrote it (`10`, `auto:10`), for the message.
///
/// # Errors
/// Names the seed, the count and the largest count that fits when it does not.
pub fn check_seeds(world: &World, n: u32, asked: &str) -> Result<(), String> {
    let seed = world.seed();
    let fits = MAX_SEED.saturating_sub(seed).saturating_add(1);
    if u64::from(n) <= fits {
        return Ok(());
    }
    // `auto:MAX` may stop before its maximum, and takes at least 2.
    let (verb, fewer) = match asked.strip_prefix("auto") {
        Some(_) if fits >= 2 => ("could", format!("--seeds auto:{fits} or less")),
        Some(_) => ("could", "--seeds 1".to_owned()),
        None => ("would", format!("--seeds {fits} or less")),
    };
    Err(format!(
        "--seeds {asked} from seed {seed} {verb} run seeds up to {}, past the largest seed \
         {MAX_SEED}; use {fewer}, or a smaller `seed`",
        u128::from(seed) + u128::from(n) - 1
    ))
}

/// The seeds of an `n`-seed sweep: the world's seed, seed + 1, … seed + n − 1 (callers check
/// them with [`check_seeds`] first; past [`MAX_SEED`] this list stops short).
pub fn seeds(world: &World, n: u32) -> Vec<u64> {
    (0..u64::from(n))
        .map_while(|k| world.seed().checked_add(k).filter(|&s| s <= MAX_SEED))
        .collect()
}

/// The plan, algorithm-major: each algorithm on every seed before the next algorithm.
pub fn plan<'a>(algorithms: &'a [String], seeds: &'a [u64]) -> Vec<(&'a str, u64)> {
    algorithms
        .iter()
        .flat_map(|a| seeds.iter().map(move |&s| (a.as_str(), s)))
        .collect()
}

/// Runs every (algorithm, seed) of `plan` and returns the runs in plan order.
///
/// # Panics
/// Panics if an algorithm does not [`resolve`] in `world` (the CLI checks names first).
pub fn sweep(world: &World, plan: &[(&str, u64)], config: &SweepConfig<'_>) -> Vec<Run> {
    sweep_within(world, plan, config, u64::MAX)
}

/// [`sweep`], each run stopped as `out_of_memory` once it holds more than `run_bytes` (its
/// share of the memory budget, see [`crate::memory`]).
///
/// # Panics
/// Panics if an algorithm does not [`resolve`] in `world` (the CLI checks names first).
pub fn sweep_within(
    world: &World,
    plan: &[(&str, u64)],
    config: &SweepConfig<'_>,
    run_bytes: u64,
) -> Vec<Run> {
    let jobs: Vec<(&World, &str, u64)> = plan.iter().map(|&(a, s)| (world, a, s)).collect();
    sweep_runs(&jobs, config, run_bytes)
}

/// Runs every `(world, algorithm, seed)` of `jobs`, each within `run_bytes`, and returns the
/// runs in `jobs` order: a grid's cells span many worlds, and the threads take them all from
/// one [`Schedule`] (longest first, as far as it is known).
///
/// # Panics
/// Panics if an algorithm does not [`resolve`] in its world (the CLI checks names first).
pub fn sweep_runs(
    jobs: &[(&World, &str, u64)],
    config: &SweepConfig<'_>,
    run_bytes: u64,
) -> Vec<Run> {
    // Runs of one algorithm on one world cost about the same (see `schedule`).
    let schedule = Schedule::new(jobs.len(), |i| {
        let (world, algorithm, _) = jobs[i];
        (std::ptr::from_ref(world) as usize, algorithm)
    });
    let slots: Mutex<Vec<Option<Run>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    let threads = config.threads.clamp(1, jobs.len().max(1));
    let work = || {
        while let Some(i) = schedule.next() {
            let (world, algorithm, seed) = jobs[i];
            let run = run_one(world, algorithm, seed, config, run_bytes);
            schedule.finished(i, run.wall_s);
            (config.on_run)(&run);
            slots.lock().expect("no thread panics holding the lock")[i] = Some(run);
        }
    };
    // The calling thread is one of the workers: it is already running on a core, where a
    // thread it waited for could be placed beside another worker on the same one (measured on
    // this project's 2-core machine: both workers of the default comparison shared one core
    // for milliseconds while the other stayed idle).
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(work);
        }
        work();
    });
    slots
        .into_inner()
        .expect("no thread panicked")
        .into_iter()
        .map(|slot| slot.expect("every planned run was executed"))
        .collect()
}

fn run_one(
    world: &World,
    algorithm: &str,
    seed: u64,
    config: &SweepConfig<'_>,
    run_bytes: u64,
) -> Run {
    let strategy = strategy(world, algorithm).expect("algorithm names are checked before a sweep");
    let started = (config.clock)();
    let elapsed = || (config.clock)() - started;
    let out_of_time = || elapsed() > config.wall_budget_s;
    let result = harness::run_within(
        world,
        strategy.as_ref(),
        &RunConfig {
            seed,
            rng: config.rng,
            trace: false,
            window_s: config.window_s,
            out_of_time: &out_of_time,
        },
        run_bytes,
    );
    into_run(algorithm, seed, result, elapsed(), config.rng)
}

/// One run of `algorithm` on `world` handing its per-request trace to `sink` as the requests
/// end (for `--request-log`: the log is written while the run goes), within the same
/// wall-clock budget as a sweep's runs; `None` if the name does not [`resolve`].
pub fn streamed(
    world: &World,
    algorithm: &str,
    (seed, rng): (u64, RngScheme),
    sink: harness::Sink<'_>,
    wall_budget: (&dyn Fn() -> f64, f64),
) -> Option<RunResult> {
    let traced = Traced {
        world,
        algorithm,
        seed,
        rng,
        window_s: None,
    };
    traced.run(wall_budget, |strategy, config| {
        harness::run_streamed(world, strategy, config, sink)
    })
}

/// A traced run to make: of `algorithm` on `world`, recording windows `window_s` wide.
struct Traced<'a> {
    world: &'a World,
    algorithm: &'a str,
    seed: u64,
    rng: RngScheme,
    window_s: Option<f64>,
}

impl Traced<'_> {
    /// `run` with the strategy and a tracing configuration whose clock stops it past the
    /// wall-clock budget; `None` if the name does not [`resolve`].
    fn run(
        &self,
        (clock, budget_s): (&dyn Fn() -> f64, f64),
        run: impl FnOnce(&dyn Strategy, &RunConfig<'_>) -> RunResult,
    ) -> Option<RunResult> {
        let strategy = strategy(self.world, self.algorithm)?;
        let started = clock();
        let out_of_time = || clock() - started > budget_s;
        let config = RunConfig {
            seed: self.seed,
            rng: self.rng,
            trace: true,
            window_s: self.window_s,
            out_of_time: &out_of_time,
        };
        Some(run(strategy.as_ref(), &config))
    }
}

/// [`traced`] under the native random numbers, recording the run's windows too (their breaker
/// changes go into `simbench trace`) and only the first `requests` requests (the rest are
/// counted): the memory a trace takes is bounded by what it writes.
pub fn traced_with_windows(
    world: &World,
    algorithm: &str,
    (seed, requests): (u64, usize),
    wall_budget: (&dyn Fn() -> f64, f64),
) -> Option<RunResult> {
    let traced = Traced {
        world,
        algorithm,
        seed,
        rng: RngScheme::Native,
        window_s: Some(1.0),
    };
    traced.run(wall_budget, |strategy, config| {
        harness::run_traced(world, strategy, config, requests)
    })
}

/// The report's view of a harness result; the wall time goes into the `wall_s` metric.
///
/// A stalled run keeps its metrics, except under the reference's random numbers: the
/// reference has no result for a stalled run, so exact replay reports it as unfinished.
fn into_run(algorithm: &str, seed: u64, result: RunResult, wall_s: f64, rng: RngScheme) -> Run {
    let kind = result.outcome.name();
    let reason = result.outcome.reason();
    let keeps_stall = rng == RngScheme::Native;
    let outcome = match (result.metrics, reason) {
        (Some(mut metrics), None) => {
            metrics.set(Metric::WallS, wall_s);
            Outcome::Finished(metrics)
        }
        (Some(mut metrics), Some(reason)) if keeps_stall => {
            metrics.set(Metric::WallS, wall_s);
            Outcome::Stalled {
                metrics,
                kind,
                reason,
            }
        }
        (_, reason) => Outcome::Unfinished {
            kind,
            reason: reason.unwrap_or_else(|| "no metrics were produced".into()),
        },
    };
    Run {
        algorithm: algorithm.to_string(),
        seed,
        outcome,
        error_classes: ErrorCounts::of(&result.error_classes),
        endpoint_admitted: result
            .endpoints
            .iter()
            .map(|e| e.provider.admitted)
            .collect(),
        wall_s,
        timeseries: result.timeseries.map(Box::new),
    }
}
