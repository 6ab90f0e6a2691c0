//! Temporary files and the folders made for them, removed on failure and on SIGINT, SIGTERM or
//! SIGHUP (unless the process was started with that signal ignored, as `nohup` does: then it
//! stays ignored).
//!
//! Every temporary and every folder created for an output is recorded in one registry, under a
//! lock, at the moment it is created; it leaves the registry when it is renamed into place or
//! removed. When the first one is recorded, a thread starts that waits for a terminating signal
//! (signal-hook's safe iterator: the handler itself only wakes the thread). On a signal the thread
//! takes the lock and keeps it, removes whatever is recorded, then ends the process by the same
//! signal (so the shell sees 130 for SIGINT and 143 for SIGTERM, and a script stops as it would
//! for any program). Holding the lock means a temporary is never half-renamed: the target is
//! either the old file or the complete new one.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, Once, PoisonError};

#[cfg(unix)]
use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};
#[cfg(unix)]
use signal_hook::iterator::Signals;

/// What exists on disk only because an output is being written.
#[derive(Default)]
struct Registry {
    files: Vec<PathBuf>,
    /// In creation order, so parents come before their children.
    dirs: Vec<PathBuf>,
}

impl Registry {
    /// Removes every recorded file, then the recorded folders deepest first (a folder that is
    /// not empty stays).
    fn remove_all(&mut self) {
        for file in self.files.drain(..) {
            let _ = std::fs::remove_file(file);
        }
        for dir in self.dirs.drain(..).rev() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    files: Vec::new(),
    dirs: Vec::new(),
});

/// Numbers the temporaries of this process.
static NEXT: AtomicU32 = AtomicU32::new(0);

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts, once, the thread that cleans up on a terminating signal. If the handler cannot be
/// installed, the signal keeps its default action (temporaries may then be left behind).
#[cfg(unix)]
fn watch_signals() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // A signal the process was started with ignored (nohup's SIGHUP) stays ignored.
        let caught = [SIGINT, SIGTERM, SIGHUP]
            .into_iter()
            .filter(|&s| !crate::cli::signals::ignored(s));
        let Ok(mut signals) = Signals::new(caught) else {
            return;
        };
        let _ = std::thread::Builder::new()
            .name("simbench-signals".into())
            .spawn(move || {
                if let Some(signal) = signals.forever().next() {
                    let mut registry = registry();
                    registry.remove_all();
                    let _ = signal_hook::low_level::emulate_default_handler(signal);
                    // Not reached unless the default action could not be restored.
                    std::process::exit(128 + signal);
                }
            });
    });
}

/// Elsewhere, Ctrl-C keeps its default action.
#[cfg(not(unix))]
fn watch_signals() {}

/// A new, empty temporary file in `dir`: `.simbench-<pid>-<n>.tmp`, short whatever the target's
/// name (a 250-character name stays within the file system's limit).
pub(super) fn create_temp(dir: &Path) -> io::Result<(PathBuf, File)> {
    watch_signals();
    let mut registry = registry();
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".simbench-{}-{n}.tmp", std::process::id()));
        match File::options().write(true).create_new(true).open(&path) {
            Ok(file) => {
                registry.files.push(path.clone());
                return Ok((path, file));
            }
            // A leftover of an earlier process that had the same id: take the next number.
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(err),
        }
    }
}

/// Creates `dir` and its missing ancestors, recording each folder it creates.
pub(super) fn create_dirs(dir: &Path) -> io::Result<()> {
    let missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && std::fs::symlink_metadata(a).is_err())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    watch_signals();
    let mut registry = registry();
    for folder in missing.into_iter().rev() {
        match std::fs::create_dir(folder) {
            Ok(()) => registry.dirs.push(folder.to_path_buf()),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// Renames the temporary onto its target and forgets it.
pub(super) fn commit(temp: &Path, target: &Path) -> io::Result<()> {
    let mut registry = registry();
    std::fs::rename(temp, target)?;
    registry.files.retain(|f| f != temp);
    Ok(())
}

/// Removes a temporary that will not be used.
pub(super) fn discard(temp: &Path) {
    let mut registry = registry();
    let _ = std::fs::remove_file(temp);
    registry.files.retain(|f| f != temp);
}

/// Keeps the folders created so far: the outputs in them are in place.
pub(super) fn keep_dirs() {
    registry().dirs.clear();
}

/// Removes the folders created so far that are still empty (after a failure).
pub(super) fn remove_dirs() {
    let mut registry = registry();
    for dir in registry.dirs.drain(..).rev() {
        let _ = std::fs::remove_dir(dir);
    }
}
