//! Token worlds against closed forms: a token limit that is the only bottleneck sets the
//! long-run job rate to limit / tokens per job; with no limit, latency is the documented token
//! formula; with two limits the tighter binds. One endpoint, no failures, a flat cycle.

use simbench::metrics::{Metric, MetricValues};
use simbench::world::World;

use crate::sim::{load, run};

/// One endpoint of `capacity`, `workers` closed-loop workers, one call per job.
fn world(workers: u32, jobs: u32, capacity: u32, sizes: &str, endpoint: &str) -> World {
    load(&world_text(workers, jobs, capacity, sizes, endpoint))
}

fn world_text(workers: u32, jobs: u32, capacity: u32, sizes: &str, endpoint: &str) -> String {
    format!(
        r#"
name = "tokens"
summary = "One token endpoint, no failures, a flat cycle."
seed = 5
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
id = "only"
capacity = {capacity}
failures = {{ error_rate = 0.0, storm_rate = 0.0 }}
{endpoint}
"#
    )
}

fn metrics(world: &World, algorithm: &str) -> MetricValues {
    let result = run(world, algorithm, world.seed(), false);
    result.metrics.expect("the run finishes")
}

fn within(got: f64, want: f64, tolerance: f64, what: &str) {
    let error = (got - want).abs() / want;
    assert!(
        error <= tolerance,
        "{what}: got {got}, want {want} (error {:.3} % > {} %)",
        error * 100.0,
        tolerance * 100.0
    );
}

const CONSTANT_SIZES: &str = r#"input = { distribution = "constant", value = 1000 }
output = { distribution = "constant", value = 200 }
max_tokens = 200"#;

const FAST: &str = r#"latency = { distribution = "tokens", ttft_s = 0.05, decode_tokens_per_s = 10000, tail_rate = 0.0 }"#;

#[test]
fn a_token_limit_alone_sets_the_job_rate_to_limit_over_tokens_per_job() {
    // 120,000 tokens a minute, 1,200 tokens a job: 100 jobs a minute. The bucket starts full
    // (100 jobs at once), so over 20,000 jobs the long-run rate shows within 1 %.
    let endpoint =
        format!("{FAST}\nlimits = [{{ unit = \"tokens\", limit = 120000, per = \"minute\" }}]");
    let w = world(10, 20_000, 1000, CONSTANT_SIZES, &endpoint);
    for algorithm in ["wait", "least_busy"] {
        let m = metrics(&w, algorithm);
        // Ten workers herd on every refill; a few lose a thousand times in a row and give up,
        // which costs no tokens: the rate of completions is what the limit sets.
        assert!(m.get(Metric::JobsDone) > 19_500.0, "{algorithm}");
        let rate = (m.get(Metric::JobsDone) - 100.0) / m.get(Metric::MakespanS);
        within(rate, 120_000.0 / 1200.0 / 60.0, 0.01, algorithm);
        assert!(m.get(Metric::RefusalsByTokenLimit) > 0.0);
        assert_eq!(m.get(Metric::RefusalsByRequestLimit), 0.0);
    }
}

#[test]
fn with_no_limit_mean_latency_is_the_documented_token_formula() {
    // ttft = (ttft_s + ttft_per_1k_input_s · input/1000) · (1 + ttft_load · u), speed =
    // decode / (1 + load_slowdown · u). One worker: u = 0, and the makespan is the sum of the
    // latencies, so its mean is makespan / requests; sizes uniform, so the mean is linear in them.
    let sizes = r#"input = { distribution = "uniform", min = 1000, max = 3000 }
output = { distribution = "uniform", min = 100, max = 500 }
max_tokens = 1000"#;
    let latency = r#"latency = { distribution = "tokens", ttft_s = 0.2, ttft_per_1k_input_s = 0.1, ttft_load = 1.0, decode_tokens_per_s = 50, load_slowdown = 0.5, tail_rate = 0.0 }"#;
    let w = world(1, 20_000, 10, sizes, latency);
    let m = metrics(&w, "wait");
    let mean = m.get(Metric::MakespanS) / m.get(Metric::Requests);
    within(
        mean,
        0.2 + 0.1 * 2.0 + 300.0 / 50.0,
        0.01,
        "idle mean latency",
    );

    // Ten workers on a capacity of 10: every request after the first ten is admitted beside
    // nine others, u = 9/10: ttft = 0.4 · 1.9 = 0.76 s, 300 tokens at 50/1.45 per second.
    let constant = r#"input = { distribution = "constant", value = 2000 }
output = { distribution = "constant", value = 300 }
max_tokens = 1000"#;
    let w = world(10, 5_000, 10, constant, latency);
    let m = metrics(&w, "wait");
    within(m.get(Metric::TtftP50Ms), 760.0, 0.01, "loaded ttft");
    within(
        m.get(Metric::RequestLatencyP50Ms),
        760.0 + 300.0 * 1.45 / 50.0 * 1000.0,
        0.01,
        "loaded latency",
    );
    within(
        m.get(Metric::TimePerOutputTokenMs),
        1.45 / 50.0 * 1000.0,
        0.01,
        "time per output token",
    );
}

#[test]
fn a_prompt_cache_hit_shortens_the_time_to_first_token_not_the_decode() {
    // Two steps a job, one worker: the second step lands where the first was served and hits
    // the cache. A miss takes 0.2 + 0.1 · 2 = 0.4 s to the first token, a hit a quarter of
    // that; both decode 300 tokens at 50 per second. Mean latency (0.4 + 0.1) / 2 + 6 s.
    let constant = r#"input = { distribution = "constant", value = 2000 }
output = { distribution = "constant", value = 300 }
max_tokens = 1000"#;
    let endpoint = r#"latency = { distribution = "tokens", ttft_s = 0.2, ttft_per_1k_input_s = 0.1, decode_tokens_per_s = 50, tail_rate = 0.0 }
cache = { ttl_s = 1e9, latency_factor = 0.25, token_cost = 1.0 }"#;
    let text = world_text(1, 2_000, 10, constant, endpoint)
        .replace("steps_per_job = 1", "steps_per_job = 2");
    let w = load(&text);
    let m = metrics(&w, "wait");
    within(m.get(Metric::CacheHitRate), 0.5, 0.01, "cache hit rate");
    within(
        m.get(Metric::MakespanS) / m.get(Metric::Requests),
        0.25 + 6.0,
        0.01,
        "mean latency",
    );
    within(
        m.get(Metric::TimePerOutputTokenMs),
        20.0,
        0.01,
        "time per output token, hits and misses alike",
    );
}

#[test]
fn with_two_limits_the_tighter_one_binds() {
    // Requests: 60 a minute (1/s). Tokens: 600,000 a minute (500 jobs a minute). Requests bind.
    let tight_requests = format!(
        "{FAST}\nlimits = [{{ unit = \"requests\", limit = 60, per = \"minute\" }}, {{ unit = \"tokens\", limit = 600000, per = \"minute\" }}]"
    );
    let w = world(20, 6_000, 1000, CONSTANT_SIZES, &tight_requests);
    let m = metrics(&w, "wait");
    let rate = (m.get(Metric::JobsDone) - 60.0) / m.get(Metric::MakespanS);
    within(rate, 1.0, 0.01, "request limit binds");
    assert!(m.get(Metric::RefusalsByRequestLimit) > 0.0);
    assert_eq!(m.get(Metric::RefusalsByTokenLimit), 0.0);

    // Requests: 600 a minute. Tokens: 60,000 a minute (50 jobs a minute). Tokens bind.
    let tight_tokens = format!(
        "{FAST}\nlimits = [{{ unit = \"requests\", limit = 600, per = \"minute\" }}, {{ unit = \"tokens\", limit = 60000, per = \"minute\" }}]"
    );
    let w = world(20, 3_000, 1000, CONSTANT_SIZES, &tight_tokens);
    let m = metrics(&w, "wait");
    let rate = (m.get(Metric::JobsDone) - 50.0) / m.get(Metric::MakespanS);
    within(rate, 50.0 / 60.0, 0.01, "token limit binds");
    assert!(m.get(Metric::RefusalsByTokenLimit) > 0.0);
    assert_eq!(m.get(Metric::RefusalsByRequestLimit), 0.0);
}

#[test]
fn a_daily_quota_stops_admissions_until_the_day_turns() {
    // 100 jobs' worth of input tokens a day: the 101st waits for the next day.
    let sizes = CONSTANT_SIZES;
    let endpoint =
        format!("{FAST}\nlimits = [{{ unit = \"input_tokens\", limit = 100000, per = \"day\" }}]");
    let w = world(4, 150, 100, sizes, &endpoint);
    let m = metrics(&w, "wait");
    assert_eq!(m.get(Metric::JobsDone), 150.0);
    assert!(
        m.get(Metric::MakespanS) >= 86_400.0,
        "{}",
        m.get(Metric::MakespanS)
    );
    assert!(m.get(Metric::MakespanS) < 86_401.0);
    assert!(m.get(Metric::RefusalsByDailyLimit) > 0.0);
}

#[test]
fn price_bills_successes_and_waste_counts_what_failed() {
    let endpoint = format!("{FAST}\nprice = {{ input_per_mtok = 2.0, output_per_mtok = 8.0 }}");
    let w = world(4, 1000, 100, CONSTANT_SIZES, &endpoint);
    let m = metrics(&w, "wait");
    // 1,000 jobs × (1,000 · 2 + 200 · 8) / 10^6.
    within(m.get(Metric::Cost), 3.6, 1e-9, "cost");
    within(
        m.get(Metric::CostPerCompletedJob),
        0.0036,
        1e-9,
        "cost per job",
    );
    assert_eq!(m.get(Metric::TokensWasted), 0.0);

    // A client timeout shorter than the time to first token: nothing is written, every
    // attempt wastes its 1,000 prompt tokens and is billed for them; 3 attempts per job.
    let sizes = format!("{CONSTANT_SIZES}\nrequest_timeout_s = 0.01");
    let text = world_text(1, 5, 100, &sizes, &endpoint).replace(
        "max_attempts = 1000",
        "max_attempts = 3\nbase = 0.001\ncap = 0.001",
    );
    let result = run(&load(&text), "wait", 5, false);
    let m = result.metrics.expect("finishes");
    assert_eq!(m.get(Metric::JobsFailed), 5.0);
    assert_eq!(m.get(Metric::TokensWasted), 15.0 * 1000.0);
    within(
        m.get(Metric::Cost),
        15.0 * 1000.0 * 2.0 / 1e6,
        1e-9,
        "billed timeouts",
    );
    assert_eq!(
        m.value(Metric::CostPerCompletedJob),
        None,
        "no job completed"
    );
    assert_eq!(result.error_classes, [("timeout", 15)].into());
}

#[test]
fn requests_larger_than_a_limit_fail_at_once_as_fatal() {
    let endpoint =
        format!("{FAST}\nlimits = [{{ unit = \"tokens\", limit = 1000, per = \"minute\" }}]");
    let w = world(2, 10, 10, CONSTANT_SIZES, &endpoint);
    let result = run(&w, "wait", w.seed(), false);
    let m = result.metrics.expect("finishes");
    assert_eq!(m.get(Metric::JobsFailed), 10.0);
    assert_eq!(result.error_classes, [("fatal", 10)].into());
}

/// A 400 says the request is too large, not that the endpoint is unwell: the breaker does not
/// count it, so an endpoint whose limit is below every request fails each job at once (the
/// run ends) instead of being declared DEAD after a few (a stall, every later job unstarted).
#[test]
fn requests_too_large_for_every_endpoint_fail_without_tripping_the_breaker() {
    let endpoint =
        format!("{FAST}\nlimits = [{{ unit = \"tokens\", limit = 1000, per = \"minute\" }}]");
    let text = world_text(2, 40, 10, CONSTANT_SIZES, &endpoint).replace(
        "dead_after = 1000000000\ndegrade_after = 1000000000",
        "dead_after = 3\ndegrade_after = 2",
    );
    let w = load(&text);
    for algorithm in ["wait", "least_busy", "sdk_retry"] {
        let result = run(&w, algorithm, w.seed(), false);
        let m = result.metrics.expect("the run ends: no stall");
        assert_eq!(m.get(Metric::JobsFailed), 40.0, "{algorithm}");
        assert_eq!(result.error_classes, [("fatal", 40)].into(), "{algorithm}");
    }
}

/// A few prompts too large for the only deployment's limit (HTTP 400) do not cool it: the
/// routers meet the same oversized prompts as `wait` and fail their jobs as `fatal`, but no
/// other job fails as `unknown` for want of a deployment out of cooldown.
#[test]
fn a_few_oversized_prompts_do_not_take_a_routers_deployment_out_of_use() {
    let sizes = "input = { distribution = \"uniform\", min = 100, max = 1050 }\n\
                 output = { distribution = \"constant\", value = 100 }\nmax_tokens = 200";
    let endpoint =
        format!("{FAST}\nlimits = [{{ unit = \"tokens\", limit = 1200, per = \"second\" }}]");
    let w = load(&world_text(2, 200, 4, sizes, &endpoint));
    let wait = run(&w, "wait", w.seed(), false).error_classes;
    let oversized = wait.get("fatal").copied().unwrap_or(0);
    assert!(oversized > 0, "{wait:?}");
    for router in ["router", "router_least_busy"] {
        let classes = run(&w, router, w.seed(), false).error_classes;
        assert_eq!(
            classes.get("fatal"),
            Some(&oversized),
            "{router}: {classes:?}"
        );
        assert_eq!(classes.get("unknown"), None, "{router}: {classes:?}");
    }
}

#[test]
fn a_token_world_no_code_was_written_for_runs_every_strategy_deterministically() {
    use crate::support::{simbench, without_wall_times};
    let file = "tests/data/worlds/llm_eval_harness.toml";
    let run = |threads: &str| {
        let out = simbench(&[
            "run",
            file,
            "--seeds",
            "2",
            "--quiet",
            "--threads",
            threads,
            "--json",
            "-",
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let one = run("1");
    assert_eq!(without_wall_times(&one), without_wall_times(&run("2")));
    let json: serde_json::Value = serde_json::from_str(&one).expect("JSON");
    assert!(json["not_applicable"].get("ttft_p50_ms").is_none());
    for r in json["runs"].as_array().expect("runs") {
        let m = &r["metrics"];
        assert!(m["output_goodput_tps"].as_f64().unwrap() > 0.0, "{r}");
        assert!(m["cost"].as_f64().unwrap() > 0.0, "{r}");
        assert!(m["ttft_p99_ms"].as_f64().unwrap() >= m["ttft_p50_ms"].as_f64().unwrap());
    }
}

#[test]
fn the_slowest_decode_and_the_shortest_window_stay_inside_simulated_time() {
    // The extremes the schema allows: a huge prompt, the slowest decode, the largest load
    // factors and tail, a 1 ms fixed window. Once an event landed past the end of time here.
    let sizes = r#"input = { distribution = "lognormal", median = 1e8, sigma = 5 }
output = { distribution = "constant", value = 1e7 }
max_tokens = 10000000"#;
    let endpoint = r#"latency = { distribution = "tokens", ttft_s = 1e6, ttft_per_1k_input_s = 1e6, ttft_load = 1e6, decode_tokens_per_s = 0.001, load_slowdown = 1e6, tail_rate = 1, tail_factor = 1e6 }
limits = [{ unit = "requests", limit = 1, window_s = 0.001, reset = "fixed" }]"#;
    let w = world(3, 6, 1, sizes, endpoint);
    for algorithm in ["wait", "immediate", "sdk_retry"] {
        let result = run(&w, algorithm, w.seed(), false);
        let m = result.metrics.expect("finishes");
        for (info, v) in m.iter() {
            assert!(v.is_finite(), "{algorithm}: {} = {v}", info.name);
        }
    }
}

/// A hedge copy that loses is cancelled, but what it consumed stays spent: its prompt and the
/// output written by then are billed and wasted, as a request the client hung up on. The
/// request log's cancelled records account for every token of waste and every cent of cost
/// beyond the successes.
#[test]
fn a_cancelled_hedge_copy_is_billed_and_wasted_for_what_it_wrote() {
    let dir = crate::support::scratch_dir("hedge-tokens");
    let file = dir.join("hedge.toml");
    let endpoint = |id: &str| {
        format!(
            "[[endpoints]]\nid = \"{id}\"\ncapacity = 1\n\
             latency = {{ distribution = \"tokens\", ttft_s = 0.5, decode_tokens_per_s = 100, tail_rate = 0 }}\n\
             price = {{ input_per_mtok = 3, output_per_mtok = 15 }}\n\
             failures = {{ error_rate = 0, storm_rate = 0 }}\n"
        )
    };
    let text = format!(
        "name = \"hedge\"\nsummary = \"x\"\njobs = 12\nconcurrency = 1\nsteps_per_job = 1\n\
         calls_per_step = 1\n[cycle]\nperiod_s = 0\n[algorithms.hedged]\npercentile = 0.5\n\
         window = 1\n[tokens]\ninput = {{ distribution = \"constant\", value = 1000 }}\n\
         output = {{ distribution = \"uniform\", min = 100, max = 300 }}\nmax_tokens = 500\n{}{}",
        endpoint("a"),
        endpoint("b")
    );
    std::fs::write(&file, text).unwrap();
    let log = dir.join("log.jsonl");
    let out = crate::support::simbench(&[
        "run",
        file.to_str().unwrap(),
        "--algorithms",
        "hedged",
        "--seeds",
        "1",
        "--quiet",
        "--json",
        "-",
        "--request-log",
        log.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let metric = |name: &str| report["runs"][0]["metrics"][name].as_f64().unwrap();
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |outcome: &'static str| records.iter().filter(move |r| r["outcome"] == outcome);
    let cancelled = of("cancelled").count() as f64;
    assert!(cancelled > 0.0, "no copy lost: the test needs one");
    let ok_cost: f64 = of("ok")
        .map(|r| {
            let tokens = |k: &str| r[k].as_f64().unwrap();
            (3.0 * tokens("input_tokens") + 15.0 * tokens("output_tokens")) / 1e6
        })
        .sum();
    // Each cancelled copy wastes its 1000-token prompt and the output it wrote, which its
    // record carries.
    let wasted = metric("tokens_wasted");
    let written: f64 = of("cancelled")
        .map(|r| {
            r["output_tokens"]
                .as_f64()
                .expect("a cancelled copy's output")
        })
        .sum();
    assert!(written > 0.0, "no cancelled copy wrote a token");
    assert_eq!(wasted, 1000.0 * cancelled + written, "tokens_wasted");
    let billed = (3.0 * 1000.0 * cancelled + 15.0 * written) / 1e6;
    assert!(
        (metric("cost") - (ok_cost + billed)).abs() < 1e-6,
        "cost {} against {ok_cost} for successes and {billed} for {cancelled} cancelled copies",
        metric("cost")
    );
}

/// A uniform size draws whole numbers: fractional bounds hold the whole numbers between them.
#[test]
fn a_uniform_size_with_fractional_bounds_draws_the_whole_numbers_between_them() {
    let sizes = r#"input = { distribution = "uniform", min = 10.5, max = 12.7 }
output = { distribution = "constant", value = 5 }
max_tokens = 5"#;
    let w = world(1, 10, 10, sizes, FAST);
    let tokens = w.tokens().expect("[tokens]");
    assert_eq!(
        tokens.input,
        simbench::tokens::Size::Uniform {
            min: 11.0,
            max: 12.0
        }
    );
    assert_eq!(tokens.input.mean(), 11.5);
}
