//! CI gates through the binary: `--assert`, the world's `[thresholds]` and `--baseline` exit 3
//! with the list of what failed, and 0 when everything holds (a rerun of the same world against
//! its own report).

use crate::support::simbench;

const DEAD: [&str; 7] = [
    "run",
    "scenarios/dead_endpoint.toml",
    "--seeds",
    "5",
    "--algorithms",
    "backoff,aimd,wait",
    "--quiet",
];

fn run(extra: &[&str]) -> (Option<i32>, String) {
    let out = simbench(&[&DEAD[..], extra].concat());
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn gates_assertions_pass_or_exit_3_with_what_failed() {
    let (code, err) = run(&[
        "--assert",
        "aimd.refusal_rate<0.02",
        "--assert",
        "verdict==backoff",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = run(&[
        "--assert",
        "aimd.jobs_done > 1995",
        "--assert",
        "verdict != backoff",
    ]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("2 gates failed"), "{err}");
    assert!(
        err.contains("--assert aimd.jobs_done > 1995: the mean is 1991.2"),
        "{err}"
    );
    assert!(
        err.contains("--assert verdict != backoff: the verdict is `pick backoff"),
        "{err}"
    );
    let (code, err) = run(&["--assert", "hedged.jobs_done > 1"]);
    assert_eq!(
        code,
        Some(2),
        "an algorithm that does not run is a usage error: {err}"
    );
    let (code, _) = run(&["--assert", "aimd.jobs_don > 1"]);
    assert_eq!(code, Some(2));
}

/// A gate whose limit lies outside its metric's range says nothing about a run: a usage error
/// before any run, with the percentage slip named.
#[test]
fn gates_an_assert_outside_the_metrics_range_is_refused() {
    for (gate, says) in [
        (
            "aimd.refusal_rate < 5",
            "`refusal_rate` is a share from 0 to 1, so `< 5` always holds: this gate could never \
             fail; a share is a fraction: 5 % is 0.05",
        ),
        (
            "aimd.attempt_inflation < 1",
            "`attempt_inflation` is at least 1, so `< 1` never holds: this gate would fail on \
             every run",
        ),
    ] {
        let (code, err) = run(&["--assert", gate]);
        assert_eq!(code, Some(2), "{gate}: {err}");
        assert!(err.contains(says), "{gate}: {err}");
    }
    let (code, err) = run(&["--assert", "aimd.refusal_rate <= 1"]);
    assert_eq!(
        code,
        Some(0),
        "a limit at the range's edge is allowed: {err}"
    );
}

/// A gate on a metric the world does not measure could never be checked: a usage error before
/// any run, as `[objective]` and `[thresholds]` on it are invalid worlds.
#[test]
fn gates_an_assert_on_a_metric_the_world_does_not_measure_is_refused() {
    for (gate, why) in [
        ("aimd.cost<5", "(no endpoint has a price)"),
        ("aimd.cost>5", "(no endpoint has a price)"),
        ("backoff.ttft_p99_ms >= 0", "(no [tokens])"),
    ] {
        let (code, err) = run(&["--assert", gate]);
        assert_eq!(code, Some(2), "{gate}: {err}");
        assert!(err.contains("does not apply to this world"), "{err}");
        assert!(err.contains(why), "{err}");
    }
}

#[test]
fn gates_a_baseline_flags_a_planted_regression_and_passes_a_rerun() {
    let dir = crate::support::scratch_dir("gates");
    let base = dir.join("base.json").to_string_lossy().into_owned();
    assert_eq!(run(&["--json", &base]).0, Some(0));
    let (code, err) = run(&["--baseline", &base]);
    assert_eq!(
        code,
        Some(0),
        "the same world and seeds: no change at all: {err}"
    );
    // Fewer attempts per step: steps give up sooner, so fewer jobs finish.
    let (code, err) = run(&["--baseline", &base, "--set", "retry.max_attempts=2"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("the baseline is of world"),
        "the hash changed: {err}"
    );
    assert!(
        err.contains("regression aimd jobs_done: 1,991.2 → 1,874.4 jobs (-116.8, 95 % CI"),
        "{err}"
    );
    // A tolerance above the change lets it through.
    let (code, _) = run(&[
        "--baseline",
        &base,
        "--set",
        "retry.max_attempts=2",
        "--tolerance",
        "100",
    ]);
    assert_eq!(code, Some(0));
    // A tolerance alone gates nothing: a usage error, not a silent pass.
    let (code, err) = run(&["--tolerance", "0.5"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--baseline"), "{err}");
    // The report may not replace the baseline it is judged against: a regression would pass
    // the next time.
    let before = std::fs::read(&base).unwrap();
    let (code, err) = run(&["--baseline", &base, "--json", &base]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("is the baseline this run is compared against"),
        "{err}"
    );
    assert_eq!(std::fs::read(&base).unwrap(), before, "left as it was");
    let (code, err) = run(&["--baseline", "Cargo.toml"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("is not JSON"), "{err}");
    // A gate that compared nothing fails, whatever the run did (the planted regression used
    // to pass with no seed or no algorithm in common); a partial one warns of what it left out.
    let planted = ["--baseline", &base, "--set", "retry.max_attempts=2"];
    let (code, err) = run(&[&planted[..], &["--set", "seed=1"]].concat());
    assert_eq!(code, Some(3), "no seed in common: {err}");
    assert!(err.contains("--baseline compared nothing: backoff, aimd, wait of this run have no 2 finished seeds in common with the baseline (it has aimd, backoff, wait at seeds"), "{err}");
    let other = |algorithms: &str, seeds: &str| {
        let args = [
            "run",
            "scenarios/dead_endpoint.toml",
            "--seeds",
            seeds,
            "--algorithms",
            algorithms,
            "--quiet",
        ];
        let out = simbench(&[&args[..], &planted[..]].concat());
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = other("sticky", "5");
    assert_eq!(code, Some(3), "no algorithm in common: {err}");
    assert!(
        err.contains("--baseline compared nothing: sticky of this run has"),
        "{err}"
    );
    let (code, err) = other("aimd", "1");
    assert_eq!(code, Some(3), "one seed pairs nothing: {err}");
    let (code, err) = other("aimd,sticky", "5");
    assert_eq!(code, Some(3), "aimd's regression: {err}");
    assert!(
        err.contains("warning: --baseline left out sticky of this run has no 2"),
        "{err}"
    );
    assert!(err.contains("regression aimd jobs_done"), "{err}");
}

#[test]
fn gates_thresholds_in_the_world_are_checked_on_every_run() {
    let dir = crate::support::scratch_dir("thresholds");
    let file = dir.join("gated.toml");
    let world = std::fs::read_to_string("scenarios/dead_endpoint.toml").unwrap();
    let gated = format!(
        "{world}\n[thresholds]\nassert = [\"aimd.jobs_done >= 1995\", \"wait.error_rate < 1\"]\n"
    );
    std::fs::write(&file, gated).unwrap();
    let path = file.to_string_lossy().into_owned();
    let gated_run = |algorithms: &str| {
        let out = simbench(&[
            "run",
            &path,
            "--seeds",
            "5",
            "--algorithms",
            algorithms,
            "--quiet",
        ]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), err)
    };
    let (code, err) = gated_run("aimd,wait");
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("1 gate failed"), "{err}");
    assert!(
        err.contains("threshold aimd.jobs_done >= 1995: the mean is 1991.2"),
        "{err}"
    );
    // A threshold on an algorithm that is not run cannot be checked, so it does not pass.
    let (code, err) = gated_run("wait");
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("1 gate failed"), "{err}");
    assert!(
        err.contains("threshold on `aimd` not checked: it did not run"),
        "{err}"
    );
}

/// A rerun passes even with no tolerance at all: the run is compared as its JSON writes it,
/// not against the baseline's six rounded decimals at full precision. A baseline of the other
/// random-number scheme is named.
#[test]
fn gates_a_rerun_passes_its_own_baseline_at_tolerance_0() {
    let dir = crate::support::scratch_dir("gates_rerun");
    let base = dir.join("base.json").to_string_lossy().into_owned();
    let bursty = [
        "run",
        "scenarios/bursty.toml",
        "--jobs",
        "200",
        "--seeds",
        "3",
        "--algorithms",
        "wait,aimd",
        "--quiet",
    ];
    let out = simbench(&[&bursty[..], &["--json", &base]].concat());
    assert_eq!(out.status.code(), Some(0));
    let out = simbench(&[&bursty[..], &["--baseline", &base, "--tolerance", "0"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("warning"), "{err}");
    let other = ["--baseline", &base, "--rng", "reference", "--json", "-"];
    let out = simbench(&[&bursty[..], &other].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "warning: the baseline was run with --rng native, this run with --rng reference"
        ),
        "{err}"
    );
}
