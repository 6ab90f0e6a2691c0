//! `simbench validate` and `simbench schema`: read scenario files, report every problem in every
//! file, and print the JSON Schema.
//!
//! It also owns the one way the CLI loads a scenario file ([`load_file`]): read only a regular
//! file, without blocking, at most one byte past the size limit ([`read_limited`]); follow
//! `extends` through the same reader, refusing a file already read in the chain ([`Chain`]);
//! apply `--set` overrides. There is no `-` for standard input: a scenario is a file. Each file is checked as resolved (its bases merged in, the overrides applied).
//!
//! Human output goes to stderr (miette reports, then one summary line); `--format json` writes
//! one JSON document to stdout and nothing else. Both show the first
//! [`crate::diagnostics::MAX_SHOWN`] problems of a file in full and count the rest (`problems`
//! and `omitted` per file in JSON). Exit code: 0 all valid, 1 some file invalid,
//! 2 some file unreadable (missing, a directory, no permission), which wins over 1. Every file is
//! checked even after a failure. This module never decides what is valid; [`crate::compile`]
//! does.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde_json::json;

use crate::compile::{self, LoadOptions, MAX_FILE_BYTES, Override};
use crate::diagnostics::{RenderOptions, ScenarioErrors};
use crate::world::World;

use super::console;
use super::output::{Inputs, Role};

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

/// Checks that a `--set` argument has the shape `key=value`; the rest is checked with the file.
pub(super) fn parse_set(text: &str) -> Result<String, String> {
    compile::check_shape(text).map(|()| text.to_owned())
}

/// The `--set` arguments as overrides named `--set #1`, `--set #2`, … in command-line order.
pub(super) fn overrides(set: &[String]) -> Vec<Override> {
    set.iter()
        .enumerate()
        .map(|(i, text)| Override {
            origin: format!("--set #{}", i + 1),
            text: text.clone(),
        })
        .collect()
}

/// Why a scenario file did not load.
pub(super) enum LoadError {
    /// The file itself cannot be read (a base that cannot be read is an invalid scenario).
    Unreadable(std::io::Error),
    /// The resolved scenario is invalid.
    Invalid(Box<ScenarioErrors>),
}

/// Loads the scenario at `path`: its `extends` chain read from disk, then `overrides`.
pub(super) fn load_file(path: &Path, overrides: &[Override]) -> Result<World, LoadError> {
    load_recorded(path, overrides, &Inputs::default())
}

/// [`load_file`], recording in `inputs` every file it reads, so that no output overwrites one.
pub(super) fn load_recorded(
    path: &Path,
    overrides: &[Override],
    inputs: &Inputs,
) -> Result<World, LoadError> {
    inputs.record(path, Role::Scenario);
    let bytes = read_limited(path).map_err(LoadError::Unreadable)?;
    let chain = Chain::new(path);
    let read = |base: &Path| {
        inputs.record(base, Role::Base);
        chain.read(base)
    };
    let options = LoadOptions {
        read: &read,
        overrides,
    };
    compile::load_with(&path.display().to_string(), &bytes, &options)
        .map_err(|errors| LoadError::Invalid(Box::new(errors)))
}

/// The files one load has read, by identity (device and inode), so that a base reached again
/// under another spelling (`sub/../main.toml`, a link) is reported as the cycle it is.
pub(super) struct Chain {
    seen: RefCell<Vec<(FileId, String)>>,
}

impl Chain {
    /// A chain that starts at the scenario file `main`.
    pub(super) fn new(main: &Path) -> Chain {
        let seen = std::fs::metadata(main)
            .ok()
            .and_then(|m| FileId::of(&m, main))
            .map(|id| (id, main.display().to_string()));
        Chain {
            seen: RefCell::new(seen.into_iter().collect()),
        }
    }

    /// Reads a base as [`read_limited`] does, refusing a file already read in this load.
    pub(super) fn read(&self, base: &Path) -> Result<Vec<u8>, String> {
        let (bytes, id) = read_regular(base).map_err(|e| super::io_reason(&e))?;
        let mut seen = self.seen.borrow_mut();
        if let Some((_, first)) = id
            .as_ref()
            .and_then(|id| seen.iter().find(|(s, _)| s == id))
        {
            return Err(format!(
                "it is `{first}` again, which is already in this chain: `extends` makes a cycle"
            ));
        }
        if let Some(id) = id {
            seen.push((id, base.display().to_string()));
        }
        Ok(bytes)
    }
}

/// What makes two paths one file: device and inode on Unix, the canonical path elsewhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum FileId {
    #[cfg(unix)]
    Inode(u64, u64),
    #[cfg(not(unix))]
    Path(PathBuf),
}

impl FileId {
    #[cfg(unix)]
    fn of(meta: &std::fs::Metadata, _: &Path) -> Option<FileId> {
        use std::os::unix::fs::MetadataExt;
        Some(FileId::Inode(meta.dev(), meta.ino()))
    }

    #[cfg(not(unix))]
    fn of(_: &std::fs::Metadata, path: &Path) -> Option<FileId> {
        std::fs::canonicalize(path).ok().map(FileId::Path)
    }
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

/// Reads a scenario file (the one named on the command line or a base it `extends`): only a
/// regular file, and at most one byte past the size limit, so a huge file is rejected without
/// reading it. A folder, a FIFO, a device (`/dev/stdin`, a terminal) or a socket is refused
/// before it is opened (its type is read through symbolic links), and the file is opened
/// without blocking and checked again, so nothing waits for a writer that never comes.
pub(super) fn read_limited(path: &Path) -> std::io::Result<Vec<u8>> {
    read_regular(path).map(|(bytes, _)| bytes)
}

/// [`read_limited`], with the identity of the file read.
fn read_regular(path: &Path) -> std::io::Result<(Vec<u8>, Option<FileId>)> {
    regular(&std::fs::metadata(path)?)?;
    let file = open_without_blocking(path)?;
    let meta = file.metadata()?;
    regular(&meta)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok((bytes, FileId::of(&meta, path)))
}

#[cfg(unix)]
fn open_without_blocking(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_without_blocking(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// Refuses anything but a regular file, saying what it is.
fn regular(meta: &std::fs::Metadata) -> std::io::Result<()> {
    use std::io::{Error, ErrorKind};
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    if kind.is_dir() {
        return Err(Error::from(ErrorKind::IsADirectory));
    }
    Err(Error::new(
        ErrorKind::InvalidInput,
        format!(
            "it is {}, not a regular file (scenarios are read only from regular files)",
            special_kind(&kind)
        ),
    ))
}

#[cfg(unix)]
fn special_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a named pipe (FIFO)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn special_kind(_: &std::fs::FileType) -> &'static str {
    "a special file"
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
    console::write_stdout(|out| {
        serde_json::to_writer_pretty(&mut *out, &document)?;
        out.write_all(b"\n")
    })
}

/// Runs `simbench schema`.
/// Which document's schema to print.
#[derive(Clone, Copy, Debug, Default, clap::ValueEnum)]
pub enum SchemaKind {
    /// Scenario files (`schema/scenario.schema.json`).
    #[default]
    Scenario,
    /// The JSON report of `simbench run --json` (`schema/report.schema.json`).
    Report,
}

/// `simbench schema [scenario|report]`.
#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    /// The document whose schema is printed.
    #[arg(value_enum, default_value_t = SchemaKind::Scenario)]
    pub which: SchemaKind,
}

/// Prints the schema `args` names.
pub fn print_schema(args: &SchemaArgs) -> u8 {
    let text = match args.which {
        SchemaKind::Scenario => crate::schema::scenario_schema_text(),
        SchemaKind::Report => crate::report::json::schema_text(),
    };
    console::exit_code(super::EXIT_OK, console::print(&text))
}
