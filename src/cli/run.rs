//! `simbench run` and `simbench list`.

use clap::Args;

/// Arguments of `simbench run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario file; the built-in bursty world when absent.
    pub file: Option<std::path::PathBuf>,
}

/// Runs `simbench run`.
pub fn main(_args: &RunArgs) -> u8 {
    super::EXIT_OK
}

/// Runs `simbench list`.
pub fn list() -> u8 {
    super::EXIT_OK
}
