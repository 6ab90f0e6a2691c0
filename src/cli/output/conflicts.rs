//! Outputs that would destroy an input or each other, refused before anything runs.
//!
//! Two paths name the same thing when they reach the same file (device and inode, so symbolic
//! and hard links are seen through) or, for files that do not exist yet, the same resolved path
//! (the longest existing ancestor canonicalized, the rest appended as the operating system
//! would). Standard output (`-`) is one thing however often it is named. Character devices
//! such as `/dev/null` never conflict: writing to one destroys nothing.

use std::cell::RefCell;
use std::path::{Component, Path, PathBuf};

use super::target;

/// The files a command reads, recorded by the loader as it reads them.
#[derive(Default)]
pub(crate) struct Inputs {
    files: RefCell<Vec<(PathBuf, Role)>>,
}

/// Why a command reads a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// The scenario named on the command line.
    Scenario,
    /// A file the scenario's `extends` chain names.
    Base,
    /// A request log `simbench fit` reads.
    Log,
    /// A data file a scenario names: a quantile CSV or a trace log.
    Data,
    /// A sweep's part that `simbench merge` reads.
    Part,
    /// The report `simbench run --baseline` compares against: overwritten by a regressed run,
    /// the next comparison would pass.
    Baseline,
}

impl Inputs {
    /// Records that `path` is read as `role`.
    pub(crate) fn record(&self, path: &Path, role: Role) {
        self.files.borrow_mut().push((path.to_path_buf(), role));
    }
}

/// What an output or input is, for comparing them.
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    /// An existing file: device and inode.
    File(u64, u64),
    /// A file that does not exist yet, by its resolved path.
    Path(PathBuf),
    /// Standard output when it is a terminal (or cannot be looked at).
    Stdout,
}

/// Refuses an output that is an input or the same as an earlier output, with a message naming
/// both roles.
pub(super) fn check(outputs: &[(&'static str, &Path)], inputs: &Inputs) -> Result<(), String> {
    let identities: Vec<Option<Identity>> = outputs.iter().map(|(_, p)| output(p)).collect();
    for (i, ((flag, path), id)) in outputs.iter().zip(&identities).enumerate() {
        let Some(id) = id else { continue };
        for (input, role) in inputs.files.borrow().iter() {
            if existing(input).as_ref() == Some(id) {
                let what = match role {
                    Role::Scenario => "the scenario file".to_owned(),
                    Role::Base => format!("a base that the scenario extends ({})", input.display()),
                    Role::Log => "a log being read".to_owned(),
                    Role::Data => format!("a data file the scenario reads ({})", input.display()),
                    Role::Part => "a part being merged".to_owned(),
                    Role::Baseline => "the baseline this run is compared against (write the \
                                       new report elsewhere and replace the baseline once the \
                                       gates pass)"
                        .to_owned(),
                };
                return Err(format!(
                    "{flag} {} is {what}; refusing to overwrite it (nothing was written)",
                    path.display()
                ));
            }
        }
        let earlier = outputs[..i].iter().zip(&identities[..i]);
        if let Some(((other_flag, other), _)) =
            earlier.into_iter().find(|(_, o)| o.as_ref() == Some(id))
        {
            let same = if *id == Identity::Stdout || is_stdout(path) || is_stdout(other) {
                "both write to standard output"
            } else {
                "are the same file; one would destroy the other"
            };
            return Err(format!(
                "{other_flag} {} and {flag} {} {same} (nothing was written)",
                other.display(),
                path.display()
            ));
        }
    }
    Ok(())
}

fn is_stdout(path: &Path) -> bool {
    path == Path::new("-")
}

/// The identity of an output; `None` for a character device.
fn output(path: &Path) -> Option<Identity> {
    if is_stdout(path) {
        // Through /dev/stdout, a pipe or a redirected file has an inode like any other output.
        return match std::fs::metadata("/dev/stdout") {
            Ok(meta) if !is_char_device(&meta) => file_id(&meta),
            _ => Some(Identity::Stdout),
        };
    }
    match std::fs::metadata(path) {
        Ok(meta) if is_char_device(&meta) => None,
        Ok(meta) => file_id(&meta),
        Err(_) => {
            let followed = target::follow_links(path).map_or_else(|_| path.to_path_buf(), |f| f.0);
            Some(Identity::Path(resolve_missing(&followed)))
        }
    }
}

/// The identity of an existing input.
fn existing(path: &Path) -> Option<Identity> {
    std::fs::metadata(path).ok().and_then(|m| file_id(&m))
}

/// A path that does not exist, resolved: its longest existing ancestor canonicalized, then the
/// remaining parts, `..` taking one back (a folder that does not exist is no symbolic link).
fn resolve_missing(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut rest = Vec::new();
    let mut base = absolute.as_path();
    let mut resolved = loop {
        if let Ok(real) = base.canonicalize() {
            break real;
        }
        rest.extend(base.components().next_back());
        match base.parent() {
            Some(parent) => base = parent,
            None => break PathBuf::new(),
        }
    };
    for part in rest.into_iter().rev() {
        match part {
            Component::ParentDir => {
                resolved.pop();
            }
            Component::CurDir => {}
            other => resolved.push(other),
        }
    }
    resolved
}

#[cfg(unix)]
fn file_id(meta: &std::fs::Metadata) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    Some(Identity::File(meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn file_id(_: &std::fs::Metadata) -> Option<Identity> {
    None
}

#[cfg(unix)]
fn is_char_device(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    meta.file_type().is_char_device()
}

#[cfg(not(unix))]
fn is_char_device(_: &std::fs::Metadata) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_paths_resolve_like_the_operating_system() {
        let here = std::env::current_dir().unwrap().canonicalize().unwrap();
        assert_eq!(resolve_missing(Path::new("new/../x")), here.join("x"));
        assert_eq!(
            resolve_missing(Path::new("./a/./b")),
            here.join("a").join("b")
        );
        assert_eq!(resolve_missing(Path::new("new/x")), here.join("new/x"));
    }

    #[test]
    fn two_standard_outputs_and_two_new_files_conflict() {
        let inputs = Inputs::default();
        let dash = Path::new("-");
        let err = check(&[("--json", dash), ("--csv", dash)], &inputs).unwrap_err();
        assert!(err.contains("both write to standard output"), "{err}");
        let a = Path::new("no/such/dir/o.out");
        let b = Path::new("no/such/../such/dir/o.out");
        let err = check(&[("--json", a), ("--csv", b)], &inputs).unwrap_err();
        assert!(err.contains("are the same file"), "{err}");
        assert!(check(&[("--json", a), ("--csv", dash)], &inputs).is_ok());
    }
}
