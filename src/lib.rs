//! simbench: simulate how a client should talk to a rate-limited, flaky API.
//!
//! The pipeline, one type per stage:
//!
//! ```text
//! TOML text ──schema──▶ Scenario ──compile──▶ World ──harness::run(algorithm, seed)──▶ RunResult
//!                                                                 │
//!                                   metrics (catalogue) ◀─────────┘ ──▶ sweep ──▶ report
//! ```
//!
//! [`scenario`] mirrors the file and nothing more; [`compile`] checks it and freezes it into a
//! [`world::World`]; [`harness`] joins the simulated [`provider`] and the [`client`] (pool, retry
//! policy, strategies) on an event heap; [`metrics`] is the catalogue every output reads;
//! [`sweep`] runs every algorithm on every seed in parallel and [`report`] ranks and renders the
//! comparison without any I/O; [`knee`] reads a sweep over load levels and names the concurrency
//! knee. Only [`cli`] reads files, prints and picks exit codes.

pub mod cli;
pub mod client;
pub mod compile;
pub mod compose;
pub mod diagnostics;
pub mod fit;
pub mod grid;
pub mod harness;
pub mod knee;
pub mod memory;
pub mod metrics;
pub mod objective;
pub mod provider;
pub mod recorder;
pub mod report;
pub mod request_log;
pub mod rng;
pub mod rounding;
pub mod scenario;
pub mod schema;
pub mod sequential;
#[cfg(feature = "serve")]
pub mod serve;
pub mod sweep;
pub mod text;
pub mod threshold;
pub mod tokens;
pub mod trace_event;
pub mod trace_load;
pub mod world;
