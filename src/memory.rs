//! What a command will hold in memory, estimated before it runs, and each run's share of the
//! memory budget.
//!
//! A run's memory grows with its jobs: every served request leaves a few samples, kept until a
//! sample holds `metrics::EXACT_CAP` values and binned after that on the native scheme (kept
//! whole on the reference scheme, whose exact replay needs them), and an open loop holds a worker
//! slot for every job in flight. A sweep also keeps every finished run for the report. The estimate counts those
//! terms from the world before anything runs, so a request that cannot fit is refused up front;
//! a run that outgrows its share anyway (retries add samples the estimate cannot foresee) is
//! stopped by the harness as `out_of_memory`. docs/performance.md compares the estimate with
//! measured peak resident memory.
//!
//! A world of many endpoints costs per endpoint besides: the compiled world holds each once,
//! every run its own state for each, and a recorded run (`--html`, `--timeseries`) a snapshot of
//! each per window. Reading the file comes before the estimate and is not in it: up to some
//! 100 MB for a world file at the 1 MiB limit (docs/performance.md).
//!
//! Not counted apart: the sample buffers a thread keeps between runs (`metrics::spare`). A run's
//! samples take them back, so a thread never holds more than one run's worth (ten buffers of at
//! most 512 KiB), filled by earlier runs of the same command and counted in their estimate; in
//! a grid over several worlds they can exceed a smaller world's estimate by up to 5 MiB a thread.

use crate::client::pool::waiters::MEMBER_BYTES;
use crate::harness::{self, RngScheme};
use crate::metrics::EXACT_CAP;
use crate::recorder::{self, Snapshot, Window};
use crate::world::{Feature, Load, Scope, World};

/// Samples a served call leaves: acquire wait, request latency, service, observed latency and
/// harness wait (a zero is only counted, so this is an upper bound for first attempts).
const SAMPLES_PER_CALL: u64 = 5;

/// Bytes of one sample (an `f64`).
const SAMPLE_BYTES: u64 = 8;

/// The samples a run keeps (`Tally::bound_samples` bounds each of them).
const SAMPLE_KINDS: u64 = 10;

/// A binned sample's buckets: a count and the least and greatest value (24 bytes) per bucket,
/// 512 buckets an octave, about 18,700 buckets for values from 10^−3 to 10^8 ms, rounded up.
const HISTOGRAM_BYTES: u64 = 512 << 10;

/// A growing `Vec` holds up to twice what it uses; the part never written is not resident, but
/// the allocator's copies while it grows are, for a while. Half again is what the measurements
/// in docs/performance.md show at most.
const GROWTH_NUM: u64 = 3;
const GROWTH_DEN: u64 = 2;

/// Per worker slot besides the worker: its waiter slot and set entry, two pending events.
const SLOT_EXTRA_BYTES: u64 = 48 + MEMBER_BYTES + 2 * 16;

/// Per job waiting in the open loop's arrival queue (index and arrival time).
const QUEUED_JOB_BYTES: u64 = 16;

/// One finished run kept for the report, with its share of the report built from it, JSON and
/// CSV both written (they stream into their files rather than being built whole): 0.78 KiB
/// measured for `run` and 1.02 KiB for a grid sweep of one-job runs; 0.89 and 0.91 KiB for
/// runs of the whole built-in world, whose failed attempts fill the per-class counts
/// (docs/performance.md), rounded up.
pub const RETAINED_BYTES_PER_RUN: u64 = 1280;

/// One grid cell's report besides its algorithms' columns (its verdict rows and decision),
/// kept until the grid's report is written: 7.1 KiB measured, rounded up.
pub const GRID_CELL_BYTES: u64 = 8 << 10;

/// One algorithm's column in a grid cell's report (the summaries up to the last shown metric,
/// its standing): 3.4 KiB fitted over six grid shapes of the built-in world, 3.9 KiB in an LLM
/// world whose objective is late in the catalogue (docs/performance.md), rounded up with room.
pub const GRID_COLUMN_BYTES: u64 = 6 << 10;

/// One compiled world per (world file, grid point), which a grid sweep, each of its shards and
/// its merge hold from start to end: 4.0 KiB measured for the built-in world (4,096 points of
/// twelve axes, `--dry-run`: 23.4 MB peak against 7.0 MB for 2 points), rounded up with room.
/// A trace world's points each hold their own copy of the trace besides ([`World::trace_bytes`]).
pub const GRID_POINT_BYTES: u64 = 6 << 10;

/// `merge` of a grid of `runs` runs whose cell reports take `reports` bytes, the largest part
/// holding `largest_part` runs: every run and report until the report is written, and the
/// largest part's runs as they are read (parsed from the file, no text held; the vector they
/// grow in is at most twice their size) before they move into the plan's buffer.
pub fn merge_bytes(runs: u64, reports: u64, largest_part: u64) -> u64 {
    let read = 2 * std::mem::size_of::<crate::grid::ReadRun>() as u64;
    BASE_BYTES
        .saturating_add(runs.saturating_mul(RETAINED_BYTES_PER_RUN))
        .saturating_add(reports)
        .saturating_add(largest_part.saturating_mul(read))
}

/// The reports of a whole grid kept until it is written: `cells` cell reports holding
/// `columns` algorithm columns in all.
pub fn grid_reports_bytes(cells: u64, columns: u64) -> u64 {
    cells
        .saturating_mul(GRID_CELL_BYTES)
        .saturating_add(columns.saturating_mul(GRID_COLUMN_BYTES))
}

/// The program, its libraries and the world, before any run (measured peak of a one-job run).
pub const BASE_BYTES: u64 = 16 << 20;

/// One endpoint's state in a run: the provider's side, the client pool's resource, the
/// strategy's and the stream keys. 1.42 KiB measured in a run of 20,000 endpoints
/// (docs/performance.md), rounded up.
pub const RUN_ENDPOINT_BYTES: u64 = 1536;

/// One endpoint of the compiled world, held from start to end: 0.40 KiB measured with 20,000
/// endpoints, rounded up.
pub const WORLD_ENDPOINT_BYTES: u64 = 512;

/// One incident of the compiled world and its share of a run's timeline, besides the endpoints
/// it lists by name (8 bytes each in the world and in each run's timeline).
pub const INCIDENT_BYTES: u64 = 128;

/// The compiled world beyond what [`BASE_BYTES`] allows for a small one \[bytes\].
pub fn world_bytes(world: &World) -> u64 {
    let listed: u64 = world
        .incidents()
        .iter()
        .map(|i| match &i.scope {
            Scope::Listed(list) => list.len() as u64,
            Scope::Everywhere | Scope::Pool(_) => 0,
        })
        .sum();
    (world.endpoints().len() as u64)
        .saturating_mul(WORLD_ENDPOINT_BYTES)
        .saturating_add((world.incidents().len() as u64).saturating_mul(INCIDENT_BYTES))
        .saturating_add(listed.saturating_mul(8))
}

/// What recording one run in windows `window_s` wide keeps: a window's counts and, per
/// endpoint, a snapshot at its start, for as many windows as the horizon holds, at most
/// [`recorder::max_windows`], and the breaker changes it keeps one by one \[bytes\].
pub fn recording_bytes(world: &World, window_s: f64) -> u64 {
    let endpoints = world.endpoints().len();
    let most = recorder::max_windows(endpoints) as f64;
    let windows = (world.horizon_s() / window_s).ceil() + 1.0;
    let windows = if windows < most {
        windows as u64
    } else {
        most as u64
    };
    let per_window = size_of::<Window>() + 8 + endpoints * size_of::<Snapshot>();
    let changes = recorder::MAX_KEPT_DEATHS * size_of::<recorder::Change>();
    windows
        .saturating_mul(per_window as u64)
        .saturating_add(changes as u64)
}

/// The estimate of one command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// One run at its peak \[bytes\].
    pub per_run: u64,
    /// Runs held at once (the threads, at most the runs).
    pub parallel: u64,
    /// Every finished run kept for the report, the report and the world's trace \[bytes\].
    pub retained: u64,
}

impl Estimate {
    /// Peak of the whole command \[bytes\].
    pub fn total(&self) -> u64 {
        BASE_BYTES
            .saturating_add(self.per_run.saturating_mul(self.parallel))
            .saturating_add(self.retained)
    }

    /// Each run's share of `budget`: what the base and the retained runs leave, split over the
    /// runs held at once. At least the estimate's own `per_run` when the estimate fits.
    pub fn run_share(&self, budget: u64) -> u64 {
        budget
            .saturating_sub(BASE_BYTES)
            .saturating_sub(self.retained)
            / self.parallel.max(1)
    }
}

/// The estimate for `runs` runs of `world` on the scheme `rng`, `threads` at a time, keeping
/// `reports` bytes of reports besides the runs (a grid's cell reports), the world itself and the
/// trace it replays, if any, which its runs share. Runs recorded in windows `window_s` wide
/// keep their windows for the report.
pub fn estimate(
    world: &World,
    runs: u64,
    threads: u64,
    rng: RngScheme,
    reports: u64,
    window_s: Option<f64>,
) -> Estimate {
    let per_retained =
        RETAINED_BYTES_PER_RUN.saturating_add(window_s.map_or(0, |w| recording_bytes(world, w)));
    Estimate {
        per_run: run_bytes(world, rng),
        parallel: threads.clamp(1, runs.max(1)),
        retained: runs
            .saturating_mul(per_retained)
            .saturating_add(reports)
            .saturating_add(world.trace_bytes())
            .saturating_add(world_bytes(world)),
    }
}

/// One run of `world` on `rng` at its peak: its samples, its worker slots, its endpoints' state
/// and its incident timeline \[bytes\]. An
/// open loop admits no job after the horizon, so at most `rate × horizon` (and one) of its jobs
/// run. On the native scheme the samples stop growing at [`EXACT_CAP`] values each.
pub fn run_bytes(world: &World, rng: RngScheme) -> u64 {
    let mut jobs = u64::from(world.jobs());
    if let Load::Open { rate_per_s, .. } = *world.load() {
        let arriving = (rate_per_s * world.horizon_s()).ceil() + 1.0;
        if arriving < jobs as f64 {
            jobs = arriving as u64;
        }
    }
    let calls = u64::from(world.steps_per_job()) * u64::from(world.calls_per_step());
    let samples = jobs * (1 + calls * SAMPLES_PER_CALL);
    let bounded = SAMPLE_KINDS * EXACT_CAP as u64;
    let mut sample_bytes = match rng {
        RngScheme::Native if samples > bounded => {
            bounded * SAMPLE_BYTES + SAMPLE_KINDS * HISTOGRAM_BYTES
        }
        RngScheme::Native | RngScheme::Reference => samples * SAMPLE_BYTES,
    };
    if world.has(Feature::EndingIncident) {
        sample_bytes += jobs * SAMPLE_BYTES; // completion times for the recovery metrics
    }
    let slot = harness::worker_bytes() + SLOT_EXTRA_BYTES;
    let slots = match *world.load() {
        Load::Closed { .. } => u64::from(world.concurrency()) * slot,
        Load::Open { max_in_flight, .. } | Load::Trace { max_in_flight, .. } => {
            let in_flight = max_in_flight.map_or(jobs, |m| jobs.min(u64::from(m)));
            in_flight * slot + (jobs - in_flight) * QUEUED_JOB_BYTES
        }
    };
    let endpoints = (world.endpoints().len() as u64).saturating_mul(RUN_ENDPOINT_BYTES);
    ((sample_bytes + slots) * GROWTH_NUM / GROWTH_DEN)
        .saturating_add(endpoints)
        .saturating_add(crate::provider::timeline::spelled_bytes(world))
        .saturating_add(crate::provider::timeline::index_bytes(world))
}

/// Parses a size such as `2G`, `500M`, `1.5G`, `64K` or `1000000` (bytes; K, M, G and T are
/// powers of 1024, an optional `B` or `iB` may follow). Zero, negative and malformed sizes are
/// errors.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let upper = t.to_ascii_uppercase();
    let unit_start = upper
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(upper.len());
    let (number, unit) = upper.split_at(unit_start);
    let shift = match unit.trim_end_matches("IB").trim_end_matches('B') {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => {
            return Err(format!(
                "`{t}`: unknown unit `{unit}` (use K, M, G or T, e.g. 2G or 500M)"
            ));
        }
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{t}` is not a size (e.g. 2G, 500M or 1048576)"))?;
    let bytes = value * (1u64 << shift) as f64;
    if !(bytes.is_finite() && bytes >= 1.0) {
        return Err(format!("`{t}`: a memory budget must be at least one byte"));
    }
    if bytes >= u64::MAX as f64 {
        return Err(format!("`{t}` is too large"));
    }
    Ok(bytes as u64)
}

/// `need` and `budget` as [`show`] writes them, with as many more decimals as it takes (up to
/// whole bytes) for a need over the budget not to read as equal to it.
pub fn show_over(need: u64, budget: u64) -> (String, String) {
    for decimals in 1..=3 {
        let (a, b) = (show_to(need, decimals), show_to(budget, decimals));
        if a != b || need == budget {
            return (a, b);
        }
    }
    (format!("{need} B"), format!("{budget} B"))
}

/// A byte count in the largest binary unit it reaches, to `decimals` decimals.
fn show_to(bytes: u64, decimals: usize) -> String {
    let units = [("GiB", 30), ("MiB", 20), ("KiB", 10)];
    for (name, shift) in units {
        if bytes >= 1 << shift {
            return format!(
                "{:.decimals$} {name}",
                bytes as f64 / (1u64 << shift) as f64
            );
        }
    }
    format!("{bytes} B")
}

/// `bytes` in the largest unit that keeps a whole number before the point, e.g. `1.5 GiB`.
pub fn show(bytes: u64) -> String {
    show_to(bytes, 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile;
    use RngScheme::{Native, Reference};

    /// Bursty with `extra` (an open loop's `[load]` drops bursty's workers, as it must).
    fn world(extra: &str) -> World {
        let mut text = format!("{}\n{extra}", compile::BUILTIN_BURSTY_TOML);
        if extra.contains("\"open\"") {
            text = text.replace("concurrency = 12\n", "");
        }
        compile::load("memory-test", text.as_bytes()).expect("valid world")
    }

    #[test]
    fn a_need_over_the_budget_never_reads_as_equal_to_it() {
        let mib = 1u64 << 20;
        assert_eq!(
            show_over(46 * mib, 40 * mib),
            ("46.0 MiB".into(), "40.0 MiB".into())
        );
        let (need, budget) = show_over(16 * mib + 5000, 16 * mib);
        assert_eq!(
            (need.as_str(), budget.as_str()),
            ("16.005 MiB", "16.000 MiB")
        );
        let (need, budget) = show_over(16 * mib + 1, 16 * mib);
        assert_eq!(
            (need.as_str(), budget.as_str()),
            ("16777217 B", "16777216 B")
        );
    }

    #[test]
    fn sizes_parse_in_powers_of_1024() {
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("500M"), Ok(500 << 20));
        assert_eq!(parse_size("500mb"), Ok(500 << 20));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size(" 64K "), Ok(64 << 10));
        assert_eq!(parse_size("1000000"), Ok(1_000_000));
        for bad in [
            "",
            "G",
            "2X",
            "two",
            "-1G",
            "0",
            "0.0000001K",
            "1e30T",
            "NaNG",
            "2 G B",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn the_run_estimate_grows_with_jobs_and_calls() {
        let base = run_bytes(&world(""), Reference);
        let jobs = compile::BUILTIN_BURSTY_TOML.replace("jobs = 3000", "jobs = 30000");
        let more = run_bytes(
            &compile::load("m", jobs.as_bytes()).expect("valid"),
            Reference,
        );
        // Ten times the jobs: ten times the samples, the same 12 workers.
        assert!(more > 9 * base && more < 10 * base, "{base} → {more}");
        // 3000 jobs × 3 steps × 2 calls × 5 samples × 8 bytes, plus the job latencies.
        let samples = 3000 * (1 + 6 * 5) * 8;
        assert!(base >= samples * 3 / 2, "{base} < the samples alone");
    }

    #[test]
    fn on_the_native_scheme_the_samples_stop_growing() {
        let sized = |jobs: u32, rng| {
            let text =
                compile::BUILTIN_BURSTY_TOML.replace("jobs = 3000", &format!("jobs = {jobs}"));
            run_bytes(&compile::load("m", text.as_bytes()).expect("valid"), rng)
        };
        // 3000 jobs leave fewer samples than the bound: the same estimate on both schemes.
        assert_eq!(sized(3000, Native), sized(3000, Reference));
        let cap = (SAMPLE_KINDS * EXACT_CAP as u64 * SAMPLE_BYTES + SAMPLE_KINDS * HISTOGRAM_BYTES)
            * GROWTH_NUM
            / GROWTH_DEN;
        // The 12 workers' slots besides the samples.
        let slots = 12 * (harness::worker_bytes() + SLOT_EXTRA_BYTES) * GROWTH_NUM / GROWTH_DEN;
        for jobs in [100_000, 10_000_000] {
            assert_eq!(
                sized(jobs, Native),
                cap + slots + 3 * RUN_ENDPOINT_BYTES,
                "{jobs} jobs, bursty's 3 endpoints"
            );
        }
        // The reference scheme keeps every sample: 100 times the jobs, about 100 times the bytes.
        let (small, large) = (sized(100_000, Reference), sized(10_000_000, Reference));
        assert!(
            large > 99 * small && large < 101 * small,
            "{small} → {large}"
        );
    }

    #[test]
    fn an_open_loop_holds_a_slot_per_job_in_flight() {
        let open = world("[load]\nmodel = \"open\"\nrate_per_s = 1e9\n");
        let bounded = world("[load]\nmodel = \"open\"\nrate_per_s = 1e9\nmax_in_flight = 12\n");
        let closed = run_bytes(&world(""), Reference);
        let slot = harness::worker_bytes() + SLOT_EXTRA_BYTES;
        let near = |got: u64, want: u64| assert!(got.abs_diff(want) <= 1, "{got} vs {want}");
        near(
            run_bytes(&open, Reference) - closed,
            (3000 - 12) * slot * 3 / 2,
        );
        near(
            run_bytes(&bounded, Reference) - closed,
            (3000 - 12) * QUEUED_JOB_BYTES * 3 / 2,
        );
    }

    #[test]
    fn an_open_loop_counts_only_the_jobs_arriving_before_the_horizon() {
        let slow = world("[load]\nmodel = \"open\"\nrate_per_s = 0.5\n");
        let fast = world("[load]\nmodel = \"open\"\nrate_per_s = 1e9\n");
        // 0.5 jobs/s over the 600 s horizon: about 301 of the 3000 jobs ever arrive.
        assert!(run_bytes(&slow, Reference) * 5 < run_bytes(&fast, Reference));
    }

    /// Endpoints cost in the world and in every run; an incident on every endpoint costs no
    /// more than one on a single endpoint.
    #[test]
    fn many_endpoints_cost_in_the_world_and_in_each_run() {
        let endpoints = |n: usize, incidents: &str| {
            let mut text = String::from("name = \"m\"\nsummary = \"m\"\n");
            for e in 0..n {
                text += &format!("[[endpoints]]\nid = \"e{e}\"\ncapacity = 1\nlatency = {{}}\n");
            }
            compile::load("m", (text + incidents).as_bytes()).expect("valid")
        };
        let (one, many) = (endpoints(1, ""), endpoints(5000, ""));
        assert_eq!(
            run_bytes(&many, Native) - run_bytes(&one, Native),
            4999 * RUN_ENDPOINT_BYTES
        );
        assert_eq!(
            world_bytes(&many) - world_bytes(&one),
            4999 * WORLD_ENDPOINT_BYTES
        );
        let everywhere = endpoints(5000, "[[incidents]]\nkind = \"outage\"\nstart_s = 1\n");
        let listed = endpoints(
            5000,
            "[[incidents]]\nkind = \"outage\"\nstart_s = 1\nendpoints = [\"e1\", \"e2\"]\n",
        );
        assert_eq!(
            world_bytes(&everywhere),
            world_bytes(&many) + INCIDENT_BYTES
        );
        assert_eq!(world_bytes(&listed), world_bytes(&everywhere) + 16);
        // Each run spells the incident out for its 5,000 endpoints: 4 bytes each and a start.
        assert_eq!(
            run_bytes(&everywhere, Native) - run_bytes(&many, Native),
            4 * (5000 + 5001)
        );
        // A recorded run of 5,000 endpoints keeps 209 windows (2^20 snapshots), not 4,096.
        assert_eq!(
            recording_bytes(&many, 1e-3),
            209 * (size_of::<Window>() + 8 + 5000 * size_of::<Snapshot>()) as u64
                + (recorder::MAX_KEPT_DEATHS * size_of::<recorder::Change>()) as u64
        );
    }

    #[test]
    fn the_command_adds_the_parallel_runs_and_the_retained_ones() {
        let w = world("");
        let e = estimate(&w, 100, 8, Native, 0, None);
        assert_eq!(e.parallel, 8);
        assert_eq!(e.retained, 100 * RETAINED_BYTES_PER_RUN + world_bytes(&w));
        assert_eq!(e.total(), BASE_BYTES + 8 * e.per_run + e.retained);
        assert_eq!(
            estimate(&w, 3, 8, Native, 0, None).parallel,
            3,
            "no more at once than there are runs"
        );
        assert_eq!(
            merge_bytes(100, 7, 30),
            BASE_BYTES
                + 100 * RETAINED_BYTES_PER_RUN
                + 7
                + 30 * 2 * std::mem::size_of::<crate::grid::ReadRun>() as u64
        );
        let with_reports = estimate(&w, 100, 8, Native, grid_reports_bytes(2, 6), None);
        assert_eq!(
            with_reports.retained - e.retained,
            2 * GRID_CELL_BYTES + 6 * GRID_COLUMN_BYTES
        );
        // Recorded in 1 s windows: bursty's 600 s horizon, 601 windows of its 3 endpoints kept
        // with each run, and room for the deaths kept one by one.
        let recorded = estimate(&w, 100, 8, Native, 0, Some(1.0));
        assert_eq!(
            recorded.retained - e.retained,
            100 * recording_bytes(&w, 1.0)
        );
        assert_eq!(
            recording_bytes(&w, 1.0),
            601 * (size_of::<Window>() + 8 + 3 * size_of::<Snapshot>()) as u64
                + (recorder::MAX_KEPT_DEATHS * size_of::<recorder::Change>()) as u64
        );
        let budget = e.total();
        assert!(e.run_share(budget) >= e.per_run);
        assert!(e.run_share(budget - 8 * 1024) < e.per_run);
        assert_eq!(e.run_share(1), 0);
    }
}
