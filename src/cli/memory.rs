//! The memory budget at the edge: its default from the machine's memory, and the check that
//! refuses a command whose estimate does not fit before anything runs.

use crate::harness::RngScheme;
use crate::memory::{self, Estimate};
use crate::world::World;

/// The budget when the machine's memory cannot be read \[bytes\].
pub const FALLBACK_BYTES: u64 = 4 << 30;

/// The default budget: half the memory the kernel says is available (`MemAvailable` in
/// /proc/meminfo, else `MemTotal`), or [`FALLBACK_BYTES`] when neither can be read.
pub fn default_budget() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| meminfo_bytes(&text))
        .map_or(FALLBACK_BYTES, |bytes| bytes / 2)
}

/// `MemAvailable` (else `MemTotal`) of a /proc/meminfo text, in bytes.
fn meminfo_bytes(text: &str) -> Option<u64> {
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|rest| rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
            .filter(|kb| *kb > 0)
            .map(|kb| kb.saturating_mul(1024))
    };
    field("MemAvailable").or_else(|| field("MemTotal"))
}

/// The budget asked for, or the default.
pub fn budget(flag: Option<u64>) -> u64 {
    flag.unwrap_or_else(default_budget)
}

/// Refuses (with the estimate, the budget and a hint on standard error) a command of `runs`
/// runs of `world` on the scheme `rng`, `threads` at a time, keeping `reports` bytes of reports
/// besides the runs (and their windows, recorded `window_s` wide), that would not fit in
/// `budget`; otherwise returns each run's share of the budget.
pub fn check(
    world: &World,
    runs: u64,
    threads: u64,
    budget: u64,
    rng: RngScheme,
    reports: u64,
    window_s: Option<f64>,
) -> Result<u64, String> {
    let estimate: Estimate = memory::estimate(world, runs, threads, rng, reports, window_s);
    if estimate.total() <= budget {
        return Ok(estimate.run_share(budget));
    }
    let (need, budget) = memory::show_over(estimate.total(), budget);
    Err(format!(
        "this command would need about {} of memory, over the memory budget of {} \
         ({}, {} at a time, about {} each at their peak, {} for the world, the finished runs{} and \
         the report, and {} for the program itself); hint: fewer jobs, seeds or --threads, or a \
         larger --memory-budget",
        need,
        budget,
        crate::text::plural(usize::try_from(runs).unwrap_or(usize::MAX), "run"),
        estimate.parallel,
        memory::show(estimate.per_run),
        memory::show(estimate.retained),
        if world.trace_bytes() > 0 {
            ", the trace"
        } else {
            ""
        },
        memory::show(memory::BASE_BYTES),
    ))
}

/// [`check`] of a command that runs several worlds (a sweep's levels, a grid's points) `runs`
/// times in all: a refusal states the world that needs the most, so that a budget raised to
/// what it says is enough; otherwise the smallest of the worlds' shares of the budget.
pub fn check_each<'w>(
    worlds: impl IntoIterator<Item = &'w World>,
    runs: u64,
    threads: u64,
    budget: u64,
    rng: RngScheme,
    reports: u64,
    window_s: Option<f64>,
) -> Result<u64, String> {
    let mut largest: Option<(&World, u64)> = None;
    let mut share = u64::MAX;
    for world in worlds {
        let estimate = memory::estimate(world, runs, threads, rng, reports, window_s);
        if largest.is_none_or(|(_, most)| estimate.total() > most) {
            largest = Some((world, estimate.total()));
        }
        share = share.min(estimate.run_share(budget));
    }
    match largest {
        Some((world, _)) => {
            check(world, runs, threads, budget, rng, reports, window_s).map(|_| share)
        }
        None => Ok(share),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_prefers_available_memory() {
        let text = "MemTotal:       24000000 kB\nMemFree:  1 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(meminfo_bytes(text), Some(20_000_000 * 1024));
        assert_eq!(
            meminfo_bytes("MemTotal:       8000 kB\n"),
            Some(8000 * 1024)
        );
        assert_eq!(meminfo_bytes("garbage"), None);
        assert_eq!(meminfo_bytes("MemAvailable: lots kB\n"), None);
    }
}
