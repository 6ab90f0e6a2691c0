//! `simbench run` and `simbench list`: the edge where the comparison meets files, terminals and
//! the real clock.
//!
//! `run` loads a world (or takes the built-in bursty one) with its `extends` chain and the
//! `--set` overrides (`--jobs`, `--concurrency` and `--horizon` are shorthands for three of them,
//! checked like the file), sweeps
//! every requested algorithm over every seed ([`crate::sweep`], in parallel), builds the report
//! ([`crate::report`], pure) and decides where each rendering goes: the table to standard output,
//! `--json`/`--markdown`/`--csv` as [`super::output`] rules (checked before the runs, streamed,
//! files replaced atomically). Wall time is read here and nowhere
//! else. Exit codes: 0 done (even if some runs stalled — the report says so), 1 invalid scenario,
//! 2 usage or I/O error, or every run stalled or timed out, 3 a CI gate failed (`[thresholds]`,
//! `--assert`, `--baseline`).

pub(super) mod progress;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;

use crate::client::registry;
use crate::compile;
use crate::diagnostics::RenderOptions;
use crate::harness::RngScheme;
use crate::metrics::{CATALOGUE, Direction, Metric};
use crate::report::gates::{self, Baseline};
use crate::report::terminal::{MetricChoice, TerminalOptions};
use crate::report::{self, Report, SweepInfo};
use crate::sweep::{self, SweepConfig};
use crate::text::plural;
use crate::threshold::Assertion;
use crate::world::World;
use progress::Progress;

use super::console::{self, errln};
use super::load::{self, LoadError};
use super::output::{Inputs, Plan, Request};
use crate::compile::{LoadOptions, Override};

/// Arguments of `simbench run`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("recording").multiple(true)))]
pub struct RunArgs {
    /// Scenario file; the built-in bursty world when absent.
    pub file: Option<PathBuf>,
    /// Comma-separated algorithms, in order [default: all the world does not mark unsuited].
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = super::load::AlgorithmName,
        hide_possible_values = true
    )]
    pub algorithms: Option<Vec<String>>,
    /// Replace the world's job count (shorthand for `--set jobs=N`, checked like the file: a
    /// bad value is an invalid scenario, exit 1).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub jobs: Option<String>,
    /// Replace the world's worker count (shorthand for `--set concurrency=N`, checked like the
    /// file).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub concurrency: Option<String>,
    /// Replace the world's admission horizon [s] (shorthand for `--set horizon_s=S`, checked
    /// like the file).
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    pub horizon: Option<String>,
    /// Write the report as JSON to PATH (`-` for standard output).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write the report as markdown to PATH (`-` for standard output).
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// Write one CSV row per (algorithm, seed) to PATH (`-` for standard output).
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    /// Write the requests of one run as a request log (JSON Lines, docs/request-log.md) to PATH
    /// (`-` for standard output); `--log-run` picks the run.
    #[arg(long, value_name = "PATH")]
    pub request_log: Option<PathBuf>,
    /// Write every run's windows of simulated time as tidy CSV to PATH (`-` for standard
    /// output): one row per (algorithm, seed, window), docs/report.md lists the columns.
    #[arg(long, value_name = "PATH", group = "recording")]
    pub timeseries: Option<PathBuf>,
    /// Write a self-contained HTML report to PATH (`-` for standard output): the verdict and
    /// table, every seed's value per metric, and each strategy's time series (records windows,
    /// as `--timeseries` does).
    #[arg(long, value_name = "PATH", group = "recording")]
    pub html: Option<PathBuf>,
    /// Width of a recorded window in simulated seconds, for `--timeseries` and `--html` (a run
    /// longer than 4096 windows has them merged pairwise, doubling the width).
    #[arg(
        long,
        value_name = "S",
        default_value_t = 1.0,
        allow_negative_numbers = true,
        value_parser = parse_window_seconds,
        requires = "recording"
    )]
    pub window_s: f64,
    /// The run `--request-log` records: `ALGORITHM` or `ALGORITHM:SEED` (a seed of this run, as
    /// the CSV's seed column shows it) [default: the verdict's pick (with no decision, the
    /// strategy it leads with after its tie-breaks; with no leader, the first algorithm), the
    /// first seed].
    #[arg(long, value_name = "ALGORITHM[:SEED]", requires = "request_log")]
    pub log_run: Option<String>,
    /// Comma-separated metrics for the table [default: the objective's and a few key ones].
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "METRICS",
        value_parser = super::load::list_item,
        conflicts_with = "all_metrics"
    )]
    pub metrics: Option<Vec<String>>,
    /// Show every metric in the table.
    #[arg(long)]
    pub all_metrics: bool,
    /// Fail (exit 3) unless this holds: `ALGORITHM.METRIC OP NUMBER` on the mean over seeds,
    /// e.g. `aimd.refusal_rate<0.02`, or `verdict==ALGORITHM`; repeatable, checked with the
    /// world's `[thresholds]`.
    #[arg(long = "assert", value_name = "EXPR", value_parser = parse_assertion)]
    pub assertions: Vec<Assertion>,
    /// A JSON report of an earlier run: fail (exit 3) on every metric of every algorithm whose
    /// paired per-seed change against it is significantly worse (at the objective's confidence)
    /// and larger than --tolerance.
    #[arg(long, value_name = "PATH")]
    pub baseline: Option<PathBuf>,
    /// Smallest change --baseline flags, as a share of the baseline mean (only with
    /// --baseline: alone it would gate nothing).
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true, value_parser = parse_share, requires = "baseline")]
    pub tolerance: f64,
    /// Seeds, overrides, threads, budget, random numbers, quietness.
    #[command(flatten)]
    pub exec: ExecArgs,
}

/// What `run` and `sweep` share: which seeds, which overrides, how to execute, how loudly.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Number of seeds: the world's seed, seed + 1, … seed + N − 1; or `auto[:MAX]` (`run` only):
    /// seeds in planned batches until the verdict is decided or MAX (default 200) are run.
    #[arg(long, default_value = "3", value_name = "N|auto[:MAX]", value_parser = parse_seeds)]
    pub seeds: SeedCount,
    /// Override any scenario key, e.g. `endpoints.metered.rate_limit.per_window=240` (a TOML
    /// value; endpoints by id or index; repeatable, applied in order after the file).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = load::parse_set)]
    pub set: Vec<String>,
    /// Real seconds one run may take before it is stopped as timed out (its setup, simulation
    /// and metrics; each run has its own budget).
    #[arg(long, default_value_t = 600.0, allow_negative_numbers = true, value_parser = parse_positive_seconds)]
    pub wall_budget: f64,
    /// Memory the command may use, e.g. `2G` or `500M` [default: half the machine's available
    /// memory]: a command whose estimate exceeds it is refused before it runs, and a run that
    /// outgrows its share is stopped as `out_of_memory`.
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true, value_parser = crate::memory::parse_size)]
    pub memory_budget: Option<u64>,
    /// Worker threads for the runs [default: the number of cores].
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Random-number scheme: `native` (fast) or `reference` (replays the reference exactly).
    #[arg(long, value_enum, default_value_t = RngArg::Native)]
    pub rng: RngArg,
    /// No header, progress or "wrote" lines; no table when a file output is requested.
    #[arg(long)]
    pub quiet: bool,
    /// What the verdict optimises (overrides the world's `[objective]`).
    #[command(flatten)]
    pub objective: ObjectiveArgs,
}

/// The command-line form of `[objective]`; each flag replaces one of its keys, checked like the
/// file.
#[derive(Debug, Args)]
pub struct ObjectiveArgs {
    /// The metric the verdict optimises, in its catalogue direction (`objective.metric`).
    #[arg(long, value_name = "METRIC")]
    pub objective: Option<String>,
    /// A limit the pick must meet, e.g. `refusal_rate<=0.05` or `jobs_done>=2900` (`<` and
    /// `>` read as `<=` and `>=`: means are compared); repeatable, replaces
    /// `objective.constraints`.
    #[arg(long, value_name = "METRIC<=X", value_parser = parse_constraint)]
    pub constraint: Vec<(String, &'static str, f64)>,
    /// Comma-separated metrics that decide between strategies the objective cannot separate
    /// (`objective.tie_break`; `none` for none).
    #[arg(long, value_name = "METRICS", value_parser = parse_tie_break)]
    pub tie_break: Option<String>,
    /// Confidence of the verdict's intervals, e.g. 0.99 (`objective.confidence`).
    #[arg(long, value_name = "LEVEL", allow_hyphen_values = true)]
    pub confidence: Option<String>,
}

impl ObjectiveArgs {
    /// The flags as overrides of `[objective]`'s keys.
    pub fn overrides(&self) -> Vec<Override> {
        let quoted = |text: &str| toml::Value::String(text.to_owned()).to_string();
        let mut out = Vec::new();
        let mut push = |flag: &str, text: String| {
            out.push(Override {
                origin: flag.to_owned(),
                text,
            })
        };
        if let Some(metric) = &self.objective {
            push(
                "--objective",
                format!("objective.metric={}", quoted(metric)),
            );
        }
        if !self.constraint.is_empty() {
            let items: Vec<String> = self
                .constraint
                .iter()
                .map(|(metric, bound, x)| {
                    format!("{{ metric = {}, {bound} = {x:?} }}", quoted(metric))
                })
                .collect();
            push(
                "--constraint",
                format!("objective.constraints=[{}]", items.join(", ")),
            );
        }
        if let Some(list) = &self.tie_break {
            let names: Vec<String> = list
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty() && *n != "none")
                .map(quoted)
                .collect();
            push(
                "--tie-break",
                format!("objective.tie_break=[{}]", names.join(", ")),
            );
        }
        if let Some(level) = &self.confidence {
            push("--confidence", format!("objective.confidence={level}"));
        }
        out
    }
}

/// A comma-separated list of metrics, or `none` alone: an empty item is a slip (an unset shell
/// variable), not a way to say none.
fn parse_tie_break(text: &str) -> Result<String, String> {
    let items = text
        .split(',')
        .map(super::load::list_item)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|why| format!("{why}; write `none` for no tie-break"))?;
    if items.len() > 1 && items.iter().any(|i| i == "none") {
        return Err("`none` stands alone: it means no tie-break".to_owned());
    }
    Ok(text.to_owned())
}

/// `refusal_rate<=0.05` → (`refusal_rate`, `max`, 0.05).
fn parse_constraint(text: &str) -> Result<(String, &'static str, f64), String> {
    let at = text
        .find(['<', '>'])
        .ok_or("expected METRIC<=X or METRIC>=X, e.g. refusal_rate<=0.05")?;
    let (metric, rest) = text.split_at(at);
    let bound = if rest.starts_with('<') { "max" } else { "min" };
    let number = rest[1..].strip_prefix('=').unwrap_or(&rest[1..]).trim();
    let metric = metric.trim();
    if metric.is_empty() {
        return Err("no metric before the comparison".into());
    }
    match number.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok((metric.to_owned(), bound, x)),
        Ok(_) => Err("the limit must be a finite number".into()),
        Err(_) => Err(format!("`{number}` is not a number")),
    }
}

/// The `--rng` choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RngArg {
    /// Keyed Xoshiro256++ streams.
    Native,
    /// CPython's Mersenne Twister keyed like the reference.
    Reference,
}

impl RngArg {
    fn scheme(self) -> RngScheme {
        match self {
            RngArg::Native => RngScheme::Native,
            RngArg::Reference => RngScheme::Reference,
        }
    }
    fn name(self) -> &'static str {
        match self {
            RngArg::Native => "native",
            RngArg::Reference => "reference",
        }
    }
}

/// How many seeds: a fixed number, or as many as the verdict needs up to a maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedCount {
    /// Exactly this many.
    Fixed(u32),
    /// `--seeds auto[:MAX]` ([`crate::sequential`]).
    Auto {
        /// The most seeds it may run.
        max: u32,
    },
}

/// As written on the command line: `10`, `auto:500`.
impl std::fmt::Display for SeedCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SeedCount::Fixed(n) => write!(f, "{n}"),
            SeedCount::Auto { max } => write!(f, "auto:{max}"),
        }
    }
}

impl SeedCount {
    /// The most seeds it may run.
    pub fn most(self) -> u32 {
        match self {
            SeedCount::Fixed(n) | SeedCount::Auto { max: n } => n,
        }
    }
}

/// The most seeds one command runs.
pub(super) const MAX_SEEDS: u32 = 100_000;

/// One seed, as a world's `seed` takes it: a whole number from 0 to 2^63 − 1 (clap's own
/// parser would answer "invalid digit found in string" for `1.5` or `-1`).
pub(super) fn parse_seed(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(seed) if seed <= sweep::MAX_SEED => Ok(seed),
        _ => Err(format!(
            "`{text}` is not a seed: a whole number from 0 to {} (2^63 − 1), as a world's `seed`",
            sweep::MAX_SEED
        )),
    }
}

fn parse_seeds(text: &str) -> Result<SeedCount, String> {
    let count = match crate::sequential::parse_auto(text) {
        Some(max) => SeedCount::Auto { max: max? },
        None => match crate::sequential::whole(text) {
            Some(n) if n > u64::from(MAX_SEEDS) => {
                return Err(format!("at most {MAX_SEEDS} seeds"));
            }
            Some(n) if n >= 1 => SeedCount::Fixed(n as u32),
            _ => {
                return Err(format!(
                    "`{text}` is neither a whole number of seeds (at least 1) nor auto[:MAX]"
                ));
            }
        },
    };
    if count.most() > MAX_SEEDS {
        return Err(format!("at most {MAX_SEEDS} seeds"));
    }
    Ok(count)
}

pub(super) fn parse_positive_seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(_) => Err("must be a positive, finite number of seconds".into()),
        Err(err) => Err(format!("not a number: {err}")),
    }
}

/// The smallest recording window \[s\]: the time series writes its times to the microsecond,
/// so a narrower window's start and end would print as one another.
const MIN_WINDOW_S: f64 = 1e-6;

/// `--window-s`: a positive, finite number of seconds, at least [`MIN_WINDOW_S`].
fn parse_window_seconds(text: &str) -> Result<f64, String> {
    let v = parse_positive_seconds(text)?;
    if v < MIN_WINDOW_S {
        return Err(format!(
            "must be at least {MIN_WINDOW_S} s (one microsecond): the time series writes its \
             times to the microsecond, so a narrower window could not be told from the next"
        ));
    }
    Ok(v)
}

/// Runs `simbench run`.
pub fn main(args: &RunArgs) -> u8 {
    let overrides = overrides(args);
    let inputs = Inputs::default();
    let world = match load_world(args.file.as_deref(), &overrides, &inputs) {
        Ok(world) => world,
        Err(code) => return code,
    };
    let choice = match metric_choice(args).and_then(|c| applicable(c, &world)) {
        Ok(choice) => choice,
        Err(message) => {
            errln!("error: {message}");
            return super::EXIT_ERROR;
        }
    };
    let table = |report: &Report| table(report, &choice);
    let baseline = match args.baseline.as_deref().map(read_baseline).transpose() {
        Ok(baseline) => {
            if let Some(path) = &args.baseline {
                inputs.record(path, super::output::Role::Baseline);
            }
            baseline
        }
        Err(message) => {
            errln!("error: {message}");
            return super::EXIT_ERROR;
        }
    };
    let algorithms = pick_algorithms(&world, args.algorithms.as_deref());
    if let (Ok(names), Some(_)) = (&algorithms, &args.algorithms) {
        warn_unsuited(&world, names);
    }
    // Outputs are checked and staged after the world (whose `extends` chain they must not
    // overwrite) and before any run.
    let plan = algorithms.and_then(|names| Ok((names, Plan::prepare(requests(args), &inputs)?)));
    let plan = plan.and_then(|(names, plan)| {
        check_assertions(&args.assertions, &names, &world)?;
        Ok((names, plan))
    });
    let (algorithms, mut plan) = match plan {
        Ok(ready) => ready,
        Err(message) => {
            errln!("error: {message}");
            return super::EXIT_ERROR;
        }
    };
    let asked = args.exec.seeds.to_string();
    if let Err(message) = sweep::check_seeds(&world, args.exec.seeds.most(), &asked) {
        errln!("error: {message}");
        return super::EXIT_ERROR;
    }
    let logged = match args.request_log.as_ref().map(|_| {
        log_run(
            args.log_run.as_deref(),
            &algorithms,
            &world,
            args.exec.seeds.most(),
        )
    }) {
        Some(Err(message)) => {
            errln!("error: {}", crate::text::escape(&message));
            return super::EXIT_ERROR;
        }
        Some(Ok(pick)) => Some(pick),
        None => None,
    };
    // A refusal drops the plan, which removes its temporaries.
    let Some(report) = compare(&world, &algorithms, args, &overrides) else {
        return super::EXIT_ERROR;
    };
    if report.nothing_finished() {
        // A failed command replaces no output (and runs no logged run).
        plan.abandon(
            renderer(&report, &choice),
            || table(&report),
            args.exec.quiet,
        );
        warn_unfinished(&report);
        errln!(
            "error: no run finished with metrics (each was stopped by a budget, or stalled under --rng reference), so there is nothing to compare"
        );
        return super::EXIT_ERROR;
    }
    if let Some(pick) = logged {
        let log = write_request_log(&mut plan, &world, &report, pick, &algorithms, args);
        if let Err(message) = log {
            errln!("error: {message}");
            return super::EXIT_ERROR;
        }
    }
    let code = plan.finish(
        renderer(&report, &choice),
        || table(&report),
        args.exec.quiet,
    );
    warn_unfinished(&report);
    if code != super::EXIT_OK {
        return code;
    }
    gates(&report, &world, args, baseline.as_ref())
}

/// The CI gates: every assertion (the world's and `--assert`) and the baseline comparison;
/// exit 3 with the list of what failed.
fn gates(report: &Report, world: &World, args: &RunArgs, baseline: Option<&Baseline>) -> u8 {
    let ran = |name: &str| report.columns.iter().any(|c| c.algorithm == name);
    let mut failed: Vec<String> = Vec::new();
    for assertion in world.thresholds() {
        // A gate that cannot be checked does not pass: the algorithm was left out by
        // `--algorithms` or is marked unsuited to the world.
        if !ran(assertion.algorithm()) {
            failed.push(format!(
                "threshold on `{}` not checked: it did not run (unsuited to the world, or not \
                 in --algorithms)",
                assertion.algorithm()
            ));
            continue;
        }
        failed.extend(gates::check(assertion, report).map(|why| format!("threshold {why}")));
    }
    for assertion in &args.assertions {
        failed.extend(gates::check(assertion, report).map(|why| format!("--assert {why}")));
    }
    if let Some(baseline) = baseline {
        if !baseline.world_hash.is_empty() && baseline.world_hash != report.world.hash {
            errln!(
                "warning: the baseline is of world {}, this run of {}: compared anyway",
                crate::text::escape(&baseline.world_hash),
                report.world.hash
            );
        }
        if !baseline.rng.is_empty() && baseline.rng != report.sweep.rng {
            errln!(
                "warning: the baseline was run with --rng {}, this run with --rng {}: the same \
                 seeds draw other random numbers, so a change is partly luck; compared anyway",
                crate::text::escape(&baseline.rng),
                report.sweep.rng
            );
        }
        let confidence = report.decision.objective.confidence;
        let gated = gates::regressions(report, baseline, confidence, args.tolerance);
        failed.extend(
            gated
                .regressions
                .iter()
                .map(|r| format!("regression {}", r.describe(confidence))),
        );
        if !gated.unpaired.is_empty() {
            let why = format!(
                "{} of this run {} no 2 finished seeds in common with the baseline (it has {}), \
                 so no change could be tested",
                gated.unpaired.join(", "),
                if gated.unpaired.len() == 1 {
                    "has"
                } else {
                    "have"
                },
                baseline.describe()
            );
            if gated.unpaired.len() == report.columns.len() {
                // A gate that compared nothing must not pass.
                failed.push(format!(
                    "--baseline compared nothing: {why}; run the baseline's algorithms on 2 or \
                     more of its seeds"
                ));
            } else {
                errln!("warning: --baseline left out {why}");
            }
        }
    }
    if failed.is_empty() {
        return super::EXIT_OK;
    }
    errln!("error: {} failed:", plural(failed.len(), "gate"));
    for line in &failed {
        errln!("  {}", crate::text::escape(line));
    }
    super::EXIT_GATE
}

/// Every `--assert` names an algorithm that runs and a metric the world measures (as the
/// world's own `[thresholds]` and `[objective]` must).
fn check_assertions(
    assertions: &[Assertion],
    algorithms: &[String],
    world: &World,
) -> Result<(), String> {
    for a in assertions {
        if let Assertion::Metric { metric, .. } = a
            && let Some(why) = crate::compile::inapplicable(world, *metric)
        {
            return Err(crate::text::escape(&format!(
                "--assert `{}.{}`: {why}, so this gate could never be checked",
                a.algorithm(),
                metric.info().name
            ))
            .into_owned());
        }
        if let Assertion::Metric {
            metric, op, value, ..
        } = a
            && let Some(vain) = crate::threshold::vain(*metric, *op, *value)
        {
            let outcome = match vain {
                crate::threshold::Vain::Never => "this gate would fail on every run",
                crate::threshold::Vain::Always => "this gate could never fail",
            };
            let hint = crate::threshold::percent_hint(*metric, *value)
                .map(|h| format!("; {h}"))
                .unwrap_or_default();
            return Err(crate::text::escape(&format!(
                "--assert `{}.{}`: {}: {outcome}{hint}",
                a.algorithm(),
                metric.info().name,
                crate::threshold::describe_vain(*metric, *op, *value, vain),
            ))
            .into_owned());
        }
        if !algorithms.iter().any(|n| n == a.algorithm()) {
            return Err(crate::text::escape(&format!(
                "--assert names `{}`, which does not run (running: {})",
                a.algorithm(),
                algorithms.join(", ")
            ))
            .into_owned());
        }
    }
    Ok(())
}

/// Reads a baseline JSON report.
fn read_baseline(path: &Path) -> Result<Baseline, String> {
    let shown = path.display();
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read the baseline {shown}: {}", super::io_reason(&e)))?;
    let doc: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the baseline {shown} is not JSON: {e}"))?;
    Baseline::from_json(&doc).map_err(|e| format!("the baseline {shown}: {e}"))
}

fn parse_assertion(text: &str) -> Result<Assertion, String> {
    Assertion::parse(text)
}

fn parse_share(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err("must be a number >= 0 (a share of the baseline mean, e.g. 0.05)".into()),
    }
}

/// The table's metrics from `--metrics` / `--all-metrics`, checked against the catalogue.
fn metric_choice(args: &RunArgs) -> Result<MetricChoice, String> {
    if args.all_metrics {
        return Ok(MetricChoice::All);
    }
    let Some(names) = &args.metrics else {
        return Ok(MetricChoice::Compact);
    };
    let mut metrics = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let Some(metric) = Metric::from_name(name) else {
            let near = crate::threshold::suggest(name);
            return Err(crate::text::escape(&format!(
                "--metrics: unknown metric `{name}`{near}; `simbench list` shows the catalogue"
            ))
            .into_owned());
        };
        if metric == Metric::WallS {
            return Err(
                "--metrics: `wall_s` is this machine's time, not the world's: the footer shows \
                 it, the JSON and CSV report it per run; it is never a row"
                    .into(),
            );
        }
        metrics.push(metric);
    }
    if metrics.is_empty() {
        return Err("--metrics names no metric".into());
    }
    Ok(MetricChoice::Only(metrics))
}

/// Drops the `--metrics` names the world does not measure, saying so (one list of metrics may
/// serve many worlds, so this is no error unless nothing is left).
fn applicable(choice: MetricChoice, world: &World) -> Result<MetricChoice, String> {
    let MetricChoice::Only(metrics) = choice else {
        return Ok(choice);
    };
    let (kept, dropped): (Vec<Metric>, Vec<Metric>) = metrics
        .into_iter()
        .partition(|m| m.info().needs.is_none_or(|f| world.has(f)));
    for info in dropped.iter().map(|m| m.info()) {
        let why = info.needs.map(|f| f.absence()).unwrap_or_default();
        errln!(
            "warning: --metrics: `{}` does not apply to this world ({why}), so it is not shown",
            info.name
        );
    }
    if kept.is_empty() {
        return Err("--metrics names no metric this world measures".into());
    }
    Ok(MetricChoice::Only(kept))
}

/// Characters per line of the table: `COLUMNS` when set, else the terminal's width when
/// standard output is one, else no limit (a file gets the whole table).
fn table_width() -> Option<usize> {
    let columns = std::env::var("COLUMNS").ok();
    if let Some(width) = columns.and_then(|c| c.trim().parse::<usize>().ok()) {
        return (width > 0).then_some(width.max(40));
    }
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    terminal_size::terminal_size_of(&stdout).map(|(w, _)| usize::from(w.0).max(40))
}

/// Which rendering an output of `run` gets.
#[derive(Clone, Copy, PartialEq)]
enum Rendering {
    Json,
    Markdown,
    Csv,
    Timeseries,
    Html,
    RequestLog,
}

/// The outputs named by `--json`, `--markdown`, `--csv`, `--timeseries`, `--html` and `--request-log`.
fn requests(args: &RunArgs) -> Vec<Request<Rendering>> {
    Request::named([
        ("--json", args.json.as_ref(), Rendering::Json),
        ("--markdown", args.markdown.as_ref(), Rendering::Markdown),
        ("--csv", args.csv.as_ref(), Rendering::Csv),
        (
            "--timeseries",
            args.timeseries.as_ref(),
            Rendering::Timeseries,
        ),
        ("--html", args.html.as_ref(), Rendering::Html),
        (
            "--request-log",
            args.request_log.as_ref(),
            Rendering::RequestLog,
        ),
    ])
}

/// Runs the sweep and builds the report; `None` (with a message) if it cannot fit in the memory
/// budget. Under `--seeds auto` the memory is checked for the most seeds it may run.
fn compare(
    world: &World,
    algorithms: &[String],
    args: &RunArgs,
    overrides: &[Override],
) -> Option<Report> {
    let most = args.exec.seeds.most();
    let threads = args
        .exec
        .threads
        .map_or_else(default_threads, |t| t as usize);
    let budget = super::memory::budget(args.exec.memory_budget);
    let largest = algorithms.len() as u64 * u64::from(most);
    let run_bytes = match super::memory::check(
        world,
        largest,
        threads as u64,
        budget,
        args.exec.rng.scheme(),
        0,
        (args.timeseries.is_some() || args.html.is_some()).then_some(args.window_s),
    ) {
        Ok(share) => share,
        Err(message) => {
            errln!("error: {message}");
            return None;
        }
    };
    if !args.exec.quiet {
        let seeds = match args.exec.seeds {
            SeedCount::Fixed(n) => plural(n as usize, "seed"),
            SeedCount::Auto { max } => format!("seeds auto (at most {max})"),
        };
        errln!(
            "simbench: {} × {seeds} on `{}` ({}; rng {}; {})",
            plural(algorithms.len(), "algorithm"),
            crate::text::escape(world.name()),
            crate::report::format::world_size(
                world.jobs(),
                world.steps_per_job(),
                world.calls_per_step(),
                &crate::report::format::load(world)
            ),
            args.exec.rng.name(),
            plural(threads.min(largest.max(1) as usize), "thread"),
        );
        if !overrides.is_empty() {
            let applied: Vec<&str> = overrides.iter().map(|o| o.text.as_str()).collect();
            errln!(
                "simbench: overrides: {}",
                crate::text::escape(&applied.join(", "))
            );
        }
    }
    let origin = now();
    let clock = move || origin.elapsed().as_secs_f64();
    let show_progress = !args.exec.quiet && std::io::stderr().is_terminal();
    let progress = Progress::new(largest as usize, show_progress);
    let mut runs: Vec<report::Run> = Vec::new();
    let report = progress.around(|on_run| {
        let config = SweepConfig {
            rng: args.exec.rng.scheme(),
            threads,
            wall_budget_s: args.exec.wall_budget,
            clock: &clock,
            on_run,
            window_s: (args.timeseries.is_some() || args.html.is_some()).then_some(args.window_s),
        };
        // A fixed number of seeds is analysed once, so the analysis takes the runs; sequential
        // looks keep them for the next look and analyse a copy.
        let keep_runs = matches!(args.exec.seeds, SeedCount::Auto { .. });
        // The first `n` seeds of every algorithm, running only those not run yet.
        let mut analyse = |n: u32, objective: &crate::objective::Objective| {
            let seeds = sweep::seeds(world, n);
            let done = runs.len() / algorithms.len().max(1);
            let plan = sweep::plan(algorithms, &seeds[done..]);
            let batch = sweep::sweep_within(world, &plan, &config, run_bytes);
            // The first batch is kept as it is: extending an empty vector would copy it, and
            // for a moment hold every run twice.
            if runs.is_empty() {
                runs = batch;
            } else {
                runs.extend(batch);
            }
            let sweep = SweepInfo {
                seeds,
                rng: args.exec.rng.name(),
                wall_s: clock(),
            };
            put_in_plan_order(&mut runs, algorithms);
            let runs = if keep_runs {
                runs.clone()
            } else {
                std::mem::take(&mut runs)
            };
            report::analyse_for(world, objective, sweep, runs)
        };
        match args.exec.seeds {
            SeedCount::Fixed(n) => analyse(n, &world.objective()),
            SeedCount::Auto { max } => {
                let design = crate::sequential::Design::new(max, world.objective().confidence);
                let objective = design.per_look_objective(&world.objective());
                let (mut report, stop) =
                    crate::sequential::run(&design, |n| analyse(n, &objective));
                report.sequential = Some(stop);
                report
            }
        }
    });
    Some(report)
}

/// Puts runs gathered batch by batch back in the plan's order (algorithm-major, seeds in
/// order), so a sequential look's report is the one a fixed number of seeds would give. The
/// sort is in place: each (algorithm, seed) is run once, so no two runs share a key.
fn put_in_plan_order(runs: &mut [report::Run], algorithms: &[String]) {
    let rank = |name: &str| algorithms.iter().position(|a| a == name);
    runs.sort_unstable_by_key(|r| (rank(&r.algorithm), r.seed));
}

/// Runs the logged (algorithm, seed) once more, streaming its requests into the
/// `--request-log` output as they end: the log never holds the whole run in memory.
fn write_request_log(
    plan: &mut Plan<Rendering>,
    world: &World,
    report: &Report,
    (name, seed): (Option<String>, u64),
    algorithms: &[String],
    args: &RunArgs,
) -> Result<(), String> {
    // Without --log-run: the pick, else the leader of an undecided verdict, else the first.
    let picked = matches!(
        report.decision.outcome,
        crate::report::decision::Outcome::Decided { .. }
            | crate::report::decision::Outcome::Alone { .. }
    );
    let (name, why) = match name {
        Some(name) => (name, ""),
        None => match report.decision.leader() {
            Some(leader) if picked => (leader.to_owned(), ""),
            Some(leader) => (leader.to_owned(), " (the verdict's leader; it picked none)"),
            None => (
                algorithms[0].clone(),
                " (the first algorithm; the verdict has no leader)",
            ),
        },
    };
    let origin = now();
    let clock = move || origin.elapsed().as_secs_f64();
    let budget = (&clock as &dyn Fn() -> f64, args.exec.wall_budget);
    let mut logged = None;
    plan.stream(Rendering::RequestLog, |out| {
        let (outcome, requests) = crate::request_log::stream(world, out, |sink| {
            let run = (seed, args.exec.rng.scheme());
            let result = sweep::streamed(world, &name, run, sink, budget);
            result
                .expect("algorithm names are checked before the runs")
                .outcome
        })?;
        logged = Some((outcome, requests));
        Ok(())
    })?;
    if let (Some((outcome, requests)), false) = (logged, args.exec.quiet) {
        errln!(
            "simbench: request log of {} seed {seed}{why}: {} ({})",
            crate::text::escape(&name),
            plural(requests as usize, "request"),
            outcome.name()
        );
    }
    Ok(())
}

/// Writes one rendering of the report; the markdown table keeps every row unless `--metrics`
/// names some.
fn renderer<'a>(
    report: &'a Report,
    choice: &'a MetricChoice,
) -> impl Fn(Rendering, &mut dyn Write) -> std::io::Result<()> + 'a {
    let rows = match choice {
        MetricChoice::Only(_) => choice.clone(),
        MetricChoice::Compact | MetricChoice::All => MetricChoice::All,
    };
    move |kind, out| match kind {
        Rendering::Json => report::json::write(report, out),
        // Its size grows with algorithms and metrics, not with runs.
        Rendering::Markdown => {
            out.write_all(report::markdown::render_rows(report, &rows).as_bytes())
        }
        Rendering::Csv => report::csv::write(report, out),
        Rendering::Timeseries => report::timeseries::write(report, out),
        Rendering::Html => out.write_all(report::html::render(report).as_bytes()),
        // Streamed while its run went (`write_request_log`).
        Rendering::RequestLog => Ok(()),
    }
}

/// The (algorithm, seed) `--log-run` names, checked against the run's algorithms and seeds;
/// without an algorithm, the verdict's pick is logged.
fn log_run(
    text: Option<&str>,
    algorithms: &[String],
    world: &World,
    seeds: u32,
) -> Result<(Option<String>, u64), String> {
    let first = sweep::seeds(world, 1)[0];
    let Some(text) = text else {
        return Ok((None, first));
    };
    let (name, seed) = match text.rsplit_once(':') {
        Some((name, seed)) => {
            let seed = seed.trim().parse::<u64>().map_err(|_| {
                format!("--log-run: `{seed}` is not a seed (a whole number, e.g. {first})")
            })?;
            (name.trim(), seed)
        }
        None => (text.trim(), first),
    };
    if !algorithms.iter().any(|a| a == name) {
        return Err(format!(
            "--log-run names `{name}`, which does not run (running: {})",
            algorithms.join(", ")
        ));
    }
    let last = sweep::seeds(world, seeds).last().copied().unwrap_or(first);
    if !(first..=last).contains(&seed) {
        return Err(format!(
            "--log-run: seed {seed} is not one of this run's seeds ({first} to {last})"
        ));
    }
    Ok((Some(name.to_owned()), seed))
}

/// The terminal table, coloured only on a terminal, fitted to its width.
fn table(report: &Report, choice: &MetricChoice) -> String {
    let options = TerminalOptions {
        colour: console::colour_stdout(),
        metrics: choice.clone(),
        width: table_width(),
    };
    report::terminal::render(report, &options)
}

/// Stalls and stopped runs are not errors unless nothing finished, but they are never silent,
/// even with --quiet.
fn warn_unfinished(report: &Report) {
    let n = report.unfinished_runs();
    if n > 0 {
        errln!(
            "warning: {n} of {} runs did not finish; their algorithms are left out of every ranking (see the notes under the table)",
            report.runs.len()
        );
    }
    let stalled = report.runs.iter().filter(|r| r.stall().is_some()).count();
    if stalled > 0 {
        errln!(
            "warning: {stalled} of {} runs stalled; each counts with what it did until the stall (stall_rate, jobs_stalled)",
            report.runs.len()
        );
    }
}

/// The shorthand flags as overrides, then the `--set` arguments, in the order they apply.
fn overrides(args: &RunArgs) -> Vec<Override> {
    let shorthand = |flag: &str, text: String| Override {
        origin: flag.to_owned(),
        text,
    };
    let mut out = Vec::new();
    // The value is taken as written: the schema checks it, with the file's rules and messages.
    if let Some(jobs) = &args.jobs {
        out.push(shorthand("--jobs", format!("jobs={jobs}")));
    }
    if let Some(concurrency) = &args.concurrency {
        out.push(shorthand(
            "--concurrency",
            format!("concurrency={concurrency}"),
        ));
    }
    if let Some(horizon) = &args.horizon {
        out.push(shorthand("--horizon", format!("horizon_s={horizon}")));
    }
    out.extend(load::overrides(&args.exec.set));
    out.extend(args.exec.objective.overrides());
    out
}

/// The world named on the command line, or the built-in one, with the overrides applied;
/// prints diagnostics on failure.
pub(super) fn load_world(
    path: Option<&Path>,
    overrides: &[Override],
    inputs: &Inputs,
) -> Result<World, u8> {
    let loaded = match path {
        None if overrides.is_empty() => return Ok(compile::builtin_bursty()),
        None => {
            let data = |file: &Path| super::load::read_data(file, inputs);
            let options = LoadOptions {
                read: &|_: &Path| Err("the built-in world extends nothing".to_owned()),
                read_data: &data,
                overrides,
            };
            compile::load_with(
                compile::BUILTIN_BURSTY_ORIGIN,
                compile::BUILTIN_BURSTY_TOML.as_bytes(),
                &options,
            )
            .map_err(|e| LoadError::Invalid(Box::new(e)))
        }
        Some(path) => load::load_recorded(path, overrides, inputs),
    };
    loaded.map_err(|error| match error {
        LoadError::Unreadable(err) => {
            let shown = path.map_or_else(String::new, |p| p.display().to_string());
            errln!("error: cannot read {shown}: {}", super::io_reason(&err));
            super::EXIT_ERROR
        }
        LoadError::Invalid(errors) => {
            let colour = console::colour_stderr();
            console::stderr(&errors.render(RenderOptions { colour, width: 100 }));
            super::EXIT_INVALID
        }
    })
}

/// The requested algorithms, checked against the registry and the world's variants and
/// deduplicated, or the world's default list ([`sweep::default_algorithms`]).
pub(super) fn pick_algorithms(
    world: &World,
    requested: Option<&[String]>,
) -> Result<Vec<String>, String> {
    let Some(requested) = requested else {
        let names = sweep::default_algorithms(world);
        if names.is_empty() {
            return Err(format!(
                "every algorithm is marked unsuited to `{}` (its [unsuited] table), so none runs \
                 by default; name the ones to run with --algorithms (shown, never ranked)",
                crate::text::escape(world.name())
            ));
        }
        return Ok(names);
    };
    let mut names: Vec<String> = Vec::new();
    for name in requested.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if sweep::resolve(world, name).is_none() {
            return Err(unknown_algorithm(world, name));
        }
        if names.iter().any(|n| n == name) {
            // Identical reruns would only shrink the spread; the reference keeps them, we don't.
            errln!(
                "warning: `{}` is listed twice; running it once",
                crate::text::escape(name)
            );
            continue;
        }
        names.push(name.to_string());
    }
    if names.is_empty() {
        return Err("--algorithms names no algorithm".into());
    }
    Ok(names)
}

/// Warns that each of `names` the world marks unsuited runs but is not ranked.
pub(super) fn warn_unsuited(world: &World, names: &[String]) {
    for name in names {
        if let Some(reason) = world.unsuited().get(name) {
            errln!(
                "warning: `{}` is unsuited to this world (`{}`) and will not be ranked: {}",
                crate::text::escape(name),
                crate::text::escape(world.name()),
                crate::text::escape(reason)
            );
        }
    }
}

/// "unknown algorithm `x` (known: …)", naming the world's variants too.
pub(super) fn unknown_algorithm(world: &World, name: &str) -> String {
    let known: Vec<&str> = registry::names()
        .map(|n| -> &str { n })
        .chain(world.named_variants().map(|v| v.name.as_str()))
        .collect();
    let mut message = format!("unknown algorithm `{name}` (known: {})", known.join(", "));
    if let Some(best) = crate::schema::did_you_mean(name, known.iter().copied()) {
        message.push_str(&format!("; did you mean `{best}`?"));
    }
    crate::text::escape(&message).into_owned()
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The real clock, read only at this edge (clippy.toml forbids it elsewhere).
#[allow(clippy::disallowed_methods)]
pub(super) fn now() -> Instant {
    Instant::now()
}

/// Arguments of `simbench list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// A folder of scenario files (`*.toml`) or one file to describe [default: the built-in
    /// world]. A folder lists what it can; one file that is not a valid world exits 1.
    pub scenarios: Option<PathBuf>,
}

/// Runs `simbench list`: algorithms, metrics, then scenarios.
pub fn list(args: &ListArgs) -> u8 {
    let mut out = String::from(
        "algorithms (parameters: name, unit, default, range; set in [algorithms.<name>]):\n",
    );
    for info in registry::ALGORITHMS {
        out.push_str(&format!("  {:<12} {}\n", info.name, info.summary));
        for p in info.params {
            let key = format!("{}.{}", info.name, p.name);
            let range = format!(
                "{} to {}{}",
                p.min,
                p.max,
                if p.integer { ", whole" } else { "" }
            );
            out.push_str(&format!(
                "      {key:<24} {:<6} default {:<8} range {range:<18} {}\n",
                p.unit, p.default, p.meaning
            ));
        }
    }
    out.push_str("\nmetrics (name, unit, better; † = gated: compared only among algorithms that complete enough jobs; ‡ = latency: compared only among runs that pass the validity gate):\n");
    for info in CATALOGUE {
        let marks = match (info.gated, info.latency) {
            (true, true) => " †‡",
            (true, false) => " †",
            (false, true) => " ‡",
            (false, false) => "",
        };
        let name = format!("{}{marks}", info.name);
        let better = match info.direction {
            Direction::Neutral => "neutral",
            d => d.name(),
        };
        out.push_str(&format!(
            "  {name:<32} {:<9} {better:<8} {}\n",
            info.unit, info.meaning
        ));
    }
    let code = match &args.scenarios {
        None => {
            out.push_str("\nbuilt-in world (`simbench run` without a file):\n");
            describe_world(&mut out, "", &compile::builtin_bursty());
            super::EXIT_OK
        }
        Some(path) => match scenario_files(path) {
            Ok(files) => {
                out.push_str(&format!("\nscenarios in {}:\n", path.display()));
                let described = describe_files(&mut out, &files);
                // A folder lists what it can; a file named on its own must be a world.
                if described == files.len() || path.is_dir() {
                    super::EXIT_OK
                } else {
                    super::EXIT_INVALID
                }
            }
            Err(reason) => {
                errln!("error: cannot list {}: {reason}", path.display());
                return super::EXIT_ERROR;
            }
        },
    };
    console::exit_code(code, console::print(&out))
}

/// A `*.toml` entry of a folder: a file to describe, or why it is skipped.
type Entry = (PathBuf, Option<String>);

/// The `*.toml` entries of a folder (sorted by name), or the path itself if it is a file.
/// Nothing is opened here but folders, so a FIFO cannot block the listing.
fn scenario_files(path: &Path) -> Result<Vec<Entry>, String> {
    let reason = |err: std::io::Error| super::io_reason(&err);
    let meta = std::fs::metadata(path).map_err(reason)?;
    if meta.is_file() {
        return Ok(vec![(path.to_path_buf(), None)]);
    }
    if !meta.is_dir() {
        let why = not_a_file(path).unwrap_or_default();
        return Err(format!("{why}; name a folder or a scenario file"));
    }
    let mut files: Vec<Entry> = std::fs::read_dir(path)
        .map_err(reason)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let skipped = not_a_file(&p);
            (p, skipped)
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Why `path` is not a regular file to read, looking without opening it; `None` if it is one.
fn not_a_file(path: &Path) -> Option<String> {
    let why = match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => return None,
        Ok(meta) if meta.is_dir() => "a folder, not a scenario file".to_owned(),
        Ok(meta) if is_fifo(&meta) => {
            "a FIFO, not a regular file (not opened: reading it could wait for ever)".to_owned()
        }
        Ok(_) => "not a regular file (a device or a socket)".to_owned(),
        Err(_) if is_link_loop(path) => "a loop of symbolic links".to_owned(),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            "a symbolic link whose target does not exist".to_owned()
        }
        Err(err) => format!("unreadable: {}", super::io_reason(&err)),
    };
    Some(why)
}

#[cfg(unix)]
fn is_fifo(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    meta.file_type().is_fifo()
}

#[cfg(not(unix))]
fn is_fifo(_: &std::fs::Metadata) -> bool {
    false
}

/// Whether following `path`'s symbolic links never ends (more than 40, Linux's own limit).
fn is_link_loop(path: &Path) -> bool {
    let mut current = path.to_path_buf();
    for _ in 0..=40 {
        let Ok(link) = std::fs::read_link(&current) else {
            return false;
        };
        current = match current.parent() {
            Some(parent) if link.is_relative() => parent.join(link),
            _ => link,
        };
    }
    true
}

/// Describes each file, or says why it is skipped; returns how many were described.
fn describe_files(out: &mut String, files: &[Entry]) -> usize {
    if files.is_empty() {
        out.push_str("  (no *.toml files)\n");
    }
    let mut described = 0;
    for (file, skipped) in files {
        let shown = file.file_name().map_or_else(
            || file.display().to_string(),
            |n| n.to_string_lossy().into(),
        );
        let shown = crate::text::escape(&shown);
        if let Some(why) = skipped {
            out.push_str(&format!("  {shown}: skipped: {why}\n"));
            continue;
        }
        match load::load_file(file, &[]) {
            Err(LoadError::Unreadable(err)) => {
                let reason = super::io_reason(&err);
                out.push_str(&format!("  {shown}: unreadable, skipped: {reason}\n"));
            }
            Ok(world) => {
                describe_world(out, &format!("{shown}: "), &world);
                described += 1;
            }
            Err(LoadError::Invalid(errors)) => {
                let findings = errors.findings();
                let first = findings
                    .first()
                    .map_or_else(String::new, |f| format!(", line {}: {}", f.line, f.message));
                out.push_str(&format!(
                    "  {shown}: invalid, skipped ({}{first}; see `simbench validate {}`)\n",
                    plural(findings.len(), "problem"),
                    crate::text::escape(&file.display().to_string())
                ));
            }
        }
    }
    described
}

/// A world in `simbench list`; its name, summary, reasons and variants come from the file and are
/// escaped (see [`crate::text`]).
fn describe_world(out: &mut String, prefix: &str, world: &World) {
    use crate::text::escape;
    out.push_str(&format!(
        "  {prefix}{} ({}, {} s horizon, {})\n",
        escape(world.name()),
        crate::report::format::world_size(
            world.jobs(),
            world.steps_per_job(),
            world.calls_per_step(),
            &crate::report::format::load(world)
        ),
        world.horizon_s(),
        plural(world.endpoints().len(), "endpoint")
    ));
    for line in wrap(world.summary(), 92) {
        out.push_str(&format!("      {}\n", escape(&line)));
    }
    for (name, reason) in world.unsuited() {
        out.push_str(&format!(
            "      unsuited: {}: {}\n",
            escape(name),
            escape(reason)
        ));
    }
    for variant in world.algorithms() {
        let label = if variant.is_named() {
            "variant"
        } else {
            "parameters"
        };
        out.push_str(&format!("      {label}: {}\n", escape(&variant.describe())));
    }
}

/// Greedy word wrap at `width` characters.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}
