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
    /// Where to write the starter world [default: world.toml]; `scenario.schema.json` is
    /// written beside it.
    pub path: Option<PathBuf>,
}

/// Prints a built-in world's file.
pub fn show(args: &ShowArgs) -> u8 {
    match BUILTIN.iter().find(|(name, _)| *name == args.name) {
        Some((_, text)) => console::exit_code(super::EXIT_OK, console::print(text)),
        None => {
            let known: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
            errln!(
                "error: no built-in world `{}` (built in: {})",
                crate::text::escape(&args.name),
                known.join(", ")
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
    match write_starter(&path) {
        Ok(schema_written) => {
            errln!("wrote {}", path.display());
            if schema_written {
                errln!("wrote {}", schema_path(&path).display());
            }
            errln!(
                "next: simbench validate {0} && simbench run {0}",
                path.display()
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

/// Writes the world (refusing an existing file) and the schema unless one is already there;
/// returns whether the schema was written.
fn write_starter(path: &Path) -> Result<bool, String> {
    let reason =
        |e: std::io::Error| format!("cannot write {}: {}", path.display(), super::io_reason(&e));
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(reason)?;
    }
    let world = starter_text();
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
    std::io::Write::write_all(&mut file, world.as_bytes()).map_err(reason)?;
    let schema = schema_path(path);
    if schema.exists() {
        return Ok(false);
    }
    std::fs::write(&schema, crate::schema::scenario_schema_text()).map_err(|e| {
        format!(
            "cannot write {}: {}",
            schema.display(),
            super::io_reason(&e)
        )
    })?;
    Ok(true)
}

/// The annotated built-in world, renamed, with its `#:schema` line pointing beside it and an
/// `[objective]` to edit.
fn starter_text() -> String {
    let body = BUILTIN_BURSTY_TOML
        .replacen(
            "#:schema ../schema/scenario.schema.json",
            "#:schema scenario.schema.json\n# A starter world written by `simbench init`: the built-in bursty world with every\n# value written out. Edit it to describe your provider; `simbench validate` checks it.",
            1,
        )
        .replacen("name = \"bursty_provider\"", "name = \"my_world\"", 1);
    format!(
        "{body}\n# What the verdict optimises (these are the defaults): the most jobs done, then the\n# lowest p99 of completed jobs. Add limits such as\n# constraints = [{{ metric = \"refusal_rate\", max = 0.05 }}]\n[objective]\nmetric = \"jobs_done\"\ntie_break = [\"successful_job_latency_p99_ms\"]\nconfidence = 0.95\n"
    )
}
