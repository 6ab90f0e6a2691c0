//! `simbench run` and `simbench list` as a user runs them: the table, the report files, their
//! determinism, exit codes for partial and total stalls, and failed writes that leave nothing
//! behind.

use crate::support::DOOMED;
use crate::support::{simbench, without_wall_times};
use std::path::{Path, PathBuf};
use std::process::Output;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A fresh, empty folder for one test.
fn scratch(test: &str) -> PathBuf {
    crate::support::scratch_dir(&format!("report-{test}"))
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn report_cli_five_seeds_twice_and_on_one_thread_are_identical() {
    let dir = scratch("determinism");
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let run = |file: &str, threads: Option<&str>| {
        let mut args = vec!["run", "scenarios/bursty.toml", "--seeds", "5", "--quiet"];
        args.extend(["--json", file]);
        if let Some(t) = threads {
            args.extend(["--threads", t]);
        }
        let out = simbench(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        without_wall_times(&std::fs::read_to_string(file).unwrap())
    };
    let (a, b, c) = (path("a.json"), path("b.json"), path("c.json"));
    let first = run(&a, None);
    assert_eq!(first, run(&b, None));
    assert_eq!(first, run(&c, Some("1")));
    // Every registered algorithm but the two bursty marks unsuited, on each of 5 seeds.
    let defaults = simbench::client::registry::ALGORITHMS.len() - 2;
    assert_eq!(first["runs"].as_array().unwrap().len(), defaults * 5);
    assert_eq!(first["seeds"].as_array().unwrap().len(), 5);
}

#[test]
fn report_cli_run_prints_the_table_and_notes() {
    let out = simbench(&[
        "run",
        "--seeds",
        "2",
        "--jobs",
        "400",
        "--algorithms",
        "wait,sticky,least_busy",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "verdict",
        "least_busy (n/a)",
        "jobs_done",
        "throughput_rps [jobs/s] †",
        "* = best mean",
        "n/a: least_busy is unsuited",
        "bursty_provider · 2 seeds 20260917…20260918",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    let err = stderr(&out);
    assert!(
        err.contains("simbench: 3 algorithms × 2 seeds on `bursty_provider`"),
        "{err}"
    );
    assert!(err.contains("warning: `least_busy` is unsuited"), "{err}");
}

#[test]
fn report_cli_writes_markdown_csv_and_json_together() {
    let dir = scratch("outputs");
    let md = dir.join("deep/er/report.md");
    let csv = dir.join("runs.csv");
    let json = dir.join("report.json");
    let out = simbench(&[
        "run",
        "--seeds",
        "2",
        "--jobs",
        "300",
        "--algorithms",
        "wait,backoff",
        "--markdown",
        md.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("wrote {}", md.display())));
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("| metric | unit | better | `wait` | `backoff` | verdict |"));
    let csv = std::fs::read_to_string(csv).unwrap();
    assert_eq!(csv.lines().count(), 1 + 4);
    assert!(csv.starts_with("scenario,world_hash,rng,algorithm,seed,outcome,valid,jobs_done,"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(json["aggregates"].as_object().unwrap().len(), 2);
    assert_eq!(listing(&dir), ["deep", "report.json", "runs.csv"]);
}

#[test]
fn report_cli_unwritable_output_fails_cleanly() {
    let dir = scratch("unwritable");
    std::fs::write(dir.join("a-file"), "x").unwrap();
    std::fs::create_dir(dir.join("a-folder")).unwrap();
    let cases = [
        // The parent "folder" is a file.
        ("--json", dir.join("a-file/report.json")),
        // The target is a folder: the temporary is written, the rename fails, it is removed.
        ("--json", dir.join("a-folder")),
        // Fails last: the markdown staged before it and its new folder are removed again.
        ("--csv", dir.join("a-file/x.csv")),
    ];
    for (flag, target) in cases {
        let good = dir.join("new/good.md");
        let out = simbench(&[
            "run",
            "--seeds",
            "1",
            "--jobs",
            "100",
            "--algorithms",
            "wait",
            "--quiet",
            "--markdown",
            good.to_str().unwrap(),
            flag,
            target.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{target:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.starts_with("error: cannot "), "{err}");
        assert!(
            err.contains(&target.display().to_string()) || err.contains("a-file"),
            "{err}"
        );
        // Nothing partial: not the other output, no temporaries, no new folders.
        assert_eq!(listing(&dir), ["a-file", "a-folder"], "{target:?}");
        assert!(listing(&dir.join("a-folder")).is_empty());
    }
}

#[test]
fn report_cli_a_stall_is_an_outcome_but_under_the_reference_rule_a_total_stall_exits_2() {
    let dir = scratch("stall");
    let world = dir.join("doomed.toml");
    std::fs::write(&world, DOOMED).unwrap();
    let world = world.to_str().unwrap();
    let partial = simbench(&[
        "run",
        world,
        "--algorithms",
        "wait,immediate",
        "--seeds",
        "2",
    ]);
    assert_eq!(partial.status.code(), Some(0), "{}", stderr(&partial));
    assert!(
        stdout(&partial).contains("wait (2/2 stalled)"),
        "{}",
        stdout(&partial)
    );
    assert!(
        stderr(&partial).contains("warning: 2 of 4 runs stalled; each counts with what it did"),
        "{}",
        stderr(&partial)
    );
    // Every run stalling is still a comparison of what they did.
    let total = simbench(&["run", world, "--algorithms", "wait", "--seeds", "2"]);
    assert_eq!(total.status.code(), Some(0), "{}", stderr(&total));
    // The reference has no result for a stalled run: exact replay keeps its rule.
    let total = simbench(&[
        "run",
        world,
        "--algorithms",
        "wait",
        "--seeds",
        "2",
        "--rng",
        "reference",
        "--quiet",
    ]);
    assert_eq!(total.status.code(), Some(2));
    assert!(
        stderr(&total).contains("error: no run finished"),
        "{}",
        stderr(&total)
    );
}

#[test]
fn report_cli_list_shows_algorithms_metrics_and_a_folder() {
    let out = simbench(&["list"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.contains("  immediate    Take a free resource or fail the attempt at once.\n"));
    assert!(text.contains("throughput_rps †"), "{text}");
    assert!(text.contains("built-in world"));

    let dir = scratch("list");
    std::fs::copy("scenarios/bursty.toml", dir.join("b.toml")).unwrap();
    std::fs::write(dir.join("a-broken.toml"), "name = 3\n").unwrap();
    std::fs::write(dir.join("notes.txt"), "not a scenario").unwrap();
    let out = simbench(&["list", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let broken = text.find("a-broken.toml: invalid, skipped").expect(&text);
    let good = text
        .find("b.toml: bursty_provider (3000 jobs")
        .expect(&text);
    assert!(broken < good, "sorted by file name");
    assert!(text.contains("unsuited: failover: single pool"));
    assert!(!text.contains("notes.txt"));
    // Named on its own, an invalid world is an invalid input, as for `validate` and `run`.
    let broken = dir.join("a-broken.toml");
    let out = simbench(&["list", broken.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));

    let out = simbench(&["list", "/no/such/folder"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot list /no/such/folder"));
}

#[test]
fn report_cli_a_ratio_with_nothing_to_divide_by_is_not_applicable_with_its_reason() {
    // Every request fails, so `immediate` completes no job: a ratio per completed job and the
    // latencies of completed jobs do not exist. They must not read as a (winning) zero.
    let dir = scratch("undefined");
    let json = dir.join("r.json");
    let csv = dir.join("r.csv");
    let mut args = vec![
        "run",
        "--algorithms",
        "immediate",
        "--seeds",
        "2",
        "--jobs",
        "30",
    ];
    let sets: Vec<String> = (0..3)
        .map(|e| format!("endpoints.{e}.failures.error_rate=1"))
        .collect();
    for set in &sets {
        args.extend(["--set", set.as_str()]);
    }
    args.extend([
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let out = simbench(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    let row = table
        .lines()
        .find(|l| l.contains("attempts_per_completed_job"))
        .expect("the row is shown");
    assert!(row.contains("n/a"), "{row}");
    assert!(
        table.contains(
            "immediate: attempts_per_completed_job, successful_job_latency_p50_ms, successful_job_latency_p95_ms, successful_job_latency_p99_ms on 2 of 2 runs (no job completed)"
        ),
        "{table}"
    );

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for run in report["runs"].as_array().unwrap() {
        assert_eq!(run["metrics"]["jobs_done"], 0.0);
        assert!(run["metrics"].get("attempts_per_completed_job").is_none());
        assert_eq!(
            run["undefined"]["attempts_per_completed_job"],
            "no job completed"
        );
        assert!(run["metrics"]["error_rate"].as_f64().unwrap() > 0.0);
    }
    assert!(
        report["aggregates"]["immediate"]
            .get("attempts_per_completed_job")
            .is_none()
    );

    let text = std::fs::read_to_string(&csv).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let at = header
        .iter()
        .position(|h| *h == "attempts_per_completed_job")
        .unwrap();
    for line in text.lines().skip(1) {
        assert_eq!(line.split(',').nth(at), Some(""), "{line}");
    }
    for cell in text.lines().skip(1).flat_map(|l| l.split(',')) {
        assert!(!["NaN", "inf", "-inf"].contains(&cell), "{text}");
    }
}

#[test]
fn report_cli_a_strategy_that_stalls_on_a_few_of_200_seeds_stays_in_every_ranking() {
    let out = simbench(&[
        "run",
        "--algorithms",
        "wait,sticky,gradient",
        "--seeds",
        "200",
        "--json",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let stalled = json["stalled"].as_object().unwrap();
    assert!(
        !stalled.is_empty(),
        "no run of bursty stalled at 200 seeds: this test needs a world where some do"
    );
    for (algorithm, runs) in stalled {
        let stalls = runs.as_array().unwrap().len();
        assert!(stalls < 200, "{algorithm} stalled on every seed");
        let rate = json["aggregates"][algorithm]["stall_rate"]["mean"]
            .as_f64()
            .unwrap();
        assert!((rate - stalls as f64 / 200.0).abs() < 1e-9, "{algorithm}");
        // Judged and ranked like the others: in the aggregates, not set aside.
        assert!(json["aggregates"][algorithm]["jobs_done"].is_object());
        assert!(json["verdict"]["not_judged"].get(algorithm).is_none());
    }
    assert!(json["unfinished"].as_object().unwrap().is_empty());
    // The compact table shows the stall rate once something stalled.
    let err = stderr(&out);
    assert!(err.contains("stall_rate [ratio]"), "{err}");
}
