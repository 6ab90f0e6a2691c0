//! The one integration-test binary.

mod algorithms;
mod budgets;
mod cli_fuzz;
mod compose;
mod controllers;
mod docs_reports;
mod extreme_worlds;
mod fidelity;
mod gates_cli;
mod hostile_input;
mod incidents;
mod livelock;
mod no_network;
mod open_loop;
#[cfg(unix)]
mod outputs;
mod own_retry;
mod pacers;
mod replay;
mod report;
mod report_cli;
mod report_schema;
mod request_log;
mod retry_options;
mod run_cli;
mod scenario_cli;
mod scenario_files;
mod scenario_fuzz;
mod sim;
mod starter_cli;
mod support;
mod sweep_cli;
mod table_cli;
mod tokens;
mod verdict;
mod worlds;
