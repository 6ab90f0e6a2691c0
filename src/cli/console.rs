//! Standard output and standard error for every command.
//!
//! Every write to standard output is checked. A reader that stops reading (a closed pipe, as in
//! `simbench list | head -1`) is not an error: Rust ignores SIGPIPE, so the write fails with
//! `BrokenPipe`; from then on nothing more is written to standard output and the command ends
//! with the exit code it would have had. Any other failure (a full disk, `/dev/full`) is an
//! error the caller turns into exit 2 with a message. Standard error is best effort:
//! `eprintln!` panics when it cannot write, so messages go through [`errln!`], which never does.

use std::io::{self, ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// `--color`: whether output may be coloured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColourArg {
    /// On a terminal that supports colour, unless `NO_COLOR` is set or `TERM=dumb`
    /// (`CLICOLOR_FORCE` forces it, `CLICOLOR=0` turns it off).
    #[default]
    Auto,
    /// Always, even into a file or pipe.
    Always,
    /// Never.
    Never,
}

/// Records the `--color` choice for [`colour_stdout`] and [`colour_stderr`] (once, at start).
pub(crate) fn set_colour(choice: ColourArg) {
    anstream::ColorChoice::write_global(match choice {
        ColourArg::Auto => anstream::ColorChoice::Auto,
        ColourArg::Always => anstream::ColorChoice::Always,
        ColourArg::Never => anstream::ColorChoice::Never,
    });
}

/// Whether text for standard output may carry colour (the `--color` choice and, under `auto`,
/// the terminal and the environment's conventions).
pub(crate) fn colour_stdout() -> bool {
    anstream::AutoStream::choice(&io::stdout()) != anstream::ColorChoice::Never
}

/// Whether text for standard error may carry colour (see [`colour_stdout`]).
pub(crate) fn colour_stderr() -> bool {
    anstream::AutoStream::choice(&io::stderr()) != anstream::ColorChoice::Never
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
