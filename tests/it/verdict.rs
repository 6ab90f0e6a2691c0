//! The verdict on shipped worlds, through the binary: a decision on the objective, one on the
//! tie-break, "no decision", and a pick that is not the best because the best breaks a
//! constraint. The headlines are snapshots: the runs are deterministic, so any change in them
//! is a change in the simulation or in the rule, to be looked at.

use crate::support::simbench;

/// The JSON verdict of `simbench run ARGS --quiet --json -` (standard output holds the JSON
/// alone).
fn verdict(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["run"];
    all.extend(args);
    all.extend(["--quiet", "--json", "-"]);
    let out = simbench(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("standard output is the JSON alone");
    assert_eq!(doc["schema_version"], 2);
    doc["verdict"].clone()
}

const DEAD: [&str; 5] = [
    "scenarios/dead_endpoint.toml",
    "--seeds",
    "10",
    "--algorithms",
    "backoff,aimd,wait,sticky",
];

#[test]
fn verdict_picks_the_clear_leader_on_the_objective() {
    let v = verdict(&DEAD);
    assert_eq!(v["decision"], "pick");
    assert_eq!(v["pick"], "backoff");
    assert_eq!(
        v["text"],
        "pick backoff for the highest jobs_done: 1,999.9 jobs against 1,991.4 for aimd, +8.5 \
         (95 % CI +6.5 to +10.5), better on 10 of 10 seeds"
    );
    let decided = &v["comparisons"][0];
    assert_eq!(decided["separated"], true);
    assert!(decided["interval"][0].as_f64().unwrap() > 0.0);
}

#[test]
fn verdict_goes_to_the_tie_break_when_every_strategy_finishes() {
    let v = verdict(&[
        "scenarios/cache_reuse.toml",
        "--seeds",
        "10",
        "--algorithms",
        "sticky,router_least_busy,wait",
    ]);
    assert_eq!(v["pick"], "router_least_busy");
    assert_eq!(
        v["text"],
        "pick router_least_busy for the lowest successful_job_latency_p99_ms: 5,366.73 ms \
         against 6,010.52 for sticky, -643.79 (95 % CI -880.04 to -407.53), better on 9 of 10 \
         seeds; before that they tie on jobs_done -0.1 (95 % CI -0.3 to +0.1)"
    );
    let levels: Vec<&str> = v["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["metric"].as_str().unwrap())
        .collect();
    assert_eq!(levels, ["jobs_done", "successful_job_latency_p99_ms"]);
}

#[test]
fn verdict_says_no_decision_on_three_noisy_seeds() {
    let v = verdict(&[
        "scenarios/bursty.toml",
        "--algorithms",
        "backoff,sticky,wait",
    ]);
    assert_eq!(v["decision"], "no_decision");
    assert!(v.get("pick").is_none(), "{v}");
    assert_eq!(v["inseparable"], serde_json::json!(["sticky", "wait"]));
    assert_eq!(
        v["text"],
        "no decision on 3 seeds: backoff leads jobs_done but cannot be separated from sticky, \
         wait (+4.0 over sticky, 95 % CI -230.8 to +238.8); of those, sticky has the lowest \
         successful_job_latency_p99_ms but cannot be separated from wait (-2,833.90 over wait, \
         95 % CI -10,615.45 to +4,947.65); run more seeds"
    );
}

#[test]
fn verdict_passes_over_the_best_strategy_when_it_breaks_a_constraint() {
    let mut args = DEAD.to_vec();
    args.extend([
        "--objective",
        "successful_job_latency_p99_ms",
        "--constraint",
        "jobs_done>=1991",
        "--tie-break",
        "none",
    ]);
    let v = verdict(&args);
    // wait has the lowest p99 of the four but completes 1,990.5 jobs on average.
    assert_eq!(v["pick"], "aimd");
    assert_eq!(v["breaches"]["wait"][0]["metric"], "jobs_done");
    assert_eq!(v["breaches"]["wait"][0]["mean"], 1990.5);
    assert_eq!(
        v["breaches"]["sticky"][0]["min"], 1991.0,
        "the bound is stated with the breach"
    );
    assert_eq!(
        v["text"],
        "pick aimd for the lowest successful_job_latency_p99_ms: 21,455.70 ms against 35,279.32 \
         for backoff, -13,823.62 (95 % CI -14,990.10 to -12,657.13), better on 10 of 10 seeds"
    );
}

#[test]
fn verdict_comes_first_in_the_table_and_the_markdown() {
    let small = |extra: &[&'static str]| {
        let mut args = vec![
            "run",
            DEAD[0],
            "--seeds",
            "4",
            "--algorithms",
            "backoff,wait",
        ];
        args.extend(extra);
        String::from_utf8_lossy(&simbench(&args).stdout).into_owned()
    };
    let table = small(&[]);
    assert!(table.starts_with("verdict: "), "{table}");
    assert!(
        table.contains("objective: most jobs_done; then lowest"),
        "{table}"
    );
    let markdown = small(&["--quiet", "--markdown", "-"]);
    let verdict_at = markdown.find("**Verdict:** ").expect("a verdict paragraph");
    assert!(
        verdict_at < markdown.find("| metric |").unwrap(),
        "{markdown}"
    );
}

/// A world where two "strategies" are one strategy on disjoint seeds: their true difference is
/// zero, so a 95 % interval of the paired differences must cover 0 in about 95 % of batches.
const TWIN: &str = r#"
name = "twin"
summary = "One endpoint with a slow tail and failures; the same client twice."
seed = 1000
jobs = 400
concurrency = 4
horizon_s = 1000.0

[breaker]
dead_after = 1000000

[objective]
metric = "throughput_rps"
tie_break = []

[[endpoints]]
id = "only"
capacity = 3
latency = { median_s = 0.2, sigma = 0.5 }
failures = { error_rate = 0.05, storm_rate = 0.0 }
"#;

/// `backoff` on the first `n` seeds of `world`, in seed order (the twins' raw material).
fn backoff_runs(world: &simbench::world::World, n: u64) -> Vec<simbench::report::Run> {
    use simbench::harness::RngScheme;
    use simbench::sweep::{self, SweepConfig};
    let seeds: Vec<u64> = (0..n).map(|k| world.seed() + k).collect();
    let plan: Vec<(&str, u64)> = seeds.iter().map(|s| ("backoff", *s)).collect();
    let frozen = || 0.0;
    let config = SweepConfig {
        rng: RngScheme::Native,
        threads: 2,
        wall_budget_s: 600.0,
        clock: &frozen,
        on_run: &|_| {},
        window_s: None,
    };
    sweep::sweep(world, &plan, &config)
}

#[test]
fn verdict_intervals_cover_a_zero_difference_in_about_95_percent_of_batches() {
    use simbench::compile;
    use simbench::report::decision::Outcome;
    use simbench::report::{self, SweepInfo};

    let world = compile::load("twin.toml", TWIN.as_bytes()).expect("valid");
    const BATCHES: u64 = 1000;
    const PAIRS: u64 = 5;
    let all = backoff_runs(&world, BATCHES * PAIRS * 2);
    let mut covered = 0;
    for batch in all.chunks((PAIRS * 2) as usize) {
        // Runs k and k + PAIRS become "a" and "b" on the shared seed k.
        let runs = batch
            .iter()
            .enumerate()
            .map(|(k, run)| {
                let mut run = run.clone();
                let k = k as u64;
                run.algorithm = if k < PAIRS { "a" } else { "b" }.into();
                run.seed = k % PAIRS;
                run
            })
            .collect();
        let info = SweepInfo {
            seeds: (0..PAIRS).collect(),
            rng: "native",
            wall_s: 0.0,
        };
        let report = report::analyse(&world, info, runs);
        match &report.decision.outcome {
            Outcome::Undecided { levels } => {
                let (low, high) = levels[0].closest.difference.interval.expect("5 seeds");
                assert!(low <= 0.0 && 0.0 <= high);
                covered += 1;
            }
            Outcome::Decided { .. } => {}
            other => panic!("two finished strategies: {other:?}"),
        }
    }
    let share = f64::from(covered) / BATCHES as f64;
    eprintln!("intervals covering 0: {covered} of {BATCHES}");
    // The binomial spread over 1,000 batches is 0.7 points: 93–97 % is about ±3 of them.
    assert!(
        (0.93..=0.97).contains(&share),
        "covered 0 in {share:.3} of batches"
    );
}

/// `--seeds auto` on the twin world: the two "strategies" are one, so every pick is an error.
/// Over many repetitions the planned looks keep the error at or under the stated 5 %, while
/// looking at 95 % intervals after every batch ("peeking") exceeds it on the same data.
#[test]
fn verdict_seeds_auto_keeps_its_error_rate_on_an_equal_pair() {
    use simbench::compile;
    use simbench::report::decision::Outcome;
    use simbench::report::{self, Run, SweepInfo};
    use simbench::sequential::{self, Design};

    let text = TWIN.replace("jobs = 400", "jobs = 200");
    let world = compile::load("twin.toml", text.as_bytes()).expect("valid");
    const REPETITIONS: usize = 1000;
    const MAX: u32 = 40;
    let design = Design::new(MAX, 0.95);
    assert_eq!(design.looks, [10, 20, 40]);
    let per_pair = 2 * MAX as usize;
    let all = backoff_runs(&world, (REPETITIONS * per_pair) as u64);
    // The first `n` seeds of a repetition: runs k and MAX + k become "a" and "b" on seed k.
    let twins = |block: &[Run], n: u32| -> Vec<Run> {
        let label = |run: &Run, name: &str, seed: u64| Run {
            algorithm: name.into(),
            seed,
            ..run.clone()
        };
        let n = n as usize;
        let a = block[..n].iter().enumerate();
        let b = block[MAX as usize..MAX as usize + n].iter().enumerate();
        a.map(|(k, r)| label(r, "a", k as u64))
            .chain(b.map(|(k, r)| label(r, "b", k as u64)))
            .collect()
    };
    let analyse = |runs: Vec<Run>, n: u32, objective: &simbench::objective::Objective| {
        let info = SweepInfo {
            seeds: (0..u64::from(n)).collect(),
            rng: "native",
            wall_s: 0.0,
        };
        report::analyse_for(&world, objective, info, runs)
    };
    let picked =
        |report: &report::Report| matches!(report.decision.outcome, Outcome::Decided { .. });
    let per_look = design.per_look_objective(&world.objective());
    let (mut sequential_errors, mut peeking_errors, mut seeds_run) = (0, 0, 0);
    for block in all.chunks(per_pair) {
        let (report, stop) = sequential::run(&design, |n| analyse(twins(block, n), n, &per_look));
        seeds_run += stop.seeds;
        if picked(&report) {
            sequential_errors += 1;
        }
        let peeked = design
            .looks
            .iter()
            .any(|&n| picked(&analyse(twins(block, n), n, &world.objective())));
        if peeked {
            peeking_errors += 1;
        }
    }
    let rate = |errors: i32| f64::from(errors) / REPETITIONS as f64;
    eprintln!(
        "false picks: planned looks {sequential_errors} of {REPETITIONS}, peeking \
         {peeking_errors}; mean seeds run {:.1}",
        seeds_run as f64 / REPETITIONS as f64
    );
    assert!(
        rate(sequential_errors) <= 0.05,
        "{}",
        rate(sequential_errors)
    );
    assert!(
        rate(peeking_errors) > 0.05,
        "peeking should break the level on this data: {}",
        rate(peeking_errors)
    );
}

/// The JSON document of `simbench run ARGS --quiet --json -`.
fn document(args: &[&str]) -> serde_json::Value {
    let out = simbench(&[&["run"], args, &["--quiet", "--json", "-"]].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    crate::support::without_wall_times(&String::from_utf8_lossy(&out.stdout))
}

#[test]
fn verdict_seeds_auto_stops_early_on_a_clear_difference_and_runs_to_the_maximum_otherwise() {
    let clear = [
        "scenarios/dead_endpoint.toml",
        "--seeds",
        "auto:500",
        "--algorithms",
        "backoff,aimd,wait",
    ];
    let doc = document(&clear);
    let sequential = &doc["sequential"];
    assert_eq!(
        sequential["looks"],
        serde_json::json!([10, 20, 40, 80, 160, 320, 500])
    );
    assert_eq!(sequential["looks_taken"], 1);
    assert_eq!(sequential["seeds"], 10);
    assert_eq!(sequential["decided"], true);
    assert_eq!(doc["seeds"].as_array().unwrap().len(), 10);
    assert_eq!(doc["verdict"]["pick"], "backoff");
    // The comparisons are at the per-look level, the objective states the overall one.
    assert_eq!(doc["objective"]["confidence"], 0.95);
    let per_look = sequential["per_look_confidence"].as_f64().unwrap();
    assert!((per_look - (1.0 - 0.05 / 7.0)).abs() < 1e-6, "{per_look}");
    assert!(
        doc["verdict"]["text"]
            .as_str()
            .unwrap()
            .contains("(99.3 % CI"),
        "{}",
        doc["verdict"]["text"]
    );
    // Deterministic, and its runs are exactly those of a fixed 10-seed comparison.
    assert_eq!(document(&clear), doc);
    let fixed = document(&[&clear[..2], &["10"], &clear[3..]].concat());
    assert_eq!(fixed["runs"], doc["runs"]);
    assert!(fixed["sequential"].is_null());
    // Two strategies bursty cannot separate in 20 seeds: every look is taken.
    let close = document(&["--seeds", "auto:20", "--algorithms", "wait,backoff"]);
    assert_eq!(close["sequential"]["looks_taken"], 2);
    assert_eq!(close["sequential"]["seeds"], 20);
    assert_eq!(close["sequential"]["decided"], false);
    assert_eq!(close["sequential"]["nothing_to_decide"], false);
    assert_eq!(close["verdict"]["decision"], "no_decision");
    // A constraint nobody meets: it stops at the first look, with nothing to decide (it used
    // to say "decided" beside a verdict of no decision).
    let none = document(&[
        "--seeds",
        "auto:20",
        "--algorithms",
        "wait,backoff",
        "--constraint",
        "jobs_done>=1e9",
    ]);
    assert_eq!(none["verdict"]["decision"], "none");
    assert_eq!(none["sequential"]["looks_taken"], 1);
    assert_eq!(none["sequential"]["decided"], false);
    assert_eq!(none["sequential"]["nothing_to_decide"], true);
    let text = none["sequential"]["text"].as_str().unwrap();
    assert!(
        text.starts_with("seeds auto: nothing to decide at look 1"),
        "{text}"
    );
}

#[test]
fn verdict_seeds_auto_is_refused_by_a_sweep_and_checked_when_parsed() {
    for (args, expected) in [
        (
            &["sweep", "--concurrency", "4,8", "--seeds", "auto"][..],
            "--seeds auto is for `simbench run`",
        ),
        (&["run", "--seeds", "auto:1"], "at least 2"),
        (&["run", "--seeds", "auto:x"], "at least 2"),
        (&["run", "--seeds", "0"], "neither a whole number"),
        (&["run", "--seeds", "auto:100001"], "at most 100000 seeds"),
        // Past any integer is as much too many as just past the limit.
        (
            &["run", "--seeds", "18446744073709551616"],
            "at most 100000 seeds",
        ),
        (
            &["run", "--seeds", "auto:5000000000"],
            "at most 100000 seeds",
        ),
    ] {
        let out = simbench(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    // Seeds past the largest are named as the user asked for them.
    let out = simbench(&[
        "run",
        "--set",
        "seed=9223372036854775806",
        "--seeds",
        "auto:10",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--seeds auto:10 from seed 9223372036854775806 could run seeds up to"),
        "{stderr}"
    );
}

/// Money is spelled to its significant digits: at a cheap model's prices a job costs a
/// twentieth of a cent, which four decimals printed as `0.0000` everywhere (verdict, table,
/// JSON and CSV alike), a decided pick with every figure zero.
#[test]
fn verdict_spells_a_fraction_of_a_cent_to_its_significant_digits() {
    let v = verdict(&[
        "scenarios/llm_tpm_tier.toml",
        "--seeds",
        "3",
        "--algorithms",
        "aimd,retry_after_aware",
        "--set",
        "endpoints.0.price={input_per_mtok=0.15,output_per_mtok=0.6}",
        "--objective",
        "cost_per_completed_job",
    ]);
    let text = v["text"].as_str().unwrap();
    assert!(
        text.ends_with(
            "; before that they tie on cost_per_completed_job +0.0000001 (95 % CI -0.0000006 to \
             +0.0000008)"
        ),
        "{text}"
    );
    let cost = &v["comparisons"][0];
    assert_eq!(cost["metric"], "cost_per_completed_job");
    for key in ["mean", "other_mean"] {
        let x = cost[key].as_f64().unwrap();
        assert!((4e-4..5e-4).contains(&x), "{cost}");
        // Six significant digits, not six decimals (which would leave three).
        let mantissa = format!("{x:e}").split('e').next().unwrap().replace('.', "");
        assert_eq!(mantissa.len(), 6, "{cost}");
    }
    assert_ne!(cost["difference"].as_f64().unwrap(), 0.0, "{cost}");
}
