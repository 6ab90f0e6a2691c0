//! The wall-clock and memory budgets hold: a run that would take minutes is stopped as
//! `timeout`, a command that cannot fit in memory is refused before it runs (with the
//! estimate), and a run that outgrows its share stops as `out_of_memory`. No test asserts how
//! fast anything is; the wall-clock bounds below are an order of magnitude above the budget.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use simbench::compile;
use simbench::harness::RngScheme;
use simbench::report::{self, Outcome, SweepInfo};
use simbench::sweep::{self, SweepConfig};

use crate::support::{scratch_dir, simbench};

/// The bursty world with every job run (no horizon, no endpoint retired for good), plus `extra`
/// (an open loop's `[load]` drops bursty's workers).
fn long_world(dir: &Path, extra: &str) -> PathBuf {
    let mut text = compile::BUILTIN_BURSTY_TOML
        .replace("horizon_s = 600.0", "horizon_s = 1e12")
        .replace("dead_after = 8", "dead_after = 1000000");
    if extra.contains("model = \"open\"") {
        // Only a closed loop has workers.
        text = text.replace("concurrency = 12\n", "");
    }
    let path = dir.join("long.toml");
    std::fs::write(&path, format!("{text}\n{extra}")).expect("scratch file");
    path
}

/// Runs the binary and returns its output with the real time it took (measuring the command
/// from outside is what a budget test is about; nothing in the program reads this clock).
#[allow(clippy::disallowed_methods)]
fn timed(args: &[&str]) -> (Output, Duration) {
    let started = std::time::Instant::now();
    let out = simbench(args);
    (out, started.elapsed())
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// One CSV row's `outcome` column.
fn outcome_column(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a CSV header").split(',').collect();
    let row: Vec<&str> = lines.next().expect("a CSV row").split(',').collect();
    let at = header
        .iter()
        .position(|h| *h == "outcome")
        .expect("outcome");
    row[at].to_owned()
}

#[test]
fn a_wall_budget_ends_an_open_loop_that_would_take_minutes() {
    // 10^7 jobs arriving at once: about 4 minutes of simulation on the reference machine.
    let dir = scratch_dir("budget-open");
    let file = long_world(&dir, "[load]\nmodel = \"open\"\nrate_per_s = 1e9\n");
    let (out, took) = timed(&[
        "run",
        file.to_str().unwrap(),
        "--jobs",
        "10000000",
        "--algorithms",
        "wait",
        "--seeds",
        "1",
        "--threads",
        "1",
        "--wall-budget",
        "1",
        "--memory-budget",
        "1T",
        "--quiet",
        "--csv",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(outcome_column(&out), "timeout");
    assert!(stderr(&out).contains("no run finished"), "{}", stderr(&out));
    assert!(took < Duration::from_secs(15), "took {took:?}");
}

#[test]
fn a_wall_budget_ends_a_closed_loop_herd() {
    // 100,000 workers queueing for three leases, 10^7 jobs: minutes without the budget. aimd's
    // own limit refuses every woken waiter in turn, so its wake-ups are as long as the herd.
    let dir = scratch_dir("budget-closed");
    let file = long_world(&dir, "");
    for algorithm in ["wait", "aimd"] {
        let (out, took) = timed(&[
            "run",
            file.to_str().unwrap(),
            "--jobs",
            "10000000",
            "--concurrency",
            "100000",
            "--set",
            "endpoints.0.capacity=1",
            "--set",
            "endpoints.1.capacity=1",
            "--set",
            "endpoints.2.capacity=1",
            "--algorithms",
            algorithm,
            "--seeds",
            "1",
            "--wall-budget",
            "1",
            "--memory-budget",
            "1T",
            "--quiet",
            "--csv",
            "-",
        ]);
        assert_eq!(out.status.code(), Some(2), "{algorithm}: {}", stderr(&out));
        assert_eq!(outcome_column(&out), "timeout", "{algorithm}");
        assert!(took < Duration::from_secs(15), "{algorithm} took {took:?}");
    }
}

#[test]
fn a_command_too_large_for_the_memory_budget_is_refused_with_the_estimate() {
    let dir = scratch_dir("budget-memory");
    let json = dir.join("out.json");
    // The reference scheme keeps every sample for its exact replay: 10^7 jobs cannot fit.
    let out = simbench(&[
        "run",
        "--jobs",
        "10000000",
        "--rng",
        "reference",
        "--memory-budget",
        "100M",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("would need about"), "{err}");
    assert!(err.contains("over the memory budget of 100.0 MiB"), "{err}");
    assert!(err.contains("hint:"), "{err}");
    assert!(!json.exists(), "nothing is written");
    // The native scheme bins its samples past a bound, so the same command fits.
    let out = simbench(&[
        "run",
        "--jobs",
        "10000000",
        "--algorithms",
        "wait",
        "--seeds",
        "1",
        "--memory-budget",
        "100M",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The estimate grows with the seeds: many one-job runs are refused too (this command's
    // measured peak is 883 MiB).
    let out = simbench(&[
        "run",
        "--seeds",
        "100000",
        "--jobs",
        "1",
        "--memory-budget",
        "500M",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("would need about"),
        "{}",
        stderr(&out)
    );
    // The sweep command checks the same way.
    let out = simbench(&[
        "sweep",
        "--concurrency",
        "4,8",
        "--set",
        "jobs=1",
        "--memory-budget",
        "1K",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("over the memory budget"),
        "{}",
        stderr(&out)
    );
}

/// A sweep whose levels need different memory states the largest need, not the first level's
/// that does not fit: a budget raised to what the refusal says is enough.
#[test]
fn a_sweep_too_large_for_its_budget_states_what_its_largest_level_needs() {
    let sweep = |budget: &str, axis: [&str; 5]| {
        let out = simbench(&[
            "sweep",
            "scenarios/bursty.toml",
            "--set",
            "jobs=100000",
            "--seeds",
            "2",
            axis[0],
            axis[1],
            axis[2],
            axis[3],
            axis[4],
            "--memory-budget",
            budget,
            "--quiet",
        ]);
        (out.status.code(), stderr(&out))
    };
    for axis in [
        [
            "--concurrency",
            "2,100000",
            "--algorithm",
            "wait",
            "--json=/dev/null",
        ],
        [
            "--grid",
            "concurrency=2,100000",
            "--algorithms",
            "wait",
            "--dry-run",
        ],
    ] {
        let (code, err) = sweep("40M", axis);
        assert_eq!(code, Some(2), "{err}");
        let need = err
            .split("would need about ")
            .nth(1)
            .and_then(|rest| rest.split(" of memory").next())
            .unwrap_or_else(|| panic!("{err}"))
            .to_owned();
        let (_, more) = sweep("48M", axis);
        assert!(
            more.contains(&format!("would need about {need}")),
            "{need}: {more}"
        );
        let mib: f64 = need.trim_end_matches(" MiB").parse().expect("MiB");
        let (code, err) = sweep(&format!("{}M", mib.ceil() + 1.0), axis);
        assert_ne!(code, Some(2), "{axis:?} at the {need} it asked for: {err}");
    }
    // A need just over the budget never reads as equal to it.
    let out = simbench(&[
        "sweep",
        "scenarios/bursty.toml",
        "--set",
        "jobs=100",
        "--seeds",
        "2",
        "--grid",
        "concurrency=4,8",
        "--algorithms",
        "wait",
        "--memory-budget",
        "16M",
    ]);
    let err = stderr(&out);
    assert!(err.contains("about 16.01 MiB of memory"), "{err}");
    assert!(err.contains("budget of 16.00 MiB"), "{err}");
}

#[test]
fn memory_budget_sizes_parse_and_garbage_is_refused() {
    for good in ["2G", "500M", "1.5GiB", "64000000"] {
        let out = simbench(&[
            "run",
            "--jobs",
            "50",
            "--seeds",
            "1",
            "--algorithms",
            "wait",
            "--memory-budget",
            good,
            "--quiet",
            "--csv",
            "-",
        ]);
        assert!(out.status.success(), "{good}: {}", stderr(&out));
    }
    for bad in ["2X", "lots", "0", "-5M", ""] {
        let out = simbench(&["run", &format!("--memory-budget={bad}")]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(
            stderr(&out).contains("--memory-budget"),
            "{bad:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_run_over_its_memory_share_is_out_of_memory() {
    let world = compile::builtin_bursty();
    let algorithms = ["wait".to_owned(), "backoff".to_owned()];
    let seeds = sweep::seeds(&world, 2);
    let plan = sweep::plan(&algorithms, &seeds);
    let frozen = || 0.0;
    let config = SweepConfig {
        rng: RngScheme::Native,
        threads: 2,
        wall_budget_s: 600.0,
        clock: &frozen,
        on_run: &|_| {},
        window_s: None,
    };
    // 1 KiB is far below what the samples of the first 16,384 events take.
    let runs = sweep::sweep_within(&world, &plan, &config, 1 << 10);
    for run in &runs {
        match &run.outcome {
            Outcome::Unfinished { kind, reason } => {
                assert_eq!(*kind, "out_of_memory");
                assert!(reason.contains("memory budget exhausted"), "{reason}");
            }
            Outcome::Finished(_) | Outcome::Stalled { .. } => {
                panic!("{} ran on within 1 KiB", run.algorithm)
            }
        }
    }
    // The same limit stops the same run at the same point, whatever the threads.
    let again = sweep::sweep_within(
        &world,
        &plan,
        &SweepConfig {
            threads: 1,
            ..config
        },
        1 << 10,
    );
    assert_eq!(runs, again);
    // A generous share changes nothing.
    assert_eq!(
        sweep::sweep_within(&world, &plan, &config, 1 << 40),
        sweep::sweep(&world, &plan, &config)
    );
    let info = SweepInfo {
        seeds,
        rng: "native",
        wall_s: 0.0,
    };
    let report = report::analyse(&world, info, runs);
    assert!(report.nothing_finished());
    assert_eq!(report.unfinished_runs(), 4);
}

/// Every request fails and is retried 100 times, and no endpoint is ever retired: each call
/// leaves far more samples than the up-front estimate's five, which is what the run-time guard
/// is for.
const RETRY_STORM: &str = r#"
name = "retry_storm"
summary = "Every request fails and is retried many times."
jobs = 20000
concurrency = 8
horizon_s = 1e9
[breaker]
degrade_after = 4294967295
dead_after = 4294967295
[retry]
max_attempts = 100
base = 0.001
cap = 0.001
retry_unknown = true
[[endpoints]]
id = "only"
capacity = 8
quota_units = 1000000000
latency = { median_s = 0.01, sigma = 0.0 }
failures = { error_rate = 1.0, storm_rate = 0.0 }
"#;

#[test]
fn a_run_that_outgrows_its_share_stops_as_out_of_memory_through_the_binary() {
    let dir = scratch_dir("budget-oom");
    let file = dir.join("storm.toml");
    std::fs::write(&file, RETRY_STORM).unwrap();
    let run = |threads: &str| {
        simbench(&[
            "run",
            file.to_str().unwrap(),
            "--algorithms",
            "backoff",
            "--seeds",
            "1",
            "--threads",
            threads,
            // The native scheme's samples stop growing; the reference's keep every value.
            "--rng",
            "reference",
            "--memory-budget",
            "24M",
            "--csv",
            "-",
        ])
    };
    let out = run("1");
    // The command fits the estimate (so it starts), then its one run outgrows its share.
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(outcome_column(&out), "out_of_memory");
    let err = stderr(&out);
    assert!(err.contains("no run finished"), "{err}");
    // The harness counts what it holds, so the run stops at the same point whatever the threads.
    let again = run("2");
    assert_eq!(outcome_column(&again), "out_of_memory");
    let reason = |o: &Output| {
        // With the CSV on standard output, the table and its notes go to standard error.
        let text = String::from_utf8_lossy(&o.stderr).into_owned();
        text.lines()
            .find(|l| l.contains("memory budget exhausted"))
            .map(str::to_owned)
    };
    let first = reason(&out).expect("the table's notes say why the run stopped");
    assert!(first.contains("after 0 jobs done"), "{first}");
    assert_eq!(Some(first), reason(&again));
}

/// A knee sweep whose second level runs out of memory (64 workers do 64 times the retries of
/// one within the horizon) measured nothing there: the flagged fallback must say so, not tell
/// the user to try lower levels.
#[test]
fn a_second_level_that_never_finished_is_not_read_as_a_flat_curve() {
    let dir = scratch_dir("budget-knee");
    let file = dir.join("storm.toml");
    let world = RETRY_STORM
        .replace("horizon_s = 1e9", "horizon_s = 500")
        .replace("capacity = 8", "capacity = 1000")
        .replace("error_rate = 1.0", "error_rate = 0.9");
    std::fs::write(&file, world).unwrap();
    let page = dir.join("sweep.html");
    let out = simbench(&[
        "sweep",
        file.to_str().unwrap(),
        "--algorithm",
        "backoff",
        "--concurrency",
        "1,64",
        "--rng",
        "reference",
        "--memory-budget",
        "32M",
        "--seeds",
        "2",
        "--threads",
        "1",
        "--html",
        page.to_str().unwrap(),
    ]);
    // The page lists the unfinished runs too, as the table's notes do.
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html.matches("<li>unfinished at concurrency 64: seed")
            .count(),
        2,
        "{html}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "no knee found: no run finished at concurrency 64 (seed 20260917: out_of_memory"
        ),
        "{text}"
    );
    assert!(!text.contains("rerun with lower levels"), "{text}");
    assert!(
        text.contains("not a measured knee: no run finished at concurrency 64"),
        "{text}"
    );
}
