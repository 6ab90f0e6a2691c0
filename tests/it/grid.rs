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
        "are both shard 2/3",
    );
    // A part whose shard or plan is impossible is refused before any plan is built.
    let whole: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&parts[0]).unwrap()).unwrap();
    let edit = |name: &str, change: &dyn Fn(&mut serde_json::Value)| {
        let mut part = whole.clone();
        change(&mut part);
        let file = path(&dir, name);
        std::fs::write(&file, part.to_string()).unwrap();
        file
    };
    let no_shards = edit("zero.json", &|p| p["shard"]["count"] = 0.into());
    refused(merge(&[&no_shards, &parts[1]]), "not a part: its shard 1/0");
    let seeds = edit("seeds.json", &|p| p["spec"]["seeds"] = u32::MAX.into());
    refused(
        merge(&[&seeds, &parts[1]]),
        "seeds.json: its plan: 4294967295 seeds",
    );
    let huge = edit("huge.json", &|p| {
        let values: Vec<String> = (1..=100_000).map(|v| v.to_string()).collect();
        p["spec"]["axes"][0]["values"] = values.into();
        let more: Vec<String> = (1..=1_000).map(|v| v.to_string()).collect();
        p["spec"]["axes"][1]["values"] = more.into();
    });
    refused(merge(&[&huge, &parts[1]]), "more than 100000000 cells");
    // A number changed by hand, or a checksum lost, is caught before the plan is rebuilt.
    let tampered = edit("tampered.json", &|p| {
        let first = &mut p["runs"][0]["metrics"][0];
        *first = (first.as_f64().unwrap() + 1.0).into();
    });
    refused(
        merge(&[&parts[1], &tampered, &parts[2]]),
        "tampered.json: its runs do not match its checksum",
    );
    let lost = edit("lost.json", &|p| {
        p.as_object_mut().unwrap().remove("checksum");
    });
    refused(merge(&[&lost]), "lost.json: a part without its checksum");
    let old = edit("old.json", &|p| p["format"] = "simbench-part/1".into());
    refused(merge(&[&old]), "a part of format `simbench-part/1`");
    // The header is outside the checksum: what it claims is held against the runs and the
    // plan, and an impossible claim is refused before any world is read.
    let claims = edit("claims.json", &|p| {
        p["cells"] = 1_000_000_000u64.into();
        p["spec"]["worlds"][0] = "missing.toml".into();
    });
    refused(
        merge(&[&claims]),
        "claims.json: not a part: it claims 1000000000 cells",
    );
    let recount = edit("recount.json", &|p| {
        p["cells"] = (p["cells"].as_u64().unwrap() + 1).into();
    });
    refused(
        merge(&[&recount, &parts[1], &parts[2]]),
        "its header was changed or damaged after it was written; run its shard again (--shard 1/3)",
    );
    let relabelled = edit("relabelled.json", &|p| p["shard"]["index"] = 2.into());
    refused(
        merge(&[&relabelled, &parts[2]]),
        "relabelled.json: it says it is shard 2/3 but holds cell 0, which is shard 1/3's",
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
    refused(
        merge(&[&parts[0], &parts[1], &other]),
        "their overrides differ (`--set jobs=400`, `--set jobs=401` in ",
    );
    // The same world named another way is another command line, and is named as such.
    let dotted = path(&dir, "dotted.json");
    let named = format!("./{}", WORLDS[0]);
    let mut args = grid_args(&[named.as_str()]);
    args.extend(["--quiet", "--shard", "2/3", "--part", s(&dotted)]);
    run_ok(&args);
    refused(
        merge(&[&parts[0], &dotted, &parts[2]]),
        "the same files named two ways still make two plans",
    );
    // A world edited between the shards and the merge.
    let edited = scratch_dir("grid-edited");
    let world = path(&edited, "edited.toml");
    std::fs::copy(WORLDS[0], &world).unwrap();
    let edited_parts = shards(&edited, &[s(&world)], 2);
    let text = std::fs::read_to_string(&world).unwrap();
    std::fs::write(&world, text.replacen("trough = 0.35", "trough = 0.36", 1)).unwrap();
    refused(
        merge(&[&edited_parts[0], &edited_parts[1]]),
        "part1.json was run on other world files than the ones here now",
    );
    // ... and between one shard and the next.
    let after = shards(&scratch_dir("grid-edited-after"), &[s(&world)], 2);
    refused(
        merge(&[&after[0], &edited_parts[1]]),
        "ran the same command on different world files",
    );
    // Not a part at all, or a part cut short.
    let broken = path(&dir, "broken.json");
    let whole = std::fs::read_to_string(&parts[0]).unwrap();
    std::fs::write(&broken, &whole[..whole.len() / 2]).unwrap();
    refused(merge(&[&broken]), "broken.json:1:");
    std::fs::write(&broken, "{\"format\": \"simbench-part/1\"}").unwrap();
    refused(merge(&[&broken]), "missing field");
    refused(merge(&[&path(&dir, "absent.json")]), "cannot read");
    // A merge over its memory budget is refused before it reads the other parts.
    let mut small = vec!["merge", "--quiet", "--json", "-", "--memory-budget", "1M"];
    small.extend(parts.iter().map(|p| s(p)));
    refused(simbench(&small), "over the memory budget of 1.0 MiB");
    // An output onto a part being merged.
    let onto = path(&dir, "onto.json");
    std::fs::copy(&parts[2], &onto).unwrap();
    let out = simbench(&[
        "merge",
        "--quiet",
        "--json",
        s(&onto),
        s(&parts[0]),
        s(&parts[1]),
        s(&onto),
    ]);
    refused(out, "is a part being merged; refusing to overwrite it");
    // What merged from the right parts is complete.
    let ok = merge(&[&parts[2], &parts[0], &parts[1]]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let report = without_wall_times(&String::from_utf8(ok.stdout).unwrap());
    assert_eq!(report["worlds"][0]["cells"].as_array().unwrap().len(), 4);
    // Merged from another folder, the sweep's relative world path is not found: the hint says
    // why and where the merge ran.
    let elsewhere = std::process::Command::new(env!("CARGO_BIN_EXE_simbench"))
        .args(["merge", "--quiet", "--json", "-"])
        .args(&parts)
        .current_dir(&dir)
        .output()
        .unwrap();
    refused(
        elsewhere,
        &format!(
            "relative to the folder the sweep ran in, and this merge runs in {}",
            dir.canonicalize().unwrap().display()
        ),
    );
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
    let many: String = (1..=100)
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let (concurrency, jobs) = (format!("concurrency={many}"), format!("jobs={many}"));
    let huge = [
        "sweep",
        "--grid",
        &concurrency,
        "--grid",
        &jobs,
        "--seeds",
        "100000",
    ];
    let out = simbench(&huge);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("more than 100000000 cells"), "{stderr}");
    usage(
        &["--grid", "objective.metric=jobs_done,goodput"],
        "judges the cells",
    );
    usage(&["--grid", "jobs=1,,2"], "empty value");
    usage(
        &["--grid", "jobs=3,+3"],
        "the values `3` and `+3` are the same",
    );
    usage(
        &["--grid", "retry.jitter=full,\"full\""],
        "the values `full` and `\"full\"` are the same",
    );
    // One world file twice, under another path.
    let again = format!(
        "./{}",
        WORLDS[0].replace("scenarios/", "scenarios/../scenarios/")
    );
    let mut args = grid_args(&[WORLDS[0], &again]);
    args.push("--dry-run");
    let out = simbench(&args);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is given twice; a world runs once"),
        "{stderr}"
    );
    // A variant one world lacks names that world.
    let mut args = grid_args(&WORLDS);
    let at = args.iter().position(|a| *a == "aimd,backoff").unwrap();
    args[at] = "aimd_gentle,backoff";
    let out = simbench(&args);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("scenarios/bursty.toml: unknown algorithm `aimd_gentle`")
            && stderr.contains("must be in each of them"),
        "{stderr}"
    );
    usage(&["--algorithms", "nonesuch"], "unknown algorithm");
    usage(&["--concurrency", "1,2"], "cannot be used with");
    // A value the scenario rejects is an invalid scenario, located in the grid's override.
    let mut args = grid_args(&WORLDS[..1]);
    args.extend(["--grid", "retry.base=0.5,-1"]);
    let out = simbench(&args);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--grid retry.base"), "{stderr}");
    // Two axes that set one setting, however they spell it, or an axis over the seeds.
    let invalid = |extra: &[&str], needle: &str| {
        let mut args = grid_args(&WORLDS[..1]);
        args.extend_from_slice(extra);
        let out = simbench(&args);
        assert_eq!(out.status.code(), Some(1), "{extra:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    };
    invalid(
        &[
            "--grid",
            "endpoints.2.capacity=1,8",
            "--grid",
            "endpoints.metered.capacity=4",
        ],
        "sets `endpoints[2].capacity`, which --grid",
    );
    invalid(
        &["--grid", "retry={max_attempts=4},{max_attempts=5}"],
        "which holds `retry.max_attempts`",
    );
    // An axis no world may vary is a usage error, like the objective or `extends`.
    usage(&["--grid", "seed=1,2"], "the plan's own axis");
    usage(&["--grid", "\"seed\"=1,2"], "the plan's own axis");
    // An axis would also overwrite an override's value at every point, leaving it unused.
    invalid(&["--set", "retry.max_attempts=4"], ", which --set #");
    // An axis that removes a variant the sweep runs, at some point: refused before anything
    // runs (a dry run too), naming the point.
    let removed = |extra: &[&str]| {
        let mut args = vec!["sweep", WORLDS[1], "--seeds", "1", "--grid"];
        args.extend_from_slice(extra);
        let out = simbench(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("at the grid point algorithms={}: unknown algorithm `aimd_"),
            "{stderr}"
        );
    };
    removed(&["algorithms={}", "--algorithms", "aimd_gentle"]);
    removed(&["algorithms={},{aimd={factor=0.7}}", "--dry-run"]);
    // A variant the axis defines at every point runs; an axis inside a table `--set` writes
    // refines it.
    let plan = |extra: &[&str]| {
        let mut args = vec!["sweep", WORLDS[0], "--seeds", "2", "--dry-run"];
        args.extend_from_slice(extra);
        let out = simbench(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {stderr}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let defined = plan(&[
        "--grid",
        "algorithms.x={kind=\"aimd\",factor=0.5},{kind=\"aimd\",factor=0.9}",
        "--algorithms",
        "x,wait",
    ]);
    assert!(defined.contains(": 8 cells"), "{defined}");
    let refined = plan(&[
        "--set",
        "algorithms.x={kind=\"aimd\",factor=0.5}",
        "--grid",
        "algorithms.x.factor=0.5,0.9",
        "--algorithms",
        "x",
    ]);
    assert!(refined.contains(": 4 cells"), "{refined}");
    // An algorithm unsuited at some points only is ranked at the others, and the warning says so.
    let out = simbench(&[
        "sweep",
        WORLDS[0],
        "--seeds",
        "2",
        "--dry-run",
        "--grid",
        "unsuited={},{failover=\"x\"}",
        "--algorithms",
        "failover,wait",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success()
            && stderr.contains("`failover` is marked unsuited at 1 of the 2 points")
            && !stderr.contains("will not be ranked"),
        "{stderr}"
    );
    let mut args = grid_args(&WORLDS[..1]);
    args.extend(["--grid", "retry.max_attemps=1,2"]);
    let out = simbench(&args);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_attemps"));
    // A knee sweep takes one world, and none of the grid's own flags.
    let out = simbench(&["sweep", WORLDS[0], WORLDS[1], "--concurrency", "1,2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("one world"));
    for flag in [
        &["--algorithms", "wait"][..],
        &["--shard", "1/2"],
        &["--part", "x.json"],
        &["--dry-run"],
    ] {
        let mut args = vec!["sweep", WORLDS[0], "--concurrency", "1,2"];
        args.extend_from_slice(flag);
        let out = simbench(&args);
        assert_eq!(out.status.code(), Some(2), "{flag:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("belongs to a grid sweep"),
            "{flag:?}"
        );
    }
}

/// `--dry-run` checks the plan and prints it — the hash a part names, the cells, a shard's
/// share, the outputs — without running or writing anything; a bad axis or output still fails.
#[test]
fn a_dry_run_prints_the_plan_a_part_names_and_runs_nothing() {
    let dir = scratch_dir("grid-dry");
    let part = path(&dir, "part.json");
    let mut args = grid_args(&WORLDS);
    args.extend(["--shard", "2/5", "--part", s(&part), "--dry-run"]);
    let out = run_ok(&args);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let [line, memory, outputs] = lines[..] else {
        panic!("three lines: {text}")
    };
    assert!(!part.exists(), "a dry run writes no part");
    assert_eq!(
        outputs,
        format!(
            "outputs: --part {} (checked; a dry run writes nothing)",
            part.display()
        )
    );
    assert!(
        line.ends_with(
            "48 cells (2 worlds × 4 points × their algorithms × 3 seeds); shard 2/5 runs 10"
        ),
        "{line}"
    );
    assert!(
        memory.starts_with("memory: about ")
            && memory.contains(" MiB for this shard (budget ")
            && memory.ends_with(" MiB for the merge"),
        "{memory}"
    );
    args.pop();
    args.push("--quiet");
    run_ok(&args);
    let written: Value = serde_json::from_str(&read(&part)).unwrap();
    let hash = written["plan"].as_str().unwrap();
    assert!(
        line.starts_with(&format!("plan {hash}: ")),
        "{line} vs {hash}"
    );
    let mut bad = grid_args(&WORLDS[..1]);
    bad.extend(["--grid", "retry.base=0.5,-1", "--dry-run"]);
    assert_eq!(simbench(&bad).status.code(), Some(1));
    // Its outputs are checked as the run would check them, and nothing is created.
    let under_file = path(&dir, "part.json/inner.json");
    let new_folder = path(&dir, "new/sub/whole.json");
    for (outputs, needle) in [
        (
            ["--json", WORLDS[0]],
            "is the scenario file; refusing to overwrite it",
        ),
        (
            ["--part", s(&under_file)],
            "a part of the path is not a folder",
        ),
        (
            ["--csv", "x/"],
            "the path ends in `/`, so it names a folder",
        ),
    ] {
        let mut args = grid_args(&WORLDS[..1]);
        args.extend(outputs);
        args.push("--dry-run");
        let out = simbench(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(out.stdout.is_empty() && stderr.contains(needle), "{stderr}");
    }
    let mut args = grid_args(&WORLDS[..1]);
    args.extend(["--json", s(&new_folder), "--dry-run"]);
    run_ok(&args);
    assert!(!path(&dir, "new").exists(), "a dry run makes no folder");
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

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A manifest's one-line field `name: value`, trimmed.
fn manifest_field<'a>(manifest: &'a str, name: &str) -> &'a str {
    manifest
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(name))
        .unwrap_or_else(|| panic!("the manifest has no `{name}`"))
        .trim()
}

/// The Kubernetes recipe run as its pods would run it: the Indexed Job's own arguments once per
/// index with `JOB_COMPLETION_INDEX` set, then the merge Job's own command, give the report the
/// sweep writes whole (there is no cluster here; the paths of the image are mapped to the
/// repository's and a scratch folder).
#[test]
fn the_kubernetes_recipe_merges_its_shards_into_the_whole_sweep() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kubernetes");
    let job = read(&root.join("sweep-job.yaml"));
    assert_eq!(manifest_field(&job, "completionMode:"), "Indexed");
    let completions: u32 = manifest_field(&job, "completions:").parse().unwrap();
    let args: Vec<String> = serde_json::from_str(manifest_field(&job, "args:")).unwrap();
    let at = args.iter().position(|a| a == "--shard").unwrap();
    assert_eq!(
        args[at + 1],
        format!("auto/{completions}"),
        "--shard must name the Job's completions"
    );

    let dir = scratch_dir("kubernetes");
    let parts = format!("{}/", dir.display());
    let local = |a: &str, index: u32| {
        a.replace("/scenarios/", "scenarios/")
            .replace("/parts/", &parts)
            .replace("$(JOB_COMPLETION_INDEX)", &index.to_string())
    };
    for index in 0..completions {
        let pod: Vec<String> = args.iter().map(|a| local(a, index)).collect();
        let pod: Vec<&str> = pod.iter().map(String::as_str).collect();
        let out = simbench_with(&pod, &[("JOB_COMPLETION_INDEX", &index.to_string())]);
        assert!(
            out.status.success(),
            "pod {index}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let merge_job = read(&root.join("merge-job.yaml"));
    let command: Vec<String> =
        serde_json::from_str(manifest_field(&merge_job, "command:")).unwrap();
    let script = command.last().unwrap();
    let merge = script
        .strip_prefix("exec simbench ")
        .expect("the merge Job execs simbench");
    let mut merge_args = Vec::new();
    for word in merge.split_whitespace() {
        if word.contains('*') {
            let (folder, pattern) = word.rsplit_once('/').unwrap();
            assert_eq!(folder, "/parts");
            let (prefix, suffix) = pattern.split_once('*').unwrap();
            let mut found: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|n| n.starts_with(prefix) && n.ends_with(suffix))
                .map(|n| format!("{parts}{n}"))
                .collect();
            found.sort();
            assert_eq!(found.len(), completions as usize, "one part per pod");
            merge_args.extend(found);
        } else {
            merge_args.push(word.to_string());
        }
    }
    let merge_args: Vec<&str> = merge_args.iter().map(String::as_str).collect();
    let merged = run_ok(&merge_args);

    let mut whole: Vec<String> = args.iter().map(|a| local(a, 0)).collect();
    whole.drain(at..at + 2);
    let part = whole.iter().position(|a| a == "--part").unwrap();
    whole.drain(part..part + 2);
    whole.extend(["--quiet".into(), "--json".into(), "-".into()]);
    let whole: Vec<&str> = whole.iter().map(String::as_str).collect();
    let whole = run_ok(&whole);
    assert_eq!(
        mask_wall(&String::from_utf8(merged.stdout).unwrap()),
        mask_wall(&String::from_utf8(whole.stdout).unwrap())
    );
}

/// An axis an algorithm ignores gives the same runs at every value: one contestant in the
/// best-cell contest (named at its first point, the others listed), not a tie with itself.
#[test]
fn an_axis_an_algorithm_ignores_is_one_contestant() {
    // The best cell of aimd_tuning over `algorithms.aimd.factor`, as JSON.
    let best = |factors: &str, algorithms: &str| -> Value {
        let axis = format!("algorithms.aimd.factor={factors}");
        let out = run_ok(&[
            "sweep",
            "scenarios/aimd_tuning.toml",
            "--grid",
            &axis,
            "--algorithms",
            algorithms,
            "--seeds",
            "3",
            "--quiet",
            "--json",
            "-",
        ]);
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        report["worlds"][0]["best"].clone()
    };
    let ignored = best("0.5,0.7,0.9", "backoff,wait");
    let out = simbench(&[
        "sweep",
        "scenarios/aimd_tuning.toml",
        "--grid",
        "algorithms.aimd.factor=0.5,0.7",
        "--algorithms",
        "backoff,wait",
        "--seeds",
        "1",
        "--set",
        "jobs=50",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "warning: --grid algorithms.aimd.factor: `aimd` is not among the algorithms this \
             sweep runs (backoff, wait), so its 2 values give the same runs"
        ),
        "{stderr}"
    );
    assert_eq!(ignored["point"]["algorithms.aimd.factor"], 0.5);
    let same: Vec<&Value> = ignored["same_runs_at"].as_array().unwrap().iter().collect();
    assert_eq!(same.len(), 2, "{ignored}");
    assert_eq!(same[0]["algorithms.aimd.factor"], 0.7);
    assert_eq!(same[1]["algorithms.aimd.factor"], 0.9);
    let verdict = ignored["verdict"].to_string();
    assert!(
        !verdict.contains("factor=0.7") && !verdict.contains("factor=0.9"),
        "{verdict}"
    );
    assert_eq!(ignored["verdict"]["decision"], "pick", "{verdict}");

    // Every folded contestant is listed, not only the leader: `backoff` and `wait` both ignore
    // the axis, whichever leads.
    let folds: Vec<(&str, usize)> = ignored["same_runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert_eq!(f["point"]["algorithms.aimd.factor"], 0.5, "{f}");
            (
                f["algorithm"].as_str().unwrap(),
                f["same_runs_at"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(folds, [("backoff", 2), ("wait", 2)], "{ignored}");

    // An axis that does change the runs keeps its points apart.
    let apart = best("0.5,0.9", "aimd");
    assert!(apart.get("same_runs_at").is_none());
    assert!(apart.get("same_runs").is_none());
}

/// A grid in which no run finished is a failed command, whole or merged from its shards, as
/// `run`'s comparison is: a scheduler's "after success" step must not take it for a result.
/// A shard whose runs did not finish still writes its part, and says so.
#[test]
fn a_grid_without_a_finished_run_fails_whole_and_merged() {
    let dir = scratch_dir("grid-unfinished");
    let world = path(&dir, "doomed.toml");
    std::fs::write(&world, crate::support::DOOMED).unwrap();
    // Every request fails, so every run stalls; under the reference's rule a stall keeps no
    // metrics: no run finishes, deterministically.
    let grid = |extra: &[&str]| {
        let mut args = vec![
            "sweep",
            s(&world),
            "--grid",
            "retry.max_attempts=2,3",
            "--algorithms",
            "wait",
            "--seeds",
            "2",
            "--rng",
            "reference",
        ];
        args.extend_from_slice(extra);
        simbench(&args)
    };
    let json = path(&dir, "grid.json");
    let whole = grid(&["--quiet", "--json", s(&json)]);
    let stderr = String::from_utf8_lossy(&whole.stderr);
    assert_eq!(whole.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("warning: 4 of 4 runs did not finish"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: no run of the grid finished"),
        "{stderr}"
    );
    assert!(!json.exists(), "a failed grid wrote its report");
    let parts: Vec<PathBuf> = (1..=2)
        .map(|i| {
            let part = path(&dir, &format!("part{i}.json"));
            let shard = format!("{i}/2");
            let out = grid(&["--quiet", "--shard", &shard, "--part", s(&part)]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{stderr}");
            assert!(
                stderr.contains("warning: 2 of 2 runs of this shard did not finish"),
                "{stderr}"
            );
            part
        })
        .collect();
    let merged = simbench(&[
        "merge",
        "--quiet",
        "--json",
        s(&json),
        s(&parts[0]),
        s(&parts[1]),
    ]);
    let stderr = String::from_utf8_lossy(&merged.stderr);
    assert_eq!(merged.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: no run of the grid finished"),
        "{stderr}"
    );
    assert!(!json.exists(), "a failed merge wrote its report");

    // A point whose runs finish: the grid succeeds, and warns of the others.
    let out = grid(&[
        "--quiet",
        "--grid",
        "endpoints.0.failures.error_rate=1.0,0.0",
        "--json",
        s(&json),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("warning: 4 of 8 runs did not finish"),
        "{stderr}"
    );
    assert!(json.exists());
}

/// docs/scale.md's dry runs print the plans the page shows: a plan hash is what users compare
/// across machines, so a stale one in the docs misleads.
#[test]
fn the_scale_page_shows_the_plans_its_commands_print() {
    let page = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scale.md"));
    let commands: [&[&str]; 2] = [
        &[
            "sweep",
            "scenarios/aimd_tuning.toml",
            "scenarios/bursty.toml",
            "--grid",
            "retry.max_attempts=3,6",
            "--algorithms",
            "aimd,backoff",
            "--seeds",
            "10",
            "--dry-run",
        ],
        &[
            "sweep",
            "scenarios/aimd_tuning.toml",
            "--grid",
            "retry.max_attempts=3,6",
            "--seeds",
            "10",
            "--shard",
            "2/3",
            "--dry-run",
        ],
    ];
    for args in commands {
        let out = run_ok(args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let plan = stdout.lines().next().expect("the plan line");
        assert!(page.contains(plan), "docs/scale.md lacks `{plan}`");
    }
    let out = run_ok(&[
        "sweep",
        "scenarios/aimd_tuning.toml",
        "--grid",
        "retry.max_attempts=3,6",
        "--grid",
        "algorithms.aimd.factor=0.5,0.9",
        "--algorithms",
        "aimd,retry_after_aware",
        "--seeds",
        "10",
        "--dry-run",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let hash = stdout.split_whitespace().nth(1).expect("plan HASH:");
    let hash = hash.trim_end_matches(':');
    assert!(
        page.contains(&format!(
            "grid sweep, plan {hash}: 1 world × 4 points, 80 cells"
        )),
        "docs/scale.md lacks plan {hash}"
    );
}

/// A part names its worlds as text, so a world file whose name is not UTF-8 is refused with
/// that reason (it was "no such file" for a file that exists).
#[test]
fn a_grid_refuses_a_world_name_that_is_not_utf8_and_says_why() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch_dir("grid-utf8");
    let name = std::ffi::OsStr::from_bytes(b"bad\xffname.toml");
    let world = dir.join(name);
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(WORLDS[0]),
        &world,
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_simbench"))
        .arg("sweep")
        .arg(&world)
        .args([
            "--grid",
            "concurrency=1,2",
            "--algorithms",
            "wait",
            "--seeds",
            "1",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("this name is not UTF-8; rename the file"),
        "{stderr}"
    );
    std::fs::remove_dir_all(dir).ok();
}
