//! The command line: argument types, dispatch, exit codes. The only module that reads files,
//! prints and installs the miette hook.
//!
//! Exit codes: 0 success (a comparison in which some runs stalled is still a success: the report
//! shows them); 1 an invalid scenario file; 2 a usage or I/O error, or a comparison in which no
//! run finished (every run stalled or hit the wall-clock budget). Where outputs go, and what is
//! refused, written through or replaced, is [`output`]'s business; standard output and error,
//! [`console`]'s.

// Printing goes through `console`: `println!` ignores write errors and `eprintln!` panics on them.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod console;
mod fit;
mod grid;
mod load;
mod memory;
mod output;
mod run;
mod schema;
#[cfg(feature = "serve")]
mod serve;
mod signals;
mod starter;
mod sweep;
mod trace;
mod validate;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Simulate client strategies against a rate-limited, flaky API and compare them.
#[derive(Debug, Parser)]
#[command(name = "simbench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Colour: `auto` (a terminal that supports it, unless NO_COLOR is set or TERM=dumb;
    /// CLICOLOR_FORCE other than 0 forces it), `always` or `never`.
    #[arg(long, global = true, value_enum, default_value_t = console::ColourArg::Auto)]
    color: console::ColourArg,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check scenario files against the schema and the semantic rules.
    Validate(validate::ValidateArgs),
    /// Print the JSON Schema of scenario files (`simbench schema`) or of another document:
    /// `report`, `sweep`, `grid`, `request-log`.
    Schema(schema::SchemaArgs),
    /// Run algorithms on a world over several seeds.
    Run(Box<run::RunArgs>),
    /// Find the concurrency knee: run one algorithm at increasing concurrency (or arrival
    /// rate) levels and name the highest level that still buys throughput without refusals or
    /// a jump in service p99; or, with `--grid`, run the algorithms at every combination of
    /// some keys' values, on one or more worlds, whole or as one shard of a cluster job.
    Sweep(Box<sweep::SweepArgs>),
    /// Put the parts of a sharded grid sweep back together: the report the sweep would have
    /// written on one machine.
    Merge(grid::MergeArgs),
    /// Learn a world from request logs: write a commented world file whose every value says
    /// what it rests on.
    Fit(fit::FitArgs),
    /// Export one (algorithm, seed) run in the Trace Event Format, for Perfetto and
    /// chrome://tracing: a track per endpoint and per worker, a slice per request.
    Trace(trace::TraceArgs),
    /// Serve the world over HTTP as an OpenAI-compatible API, in real time or faster, for a
    /// real client to be pointed at.
    #[cfg(feature = "serve")]
    Serve(serve::ServeArgs),
    /// List algorithms, metrics, and the scenarios of a folder (or the built-in world).
    List(run::ListArgs),
    /// Print a built-in world's file (`bursty`).
    Show(starter::ShowArgs),
    /// Write a commented starter world (and the schema beside it) to edit.
    Init(starter::InitArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell).
    Completions(CompletionsArgs),
    /// Print the man page (roff) of simbench or of one command, e.g. `simbench man >
    /// simbench.1` or `simbench man run > simbench-run.1`.
    Man(ManArgs),
}

/// `simbench man [COMMAND]`.
#[derive(Debug, clap::Args)]
struct ManArgs {
    /// A command whose own page to print (`run`, `sweep`, …); the main page without it.
    command: Option<String>,
}

/// `simbench completions <SHELL>`.
#[derive(Debug, clap::Args)]
struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// The completion script for `shell`, generated from the same definition as `--help`.
fn completions(args: &CompletionsArgs) -> u8 {
    let mut command = with_completed_values(<Cli as clap::CommandFactory>::command());
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "simbench", &mut script);
    let printed = console::write_stdout(|out| out.write_all(&script));
    console::exit_code(EXIT_OK, printed)
}

/// The command line with the values `show` and `man` take listed, for a shell to complete. The
/// commands themselves check those values with messages of their own, so the lists are given
/// to the completion script only.
fn with_completed_values(command: clap::Command) -> clap::Command {
    use clap::builder::PossibleValuesParser;
    let commands: Vec<String> = command
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    command
        .mut_subcommand("show", |c| {
            c.mut_arg("name", |a| {
                a.value_parser(PossibleValuesParser::new(starter::builtin_names()))
            })
        })
        .mut_subcommand("man", |c| {
            c.mut_arg("command", |a| {
                a.value_parser(PossibleValuesParser::new(commands))
            })
        })
}

/// The man page of `simbench`, or of one of its commands (`simbench-run(1)`), in roff.
fn man_page(args: &ManArgs) -> u8 {
    let mut root = <Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    root.build();
    let page = match &args.command {
        None => root,
        Some(name) => match root.find_subcommand(name) {
            Some(sub) => sub.clone(),
            None => {
                let names: Vec<&str> = root.get_subcommands().map(|c| c.get_name()).collect();
                console::errln!(
                    "error: `{}` is not a simbench command; the commands are {}",
                    crate::text::escape(name),
                    names.join(", ")
                );
                return EXIT_ERROR;
            }
        },
    };
    let mut roff = Vec::new();
    let man = clap_mangen::Man::new(page).source(concat!("simbench ", env!("CARGO_PKG_VERSION")));
    let printed = match man.render(&mut roff) {
        Ok(()) => console::write_stdout(|out| out.write_all(&roff)),
        Err(err) => Err(format!("cannot render the man page: {err}")),
    };
    console::exit_code(EXIT_OK, printed)
}

/// Exit code: success.
pub const EXIT_OK: u8 = 0;
/// Exit code: at least one scenario file is invalid.
pub const EXIT_INVALID: u8 = 1;
/// Exit code: usage or I/O error, or a comparison in which no run finished.
pub const EXIT_ERROR: u8 = 2;
/// A CI gate failed: a threshold or assertion does not hold, or a metric regressed against the
/// baseline.
pub const EXIT_GATE: u8 = 3;

/// Why a file operation failed, in words that do not depend on the platform ("no such file or
/// folder" rather than "No such file or directory (os error 2)"), for messages about paths.
pub(crate) fn io_reason(err: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match err.kind() {
        ErrorKind::NotFound => "no such file or folder".into(),
        ErrorKind::PermissionDenied => "permission denied".into(),
        ErrorKind::IsADirectory => "it is a folder, not a file".into(),
        ErrorKind::NotADirectory => "a part of the path is not a folder".into(),
        ErrorKind::ReadOnlyFilesystem => "the file system is read-only".into(),
        ErrorKind::StorageFull => "no space left on the device".into(),
        ErrorKind::BrokenPipe => "the reader closed the pipe".into(),
        _ => err.to_string(),
    }
}

/// Parses the command line; clap's own help and usage errors take their colour from
/// `--color` too, which clap cannot know before it has parsed it.
///
/// Under `auto` the command line is parsed without colour first; a message (an error, or the
/// help) is then made again in colour when the stream it goes to gets colour, as
/// [`console::colours`] decides it, not as clap would.
fn parse(args: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    use std::io::IsTerminal;
    let attempt = |colour: clap::ColorChoice| {
        let mut command = Cli::command().color(colour);
        let mut matches = command.try_get_matches_from_mut(args.clone())?;
        Cli::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut command))
    };
    let choice = colour_flag(&args).unwrap_or_default();
    let plain = attempt(clap::ColorChoice::Never);
    let Err(err) = &plain else {
        return plain;
    };
    let terminal = if err.use_stderr() {
        std::io::stderr().is_terminal()
    } else {
        std::io::stdout().is_terminal()
    };
    if console::colours(choice, terminal) {
        attempt(clap::ColorChoice::Always)
    } else {
        plain
    }
}

/// The last `--color VALUE` or `--color=VALUE` before a `--`, when its value is one.
fn colour_flag(args: &[std::ffi::OsString]) -> Option<console::ColourArg> {
    use clap::ValueEnum;
    let mut found = None;
    let mut words = args.iter().skip(1).filter_map(|a| a.to_str());
    while let Some(word) = words.next() {
        let value = match word {
            "--" => break,
            "--color" => words.next(),
            _ => word.strip_prefix("--color="),
        };
        if let Some(choice) = value.and_then(|v| console::ColourArg::from_str(v, false).ok()) {
            found = Some(choice);
        }
    }
    found
}

/// Parses the command line and runs the command.
pub fn main() -> ExitCode {
    let cli = match parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(err) => {
            // `--help` and `--version` print to standard output, which is checked like any other.
            let printed = match err.print() {
                Err(e) if !err.use_stderr() && e.kind() != std::io::ErrorKind::BrokenPipe => Err(
                    format!("cannot write to standard output: {}", io_reason(&e)),
                ),
                _ => Ok(()),
            };
            let code = if err.use_stderr() {
                EXIT_ERROR
            } else {
                EXIT_OK
            };
            return ExitCode::from(console::exit_code(code, printed));
        }
    };
    console::set_colour(cli.color);
    let code = match cli.command {
        Command::Validate(args) => validate::main(&args),
        Command::Schema(args) => schema::print_schema(&args),
        Command::Run(args) => run::main(&args),
        Command::Sweep(args) => sweep::main(&args),
        Command::Merge(args) => grid::merge(&args),
        Command::Fit(args) => fit::main(&args),
        Command::Trace(args) => trace::main(&args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => serve::main(&args),
        Command::List(args) => run::list(&args),
        Command::Show(args) => starter::show(&args),
        Command::Init(args) => starter::init(&args),
        Command::Completions(args) => completions(&args),
        Command::Man(args) => man_page(&args),
    };
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::io_reason;
    use std::io::Error;

    #[test]
    fn io_reasons_do_not_depend_on_the_platform() {
        let missing = std::fs::read("/definitely/not/here.toml").unwrap_err();
        assert_eq!(io_reason(&missing), "no such file or folder");
        let folder = std::fs::read_to_string(std::env::temp_dir()).unwrap_err();
        assert_eq!(io_reason(&folder), "it is a folder, not a file");
        let other = Error::other("disk on fire");
        assert_eq!(io_reason(&other), "disk on fire");
    }
}
