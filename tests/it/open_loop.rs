//! The two clocks and the load models against queueing theory: Poisson arrivals to c servers
//! (utilization, the Erlang-C mean wait of M/M/c, the M/D/1 wait), a closed loop that never
//! queues, and a closed loop whose workers pause between jobs (the interactive response time
//! law, and the finite-source M/M/1//N queue). One endpoint, no failures, no bucket, a flat cycle: the pool's capacity c
//! is the server count and `wait` is the FIFO queue.

use simbench::metrics::Metric;

use crate::sim::{load, run};

/// One endpoint with `servers` servers and the given latency table, fed by `load_table`.
fn world(servers: u32, latency: &str, load_table: &str, jobs: u32) -> simbench::world::World {
    // Only a closed loop has workers.
    let workers = if load_table.contains("\"open\"") {
        ""
    } else {
        "concurrency = 4"
    };
    load(&format!(
        r#"
name = "queue"
summary = "One endpoint, constant capacity, no failures, no bucket."
seed = 11
jobs = {jobs}
{workers}
horizon_s = 1e12
steps_per_job = 1
calls_per_step = 1
[cycle]
period_s = 0.0
trough = 1.0
peak = 1.0
{load_table}
[[endpoints]]
id = "only"
capacity = {servers}
latency = {latency}
failures = {{ error_rate = 0.0, storm_rate = 0.0 }}
"#
    ))
}

fn open(rate: f64) -> String {
    format!("[load]\nmodel = \"open\"\nrate_per_s = {rate}")
}

fn within(got: f64, want: f64, tolerance: f64, what: &str) {
    assert!(
        (got / want - 1.0).abs() <= tolerance,
        "{what}: got {got}, theory {want} (tolerance {tolerance})"
    );
}

#[test]
fn open_loop_utilization_is_offered_load() {
    for (servers, rate, latency) in [
        (
            4,
            6.0,
            "{ distribution = \"exponential\", mean_s = 0.5, tail_rate = 0.0 }",
        ),
        (
            8,
            10.0,
            "{ median_s = 0.4, sigma = 0.5, tail_rate = 0.02, tail_factor = 4.0 }",
        ),
    ] {
        let w = world(servers, latency, &open(rate), 200_000);
        let mean_s = w.endpoints()[0].latency.expected_s();
        let m = run(&w, "wait", w.seed(), false).metrics.expect("finished");
        assert_eq!(m.get(Metric::JobsDone), 200_000.0);
        within(
            m.get(Metric::Utilization),
            rate * mean_s / f64::from(servers),
            0.01,
            "utilization",
        );
    }
}

/// Jobs that arrived in a run of a world whose horizon cuts the arrivals.
fn arrived(rate: f64, arrivals: &str, horizon_s: f64, seed: u64) -> f64 {
    let w = load(&format!(
        r#"
name = "short"
summary = "Arrivals cut by a short horizon."
jobs = 1000
horizon_s = {horizon_s}
[load]
model = "open"
rate_per_s = {rate}
arrivals = "{arrivals}"
[[endpoints]]
id = "only"
capacity = 4
latency = {{ median_s = 0.01 }}
"#
    ));
    let m = run(&w, "wait", seed, false).metrics.expect("finished");
    1000.0 - m.get(Metric::JobsUnstarted)
}

/// A Poisson process over a horizon of H offers λH jobs on average, not one more: the first
/// arrival comes after a gap of its own, and none comes at all when that gap passes the
/// horizon. Evenly spaced arrivals start at 0, as a fixed-rate generator does: ⌈λH⌉ of them.
#[test]
fn poisson_arrivals_over_a_short_horizon_offer_the_rate_times_the_horizon() {
    let seeds = 2000;
    for (rate, horizon) in [(2.0, 1.0), (0.001, 10.0)] {
        let total: f64 = (0..seeds)
            .map(|seed| arrived(rate, "poisson", horizon, seed))
            .sum();
        let (mean, want) = (total / seeds as f64, rate * horizon);
        // Five standard errors of a Poisson mean over the seeds, and never below 0.005.
        let tolerance = (5.0 * (want / seeds as f64).sqrt()).max(0.005);
        assert!(
            (mean - want).abs() <= tolerance,
            "rate {rate}/s over {horizon} s: {mean} jobs a run, theory {want} ± {tolerance}"
        );
    }
    assert_eq!(arrived(2.0, "uniform", 1.0, 1), 2.0);
    assert_eq!(arrived(2.0, "uniform", 1.2, 1), 3.0);
}

#[test]
fn exponential_service_gives_the_erlang_c_wait() {
    // λ = 6/s, 1/E[S] = 2/s, c = 4: Wq = C(4, 3) / (cμ − λ) = 27/106 s. A queue at ρ = 0.75
    // mixes slowly (one seed of 400,000 jobs scatters by ±2.5 %), so average 8 seeds.
    let w = world(
        4,
        "{ distribution = \"exponential\", mean_s = 0.5, tail_rate = 0.0 }",
        &open(6.0),
        250_000,
    );
    let seeds = 8;
    let mut sum_s = 0.0;
    for k in 0..seeds {
        let m = run(&w, "wait", w.seed() + k, false)
            .metrics
            .expect("finished");
        assert!(
            m.get(Metric::QueueShare) > 0.05,
            "this harness queue is visible"
        );
        sum_s += m.get(Metric::QueueWaitMeanMs) / 1000.0;
    }
    within(sum_s / seeds as f64, 27.0 / 106.0, 0.02, "M/M/4 mean wait");
}

#[test]
fn constant_service_on_one_server_gives_the_md1_wait() {
    // λ = 1/s, S = 0.5 s: Wq = λS² / (2(1 − ρ)) = 0.25 s.
    let w = world(
        1,
        "{ distribution = \"constant\", mean_s = 0.5, tail_rate = 0.0 }",
        &open(1.0),
        200_000,
    );
    let m = run(&w, "wait", w.seed(), false).metrics.expect("finished");
    within(
        m.get(Metric::QueueWaitMeanMs) / 1000.0,
        0.25,
        0.02,
        "M/D/1 mean wait",
    );
    within(m.get(Metric::ServiceP99Ms), 500.0, 1e-9, "constant service");
}

#[test]
fn closed_loop_within_capacity_never_queues() {
    let w = world(
        8,
        "{ median_s = 0.1, sigma = 0.5 }",
        "[load]\nmodel = \"closed\"",
        20_000,
    );
    let m = run(&w, "wait", w.seed(), false).metrics.expect("finished");
    assert_eq!(m.get(Metric::QueueShare), 0.0);
    assert_eq!(m.get(Metric::QueueWaitP99Ms), 0.0);
    assert_eq!(m.get(Metric::ObservedP99Ms), m.get(Metric::ServiceP99Ms));
    assert_eq!(m.get(Metric::ConcurrencyUsed), 4.0);
}

/// `workers` in a closed loop pausing `think` between jobs (a `[load]` line such as
/// `think_s = 2.0`), on one endpoint of `servers` servers, until `horizon_s`.
pub(crate) fn thinking(
    workers: u32,
    servers: u32,
    latency: &str,
    think: &str,
    horizon_s: f64,
) -> String {
    format!(
        r#"
name = "thinking"
summary = "Workers that pause between jobs, one endpoint, no failures, no bucket."
seed = 11
jobs = 10000000
concurrency = {workers}
horizon_s = {horizon_s}
steps_per_job = 1
calls_per_step = 1
[cycle]
period_s = 0.0
[load]
{think}
[[endpoints]]
id = "only"
capacity = {servers}
latency = {latency}
failures = {{ error_rate = 0.0, storm_rate = 0.0 }}
"#
    )
}

#[test]
fn a_fixed_pause_between_jobs_gives_n_over_service_plus_think() {
    // N = 10 workers, S = 0.5 s, Z = 1.5 s, room for all: each worker starts a job at 0, 2,
    // …, 998 s (none could start after its pause ends at the 1000 s horizon): 5,000 jobs, the
    // last ending at 998.5 s.
    let w = load(&thinking(
        10,
        64,
        "{ distribution = \"constant\", mean_s = 0.5, tail_rate = 0.0 }",
        "think_s = 1.5",
        1000.0,
    ));
    let m = run(&w, "wait", w.seed(), false).metrics.expect("finished");
    assert_eq!(m.get(Metric::JobsDone), 5_000.0);
    within(m.get(Metric::MakespanS), 998.5, 1e-12, "makespan");
    assert_eq!(m.get(Metric::QueueWaitP99Ms), 0.0);
}

#[test]
fn exponential_pauses_give_the_finite_source_queue() {
    // The machine-repairman queue M/M/1//N: N = 5 workers pausing Exp(Z = 2 s), one server of
    // Exp(S = 0.5 s). With r = S / Z, p0 = 1 / Σ_{n=0}^{N} N! / (N − n)! rⁿ; the server is busy
    // 1 − p0 of the time, X = (1 − p0) / S jobs a second, and each waits R − S = N / X − Z − S.
    let (n, z, s) = (5u32, 2.0, 0.5);
    let r: f64 = s / z;
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 0..n {
        term *= f64::from(n - k) * r;
        sum += term;
    }
    let busy = 1.0 - 1.0 / sum;
    let x = busy / s;
    let wait_s = f64::from(n) / x - z - s;
    let w = load(&thinking(
        n,
        1,
        "{ distribution = \"exponential\", mean_s = 0.5, tail_rate = 0.0 }",
        "think_s = 2.0\nthink = \"exponential\"",
        200_000.0,
    ));
    let m = run(&w, "wait", w.seed(), false).metrics.expect("finished");
    within(m.get(Metric::ThroughputRps), x, 0.01, "throughput");
    within(m.get(Metric::Utilization), busy, 0.01, "utilization");
    within(
        m.get(Metric::QueueWaitMeanMs) / 1000.0,
        wait_s,
        0.03,
        "mean wait",
    );
}

#[test]
fn open_loop_caps_jobs_in_flight_and_counts_the_queue() {
    let w = world(
        2,
        "{ distribution = \"constant\", mean_s = 1.0, tail_rate = 0.0 }",
        "[load]\nmodel = \"open\"\nrate_per_s = 10.0\narrivals = \"uniform\"\nmax_in_flight = 5",
        100,
    );
    let m = run(&w, "wait", w.seed(), false).metrics.expect("finished");
    assert_eq!(m.get(Metric::JobsDone), 100.0);
    assert_eq!(m.get(Metric::ConcurrencyUsed), 5.0);
    // Two servers, one second each, the second starting at the second arrival (0.1 s): the
    // 100 jobs end at 50.1 s however fast they arrive.
    within(m.get(Metric::MakespanS), 50.1, 1e-9, "makespan");
    // The last job arrived at 9.9 s and was served last: it waited about 40 s.
    assert!(m.get(Metric::QueueWaitP99Ms) > 35_000.0);
}

fn scenario(name: &str) -> simbench::world::World {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/{name}"));
    load(&std::fs::read_to_string(path).expect("scenario file"))
}

#[test]
fn the_congested_harness_measures_itself_and_is_invalid() {
    let w = scenario("harness_congestion.toml");
    for seed in w.seed()..w.seed() + 3 {
        let m = run(&w, "wait", seed, false).metrics.expect("finished");
        let (service, observed) = (m.get(Metric::ServiceP99Ms), m.get(Metric::ObservedP99Ms));
        assert!(
            observed > 3.0 * service,
            "observed {observed} vs service {service}"
        );
        assert!(m.get(Metric::RefusalRate) > 0.5);
        let reason = simbench::report::validity::judge(&m, w.validity()).expect("invalid");
        assert!(
            reason.starts_with("harness-bound: p99 queue wait"),
            "{reason}"
        );
    }
}

#[test]
fn the_same_endpoint_at_the_knee_is_valid() {
    let w = scenario("harness_knee.toml");
    for seed in w.seed()..w.seed() + 3 {
        let m = run(&w, "wait", seed, false).metrics.expect("finished");
        assert_eq!(m.get(Metric::ObservedP99Ms), m.get(Metric::ServiceP99Ms));
        assert_eq!(m.get(Metric::RefusalRate), 0.0);
        assert_eq!(simbench::report::validity::judge(&m, w.validity()), None);
    }
}
