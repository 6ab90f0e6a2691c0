//! Standard output and standard error for every command.
//!
//! Every write to standard output is checked. A reader that stops reading (a closed pipe, as in
//! `simbench list | head -1`) is not an error: Rust ignores SIGPIPE, so the write fails with
//! `BrokenPipe`; from then on nothing more is written to standard output and the command ends
//! with the exit code it would have had. Any other failure (a full disk, `/dev/full`) is an
//! error the caller turns into exit 2 with a message. Standard error is best effort:
//! `eprintln!` panics when it cannot write, so messages go through [`errln!`], which never does.

use std::ffi::OsString;
use std::io::{self, ErrorKind, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// `--color`: whether output may be coloured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColourArg {
    /// On a terminal that supports colour, unless `NO_COLOR` is set or `TERM=dumb`
    /// (`CLICOLOR_FORCE` other than `0` forces it, `CLICOLOR=0` turns it off).
    #[default]
    Auto,
    /// Always, even into a file or pipe.
    Always,
    /// Never.
    Never,
}

/// The `--color` choice, recorded once at start: 0 auto, 1 always, 2 never.
static COLOUR: AtomicU8 = AtomicU8::new(0);

/// Records the `--color` choice for [`colour_stdout`] and [`colour_stderr`] (once, at start).
pub(crate) fn set_colour(choice: ColourArg) {
    COLOUR.store(choice as u8, Ordering::Relaxed);
}

/// The recorded `--color` choice.
fn colour_choice() -> ColourArg {
    match COLOUR.load(Ordering::Relaxed) {
        1 => ColourArg::Always,
        2 => ColourArg::Never,
        _ => ColourArg::Auto,
    }
}

/// Whether text for standard output may carry colour (the `--color` choice and, under `auto`,
/// the terminal and the environment's conventions).
pub(crate) fn colour_stdout() -> bool {
    colours(colour_choice(), io::stdout().is_terminal())
}

/// Whether text for standard error may carry colour (see [`colour_stdout`]).
pub(crate) fn colour_stderr() -> bool {
    colours(colour_choice(), io::stderr().is_terminal())
}

/// Whether a stream (a terminal or not) gets colour under `choice`.
pub(crate) fn colours(choice: ColourArg, terminal: bool) -> bool {
    match choice {
        ColourArg::Always => true,
        ColourArg::Never => false,
        ColourArg::Auto => auto_colour(terminal, |name| std::env::var_os(name)),
    }
}

/// `auto` for one stream, by the conventions of no-color.org and bixense.com/clicolors:
/// a non-empty `NO_COLOR` turns colour off; `CLICOLOR_FORCE` other than empty or `0` turns it
/// on; `CLICOLOR=0` off; otherwise a terminal gets colour unless `TERM` is unset or `dumb`
/// (`CLICOLOR` or `CI` set vouch for it). Written out here because the crates clap uses read
/// `CLICOLOR_FORCE=0` as a force, which the convention says it is not.
fn auto_colour(terminal: bool, var: impl Fn(&str) -> Option<OsString>) -> bool {
    let value = |name: &str| var(name).filter(|v| !v.is_empty());
    if value("NO_COLOR").is_some() {
        return false;
    }
    if value("CLICOLOR_FORCE").is_some_and(|v| v != "0") {
        return true;
    }
    let clicolor = var("CLICOLOR");
    if clicolor.as_deref().is_some_and(|v| v == "0") {
        return false;
    }
    let term = var("TERM").is_some_and(|t| t != "dumb");
    terminal && (term || clicolor.is_some() || var("CI").is_some())
}

/// Set once a write to standard output met a closed pipe; later writes are skipped.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Like `eprintln!`, but a standard error that cannot be written (full, closed) is ignored
/// instead of panicking: the exit code still tells the story.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::console::stderr(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use errln;

/// Writes `text` to standard error, ignoring any failure (see [`errln!`]).
pub(crate) fn stderr(text: &str) {
    let mut err = io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

/// Writes `text` to standard output; see [`write_stdout`].
pub(crate) fn print(text: &str) -> Result<(), String> {
    write_stdout(|out| out.write_all(text.as_bytes()))
}

/// Streams `write` into standard output through a buffer, then flushes. `Ok` also when the
/// reader has gone (the rest is dropped quietly); otherwise the message for `error: …`.
pub(crate) fn write_stdout(
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), String> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut out = io::BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    let result = write(&mut out).and_then(|()| out.flush());
    match result {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            // The buffer holds bytes no one will read; drop them instead of retrying on drop.
            let _ = out.into_parts();
            Ok(())
        }
        Err(err) => {
            let _ = out.into_parts();
            Err(format!(
                "cannot write to standard output: {}",
                super::io_reason(&err)
            ))
        }
    }
}

/// `code`, unless writing standard output failed: then the message and exit 2.
pub(crate) fn exit_code(code: u8, printed: Result<(), String>) -> u8 {
    match printed {
        Ok(()) => code,
        Err(message) => {
            errln!("error: {message}");
            super::EXIT_ERROR
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auto(terminal: bool, env: &[(&str, &str)]) -> bool {
        auto_colour(terminal, |name| {
            env.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn auto_colour_follows_no_color_and_clicolors() {
        let term = ("TERM", "xterm-256color");
        assert!(auto(true, &[term]));
        assert!(!auto(false, &[term]), "a pipe gets none");
        assert!(!auto(true, &[]), "nor a terminal without TERM");
        assert!(!auto(true, &[("TERM", "dumb")]));
        assert!(auto(true, &[("CI", "true")]));
        assert!(auto(false, &[("CLICOLOR_FORCE", "1")]));
        assert!(!auto(false, &[("CLICOLOR_FORCE", "0")]), "0 is no force");
        assert!(auto(true, &[term, ("CLICOLOR_FORCE", "0")]));
        assert!(!auto(false, &[("CLICOLOR_FORCE", "")]));
        assert!(!auto(
            true,
            &[term, ("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")]
        ));
        assert!(
            auto(true, &[term, ("NO_COLOR", "")]),
            "an empty NO_COLOR is unset"
        );
        assert!(!auto(true, &[term, ("CLICOLOR", "0")]));
        assert!(auto(true, &[("CLICOLOR", "1")]));
    }

    #[test]
    fn the_flag_wins_over_the_environment() {
        assert!(colours(ColourArg::Always, false));
        assert!(!colours(ColourArg::Never, true));
    }
}
