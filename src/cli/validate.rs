//! `simbench validate`: read scenario files and report every problem in every file. Each file is
//! checked as resolved (its bases merged in, the overrides applied), loaded the one way every
//! command loads one ([`super::load`]).
//!
//! Human output goes to stderr (miette reports, then one summary line); `--format json` writes
//! one JSON document to stdout and nothing else. Both show the first
//! [`crate::diagnostics::MAX_SHOWN`] problems of a file in full and count the rest (`problems`
//! and `omitted` per file in JSON). Exit code: 0 all valid, 1 some file invalid,
//! 2 some file unreadable (missing, a directory, no permission), which wins over 1. Every file is
//! checked even after a failure. This module never decides what is valid; [`crate::compile`]
//! does.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde_json::json;

use crate::compile::Override;
use crate::diagnostics::{RenderOptions, ScenarioErrors};

use super::console;
use super::load::{LoadError, load_file, overrides, parse_set};

/// Arguments of `simbench validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Scenario files to check (a shell glob such as `scenarios/*.toml` works).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output format: `human` (miette reports on stderr) or `json` (one document on stdout).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Override a scenario key before checking, e.g. `retry.max_attempts=3` (repeatable; applied
    /// to every file).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    pub set: Vec<String>,
}

/// Output format of `simbench validate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Graphical reports on stderr, coloured as `--color` says.
    Human,
    /// One JSON document on stdout: `files`, `findings` and `summary`.
    Json,
}

/// Width at which reports wrap; fixed so output does not depend on the terminal.
const REPORT_WIDTH: usize = 100;

/// What happened to one file.
enum Outcome {
    Valid,
    Invalid(Box<ScenarioErrors>),
    Unreadable(String),
}

/// Runs `simbench validate`.
pub fn main(args: &ValidateArgs) -> u8 {
    let overrides = overrides(&args.set);
    let outcomes: Vec<(String, Outcome)> = args
        .files
        .iter()
        .map(|path| (path.display().to_string(), check_file(path, &overrides)))
        .collect();
    let printed = match args.format {
        Format::Human => {
            print_human(&outcomes);
            Ok(())
        }
        Format::Json => print_json(&outcomes),
    };
    console::exit_code(exit_code(&outcomes), printed)
}

fn check_file(path: &Path, overrides: &[Override]) -> Outcome {
    match load_file(path, overrides) {
        Ok(_) => Outcome::Valid,
        Err(LoadError::Unreadable(e)) => Outcome::Unreadable(super::io_reason(&e)),
        Err(LoadError::Invalid(errors)) => Outcome::Invalid(errors),
    }
}

fn exit_code(outcomes: &[(String, Outcome)]) -> u8 {
    let any = |f: fn(&Outcome) -> bool| outcomes.iter().any(|(_, o)| f(o));
    if any(|o| matches!(o, Outcome::Unreadable(_))) {
        super::EXIT_ERROR
    } else if any(|o| matches!(o, Outcome::Invalid(_))) {
        super::EXIT_INVALID
    } else {
        super::EXIT_OK
    }
}

/// `3 files: 2 valid, 1 invalid` (plus `, 1 unreadable` when there are any).
fn summary_line(outcomes: &[(String, Outcome)]) -> String {
    let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|(_, o)| f(o)).count();
    let valid = count(|o| matches!(o, Outcome::Valid));
    let invalid = count(|o| matches!(o, Outcome::Invalid(_)));
    let unreadable = count(|o| matches!(o, Outcome::Unreadable(_)));
    let n = outcomes.len();
    let mut line = format!(
        "{n} file{}: {valid} valid, {invalid} invalid",
        if n == 1 { "" } else { "s" }
    );
    if unreadable > 0 {
        line.push_str(&format!(", {unreadable} unreadable"));
    }
    line
}

fn print_human(outcomes: &[(String, Outcome)]) {
    let stderr = std::io::stderr();
    let colour = console::colour_stderr();
    let options = RenderOptions {
        colour,
        width: REPORT_WIDTH,
    };
    let mut err = stderr.lock();
    for (name, outcome) in outcomes {
        // A closed stderr is not worth a panic; the exit code still tells the story.
        let _ = match outcome {
            Outcome::Valid => Ok(()),
            Outcome::Invalid(errors) => write!(err, "{}", errors.render(options)),
            Outcome::Unreadable(e) => writeln!(
                err,
                "error: cannot read `{}`: {e}\n",
                crate::text::escape(name)
            ),
        };
    }
    let _ = writeln!(err, "{}", summary_line(outcomes));
}

/// Prints the JSON document; the message if standard output cannot be written.
fn print_json(outcomes: &[(String, Outcome)]) -> Result<(), String> {
    let mut files = Vec::new();
    let mut findings = Vec::new();
    let mut problems = 0;
    for (name, outcome) in outcomes {
        let (status, error, count, omitted) = match outcome {
            Outcome::Valid => ("valid", None, 0, 0),
            Outcome::Invalid(errors) => {
                // The first problems in full, as the human report shows them; all are counted.
                for f in errors.shown() {
                    findings.push(json!({
                        "file": f.origin,
                        "line": f.line,
                        "column": f.column,
                        "key_path": f.key_path,
                        "message": f.message,
                        "help": f.help,
                    }));
                }
                ("invalid", None, errors.findings().len(), errors.omitted())
            }
            Outcome::Unreadable(e) => ("unreadable", Some(e.clone()), 0, 0),
        };
        problems += count;
        files.push(json!({
            "file": name,
            "status": status,
            "error": error,
            "problems": count,
            "omitted": omitted,
        }));
    }
    let count = |s: &str| files.iter().filter(|f| f["status"] == s).count();
    let document = json!({
        "files": files,
        "findings": findings,
        "summary": {
            "files": outcomes.len(),
            "valid": count("valid"),
            "invalid": count("invalid"),
            "unreadable": count("unreadable"),
            "problems": problems,
        },
    });
    console::write_stdout(|out| crate::report::json::write_pretty(out, &document))
}
