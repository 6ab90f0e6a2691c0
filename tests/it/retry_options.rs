//! The retry policy's options: the retry budget, client-side throttling and the Retry-After
//! spread. All are off by default (the replay tests show off means unchanged); on, they combine
//! with any strategy, the budget never grants more than its share over its window, and a spread
//! Retry-After is never shorter than the one the provider sent.

use proptest::prelude::*;
use simbench::client::budget::Budget;
use simbench::harness::RunResult;
use simbench::metrics::Metric;
use simbench::world::{RetryBudget, World};

use crate::sim::{load, run};

/// `harness_congestion` cut down (200 prompts): an endpoint that refuses most of what the
/// harness sends, so retries pile up, with `extra` appended to `[retry]`.
fn congested(extra: &str) -> World {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/harness_congestion.toml"),
    )
    .unwrap()
    .replace("jobs = 800", "jobs = 200")
    .replace(
        "jitter = \"full\"\n",
        &format!("jitter = \"full\"\n{extra}\n"),
    );
    load(&text)
}

fn metric(result: &RunResult, metric: Metric) -> f64 {
    result.metrics.as_ref().expect("finished").get(metric)
}

#[test]
fn retry_options_a_budget_denies_retries_and_gives_up_their_steps() {
    let plain = congested("");
    let budgeted = congested("budget = { ratio = 0.1, min_per_s = 1.0, window_s = 5.0 }");
    for algorithm in ["wait", "aimd", "retry_after_aware"] {
        let before = run(&plain, algorithm, 1, false);
        let after = run(&budgeted, algorithm, 1, false);
        assert_eq!(metric(&before, Metric::RetriesDenied), 0.0);
        let denied = metric(&after, Metric::RetriesDenied);
        if algorithm == "wait" {
            assert!(denied > 0.0, "{algorithm}: the budget never bit");
        }
        // Every denial gives up a step, and fewer retries reach the provider.
        assert!(metric(&after, Metric::JobsFailed) >= denied, "{algorithm}");
        assert!(
            metric(&after, Metric::RetryRequests) <= metric(&before, Metric::RetryRequests),
            "{algorithm}"
        );
    }
}

#[test]
fn retry_options_throttling_rejects_locally_only_when_accepts_fall_below_one_in_k() {
    let throttled = congested("throttle = { k = 2.0, window_s = 60.0 }");
    let plain = congested("");
    for algorithm in ["wait", "backoff", "p2c"] {
        let before = run(&plain, algorithm, 2, false);
        let after = run(&throttled, algorithm, 2, false);
        let rejected = metric(&after, Metric::ThrottledRequests);
        assert!(
            rejected > 0.0,
            "{algorithm}: most requests are refused, so some must be throttled"
        );
        assert_eq!(
            after.error_classes.get("throttled").copied(),
            Some(rejected as u64)
        );
        // Rejected locally means never sent: the provider sees fewer requests.
        assert!(metric(&after, Metric::Requests) < metric(&before, Metric::Requests));
        assert_eq!(metric(&after, Metric::LeasesActiveAtEnd), 0.0);
    }
    // An endpoint that accepts everything is never throttled.
    let calm = load(
        "name = \"calm\"\nsummary = \"no refusals\"\njobs = 300\nconcurrency = 4\n\
         [retry]\nthrottle = { k = 1.0 }\n\
         [[endpoints]]\nid = \"big\"\ncapacity = 10\nlatency = { median_s = 0.1 }\n",
    );
    let result = run(&calm, "wait", 1, false);
    assert_eq!(metric(&result, Metric::ThrottledRequests), 0.0);
}

#[test]
fn retry_options_runs_with_options_are_deterministic() {
    let world = congested("budget = { ratio = 0.2 }\nthrottle = { k = 1.5, window_s = 30.0 }");
    for algorithm in ["wait", "gradient"] {
        let a = run(&world, algorithm, 5, false).metrics.unwrap();
        let b = run(&world, algorithm, 5, false).metrics.unwrap();
        assert_eq!(a, b, "{algorithm}");
    }
}

/// Events fed to a budget: a time step, then a first attempt (`false`) or a retry request
/// (`true`).
fn events() -> impl Strategy<Value = Vec<(f64, bool)>> {
    prop::collection::vec((0.0f64..2.0, any::<bool>()), 1..400)
}

proptest! {
    #![proptest_config(crate::support::proptest_config(256))]
    /// Whatever the traffic, at every granted retry the retries granted in the window ending
    /// there are within `ratio` × the first attempts in it plus `min_per_s` × `window_s`; and a
    /// denied retry is one that would have broken that bound.
    #[test]
    fn retry_options_budget_never_exceeds_its_share_over_its_window(
        ratio in 0.0f64..2.0,
        min_per_s in 0.0f64..3.0,
        window_s in 0.1f64..20.0,
        events in events(),
    ) {
        let policy = RetryBudget { ratio, min_per_s, window_s };
        let mut budget = Budget::new(policy);
        let (mut now, mut firsts, mut granted) = (0.0, Vec::new(), Vec::new());
        let in_window = |times: &[f64], now: f64| times.iter().filter(|&&t| t > now - window_s).count() as f64;
        for (dt, is_retry) in events {
            now += dt;
            if !is_retry {
                budget.deposit(now);
                firsts.push(now);
                continue;
            }
            let allowed = ratio * in_window(&firsts, now) + min_per_s * window_s;
            if budget.try_withdraw(now) {
                granted.push(now);
                prop_assert!(
                    in_window(&granted, now) <= allowed + 1e-9,
                    "{} retries in the window, {allowed} allowed", in_window(&granted, now)
                );
            } else {
                prop_assert!(in_window(&granted, now) + 1.0 > allowed - 1e-9, "denied with room left");
            }
        }
    }
}

/// One endpoint the client may lease 8 times while the provider admits 4 (a constant cycle of
/// 0.5): half the calls draw a capacity 429 with a Retry-After of 0.5 s. Eight workers never
/// wait for a lease, so a retry's request is sent exactly when its delay ends.
fn half_capacity(spread: f64) -> World {
    load(&format!(
        r#"
name = "half"
summary = "The provider admits half of what the client leases."
seed = 3
jobs = 300
concurrency = 8
horizon_s = 1e9
steps_per_job = 1
calls_per_step = 1
[cycle]
period_s = 0.0
trough = 0.5
peak = 0.5
[provider]
capacity_retry_after_s = 0.5
[retry]
max_attempts = 20
retry_after_spread = {spread}
[breaker]
degrade_after = 100000
dead_after = 100000
[[endpoints]]
id = "only"
capacity = 8
latency = {{ median_s = 0.2, sigma = 0.3 }}
failures = {{ error_rate = 0.0, storm_rate = 0.0 }}
"#
    ))
}

/// Delay from each 429 to the next attempt of the same step, from the request trace.
fn delays_after_refusals(result: &RunResult) -> Vec<f64> {
    use simbench::harness::CallResult;
    let sent: std::collections::BTreeMap<(u32, u32, u32), f64> = result
        .trace
        .iter()
        .map(|r| ((r.job, r.step, r.attempt), r.at_s))
        .collect();
    result
        .trace
        .iter()
        .filter(|r| matches!(r.result, CallResult::Refused(_)))
        .filter_map(|r| {
            let next = sent.get(&(r.job, r.step, r.attempt + 1))?;
            Some(next - r.at_s)
        })
        .collect()
}

#[test]
fn retry_options_a_retry_after_spread_waits_between_one_and_one_plus_spread_times_it() {
    let exact = delays_after_refusals(&run(&half_capacity(0.0), "wait", 3, true));
    assert!(exact.len() > 50, "{} refusals retried", exact.len());
    assert!(exact.iter().all(|d| (d - 0.5).abs() < 1e-9), "{exact:?}");

    let spread = delays_after_refusals(&run(&half_capacity(1.0), "wait", 3, true));
    assert!(spread.len() > 50);
    // Rounded to 4 decimals like every delay, so allow half a unit of the last place.
    assert!(
        spread.iter().all(|d| (0.5 - 5e-5..1.0 + 5e-5).contains(d)),
        "{spread:?}"
    );
    let mean = spread.iter().sum::<f64>() / spread.len() as f64;
    assert!((mean - 0.75).abs() < 0.05, "mean delay {mean}");
}
