//! `simbench validate` and `simbench schema`.

use clap::Args;

/// Arguments of `simbench validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Scenario files to check.
    #[arg(required = true)]
    pub files: Vec<std::path::PathBuf>,
}

/// Runs `simbench validate`.
pub fn main(_args: &ValidateArgs) -> u8 {
    super::EXIT_OK
}

/// Runs `simbench schema`.
pub fn print_schema() -> u8 {
    super::EXIT_OK
}
