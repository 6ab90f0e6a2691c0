//! Simulated time that cannot stand still, arrivals that respect the horizon, seeds that stay
//! 63-bit: a client that would poll at zero delay is refused when the file is compiled, a run
//! whose clock stops anyway ends as `livelock` in every output, and the shipped worlds stay far
//! below the detector's threshold.

use simbench::client::registry::ALGORITHMS;
use simbench::compile;
use simbench::harness::{self, LIVELOCK_EVENTS, Outcome, RngScheme, RunConfig};
use simbench::metrics::Metric;

use crate::support::{scratch_dir, simbench};

/// Two endpoints of one lease each. Job 0 takes `slow` for 2e12 s; job 1 takes `flaky` for
/// 1.2e12 s, fails (which benches `flaky` for a 1e9 s cooldown) and retries at once. Past
/// 2^40 s the spacing of doubles is 2.4e-4 s, so `backoff`'s polls of at most 1e-4 s no longer
/// move the clock: the call waits for `slow` at a frozen instant. `wait` simply queues.
const FROZEN: &str = r#"
name = "frozen"
summary = "A poller whose sleeps are below the clock's resolution at 1.2e12 s."
jobs = 2
concurrency = 2
horizon_s = 1e12
steps_per_job = 1
calls_per_step = 1
[cycle]
period_s = 0
[retry]
base = 0
cap = 0
jitter = "none"
[breaker]
degrade_after = 1
dead_after = 5
cooldown_s = 1e9
[algorithms.backoff]
base = 0.0001
cap = 0.0001
factor = 1
[[incidents]]
kind = "latency"
endpoints = ["slow"]
start_s = 0
end_s = 1
factor = 2
[[incidents]]
kind = "latency"
endpoints = ["flaky"]
start_s = 0
end_s = 1
factor = 1.2
[[endpoints]]
id = "slow"
capacity = 1
latency = { distribution = "constant", mean_s = 1e6, tail_rate = 1, tail_factor = 1e6 }
failures = { error_rate = 0, storm_rate = 0 }
[[endpoints]]
id = "flaky"
capacity = 1
latency = { distribution = "constant", mean_s = 1e6, tail_rate = 1, tail_factor = 1e6 }
failures = { error_rate = 1, storm_rate = 0 }
"#;

fn run(text: &str, algorithm: &str) -> harness::RunResult {
    let world = compile::load("t.toml", text.as_bytes()).expect("valid");
    let strategy = simbench::sweep::strategy(&world, algorithm).expect("registered");
    let config = RunConfig {
        seed: 1,
        rng: RngScheme::Native,
        trace: false,
        window_s: None,
        out_of_time: &|| false,
    };
    harness::run(&world, strategy.as_ref(), &config)
}

#[test]
fn livelock_a_frozen_clock_ends_the_run_with_its_reason() {
    let result = run(FROZEN, "backoff");
    let Outcome::Livelock { at_s, jobs_done } = result.outcome else {
        panic!("{:?}", result.outcome);
    };
    assert!(at_s >= 1.2e12 && jobs_done == 0, "{at_s} {jobs_done}");
    // A livelock is the strategy's doing: the run keeps what it did until then.
    let metrics = result
        .metrics
        .as_ref()
        .expect("a livelocked run keeps its metrics");
    assert_eq!(metrics.get(Metric::StallRate), 1.0);
    assert_eq!(metrics.get(Metric::JobsDone), 0.0);
    assert_eq!(result.longest_still_events, LIVELOCK_EVENTS);
    assert!(result.events < LIVELOCK_EVENTS + 100, "{}", result.events);
    let reason = result.outcome.reason().unwrap();
    assert!(
        reason.contains("livelock") && reason.contains("zero delay"),
        "{reason}"
    );
    // The same world is fine for a client that queues.
    let wait = run(FROZEN, "wait");
    assert_eq!(wait.outcome, Outcome::Ok);
    assert_eq!(wait.metrics.unwrap().get(Metric::JobsDone), 2.0);
}

#[test]
fn livelock_is_reported_in_the_table_the_json_and_the_csv() {
    let dir = scratch_dir("livelock");
    let file = dir.join("frozen.toml");
    std::fs::write(&file, FROZEN).unwrap();
    let (json, csv) = (dir.join("r.json"), dir.join("r.csv"));
    let out = simbench(&[
        "run",
        file.to_str().unwrap(),
        "--algorithms",
        "wait,backoff",
        "--seeds",
        "1",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("backoff (1/1 livelocked)"), "{stdout}");
    assert!(stdout.contains("livelock at t = "), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let backoff = &report["runs"][1];
    assert_eq!(backoff["outcome"], "livelock");
    assert!(backoff["reason"].as_str().unwrap().contains("zero delay"));
    assert_eq!(report["stalled"]["backoff"][0]["outcome"], "livelock");
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(
        csv.lines()
            .any(|l| l.contains(",native,backoff,") && l.contains(",livelock,")),
        "{csv}"
    );
}

#[test]
fn livelock_polling_at_zero_delay_is_refused_when_the_file_is_compiled() {
    let out = simbench(&[
        "run",
        "--set",
        "algorithms.backoff.base=0",
        "--set",
        "algorithms.backoff.cap=0",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("`algorithms.backoff.base` = 0 is out of range"),
        "{stderr}"
    );
    assert!(
        stderr.contains("`algorithms.backoff.cap` = 0 is out of range"),
        "{stderr}"
    );
    assert!(stderr.contains("zero delay"), "{stderr}");
    assert!(stderr.contains("--set"), "{stderr}");
    // Every strategy parameter that bounds a poll's sleep has a positive minimum.
    for info in ALGORITHMS {
        for name in info.poll_delay {
            assert!(info.param(name).unwrap().min > 0.0, "{}.{name}", info.name);
        }
    }
}

/// The margin: the longest stretch of events without progress at one instant in every shipped
/// world, for every strategy, against the threshold.
#[test]
fn livelock_threshold_is_far_above_every_shipped_world() {
    let read = |path: &std::path::Path| std::fs::read(path).map_err(|e| e.to_string());
    let options = compile::LoadOptions {
        read: &read,
        read_data: &read,
        overrides: &[],
    };
    let mut longest = (0, String::new());
    let mut busiest = (0, String::new());
    for entry in std::fs::read_dir("scenarios").unwrap() {
        let path = entry.unwrap().path();
        let name = path.display().to_string();
        let bytes = std::fs::read(&path).unwrap();
        let world = compile::load_with(&name, &bytes, &options).expect("shipped worlds are valid");
        for info in ALGORITHMS {
            let strategy = simbench::sweep::strategy(&world, info.name).unwrap();
            let config = RunConfig {
                seed: world.seed(),
                rng: RngScheme::Native,
                trace: false,
                window_s: None,
                out_of_time: &|| false,
            };
            let result = harness::run(&world, strategy.as_ref(), &config);
            assert!(
                !matches!(result.outcome, Outcome::Livelock { .. }),
                "{name} {}",
                info.name
            );
            if result.longest_still_events > longest.0 {
                longest = (
                    result.longest_still_events,
                    format!("{name} / {}", info.name),
                );
            }
            if result.longest_instant_events > busiest.0 {
                busiest = (
                    result.longest_instant_events,
                    format!("{name} / {}", info.name),
                );
            }
        }
    }
    eprintln!(
        "longest stretch without progress: {} events ({}); most events at one instant: {} \
         ({}); threshold {LIVELOCK_EVENTS}",
        longest.0, longest.1, busiest.0, busiest.1
    );
    assert!(longest.0 * 1000 < LIVELOCK_EVENTS, "{longest:?}");
}

#[test]
fn open_loop_arrivals_stop_at_the_horizon() {
    for arrivals in ["uniform", "poisson"] {
        let text = format!(
            "name = \"slow\"\nsummary = \"s\"\njobs = 5\nhorizon_s = 600\n\
             [load]\nmodel = \"open\"\nrate_per_s = 0.001\narrivals = \"{arrivals}\"\n\
             [[endpoints]]\nid = \"a\"\ncapacity = 4\nlatency = {{ median_s = 0.4 }}\n"
        );
        let m = run(&text, "wait").metrics.expect("finished");
        let done = m.get(Metric::JobsDone);
        assert_eq!(done + m.get(Metric::JobsUnstarted), 5.0, "{arrivals}");
        // The load was offered until the horizon: the run lasts that long, plus the tail of
        // its last job, never until an arrival past the horizon (1000 s for the uniform
        // schedule, where only job 0 arrives); the throughput is jobs over that time.
        let makespan = m.get(Metric::MakespanS);
        assert!((600.0..630.0).contains(&makespan), "{arrivals}: {makespan}");
        assert_eq!(m.get(Metric::ThroughputRps), done / makespan, "{arrivals}");
        if arrivals == "uniform" {
            assert_eq!(done, 1.0);
            assert_eq!(makespan, 600.0);
        }
    }
    // A rate so low that the next arrival is infinitely far away.
    let text = "name = \"never\"\nsummary = \"s\"\njobs = 5\n\
                load = { model = \"open\", rate_per_s = 5e-324, arrivals = \"uniform\" }\n\
                [[endpoints]]\nid = \"a\"\ncapacity = 4\nlatency = { median_s = 0.4 }\n";
    assert_eq!(run(text, "wait").outcome, Outcome::Ok);
}

#[test]
fn seeds_past_the_largest_are_refused_up_front() {
    for command in [
        &["run", "--seeds", "2"][..],
        &["sweep", "--seeds", "2", "--concurrency", "1,2"][..],
    ] {
        let mut args = command.to_vec();
        args.extend(["--set", "seed=9223372036854775807"]);
        let out = simbench(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(
                "--seeds 2 from seed 9223372036854775807 would run seeds up to 9223372036854775808"
            ) && stderr.contains("use --seeds 1 or less"),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
}
