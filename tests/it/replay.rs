//! Exact replay: with the reference's random-number scheme, simbench reproduces the reference's
//! own output (pyattacker 0.3.3 `bench --json`, checked in under tests/reference/) run by run:
//! every metric but wall_s to 6 decimals, the error classes and the per-endpoint admissions.

use serde_json::Value;
use simbench::client::registry;
use simbench::compile;
use simbench::harness::{self, RngScheme, RunConfig, RunResult};
use simbench::world::{Overrides, World};

/// One reference output and the overrides its command line used.
struct Case {
    file: &'static str,
    command: &'static str,
    overrides: Overrides,
}

fn cases() -> Vec<Case> {
    let none = Overrides::default();
    vec![
        Case {
            file: "bursty_seeds10.json",
            command: "reference-bench --seeds 10 --json bursty_seeds10.json",
            overrides: none,
        },
        Case {
            file: "bursty_default.json",
            command: "reference-bench --json bursty_default.json",
            overrides: none,
        },
        Case {
            file: "bursty_seeds40_immediate_wait.json",
            command: "reference-bench --algorithms immediate,wait --seeds 40 --json …",
            overrides: none,
        },
        Case {
            file: "bursty_immediate_rounding_ties.json",
            command: "reference-bench --algorithms immediate --seeds 1000 --json …, two runs kept",
            overrides: none,
        },
        Case {
            file: "small_jobs200_c4_h60.json",
            command: "reference-bench --jobs 200 --concurrency 4 --horizon 60 --json …",
            overrides: Overrides {
                jobs: Some(200),
                concurrency: Some(4),
                horizon_s: Some(60.0),
                ..none
            },
        },
        Case {
            file: "bursty_concurrency24.json",
            command: "reference-bench --concurrency 24 --json …",
            overrides: Overrides {
                concurrency: Some(24),
                ..none
            },
        },
    ]
}

fn never() -> bool {
    false
}

fn replay(world: &World, algorithm: &str, seed: u64) -> RunResult {
    let strategy = registry::find(algorithm)
        .expect("registered")
        .build_default();
    let config = RunConfig {
        seed,
        rng: RngScheme::Reference,
        trace: false,
        window_s: None,
        out_of_time: &never,
    };
    harness::run(world, strategy.as_ref(), &config)
}

/// The reference's JSON rounding (Python's `round(x, 6)`, ties to even on the exact value).
fn round6(x: f64) -> f64 {
    simbench::rounding::round(x, 6)
}

/// Compares one reference run record with simbench's replay; returns the differences.
fn differences(expected: &Value, got: &RunResult) -> Vec<String> {
    let reference_metrics = expected["metrics"].as_object().map_or(0, |m| m.len());
    assert_eq!(
        reference_metrics, 22,
        "a reference run record has the 22 reference metrics"
    );
    let mut diffs = Vec::new();
    let Some(metrics) = &got.metrics else {
        return vec![format!("run did not finish: {:?}", got.outcome)];
    };
    for (info, value) in metrics.iter() {
        // wall_s is a cost; simbench's own metrics have no reference value.
        let Some(want) = expected["metrics"][info.name].as_f64() else {
            continue;
        };
        if info.name == "wall_s" {
            continue;
        }
        if (round6(value) - want).abs() > 1e-9 {
            diffs.push(format!("{}: reference {want}, simbench {value}", info.name));
        }
    }
    for (id, count) in expected["endpoint_admitted"].as_object().unwrap() {
        let ours = got
            .endpoints
            .iter()
            .find(|e| &e.id == id)
            .map(|e| e.provider.admitted);
        if ours != count.as_u64() {
            diffs.push(format!(
                "admitted at {id}: reference {count}, simbench {ours:?}"
            ));
        }
    }
    let classes: serde_json::Map<String, Value> = got
        .error_classes
        .iter()
        .map(|(k, v)| (k.to_string(), Value::from(*v)))
        .collect();
    if Value::Object(classes.clone()) != expected["error_classes"] {
        diffs.push(format!(
            "error classes: reference {}, simbench {}",
            expected["error_classes"],
            Value::Object(classes)
        ));
    }
    diffs
}

#[test]
fn replay_reproduces_the_reference_exactly() {
    let base = compile::builtin_bursty();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference");
    let mut compared = 0;
    for case in cases() {
        let text = std::fs::read_to_string(dir.join(case.file)).expect(case.file);
        let reference: Value = serde_json::from_str(&text).expect("reference JSON");
        let world = base.with_overrides(&case.overrides);
        assert_eq!(reference["jobs"], world.jobs(), "{}", case.file);
        assert_eq!(
            reference["concurrency"],
            world.concurrency(),
            "{}",
            case.file
        );
        for run in reference["runs"].as_array().unwrap() {
            let algorithm = run["algorithm"].as_str().unwrap();
            let seed = run["seed"].as_u64().unwrap();
            let diffs = differences(run, &replay(&world, algorithm, seed));
            assert!(
                diffs.is_empty(),
                "{} ({}): {algorithm} seed {seed} diverges:\n  {}",
                case.file,
                case.command,
                diffs.join("\n  ")
            );
            compared += 1;
        }
    }
    assert!(compared >= 15 + 50 + 80 + 2, "compared {compared} runs");
}

#[test]
fn replay_reproduces_a_reference_stall() {
    // `reference-bench --algorithms backoff --seeds 40` stops at seed 20260934 with
    // "every resource … is dead or revoked … (816 jobs done)". The reference notices it by
    // polling real time, so its simulated stall time (521.3 s) depends on the machine; simbench
    // stops at the first instant no event can help, with the same jobs done.
    let world = compile::builtin_bursty();
    let result = replay(&world, "backoff", 20260934);
    match result.outcome {
        harness::Outcome::Stalled {
            jobs_done, at_s, ..
        } => {
            assert_eq!(jobs_done, 816);
            assert!(at_s < 521.3, "stalled at {at_s}");
        }
        other => panic!("expected a stall, got {other:?}"),
    }
}

/// The report's rules against the reference's own verdicts: with the reference's dice, the
/// default comparison crowns exactly the winners `reference-bench --json` names on every metric,
/// and excludes the same algorithms with the same completion ratios.
#[test]
fn replayed_comparison_names_the_reference_s_winners() {
    use simbench::report::{self, SweepInfo};
    use simbench::sweep::{self, SweepConfig};
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/reference/bursty_default.json");
    let reference: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let world = compile::builtin_bursty();
    let names: Vec<String> = ["immediate", "wait", "backoff", "sticky", "quota_aware"]
        .iter()
        .map(|a| a.to_string())
        .collect();
    let seeds = sweep::seeds(&world, 3);
    let frozen = || 0.0;
    let config = SweepConfig {
        rng: RngScheme::Reference,
        threads: 2,
        wall_budget_s: 600.0,
        clock: &frozen,
        on_run: &|_| {},
        window_s: None,
    };
    let runs = sweep::sweep(&world, &sweep::plan(&names, &seeds), &config);
    let info = SweepInfo {
        seeds,
        rng: "reference",
        wall_s: 0.0,
    };
    let ours = report::analyse(&world, info, runs);
    for (metric, expected) in reference["winners"].as_object().unwrap() {
        let metric = simbench::metrics::Metric::from_name(metric).expect("a reference metric");
        let mut want: Vec<&str> = expected
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let mut got: Vec<&str> = ours
            .row(metric)
            .verdict
            .winners
            .iter()
            .map(String::as_str)
            .collect();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want, "winners of {metric:?}");
    }
    let excluded: Vec<(String, f64)> = ours
        .gate
        .excluded
        .iter()
        .map(|e| (e.algorithm.clone(), round6(e.completion_ratio)))
        .collect();
    let want: Vec<(String, f64)> = reference["excluded_by_completion"]["throughput_rps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["algorithm"].as_str().unwrap().to_string(),
                e["completion_ratio"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(excluded, want);
}
