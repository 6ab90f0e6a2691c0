//! The pacing strategies against their promises: `budget_pacer` never sends beyond its budgets
//! over any interval (whatever the vendor's limits, sizes and workers), pauses every worker after
//! a 429, and runs at its budget when the budget binds; `header_pacer` learns a vendor's limits
//! from the headers and runs at the vendor's rate with almost no 429.

use proptest::prelude::*;
use simbench::harness::{CallResult, RunResult};
use simbench::metrics::Metric;
use simbench::world::World;

use crate::sim::{load, run};

/// One token endpoint with a rolling request and token limit (`vendor_rpm`, `vendor_tpm`),
/// closed-loop `workers`, sizes as given, the pacer's budgets as given.
fn world(
    workers: u32,
    jobs: u32,
    sizes: &str,
    vendor_rpm: f64,
    vendor_tpm: f64,
    algorithms: &str,
) -> World {
    load(&format!(
        r#"
name = "paced"
summary = "One vendor with a request and a token limit."
seed = 3
jobs = {jobs}
concurrency = {workers}
horizon_s = 1e12
steps_per_job = 1
calls_per_step = 1
[cycle]
period_s = 0.0
trough = 1.0
peak = 1.0
[retry]
max_attempts = 1000
max_total_s = 1e12
[breaker]
dead_after = 1000000000
degrade_after = 1000000000
[tokens]
{sizes}
[[endpoints]]
id = "vendor"
capacity = 1000
limits = [
  {{ unit = "requests", limit = {vendor_rpm}, per = "minute" }},
  {{ unit = "tokens", limit = {vendor_tpm}, per = "minute" }},
]
latency = {{ distribution = "tokens", ttft_s = 0.4, ttft_per_1k_input_s = 0.1, decode_tokens_per_s = 80, tail_rate = 0.0 }}
failures = {{ error_rate = 0.0, storm_rate = 0.0 }}
{algorithms}
"#
    ))
}

/// The largest excess, over all intervals `[t_i, t_j]` of the sends, of what was sent over
/// `budget · (1 + (t_j − t_i) / 60)` — the most a per-minute budget that starts full allows —
/// as a share of the budget (≤ 0 when the budget holds), for requests and for tokens.
fn worst_excess(result: &RunResult, rpm: f64, tpm: f64) -> (f64, f64) {
    let sends: Vec<(f64, f64)> = result
        .trace
        .iter()
        .map(|r| (r.at_s, r.size.input + r.size.max_tokens))
        .collect();
    let (mut requests, mut tokens) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for i in 0..sends.len() {
        let (mut count, mut sum) = (0.0, 0.0);
        for &(t, charge) in &sends[i..] {
            count += 1.0;
            sum += charge;
            let minutes = (t - sends[i].0) / 60.0;
            requests = requests.max((count - rpm * (1.0 + minutes)) / rpm);
            tokens = tokens.max((sum - tpm * (1.0 + minutes)) / tpm);
        }
    }
    (requests, tokens)
}

fn finished(result: &RunResult, jobs: f64) {
    let metrics = result.metrics.as_ref().expect("the run finished");
    let done = metrics.value(Metric::JobsDone).unwrap();
    let failed = metrics.value(Metric::JobsFailed).unwrap();
    assert_eq!(done + failed, jobs, "every job ran");
}

proptest! {
    #![proptest_config(crate::support::proptest_config(24))]
    #[test]
    fn budget_pacer_never_sends_beyond_its_budgets_over_any_interval(
        rpm in 20.0..2000.0f64,
        tpm in 8_000.0..300_000.0f64,
        input_max in 50.0..4000.0f64,
        max_tokens in 16u32..2000,
        workers in 1u32..48,
        vendor_share in 0.4..2.0f64,
        pause_s in 0.0..30.0f64,
        seed in 0u64..1000,
    ) {
        let algorithms = format!(
            "[algorithms.budget_pacer]\nrequests_per_minute = {rpm}\ntokens_per_minute = {tpm}\npause_s = {pause_s}"
        );
        let sizes = format!(
            "input = {{ distribution = \"uniform\", min = 1, max = {input_max} }}\n\
             output = {{ distribution = \"lognormal\", median = 200, sigma = 1.0 }}\n\
             max_tokens = {max_tokens}"
        );
        let w = world(workers, 300, &sizes, rpm * vendor_share, tpm * vendor_share, &algorithms);
        let result = run(&w, "budget_pacer", seed, true);
        finished(&result, 300.0);
        let (requests, tokens) = worst_excess(&result, rpm, tpm);
        prop_assert!(requests <= 1e-9, "requests over budget by {requests} of it");
        prop_assert!(tokens <= 1e-9, "tokens over budget by {tokens} of it");
    }
}

/// 1,000-token requests (600 in, `max_tokens` 400) against a 60,000 TPM budget: the budget
/// admits 60 a minute, one a second, whatever the vendor allows above it.
#[test]
fn budget_pacer_runs_at_its_budget_when_the_budget_binds() {
    let sizes = "input = { distribution = \"constant\", value = 600 }\n\
                 output = { distribution = \"constant\", value = 300 }\nmax_tokens = 400";
    let algorithms =
        "[algorithms.budget_pacer]\nrequests_per_minute = 10000\ntokens_per_minute = 60000";
    let w = world(16, 3000, sizes, 1e6, 1e9, algorithms);
    let result = run(&w, "budget_pacer", 1, false);
    finished(&result, 3000.0);
    let metrics = result.metrics.unwrap();
    // The first minute's full allowance goes at once (60 requests), then one a second.
    let expected = 3000.0 / (3000.0 - 60.0);
    let rate = metrics.value(Metric::ThroughputRps).unwrap();
    assert!((rate - expected).abs() / expected < 0.01, "{rate} jobs/s");
    assert_eq!(metrics.value(Metric::RefusalRate), Some(0.0));
}

/// Against a vendor with half its budgets, the pacer is refused; after each 429 nothing is
/// sent for `pause_s`, by any worker.
#[test]
fn budget_pacer_pauses_every_worker_after_a_429() {
    let sizes = "input = { distribution = \"lognormal\", median = 800, sigma = 0.5 }\n\
                 output = { distribution = \"constant\", value = 300 }\nmax_tokens = 400";
    let algorithms =
        "[algorithms.budget_pacer]\nrequests_per_minute = 600\ntokens_per_minute = 120000";
    let w = world(24, 600, sizes, 300.0, 60_000.0, algorithms);
    let result = run(&w, "budget_pacer", 2, true);
    finished(&result, 600.0);
    let refusals: Vec<usize> = (0..result.trace.len())
        .filter(|&i| matches!(result.trace[i].result, CallResult::Refused(_)))
        .collect();
    assert!(
        refusals.len() >= 5,
        "the vendor refuses: {}",
        refusals.len()
    );
    for &i in &refusals {
        let refused_at = result.trace[i].at_s;
        let next = result.trace[i + 1..].iter().find(|r| r.at_s > refused_at);
        if let Some(next) = next {
            assert!(
                next.at_s >= refused_at + 15.0 - 1e-9,
                "sent at {} after a 429 at {refused_at}",
                next.at_s
            );
        }
    }
}

/// A vendor whose token limit binds: `wait` meets 429 after 429, `header_pacer` learns the
/// limit from the headers and runs at the vendor's rate — the tokens per minute over the
/// tokens a request really takes (prompt and output: the unused `max_tokens` come back) —
/// with few refusals.
#[test]
fn header_pacer_runs_at_the_vendors_rate_with_few_429s() {
    let sizes = "input = { distribution = \"constant\", value = 600 }\n\
                 output = { distribution = \"constant\", value = 300 }\nmax_tokens = 400";
    let w = world(32, 3000, sizes, 1e6, 90_000.0, "");
    let paced = run(&w, "header_pacer", 1, false);
    let naive = run(&w, "wait", 1, false);
    finished(&paced, 3000.0);
    let paced = paced.metrics.unwrap();
    let naive = naive.metrics.unwrap();
    let vendor_rate = 90_000.0 / 60.0 / 900.0;
    let rate = paced.value(Metric::ThroughputRps).unwrap();
    assert!(
        rate > 0.97 * vendor_rate && rate < 1.05 * vendor_rate,
        "{rate} jobs/s against {vendor_rate}"
    );
    let refused = paced.value(Metric::RefusalRate).unwrap();
    assert!(refused < 0.01, "refusal rate {refused}");
    assert!(naive.value(Metric::RefusalRate).unwrap() > 10.0 * refused.max(1e-3));
}
