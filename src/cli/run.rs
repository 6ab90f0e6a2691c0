//! `simbench run` and `simbench list`.
//!
//! `run` loads a world (or takes the built-in bursty one), runs every requested algorithm on
//! every seed — in parallel across cores, with results put back in (algorithm, seed) order so the
//! output is the same whatever the thread count — and prints one line per run, plus JSON on
//! request. Wall time is measured here, at the edge, never inside the simulator.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use crate::client::registry;
use crate::compile;
use crate::harness::{self, RngScheme, RunConfig, RunResult};
use crate::metrics::{CATALOGUE, Metric, MetricValues};
use crate::world::{Overrides, World};

/// Arguments of `simbench run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario file; the built-in bursty world when absent.
    pub file: Option<PathBuf>,
    /// Comma-separated algorithms, in order [default: all the world does not mark unsuited].
    #[arg(long, value_delimiter = ',')]
    pub algorithms: Option<Vec<String>>,
    /// Number of seeds: the world's seed, seed + 1, … seed + N − 1.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub seeds: u32,
    /// Replace the world's job count.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub jobs: Option<u32>,
    /// Replace the world's worker count.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub concurrency: Option<u32>,
    /// Replace the world's admission horizon [s].
    #[arg(long, value_parser = parse_positive_seconds)]
    pub horizon: Option<f64>,
    /// Real seconds one run may take before it is stopped as timed out.
    #[arg(long, default_value_t = 600.0, value_parser = parse_positive_seconds)]
    pub wall_budget: f64,
    /// Worker threads for the runs [default: the number of cores].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Write the runs as JSON to PATH (`-` for standard output).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Random-number scheme: `native` (fast) or `reference` (replays the reference exactly).
    #[arg(long, value_enum, default_value_t = RngArg::Native)]
    pub rng: RngArg,
    /// Print nothing but errors (and JSON on standard output if asked for).
    #[arg(long)]
    pub quiet: bool,
}

/// The `--rng` choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RngArg {
    /// Keyed Xoshiro256++ streams.
    Native,
    /// CPython's Mersenne Twister keyed like the reference.
    Reference,
}

impl From<RngArg> for RngScheme {
    fn from(arg: RngArg) -> RngScheme {
        match arg {
            RngArg::Native => RngScheme::Native,
            RngArg::Reference => RngScheme::Reference,
        }
    }
}

fn parse_positive_seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(_) => Err("must be a positive, finite number of seconds".into()),
        Err(err) => Err(format!("not a number: {err}")),
    }
}

/// Runs `simbench run`.
pub fn main(args: &RunArgs) -> u8 {
    let world = match load_world(args.file.as_deref()) {
        Ok(world) => world,
        Err(code) => return code,
    };
    let world = world.with_overrides(&Overrides {
        jobs: args.jobs,
        concurrency: args.concurrency,
        horizon_s: args.horizon,
    });
    let algorithms = match pick_algorithms(&world, args.algorithms.as_deref()) {
        Ok(names) => names,
        Err(message) => {
            eprintln!("error: {message}");
            return super::EXIT_ERROR;
        }
    };
    for name in &algorithms {
        if let Some(reason) = world.unsuited().get(name.as_str()) {
            eprintln!("warning: `{name}` is marked unsuited for this world: {reason}");
        }
    }
    let seeds: Vec<u64> = (0..u64::from(args.seeds))
        .map(|k| world.seed().saturating_add(k))
        .collect();
    let plan: Vec<(&str, u64)> = algorithms
        .iter()
        .flat_map(|a| seeds.iter().map(move |&s| (a.as_str(), s)))
        .collect();
    if !args.quiet {
        eprintln!(
            "simbench: {} algorithm(s) × {} seed(s) on `{}` ({} jobs × {} steps × {} calls, {} workers)",
            algorithms.len(),
            seeds.len(),
            world.name(),
            world.jobs(),
            world.steps_per_job(),
            world.calls_per_step(),
            world.concurrency()
        );
    }
    let threads = args.threads.map_or_else(default_threads, |t| t as usize);
    let budget = Duration::from_secs_f64(args.wall_budget);
    let started = now();
    let runs = run_all(&world, &plan, threads, budget, args.rng.into());
    let sweep_wall_s = started.elapsed().as_secs_f64();
    if !args.quiet {
        print_listing(&runs);
    }
    if let Some(path) = &args.json {
        let json = to_json(&world, &seeds, &runs, sweep_wall_s);
        if let Err(err) = write_output(path, &json) {
            eprintln!("error: cannot write {}: {err}", path.display());
            return super::EXIT_ERROR;
        }
    }
    let failed = runs.iter().filter(|r| r.result.metrics.is_none()).count();
    if failed > 0 {
        eprintln!("error: {failed} run(s) did not finish (see above)");
        return super::EXIT_ERROR;
    }
    super::EXIT_OK
}

/// The world named on the command line, or the built-in one; prints diagnostics on failure.
fn load_world(path: Option<&Path>) -> Result<World, u8> {
    let Some(path) = path else {
        return Ok(compile::builtin_bursty());
    };
    let bytes = std::fs::read(path).map_err(|err| {
        eprintln!("error: cannot read {}: {err}", path.display());
        super::EXIT_ERROR
    })?;
    compile::load(&path.display().to_string(), &bytes).map_err(|errors| {
        eprintln!("{:?}", miette::Report::new(errors));
        super::EXIT_INVALID
    })
}

/// The requested algorithms, checked against the registry, or the world's default list.
fn pick_algorithms(world: &World, requested: Option<&[String]>) -> Result<Vec<String>, String> {
    let Some(requested) = requested else {
        return Ok(registry::names()
            .filter(|name| !world.unsuited().contains_key(*name))
            .map(str::to_string)
            .collect());
    };
    let names: Vec<String> = requested
        .iter()
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect();
    if names.is_empty() {
        return Err("--algorithms names no algorithm".into());
    }
    for name in &names {
        if registry::find(name).is_none() {
            let known: Vec<&str> = registry::names().collect();
            return Err(format!(
                "unknown algorithm `{name}` (known: {})",
                known.join(", ")
            ));
        }
    }
    Ok(names)
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[allow(clippy::disallowed_methods)] // The CLI is where wall time is measured.
fn now() -> Instant {
    Instant::now()
}

/// One finished (algorithm, seed) run with its wall time.
struct Run<'a> {
    algorithm: &'a str,
    seed: u64,
    result: RunResult,
    wall_s: f64,
}

/// Runs the plan on `threads` threads; results come back in plan order.
fn run_all<'a>(
    world: &World,
    plan: &[(&'a str, u64)],
    threads: usize,
    budget: Duration,
    rng: RngScheme,
) -> Vec<Run<'a>> {
    let next = AtomicUsize::new(0);
    let mut slots: Vec<Option<Run<'a>>> = (0..plan.len()).map(|_| None).collect();
    let results = std::sync::Mutex::new(&mut slots);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, plan.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(algorithm, seed)) = plan.get(i) else {
                        break;
                    };
                    let run = run_one(world, algorithm, seed, budget, rng);
                    results.lock().expect("no thread panics holding the lock")[i] = Some(run);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|slot| slot.expect("every planned run was executed"))
        .collect()
}

fn run_one<'a>(
    world: &World,
    algorithm: &'a str,
    seed: u64,
    budget: Duration,
    rng: RngScheme,
) -> Run<'a> {
    let info = registry::find(algorithm).expect("checked against the registry");
    let strategy = (info.build)();
    let started = now();
    let out_of_time = || started.elapsed() > budget;
    let config = RunConfig {
        seed,
        rng,
        trace: false,
        out_of_time: &out_of_time,
    };
    let mut result = harness::run(world, strategy.as_ref(), &config);
    let wall_s = started.elapsed().as_secs_f64();
    if let Some(metrics) = &mut result.metrics {
        metrics.set(Metric::WallS, wall_s);
    }
    Run {
        algorithm,
        seed,
        result,
        wall_s,
    }
}

fn print_listing(runs: &[Run<'_>]) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{:<12} {:>10} {:>8} {:>8} {:>10} {:>10} {:>11} {:>8}",
        "algorithm", "seed", "done", "failed", "unstarted", "jobs/s", "utilization", "wall s"
    );
    for run in runs {
        match &run.result.metrics {
            Some(m) => {
                let _ = writeln!(
                    out,
                    "{:<12} {:>10} {:>8.0} {:>8.0} {:>10.0} {:>10.4} {:>11.4} {:>8.3}",
                    run.algorithm,
                    run.seed,
                    m.get(Metric::JobsDone),
                    m.get(Metric::JobsFailed),
                    m.get(Metric::JobsUnstarted),
                    m.get(Metric::ThroughputRps),
                    m.get(Metric::Utilization),
                    run.wall_s
                );
            }
            None => {
                let reason = run.result.outcome.reason().unwrap_or_default();
                let _ = writeln!(out, "{:<12} {:>10} {reason}", run.algorithm, run.seed);
            }
        }
    }
}

/// Rounds to 6 decimals for output; computations keep full precision.
fn round6(x: f64) -> f64 {
    let r = (x * 1e6).round() / 1e6;
    if r == 0.0 { 0.0 } else { r }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    simbench_version: &'static str,
    scenario: &'a str,
    summary: &'a str,
    seeds: &'a [u64],
    jobs: u32,
    concurrency: u32,
    wall_s: f64,
    runs: Vec<JsonRun<'a>>,
}

#[derive(Serialize)]
struct JsonRun<'a> {
    scenario: &'a str,
    algorithm: &'a str,
    seed: u64,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics: Option<OrderedMetrics<'a>>,
    error_classes: std::collections::BTreeMap<&'static str, u64>,
    endpoint_admitted: std::collections::BTreeMap<&'a str, u64>,
}

fn to_json(world: &World, seeds: &[u64], runs: &[Run<'_>], wall_s: f64) -> String {
    let report = JsonReport {
        simbench_version: env!("CARGO_PKG_VERSION"),
        scenario: world.name(),
        summary: world.summary(),
        seeds,
        jobs: world.jobs(),
        concurrency: world.concurrency(),
        wall_s: (wall_s * 1e3).round() / 1e3,
        runs: runs.iter().map(|run| json_run(world, run)).collect(),
    };
    let mut text = serde_json::to_string_pretty(&report).expect("plain data serializes");
    text.push('\n');
    text
}

fn json_run<'a>(world: &'a World, run: &'a Run<'a>) -> JsonRun<'a> {
    let metrics = run.result.metrics.as_ref().map(OrderedMetrics);
    JsonRun {
        scenario: world.name(),
        algorithm: run.algorithm,
        seed: run.seed,
        outcome: run.result.outcome.name(),
        reason: run.result.outcome.reason(),
        metrics,
        error_classes: run.result.error_classes.clone(),
        endpoint_admitted: run
            .result
            .endpoints
            .iter()
            .map(|e| (e.id.as_str(), e.provider.admitted))
            .collect(),
    }
}

/// Metric values as a JSON object in catalogue order, rounded to 6 decimals.
struct OrderedMetrics<'a>(&'a MetricValues);

impl Serialize for OrderedMetrics<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(CATALOGUE.len()))?;
        for (info, value) in self.0.iter() {
            map.serialize_entry(info.name, &round6(value))?;
        }
        map.end()
    }
}

fn write_output(path: &Path, text: &str) -> std::io::Result<()> {
    if path == Path::new("-") {
        return std::io::stdout().lock().write_all(text.as_bytes());
    }
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// Runs `simbench list`.
pub fn list() -> u8 {
    let world = compile::builtin_bursty();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "built-in world:");
    let _ = writeln!(
        out,
        "  {} ({} jobs, {} workers, {} s horizon)\n      {}",
        world.name(),
        world.jobs(),
        world.concurrency(),
        world.horizon_s(),
        world.summary()
    );
    for (name, reason) in world.unsuited() {
        let _ = writeln!(out, "      unsuited: {name}: {reason}");
    }
    let _ = writeln!(out, "\nalgorithms:");
    for info in registry::ALGORITHMS {
        let _ = writeln!(out, "  {:<12} {}", info.name, info.summary);
    }
    let _ = writeln!(
        out,
        "\nmetrics (name [unit] direction, * = needs comparable completion):"
    );
    for info in CATALOGUE {
        let _ = writeln!(
            out,
            "  {}{} [{}] {}: {}",
            info.name,
            if info.gated { "*" } else { "" },
            info.unit,
            info.direction.name(),
            info.meaning
        );
    }
    super::EXIT_OK
}
