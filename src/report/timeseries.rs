//! The timeseries export (`--timeseries PATH`): the windowed recorder's windows as tidy CSV,
//! one row per (algorithm, seed, window), for notebooks.
//!
//! Columns: `scenario,world_hash,rng,algorithm,seed,window,start_s,end_s`, the window's counts
//! (requests by what they met, answers by how they ended, jobs, leases and their queue wait,
//! breaker changes), the adaptive limit at its start (empty for a strategy without one), then
//! per endpoint in world order `in_flight.ID`, `capacity.ID`, `state.ID` and `cooldown.ID` (1 or
//! 0 for the router, empty for a strategy without cooldowns) at its start.
//! A run a budget stopped has its windows up to where it stopped; one run without a series
//! (not recorded) has no rows.

use std::io::{self, Write};

use super::Report;
use super::csv::{field, key_cells};
use super::format::round6;
use crate::client::pool::State;
use crate::recorder::{Snapshot, Window};

/// A number cell, to 6 decimals.
fn num(x: f64) -> String {
    round6(x).to_string()
}

/// A count column: its name, and how it is read from a window.
type Count = (&'static str, fn(&Window) -> u64);

/// The count columns, in order.
const COUNTS: &[Count] = &[
    ("requests", |w| w.requests),
    ("admitted", |w| w.admitted),
    ("refused_capacity", |w| w.refused_capacity),
    ("refused_quota", |w| w.refused_quota),
    ("refused_limit", |w| w.refused_limit),
    ("overloaded", |w| w.overloaded),
    ("rejected", |w| w.rejected),
    ("ok", |w| w.ok),
    ("errors", |w| w.errors),
    ("client_timeouts", |w| w.client_timeouts),
    ("cancelled", |w| w.cancelled),
    ("jobs_done", |w| w.jobs_done),
    ("jobs_failed", |w| w.jobs_failed),
    ("leases", |w| w.leases),
    ("breaker_changes", |w| w.breaker_changes),
];

/// The name of a breaker state in the export.
pub fn state_name(state: State) -> &'static str {
    match state {
        State::Ready => "ready",
        State::Degraded => "degraded",
        State::Dead => "dead",
        State::Revoked => "revoked",
    }
}

/// Writes the timeseries export of every recorded run of `report`.
pub fn write(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let world = &report.world;
    let mut header: Vec<String> = [
        "scenario",
        "world_hash",
        "rng",
        "algorithm",
        "seed",
        "window",
        "start_s",
        "end_s",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    header.extend(COUNTS.iter().map(|c| c.0.to_owned()));
    header.extend(
        ["queue_wait_mean_ms", "queue_wait_max_ms", "adaptive_limit"]
            .iter()
            .map(|s| (*s).to_owned()),
    );
    for id in &world.endpoints {
        for what in ["in_flight", "capacity", "state", "cooldown"] {
            header.push(field(&format!("{what}.{id}")));
        }
    }
    writeln!(out, "{}", header.join(","))?;
    for run in &report.runs {
        let Some(series) = &run.timeseries else {
            continue;
        };
        let w = series.window_s;
        for (i, window) in series.windows.iter().enumerate() {
            let mut cells = key_cells(report, run);
            cells.extend([i.to_string(), num(i as f64 * w), num((i + 1) as f64 * w)]);
            cells.extend(COUNTS.iter().map(|c| c.1(window).to_string()));
            let mean = if window.leases > 0 {
                num(window.queue_wait_sum_ms / window.leases as f64)
            } else {
                String::new()
            };
            cells.push(mean);
            cells.push(num(window.queue_wait_max_ms));
            let limit = series.limits.get(i).copied().flatten();
            cells.push(limit.map(num).unwrap_or_default());
            let snaps: &[Snapshot] = series.snapshots.get(i).map_or(&[], |s| s.as_slice());
            for e in 0..world.endpoints.len() {
                match snaps.get(e) {
                    Some(s) => {
                        cells.push(s.in_flight.to_string());
                        cells.push(s.capacity.to_string());
                        cells.push(state_name(s.state).to_owned());
                        cells.push(
                            s.cooldown
                                .map_or_else(String::new, |c| u8::from(c).to_string()),
                        );
                    }
                    None => {
                        cells.extend([String::new(), String::new(), String::new(), String::new()])
                    }
                }
            }
            writeln!(out, "{}", cells.join(","))?;
        }
    }
    Ok(())
}
