//! The simulator against the reference's rules: the t = 0 golden trace, the single-pool
//! equivalences, queueing theory, invariants on generated worlds, determinism and stalls.

use proptest::prelude::*;
use simbench::client::pool::State;
use simbench::client::registry;
use simbench::compile;
use simbench::harness::{self, CallResult, Outcome, RngScheme, RunConfig, RunResult};
use simbench::metrics::{CATALOGUE, Metric};
use simbench::provider::Refusal;
use simbench::world::World;

fn never() -> bool {
    false
}

/// Runs `algorithm` on `world` with run seed `seed`.
pub fn run(world: &World, algorithm: &str, seed: u64, trace: bool) -> RunResult {
    // The world's `[algorithms.*]` values apply (none written: the registry's defaults).
    let strategy = simbench::sweep::strategy(world, algorithm).expect("registered");
    let config = RunConfig {
        seed,
        rng: RngScheme::Native,
        trace,
        window_s: None,
        out_of_time: &never,
    };
    harness::run(world, strategy.as_ref(), &config)
}

pub fn load(text: &str) -> World {
    match compile::load("test.toml", text.as_bytes()) {
        Ok(world) => world,
        Err(errors) => panic!("{:?}", miette::Report::new(errors)),
    }
}

#[test]
fn golden_trace_at_t0() {
    let world = compile::builtin_bursty();
    let (ff, ss, m) = (0, 1, 2);
    use CallResult::{Admitted, Refused};
    let cap = Refused(Refusal::Capacity);
    // (job, resource, active after leasing, provider answer, (consecutive failures, state) after report)
    let expected = [
        (0, ff, 1, Admitted, None),
        (1, m, 1, Admitted, None),
        (2, ss, 1, Admitted, None),
        (3, ss, 2, Admitted, None),
        (4, ff, 2, Admitted, None),
        (5, ss, 3, Admitted, None),
        (6, ss, 4, Admitted, None),
        (7, m, 2, cap, Some((1, State::Ready))),
        (8, m, 2, cap, Some((2, State::Ready))),
        (9, m, 2, cap, Some((3, State::Degraded))),
        (10, ff, 3, cap, Some((1, State::Ready))),
        (11, ss, 5, Admitted, None),
    ];
    for algorithm in [
        "wait",
        "backoff",
        "sticky",
        "immediate",
        "least_busy",
        "failover",
    ] {
        let result = run(&world, algorithm, world.seed(), true);
        let at_zero: Vec<_> = result.trace.iter().filter(|t| t.at_s == 0.0).collect();
        assert_eq!(at_zero.len(), expected.len(), "{algorithm}");
        for (record, (job, resource, active, answer, after)) in at_zero.iter().zip(expected) {
            assert_eq!(
                (record.job, record.resource, record.active_after_lease),
                (job, resource, active),
                "{algorithm}: job {job}"
            );
            assert_eq!((record.result, record.after_report), (answer, after));
            assert_eq!((record.step, record.attempt, record.call), (0, 1, 0));
        }
        assert_eq!(at_zero.last().unwrap().round_robin, 12, "{algorithm}");
        // Jobs 7, 8, 9, 10 retry at t = 0.25 in that order (attempt 2).
        let retries: Vec<_> = result
            .trace
            .iter()
            .filter(|t| t.at_s == 0.25 && t.attempt == 2)
            .map(|t| t.job)
            .collect();
        assert_eq!(retries, [7, 8, 9, 10], "{algorithm}");
    }
}

#[test]
fn golden_trace_quota_aware() {
    let world = compile::builtin_bursty();
    let result = run(&world, "quota_aware", world.seed(), true);
    let at_zero: Vec<_> = result
        .trace
        .iter()
        .filter(|t| t.at_s == 0.0)
        .map(|t| (t.job, t.resource, t.result, t.after_report))
        .collect();
    let cap = CallResult::Refused(Refusal::Capacity);
    let ok = CallResult::Admitted;
    let expected = vec![
        (0, 1, ok, None),
        (1, 1, ok, None),
        (2, 1, ok, None),
        (3, 1, ok, None),
        (4, 1, ok, None),
        (5, 1, cap, Some((1, State::Ready))),
        (6, 1, cap, Some((2, State::Ready))),
        (7, 1, cap, Some((3, State::Degraded))),
        (8, 0, ok, None),
        (9, 0, ok, None),
        (10, 0, cap, Some((1, State::Ready))),
        (11, 0, cap, Some((2, State::Ready))),
    ];
    assert_eq!(at_zero, expected);
}

fn comparable(result: &RunResult) -> Vec<(String, f64)> {
    let metrics = result.metrics.as_ref().expect("the run finished");
    metrics
        .iter()
        .filter(|(info, _)| info.metric != Metric::WallS)
        .map(|(info, v)| (info.name.to_string(), v))
        .collect()
}

#[test]
fn least_busy_and_failover_equal_wait_in_one_pool() {
    let world = compile::builtin_bursty();
    for seed in world.seed()..world.seed() + 3 {
        let wait = run(&world, "wait", seed, false);
        for other in ["least_busy", "failover"] {
            let result = run(&world, other, seed, false);
            assert_eq!(
                comparable(&result),
                comparable(&wait),
                "{other} seed {seed}"
            );
            assert_eq!(result.endpoints, wait.endpoints, "{other} seed {seed}");
            assert_eq!(result.error_classes, wait.error_classes);
        }
    }
}

fn mm_world(workers: u32, capacity: u32, tail_rate: f64) -> World {
    load(&format!(
        r#"
name = "queue"
summary = "One endpoint, constant capacity, no failures, no bucket."
seed = 7
jobs = 50000
concurrency = {workers}
horizon_s = 1e9
steps_per_job = 1
calls_per_step = 1
[cycle]
period_s = 0.0
trough = 1.0
peak = 1.0
[[endpoints]]
id = "only"
capacity = {capacity}
latency = {{ median_s = 0.1, sigma = 0.5, tail_rate = {tail_rate}, tail_factor = 4.0 }}
failures = {{ error_rate = 0.0, storm_rate = 0.0 }}
"#
    ))
}

#[test]
fn closed_loop_matches_queueing_theory() {
    for (workers, capacity) in [(4, 8), (8, 8), (16, 8)] {
        for tail_rate in [0.0, 0.05] {
            let world = mm_world(workers, capacity, tail_rate);
            let mean_s = world.endpoints()[0].latency.expected_s();
            let busy = f64::from(workers.min(capacity));
            let result = run(&world, "wait", world.seed(), false);
            let m = result.metrics.expect("finished");
            assert_eq!(m.get(Metric::JobsDone), 50_000.0);
            assert_eq!(m.get(Metric::RefusalRate), 0.0);
            let throughput = m.get(Metric::ThroughputRps);
            let expect_throughput = busy / mean_s;
            let utilization = m.get(Metric::Utilization);
            let expect_utilization = busy / f64::from(capacity);
            let case = format!("N={workers} c={capacity} tail={tail_rate}");
            assert!(
                (throughput / expect_throughput - 1.0).abs() < 0.01,
                "{case}: throughput {throughput} vs {expect_throughput}"
            );
            assert!(
                (utilization / expect_utilization - 1.0).abs() < 0.01,
                "{case}: utilization {utilization} vs {expect_utilization}"
            );
        }
    }
}

#[test]
fn same_seed_same_numbers() {
    let world = compile::builtin_bursty();
    for algorithm in registry::names() {
        let a = run(&world, algorithm, 11, false);
        let b = run(&world, algorithm, 11, false);
        assert_eq!(comparable(&a), comparable(&b), "{algorithm}");
        assert_eq!(a.endpoints, b.endpoints);
    }
}

const DOOMED: &str = r#"
name = "doomed"
summary = "Every request fails: the breaker kills every endpoint."
jobs = 500
concurrency = 8
[[endpoints]]
id = "a"
capacity = 4
latency = { median_s = 0.05, sigma = 0.0, tail_rate = 0.0 }
failures = { error_rate = 1.0, storm_rate = 0.0 }
[[endpoints]]
id = "b"
capacity = 4
latency = { median_s = 0.05, sigma = 0.0, tail_rate = 0.0 }
failures = { error_rate = 1.0, storm_rate = 0.0 }
"#;

#[test]
fn dead_world_is_reported_as_stalled() {
    let world = load(DOOMED);
    for algorithm in ["wait", "backoff", "sticky", "quota_aware"] {
        let result = run(&world, algorithm, 1, false);
        let Outcome::Stalled { at_s, cause, .. } = &result.outcome else {
            panic!("{algorithm}: expected a stall, got {:?}", result.outcome);
        };
        assert!(*at_s < 300.0, "{algorithm}: stalled late, at {at_s}");
        assert!(cause.contains("DEAD"), "{cause}");
        // The stall is an outcome: what the run did until then, its stuck jobs counted apart.
        let m = result
            .metrics
            .as_ref()
            .expect("a stalled run keeps its metrics");
        assert_eq!(m.get(Metric::StallRate), 1.0);
        assert_eq!(m.get(Metric::MakespanS), *at_s);
        assert_eq!(m.get(Metric::JobsDone), 0.0, "every request fails");
        assert!(m.get(Metric::JobsStalled) >= 1.0, "{algorithm}");
        assert_eq!(m.get(Metric::LeasesActiveAtEnd), 0.0);
        let jobs = f64::from(world.jobs());
        let accounted = [
            Metric::JobsDone,
            Metric::JobsFailed,
            Metric::JobsStalled,
            Metric::JobsUnstarted,
        ]
        .map(|metric| m.get(metric));
        assert_eq!(accounted.iter().sum::<f64>(), jobs, "{algorithm}");
        assert!(
            result.events < 100_000,
            "{algorithm}: {} events",
            result.events
        );
    }
    // `immediate` never blocks: it fails the remaining jobs and finishes.
    let result = run(&world, "immediate", 1, false);
    assert_eq!(result.outcome, Outcome::Ok);
}

#[test]
fn wall_budget_stops_a_run() {
    let world = compile::builtin_bursty();
    let strategy = registry::find("wait").unwrap().build_default();
    let always = || true;
    let config = RunConfig {
        seed: 1,
        rng: RngScheme::Native,
        trace: false,
        window_s: None,
        out_of_time: &always,
    };
    let result = harness::run(&world, strategy.as_ref(), &config);
    assert!(matches!(result.outcome, Outcome::Timeout { .. }));
    assert!(result.metrics.is_none());
}

/// A random but valid world, written as a scenario file.
fn arbitrary_world() -> impl Strategy<Value = String> {
    let endpoint = (
        1u32..8,
        0.5f64..2.0,
        0.01f64..0.5,
        0.0f64..1.0,
        0.0f64..0.3,
        0.0f64..0.3,
        proptest::option::of((1u64..200, 0.5f64..3.0, 0.0f64..2.0)),
        proptest::option::of(0u32..500),
        proptest::option::of((0.5f64..20.0, 0.1f64..2.0, 0.0f64..1.0)),
    );
    // Optional extras: a second pool, and an incident (kind, start, length, factor) on e0.
    let extras = (
        proptest::bool::ANY,
        proptest::option::of((0usize..6, 0.0f64..20.0, 0.1f64..20.0, 0.1f64..3.0)),
        // Deadlines: wait's timeout and sticky's fallback delay.
        proptest::option::of((0.01f64..5.0, 0.01f64..5.0)),
    );
    (
        proptest::collection::vec(endpoint, 1..4),
        1u32..20,
        1u32..120,
        1u32..4,
        1u32..3,
        0.1f64..30.0,
        0u32..3,
        // The retry policy's options: a budget (ratio, min_per_s, window_s), a throttle (k, window_s).
        proptest::option::of((0.0f64..1.0, 0.0f64..5.0, 0.5f64..20.0)),
        proptest::option::of((1.0f64..4.0, 1.0f64..60.0)),
        extras,
    )
        .prop_map(
            |(endpoints, workers, jobs, steps, calls, horizon, jitter, budget, throttle, (two_pools, incident, deadlines))| {
                let jitter = ["none", "full", "equal"][jitter as usize];
                let mut text = format!(
                    "name = \"gen\"\nsummary = \"generated\"\nseed = 3\njobs = {jobs}\n\
                     concurrency = {workers}\nhorizon_s = {horizon}\nsteps_per_job = {steps}\n\
                     calls_per_step = {calls}\n[retry]\njitter = \"{jitter}\"\n"
                );
                if let Some((ratio, min_per_s, window_s)) = budget {
                    text += &format!(
                        "budget = {{ ratio = {ratio}, min_per_s = {min_per_s}, window_s = {window_s} }}\n"
                    );
                }
                if let Some((k, window_s)) = throttle {
                    text += &format!("throttle = {{ k = {k}, window_s = {window_s} }}\n");
                }
                text += "[breaker]\ncooldown_s = 5.0\n";
                if let Some((timeout, fallback)) = deadlines {
                    text += &format!(
                        "[algorithms.wait]\ntimeout_s = {timeout}\n\
                         [algorithms.sticky]\nfallback_after_s = {fallback}\n"
                    );
                }
                let two_pools = two_pools && endpoints.len() > 1;
                if two_pools {
                    text += "[[pools]]\nname = \"a\"\n[[pools]]\nname = \"b\"\nselection = \"round_robin\"\n";
                }
                if let Some((kind, start, length, factor)) = incident {
                    let kind = ["outage", "capacity", "latency", "storm", "revoke", "outage"][kind];
                    text += &format!(
                        "[[incidents]]\nkind = \"{kind}\"\nendpoints = [\"e0\"]\nstart_s = {start}\n"
                    );
                    if kind != "revoke" {
                        text += &format!("end_s = {}\n", start + length);
                    }
                    if matches!(kind, "capacity" | "latency") {
                        text += &format!("factor = {factor}\n");
                    }
                }
                for (i, (cap, weight, median, sigma, err, storm, bucket, quota, cache)) in
                    endpoints.into_iter().enumerate()
                {
                    text += &format!(
                        "[[endpoints]]\nid = \"e{i}\"\ncapacity = {cap}\nweight = {weight}\n\
                         latency = {{ median_s = {median}, sigma = {sigma} }}\n\
                         failures = {{ error_rate = {err}, storm_rate = {storm}, storm_check_s = 2.0, storm_duration_s = 5.0 }}\n"
                    );
                    if let Some(q) = quota {
                        text += &format!("quota_units = {q}\n");
                    }
                    if two_pools {
                        text += &format!("pool = \"{}\"\n", ["a", "b"][i % 2]);
                    }
                    if let Some((ttl, factor, cost)) = cache {
                        text += &format!(
                            "cache = {{ ttl_s = {ttl}, latency_factor = {factor}, token_cost = {cost} }}\n"
                        );
                    }
                    if let Some((per_window, window, extra)) = bucket {
                        // A bucket holds at least one request (per_window * burst >= 1).
                        let burst = (1.0 + 1e-9) / per_window as f64 + extra;
                        text += &format!(
                            "rate_limit = {{ per_window = {per_window}, window_s = {window}, burst = {burst} }}\n"
                        );
                    }
                }
                text
            },
        )
}

proptest! {
    #![proptest_config(crate::support::proptest_config(64))]
    #[test]
    fn invariants_hold_on_generated_worlds(text in arbitrary_world(), seed in 0u64..1000) {
        let world = load(&text);
        for info in registry::ALGORITHMS {
            let result = run(&world, info.name, seed, false);
            // A stall is a legitimate end for a world whose endpoints all die; it keeps its
            // metrics, and only a budget (none here) leaves a run without them.
            let m = result.metrics.as_ref().expect("every run without a budget has metrics");
            let stalled = matches!(result.outcome, Outcome::Stalled { .. });
            prop_assert!(stalled || result.outcome == Outcome::Ok, "{:?}", result.outcome);
            prop_assert_eq!(m.get(Metric::StallRate), if stalled { 1.0 } else { 0.0 });
            if !stalled {
                prop_assert_eq!(m.get(Metric::JobsStalled), 0.0);
            }
            let jobs = f64::from(world.jobs());
            prop_assert_eq!(
                m.get(Metric::JobsDone)
                    + m.get(Metric::JobsFailed)
                    + m.get(Metric::JobsStalled)
                    + m.get(Metric::JobsUnstarted),
                jobs
            );
            prop_assert_eq!(m.get(Metric::LeasesActiveAtEnd), 0.0);
            let requests: u64 = result.endpoints.iter().map(|e| e.provider.requests).sum();
            prop_assert_eq!(m.get(Metric::Requests), requests as f64);
            for e in &result.endpoints {
                let p = &e.provider;
                prop_assert_eq!(p.admitted + p.refused_capacity + p.refused_quota + p.rejected, p.requests);
                prop_assert!(p.failed <= p.admitted);
                prop_assert!(p.peak_in_flight <= e.pool.leases.max(1) as u32);
            }
            prop_assert!(m.get(Metric::AttemptInflation) == 0.0 || m.get(Metric::AttemptInflation) >= 1.0);
            for (info, value) in m.iter() {
                prop_assert!(value.is_finite() && value >= 0.0, "{} = {}", info.name, value);
            }
        }
    }
}

#[test]
fn catalogue_names_are_unique() {
    let mut names: Vec<_> = CATALOGUE.iter().map(|m| m.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), CATALOGUE.len());
}

#[test]
fn retry_after_aware_keeps_every_worker_off_a_refusing_endpoint() {
    let world = compile::builtin_bursty();
    let result = run(&world, "retry_after_aware", world.seed(), true);
    assert!(result.metrics.is_some());
    let retry_after = |r: usize, refusal: Refusal| match refusal {
        Refusal::Capacity => world.capacity_retry_after_s(),
        Refusal::Quota => {
            world.endpoints()[r]
                .rate_limit
                .as_ref()
                .unwrap()
                .retry_after_s
        }
        other => panic!("the built-in world has no published limits: {other:?}"),
    };
    let mut blocked_until = vec![0.0f64; world.endpoints().len()];
    let mut refusals = 0;
    for record in &result.trace {
        assert!(
            record.at_s >= blocked_until[record.resource],
            "request to endpoint {} at {} inside a Retry-After ending {}",
            record.resource,
            record.at_s,
            blocked_until[record.resource]
        );
        if let CallResult::Refused(refusal) = record.result {
            refusals += 1;
            let until = record.at_s + retry_after(record.resource, refusal);
            blocked_until[record.resource] = blocked_until[record.resource].max(until);
        }
    }
    assert!(refusals > 0, "the world does refuse");
}

#[test]
fn p2c_spreads_load_over_equal_endpoints() {
    let mut text = String::from(
        "name = \"equal\"\nsummary = \"Four equal endpoints.\"\njobs = 4000\nconcurrency = 6\n\
         horizon_s = 1e9\nsteps_per_job = 1\ncalls_per_step = 1\n[cycle]\nperiod_s = 0.0\n\
         trough = 1.0\npeak = 1.0\n",
    );
    for i in 0..4 {
        text += &format!(
            "[[endpoints]]\nid = \"e{i}\"\ncapacity = 4\n\
             latency = {{ median_s = 0.1, sigma = 0.3 }}\n\
             failures = {{ error_rate = 0.0, storm_rate = 0.0 }}\n"
        );
    }
    let world = load(&text);
    let p2c = run(&world, "p2c", 5, false).metrics.expect("finished");
    let wait = run(&world, "wait", 5, false).metrics.expect("finished");
    assert_eq!(p2c.get(Metric::JobsDone), 4000.0);
    assert!(
        p2c.get(Metric::EndpointSpread) < 0.05,
        "{}",
        p2c.get(Metric::EndpointSpread)
    );
    assert_ne!(
        comparable(&run(&world, "p2c", 5, false)),
        comparable(&run(&world, "wait", 5, false))
    );
    assert_eq!(wait.get(Metric::JobsDone), 4000.0);
}

/// Every duration and factor at the top of its allowed range: times grow astronomically but stay
/// finite, so the run ends (or stalls) with a result instead of a panic.
#[test]
fn worlds_at_the_edge_of_the_ranges_still_run() {
    let text = r#"
name = "edges"
summary = "Every duration and factor at its maximum."
jobs = 30
concurrency = 3
horizon_s = 1e12
steps_per_job = 2
calls_per_step = 2
[cycle]
period_s = 1e12
trough = 0.0
peak = 1e6
phase_s = -1e12
[retry]
max_attempts = 1000
base = 1e9
factor = 1e6
cap = 1e9
jitter = "equal"
max_total_s = 1e12
[breaker]
cooldown_s = 1e9
[provider]
capacity_retry_after_s = 1e9
[[endpoints]]
id = "slowest"
capacity = 1
weight = 1e6
latency = { median_s = 1e6, sigma = 10.0, tail_rate = 1.0, tail_factor = 1e6 }
failures = { error_rate = 0.5, storm_rate = 1.0, storm_check_s = 1e9, storm_duration_s = 1e9, storm_error_rate = 1.0 }
rate_limit = { per_window = 1, window_s = 1e9, burst = 1e6, retry_after_s = 1e9, recovery_per_window = 1e6 }
[[endpoints]]
id = "exponential"
capacity = 2
latency = { distribution = "exponential", mean_s = 1e6, tail_factor = 1e6 }
"#;
    let world = load(text);
    for info in registry::ALGORITHMS {
        let result = run(&world, info.name, 1, false);
        match &result.metrics {
            Some(m) => assert!(m.iter().all(|(_, v)| v.is_finite()), "{}", info.name),
            None => assert!(
                matches!(result.outcome, Outcome::Stalled { .. }),
                "{}: {:?}",
                info.name,
                result.outcome
            ),
        }
    }
}

/// A log-uniform value in `[lo, hi]`, written so TOML reads it back as the same float.
fn log_uniform(lo: f64, hi: f64) -> impl proptest::strategy::Strategy<Value = f64> {
    (0.0f64..=1.0).prop_map(move |u| (lo.ln() + u * (hi.ln() - lo.ln())).exp().min(hi))
}

proptest! {
    #![proptest_config(crate::support::proptest_config(48))]
    /// Worlds drawn across the whole allowed ranges (not just plausible ones) run to a result
    /// or a stall — never a panic — with every metric finite.
    #[test]
    fn worlds_anywhere_in_the_ranges_run_without_panicking(
        median in log_uniform(1e-6, 1e6),
        sigma in 0.0f64..=10.0,
        tail in log_uniform(1e-3, 1e6),
        cooldown in log_uniform(1e-3, 1e9),
        base in log_uniform(1e-6, 1e9),
        factor in log_uniform(1.0, 1e6),
        retry_after in log_uniform(1e-6, 1e9),
        capacity in 1u32..50,
        workers in 1u32..40,
        open in proptest::bool::ANY,
        rate in log_uniform(1e-3, 1e6),
    ) {
        // Only a closed loop has workers.
        let (workers, load_table) = if open {
            (String::new(), format!("[load]\nmodel = \"open\"\nrate_per_s = {rate:e}\n"))
        } else {
            (format!("concurrency = {workers}\n"), String::new())
        };
        let text = format!(
            "name = \"wide\"\nsummary = \"wide\"\njobs = 12\n{workers}\
             horizon_s = 1e6\n{load_table}[retry]\nbase = {base:e}\nfactor = {factor:e}\ncap = 1e9\n\
             [breaker]\ncooldown_s = {cooldown:e}\n[provider]\ncapacity_retry_after_s = {retry_after:e}\n\
             [[endpoints]]\nid = \"a\"\ncapacity = {capacity}\n\
             latency = {{ median_s = {median:e}, sigma = {sigma:e}, tail_rate = 0.5, tail_factor = {tail:e} }}\n\
             failures = {{ error_rate = 0.3 }}\n"
        );
        let world = load(&text);
        for info in registry::ALGORITHMS {
            // Some corners (a 1e9 s cooldown met by backoff's 10 s polls) take billions of
            // events: an event budget stands in for the CLI's wall-clock budget.
            let polls = std::cell::Cell::new(0u32);
            let out_of_time = || {
                polls.set(polls.get() + 1);
                polls.get() > 20
            };
            let config = RunConfig {
                seed: 9,
                rng: RngScheme::Native,
                trace: false,
                window_s: None,
                out_of_time: &out_of_time,
            };
            let result = harness::run(&world, info.build_default().as_ref(), &config);
            if let Some(m) = &result.metrics {
                prop_assert!(m.iter().all(|(_, v)| v.is_finite()), "{}", info.name);
            }
        }
    }
}
