//! `simbench show` and `simbench init`: a user who installed only the binary gets the built-in
//! world to read, and a commented starter world (with the schema beside it, so the file's
//! `#:schema` line works outside a checkout) to edit.

use std::path::{Path, PathBuf};

use clap::Args;

use super::console::{self, errln};
use crate::compile::BUILTIN_BURSTY_TOML;

/// The built-in worlds, by the name `show` takes.
const BUILTIN: &[(&str, &str)] = &[("bursty", BUILTIN_BURSTY_TOML)];

/// Arguments of `simbench show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A built-in world: `bursty` (the one `simbench run` runs without a file).
    pub name: String,
}

/// Arguments of `simbench init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where to write the starter world [default: world.toml], named for the file (`name =
    /// "world"`); `scenario.schema.json` is written beside it. `-` prints the world on standard
    /// output (no schema), named `my_world`.
    pub path: Option<PathBuf>,
}

/// The names `simbench show` knows.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN.iter().map(|(name, _)| *name).collect()
}

/// Prints a built-in world's file.
pub fn show(args: &ShowArgs) -> u8 {
    match BUILTIN.iter().find(|(name, _)| *name == args.name) {
        Some((_, text)) => console::exit_code(super::EXIT_OK, console::print(text)),
        None => {
            errln!(
                "error: no built-in world `{}` (built in: {})",
                crate::text::escape(&args.name),
                builtin_names().join(", ")
            );
            super::EXIT_ERROR
        }
    }
}

/// Writes the starter world and the schema beside it; never overwrites a world.
pub fn init(args: &InitArgs) -> u8 {
    let path = args
        .path
        .clone()
        .unwrap_or_else(|| PathBuf::from("world.toml"));
    // `-` is standard output, as everywhere else: the world alone (the schema has no place
    // beside it there).
    if path.as_os_str() == "-" {
        return console::exit_code(super::EXIT_OK, console::print(&starter_text(&path)));
    }
    match write_starter(&path) {
        Ok(schema) => {
            errln!("wrote {}", path.display());
            let beside = schema_path(&path);
            match schema {
                Schema::Written => errln!("wrote {}", beside.display()),
                Schema::Same => {}
                Schema::Differs => errln!(
                    "warning: kept {0}, which is not this simbench's schema: editors check the \
                     world against it (`simbench schema > {0}` replaces it)",
                    beside.display()
                ),
            }
            let shown = path.to_string_lossy();
            errln!(
                "next: simbench validate {0} && simbench run {0}",
                crate::text::shell_word(&shown)
            );
            super::EXIT_OK
        }
        Err(message) => {
            errln!("error: {message}");
            super::EXIT_ERROR
        }
    }
}

fn schema_path(world: &Path) -> PathBuf {
    world.with_file_name("scenario.schema.json")
}

/// What became of the schema beside the world.
enum Schema {
    /// It was not there and is now.
    Written,
    /// This simbench's schema was already there.
    Same,
    /// Another file was there and is kept.
    Differs,
}

/// Writes the world (refusing an existing file) and the schema unless a file is already
/// there; a world whose schema cannot be written is removed again, so a rerun starts clean.
fn write_starter(path: &Path) -> Result<Schema, String> {
    // The schema goes beside the world under its own name: a world of that name would be
    // overwritten by it (case-insensitively, as some file systems compare names).
    let named_like_schema = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.eq_ignore_ascii_case("scenario.schema.json"));
    if named_like_schema {
        return Err(format!(
            "{} is where the schema is written beside the world; name the world otherwise, \
             e.g. world.toml (nothing was written)",
            path.display()
        ));
    }
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        return Err(format!(
            "the path ends in `/`, so it names a folder; name a file in it, e.g. \
             `{}world.toml` (nothing was written)",
            path.display()
        ));
    }
    let reason =
        |e: std::io::Error| format!("cannot write {}: {}", path.display(), super::io_reason(&e));
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        // A file where a folder must go is "already there" to the system.
        std::fs::create_dir_all(parent).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => format!(
                "cannot write {}: a part of the path is not a folder",
                path.display()
            ),
            _ => reason(e),
        })?;
    }
    let schema = schema_path(path);
    let text = crate::schema::scenario_schema_text();
    // A link to nowhere is there too: writing through it would fail after the world.
    let existing = match std::fs::symlink_metadata(&schema) {
        Ok(_) => Some(std::fs::read_to_string(&schema).map_err(|e| {
            format!(
                "cannot read {} (the schema beside the world): {}",
                schema.display(),
                super::io_reason(&e)
            )
        })?),
        Err(_) => None,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => format!(
                "{} already exists; name another path (simbench init PATH) — nothing was written",
                path.display()
            ),
            _ => reason(e),
        })?;
    let written = std::io::Write::write_all(&mut file, starter_text(path).as_bytes())
        .map_err(reason)
        .and_then(|()| match &existing {
            Some(old) if *old == text => Ok(Schema::Same),
            Some(_) => Ok(Schema::Differs),
            None => std::fs::write(&schema, &text)
                .map(|()| Schema::Written)
                .map_err(|e| {
                    format!(
                        "cannot write {}: {}; nothing was written",
                        schema.display(),
                        super::io_reason(&e)
                    )
                }),
        });
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written
}

/// The world's `name` for a starter written to `path`: the file's stem (`eu_tier2.toml` is
/// `eu_tier2`), so two starters in one folder are told apart in `list` and in reports;
/// `my_world` on standard output or for a stem that is not text.
fn starter_name(path: &Path) -> String {
    match path.file_stem().and_then(|s| s.to_str()) {
        Some(stem) if path.as_os_str() != "-" && !stem.trim().is_empty() => stem.to_owned(),
        _ => "my_world".to_owned(),
    }
}

/// The annotated built-in world, named for `path` ([`starter_name`]), with its `#:schema` line
/// pointing beside it and an `[objective]` to edit.
fn starter_text(path: &Path) -> String {
    // A TOML basic string, quoted and escaped as the format wants.
    let name = toml::Value::String(starter_name(path)).to_string();
    // The built-in file's own header speaks of the file in the repository; the copy gets its own.
    let rest: String = BUILTIN_BURSTY_TOML
        .lines()
        .skip_while(|line| line.starts_with('#'))
        .map(|line| format!("{line}\n"))
        .collect();
    let body = format!(
        "#:schema scenario.schema.json\n# A starter world written by `simbench init`: the built-in bursty world (the\n# reference's `bursty_provider`, pyattacker 0.3.3) with every value written out. Edit it to\n# describe your provider: `simbench validate FILE` checks it, `simbench run FILE` runs it.\n{}",
        rest.replacen("name = \"bursty_provider\"", &format!("name = {name}"), 1)
    );
    format!(
        "{body}\n# What the verdict optimises (these are the defaults): the most jobs done, then the\n# lowest p99 of completed jobs. Add limits such as\n# constraints = [{{ metric = \"refusal_rate\", max = 0.05 }}]\n[objective]\nmetric = \"jobs_done\"\ntie_break = [\"successful_job_latency_p99_ms\"]\nconfidence = 0.95\n"
    )
}
