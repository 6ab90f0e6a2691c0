//! The request log (`--request-log`, docs/request-log.md): its schema is generated and fresh,
//! tracing a run does not change it, and on every shipped and test-only world the log agrees
//! with the run's own counters, request by request and endpoint by endpoint.

use std::path::{Path, PathBuf};

use simbench::compile::{self, LoadOptions};
use simbench::harness::{self, RngScheme, RunConfig};
use simbench::request_log::{self, EntryOutcome};
use simbench::world::World;

use crate::support::simbench;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Every shipped world and the test-only worlds that stand on their own.
pub fn all_worlds() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["scenarios", "tests/data/worlds"] {
        for entry in std::fs::read_dir(root().join(dir)).expect("dir") {
            let path = entry.expect("entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".toml") && !name.ends_with("_base.toml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Loads a world file from disk, with its `extends` chain.
pub fn load(path: &Path) -> World {
    let read = |p: &Path| std::fs::read(p).map_err(|e| e.to_string());
    let bytes = std::fs::read(path).expect("world");
    let options = LoadOptions {
        read: &read,
        read_data: &read,
        overrides: &[],
    };
    compile::load_with(&path.display().to_string(), &bytes, &options)
        .unwrap_or_else(|e| panic!("{}", e.render_plain()))
}

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("schema/request-log.schema.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&doc)
        .expect("the schema compiles")
}

#[test]
fn request_log_schema_file_is_fresh() {
    let printed = simbench(&["schema", "request-log"]).stdout;
    assert!(
        printed == std::fs::read(root().join("schema/request-log.schema.json")).unwrap(),
        "schema/request-log.schema.json is stale; regenerate it with \
         `cargo run --release -- schema request-log > schema/request-log.schema.json`"
    );
}

/// On every world, for a strategy that hedges and one that does not: the traced run has the
/// metrics of the untraced one; every line validates; per endpoint the log's requests, 429s,
/// admissions and failures are the provider's counts; nothing is left in flight.
#[test]
fn request_log_agrees_with_the_runs_counters_on_every_world() {
    let validator = schema();
    for path in all_worlds() {
        let world = load(&path);
        for name in ["backoff", "hedged", "router"] {
            let Some(strategy) = simbench::sweep::strategy(&world, name) else {
                continue;
            };
            let config = |trace| RunConfig {
                seed: world.seed(),
                rng: RngScheme::Native,
                trace,
                window_s: None,
                out_of_time: &|| false,
            };
            let run = |trace| harness::run(&world, strategy.as_ref(), &config(trace));
            let (plain, traced) = (run(false), run(true));
            let shown = format!("{} {name}", path.display());
            assert_eq!(
                plain.metrics, traced.metrics,
                "{shown}: tracing changed the run"
            );
            let mut text = Vec::new();
            request_log::write(&world, &traced.trace, &mut text).unwrap();
            // Written while the run goes, the log is the same, line for line.
            let mut streamed = Vec::new();
            let (result, count) = request_log::stream(&world, &mut streamed, |sink| {
                harness::run_streamed(&world, strategy.as_ref(), &config(false), sink)
            })
            .unwrap();
            assert!(streamed == text, "{shown}: the streamed log differs");
            assert_eq!(
                result.metrics, plain.metrics,
                "{shown}: streaming changed it"
            );
            assert!(
                result.trace.is_empty(),
                "{shown}: a streamed run kept its trace"
            );
            assert_eq!(
                count as usize,
                traced.trace.len(),
                "{shown}: requests streamed"
            );
            let entries: Vec<request_log::Entry> = String::from_utf8(text)
                .unwrap()
                .lines()
                .map(|line| {
                    let value: serde_json::Value = serde_json::from_str(line).unwrap();
                    assert!(validator.is_valid(&value), "{shown}: {line}");
                    serde_json::from_value(value).unwrap()
                })
                .collect();
            let stalled = traced.outcome.is_stall();
            for (e, report) in traced.endpoints.iter().enumerate() {
                let mine: Vec<_> = entries
                    .iter()
                    .filter(|x| x.endpoint == world.endpoints()[e].id)
                    .collect();
                let count = |outcome| mine.iter().filter(|x| x.outcome == outcome).count() as u64;
                let p = &report.provider;
                assert_eq!(mine.len() as u64, p.requests, "{shown}: requests");
                let refused = p.refused_capacity
                    + p.refused_quota
                    + p.refused_request_limit
                    + p.refused_token_limit
                    + p.refused_daily_limit;
                assert_eq!(count(EntryOutcome::RateLimited), refused, "{shown}: 429s");
                assert_eq!(count(EntryOutcome::Overloaded), p.overloaded, "{shown}");
                assert_eq!(count(EntryOutcome::Rejected), p.rejected, "{shown}");
                let admitted = [
                    EntryOutcome::Ok,
                    EntryOutcome::Error,
                    EntryOutcome::ClientTimeout,
                    EntryOutcome::Cancelled,
                    EntryOutcome::Unfinished,
                ]
                .map(count)
                .iter()
                .sum::<u64>();
                assert_eq!(admitted, p.admitted, "{shown}: admitted");
                // The provider counts a client timeout as a failure, a cancellation not.
                let failed = count(EntryOutcome::Error) + count(EntryOutcome::ClientTimeout);
                assert_eq!(failed, p.failed, "{shown}: failed");
                if !stalled {
                    assert_eq!(count(EntryOutcome::Unfinished), 0, "{shown}");
                }
            }
            assert!(
                entries.iter().all(|x| x.end_s >= x.start_s),
                "{shown}: an answer before its request"
            );
        }
    }
}

#[test]
fn request_log_cli_writes_the_named_run_and_refuses_a_run_that_is_not_in_it() {
    let dir = crate::support::scratch_dir("request-log");
    let log = dir.join("wait.jsonl");
    let log_arg = log.to_str().unwrap();
    let json = dir.join("report.json");
    let seed = "20260918";
    let out = simbench(&[
        "run",
        "--algorithms",
        "wait,backoff",
        "--request-log",
        log_arg,
        "--log-run",
        &format!("wait:{seed}"),
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let jobs: std::collections::BTreeSet<u64> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<request_log::Entry>(l)
                .unwrap()
                .job
                .unwrap()
        })
        .collect();
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let run = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["algorithm"] == "wait" && r["seed"].as_u64() == seed.parse().ok())
        .expect("the logged run is in the report");
    let started = run["metrics"]["jobs_done"].as_f64().unwrap()
        + run["metrics"]["jobs_failed"].as_f64().unwrap();
    assert_eq!(
        jobs.len() as f64,
        started,
        "the log holds every job the run started"
    );
    // The same run logged twice is byte-identical.
    let again = simbench(&[
        "run",
        "--algorithms",
        "backoff,wait",
        "--threads",
        "1",
        "--request-log",
        "-",
        "--log-run",
        &format!("wait:{seed}"),
        "--quiet",
    ]);
    assert_eq!(String::from_utf8(again.stdout).unwrap(), text);
    for (bad, says) in [
        ("nope", "--log-run names `nope`, which does not run"),
        (
            "wait:7",
            "seed 7 is not one of this run's seeds (20260917 to 20260919)",
        ),
        ("wait:x", "`x` is not a seed"),
    ] {
        let out = simbench(&[
            "run",
            "--algorithms",
            "wait",
            "--request-log",
            log_arg,
            "--log-run",
            bad,
        ]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{bad}: {stderr}");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// The median latency of the successful requests in a run's own request log, in ms.
fn logged_success_median_ms(log: &Path) -> (f64, usize) {
    let mut latencies: Vec<f64> = std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<request_log::Entry>(l).unwrap())
        .filter(|e| e.outcome == EntryOutcome::Ok)
        .map(|e| (e.end_s - e.start_s) * 1000.0)
        .collect();
    latencies.sort_by(f64::total_cmp);
    let n = latencies.len();
    let pos = (n - 1) as f64 * 0.5;
    let (lo, w) = (pos.floor() as usize, pos.fract());
    let hi = (lo + 1).min(n - 1);
    (latencies[lo] * (1.0 - w) + latencies[hi] * w, n)
}

/// A native run past `metrics::EXACT_CAP` samples bins them: `request_latency_p50_ms` is then
/// within `quantile::RELATIVE_ERROR` of the exact median of the same run's successful requests,
/// read from its request log; a run under the cap is exact (to the log's printed precision).
#[test]
fn a_binned_percentile_is_within_its_bound_of_the_logged_requests() {
    use simbench::metrics::{EXACT_CAP, quantile::RELATIVE_ERROR};
    let dir = crate::support::scratch_dir("binned");
    for (jobs, binned) in [("3000", false), ("20000", true)] {
        let log = dir.join(format!("{jobs}.jsonl"));
        let out = simbench(&[
            "run",
            "--algorithms",
            "wait",
            "--seeds",
            "1",
            "--jobs",
            jobs,
            "--set",
            "horizon_s=1e12",
            "--set",
            "breaker.dead_after=1000000",
            "--request-log",
            log.to_str().unwrap(),
            "--quiet",
            "--json",
            "-",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let metric = report["runs"][0]["metrics"]["request_latency_p50_ms"]
            .as_f64()
            .unwrap();
        let (exact, n) = logged_success_median_ms(&log);
        assert_eq!(n > EXACT_CAP, binned, "{n} successful requests");
        let rel = ((metric - exact) / exact).abs();
        if binned {
            assert!(
                rel <= RELATIVE_ERROR * (1.0 + 1e-6),
                "{jobs} jobs: {metric} vs {exact}"
            );
            assert!(rel > 1e-9, "{jobs} jobs: binned, yet exact");
        } else {
            assert!(rel < 1e-8, "{jobs} jobs: {metric} vs {exact}");
        }
    }
}
