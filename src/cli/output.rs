//! Where every output of every command goes, and how (`run --json/--markdown/--csv`,
//! `sweep --json/--csv`, and the table).
//!
//! The rules, in the order they apply:
//! - **Refused before anything runs** (exit 2, nothing written): an output that is the scenario
//!   or a base of its `extends` chain, two outputs that are the same file (symbolic and hard
//!   links seen through) or both standard output, a folder, a socket ([`conflicts`],
//!   [`target`]).
//! - **Replaced atomically**: a regular file, or a path that does not exist yet (its folders are
//!   created). The report is streamed into a temporary `.simbench-<pid>-<n>.tmp` in the target's
//!   folder, created before the runs start (so an unwritable folder fails at once), and renamed
//!   onto the target only when every output and the table were written. A symbolic link to a
//!   regular file has its final target replaced; the link stays. The file keeps its permissions.
//! - **Written through**, as `cat > PATH` would: a FIFO, a device, and anything under `/dev/`
//!   or `/proc/` (`/dev/stdout`, `/dev/fd/N`, process substitution). Never replaced by a file.
//! - **Standard output** (`-`): streamed, then the table unless `--quiet`.
//! - **On failure** (any write error, or a command that fails after its runs), every temporary
//!   and every folder made for them is removed: existing files keep their old contents. A
//!   closed pipe is not a failure ([`super::console`]). On SIGINT, SIGTERM or SIGHUP the same
//!   cleanup runs before the process ends by that signal ([`staging`]).

mod conflicts;
mod staging;
mod target;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

pub(crate) use conflicts::{Inputs, Role};

use super::console::{self, errln};
use super::io_reason;

/// One output a command was asked for: the flag that named it, where it goes, and which
/// rendering (`K`, the command's own list) belongs there.
pub(crate) struct Request<K> {
    pub flag: &'static str,
    pub path: PathBuf,
    pub kind: K,
}

impl<K> Request<K> {
    /// The outputs a command's flags name: `(flag, path if given, rendering)` in flag order.
    pub(crate) fn named<'a>(
        flags: impl IntoIterator<Item = (&'static str, Option<&'a PathBuf>, K)>,
    ) -> Vec<Self> {
        flags
            .into_iter()
            .filter_map(|(flag, path, kind)| {
                path.map(|path| Request {
                    flag,
                    path: path.clone(),
                    kind,
                })
            })
            .collect()
    }
}

/// The outputs of one command, checked and staged before its runs start.
pub(crate) struct Plan<K> {
    slots: Vec<Slot<K>>,
}

struct Slot<K> {
    /// The path as the user typed it, for messages.
    path: PathBuf,
    kind: K,
    dest: Dest,
    /// Written by [`Plan::stream`] while the command ran: [`Plan::finish`] leaves it be.
    streamed: bool,
}

enum Dest {
    Stdout,
    Through,
    Replace(Staged),
}

/// A temporary waiting to become `target`; removed when dropped unless committed.
struct Staged {
    temp: PathBuf,
    target: PathBuf,
    file: Option<File>,
}

impl Drop for Staged {
    fn drop(&mut self) {
        if self.file.is_some() || self.temp.exists() {
            self.file = None;
            staging::discard(&self.temp);
        }
    }
}

impl<K> Drop for Plan<K> {
    fn drop(&mut self) {
        // Temporaries first (Staged's own drop), then the folders made for them.
        self.slots.clear();
        staging::remove_dirs();
    }
}

impl<K: Copy> Plan<K> {
    /// Checks the requested outputs against each other and against the files the command read,
    /// and stages a temporary for every file to replace. The message says why not.
    pub(crate) fn prepare(requests: Vec<Request<K>>, inputs: &Inputs) -> Result<Plan<K>, String> {
        let named: Vec<(&'static str, &Path)> = requests
            .iter()
            .map(|r| (r.flag, r.path.as_path()))
            .collect();
        conflicts::check(&named, inputs)?;
        let mut plan = Plan { slots: Vec::new() };
        for request in requests {
            let dest = destination(&request.path)
                .map_err(|why| format!("cannot write {}: {why}", request.path.display()))?;
            plan.slots.push(Slot {
                path: request.path,
                kind: request.kind,
                dest,
                streamed: false,
            });
        }
        Ok(plan)
    }

    /// Checks the requested outputs as [`Plan::prepare`] does, but creates nothing (no folder,
    /// no temporary): what a dry run can promise. A folder that exists but cannot be written to
    /// is found only when the outputs are staged.
    pub(crate) fn check(requests: &[Request<K>], inputs: &Inputs) -> Result<(), String> {
        let named: Vec<(&'static str, &Path)> = requests
            .iter()
            .map(|r| (r.flag, r.path.as_path()))
            .collect();
        conflicts::check(&named, inputs)?;
        for request in requests.iter().filter(|r| r.path != Path::new("-")) {
            let fail = |why: String| format!("cannot write {}: {why}", request.path.display());
            if let target::Kind::Replace(target) = target::classify(&request.path).map_err(fail)? {
                folder_possible(&target).map_err(fail)?;
            }
        }
        Ok(())
    }

    /// Writes the output of `kind` now, while the command still runs (`run --request-log`
    /// streams a run into it), under the same rules: into its temporary, which
    /// [`Plan::finish`] renames with the others; through; or to standard output. `write` is
    /// called once whatever happens (with a sink if standard output is already closed), since
    /// it does the command's work too. On failure the plan still removes its temporaries when
    /// dropped.
    pub(crate) fn stream(
        &mut self,
        kind: K,
        write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<(), String>
    where
        K: PartialEq,
    {
        let slot = self
            .slots
            .iter_mut()
            .find(|s| s.kind == kind)
            .expect("the streamed output is one of the plan's");
        slot.streamed = true;
        let failed =
            |err: io::Error| format!("cannot write {}: {}", slot.path.display(), io_reason(&err));
        match &mut slot.dest {
            Dest::Stdout => {
                let mut write = Some(write);
                let printed = console::write_stdout(|out| write.take().expect("once")(out));
                if let Some(write) = write.take() {
                    write(&mut io::sink()).map_err(failed)?;
                }
                printed
            }
            Dest::Through => write_through(&slot.path, write).map_err(failed),
            Dest::Replace(staged) => {
                let file = staged.file.take().expect("a staged file is written once");
                let mut out = BufWriter::with_capacity(64 * 1024, file);
                write(&mut out).map_err(failed)?;
                let file = out.into_inner().map_err(|e| failed(e.into_error()))?;
                file.sync_all().map_err(failed)
            }
        }
    }

    /// Whether no output was requested.
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Writes every output with `render`, prints the table (unless `quiet` and some output was
    /// requested), then renames the temporaries into place; returns the exit code. On any
    /// failure nothing is renamed and the message ends in exit 2.
    pub(crate) fn finish(
        mut self,
        render: impl Fn(K, &mut dyn Write) -> io::Result<()>,
        table: impl FnOnce() -> String,
        quiet: bool,
    ) -> u8 {
        let mut failure = self.write_files(&render).err();
        for slot in self.stdout_slots() {
            if failure.is_none() {
                failure = console::write_stdout(|out| render(slot.kind, out)).err();
            }
        }
        if self.writes_stdout() {
            // Standard output carries that format alone, so a pipe gets clean data.
            if !quiet {
                console::stderr(&table());
            }
        } else if !quiet || self.is_empty() {
            let printed = console::print(&table());
            failure = failure.or(printed.err());
        }
        if failure.is_none() {
            failure = self.commit().err();
        }
        match failure {
            Some(message) => {
                errln!("error: {message}");
                super::EXIT_ERROR
            }
            None => {
                if !quiet {
                    for slot in self
                        .slots
                        .iter()
                        .filter(|s| !matches!(s.dest, Dest::Stdout))
                    {
                        errln!("wrote {}", slot.path.display());
                    }
                }
                super::EXIT_OK
            }
        }
    }

    /// For a command that failed after its runs: replaces and writes into no file (dropping the
    /// plan removes the temporaries), but still prints what goes to standard output — the
    /// outputs on `-` and the table, as [`Plan::finish`] would — since they say why it failed.
    pub(crate) fn abandon(
        self,
        render: impl Fn(K, &mut dyn Write) -> io::Result<()>,
        table: impl FnOnce() -> String,
        quiet: bool,
    ) {
        let mut printed = Ok(());
        for slot in self.stdout_slots() {
            printed = printed.and_then(|()| console::write_stdout(|out| render(slot.kind, out)));
        }
        if self.writes_stdout() {
            if !quiet {
                console::stderr(&table());
            }
        } else if !quiet || self.is_empty() {
            printed = printed.and_then(|()| console::print(&table()));
        }
        if let Err(message) = printed {
            errln!("error: {message}");
        }
    }

    /// The outputs still to write to standard output.
    fn stdout_slots(&self) -> impl Iterator<Item = &Slot<K>> {
        self.slots
            .iter()
            .filter(|s| matches!(s.dest, Dest::Stdout) && !s.streamed)
    }

    /// Whether some output goes to standard output (`-`).
    fn writes_stdout(&self) -> bool {
        self.slots.iter().any(|s| matches!(s.dest, Dest::Stdout))
    }

    /// Streams the replaced files into their temporaries, then the written-through ones.
    fn write_files(
        &mut self,
        render: &impl Fn(K, &mut dyn Write) -> io::Result<()>,
    ) -> Result<(), String> {
        for slot in &mut self.slots {
            let kind = slot.kind;
            let failed = |err: io::Error| {
                format!("cannot write {}: {}", slot.path.display(), io_reason(&err))
            };
            if let Dest::Replace(staged) = &mut slot.dest {
                let Some(file) = staged.file.take() else {
                    continue;
                };
                let mut out = BufWriter::with_capacity(64 * 1024, file);
                render(kind, &mut out).map_err(failed)?;
                let file = out.into_inner().map_err(|e| failed(e.into_error()))?;
                file.sync_all().map_err(failed)?;
            }
        }
        for slot in self
            .slots
            .iter()
            .filter(|s| matches!(s.dest, Dest::Through) && !s.streamed)
        {
            write_through(&slot.path, |out| render(slot.kind, out)).map_err(|err| {
                format!("cannot write {}: {}", slot.path.display(), io_reason(&err))
            })?;
        }
        Ok(())
    }

    /// Renames every temporary onto its target.
    fn commit(&mut self) -> Result<(), String> {
        for slot in &mut self.slots {
            if let Dest::Replace(staged) = &mut slot.dest {
                staging::commit(&staged.temp, &staged.target).map_err(|err| {
                    format!("cannot write {}: {}", slot.path.display(), io_reason(&err))
                })?;
            }
        }
        staging::keep_dirs();
        Ok(())
    }
}

/// Where `path` goes, staging the temporary of a file to replace.
fn destination(path: &Path) -> Result<Dest, String> {
    if path == Path::new("-") {
        return Ok(Dest::Stdout);
    }
    match target::classify(path)? {
        target::Kind::Through => Ok(Dest::Through),
        target::Kind::Replace(target) => stage(target).map(Dest::Replace),
    }
}

/// Opens an output written while the command runs (`serve --request-log`), under the same
/// refusals as a staged one: not an input, not a folder. Missing folders are created. It is
/// written in place, not through a temporary, so the lines written survive a kill.
pub(crate) fn open_streamed(
    flag: &'static str,
    path: &Path,
    inputs: &Inputs,
) -> Result<File, String> {
    conflicts::check(&[(flag, path)], inputs)?;
    let fail = |why: String| format!("cannot write {flag} {}: {why}", path.display());
    let target = match target::classify(path).map_err(fail)? {
        target::Kind::Through => path.to_path_buf(),
        target::Kind::Replace(target) => {
            folder_possible(&target).map_err(fail)?;
            if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| fail(io_reason(&e)))?;
            }
            target
        }
    };
    File::create(&target).map_err(|e| fail(io_reason(&e)))
}

/// Whether the folder of `target` exists or could be made: its nearest existing ancestor is a
/// folder.
fn folder_possible(target: &Path) -> Result<(), String> {
    for dir in target.ancestors().skip(1) {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        match std::fs::metadata(dir) {
            Ok(meta) if meta.is_dir() => return Ok(()),
            Ok(_) => return Err(io_reason(&io::Error::from(io::ErrorKind::NotADirectory))),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(io_reason(&err)),
        }
    }
    Ok(())
}

/// Creates the target's folder if needed and an empty temporary in it, with the permissions of
/// the file it will replace.
fn stage(target: PathBuf) -> Result<Staged, String> {
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    staging::create_dirs(&dir)
        .map_err(|err| format!("cannot create its folder: {}", io_reason(&err)))?;
    let (temp, file) = staging::create_temp(&dir).map_err(|err| io_reason(&err))?;
    let staged = Staged {
        temp,
        target,
        file: Some(file),
    };
    if let Ok(meta) = std::fs::metadata(&staged.target) {
        std::fs::set_permissions(&staged.temp, meta.permissions())
            .map_err(|err| io_reason(&err))?;
    }
    Ok(staged)
}

/// Opens `path` for writing, truncating it as `cat > PATH` would, and streams into it.
fn write_through(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let file = File::options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    let mut out = BufWriter::with_capacity(64 * 1024, file);
    match write(&mut out).and_then(|()| out.flush()) {
        // The reader stopped reading, as `head` does: not an error (see `console`).
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => {
            let _ = out.into_parts();
            Ok(())
        }
        result => result,
    }
}
