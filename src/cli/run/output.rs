//! Output files that are either complete or absent.
//!
//! Owns writing `--json`, `--markdown` and `--csv`: parent folders are created, every text goes
//! to a temporary file in its target's folder first, and only when all of them are written are
//! they renamed into place. On any failure the temporaries and any folders created for them are
//! removed, so an interrupted or failed write never leaves a truncated report behind. `-` means
//! standard output and is printed by the caller.

use crate::cli::io_reason;
use std::path::{Path, PathBuf};

/// One requested output.
pub struct Output {
    /// Where it goes (`-` for standard output).
    pub path: PathBuf,
    /// What to write.
    pub text: String,
}

impl Output {
    pub fn new(path: &Path, text: String) -> Output {
        Output {
            path: path.to_path_buf(),
            text,
        }
    }

    pub fn is_stdout(&self) -> bool {
        self.path == Path::new("-")
    }
}

/// What to undo if a later step fails.
#[derive(Default)]
struct Staged {
    temporaries: Vec<(PathBuf, PathBuf)>,
    created_dirs: Vec<PathBuf>,
}

impl Staged {
    fn undo(&self) {
        for (tmp, _) in &self.temporaries {
            let _ = std::fs::remove_file(tmp);
        }
        // Deepest first; remove_dir leaves any folder that is not empty.
        for dir in self.created_dirs.iter().rev() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Writes every file output atomically; returns the paths written, or a message naming the
/// first failure (after which nothing new is left on disk).
pub fn write_all(outputs: &[Output]) -> Result<Vec<PathBuf>, String> {
    let mut staged = Staged::default();
    for (i, out) in outputs.iter().enumerate().filter(|(_, o)| !o.is_stdout()) {
        if let Err(message) = stage(&mut staged, i, out) {
            staged.undo();
            return Err(message);
        }
    }
    for k in 0..staged.temporaries.len() {
        let (tmp, path) = &staged.temporaries[k];
        if let Err(err) = std::fs::rename(tmp, path) {
            let message = format!("cannot write {}: {}", path.display(), io_reason(&err));
            staged.temporaries.drain(..k);
            staged.undo();
            return Err(message);
        }
    }
    Ok(staged.temporaries.into_iter().map(|(_, p)| p).collect())
}

fn stage(staged: &mut Staged, index: usize, out: &Output) -> Result<(), String> {
    let path = &out.path;
    let Some(name) = path.file_name() else {
        return Err(format!("cannot write {}: not a file name", path.display()));
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    create_dirs(staged, &dir).map_err(|err| {
        let reason = io_reason(&err);
        format!("cannot create the folder of {}: {reason}", path.display())
    })?;
    let tmp = dir.join(format!(
        ".{}.{}-{index}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    staged.temporaries.push((tmp.clone(), path.clone()));
    std::fs::write(&tmp, &out.text)
        .map_err(|err| format!("cannot write {}: {}", path.display(), io_reason(&err)))
}

/// Creates `dir` and its missing ancestors, remembering which ones were created.
fn create_dirs(staged: &mut Staged, dir: &Path) -> std::io::Result<()> {
    let missing: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
        .map(Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(dir)?;
    staged.created_dirs.extend(missing.into_iter().rev());
    Ok(())
}

/// Writes the file outputs, prints the standard-output ones, then the table (unless `quiet`
/// and some output was asked for), then "wrote PATH" lines; returns the exit code.
pub fn emit(outputs: &[Output], table: impl FnOnce() -> String, quiet: bool) -> u8 {
    use std::io::Write;
    let written = write_all(outputs);
    let mut stdout = std::io::stdout().lock();
    for out in outputs.iter().filter(|o| o.is_stdout()) {
        let _ = stdout.write_all(out.text.as_bytes());
    }
    if !quiet || outputs.is_empty() {
        let _ = stdout.write_all(table().as_bytes());
    }
    let _ = stdout.flush();
    match written {
        Ok(paths) => {
            if !quiet {
                paths
                    .iter()
                    .for_each(|p| eprintln!("wrote {}", p.display()));
            }
            crate::cli::EXIT_OK
        }
        Err(message) => {
            eprintln!("error: {message}");
            crate::cli::EXIT_ERROR
        }
    }
}
