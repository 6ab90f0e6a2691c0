//! The one integration-test binary.

mod scenario_files;
mod sim;
