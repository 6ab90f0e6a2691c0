//! `simbench sweep --grid`, `--shard` and `simbench merge`: a sharded plan merges into the
//! report one machine writes, and parts that do not make up the plan are refused.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{scratch_dir, simbench, simbench_with, without_wall_times};

const WORLDS: [&str; 2] = ["scenarios/bursty.toml", "scenarios/aimd_tuning.toml"];

/// The grid of the merge tests: 2 × 2 points on two worlds, two algorithms, 3 seeds (48 cells).
fn grid_args<'a>(worlds: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["sweep"];
    args.extend_from_slice(worlds);
    args.extend([
        "--grid",
        "retry.max_attempts=2,5",
        "--grid",
        "algorithms.aimd.factor=0.5,0.8",
        "--algorithms",
        "aimd,backoff",
        "--seeds",
        "3",
        "--set",
        "jobs=400",
    ]);
    args
}

fn run_ok(args: &[&str]) -> std::process::Output {
    let out = simbench(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn path(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The text with every `"wall_s": N` made 0: the bytes wall times aside.
fn mask_wall(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        match line.find("\"wall_s\": ") {
            Some(at) => {
                out.push_str(&line[..at]);
                out.push_str("\"wall_s\": 0");
                if line.ends_with(',') {
                    out.push(',');
                }
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// The CSV with its `wall_s` column emptied.
fn mask_wall_column(text: &str) -> String {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "wall_s").unwrap();
    let mut out = header.join(",") + "\n";
    for line in lines {
        let mut cells: Vec<&str> = line.split(',').collect();
        cells[col] = "";
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// Shards `1..=n` of the grid as parts in `dir`, each on one thread.
fn shards(dir: &Path, worlds: &[&str], n: u32) -> Vec<PathBuf> {
    (1..=n)
        .map(|i| {
            let part = path(dir, &format!("part{i}.json"));
            let shard = format!("{i}/{n}");
            let mut args = grid_args(worlds);
            args.extend([
                "--threads",
                "1",
                "--quiet",
                "--shard",
                &shard,
                "--part",
                s(&part),
            ]);
            run_ok(&args);
            part
        })
        .collect()
}

#[test]
fn a_sharded_grid_merges_into_the_report_one_machine_writes() {
    let dir = scratch_dir("grid-merge");
    let (json, csv) = (path(&dir, "whole.json"), path(&dir, "whole.csv"));
    let mut args = grid_args(&WORLDS);
    args.extend([
        "--threads",
        "2",
        "--quiet",
        "--json",
        s(&json),
        "--csv",
        s(&csv),
    ]);
    run_ok(&args);
    let parts = shards(&dir, &WORLDS, 5);
    let (merged_json, merged_csv) = (path(&dir, "merged.json"), path(&dir, "merged.csv"));
    let mut merge = vec!["merge"];
    // Any order of the parts.
    merge.extend(parts.iter().rev().map(|p| s(p)));
    merge.extend([
        "--quiet",
        "--json",
        s(&merged_json),
        "--csv",
        s(&merged_csv),
    ]);
    run_ok(&merge);
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    assert_eq!(mask_wall(&read(&json)), mask_wall(&read(&merged_json)));
    assert_eq!(
        mask_wall_column(&read(&csv)),
        mask_wall_column(&read(&merged_csv))
    );
    let report: Value = serde_json::from_str(&read(&json)).unwrap();
    let worlds = report["worlds"].as_array().unwrap();
    assert_eq!(worlds.len(), 2);
    for w in worlds {
        let cells = w["cells"].as_array().unwrap();
        assert_eq!(cells.len(), 4);
        // Every point's world differs, so its hash does.
        let mut hashes: Vec<&str> = cells
            .iter()
            .map(|c| c["world_hash"].as_str().unwrap())
            .collect();
        hashes.dedup();
        assert_eq!(hashes.len(), 4);
        assert_eq!(cells[3]["point"]["retry.max_attempts"], 5);
        assert_eq!(cells[3]["point"]["algorithms.aimd.factor"], 0.8);
        assert!(cells[0]["aggregates"]["aimd"]["jobs_done"]["mean"].is_number());
        assert!(w["best"]["verdict"]["text"].is_string());
    }
    // The CSV has a row per run: 2 worlds × 4 points × 2 algorithms × 3 seeds.
    assert_eq!(read(&csv).lines().count(), 1 + 48);
    // Each part holds its own cells only.
    let held: usize = parts
        .iter()
        .map(|p| {
            let part: Value = serde_json::from_str(&read(p)).unwrap();
            assert_eq!(part["cells"], 48);
            part["runs"].as_array().unwrap().len()
        })
        .sum();
    assert_eq!(held, 48);
}

#[test]
fn merge_refuses_missing_duplicated_and_foreign_parts() {
    let dir = scratch_dir("grid-refuse");
    let parts = shards(&dir, &WORLDS[..1], 3);
    let merge = |parts: &[&Path]| {
        let mut args = vec!["merge", "--quiet", "--json", "-"];
        args.extend(parts.iter().map(|p| s(p)));
        simbench(&args)
    };
    let refused = |out: std::process::Output, needle: &str| {
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "nothing but the error");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    };
    refused(merge(&[&parts[0], &parts[2]]), "belong to shard 2 of 3");
    refused(
        merge(&[&parts[0], &parts[1], &parts[2], &parts[1]]),
        "again in",
    );
    // Another sweep's part: another job count.
    let other = path(&dir, "other.json");
    let mut args = grid_args(&WORLDS[..1]);
    args.extend([
        "--set",
        "jobs=401",
        "--quiet",
        "--shard",
        "1/3",
        "--part",
        s(&other),
    ]);
    run_ok(&args);
    refused(merge(&[&parts[0], &parts[1], &other]), "different sweeps");
    // A world edited between the shards and the merge.
    let edited = scratch_dir("grid-edited");
    let world = path(&edited, "edited.toml");
    std::fs::copy(WORLDS[0], &world).unwrap();
    let edited_parts = shards(&edited, &[s(&world)], 2);
    let text = std::fs::read_to_string(&world).unwrap();
    std::fs::write(&world, text.replacen("trough = 0.35", "trough = 0.36", 1)).unwrap();
    refused(merge(&[&edited_parts[0], &edited_parts[1]]), "not of plan");
    // Not a part at all, or a part cut short.
    let broken = path(&dir, "broken.json");
    let whole = std::fs::read_to_string(&parts[0]).unwrap();
    std::fs::write(&broken, &whole[..whole.len() / 2]).unwrap();
    refused(merge(&[&broken]), "broken.json:1:");
    std::fs::write(&broken, "{\"format\": \"simbench-part/1\"}").unwrap();
    refused(merge(&[&broken]), "missing field");
    refused(merge(&[&path(&dir, "absent.json")]), "cannot read");
    // What merged from the right parts is complete.
    let ok = merge(&[&parts[2], &parts[0], &parts[1]]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let report = without_wall_times(&String::from_utf8(ok.stdout).unwrap());
    assert_eq!(report["worlds"][0]["cells"].as_array().unwrap().len(), 4);
}

#[test]
fn shard_auto_reads_a_slurm_job_array_or_a_kubernetes_indexed_job() {
    let dir = scratch_dir("grid-auto");
    let run_with = |env: &[(&str, &str)], shard: &str, name: &str| {
        let part = path(&dir, name);
        let mut args = grid_args(&WORLDS[..1]);
        args.extend(["--quiet", "--shard", shard, "--part", s(&part)]);
        (simbench_with(&args, env), part)
    };
    let (out, slurm) = run_with(
        &[
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
        ],
        "auto",
        "slurm.json",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (out, k8s) = run_with(&[("JOB_COMPLETION_INDEX", "2")], "auto/3", "k8s.json");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The shard and its runs' cells and first metric (the wall times differ).
    let shard = |p: &Path| {
        let part: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        let runs: Vec<(Value, Value)> = part["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["cell"].clone(), r["metrics"][0].clone()))
            .collect();
        (part["shard"].clone(), runs)
    };
    assert_eq!(
        shard(&slurm).0,
        serde_json::json!({ "index": 3, "count": 3 })
    );
    assert_eq!(shard(&slurm), shard(&k8s), "both are shard 3 of 3");
    let (out, _) = run_with(&[("JOB_COMPLETION_INDEX", "2")], "auto", "no-count.json");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(".spec.completions"));
    let (out, _) = run_with(&[], "auto", "nothing.json");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SLURM_ARRAY_TASK_ID"));
}

#[test]
fn grid_arguments_are_checked_before_anything_runs() {
    let usage = |extra: &[&str], needle: &str| {
        let mut args = grid_args(&WORLDS[..1]);
        args.extend_from_slice(extra);
        let out = simbench(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    };
    usage(&["--shard", "2/3"], "--part PATH");
    usage(&["--shard", "4/3", "--part", "x.json"], "1 to 3");
    usage(
        &["--shard", "1/2", "--part", "x.json", "--json", "y.json"],
        "simbench merge",
    );
    usage(&["--grid", "retry.max_attempts=1,2"], "given twice");
    usage(
        &["--grid", "objective.metric=jobs_done,goodput"],
        "judges the cells",
    );
    usage(&["--grid", "jobs=1,,2"], "empty value");
    usage(&["--algorithms", "nonesuch"], "unknown algorithm");
    usage(&["--concurrency", "1,2"], "cannot be used with");
    // A value the scenario rejects is an invalid scenario, located in the grid's override.
    let mut args = grid_args(&WORLDS[..1]);
    args.extend(["--grid", "retry.base=0.5,-1"]);
    let out = simbench(&args);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--grid retry.base"), "{stderr}");
    let mut args = grid_args(&WORLDS[..1]);
    args.extend(["--grid", "retry.max_attemps=1,2"]);
    let out = simbench(&args);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_attemps"));
    // A knee sweep takes one world.
    let out = simbench(&["sweep", WORLDS[0], WORLDS[1], "--concurrency", "1,2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("one world"));
}

/// A world where more attempts finish more jobs: the best cell is the most attempts, decided.
#[test]
fn the_best_cell_is_the_one_the_world_makes_best() {
    let dir = scratch_dir("grid-best");
    let world = path(&dir, "flaky.toml");
    std::fs::write(
        &world,
        r#"
name = "flaky"
summary = "30 % of requests fail; retries recover them."
jobs = 300
concurrency = 4
steps_per_job = 1
calls_per_step = 1
[retry]
max_attempts = 1
[[endpoints]]
id = "only"
capacity = 8
latency = { median_s = 0.05, sigma = 0.1 }
failures = { error_rate = 0.3, storm_rate = 0.0 }
[breaker]
degrade_after = 1000
dead_after = 1000
[cycle]
period_s = 0.0
"#,
    )
    .unwrap();
    let out = run_ok(&[
        "sweep",
        s(&world),
        "--grid",
        "retry.max_attempts=1,2,6",
        "--algorithms",
        "immediate",
        "--seeds",
        "5",
        "--json",
        "-",
    ]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let best = &report["worlds"][0]["best"];
    assert_eq!(best["point"]["retry.max_attempts"], 6, "{best}");
    assert_eq!(best["algorithm"], "immediate");
    assert_eq!(best["verdict"]["decision"], "pick");
    let interval = best["interval"].as_array().unwrap();
    let mean = best["mean"].as_f64().unwrap();
    assert!(interval[0].as_f64().unwrap() <= mean && mean <= interval[1].as_f64().unwrap());
    // Attempts 1, 2, 6 finish about 70 %, 91 %, 100 % of 300 jobs (1 − 0.3^attempts).
    let done: Vec<f64> = report["worlds"][0]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["aggregates"]["immediate"]["jobs_done"]["mean"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert!(done[0] < done[1] && done[1] < done[2], "{done:?}");
    assert!((done[0] / 300.0 - 0.7).abs() < 0.06, "{done:?}");
    assert!((done[1] / 300.0 - 0.91).abs() < 0.04, "{done:?}");
    let terminal = String::from_utf8_lossy(&out.stderr);
    assert!(
        terminal.contains("best cell: immediate @ retry.max_attempts=6"),
        "{terminal}"
    );
}

#[test]
fn grid_schema_file_is_fresh_and_accepts_the_report() {
    let committed = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/grid.schema.json"),
    )
    .expect("committed");
    let out = simbench(&["schema", "grid"]);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        committed,
        "schema/grid.schema.json is stale; regenerate it with \
         `cargo run --release -- schema grid > schema/grid.schema.json`"
    );
    let schema: Value = serde_json::from_str(&committed).unwrap();
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .expect("the grid schema compiles");
    let mut args = grid_args(&WORLDS);
    args.extend(["--quiet", "--json", "-"]);
    let out = run_ok(&args);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&report)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}
