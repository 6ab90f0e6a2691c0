//! The windowed recorder (`simbench::recorder`): on every world, for strategies that hedge,
//! adapt and route, recording changes nothing, and the windows add up exactly to the run's
//! own counters.

use simbench::client::pool::State;
use simbench::harness::{self, RngScheme, RunConfig, RunResult};
use simbench::metrics::Metric;
use simbench::world::World;

use crate::request_log::{all_worlds, load};

fn run(world: &World, name: &str, window_s: Option<f64>) -> Option<RunResult> {
    let strategy = simbench::sweep::strategy(world, name)?;
    Some(harness::run(
        world,
        strategy.as_ref(),
        &RunConfig {
            seed: world.seed(),
            rng: RngScheme::Native,
            trace: false,
            window_s,
            out_of_time: &|| false,
        },
    ))
}

#[test]
fn recorder_windows_add_up_to_the_runs_totals_and_change_nothing() {
    for path in all_worlds() {
        let world = load(&path);
        for name in ["backoff", "hedged", "aimd", "router"] {
            let (Some(plain), Some(recorded)) =
                (run(&world, name, None), run(&world, name, Some(1.0)))
            else {
                continue;
            };
            let shown = format!("{} {name}", path.display());
            assert_eq!(
                plain.metrics, recorded.metrics,
                "{shown}: recording changed the run"
            );
            assert!(plain.timeseries.is_none());
            let series = recorded.timeseries.expect("recorded");
            let sum = series.total();
            let p = |f: fn(&simbench::provider::EndpointStats) -> u64| -> u64 {
                recorded.endpoints.iter().map(|e| f(&e.provider)).sum()
            };
            assert_eq!(sum.requests, p(|s| s.requests), "{shown}: requests");
            assert_eq!(sum.admitted, p(|s| s.admitted), "{shown}: admitted");
            assert_eq!(sum.refused_capacity, p(|s| s.refused_capacity), "{shown}");
            assert_eq!(sum.refused_quota, p(|s| s.refused_quota), "{shown}");
            let limits =
                p(|s| s.refused_request_limit + s.refused_token_limit + s.refused_daily_limit);
            assert_eq!(sum.refused_limit, limits, "{shown}: limit refusals");
            assert_eq!(sum.overloaded, p(|s| s.overloaded), "{shown}: overloaded");
            assert_eq!(sum.rejected, p(|s| s.rejected), "{shown}: rejected");
            if let Some(m) = &recorded.metrics {
                assert_eq!(
                    sum.jobs_done as f64,
                    m.get(Metric::JobsDone),
                    "{shown}: jobs done"
                );
                assert_eq!(
                    sum.jobs_failed as f64,
                    m.get(Metric::JobsFailed),
                    "{shown}: jobs failed"
                );
            }
            // Every admitted request ended one way or another, unless the run stalled.
            if !recorded.outcome.is_stall() {
                assert_eq!(
                    sum.ok + sum.errors + sum.client_timeouts + sum.cancelled,
                    sum.admitted,
                    "{shown}: answers"
                );
            }
            // One snapshot per window; a limit exactly for the adaptive strategy.
            assert_eq!(series.snapshots.len(), series.windows.len(), "{shown}");
            assert_eq!(
                series.limits.iter().all(Option::is_some),
                name == "aimd",
                "{shown}"
            );
            for (i, snap) in series.snapshots.iter().enumerate() {
                for (e, s) in snap.iter().enumerate() {
                    assert!(s.capacity >= 1, "{shown}: window {i} endpoint {e}");
                }
            }
            // A report's run keeps the deaths: every change the pool counted into DEAD.
            let dead: u64 = recorded.endpoints.iter().map(|e| e.pool.dead).sum();
            let into_dead = series
                .changes
                .iter()
                .filter(|c| c.state == State::Dead)
                .count();
            assert_eq!(into_dead as u64, dead, "{shown}: DEAD transitions");
            assert!(
                series
                    .changes
                    .iter()
                    .all(|c| matches!(c.state, State::Dead | State::Revoked)),
                "{shown}"
            );
            assert_eq!(series.deaths, series.changes.len() as u64, "{shown}");
            assert!(sum.breaker_changes >= series.deaths, "{shown}");
        }
    }
}

/// The recorder's windows are a function of the run: the same run twice gives the same series,
/// and a run longer than the window cap merges windows without losing a count.
#[test]
fn recorder_is_deterministic_and_bounded() {
    let world = load(&crate::request_log::root().join("scenarios/bursty.toml"));
    let a = run(&world, "wait", Some(0.001))
        .unwrap()
        .timeseries
        .unwrap();
    let b = run(&world, "wait", Some(0.001))
        .unwrap()
        .timeseries
        .unwrap();
    assert_eq!(a, b);
    assert!(a.windows.len() <= simbench::recorder::MAX_WINDOWS);
    assert!(a.window_s > 0.001, "merged: {}", a.window_s);
    let fine = run(&world, "wait", Some(1.0)).unwrap().timeseries.unwrap();
    let counts = |t: &simbench::recorder::Timeseries| {
        let w = t.total();
        (
            w.requests,
            w.admitted,
            w.refused(),
            w.ok,
            w.errors,
            w.jobs_done,
            w.leases,
        )
    };
    assert_eq!(counts(&a), counts(&fine));
}

/// `simbench run --timeseries`: one row per (algorithm, seed, window), the same bytes on one
/// thread or two, and per run the windows' requests and jobs are the `--csv` row's.
#[test]
fn recorder_cli_writes_tidy_windows_that_add_up_to_the_csv() {
    let dir = crate::support::scratch_dir("timeseries");
    let path = |f: &str| dir.join(f).display().to_string();
    for threads in ["1", "2"] {
        let out = crate::support::simbench(&[
            "run",
            "--seeds",
            "2",
            "--threads",
            threads,
            "--window-s",
            "0.5",
            "--timeseries",
            &path(&format!("ts-{threads}.csv")),
            "--csv",
            &path("runs.csv"),
            "--quiet",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Times are written to the microsecond: a narrower window is refused, not printed as a
    // row whose start and end are one number.
    let narrow = crate::support::simbench(&[
        "run",
        "--window-s",
        "0.0000001",
        "--timeseries",
        &path("narrow.csv"),
    ]);
    assert_eq!(narrow.status.code(), Some(2));
    let err = String::from_utf8_lossy(&narrow.stderr);
    assert!(err.contains("must be at least 0.000001 s"), "{err}");
    assert!(!dir.join("narrow.csv").exists());
    let ts = std::fs::read_to_string(path("ts-1.csv")).unwrap();
    assert_eq!(ts, std::fs::read_to_string(path("ts-2.csv")).unwrap());
    let table = |text: &str| -> (Vec<String>, Vec<Vec<String>>) {
        let mut lines = text.lines();
        let header = lines
            .next()
            .unwrap()
            .split(',')
            .map(str::to_owned)
            .collect();
        let rows = lines
            .map(|l| l.split(',').map(str::to_owned).collect())
            .collect();
        (header, rows)
    };
    let (th, trows) = table(&ts);
    let (ch, crows) = table(&std::fs::read_to_string(path("runs.csv")).unwrap());
    let col = |h: &[String], name: &str| h.iter().position(|c| c == name).unwrap();
    assert!(th.iter().any(|c| c == "capacity.metered"), "{th:?}");
    for run in &crows {
        let key = (&run[col(&ch, "algorithm")], &run[col(&ch, "seed")]);
        let mine: Vec<&Vec<String>> = trows
            .iter()
            .filter(|r| (&r[col(&th, "algorithm")], &r[col(&th, "seed")]) == key)
            .collect();
        assert!(!mine.is_empty(), "{key:?}");
        for (i, r) in mine.iter().enumerate() {
            assert_eq!(r[col(&th, "window")], i.to_string());
            assert_eq!(
                r[col(&th, "start_s")].parse::<f64>().unwrap(),
                0.5 * i as f64
            );
        }
        for metric in ["requests", "jobs_done", "jobs_failed"] {
            let sum: u64 = mine
                .iter()
                .map(|r| r[col(&th, metric)].parse::<u64>().unwrap())
                .sum();
            let want: f64 = run[col(&ch, metric)].parse().unwrap();
            assert_eq!(sum as f64, want, "{key:?} {metric}");
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

/// The router's cooldowns are recorded per endpoint: on multi_vendor, where vendor_a's
/// degradation brings 429s, some window starts with an a-deployment cooling (and, vendor_b
/// being calm, ends with every one out of cooldown at some point); a strategy without
/// cooldowns records none.
#[test]
fn recorder_sees_the_routers_cooldowns_and_no_others() {
    let world = load(&crate::request_log::root().join("scenarios/multi_vendor.toml"));
    let router = run(&world, "router", Some(1.0))
        .unwrap()
        .timeseries
        .unwrap();
    let cooling = |t: &simbench::recorder::Timeseries, e: usize| {
        t.snapshots
            .iter()
            .filter(|s| s[e].cooldown == Some(true))
            .count()
    };
    assert!(
        router
            .snapshots
            .iter()
            .flatten()
            .all(|s| s.cooldown.is_some())
    );
    assert!(cooling(&router, 0) > 0, "a-east never cooled");
    assert!(
        router
            .snapshots
            .iter()
            .any(|s| s.iter().all(|s| s.cooldown == Some(false)))
    );
    let backoff = run(&world, "backoff", Some(1.0))
        .unwrap()
        .timeseries
        .unwrap();
    assert!(
        backoff
            .snapshots
            .iter()
            .flatten()
            .all(|s| s.cooldown.is_none())
    );
}

/// A trace of the first requests keeps only the breaker changes it writes, however long the
/// run: the changes kept are those of a trace of every request, up to the end of the last
/// request written.
#[test]
fn a_bounded_trace_keeps_only_the_breaker_changes_it_writes() {
    let clock = || 0.0;
    let mut dropped = 0;
    for path in all_worlds() {
        let world = load(&path);
        for name in ["backoff", "router"] {
            let traced = |max: usize| {
                simbench::sweep::traced_with_windows(
                    &world,
                    name,
                    (world.seed(), max),
                    (&clock, 1e9),
                )
            };
            let (Some(every), Some(bounded)) = (traced(usize::MAX), traced(200)) else {
                continue;
            };
            let shown = format!("{} {name}", path.display());
            let all = every.timeseries.expect("recorded").changes;
            let some = bounded.timeseries.expect("recorded").changes;
            let written =
                simbench::trace_event::count(&bounded.trace, bounded.trace_omitted, &all, 200);
            assert_eq!(some.len(), written.changes, "{shown}");
            assert_eq!(some[..], all[..some.len()], "{shown}");
            dropped += all.len() - some.len();
        }
    }
    assert!(
        dropped > 0,
        "some run changes its breakers after its 200th request"
    );
}
