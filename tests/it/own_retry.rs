//! Strategies that carry their own retry loop (`sdk_retry`, `tenacity_exponential`): on
//! scripted worlds where every request is refused with a 429 or fails with a 503, the request
//! trace shows each step's attempts spaced as the client's documented schedule says, whatever
//! the world's `[retry]` says; and their jitter comes from the same keyed retry stream.

use std::collections::BTreeMap;

use simbench::harness::{CallResult, RunResult};
use simbench::world::World;

use crate::sim::{load, run};

/// Latency of every admitted request in the 503 world \[s\].
const LATENCY_S: f64 = 0.1;

/// A world whose one endpoint answers everything the same way, with a `[retry]` that allows
/// 20 attempts and a breaker that never trips (so no wait for a cooldown hides in the gaps).
/// `refuse_with`: `Some(a)` refuses every request with a 429 carrying Retry-After `a`; `None`
/// admits every request and fails it with a 503 after [`LATENCY_S`].
fn scripted(refuse_with: Option<f64>, algorithms: &str) -> World {
    let (limit, error_rate) = match refuse_with {
        // A bucket of one request that refills once in 1e9 s: the first request takes its
        // token and every later one is refused.
        Some(after) => (
            format!(
                "rate_limit = {{ per_window = 1, window_s = 1e9, burst = 1, retry_after_s = {after} }}"
            ),
            0.0,
        ),
        None => (String::new(), 1.0),
    };
    load(&format!(
        r#"
name = "scripted"
summary = "Every request refused or failed."
seed = 11
jobs = 60
concurrency = 4
horizon_s = 1e9
steps_per_job = 1
calls_per_step = 1
[cycle]
period_s = 0.0
trough = 1.0
peak = 1.0
[provider]
failure_kinds = {{ http_503 = 1.0, connection = 0.0, timeout = 0.0 }}
[retry]
max_attempts = 20
[breaker]
degrade_after = 100000
dead_after = 100000
[[endpoints]]
id = "only"
capacity = 4
latency = {{ distribution = "constant", mean_s = {LATENCY_S}, tail_rate = 0.0 }}
failures = {{ error_rate = {error_rate}, storm_rate = 0.0 }}
{limit}
{algorithms}
"#
    ))
}

/// Per (job, step): the send times of its attempts, in attempt order.
fn attempts(result: &RunResult) -> BTreeMap<(u32, u32), Vec<(u32, f64)>> {
    let mut steps: BTreeMap<(u32, u32), Vec<(u32, f64)>> = BTreeMap::new();
    for record in &result.trace {
        assert_eq!(record.call, 0, "one call per step");
        steps
            .entry((record.job, record.step))
            .or_default()
            .push((record.attempt, record.at_s));
    }
    for sends in steps.values() {
        let numbers: Vec<u32> = sends.iter().map(|(a, _)| *a).collect();
        let expected: Vec<u32> = (1..=sends.len() as u32).collect();
        assert_eq!(numbers, expected, "attempts in order, none missing");
    }
    steps
}

/// Per (job, step, n): the delay between attempt n's answer and attempt n + 1's send.
fn delays(result: &RunResult, answer_after_s: f64) -> BTreeMap<(u32, u32, u32), f64> {
    let mut out = BTreeMap::new();
    for ((job, step), sends) in attempts(result) {
        for pair in sends.windows(2) {
            let (n, sent) = pair[0];
            out.insert((job, step, n), pair[1].1 - (sent + answer_after_s));
        }
    }
    out
}

/// Whether every request was refused but one: the bucket holds one token at the start (a
/// bucket is never smaller than one request), so the very first request is admitted and its
/// job succeeds at once.
fn all_refused(result: &RunResult) -> bool {
    let admitted: Vec<_> = result
        .trace
        .iter()
        .filter(|r| !matches!(r.result, CallResult::Refused(_)))
        .collect();
    admitted.len() == 1 && admitted[0].at_s == 0.0 && admitted[0].attempt == 1
}

/// Attempts per step, leaving out a step that succeeded at its first attempt.
fn attempt_counts(result: &RunResult) -> Vec<usize> {
    let succeeded: Vec<(u32, u32)> = result
        .trace
        .iter()
        .filter(|r| !matches!(r.result, CallResult::Refused(_)) && r.at_s == 0.0)
        .filter(|_| {
            result
                .trace
                .iter()
                .any(|r| matches!(r.result, CallResult::Refused(_)))
        })
        .map(|r| (r.job, r.step))
        .collect();
    attempts(result)
        .iter()
        .filter(|(key, _)| !succeeded.contains(key))
        .map(|(_, sends)| sends.len())
        .collect()
}

const EPS: f64 = 1e-9;

#[test]
fn own_retry_sdk_retry_sleeps_a_retry_after_up_to_120_s_exactly_and_makes_three_attempts() {
    let result = run(&scripted(Some(2.0), ""), "sdk_retry", 1, true);
    assert!(all_refused(&result));
    let counts = attempt_counts(&result);
    assert_eq!(counts.len(), 59, "every other job ran");
    assert!(
        counts.iter().all(|&n| n == 3),
        "1 + max_retries: {counts:?}"
    );
    let gaps = delays(&result, 0.0);
    assert_eq!(gaps.len(), 118);
    assert!(gaps.values().all(|d| (d - 2.0).abs() < EPS), "{gaps:?}");
    // Every job failed after its three attempts; [retry]'s 20 attempts played no part.
    let metrics = result.metrics.expect("finished");
    assert_eq!(metrics.get(simbench::metrics::Metric::JobsFailed), 59.0);

    // 120 s is still honoured as sent.
    let long = run(&scripted(Some(120.0), ""), "sdk_retry", 1, true);
    let long_gaps = delays(&long, 0.0);
    assert_eq!(long_gaps.len(), 118);
    assert!(long_gaps.values().all(|d| (d - 120.0).abs() < 1e-6));

    // Above the cap the SDK does not retry at all (v2.52.0 and later)…
    let over = run(&scripted(Some(150.0), ""), "sdk_retry", 1, true);
    assert!(attempt_counts(&over).iter().all(|&n| n == 1));
    // …and before v2.52.0 (cap 60, then the backoff) it backs off instead.
    let old = "[algorithms.sdk_retry]\nmax_retry_after_s = 60.0\nover_cap_gives_up = 0";
    let old_run = run(&scripted(Some(90.0), old), "sdk_retry", 1, true);
    assert!(attempt_counts(&old_run).iter().all(|&n| n == 3));
    let old_gaps = delays(&old_run, 0.0);
    assert_eq!(old_gaps.len(), 118);
    for ((_, _, n), d) in old_gaps {
        let raw = 0.5 * 2f64.powi(n as i32 - 1);
        assert!((0.75 * raw - EPS..=raw + EPS).contains(&d), "n = {n}: {d}");
    }
}

/// Checks the SDK's backoff on `result`: after attempt n, `min(0.5 · 2^(n−1), 8) · f` with f in
/// [0.75, 1]; returns the jitter draws u = (1 − f) / 0.25 by (job, step, n).
fn check_sdk_backoff(result: &RunResult, answer_after_s: f64) -> BTreeMap<(u32, u32, u32), f64> {
    let mut draws = BTreeMap::new();
    for (key @ (_, _, n), d) in delays(result, answer_after_s) {
        let raw = (0.5 * 2f64.powi(n as i32 - 1)).min(8.0);
        let factor = d / raw;
        assert!(
            (0.75 - 1e-9..=1.0 + 1e-9).contains(&factor),
            "after attempt {n}: {d} s is not {raw} s × [0.75, 1]"
        );
        draws.insert(key, (1.0 - factor) / 0.25);
    }
    draws
}

#[test]
fn own_retry_sdk_retry_backs_off_from_half_a_second_doubling_to_eight_with_jitter_on_503s() {
    let result = run(&scripted(None, ""), "sdk_retry", 1, true);
    assert!(
        result
            .trace
            .iter()
            .all(|r| r.result == CallResult::Admitted)
    );
    assert!(attempt_counts(&result).iter().all(|&n| n == 3));
    let draws = check_sdk_backoff(&result, LATENCY_S);
    assert_eq!(draws.len(), 120);
    // The jitter is drawn, not constant: the draws spread over [0, 1).
    let (lo, hi) = draws
        .values()
        .fold((1.0f64, 0.0f64), |(lo, hi), &u| (lo.min(u), hi.max(u)));
    assert!(lo < 0.1 && hi > 0.9, "draws in [{lo}, {hi}]");

    // More retries reach the 8 s cap: 0.5, 1, 2, 4, 8, 8.
    let more = run(
        &scripted(None, "[algorithms.sdk_retry]\nmax_retries = 6"),
        "sdk_retry",
        1,
        true,
    );
    assert!(attempt_counts(&more).iter().all(|&n| n == 7));
    let capped = check_sdk_backoff(&more, LATENCY_S);
    assert_eq!(capped.len(), 60 * 6);

    // A Retry-After of 0 is not "a reasonable amount": the backoff applies.
    let zero = run(&scripted(Some(0.0), ""), "sdk_retry", 1, true);
    assert!(all_refused(&zero));
    assert_eq!(check_sdk_backoff(&zero, 0.0).len(), 118);
}

/// Checks tenacity's wait on `result`: after attempt n, uniform in [1, min(60, 2^(n−1))];
/// returns the draws u = (d − 1) / (top − 1) where the window is not empty.
fn check_tenacity_waits(result: &RunResult, answer_after_s: f64) -> BTreeMap<(u32, u32, u32), f64> {
    let mut draws = BTreeMap::new();
    for (key @ (_, _, n), d) in delays(result, answer_after_s) {
        let top = 2f64.powi(n as i32 - 1).clamp(1.0, 60.0);
        assert!(
            (1.0 - 1e-9..=top + 1e-9).contains(&d),
            "after attempt {n}: {d} s is outside [1, {top}]"
        );
        if top > 1.0 {
            draws.insert(key, (d - 1.0) / (top - 1.0));
        }
    }
    draws
}

#[test]
fn own_retry_tenacity_waits_uniformly_in_a_doubling_window_ignores_retry_after_six_attempts() {
    // A Retry-After of 30 s is ignored.
    let result = run(&scripted(Some(30.0), ""), "tenacity_exponential", 1, true);
    assert!(all_refused(&result));
    assert!(attempt_counts(&result).iter().all(|&n| n == 6));
    let gaps = delays(&result, 0.0);
    assert_eq!(gaps.len(), 59 * 5);
    // The first window is [1, 1]: exactly one second, whatever the draw.
    assert!(
        gaps.iter()
            .filter(|((_, _, n), _)| *n == 1)
            .all(|(_, d)| (d - 1.0).abs() < EPS)
    );
    let draws = check_tenacity_waits(&result, 0.0);
    assert_eq!(draws.len(), 59 * 4);
    assert!(
        gaps.values().all(|d| *d <= 16.0 + EPS),
        "2^(5−1) = 16 at most"
    );
    let mean = draws.values().sum::<f64>() / draws.len() as f64;
    assert!((mean - 0.5).abs() < 0.08, "uniform draws, mean {mean}");

    // On 503s too, with the decorator's arguments as parameters: 3 attempts, max 1.5 s.
    let tuned = "[algorithms.tenacity_exponential]\nattempts = 3\nmax_s = 1.5";
    let short = run(&scripted(None, tuned), "tenacity_exponential", 1, true);
    assert!(attempt_counts(&short).iter().all(|&n| n == 3));
    let short_gaps = delays(&short, LATENCY_S);
    assert_eq!(short_gaps.len(), 120);
    for ((_, _, n), d) in short_gaps {
        let top = if n == 1 { 1.0 } else { 1.5 };
        assert!((1.0 - EPS..=top + EPS).contains(&d), "n = {n}: {d}");
    }
}

#[test]
fn own_retry_jitter_comes_from_the_attempts_keyed_retry_stream() {
    // Same world, same seed: the SDK's and tenacity's draw for (job, step, attempt) is one
    // number (common random numbers), read back from their different delays.
    let sdk = check_sdk_backoff(&run(&scripted(None, ""), "sdk_retry", 4, true), LATENCY_S);
    let tenacity = check_tenacity_waits(
        &run(&scripted(None, ""), "tenacity_exponential", 4, true),
        LATENCY_S,
    );
    let shared: Vec<_> = sdk
        .iter()
        .filter_map(|(key, u)| tenacity.get(key).map(|v| (key, u, v)))
        .collect();
    assert_eq!(shared.len(), 60, "attempt 2 of every job");
    for (key, u, v) in shared {
        assert!((u - v).abs() < 1e-6, "{key:?}: {u} vs {v}");
    }
    // A different run seed draws differently.
    let other = check_sdk_backoff(&run(&scripted(None, ""), "sdk_retry", 5, true), LATENCY_S);
    assert_ne!(sdk, other);
}

#[test]
fn own_retry_strategies_use_the_first_endpoint_of_the_primary_pool_only() {
    let world = load(
        r#"
name = "two"
summary = "Two endpoints, both idle."
jobs = 200
concurrency = 6
[[endpoints]]
id = "a"
capacity = 3
latency = { median_s = 0.1 }
[[endpoints]]
id = "b"
capacity = 3
latency = { median_s = 0.1 }
"#,
    );
    for algorithm in ["sdk_retry", "tenacity_exponential"] {
        let result = run(&world, algorithm, 1, true);
        assert!(!result.trace.is_empty());
        assert!(
            result.trace.iter().all(|r| r.resource == 0),
            "{algorithm} left its one endpoint"
        );
        assert_eq!(result.endpoints[1].pool.leases, 0);
    }
    // `wait` spreads over both.
    assert!(run(&world, "wait", 1, false).endpoints[1].pool.leases > 0);
}
