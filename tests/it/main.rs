//! The one integration-test binary.

mod no_network;
mod scenario_cli;
mod scenario_files;
mod scenario_fuzz;
mod sim;
