//! The one integration-test binary.

mod algorithms;
mod budgets;
mod cli_fuzz;
mod compose;
mod controllers;
mod docs_reports;
mod extreme_worlds;
mod fidelity;
mod fit_cli;
mod fit_round_trip;
mod gates_cli;
mod grid;
mod hostile_input;
mod html_report;
mod incidents;
mod livelock;
mod no_network;
mod open_loop;
#[cfg(unix)]
mod outputs;
mod own_retry;
mod pacers;
mod recorder;
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
#[cfg(feature = "serve")]
mod serve;
mod sim;
mod starter_cli;
mod support;
mod sweep_cli;
mod table_cli;
mod tokens;
mod trace_cli;
mod trace_load;
mod verdict;
mod worlds;
