//! What a path names, seen as an output: a file to replace, something to write through, or
//! something simbench refuses to write to.
//!
//! Only regular files are replaced. A FIFO, a character or block device, and anything reached
//! through `/dev/` or `/proc/` (`/dev/stdout`, `/dev/fd/N`, a shell's process substitution
//! `>(…)`) is opened and written as `cat > PATH` would. A symbolic link is followed to its final
//! target: a regular file there is replaced, the link stays a link.

use std::io;
use std::path::{Component, Path, PathBuf};

/// At most this many symbolic links are followed (Linux's own limit), then it is a loop.
const MAX_LINKS: usize = 40;

/// How an output path is written.
#[derive(Debug, PartialEq)]
pub(super) enum Kind {
    /// A regular file, or nothing yet: write a temporary beside this final target (the path
    /// with every symbolic link followed) and rename it into place.
    Replace(PathBuf),
    /// Open the path as given, truncating, and stream into it.
    Through,
}

/// How `path` is written, or why it cannot be.
pub(super) fn classify(path: &Path) -> Result<Kind, String> {
    if path.file_name().is_none() {
        return Err("not a file name".into());
    }
    // `Path` drops a trailing `/`, but the system does not: `out/` names a folder.
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        return Err(format!(
            "the path ends in `/`, so it names a folder; name a file in it, e.g. `{}report.json`",
            crate::text::escape(&path.display().to_string())
        ));
    }
    let (target, special) = follow_links(path).map_err(|e| reason(&e))?;
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(super::super::io_reason(&io::Error::from(
            io::ErrorKind::IsADirectory,
        ))),
        Ok(meta) if is_socket(&meta) => {
            Err("it is a socket; outputs go to files, FIFOs and devices".into())
        }
        Ok(meta) if meta.is_file() && !special => Ok(Kind::Replace(target)),
        Ok(_) => Ok(Kind::Through),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            if special {
                Ok(Kind::Through)
            } else {
                Ok(Kind::Replace(target))
            }
        }
        Err(err) => Err(reason(&err)),
    }
}

/// The path with its final symbolic links followed (parents are left to the operating system),
/// and whether any step went through `/dev/` or `/proc/`.
pub(super) fn follow_links(path: &Path) -> io::Result<(PathBuf, bool)> {
    let mut current = path.to_path_buf();
    let mut special = is_special(&current);
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(parent) if link.is_relative() => parent.join(link),
                    _ => link,
                };
                special |= is_special(&current);
            }
            Ok(_) => return Ok((current, special)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok((current, special)),
            Err(err) => return Err(err),
        }
    }
    Err(io::Error::other("a loop of symbolic links"))
}

/// Whether the path lies under `/dev/` or `/proc/`, where names stand for devices and open
/// file descriptors rather than files.
fn is_special(path: &Path) -> bool {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut parts = absolute.components();
    matches!(parts.next(), Some(Component::RootDir))
        && matches!(parts.next(), Some(Component::Normal(top)) if top == "dev" || top == "proc")
}

#[cfg(unix)]
fn is_socket(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    meta.file_type().is_socket()
}

#[cfg(not(unix))]
fn is_socket(_: &std::fs::Metadata) -> bool {
    false
}

fn reason(err: &io::Error) -> String {
    super::super::io_reason(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dev_and_proc_are_special() {
        assert!(is_special(Path::new("/dev/stdout")));
        assert!(is_special(Path::new("/proc/self/fd/1")));
        assert!(!is_special(Path::new("/devices/x")));
        assert!(!is_special(Path::new("out/dev/x")));
    }

    #[test]
    fn a_missing_file_is_replaced_and_a_folder_refused() {
        let dir = std::env::temp_dir();
        let new = dir.join(format!("simbench-target-{}.json", std::process::id()));
        assert_eq!(classify(&new), Ok(Kind::Replace(new.clone())));
        assert!(classify(&dir).unwrap_err().contains("folder"));
        assert!(classify(Path::new("..")).is_err());
        let slash = classify(Path::new("no-such-folder/")).unwrap_err();
        assert!(
            slash.contains("ends in `/`") && slash.contains("`no-such-folder/report.json`"),
            "{slash}"
        );
    }
}
