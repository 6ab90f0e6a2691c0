//! `simbench sweep`: find the concurrency knee before measuring anything.
//!
//! Loads a world once (with its `extends` chain and `--set` overrides), derives one world per
//! level with [`World::with_overrides`] (the worker count of a closed loop, the arrival rate of an
//! open one; the level lists are checked by the argument parser), runs one algorithm on the same
//! seeds at every level (common random numbers: the levels differ only in load) through
//! [`crate::sweep::sweep`], hands the runs to [`crate::knee`] (pure) and decides where each
//! rendering goes: the table and the verdict to standard output, `--json`/`--csv` as
//! [`super::output`] rules (checked before the runs, streamed, files replaced atomically).
//!
//! Exit codes: 0 done (a flagged recommendation is still an answer), 1 invalid scenario, 2 usage
//! or I/O error, or no run finished at the first level (there is no baseline to judge against).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{ArgGroup, Args};

use crate::compile::{self, LoadOptions, Override, Reader};
use crate::diagnostics::{RenderOptions, ScenarioErrors};
use crate::harness::RngScheme;
use crate::knee::{self, LevelRuns};
use crate::metrics::CATALOGUE;
use crate::report::Run;
use crate::report::fingerprint::world_hash;
use crate::report::sweep::{self as render, Knob, SweepView};
use crate::sweep::{self, SweepConfig};
use crate::world::{Load, Overrides, World};

use super::console::{self, errln};
use super::load;
use super::output::{Inputs, Plan, Request, Role};
use super::run::{ExecArgs, RngArg};

/// The largest closed-loop level, as `simbench run --concurrency` allows.
const MAX_CONCURRENCY: u32 = 100_000;

/// Arguments of `simbench sweep`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("levels").required(true).args(["concurrency", "rate", "grid"])))]
pub struct SweepArgs {
    /// Scenario files; the built-in bursty world when none. A knee sweep takes one; a grid
    /// sweep runs every file at every point.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Closed loop: comma-separated worker counts, increasing, e.g. `1,2,4,8,16,32`.
    #[arg(long, value_name = "LIST", value_parser = parse_concurrency)]
    pub concurrency: Option<Levels>,
    /// Open loop: comma-separated arrival rates [jobs/s], increasing, e.g. `1,2,5,10`.
    #[arg(long, value_name = "LIST", value_parser = parse_rates)]
    pub rate: Option<Levels>,
    /// A grid axis: any scenario key and its values, written as `--set` writes them, e.g.
    /// `retry.max_attempts=3,5,8` or `concurrency=8,16`; repeatable. Every combination of the
    /// axes is a grid point; each point runs the algorithms on the seeds and gets a verdict.
    #[arg(long, value_name = "KEY=V1,V2,…", value_parser = super::grid::parse_axis)]
    pub grid: Vec<crate::grid::Axis>,
    /// The algorithm to sweep [knee sweep default: wait].
    #[arg(
        long,
        conflicts_with = "algorithms",
        value_parser = super::load::AlgorithmName,
        hide_possible_values = true
    )]
    pub algorithm: Option<String>,
    /// Grid sweep: comma-separated algorithms [default: each world's default comparison].
    #[arg(
        long,
        value_delimiter = ',',
        requires = "grid",
        value_parser = super::load::AlgorithmName,
        hide_possible_values = true
    )]
    pub algorithms: Option<Vec<String>>,
    /// Grid sweep: run only shard I of N (1-based) of the plan's cells; `auto` reads a Slurm
    /// job array's SLURM_ARRAY_TASK_ID/COUNT/MIN, `auto/N` also a Kubernetes Indexed Job's
    /// JOB_COMPLETION_INDEX (Kubernetes does not give N). Needs --part.
    #[arg(long, value_name = "I/N|auto[/N]", requires = "grid", value_parser = super::grid::parse_shard)]
    pub shard: Option<super::grid::ShardArg>,
    /// Grid sweep: write this shard's runs (or the whole plan's) as a part for `simbench merge`.
    #[arg(long, value_name = "PATH", requires = "grid")]
    pub part: Option<PathBuf>,
    /// Grid sweep: check the worlds, axes, algorithms and memory and print the plan (its hash
    /// and cells, and a shard's share) without running anything, e.g. before submitting a job
    /// array.
    #[arg(long, requires = "grid")]
    pub dry_run: bool,
    /// Write levels, per-seed values, the knee and the reasons as JSON to PATH (`-` for stdout);
    /// for a grid, the grid report.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write one CSV row per (level, seed) to PATH (`-` for standard output); for a grid, one per
    /// run.
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    /// Write a self-contained HTML page to PATH (`-` for standard output): throughput,
    /// refusal rate and the p99s against the level, every seed's value, the knee marked. Knee
    /// sweeps only: a grid writes `--json` and `--csv`.
    #[arg(long, value_name = "PATH", conflicts_with = "grid")]
    pub html: Option<PathBuf>,
    /// Seeds (the same at every level), overrides (applied before the level), threads, budget,
    /// random numbers, quietness — as for `simbench run`.
    #[command(flatten)]
    pub exec: ExecArgs,
}

/// A parsed, strictly increasing list of at least two levels.
#[derive(Clone, Debug, PartialEq)]
pub struct Levels(Vec<f64>);

fn parse_concurrency(text: &str) -> Result<Levels, String> {
    parse_levels(text, |item| match item.parse::<u32>() {
        Ok(n) if (1..=MAX_CONCURRENCY).contains(&n) => Ok(f64::from(n)),
        Ok(n) => Err(format!(
            "worker counts are whole numbers from 1 to {MAX_CONCURRENCY}; got `{n}`"
        )),
        Err(_) => Err(format!(
            "worker counts are whole numbers from 1 to {MAX_CONCURRENCY}; got `{item}`"
        )),
    })
}

/// The highest rate a world's `load.rate_per_s` may have (the schema's bound).
const MAX_RATE: f64 = 1e9;

fn parse_rates(text: &str) -> Result<Levels, String> {
    parse_levels(text, |item| match item.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 && r <= MAX_RATE => Ok(r),
        _ => Err(format!(
            "rates are positive numbers of jobs per second up to {MAX_RATE} (as `load.rate_per_s`); got `{item}`"
        )),
    })
}

/// Splits on commas, parses each item and checks the list: at least two levels, increasing.
fn parse_levels(text: &str, item: impl Fn(&str) -> Result<f64, String>) -> Result<Levels, String> {
    let levels = text
        .split(',')
        .map(str::trim)
        .map(|s| {
            if s.is_empty() {
                Err("an empty item in the list".to_owned())
            } else {
                item(s)
            }
        })
        .collect::<Result<Vec<f64>, String>>()?;
    if levels.len() < 2 {
        return Err(
            "a sweep needs at least two levels (a baseline and a step), e.g. `2,4,8`".into(),
        );
    }
    if let Some(pair) = levels.windows(2).find(|w| w[1] <= w[0]) {
        return Err(format!(
            "levels must increase: `{}` is not above `{}`",
            pair[1], pair[0]
        ));
    }
    Ok(Levels(levels))
}

/// Runs `simbench sweep`.
pub fn main(args: &SweepArgs) -> u8 {
    let (knob, levels) = match (&args.concurrency, &args.rate) {
        (Some(Levels(l)), _) => (Knob::Concurrency, l.as_slice()),
        (None, Some(Levels(l))) => (Knob::Rate, l.as_slice()),
        (None, None) => return super::grid::sweep(args),
    };
    // clap's `requires = "grid"` does not hold these back when a level list is given.
    let grid_only = [
        ("--algorithms", args.algorithms.is_some()),
        ("--shard", args.shard.is_some()),
        ("--part", args.part.is_some()),
        ("--dry-run", args.dry_run),
    ];
    if let Some((flag, _)) = grid_only.iter().find(|(_, given)| *given) {
        let why = if *flag == "--algorithms" {
            "a knee sweep runs one --algorithm"
        } else {
            "a knee sweep runs on one machine and writes its report at once"
        };
        return usage_error(&format!(
            "{flag} belongs to a grid sweep (--grid KEY=V1,V2,…); {why}"
        ));
    }
    if args.files.len() > 1 {
        return usage_error(
            "a knee sweep takes one world; to run several, make the level a grid axis: --grid concurrency=… (or rate)",
        );
    }
    let inputs = Inputs::default();
    let source = match Source::read(args.files.first().map(PathBuf::as_path), &inputs) {
        Ok(source) => source,
        Err(message) => return usage_error(&message),
    };
    let mut user = load::overrides(&args.exec.set);
    user.extend(args.exec.objective.overrides());
    let base = match source.load(&user, &inputs) {
        Ok(world) => world,
        Err(errors) => return invalid(&errors),
    };
    // Outputs are checked and staged once the `extends` chain is known, before any run.
    let plan = check_knob(&base, knob)
        .and_then(|()| check_algorithm(&base, args))
        .and_then(|()| fixed_seeds(args.exec.seeds))
        .and_then(|n| sweep::check_seeds(&base, n, &n.to_string()))
        .and_then(|()| Plan::prepare(requests(args), &inputs));
    let plan = match plan {
        Ok(plan) => plan,
        Err(message) => return usage_error(&message),
    };
    warn_thresholds(&base, &source.origin);
    warn_set_of_knob(&args.exec.set, knob);
    let worlds: Vec<World> = levels
        .iter()
        .map(|&level| base.with_overrides(&level_override(knob, level)))
        .collect();
    let seeds = sweep::seeds(&base, args.exec.seeds.most());
    let threads = args
        .exec
        .threads
        .map_or_else(default_threads, |t| t as usize)
        .min(seeds.len());
    // Every level's runs are kept for the analysis; each level's world has its own run size.
    let total_runs = (worlds.len() * seeds.len()) as u64;
    let budget = super::memory::budget(args.exec.memory_budget);
    let run_bytes = match super::memory::check_each(
        &worlds,
        total_runs,
        threads as u64,
        budget,
        rng_scheme(args.exec.rng),
        0,
        None,
    ) {
        Ok(share) => share,
        Err(message) => return usage_error(&message),
    };
    if !args.exec.quiet {
        let shown: Vec<String> = levels.iter().map(|&l| knob.spell(l)).collect();
        errln!(
            "simbench: sweep of `{}` on `{}`: {} {} × {} ({}; rng {}; {})",
            crate::text::escape(algorithm(args)),
            crate::text::escape(base.name()),
            knob.name(),
            shown.join(", "),
            crate::text::plural(seeds.len(), "seed"),
            crate::text::plural(base.jobs() as usize, "job"),
            rng_name(args.exec.rng),
            crate::text::plural(threads, "thread")
        );
    }
    let origin = now();
    let clock = move || origin.elapsed().as_secs_f64();
    let runs: Vec<Vec<Run>> = worlds
        .iter()
        .zip(levels)
        .map(|(world, &level)| {
            let started = clock();
            let runs = run_level(world, args, &seeds, threads, &clock, run_bytes);
            if !args.exec.quiet {
                errln!(
                    "simbench: {} {} done in {:.1} s",
                    knob.name(),
                    knob.spell(level),
                    clock() - started
                );
            }
            runs
        })
        .collect();
    if runs[0].iter().all(|r| r.metrics().is_none()) {
        // Dropping the plan removes its temporaries: a failed command replaces no output.
        drop(plan);
        errln!(
            "error: no run finished at the first level ({} {}), so there is no baseline to judge the others against",
            knob.name(),
            knob.spell(levels[0])
        );
        return super::EXIT_ERROR;
    }
    let inputs: Vec<LevelRuns<'_>> = runs
        .iter()
        .zip(&worlds)
        .map(|(runs, world)| LevelRuns {
            runs,
            validity: world.validity(),
        })
        .collect();
    let analysis = knee::aggregate(&inputs);
    let names: Vec<String> = levels
        .iter()
        .map(|&level| SweepView::level_name(knob, level))
        .collect();
    let best = knee::best_operating_point(&knee::sweep_objective(&base), &names, &inputs);
    let view = SweepView {
        best: &best,
        knob,
        levels,
        runs: &runs,
        analysis: &analysis,
        scenario: base.name(),
        world_hash: world_hash(&base),
        level_hashes: worlds.iter().map(world_hash).collect(),
        algorithm: algorithm(args),
        seeds: &seeds,
        jobs: base.jobs(),
        rng: rng_name(args.exec.rng),
        applies: CATALOGUE.iter().map(|m| m.applies_to(&base)).collect(),
        wall_s: clock(),
    };
    // Said even with --quiet, as `run` says it: the knee is judged on what they did.
    let stalled: usize = analysis.levels.iter().map(|l| l.stalled.len()).sum();
    if stalled > 0 {
        let total: usize = analysis.levels.iter().map(|l| l.runs).sum();
        errln!(
            "warning: {stalled} of {total} runs stalled; each counts with what it did until the stall (the notes say where)"
        );
    }
    emit(&view, args, plan)
}

/// Which rendering an output of `sweep` gets.
#[derive(Clone, Copy)]
enum Rendering {
    Json,
    Csv,
    Html,
}

/// The outputs named by `--json`, `--csv` and `--html`.
fn requests(args: &SweepArgs) -> Vec<Request<Rendering>> {
    Request::named([
        ("--json", args.json.as_ref(), Rendering::Json),
        ("--csv", args.csv.as_ref(), Rendering::Csv),
        ("--html", args.html.as_ref(), Rendering::Html),
    ])
}

/// The level as a world override: the size knob the sweep varies, nothing else.
fn level_override(knob: Knob, level: f64) -> Overrides {
    match knob {
        // Levels are parsed as whole numbers from 1 to MAX_CONCURRENCY.
        Knob::Concurrency => Overrides {
            concurrency: Some(level as u32),
            ..Overrides::default()
        },
        Knob::Rate => Overrides {
            rate_per_s: Some(level),
            ..Overrides::default()
        },
    }
}

/// Runs the algorithm on every seed of one level's world.
fn run_level(
    world: &World,
    args: &SweepArgs,
    seeds: &[u64],
    threads: usize,
    clock: &(dyn Fn() -> f64 + Sync),
    run_bytes: u64,
) -> Vec<Run> {
    let algorithms = [algorithm(args).to_owned()];
    let plan = sweep::plan(&algorithms, seeds);
    sweep::sweep_within(
        world,
        &plan,
        &SweepConfig {
            rng: rng_scheme(args.exec.rng),
            threads,
            wall_budget_s: args.exec.wall_budget,
            clock,
            on_run: &|_| {},
            window_s: None,
        },
        run_bytes,
    )
}

/// The scenario text as read: a file, or the built-in world.
pub(super) struct Source {
    pub(super) origin: String,
    bytes: Vec<u8>,
    /// Whether `extends` may read files (the built-in world extends nothing).
    from_disk: bool,
}

impl Source {
    pub(super) fn read(path: Option<&Path>, inputs: &Inputs) -> Result<Source, String> {
        let Some(path) = path else {
            return Ok(Source {
                origin: compile::BUILTIN_BURSTY_ORIGIN.to_owned(),
                bytes: compile::BUILTIN_BURSTY_TOML.as_bytes().to_vec(),
                from_disk: false,
            });
        };
        inputs.record(path, Role::Scenario);
        let bytes = load::read_limited(path)
            .map_err(|err| format!("cannot read {}: {}", path.display(), super::io_reason(&err)))?;
        Ok(Source {
            origin: path.display().to_string(),
            bytes,
            from_disk: true,
        })
    }

    pub(super) fn load(
        &self,
        overrides: &[Override],
        inputs: &Inputs,
    ) -> Result<World, Box<ScenarioErrors>> {
        let chain = load::Chain::new(Path::new(&self.origin));
        let from_disk: &Reader<'_> = &|base: &Path| {
            inputs.record(base, Role::Base);
            chain.read(base)
        };
        let refuse: &Reader<'_> = &|_: &Path| Err("the built-in world extends nothing".to_owned());
        let data = |file: &Path| load::read_data(file, inputs);
        let options = LoadOptions {
            read: if self.from_disk { from_disk } else { refuse },
            read_data: &data,
            overrides,
        };
        compile::load_with(&self.origin, &self.bytes, &options).map_err(Box::new)
    }
}

/// A closed loop is swept by worker count, an open one by arrival rate; the other knob would
/// change nothing the harness uses.
fn check_knob(world: &World, knob: Knob) -> Result<(), String> {
    match (knob, world.load()) {
        (Knob::Concurrency, Load::Closed { .. }) | (Knob::Rate, Load::Open { .. }) => Ok(()),
        (Knob::Rate, Load::Closed { .. }) => Err(format!(
            "--rate sweeps an open loop's arrival rate, but `{}` is a closed loop ([load] model = \"closed\"); sweep it with --concurrency",
            crate::text::escape(world.name())
        )),
        (_, Load::Trace { .. }) => Err(format!(
            "`{}` replays a trace ([load] model = \"trace\"), whose arrivals are the log's; sweep its replay speed with --grid load.speed=1,2,4 (a grid sweep, each speed a cell), or sweep an open or closed loop",
            crate::text::escape(world.name())
        )),
        (Knob::Concurrency, Load::Open { .. }) => Err(format!(
            "--concurrency sweeps a closed loop's workers, but `{}` is an open loop ([load] model = \"open\"); sweep it with --rate",
            crate::text::escape(world.name())
        )),
    }
}

/// A `--set` of the setting the levels set is used by no run, since every level overwrites it
/// (yet an open loop needs a rate to load at all, so it is not refused): said, not silent.
fn warn_set_of_knob(set: &[String], knob: Knob) {
    let (path, flag): (&[&str], _) = match knob {
        Knob::Concurrency => (&["concurrency"], "--concurrency"),
        Knob::Rate => (&["load", "rate_per_s"], "--rate"),
    };
    for (i, text) in set.iter().enumerate() {
        // The overrides loaded already: each is a line of TOML.
        let Ok(value) = text.parse::<toml::Table>().map(toml::Value::Table) else {
            continue;
        };
        if (path.iter())
            .try_fold(&value, |at, key| at.get(key))
            .is_some()
        {
            errln!(
                "warning: --set #{} sets `{}`, which every level of the sweep overwrites \
                 ({flag}): no run uses its value",
                i + 1,
                path.join(".")
            );
        }
    }
}

/// A sweep compares levels on one fixed set of seeds: `--seeds auto` decides a `run`'s verdict.
pub(super) fn fixed_seeds(seeds: super::run::SeedCount) -> Result<u32, String> {
    match seeds {
        super::run::SeedCount::Fixed(n) => Ok(n),
        super::run::SeedCount::Auto { .. } => Err(
            "--seeds auto is for `simbench run` (it stops when the verdict is decided); a sweep \
             compares its levels on a fixed number of seeds, e.g. --seeds 10"
                .into(),
        ),
    }
}

/// The knee sweep's algorithm.
fn algorithm(args: &SweepArgs) -> &str {
    args.algorithm.as_deref().unwrap_or("wait")
}

/// A sweep checks no `[thresholds]` (they gate `simbench run`): said, so that a CI job moved
/// from `run` to a sweep does not lose its gates in silence.
pub(super) fn warn_thresholds(world: &World, origin: &str) {
    let n = world.thresholds().len();
    if n > 0 {
        errln!(
            "warning: {} has {} in [thresholds], which `simbench sweep` does not check; \
             `simbench run` on the chosen setting does (exit 3 when one fails)",
            crate::text::escape(origin),
            crate::text::plural(n, "assertion")
        );
    }
}

fn check_algorithm(world: &World, args: &SweepArgs) -> Result<(), String> {
    let name = algorithm(args);
    if sweep::resolve(world, name).is_none() {
        return Err(super::run::unknown_algorithm(world, name));
    }
    if let Some(reason) = world.unsuited().get(name) {
        errln!("warning: `{name}` is unsuited to this world: {reason}");
    }
    Ok(())
}

/// Streams the requested outputs and prints the table; returns the exit code.
fn emit(view: &SweepView<'_>, args: &SweepArgs, plan: Plan<Rendering>) -> u8 {
    let write = |kind, out: &mut dyn Write| match kind {
        Rendering::Json => render::write_json(view, out),
        Rendering::Csv => render::write_csv(view, out),
        Rendering::Html => out.write_all(crate::report::html::render_sweep(view).as_bytes()),
    };
    plan.finish(write, || render::terminal(view), args.exec.quiet)
}

pub(super) fn usage_error(message: &str) -> u8 {
    errln!("error: {message}");
    super::EXIT_ERROR
}

pub(super) fn invalid(errors: &ScenarioErrors) -> u8 {
    let colour = console::colour_stderr();
    console::stderr(&errors.render(RenderOptions { colour, width: 100 }));
    super::EXIT_INVALID
}

pub(super) fn rng_scheme(rng: RngArg) -> RngScheme {
    match rng {
        RngArg::Native => RngScheme::Native,
        RngArg::Reference => RngScheme::Reference,
    }
}

pub(super) fn rng_name(rng: RngArg) -> &'static str {
    match rng {
        RngArg::Native => "native",
        RngArg::Reference => "reference",
    }
}

pub(super) fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The real clock, read only at this edge (clippy.toml forbids it elsewhere).
#[allow(clippy::disallowed_methods)]
fn now() -> Instant {
    Instant::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_lists_parse_or_say_why_not() {
        assert_eq!(
            parse_concurrency(" 1, 2,4 "),
            Ok(Levels(vec![1.0, 2.0, 4.0]))
        );
        assert_eq!(parse_rates("0.5,2"), Ok(Levels(vec![0.5, 2.0])));
        let err = |r: Result<Levels, String>| r.unwrap_err();
        assert!(err(parse_concurrency("0,2")).contains("got `0`"));
        assert!(err(parse_concurrency("a,b")).contains("got `a`"));
        assert!(err(parse_concurrency("4")).contains("at least two levels"));
        assert!(err(parse_concurrency("4,4")).contains("must increase"));
        assert!(err(parse_concurrency("2,,4")).contains("empty item"));
        assert!(err(parse_rates("1,inf")).contains("got `inf`"));
        assert!(err(parse_rates("0.5,1e300")).contains("up to 1000000000"));
    }
}
