//! `simbench trace`: one (algorithm, seed) run in the Trace Event Format, for Perfetto
//! (ui.perfetto.dev) and `chrome://tracing`.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::console::errln;
use super::output::{Inputs, Plan, Request};
use crate::sweep;
use crate::text::plural;

/// `simbench trace [FILE]`.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// Scenario file [default: the built-in bursty world].
    pub file: Option<PathBuf>,
    /// The strategy to trace: a registered algorithm or a variant the world names.
    #[arg(
        long,
        default_value = "wait",
        value_parser = super::load::AlgorithmName,
        hide_possible_values = true
    )]
    pub algorithm: String,
    /// The run seed, 0 to 2^63 − 1 as a world's `seed` [default: the world's `seed`, the first
    /// seed `simbench run` uses].
    #[arg(long, allow_negative_numbers = true, value_parser = super::run::parse_seed)]
    pub seed: Option<u64>,
    /// Override any scenario key (as `simbench run --set`).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = super::load::parse_set)]
    pub set: Vec<String>,
    /// Where the trace goes (`-` for standard output).
    #[arg(short, long, value_name = "PATH", default_value = "-")]
    pub output: PathBuf,
    /// The most requests written; a longer run has its first ones written, and the file and
    /// standard error say how many were left out.
    #[arg(long, value_name = "N", default_value_t = 200_000, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub max_requests: u64,
    /// Real seconds the run may take.
    #[arg(long, default_value_t = 600.0, allow_negative_numbers = true,
          value_parser = super::run::parse_positive_seconds)]
    pub wall_budget: f64,
    /// No summary line.
    #[arg(long)]
    pub quiet: bool,
}

/// Runs `simbench trace`.
pub fn main(args: &TraceArgs) -> u8 {
    let inputs = Inputs::default();
    let overrides = super::load::overrides(&args.set);
    let world = match super::run::load_world(args.file.as_deref(), &overrides, &inputs) {
        Ok(world) => world,
        Err(code) => return code,
    };
    if sweep::resolve(&world, &args.algorithm).is_none() {
        errln!(
            "error: {}",
            super::run::unknown_algorithm(&world, &args.algorithm)
        );
        return super::EXIT_ERROR;
    }
    if let Some(reason) = world.unsuited().get(&args.algorithm) {
        errln!(
            "warning: `{}` is unsuited to this world (`{}`): {}",
            crate::text::escape(&args.algorithm),
            crate::text::escape(world.name()),
            crate::text::escape(reason)
        );
    }
    let plan = match Plan::prepare(
        Request::named([("--output", Some(&args.output), ())]),
        &inputs,
    ) {
        Ok(plan) => plan,
        Err(message) => {
            errln!("error: {message}");
            return super::EXIT_ERROR;
        }
    };
    let seed = args.seed.unwrap_or_else(|| sweep::seeds(&world, 1)[0]);
    let origin = super::run::now();
    let clock = move || origin.elapsed().as_secs_f64();
    let max = args.max_requests as usize;
    let result = sweep::traced_with_windows(
        &world,
        &args.algorithm,
        (seed, max),
        (&clock, args.wall_budget),
    )
    .expect("the name resolved");
    let changes = result
        .timeseries
        .as_ref()
        .map_or(&[][..], |t| t.changes.as_slice());
    let written = crate::trace_event::count(&result.trace, result.trace_omitted, changes, max);
    let traced = crate::trace_event::Traced {
        algorithm: &args.algorithm,
        seed,
        outcome: &result.outcome,
        omitted: result.trace_omitted,
    };
    let render = |(): (), out: &mut dyn Write| {
        crate::trace_event::write(&world, &traced, &result.trace, changes, max, out).map(|_| ())
    };
    if written.left_out > 0 {
        errln!(
            "warning: the run sent {} requests; the trace holds the first {} (--max-requests), {} left out",
            result.trace.len() as u64 + result.trace_omitted,
            written.requests,
            written.left_out
        );
    }
    // Said even with --quiet, as `run` says it: a trace of a run that stopped early is still a
    // file that opens, and nothing in it shouts.
    if let Some(reason) = result.outcome.reason() {
        errln!(
            "warning: the run did not finish ({}): {reason}; the trace holds what it did until then",
            result.outcome.name()
        );
    }
    let requests = if written.left_out > 0 {
        format!(
            "{} of {} requests",
            written.requests,
            written.requests as u64 + written.left_out
        )
    } else {
        plural(written.requests, "request")
    };
    let summary = || {
        format!(
            "traced {} seed {seed}: {requests}, {} ({})\n",
            crate::text::escape(&args.algorithm),
            plural(written.changes, "breaker change"),
            result.outcome.name()
        )
    };
    let code = plan.finish(render, summary, args.quiet);
    if code == super::EXIT_OK && !args.quiet {
        errln!("open it in ui.perfetto.dev or chrome://tracing");
    }
    code
}
