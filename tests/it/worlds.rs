//! Worlds as data: every shipped scenario validates and runs, a test-only world that uses every
//! new feature (two pools, an incident, caches, `extends`) runs with no code written for it, and
//! the multi-vendor world separates failover from waiting on the primary.

use std::path::Path;

use crate::support::simbench;

fn scenario_files() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("scenarios/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| format!("scenarios/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    names.sort();
    names
}

/// Runs `file` with `extra` arguments and returns the JSON report.
fn run_json(file: &str, extra: &[&str]) -> serde_json::Value {
    let out_dir = tempdir();
    let json = out_dir.join("report.json");
    let json_arg = json.to_string_lossy().into_owned();
    let mut args = vec!["run", file, "--quiet", "--json", &json_arg];
    args.extend_from_slice(extra);
    let out = simbench(&args);
    assert!(
        out.status.success(),
        "{file}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&json).expect("report written");
    std::fs::remove_dir_all(&out_dir).ok();
    serde_json::from_str(&text).expect("JSON")
}

fn tempdir() -> std::path::PathBuf {
    crate::support::scratch_dir("worlds")
}

fn mean(report: &serde_json::Value, algorithm: &str, metric: &str) -> f64 {
    report["aggregates"][algorithm][metric]["mean"]
        .as_f64()
        .unwrap_or_else(|| panic!("{algorithm}.{metric}"))
}

#[test]
fn worlds_every_shipped_scenario_validates_and_runs() {
    let files = scenario_files();
    assert!(files.len() >= 8, "{files:?}");
    let mut args = vec!["validate"];
    args.extend(files.iter().map(String::as_str));
    let out = simbench(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for file in &files {
        let report = run_json(file, &["--jobs", "60", "--seeds", "1"]);
        let runs = report["runs"].as_array().expect("runs");
        assert!(!runs.is_empty(), "{file}");
        for run in runs {
            let outcome = run["outcome"].as_str().expect("outcome");
            assert!(
                outcome == "ok" || outcome == "stalled",
                "{file} {}: {outcome}",
                run["algorithm"]
            );
            assert_within_ranges(file, run);
        }
    }
}

/// Every value a run reports lies within its metric's range in the catalogue, which the
/// validator trusts when it refuses a limit outside it.
fn assert_within_ranges(file: &str, run: &serde_json::Value) {
    for info in simbench::metrics::CATALOGUE {
        let Some(value) = run["metrics"][info.name].as_f64() else {
            continue; // Not applicable, or undefined in this run.
        };
        let (lo, hi) = info.range;
        assert!(
            (lo..=hi).contains(&value),
            "{file} {} {}: {value} outside [{lo}, {hi}]",
            run["algorithm"],
            info.name
        );
    }
}

#[test]
fn worlds_test_only_world_with_pools_incident_cache_and_extends_runs_as_data() {
    let file = "tests/data/worlds/two_vendors.toml";
    let out = simbench(&["validate", file]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = run_json(file, &["--seeds", "2"]);
    assert_eq!(report["scenario"], "two_vendors");
    assert_eq!(report["unsuited"], serde_json::json!({}));
    for run in report["runs"].as_array().expect("runs") {
        assert_eq!(run["outcome"], "ok", "{}", run["algorithm"]);
        let admitted = &run["endpoint_admitted"];
        assert!(
            admitted.get("b-2").is_some(),
            "endpoints of both pools reported"
        );
    }
    // The cache and the ending incident make their metrics apply; the retry options it lacks
    // are named as not applicable rather than shown as zeros.
    assert_eq!(
        report["not_applicable"],
        serde_json::json!({
            "retries_denied": "no [retry.budget]",
            "throttled_requests": "no [retry.throttle]"
        })
    );
    // The cache, the incident and the second pool all show in the numbers.
    assert!(mean(&report, "sticky", "cache_hit_rate") > 0.5);
    assert!(mean(&report, "wait", "goodput_lost_jobs") > 0.0);
    let backup = |algorithm: &str| -> u64 {
        report["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["algorithm"] == algorithm)
            .map(|r| r["endpoint_admitted"]["b-1"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(backup("wait"), 0, "wait never leaves the primary pool");
    assert!(backup("failover") > 0, "failover uses the backup pool");
    assert!(
        backup("least_busy") > 0,
        "least_busy spreads over both pools"
    );
}

#[test]
fn worlds_multi_vendor_ranks_failover_and_least_busy_and_separates_them_from_wait() {
    let report = run_json("scenarios/multi_vendor.toml", &["--seeds", "3"]);
    for algorithm in ["failover", "least_busy"] {
        assert!(report["unsuited"].get(algorithm).is_none(), "{algorithm}");
        assert!(
            report["excluded_by_completion"].get(algorithm).is_none(),
            "{algorithm} is ranked"
        );
    }
    // Failing over to the second vendor keeps goodput up while the primary is degraded.
    let winners = report["winners"]["throughput_rps"].as_array().expect("row");
    assert!(!winners.contains(&serde_json::json!("wait")), "{winners:?}");
    assert!(
        mean(&report, "failover", "throughput_rps") > 1.2 * mean(&report, "wait", "throughput_rps")
    );
    assert!(
        mean(&report, "failover", "successful_job_latency_p99_ms")
            < 0.5 * mean(&report, "wait", "successful_job_latency_p99_ms")
    );
}

/// Admitted requests per endpoint of a two-endpoint, one-pool world with `selection`.
fn admitted_with(selection: &str, workers: u32) -> Vec<u64> {
    let text = format!(
        r#"
name = "selection"
summary = "Two equal endpoints in one pool."
jobs = 200
concurrency = {workers}
steps_per_job = 1
calls_per_step = 1
[cycle]
period_s = 0.0
[[pools]]
name = "only"
selection = "{selection}"
[[endpoints]]
id = "first"
capacity = 4
latency = {{ distribution = "constant", mean_s = 0.5, tail_rate = 0.0 }}
failures = {{ error_rate = 0.0, storm_rate = 0.0 }}
[[endpoints]]
id = "second"
capacity = 4
latency = {{ distribution = "constant", mean_s = 0.5, tail_rate = 0.0 }}
failures = {{ error_rate = 0.0, storm_rate = 0.0 }}
"#
    );
    let world = crate::sim::load(&text);
    let result = crate::sim::run(&world, "wait", 1, false);
    result
        .endpoints
        .iter()
        .map(|e| e.provider.admitted)
        .collect()
}

#[test]
fn worlds_pool_selection_rules_are_data() {
    // In order: the first endpoint takes everything it can hold.
    assert_eq!(admitted_with("in_order", 4), [200, 0]);
    // Round robin: one worker alternates, whatever the load.
    assert_eq!(admitted_with("round_robin", 1), [100, 100]);
    // Least busy: one worker always finds both idle and rotates among equals too; with four
    // workers both endpoints share the load.
    let least_busy = admitted_with("least_busy", 4);
    assert_eq!(least_busy.iter().sum::<u64>(), 200);
    assert!(least_busy.iter().all(|&n| n >= 80), "{least_busy:?}");
}

/// The clients of `llm_two_vendors` that use only the primary vendor (`least_busy` and `hedged`
/// look at every pool; `failover` and the routers fall back to the secondary).
const PRIMARY_ONLY: [&str; 12] = [
    "wait",
    "backoff",
    "sticky",
    "quota_aware",
    "p2c",
    "retry_after_aware",
    "aimd",
    "gradient",
    "sdk_retry",
    "tenacity_exponential",
    "budget_pacer",
    "header_pacer",
];

#[test]
fn worlds_llm_two_vendors_router_and_failover_beat_every_primary_only_client() {
    let report = run_json("scenarios/llm_two_vendors.toml", &["--seeds", "3"]);
    let best_primary_only = PRIMARY_ONLY
        .iter()
        .map(|a| mean(&report, a, "throughput_rps"))
        .fold(0.0, f64::max);
    for algorithm in ["router", "failover"] {
        let throughput = mean(&report, algorithm, "throughput_rps");
        assert!(
            throughput > best_primary_only,
            "{algorithm}: {throughput} jobs/s against {best_primary_only}"
        );
        assert!(
            mean(&report, algorithm, "jobs_done") > 0.99 * 4000.0,
            "{algorithm}"
        );
        // The secondary is dearer: the batch costs more than with the primary alone.
        assert!(
            mean(&report, algorithm, "cost") > mean(&report, "retry_after_aware", "cost"),
            "{algorithm}"
        );
    }
    // failover leaves a refusing endpoint (leave_refused = 1, set in the file) and finishes the
    // batch; the reference's failover returns to the primary after each 429 and gives up jobs.
    assert_eq!(mean(&report, "failover", "jobs_done"), 4000.0);
    let reference = run_json(
        "scenarios/llm_two_vendors.toml",
        &[
            "--seeds",
            "3",
            "--algorithms",
            "failover",
            "--set",
            "algorithms.failover.leave_refused=0",
        ],
    );
    assert!(mean(&reference, "failover", "jobs_done") < 3900.0);
}

#[test]
fn worlds_llm_daily_quota_loses_prompts_to_clients_that_give_up_and_none_to_pacing() {
    let report = run_json("scenarios/llm_daily_quota.toml", &["--seeds", "2"]);
    // The cookbook's pacer, at the quota spread over the day, is never refused and finishes.
    assert_eq!(mean(&report, "budget_pacer", "jobs_done"), 44_000.0);
    assert_eq!(
        mean(&report, "budget_pacer", "refusals_by_daily_limit"),
        0.0
    );
    // Waiting out the quota's Retry-After loses only the prompt that met it.
    for algorithm in ["retry_after_aware", "header_pacer"] {
        assert!(
            mean(&report, algorithm, "jobs_failed") <= 2.0,
            "{algorithm}"
        );
    }
    // The SDK gives up on a Retry-After of hours, LiteLLM's router on an endpoint it cannot use.
    assert!(mean(&report, "sdk_retry", "jobs_failed") > 1000.0);
    assert!(mean(&report, "router", "jobs_failed") > 20_000.0);
    assert!(mean(&report, "wait", "refusals_by_daily_limit") > 1000.0);
}

#[test]
fn worlds_llm_agent_loop_compounds_step_failures_into_lost_tasks() {
    let report = run_json("scenarios/llm_agent_loop.toml", &["--seeds", "2"]);
    for algorithm in ["retry_after_aware", "aimd", "budget_pacer"] {
        assert_eq!(mean(&report, algorithm, "jobs_done"), 300.0, "{algorithm}");
    }
    // A step lost now and then loses most 12-step tasks, and the lost tasks' steps were billed.
    assert!(mean(&report, "wait", "jobs_done") < 150.0);
    assert!(
        mean(&report, "wait", "cost_per_completed_job")
            > 1.5 * mean(&report, "aimd", "cost_per_completed_job")
    );
    assert!(mean(&report, "wait", "cache_hit_rate") > 0.5);
}
