//! The comparison report in-process: the terminal table's snapshot, thread-count independence of
//! the sweep, stalled runs carried through, and the shape of the JSON, markdown and CSV outputs.
//!
//! The sweep gets a frozen clock, so wall times are 0 and the output is fully deterministic.
//! Refresh the snapshot with `SNAPSHOTS=overwrite cargo test --release report_` and review the
//! diff.

use crate::support::DOOMED;
use simbench::compile;
use simbench::harness::RngScheme;
use simbench::metrics::{CATALOGUE, Metric};
use simbench::report::rank::Standing;
use simbench::report::terminal::TerminalOptions;
use simbench::report::{self, Report, Run, SweepInfo};
use simbench::sweep::{self, SweepConfig};
use simbench::world::World;

const TINY: &str = r#"
name = "tiny"
summary = "Two endpoints, one of them metered: a table that fits on a screen."
seed = 7
jobs = 60
concurrency = 4
horizon_s = 20.0

[unsuited]
failover = "single pool: nothing to fail over to"

[[endpoints]]
id = "quick"
capacity = 2
latency = { median_s = 0.1, sigma = 0.2 }
failures = { error_rate = 0.05, storm_rate = 0.0 }

[[endpoints]]
id = "metered"
capacity = 2
latency = { median_s = 0.3, sigma = 0.3 }
failures = { error_rate = 0.02, storm_rate = 0.0 }
rate_limit = { per_window = 30, window_s = 10.0 }
"#;

fn load(text: &str) -> World {
    match compile::load("test.toml", text.as_bytes()) {
        Ok(world) => world,
        Err(errors) => panic!("{}", errors.render_plain()),
    }
}

fn runs(world: &World, algorithms: &[&str], seeds: u32, threads: usize) -> (Vec<u64>, Vec<Run>) {
    let names: Vec<String> = algorithms.iter().map(|a| a.to_string()).collect();
    let seeds = sweep::seeds(world, seeds);
    let plan = sweep::plan(&names, &seeds);
    let frozen = || 0.0;
    let config = SweepConfig {
        rng: RngScheme::Native,
        threads,
        wall_budget_s: 600.0,
        clock: &frozen,
        on_run: &|_| {},
        window_s: None,
    };
    let runs = sweep::sweep(world, &plan, &config);
    (seeds, runs)
}

fn compare(world: &World, algorithms: &[&str], seeds: u32, threads: usize) -> Report {
    let (seeds, runs) = runs(world, algorithms, seeds, threads);
    let info = SweepInfo {
        seeds,
        rng: "native",
        wall_s: 0.0,
    };
    report::analyse(world, info, runs)
}

/// Compares `actual` with the snapshot block `name` in this file, or rewrites it when
/// `SNAPSHOTS=overwrite`.
#[track_caller]
fn check_snapshot(name: &str, actual: &str) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/report.rs");
    let source = std::fs::read_to_string(path).expect("own source");
    let begin = format!("// snapshot {name} begin\n");
    let end = format!("// snapshot {name} end\n");
    let start = source.find(&begin).expect("snapshot block") + begin.len();
    let stop = start + source[start..].find(&end).expect("snapshot end");
    let block = &source[start..stop];
    let expected = block
        .strip_prefix("const _: &str = r#\"\n")
        .and_then(|b| b.strip_suffix("\"#;\n"))
        .unwrap_or("");
    if expected == actual {
        return;
    }
    if std::env::var_os("SNAPSHOTS").is_some_and(|v| v == "overwrite") {
        let fresh = format!(
            "{}const _: &str = r#\"\n{actual}\"#;\n{}",
            &source[..start],
            &source[stop..]
        );
        std::fs::write(path, fresh).expect("rewrite the snapshot");
        return;
    }
    panic!(
        "snapshot `{name}` differs; rerun with SNAPSHOTS=overwrite to accept.\n--- expected\n{expected}\n--- actual\n{actual}"
    );
}

#[test]
fn report_terminal_table_snapshot() {
    let world = load(TINY);
    let report = compare(
        &world,
        &["immediate", "wait", "backoff", "sticky", "failover"],
        3,
        2,
    );
    let table = report::terminal::render(&report, &TerminalOptions::full(false));
    check_snapshot("table", &table);
}

// snapshot table begin
const _: &str = r#"
verdict: no decision on 3 seeds: sticky leads jobs_done but cannot be separated from wait, backoff, immediate (+2.3 over wait, 95 % CI -7.7 to +12.4); of those, immediate has the lowest successful_job_latency_p99_ms but cannot be separated from backoff, sticky, wait (-761.23 over backoff, 95 % CI -4,122.81 to +2,600.35); run more seeds
  objective: most jobs_done; then lowest successful_job_latency_p99_ms (the default; [objective] in the world changes it)
  not judged: failover (unsuited: single pool: nothing to fail over to)
╭─────────────────────────────────────────┬────────┬────────────────────┬──────────────────────┬───────────────────┬────────────────────┬──────────────────────┬───────────────────────────────────────╮
│              metric [unit]              │ better │     immediate      │         wait         │      backoff      │       sticky       │    failover (n/a)    │                verdict                │
├─────────────────────────────────────────┼────────┼────────────────────┼──────────────────────┼───────────────────┼────────────────────┼──────────────────────┼───────────────────────────────────────┤
│ jobs_done [jobs]                        │ higher │       19.7 ± 13.7* │          24.7 ± 8.7* │       24.3 ± 9.3* │       27.0 ± 10.4* │          24.7 ± 8.7  │ tie: sticky, wait, backoff, immediate │
│ jobs_failed [jobs]                      │ —      │       40.3 ± 13.7  │          31.3 ± 4.9  │       31.0 ± 2.6  │        30.3 ± 5.9  │          31.3 ± 4.9  │ —                                     │
│ jobs_unstarted [jobs]                   │ —      │         0.0 ± 0.0  │           4.0 ± 4.0  │        4.7 ± 8.1  │         2.7 ± 4.6  │           4.0 ± 4.0  │ —                                     │
│ makespan_s [s]                          │ —      │      12.47 ± 7.60  │       32.96 ± 15.18  │     19.90 ± 2.74  │      23.98 ± 8.26  │       32.96 ± 15.18  │ —                                     │
│ throughput_rps [jobs/s] †               │ higher │  (1.5082 ± 0.2688) │     0.9437 ± 0.7592* │  1.2792 ± 0.6142* │   1.2953 ± 0.7386* │     0.9437 ± 0.7592  │ tie: sticky, backoff, wait            │
│ requests [requests]                     │ —      │     243.0 ± 161.4  │        346.3 ± 56.1  │     335.3 ± 78.7  │      350.7 ± 60.9  │        346.3 ± 56.1  │ —                                     │
│ attempts_per_completed_job [attempts] † │ lower  │       (12.7 ± 5.9) │          11.5 ± 3.9* │       11.2 ± 3.1* │        10.8 ± 4.3* │          11.5 ± 3.9  │ tie: sticky, backoff, wait            │
│ attempt_inflation [ratio] †             │ lower  │  (1.8244 ± 0.3808) │     2.4121 ± 0.4267* │  2.3697 ± 0.3427* │   2.3598 ± 0.4600* │     2.4121 ± 0.4267  │ tie: sticky, backoff, wait            │
│ failed_attempt_rate [ratio] †           │ lower  │  (0.7127 ± 0.1175) │     0.6987 ± 0.0988* │  0.6981 ± 0.0872* │   0.6839 ± 0.1094* │     0.6987 ± 0.0988  │ tie: sticky, backoff, wait            │
│ retry_rate [ratio] †                    │ lower  │  (0.4332 ± 0.1342) │     0.5772 ± 0.0700* │  0.5723 ± 0.0597* │   0.5663 ± 0.0761* │     0.5772 ± 0.0700  │ tie: sticky, backoff, wait            │
│ refusal_rate [ratio] †                  │ lower  │  (0.4470 ± 0.0464) │     0.5154 ± 0.1404* │  0.5161 ± 0.1203* │   0.5039 ± 0.1505* │     0.5154 ± 0.1404  │ tie: sticky, wait, backoff            │
│ error_rate [ratio] †                    │ lower  │  (0.0275 ± 0.0174) │     0.0213 ± 0.0191* │  0.0188 ± 0.0147* │   0.0192 ± 0.0158* │     0.0213 ± 0.0191  │ tie: backoff, sticky, wait            │
│ successful_job_latency_p50_ms [ms] †‡   │ lower  │  (956.03 ± 401.42) │    1311.83 ± 560.56* │ 1207.78 ± 561.01* │  1269.19 ± 545.63* │    1311.83 ± 560.56  │ tie: backoff, sticky, wait            │
│ successful_job_latency_p95_ms [ms] †‡   │ lower  │ (2303.75 ± 344.67) │ 15861.12 ± 13609.54* │ 2967.22 ± 929.73* │ 6975.35 ± 7493.07* │ 15861.12 ± 13609.54  │ tie: backoff, sticky, wait            │
│ successful_job_latency_p99_ms [ms] †‡   │ lower  │ (2673.04 ± 654.79) │ 16536.81 ± 13983.30* │ 3434.26 ± 765.21* │ 7349.24 ± 7535.15* │ 16536.81 ± 13983.30  │ tie: backoff, sticky, wait            │
│ acquire_wait_p50_ms [ms] †‡             │ lower  │      (0.00 ± 0.00) │         0.00 ± 0.00  │      0.00 ± 0.00  │       0.00 ± 0.00  │         0.00 ± 0.00  │ zero for all                          │
│ acquire_wait_p99_ms [ms] †‡             │ lower  │      (0.00 ± 0.00) │   5820.16 ± 6723.92* │ 883.58 ± 1505.88* │ 4393.52 ± 7609.80* │   5820.16 ± 6723.92  │ tie: backoff, sticky, wait            │
│ request_latency_p50_ms [ms]             │ —      │    117.50 ± 12.29  │      152.99 ± 70.83  │   164.19 ± 94.80  │    151.78 ± 71.83  │      152.99 ± 70.83  │ —                                     │
│ utilization [ratio] †                   │ higher │  (1.1641 ± 0.0744) │     0.6336 ± 0.5315* │  0.9756 ± 0.3089* │   0.9023 ± 0.5039* │     0.6336 ± 0.5315  │ tie: backoff, sticky, wait            │
│ endpoint_spread [ratio]                 │ —      │   0.5772 ± 0.2277  │     0.5735 ± 0.1569  │  0.7726 ± 0.0195  │   0.6200 ± 0.1536  │     0.5735 ± 0.1569  │ —                                     │
│ leases_active_at_end [leases]           │ lower  │         0.0 ± 0.0  │           0.0 ± 0.0  │        0.0 ± 0.0  │         0.0 ± 0.0  │           0.0 ± 0.0  │ zero for all                          │
│ jobs_stalled [jobs]                     │ —      │         0.0 ± 0.0  │           0.0 ± 0.0  │        0.0 ± 0.0  │         0.0 ± 0.0  │           0.0 ± 0.0  │ —                                     │
│ stall_rate [ratio]                      │ lower  │   0.0000 ± 0.0000  │     0.0000 ± 0.0000  │  0.0000 ± 0.0000  │   0.0000 ± 0.0000  │     0.0000 ± 0.0000  │ zero for all                          │
│ service_p50_ms [ms] †‡                  │ lower  │    (116.95 ± 8.08) │      156.28 ± 75.03* │   163.78 ± 91.87* │    155.18 ± 75.96* │      156.28 ± 75.03  │ tie: sticky, wait, backoff            │
│ service_p95_ms [ms] †‡                  │ lower  │   (408.99 ± 24.72) │      410.08 ± 18.27* │   413.73 ± 44.73* │    407.99 ± 21.88* │      410.08 ± 18.27  │ tie: sticky, wait, backoff            │
│ service_p99_ms [ms] †‡                  │ lower  │   (546.78 ± 72.37) │      541.98 ± 48.87* │  681.85 ± 195.54* │    542.00 ± 48.88* │      541.98 ± 48.87  │ tie: wait, sticky, backoff            │
│ observed_p50_ms [ms] †‡                 │ lower  │    (116.95 ± 8.08) │      156.28 ± 75.03* │   163.78 ± 91.87* │    155.18 ± 75.96* │      156.28 ± 75.03  │ tie: sticky, wait, backoff            │
│ observed_p95_ms [ms] †‡                 │ lower  │   (408.99 ± 24.72) │      410.08 ± 18.27* │   413.73 ± 44.73* │    407.99 ± 21.88* │      410.08 ± 18.27  │ tie: sticky, wait, backoff            │
│ observed_p99_ms [ms] †‡                 │ lower  │   (546.78 ± 72.37) │      541.98 ± 48.87* │  681.85 ± 195.54* │    542.00 ± 48.88* │      541.98 ± 48.87  │ tie: wait, sticky, backoff            │
│ queue_wait_p50_ms [ms] †‡               │ lower  │      (0.00 ± 0.00) │         0.00 ± 0.00  │      0.00 ± 0.00  │       0.00 ± 0.00  │         0.00 ± 0.00  │ zero for all                          │
│ queue_wait_p99_ms [ms] †‡               │ lower  │      (0.00 ± 0.00) │         0.00 ± 0.00  │      0.00 ± 0.00  │       0.00 ± 0.00  │         0.00 ± 0.00  │ zero for all                          │
│ queue_wait_mean_ms [ms] †‡              │ lower  │      (0.00 ± 0.00) │         0.00 ± 0.00  │      0.00 ± 0.00  │       0.00 ± 0.00  │         0.00 ± 0.00  │ zero for all                          │
│ queue_share [ratio] †‡                  │ lower  │  (0.0000 ± 0.0000) │     0.0000 ± 0.0000  │  0.0000 ± 0.0000  │   0.0000 ± 0.0000  │     0.0000 ± 0.0000  │ zero for all                          │
│ refusal_timeout_ratio [ratio] †         │ lower  │  (0.4544 ± 0.0539) │     0.5184 ± 0.1409* │  0.5192 ± 0.1211* │   0.5077 ± 0.1502* │     0.5184 ± 0.1409  │ tie: sticky, wait, backoff            │
│ retry_requests [requests]               │ —      │       99.7 ± 65.4  │        159.7 ± 14.2  │     150.7 ± 22.7  │      157.0 ± 10.0  │        159.7 ± 14.2  │ —                                     │
│ retry_observed_p99_ms [ms]              │ —      │   897.79 ± 674.18  │ 14344.61 ± 14103.81  │ 1396.47 ± 973.72  │ 5209.75 ± 7614.95  │ 14344.61 ± 14103.81  │ —                                     │
│ retry_queue_wait_p99_ms [ms]            │ —      │   760.95 ± 722.60  │ 14140.72 ± 14018.07  │ 1182.92 ± 891.40  │ 5046.47 ± 7667.38  │ 14140.72 ± 14018.07  │ —                                     │
│ concurrency_used [jobs]                 │ —      │         4.0 ± 0.0  │           4.0 ± 0.0  │        4.0 ± 0.0  │         4.0 ± 0.0  │           4.0 ± 0.0  │ —                                     │
╰─────────────────────────────────────────┴────────┴────────────────────┴──────────────────────┴───────────────────┴────────────────────┴──────────────────────┴───────────────────────────────────────╯
tiny · 3 seeds 7…9 · 60 jobs × 3 steps × 2 calls, 4 workers · horizon 20 s · wall 0.0 s · world e216ddb5918bc872
mean ± sample stdev over seeds. * = best mean, or not separable from the leader: within 1 % of it, or within 2 paired standard errors of the per-seed differences (the reference's winner rule; at 3 seeds its confidence is 82 %, not the verdict's 95 %: the verdict uses Student-t intervals).
† gated: only algorithms whose mean jobs_done reaches 90 % of the best compete; (brackets) = excluded by that gate.
excluded from † rows (completion vs the best): immediate 72.8 %
‡ latency: only algorithms whose every run passes the validity gate compete (p99 queue wait under 5 % of p99 observed); (brackets) = INVALID.
not applicable to this world, so not shown: retries_denied (no [retry.budget]); throttled_requests (no [retry.throttle]); recovery_s, goodput_lost_jobs (no incident that ends); cache_hit_rate (no reuse cache).
undefined (nothing to compute from; n/a where no run has a value, otherwise the mean of the runs that have one):
  immediate: retry_observed_p99_ms, retry_queue_wait_p99_ms on 1 of 3 runs (no retry request was served)
n/a: failover is unsuited to this world and never ranked: single pool: nothing to fail over to
"#;
// snapshot table end

#[test]
fn report_colour_only_adds_escapes() {
    let world = load(TINY);
    let report = compare(&world, &["wait", "sticky"], 2, 1);
    let plain = report::terminal::render(&report, &TerminalOptions::full(false));
    let coloured = report::terminal::render(&report, &TerminalOptions::full(true));
    assert!(coloured.contains("\u{1b}["));
    assert!(!plain.contains('\u{1b}'));
    let stripped = strip_ansi(&coloured);
    assert_eq!(stripped, plain);
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn report_sweep_is_identical_on_one_thread_and_on_many() {
    let world = compile::builtin_bursty().with_overrides(&simbench::world::Overrides {
        jobs: Some(300),
        ..Default::default()
    });
    // Every registered strategy: the adaptive ones keep per-run state, which must not leak
    // between runs that share a thread.
    let algorithms: Vec<&str> = simbench::client::registry::names().collect();
    let (_, serial) = runs(&world, &algorithms, 3, 1);
    let (_, parallel) = runs(&world, &algorithms, 3, 8);
    assert_eq!(serial, parallel);
    let keys: Vec<(&str, u64)> = serial
        .iter()
        .map(|r| (r.algorithm.as_str(), r.seed))
        .collect();
    let seeds = sweep::seeds(&world, 3);
    let names: Vec<String> = algorithms.iter().map(|a| a.to_string()).collect();
    assert_eq!(keys, sweep::plan(&names, &seeds));
}

#[test]
fn report_stalled_runs_are_outcomes_ranked_with_what_they_did() {
    let world = load(DOOMED);
    let report = compare(&world, &["wait", "immediate", "backoff"], 2, 2);
    let wait = report
        .columns
        .iter()
        .find(|c| c.algorithm == "wait")
        .unwrap();
    assert_eq!(wait.stalls.len(), 2, "{:?}", report.runs);
    assert!(wait.unfinished.is_empty());
    assert_eq!(wait.standing(), Standing::Ranked);
    assert_eq!(wait.summary(Metric::StallRate).unwrap().mean, 1.0);
    assert!(wait.summary(Metric::JobsStalled).unwrap().mean >= 1.0);
    assert!(!report.nothing_finished());
    assert_eq!(report.unfinished_runs(), 0);
    // It is judged, and loses on what it did: immediate fails every job but ends, wait ends none.
    assert!(report.decision.left_out.is_empty(), "{:?}", report.decision);
    let table = report::terminal::render(&report, &TerminalOptions::full(false));
    assert!(table.contains("wait (2/2 stalled)"), "{table}");
    assert!(
        table.contains("wait: stalled on 2 of 2 seeds (stall_rate)"),
        "{table}"
    );
    let json: serde_json::Value = serde_json::from_str(&report::json::render(&report)).unwrap();
    assert_eq!(json["stalled"]["wait"].as_array().unwrap().len(), 2);
    assert_eq!(json["runs"][0]["outcome"], "stalled");
    assert_eq!(json["runs"][0]["metrics"]["stall_rate"], 1.0);
    assert_eq!(json["aggregates"]["wait"]["stall_rate"]["mean"], 1.0);
    assert!(json["unfinished"].as_object().unwrap().is_empty());
}

#[test]
fn report_under_reference_rng_a_stall_has_no_result() {
    // The reference errors out on a stalled run, so exact replay keeps it unfinished.
    let world = load(DOOMED);
    let names: Vec<String> = ["wait", "immediate"].map(String::from).to_vec();
    let seeds = sweep::seeds(&world, 2);
    let plan = sweep::plan(&names, &seeds);
    let frozen = || 0.0;
    let config = SweepConfig {
        rng: RngScheme::Reference,
        threads: 2,
        wall_budget_s: 600.0,
        clock: &frozen,
        on_run: &|_| {},
        window_s: None,
    };
    let runs = sweep::sweep(&world, &plan, &config);
    let info = SweepInfo {
        seeds,
        rng: "reference",
        wall_s: 0.0,
    };
    let report = report::analyse(&world, info, runs);
    let wait = &report.columns[0];
    assert_eq!(wait.unfinished.len(), 2);
    assert!(wait.stalls.is_empty());
    assert_eq!(wait.standing(), Standing::Unfinished);
    let table = report::terminal::render(&report, &TerminalOptions::full(false));
    assert!(
        table.contains("wait: 2 of 2 runs stalled; it is left out of every ranking."),
        "{table}"
    );
}

#[test]
fn report_json_names_every_metric_and_the_world() {
    let world = load(TINY);
    let report = compare(&world, &["wait", "sticky", "failover"], 2, 2);
    let text = report::json::render(&report);
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let hash = json["world_hash"].as_str().unwrap();
    assert_eq!(hash.len(), 16);
    assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(json["simbench_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(json["rng"], "native");
    // The tiny world has no incident, cache, budget or throttle: those five metrics do not
    // apply, and are named with the reason instead of shown as zeros.
    let not_applicable = json["not_applicable"].as_object().unwrap();
    let names: Vec<&str> = not_applicable.keys().map(String::as_str).collect();
    // (serde_json's Value sorts keys; the text keeps catalogue order.)
    assert_eq!(
        names,
        [
            "cache_hit_rate",
            "goodput_lost_jobs",
            "recovery_s",
            "retries_denied",
            "throttled_requests"
        ]
    );
    assert!(
        text.find("\"retries_denied\": \"no").unwrap()
            < text.find("\"cache_hit_rate\": \"no").unwrap()
    );
    assert_eq!(not_applicable["cache_hit_rate"], "no reuse cache");
    let applicable: Vec<_> = CATALOGUE
        .iter()
        .filter(|m| !names.contains(&m.name))
        .filter(|m| !m.needs.is_some_and(|f| f.quiet()))
        .collect();
    assert_eq!(json["winners"].as_object().unwrap().len(), applicable.len());
    for name in &names {
        assert!(json["winners"].get(name).is_none(), "{name}");
        assert!(json["aggregates"]["wait"].get(name).is_none(), "{name}");
        assert!(json["runs"][0]["metrics"].get(name).is_none(), "{name}");
    }
    assert_eq!(
        json["runs"][0]["metrics"].as_object().unwrap().len(),
        applicable.len()
    );
    let gated = applicable.iter().filter(|m| m.gated).count();
    assert_eq!(
        json["excluded_by_completion"].as_object().unwrap().len(),
        gated
    );
    assert_eq!(
        json["unsuited"]["failover"],
        "single pool: nothing to fail over to"
    );
    assert_eq!(json["runs"].as_array().unwrap().len(), 6);
    for key in ["mean", "min", "max", "stdev", "median"] {
        assert!(
            json["aggregates"]["wait"]["jobs_done"][key].is_number(),
            "{key}"
        );
    }
    // Objects keep report order, not alphabetical order.
    let wait = text.find("\"wait\": {").unwrap();
    let sticky = text.find("\"sticky\": {").unwrap();
    assert!(wait < sticky);
    assert!(text.find("\"jobs_done\": [").unwrap() < text.find("\"wall_s\": [").unwrap());
}

#[test]
fn report_markdown_and_csv_carry_every_run_and_metric() {
    let world = load(TINY);
    let report = compare(&world, &["wait", "sticky"], 3, 2);
    let md = report::markdown::render(&report);
    assert!(md.starts_with("### `tiny`\n\nTwo endpoints"));
    assert!(md.contains("| metric | unit | better | `wait` | `sticky` | verdict |"));
    // Every metric that applies but the wall time, which is in the facts line, not a row.
    for info in CATALOGUE {
        let shown = md.contains(&format!("| {}", info.name));
        let expected = info.needs.is_none() && info.name != "wall_s";
        assert_eq!(shown, expected, "{}", info.name);
    }
    assert!(md.contains(" · wall "));
    assert!(md.contains("not applicable to this world, so not shown: retries_denied"));
    assert!(md.contains("| algorithm | `quick` | `metered` |"));
    assert!(md.contains("Failed attempts by error class"));
    let csv = report::csv::render(&report);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 6);
    assert_eq!(lines[0].split(',').count(), 7 + CATALOGUE.len());
    let hash = &report.world.hash;
    assert!(lines[1].starts_with(&format!("tiny,{hash},native,wait,7,ok,true,")));
    assert!(
        lines
            .iter()
            .all(|l| l.split(',').count() == 7 + CATALOGUE.len())
    );
    // Every world has the same columns; a metric that does not apply has empty cells.
    let header: Vec<&str> = lines[0].split(',').collect();
    let cells: Vec<&str> = lines[1].split(',').collect();
    for (name, cell) in header.iter().zip(&cells).skip(7) {
        let info = CATALOGUE.iter().find(|m| m.name == *name).unwrap();
        assert_eq!(cell.is_empty(), info.needs.is_some(), "{name}");
    }
}
