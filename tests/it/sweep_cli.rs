//! `simbench sweep` through the binary: the knee on the bursty world, the outputs, and the exit
//! code and message of every malformed level list.

use crate::support::simbench;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a sweep that must fail with exit code 2 and a message containing `expected`.
#[track_caller]
fn check_usage_error(args: &[&str], expected: &str) {
    let out = simbench(args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(expected), "{stderr}");
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
}

#[test]
fn bursty_sweep_names_a_knee_a_recommendation_and_the_reasons() {
    let out = simbench(&[
        "sweep",
        "scenarios/bursty.toml",
        "--concurrency",
        "2,4,8,16,32",
        "--seeds",
        "3",
        "--json",
        "-",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // Standard output holds the JSON alone, so it parses whole.
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("valid JSON alone");
    assert_eq!(doc["knob"], "concurrency");
    assert_eq!(doc["algorithm"], "wait");
    assert_eq!(doc["seeds"].as_array().unwrap().len(), 3);
    assert_eq!(doc["world_hash"].as_str().unwrap().len(), 16);
    let levels = doc["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 5);
    assert!(
        levels[0]["step"].is_null(),
        "the first level is the baseline"
    );
    for level in levels {
        assert_eq!(level["runs"].as_array().unwrap().len(), 3);
        assert!(level["summary"]["throughput_rps"]["mean"].as_f64().unwrap() > 0.0);
        assert!(
            level["summary"]["service_p99_ms"]["mean"]
                .as_f64()
                .is_some()
        );
    }
    assert!(doc["knee"]["finding"].as_str().unwrap().contains("knee"));
    let recommended = doc["recommendation"]["level"].as_u64().unwrap();
    assert!([2, 4, 8, 16, 32].contains(&recommended));
    assert_eq!(doc["recommendation"]["knob"], "concurrency");
    let reasons: Vec<&str> = doc["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(
        reasons[1].starts_with(&format!("recommended concurrency: {recommended}")),
        "{reasons:?}"
    );
    for test in ["(a)", "(b)", "(c)"] {
        assert!(reasons.iter().any(|r| r.contains(test)), "{reasons:?}");
    }
    // The table goes to standard error (no --quiet), with the knee row marked.
    let table = &text(&out.stderr);
    assert!(table.contains("◀ knee"), "{table}");
    assert!(table.contains("recommended concurrency:"), "{table}");
}

#[test]
fn outputs_are_deterministic_and_csv_has_a_row_per_level_and_seed() {
    let dir = crate::support::scratch_dir("sweep");
    let csv = dir.join("nested/sweep.csv");
    let csv_arg = csv.to_str().unwrap();
    let args = [
        "sweep",
        "--concurrency",
        "2,6",
        "--seeds",
        "2",
        "--quiet",
        "--set",
        "jobs=300",
    ];
    let one = simbench(&[&args[..], &["--threads", "1", "--csv", csv_arg]].concat());
    assert!(one.status.success(), "{}", text(&one.stderr));
    assert!(one.stdout.is_empty(), "--quiet with a file prints no table");
    let rows = std::fs::read_to_string(&csv).expect("the CSV was written");
    let lines: Vec<&str> = rows.lines().collect();
    assert!(lines[0].starts_with(
        "scenario,world_hash,rng,algorithm,concurrency,seed,outcome,valid,jobs_done,"
    ));
    assert_eq!(lines.len(), 1 + 2 * 2);
    let cells: Vec<&str> = lines[3].split(',').collect();
    assert_eq!(cells[0], "bursty_provider", "{rows}");
    assert_eq!(cells[1].len(), 16, "a world hash: {rows}");
    assert_eq!(
        cells[2..8],
        ["native", "wait", "6", "20260917", "ok", "true"][..],
        "{rows}"
    );
    let json = |threads: &str| {
        let out = simbench(&[&args[..], &["--threads", threads, "--json", "-"]].concat());
        let mut doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        doc["wall_s"] = serde_json::Value::Null;
        doc
    };
    assert_eq!(json("1"), json("2"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn malformed_level_lists_are_usage_errors() {
    check_usage_error(
        &["sweep", "--concurrency", "0"],
        "worker counts are whole numbers from 1 to 100000; got `0`",
    );
    check_usage_error(&["sweep", "--concurrency", "a,b"], "got `a`");
    check_usage_error(&["sweep", "--concurrency", "4"], "at least two levels");
    check_usage_error(
        &["sweep", "--concurrency", "8,4"],
        "levels must increase: `4` is not above `8`",
    );
    check_usage_error(
        &["sweep", "--concurrency", "2,4", "--rate", "1,2"],
        "cannot be used with",
    );
    check_usage_error(&["sweep"], "required arguments were not provided");
    check_usage_error(&["sweep", "--rate", "1,-2"], "got `-2`");
}

#[test]
fn the_knob_must_match_the_load_model() {
    check_usage_error(
        &["sweep", "--rate", "1,2"],
        "--rate sweeps an open loop's arrival rate, but `bursty_provider` is a closed loop",
    );
    let open = [
        "--set",
        "load.model=\"open\"",
        "--set",
        "load.rate_per_s=1.0",
    ];
    check_usage_error(
        &[&["sweep", "--concurrency", "2,4"][..], &open[..]].concat(),
        "sweep it with --rate",
    );
    let out = simbench(
        &[
            &[
                "sweep", "--rate", "0.5,1", "--seeds", "2", "--set", "jobs=200",
            ][..],
            &open[..],
            &["--quiet", "--json", "-"][..],
        ]
        .concat(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The open loop needs a rate to load, but the levels overwrite it: said, not silent.
    assert!(
        text(&out.stderr).contains(
            "warning: --set #3 sets `load.rate_per_s`, which every level of the sweep \
             overwrites (--rate): no run uses its value"
        ),
        "{}",
        text(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["knob"], "rate_per_s");
    assert_eq!(doc["levels"][0]["level"], 0.5);
}

#[test]
fn an_unknown_algorithm_is_a_usage_error() {
    check_usage_error(
        &["sweep", "--concurrency", "2,4", "--algorithm", "nope"],
        "unknown algorithm `nope`",
    );
}

#[test]
fn sweep_names_the_best_operating_point_beside_the_knee_and_says_why_they_differ() {
    let args = [
        "sweep",
        "scenarios/bursty.toml",
        "--concurrency",
        "2,4,8,12,16,24",
        "--seeds",
        "40",
    ];
    let out = simbench(&[&args[..], &["--json", "-"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let knee = doc["knee"]["level"].as_u64().unwrap();
    let best = &doc["best_operating_point"];
    let level = best["level"].as_u64().expect("a decided level");
    // Without an [objective], a sweep optimises throughput; bursty's knee is where 429s start,
    // while throughput keeps rising past it.
    assert_eq!(best["verdict"]["decision"], "pick");
    assert!(level > knee, "best {level}, knee {knee}");
    assert_eq!(
        best["verdict"]["pick"],
        format!("concurrency {level}"),
        "{best}"
    );
    let comparison = &best["verdict"]["comparisons"][0];
    assert_eq!(comparison["metric"], "throughput_rps");
    assert!(comparison["interval"][0].as_f64().unwrap() > 0.0);
    let lines: Vec<&str> = best["text"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        lines.iter().any(|l| l.contains("why they differ")),
        "{lines:?}"
    );
    // The terminal says the same, after the knee's reasons.
    let table = text(&simbench(&args).stdout);
    let knee_at = table.find("knee: concurrency").unwrap();
    let best_at = table
        .find("best operating point: pick concurrency")
        .unwrap();
    assert!(knee_at < best_at, "{table}");
    // A stated objective is used as stated: the lowest job p99 prefers the least load.
    let out = simbench(
        &[
            &args[..],
            &[
                "--objective",
                "successful_job_latency_p99_ms",
                "--json",
                "-",
            ],
        ]
        .concat(),
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let objective = &doc["best_operating_point"]["verdict"]["comparisons"][0]["metric"];
    assert_eq!(objective, "successful_job_latency_p99_ms");
    // Changing only the confidence (or adding a constraint) keeps the sweep's metric: it used
    // to fall back to a comparison's most jobs_done.
    for extra in [
        &["--confidence", "0.9"][..],
        &["--constraint", "refusal_timeout_ratio<=0.5"][..],
        &["--tie-break", "none"][..],
    ] {
        let out = simbench(&[&args[..], extra, &["--json", "-"]].concat());
        assert!(out.status.success(), "{extra:?}: {}", text(&out.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let lines = doc["best_operating_point"]["text"].to_string();
        assert!(
            lines.contains("objective: most throughput_rps"),
            "{extra:?}: {lines}"
        );
    }
}

/// When no level meets a constraint, the sweep says so and what would help (not "run more
/// seeds"); a world's `[thresholds]`, which a sweep does not check, are named in a warning.
#[test]
fn a_sweep_says_when_no_level_meets_a_constraint_and_that_it_checks_no_thresholds() {
    let out = simbench(&[
        "sweep",
        "--concurrency",
        "2,4",
        "--seeds",
        "2",
        "--constraint",
        "jobs_done>=1e9",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("best operating point: no decision: no level meets every constraint"),
        "{stdout}"
    );
    assert!(stdout.contains("relax the constraint"), "{stdout}");
    assert!(!stdout.contains("run more seeds"), "{stdout}");
    let dir = crate::support::scratch_dir("sweep-thresholds");
    let world = dir.join("gated.toml");
    let bursty = simbench(&["show", "bursty"]);
    let mut text_of_world = text(&bursty.stdout);
    text_of_world.push_str("\n[thresholds]\nassert = [\"wait.refusal_rate < 0.0001\"]\n");
    std::fs::write(&world, text_of_world).unwrap();
    let path = world.to_str().unwrap();
    for args in [
        vec![
            "sweep",
            path,
            "--concurrency",
            "2,4",
            "--seeds",
            "2",
            "--quiet",
        ],
        vec![
            "sweep",
            path,
            "--grid",
            "concurrency=2,4",
            "--algorithms",
            "wait",
            "--seeds",
            "2",
            "--quiet",
        ],
    ] {
        let out = simbench(&args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(
            stderr
                .contains("has 1 assertion in [thresholds], which `simbench sweep` does not check"),
            "{args:?}: {stderr}"
        );
    }
    check_usage_error(
        &[
            "sweep",
            "--grid",
            "concurrency=2,4",
            "--algorithms",
            "wait,",
        ],
        "an empty item in the list",
    );
    std::fs::remove_dir_all(dir).ok();
}

/// Five jobs never fill more than five workers: levels 8, 16 and 32 run the same runs, and
/// the sweep does not ask for more seeds to separate them.
#[test]
fn levels_equal_on_every_seed_are_not_sent_to_more_seeds() {
    let out = simbench(&[
        "sweep",
        "--concurrency",
        "2,4,8,16,32",
        "--seeds",
        "3",
        "--set",
        "jobs=5",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("are equal on every seed in each of these metrics")
            && stdout.contains("more seeds may not separate them either.")
            && !stdout.contains("run more seeds"),
        "{stdout}"
    );
}

/// A step that fails (c) alone is explained by a saturating service, not by an endpoint that
/// pushes back (nothing was refused), and the best operating point past the knee says so too.
#[test]
fn a_step_failing_only_on_service_p99_blames_the_service_not_refusals() {
    let out = simbench(&[
        "sweep",
        "scenarios/llm_tpm_tier.toml",
        "--concurrency",
        "1,2,4,8,16,32",
        "--seeds",
        "3",
        "--set",
        "endpoints.vendor.latency.load_slowdown=30",
        "--set",
        "endpoints.vendor.latency.ttft_load=30",
        "--set",
        "jobs=400",
        "--color",
        "never",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("fails (c): its extra throughput comes with a jump in service p99: the service itself is saturating"),
        "{stdout}"
    );
    assert!(!stdout.contains("begun to push back"), "{stdout}");
    assert!(
        stdout.contains("the tail of a saturating service"),
        "{stdout}"
    );
}

/// Rates too low for the run to see give a flat first step that is not the knee: the sweep
/// says to raise the levels, not to lower them.
#[test]
fn rates_too_low_to_bring_jobs_are_sent_higher() {
    let out = simbench(&[
        "sweep",
        "scenarios/harness_congestion.toml",
        "--rate",
        "1e-9,1e-8,5",
        "--seeds",
        "3",
        "--color",
        "never",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("yet the provider keeps up with the arrivals at rate_per_s 1e-8"),
        "{stdout}"
    );
    assert!(stdout.contains("rerun with higher levels."), "{stdout}");
    assert!(!stdout.contains("rerun with lower levels"), "{stdout}");
}

/// One seed has no sample deviation: the table says so instead of a spread of zero.
#[test]
fn a_one_seed_sweep_shows_no_spread() {
    let out = simbench(&[
        "sweep",
        "scenarios/harness_knee.toml",
        "--concurrency",
        "8,16,64",
        "--seeds",
        "1",
        "--color",
        "never",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(" ± —"), "{stdout}");
    assert!(!stdout.contains("± 0"), "{stdout}");
}
