//! `simbench fit LOG… -o world.toml`: a world learnt from request logs (see [`crate::fit`]).
//!
//! Logs are streamed entry by entry into numbers (prompts and bodies never reach memory), so
//! a log is as large as its requests, not its text. The world and the report go through the
//! same output rules as every command's ([`super::output`]): a log is never overwritten, and a
//! file is replaced only once the fit succeeded.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::fit::doc::ReportLine;
use crate::fit::input::{self, Log, LogError};

use super::console::errln;
use super::output::{Inputs, Plan, Request, Role};

/// Arguments of `simbench fit`.
#[derive(Debug, Args)]
pub struct FitArgs {
    /// Request logs to learn from (JSON Lines, docs/request-log.md); one per run, so times of
    /// different files are never mixed.
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<PathBuf>,
    /// Where the fitted world goes (`-` for standard output).
    #[arg(short, long, value_name = "PATH", default_value = "-")]
    pub output: PathBuf,
    /// The world's `name` [default: "fitted"].
    #[arg(long, default_value = "fitted")]
    pub name: String,
    /// Print the fit quality of every parameter and what could not be identified; with a
    /// PATH, write it there instead (`-`, or no PATH, prints it).
    #[arg(long, value_name = "PATH", num_args = 0..=1, default_missing_value = "-")]
    pub report: Option<PathBuf>,
    /// The team's own world file: the client's side of the fitted world (load, retry,
    /// breaker, strategy variants, objective, gates, pools, prices, client timeouts) is
    /// copied from it, since no log holds it; the provider's side still comes from the logs.
    #[arg(long, value_name = "WORLD")]
    pub client: Option<PathBuf>,
    /// No "wrote" lines and no summary.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Clone, Copy)]
enum Rendering {
    World,
    Report,
}

/// Runs `simbench fit`.
pub fn main(args: &FitArgs) -> u8 {
    let inputs = Inputs::default();
    for log in &args.logs {
        inputs.record(log, Role::Log);
    }
    let report_file = args.report.as_ref().filter(|p| p.as_os_str() != "-");
    let requests = Request::named([
        ("--output", Some(&args.output), Rendering::World),
        ("--report", report_file, Rendering::Report),
    ]);
    let plan = match Plan::prepare(requests, &inputs) {
        Ok(plan) => plan,
        Err(message) => {
            errln!("error: {message}");
            return super::EXIT_ERROR;
        }
    };
    let client = match &args.client {
        None => None,
        Some(path) => match super::load::load_resolved(path, &[], &inputs) {
            Ok((_, toml::Value::Table(doc))) => Some(crate::fit::client::Client {
                name: path.display().to_string(),
                doc,
            }),
            Ok(_) => None,
            Err(super::load::LoadError::Unreadable(e)) => {
                errln!(
                    "error: cannot read {}: {}",
                    path.display(),
                    super::io_reason(&e)
                );
                return super::EXIT_ERROR;
            }
            Err(super::load::LoadError::Invalid(errors)) => {
                let colour = super::console::colour_stderr();
                super::console::stderr(
                    &errors.render(crate::diagnostics::RenderOptions { colour, width: 100 }),
                );
                return super::EXIT_INVALID;
            }
        },
    };
    let log = match read_logs(&args.logs) {
        Ok(log) => log,
        Err(message) => {
            errln!("error: {message}");
            return super::EXIT_INVALID;
        }
    };
    let fitted = match crate::fit::fit(&log, &args.name, client) {
        Ok(fitted) => fitted,
        Err(why) => {
            errln!("error: cannot fit a world: {why}");
            return super::EXIT_INVALID;
        }
    };
    let report = render_report(&fitted.report);
    let render = |kind: Rendering, out: &mut dyn Write| match kind {
        Rendering::World => out.write_all(fitted.toml.as_bytes()),
        Rendering::Report => out.write_all(report.as_bytes()),
    };
    let summary = || {
        if args.report.is_some() && report_file.is_none() {
            return report.clone();
        }
        let assumed = fitted.report.iter().filter(|l| !l.identified).count();
        format!(
            "fitted {} from {} requests in {}; {} of {} values not identified (--report lists them)\n",
            plural(log.endpoints.len(), "endpoint"),
            log.len(),
            plural(log.segments.len(), "log"),
            assumed,
            fitted.report.len()
        )
    };
    let quiet = args.quiet && !(args.report.is_some() && report_file.is_none());
    plan.finish(render, summary, quiet)
}

/// Reads every log into one [`Log`], one segment per file.
fn read_logs(paths: &[PathBuf]) -> Result<Log, String> {
    let mut log = Log::default();
    for path in paths {
        let name = path.display().to_string();
        let file = std::fs::File::open(path)
            .map_err(|e| format!("cannot read the log {name}: {}", super::io_reason(&e)))?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(format!(
                "cannot read the log {name}: it is a folder, not a file"
            ));
        }
        let mut segment = log.segment(&name);
        let reader = std::io::BufReader::with_capacity(1 << 16, file);
        input::read_jsonl(&name, reader, &mut |entry| segment.add(&entry))
            .map_err(|e: LogError| crate::text::escape(&e.to_string()).into_owned())?;
        if segment.is_empty() {
            return Err(format!(
                "the log {name} holds no request (each line is one JSON object, docs/request-log.md)"
            ));
        }
        segment.finish();
    }
    Ok(log)
}

/// The report: one line per value, identified ones first.
fn render_report(lines: &[ReportLine]) -> String {
    let mut out = String::from("fitted values (what each rests on):\n");
    let width = lines.iter().map(|l| l.key.len()).max().unwrap_or(0);
    for l in lines.iter().filter(|l| l.identified && !l.note.is_empty()) {
        out.push_str(&format!("  {:width$}  {}  {}\n", l.key, l.value, l.note));
    }
    out.push_str("not identified from the data (the value used instead):\n");
    let mut none = true;
    for l in lines.iter().filter(|l| !l.identified) {
        none = false;
        out.push_str(&format!("  {:width$}  {}  {}\n", l.key, l.value, l.note));
    }
    if none {
        out.push_str("  (none)\n");
    }
    out.push_str(
        "always defaults: breaker, pools, incidents, caches, prices and the retry options \
         (budget, throttle) are not in request logs\n",
    );
    out.lines()
        .map(|line| crate::text::escape(line).into_owned() + "\n")
        .collect()
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
