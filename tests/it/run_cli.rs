//! `simbench run` and `simbench list` through the binary: output shape, exit codes, and
//! byte-identical JSON across processes and thread counts.

use crate::support::{simbench, without_wall_times};
use simbench::metrics::MetricInfo;
use std::path::PathBuf;
use std::process::Output;

fn scratch(name: &str) -> PathBuf {
    crate::support::scratch_dir("run").join(name)
}

#[test]
fn json_is_identical_across_processes_and_thread_counts() {
    let base = [
        "run", "--seeds", "2", "--jobs", "400", "--quiet", "--json", "-",
    ];
    let one = simbench(&[&base[..], &["--threads", "1"]].concat());
    let two = simbench(&[&base[..], &["--threads", "2"]].concat());
    let again = simbench(&[&base[..], &["--threads", "2"]].concat());
    for out in [&one, &two, &again] {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = |o: &Output| without_wall_times(&String::from_utf8(o.stdout.clone()).unwrap());
    assert_eq!(text(&one), text(&two));
    assert_eq!(text(&two), text(&again));
}

#[test]
fn json_has_one_record_per_algorithm_and_seed() {
    let path = scratch("runs.json");
    let out = simbench(&[
        "run",
        "--algorithms",
        "wait, sticky",
        "--seeds",
        "3",
        "--jobs",
        "300",
        "--json",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("wait") && stdout.contains("sticky"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    // Metrics are written in catalogue order (serde_json's Value would sort them, so read text).
    let first_metrics = &text[text.find("\"metrics\"").unwrap()..];
    // The built-in world has no incident, cache, budget or throttle: those metrics are absent.
    let (applicable, absent): (Vec<&MetricInfo>, Vec<&MetricInfo>) = simbench::metrics::CATALOGUE
        .iter()
        .partition(|m| m.needs.is_none());
    // Token metrics (a quiet feature) are left out without a word outside LLM worlds.
    let quiet = |m: &&&MetricInfo| m.needs.is_some_and(|f| f.quiet());
    assert_eq!(
        absent.iter().filter(|m| !quiet(m)).count(),
        json["not_applicable"].as_object().unwrap().len()
    );
    for m in &absent {
        assert_eq!(
            json["not_applicable"][m.name].is_string(),
            !quiet(&m),
            "{}",
            m.name
        );
        assert!(
            json["runs"][0]["metrics"].get(m.name).is_none(),
            "{}",
            m.name
        );
    }
    let positions: Vec<usize> = applicable
        .iter()
        .map(|m| first_metrics.find(&format!("\"{}\"", m.name)).unwrap())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "catalogue order");
    let runs = json["runs"].as_array().unwrap();
    let keys: Vec<(String, u64)> = runs
        .iter()
        .map(|r| {
            (
                r["algorithm"].as_str().unwrap().to_string(),
                r["seed"].as_u64().unwrap(),
            )
        })
        .collect();
    let seed = 20260917;
    let expected: Vec<(String, u64)> = ["wait", "sticky"]
        .iter()
        .flat_map(|a| (0..3).map(move |k| (a.to_string(), seed + k)))
        .collect();
    assert_eq!(keys, expected);
    for run in runs {
        assert_eq!(run["outcome"], "ok");
        let metrics = run["metrics"].as_object().unwrap();
        assert_eq!(metrics.len(), applicable.len());
        let admitted = run["endpoint_admitted"].as_object().unwrap();
        assert_eq!(admitted.len(), 3);
        assert!(run["error_classes"]["rate_limit"].as_u64().unwrap() > 0);
    }
}

#[test]
fn stalled_runs_keep_their_metrics_and_exit_2_only_under_the_reference_rule() {
    let path = scratch("doomed.toml");
    std::fs::write(
        &path,
        r#"
name = "doomed"
summary = "Every request fails."
jobs = 200
concurrency = 6
[[endpoints]]
id = "only"
capacity = 3
latency = { median_s = 0.05, sigma = 0.0 }
failures = { error_rate = 1.0, storm_rate = 0.0 }
"#,
    )
    .unwrap();
    let args = [
        "run",
        path.to_str().unwrap(),
        "--algorithms",
        "wait",
        "--seeds",
        "1",
        "--json",
        "-",
        "--quiet",
    ];
    // A stall is an outcome: exit 0, the run's metrics up to the stall, and why.
    let out = simbench(&args);
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &json["runs"][0];
    assert_eq!(run["outcome"], "stalled");
    assert!(run["reason"].as_str().unwrap().contains("DEAD"));
    assert_eq!(run["metrics"]["stall_rate"], 1.0);
    // Under the reference's rule it has no result, and with no result the command fails.
    let out = simbench(&[&args[..], &["--rng", "reference"]].concat());
    assert_eq!(out.status.code(), Some(2));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &json["runs"][0];
    assert_eq!(run["outcome"], "stalled");
    assert!(run.get("metrics").is_none());
}

/// Requests the table, a gate or the verdict cannot honour are refused with what to write
/// instead, not run to an empty table or an always-different gate.
#[test]
fn wall_time_rows_gates_and_empty_lists_are_refused_with_the_reason() {
    let world = scratch("unsuited_all.toml");
    let every: String = simbench::client::registry::ALGORITHMS
        .iter()
        .map(|a| format!("{} = \"not here\"\n", a.name))
        .collect();
    std::fs::write(&world, format!("name = \"all\"\nsummary = \"s\"\njobs = 20\n[[endpoints]]\nid = \"a\"\ncapacity = 1\nlatency = {{}}\n[unsuited]\n{every}")).unwrap();
    let cases: [(&[&str], &str); 6] = [
        (&["--metrics", "wall_s"], "`wall_s` is this machine's time"),
        (&["--metrics", "jobs_done,wall_s"], "it is never a row"),
        (&["--tie-break", ","], "write `none` for no tie-break"),
        (&["--tie-break", "none,jobs_done"], "`none` stands alone"),
        (
            &["--assert", "wait.wall_s<100"],
            "a gate on it would pass or fail by machine",
        ),
        (
            &[world.to_str().unwrap()],
            "every algorithm is marked unsuited to `all`",
        ),
    ];
    for (args, says) in cases {
        let out = simbench(&[&["run", "--seeds", "1", "--jobs", "20"][..], args].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: no table");
    }
    let folder = scratch("init-into/");
    let out = simbench(&["init", folder.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the path ends in `/`"), "{stderr}");
    assert!(!folder.exists(), "init made nothing");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["run", "--algorithms", "waitt"][..],
        &["run", "--seeds", "0"],
        &["run", "/no/such/file.toml"],
    ] {
        let out = simbench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn list_reads_the_registry_and_the_catalogue() {
    let out = simbench(&["list"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for info in simbench::client::registry::ALGORITHMS {
        assert!(text.contains(info.name), "{}", info.name);
    }
    for info in simbench::metrics::CATALOGUE {
        assert!(text.contains(info.name), "{}", info.name);
    }
    assert!(text.contains("bursty_provider"));
}

#[test]
fn the_validity_thresholds_can_be_set_on_the_command_line() {
    let knee = simbench(&[
        "run",
        "scenarios/harness_knee.toml",
        "--algorithms",
        "wait",
        "--seeds",
        "1",
        "--set",
        "validity.knee_concurrency=32",
        "--json",
        "-",
        "--quiet",
    ]);
    assert_eq!(knee.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&knee.stdout).unwrap();
    assert_eq!(json["runs"][0]["valid"], false);
    let reason = json["runs"][0]["invalid_reason"].as_str().unwrap();
    assert_eq!(reason, "above the knee: 48 jobs in flight > knee 32");
    let share = simbench(&[
        "run",
        "scenarios/harness_congestion.toml",
        "--algorithms",
        "wait",
        "--seeds",
        "1",
        "--set",
        "validity.max_queue_share=0.95",
        "--json",
        "-",
        "--quiet",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&share.stdout).unwrap();
    assert_eq!(
        json["runs"][0]["valid"], true,
        "a lax threshold accepts the run"
    );
}

/// A negative number given to a numeric option is that option's value, refused by its own
/// check, not taken for an unknown flag whose "tip" would make it the scenario file.
#[test]
fn negative_numbers_reach_the_options_own_checks() {
    for (args, expected) in [
        (
            &["run", "--wall-budget", "-1"][..],
            "must be a positive, finite number of seconds",
        ),
        (&["run", "--memory-budget", "-5M"][..], "--memory-budget"),
        (&["run", "--threads", "-2"][..], "--threads"),
        (
            &["run", "--baseline", "b.json", "--tolerance", "-1"][..],
            "--tolerance",
        ),
        (
            &[
                "trace",
                "--algorithm",
                "wait",
                "--wall-budget",
                "-1",
                "--output",
                "t.json",
            ][..],
            "must be a positive",
        ),
    ] {
        let out = simbench(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("unexpected argument"),
            "{args:?}: {stderr}"
        );
    }
}
