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
use crate::text::plural;

use super::console::errln;
use super::output::{Inputs, Plan, Request, Role};

/// Arguments of `simbench fit`.
#[derive(Debug, Args)]
pub struct FitArgs {
    /// Request logs to learn from (JSON Lines, docs/request-log.md; `-` reads standard input);
    /// one per run, so times of different files are never mixed.
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<PathBuf>,
    /// Where the fitted world goes (`-` for standard output).
    #[arg(short, long, value_name = "PATH", default_value = "-")]
    pub output: PathBuf,
    /// The world's `name` [default: "fitted"].
    #[arg(long, default_value = "fitted", value_parser = world_name)]
    pub name: String,
    /// Print the fit quality of every parameter and what could not be identified; with a
    /// PATH, write it there instead (`-`, or no PATH, prints it).
    #[arg(long, value_name = "PATH", num_args = 0..=1, default_missing_value = "-")]
    pub report: Option<PathBuf>,
    /// The team's own world file: the client's side of the fitted world (load, retry,
    /// breaker, strategy variants, objective, gates, pools, prices, client timeouts) is
    /// copied from it, since no log holds it; the provider's side still comes from the logs.
    /// Where the logs cannot identify a provider setting (a cycle seen for less than a period,
    /// how long storms last when the client stopped calling in them), WORLD's own is kept if
    /// the logs do not contradict it.
    #[arg(long, value_name = "WORLD")]
    pub client: Option<PathBuf>,
    /// The provider's side from the logs alone: settings they cannot identify take the fit's
    /// own guesses, not --client's.
    #[arg(long, requires = "client")]
    pub logs_only: bool,
    /// The logs' format: `auto` (by extension — `.har`, `.jsonl`/`.ndjson` — else by
    /// content), `jsonl` (docs/request-log.md), `har` (HAR 1.2) or `otlp` (OpenTelemetry spans,
    /// OTLP JSON, GenAI conventions).
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    pub format: Format,
    /// No "wrote" lines and no summary.
    #[arg(long)]
    pub quiet: bool,
}

/// The formats `simbench fit` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// By extension, else by content.
    Auto,
    /// The request log (JSON Lines).
    Jsonl,
    /// HAR 1.2.
    Har,
    /// OTLP JSON spans.
    Otlp,
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
    let client = match &args.client {
        None => None,
        Some(path) => match super::load::load_resolved(path, &[], &inputs) {
            Ok((_, toml::Value::Table(doc))) => Some(crate::fit::client::Client {
                name: path.display().to_string(),
                doc,
                prior: !args.logs_only,
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
    // Planned after the client world is read, so that neither output may overwrite it or a
    // base it extends.
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
    let log = match read_logs(&args.logs, args.format) {
        Ok(log) => log,
        Err((code, message)) => {
            errln!("error: {message}");
            return code;
        }
    };
    let fitted = match crate::fit::fit(&log, &args.name, client) {
        Ok(fitted) => fitted,
        Err(why) => {
            errln!("error: cannot fit a world: {why}");
            return super::EXIT_INVALID;
        }
    };
    if let Err(problems) = check_fitted(&fitted.toml, &args.output) {
        super::console::stderr(&problems);
        return super::EXIT_INVALID;
    }
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
            "fitted {} from {} in {}; {} of {} values not identified (--report lists them)\n",
            plural(log.endpoints.len(), "endpoint"),
            plural(log.len(), "request"),
            plural(log.segments.len(), "log"),
            assumed,
            fitted.report.len()
        )
    };
    let quiet = args.quiet && !(args.report.is_some() && report_file.is_none());
    plan.finish(render, summary, quiet)
}

/// Loads the fitted world as `simbench validate` would at its destination (data files a
/// `--client` world names resolve from there): a world that does not load is not written. The
/// fit keeps every value in range by construction; this is what stops a log value no world
/// can describe (times in the wrong unit, a request lasting years) from becoming a file that
/// every later command refuses.
fn check_fitted(toml: &str, output: &std::path::Path) -> Result<(), String> {
    let origin = if output.as_os_str() == "-" {
        "<fitted world>".to_owned()
    } else {
        output.display().to_string()
    };
    if toml.len() > crate::compile::MAX_FILE_BYTES {
        return Err(too_large(toml));
    }
    let inputs = Inputs::default();
    let chain = super::load::Chain::new(output);
    let read = |base: &std::path::Path| chain.read(base);
    let data = |file: &std::path::Path| super::load::read_data(file, &inputs);
    let options = crate::compile::LoadOptions {
        read: &read,
        read_data: &data,
        overrides: &[],
    };
    crate::compile::load_with(&origin, toml.as_bytes(), &options)
        .map(drop)
        .map_err(|errors| {
            let colour = super::console::colour_stderr();
            format!(
                "{}error: the world fitted to these logs does not load, so it was not written\n  \
             help: either a value in the logs is beyond what a world describes (times in \
             milliseconds where seconds are expected, a request lasting days), or a file the \
             --client world names cannot be reached from where the fitted world goes; if \
             neither, this is a bug in `simbench fit`\n",
                errors.render(crate::diagnostics::RenderOptions { colour, width: 100 })
            )
        })
}

/// Why a fitted world over the size every command reads is not written: almost all of it is
/// endpoints (a HAR file makes one of every host the page met).
fn too_large(toml: &str) -> String {
    let shown = |n: usize| crate::report::format::thousands(n as f64, 0);
    let endpoints = toml.lines().filter(|l| *l == "[[endpoints]]").count();
    format!(
        "error: the world fitted to these logs would be {} bytes, over the {} (1 MiB) a world \
         file may hold, so it was not written: it has {} endpoints, about {} bytes each\n  \
         help: fit the logs of fewer endpoints at a time (a world holds the endpoints one client \
         chooses among)\n",
        shown(toml.len()),
        shown(crate::compile::MAX_FILE_BYTES),
        shown(endpoints),
        shown(toml.len() / endpoints.max(1)),
    )
}

/// Reads every log into one [`Log`], one segment per file.
/// Errors carry their exit code: 2 for a file that cannot be read, 1 for a bad log.
/// `--name`: a world's name, one line of visible text.
fn world_name(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err("a world's name cannot be empty".into());
    }
    if text.chars().any(char::is_control) {
        return Err("a world's name is one line without control characters".into());
    }
    Ok(text.to_owned())
}

/// "FILE:LINE:COLUMN: is not UTF-8 text", at the first byte that is not.
fn not_utf8(name: &str, bytes: &[u8], error: std::str::Utf8Error) -> String {
    let good = &bytes[..error.valid_up_to()];
    let line = good.iter().filter(|b| **b == b'\n').count() + 1;
    let line_start = good.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&good[line_start..]).chars().count() + 1;
    let byte = bytes.get(error.valid_up_to()).copied().unwrap_or_default();
    format!(
        "{}:{line}:{column}: is not UTF-8 text (byte 0x{byte:02x}); save the log as UTF-8",
        crate::text::escape(name)
    )
}

/// Reads every log, in the order of their names: the fit is the same whatever order the
/// command line gives them in (a search over several logs can land on another of two close
/// optima otherwise). One file named twice is refused: it would count as two runs.
fn read_logs(paths: &[PathBuf], format: Format) -> Result<Log, (u8, String)> {
    let mut log = Log::default();
    let mut paths: Vec<&PathBuf> = paths.iter().collect();
    paths.sort();
    let mut seen: Vec<(PathBuf, &PathBuf)> = Vec::new();
    for path in &paths {
        let identity = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if let Some((_, first)) = seen.iter().find(|(id, _)| *id == identity) {
            let why = format!(
                "the log {} is given twice (also as {}): each file is one run",
                path.display(),
                first.display()
            );
            return Err((super::EXIT_ERROR, why));
        }
        seen.push((identity, path));
    }
    for path in paths {
        let name = path.display().to_string();
        let unreadable = |e: std::io::Error| {
            let why = format!("cannot read the log {name}: {}", super::io_reason(&e));
            (super::EXIT_ERROR, why)
        };
        // `-` is standard input, as `-o -` is standard output.
        let opened = if path.as_os_str() == "-" {
            std::path::Path::new("/dev/stdin")
        } else {
            path.as_path()
        };
        let file = std::fs::File::open(opened).map_err(unreadable)?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            let why = format!("cannot read the log {name}: it is a folder, not a file");
            return Err((super::EXIT_ERROR, why));
        }
        let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
        let head = std::io::BufRead::fill_buf(&mut reader).map_err(unreadable)?;
        if let Some(tool) = crate::trace_load::compressed(head) {
            let why = format!(
                "the log {name} is {tool}-compressed: decompress it first, e.g. `{tool} -dc \
                 FILE | simbench fit -`"
            );
            return Err((super::EXIT_INVALID, why));
        }
        let format = match format {
            Format::Auto => detect(path, &mut reader).map_err(unreadable)?,
            other => other,
        };
        let located = |e: LogError| {
            (
                super::EXIT_INVALID,
                crate::text::escape(&e.to_string()).into_owned(),
            )
        };
        let mut segment = log.segment(&name);
        // What the content looks like, for a log of the wrong --format that holds nothing.
        let mut looks = None;
        match format {
            Format::Jsonl | Format::Auto => {
                input::read_jsonl(&name, reader, &mut |entry| segment.add(&entry))
                    .map_err(located)?;
            }
            Format::Har | Format::Otlp => {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut reader, &mut bytes).map_err(unreadable)?;
                let text = String::from_utf8(bytes).map_err(|e| {
                    (
                        super::EXIT_INVALID,
                        not_utf8(&name, e.as_bytes(), e.utf8_error()),
                    )
                })?;
                // A byte-order mark (Windows editors write one) is not content.
                let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
                looks = Some(crate::trace_load::LogFormat::detect("", text.as_bytes()));
                let entries = if format == Format::Har {
                    crate::fit::har::read(&name, text)
                } else {
                    crate::fit::otlp::read(&name, text)
                }
                .map_err(|e| {
                    let (code, why) = located(e);
                    match other_format(format, looks) {
                        Some(other) => (code, format!("{why}; it looks like {other}")),
                        None => (code, why),
                    }
                })?;
                for entry in &entries {
                    segment.add(entry);
                }
            }
        }
        if segment.is_empty() {
            let hint = match format {
                Format::Har => "a HAR file needs log.entries",
                Format::Otlp => "no span has gen_ai.* or http.response.status_code attributes",
                _ => "a request log has one JSON object per line (docs/request-log.md)",
            };
            let why = match other_format(format, looks) {
                Some(other) => {
                    format!("the log {name} holds no request: {hint}; it looks like {other}")
                }
                None => format!("the log {name} holds no request: {hint}"),
            };
            return Err((super::EXIT_INVALID, why));
        }
        segment.finish();
    }
    Ok(log)
}

/// What a log read as `format` looks like instead, when its content says another format.
fn other_format(
    format: Format,
    looks: Option<crate::trace_load::LogFormat>,
) -> Option<&'static str> {
    use crate::trace_load::LogFormat;
    Some(match (format, looks?) {
        (Format::Otlp | Format::Har, LogFormat::Jsonl) => {
            "a request log: pass --format jsonl, or leave --format out"
        }
        (Format::Otlp, LogFormat::Har) => "a HAR file: pass --format har, or leave --format out",
        (Format::Har, LogFormat::Otlp) => "OTLP spans: pass --format otlp, or leave --format out",
        _ => return None,
    })
}

/// A log's format from its extension, else from its first bytes (as a trace load tells it).
fn detect(path: &std::path::Path, reader: &mut impl std::io::BufRead) -> std::io::Result<Format> {
    use crate::trace_load::LogFormat;
    let name = path.display().to_string();
    Ok(match LogFormat::detect(&name, reader.fill_buf()?) {
        LogFormat::Jsonl => Format::Jsonl,
        LogFormat::Har => Format::Har,
        LogFormat::Otlp => Format::Otlp,
    })
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
        "never in request logs: the client's side (retry policy and its budget and throttle, \
         breaker, strategy variants, pools, prices, quota units; --client WORLD copies them \
         from your world), reuse caches of logs that do not mark hits (`cache_hit`), rate-limit cuts and revocations, and incidents a single \
         log cannot tell from weather (storms)\n",
    );
    out.lines()
        .map(|line| crate::text::escape(line).into_owned() + "\n")
        .collect()
}
