//! The one way every command loads a scenario file ([`load_file`]): read only a regular file,
//! without blocking, at most one byte past the size limit ([`read_limited`]); follow `extends`
//! through the same reader, refusing a file already read in the chain ([`Chain`]); apply `--set`
//! overrides. There is no `-` for standard input: a scenario is a file. `validate`, `run` and
//! `sweep` all load through here; what is valid is [`crate::compile`]'s decision.

use std::cell::RefCell;
use std::io::Read;
use std::path::Path;

use crate::compile::{self, LoadOptions, MAX_FILE_BYTES, Override};
use crate::diagnostics::ScenarioErrors;
use crate::world::World;

use super::output::{Inputs, Role};

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
    load_resolved(path, overrides, inputs).map(|(world, _)| world)
}

/// [`load_recorded`], also returning the resolved document (see [`compile::load_resolved`]).
pub(super) fn load_resolved(
    path: &Path,
    overrides: &[Override],
    inputs: &Inputs,
) -> Result<(World, toml::Value), LoadError> {
    inputs.record(path, Role::Scenario);
    let bytes = read_limited(path).map_err(LoadError::Unreadable)?;
    let chain = Chain::new(path);
    let read = |base: &Path| {
        inputs.record(base, Role::Base);
        chain.read(base)
    };
    let data = |file: &Path| read_data(file, inputs);
    let options = LoadOptions {
        read: &read,
        read_data: &data,
        overrides,
    };
    compile::load_resolved(&path.display().to_string(), &bytes, &options)
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

/// The largest data file a scenario may name, in bytes (4 GiB): a trace log of tens of
/// millions of requests.
pub(super) const MAX_DATA_BYTES: u64 = 4 << 30;

/// Reads a data file a scenario names (a quantile CSV, a trace log): a regular file, read
/// without blocking, at most [`MAX_DATA_BYTES`].
pub(super) fn read_data(path: &Path, inputs: &Inputs) -> Result<Vec<u8>, String> {
    inputs.record(path, Role::Data);
    let reason = |e: std::io::Error| super::io_reason(&e);
    regular(&std::fs::metadata(path).map_err(reason)?).map_err(reason)?;
    let file = open_without_blocking(path).map_err(reason)?;
    regular(&file.metadata().map_err(reason)?).map_err(reason)?;
    let mut bytes = Vec::new();
    file.take(MAX_DATA_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(reason)?;
    if bytes.len() as u64 > MAX_DATA_BYTES {
        return Err("it is larger than the 4 GiB limit for a data file".into());
    }
    Ok(bytes)
}

/// What makes two paths one file: device and inode on Unix, the canonical path elsewhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum FileId {
    #[cfg(unix)]
    Inode(u64, u64),
    #[cfg(not(unix))]
    Path(std::path::PathBuf),
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

/// One item of a comma-separated list of names (`--algorithms wait,aimd`): `wait,` or
/// `wait,,aimd` has an empty one, which is a typo, not a name.
pub(super) fn list_item(text: &str) -> Result<String, String> {
    match text.trim() {
        "" => Err("an empty item in the list (a comma too many?)".to_owned()),
        name => Ok(name.to_owned()),
    }
}

/// An algorithm's name, parsed as [`list_item`]: the registry's names are offered to shell
/// completion (and hidden from `--help`, which would list them all), but any name passes here,
/// since a world may name variants of its own; the world checks it once loaded.
#[derive(Clone, Debug)]
pub(super) struct AlgorithmName;

impl clap::builder::TypedValueParser for AlgorithmName {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        list_item.parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            crate::client::registry::names().map(clap::builder::PossibleValue::new),
        ))
    }
}
