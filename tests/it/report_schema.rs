//! `schema/report.schema.json`: generated from the JSON report's own types, committed, fresh,
//! and every kind of report `simbench run --json` writes validates against it — while a report
//! with an unknown field, an unknown metric or an unknown outcome does not.

use std::path::Path;

use crate::support::{DOOMED, simbench};

fn committed() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/report.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("committed")).expect("JSON")
}

fn validator() -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&committed())
        .expect("the report schema compiles")
}

/// The JSON report of `simbench run ARGS --quiet --json -`, whatever the exit code.
fn report(args: &[&str]) -> serde_json::Value {
    let out = simbench(&[&["run"], args, &["--quiet", "--json", "-"]].concat());
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}\n{}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn report_schema_file_is_fresh() {
    let out = simbench(&["schema", "report"]);
    assert!(out.status.success());
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        printed == committed(),
        "schema/report.schema.json is stale; regenerate it with \
         `cargo run --release -- schema report > schema/report.schema.json`"
    );
}

#[test]
fn report_schema_accepts_every_kind_of_report() {
    let dir = crate::support::scratch_dir("report-schema");
    let doomed = dir.join("doomed.toml");
    std::fs::write(&doomed, DOOMED).unwrap();
    let doomed = doomed.to_str().unwrap();
    let validator = validator();
    let cases: [&[&str]; 8] = [
        // The default comparison: every strategy, finished runs, a verdict.
        &[],
        // Stalled runs kept as outcomes, beside one that finishes.
        &[doomed, "--algorithms", "wait,immediate", "--seeds", "2"],
        // The same stall without metrics under the reference's rule.
        &[
            doomed,
            "--algorithms",
            "wait,immediate",
            "--seeds",
            "2",
            "--rng",
            "reference",
        ],
        // Sequential seeds, decided early.
        &[
            "scenarios/dead_endpoint.toml",
            "--seeds",
            "auto:40",
            "--algorithms",
            "backoff,aimd",
        ],
        // Tokens, prices and a constraint that breaks.
        &[
            "scenarios/llm_two_vendors.toml",
            "--seeds",
            "2",
            "--constraint",
            "refusal_rate<=0.0001",
        ],
        // Configured variants and unsuited strategies.
        &["scenarios/aimd_tuning.toml", "--seeds", "2"],
        // Incidents (recovery metrics) and a cache.
        &["scenarios/recovery_herd.toml", "--seeds", "2"],
        // An open loop: no workers, a load at a rate.
        &[
            "scenarios/harness_congestion.toml",
            "--algorithms",
            "wait",
            "--seeds",
            "1",
        ],
    ];
    for args in cases {
        let doc = report(args);
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{args:?}:\n{}", errors.join("\n"));
    }
}

/// `concurrency` is the closed loop's workers and nothing else; `load` says how jobs come.
#[test]
fn the_report_says_how_the_jobs_come() {
    let closed = report(&["--algorithms", "wait", "--seeds", "1"]);
    assert_eq!(closed["concurrency"], 12);
    assert_eq!(
        closed["load"],
        serde_json::json!({ "kind": "closed", "workers": 12 })
    );
    let open = report(&[
        "scenarios/harness_congestion.toml",
        "--algorithms",
        "wait",
        "--seeds",
        "1",
    ]);
    assert!(open["concurrency"].is_null(), "{}", open["concurrency"]);
    assert_eq!(
        open["load"],
        serde_json::json!({
            "kind": "open", "rate_per_s": 1000.0, "poisson": false, "max_in_flight": 200
        })
    );
    let unbounded = report(&[
        "--algorithms",
        "wait",
        "--seeds",
        "1",
        "--set",
        "load.model=\"open\"",
        "--set",
        "load.rate_per_s=4.5",
    ]);
    assert!(unbounded["concurrency"].is_null());
    assert_eq!(unbounded["load"]["kind"], "open");
    assert_eq!(unbounded["load"]["poisson"], true);
    assert!(unbounded["load"]["max_in_flight"].is_null());
}

#[test]
fn report_schema_rejects_what_the_report_never_writes() {
    let validator = validator();
    let good = report(&["--algorithms", "wait,backoff", "--seeds", "2"]);
    assert!(validator.is_valid(&good));
    type Mutation = fn(&mut serde_json::Value);
    let mutations: [(&str, Mutation); 5] = [
        ("an unknown top-level field", |d| {
            d["extra"] = serde_json::json!(1);
        }),
        ("an unknown metric in a run", |d| {
            d["runs"][0]["metrics"]["jobs_doen"] = serde_json::json!(1.0);
        }),
        ("an unknown outcome", |d| {
            d["runs"][0]["outcome"] = serde_json::json!("crashed");
        }),
        ("a missing verdict", |d| {
            d.as_object_mut().unwrap().remove("verdict");
        }),
        ("another schema version", |d| {
            d["schema_version"] = serde_json::json!(1);
        }),
    ];
    for (what, mutate) in mutations {
        let mut doc = good.clone();
        mutate(&mut doc);
        assert!(!validator.is_valid(&doc), "accepted {what}");
    }
}

/// Runs `python3 -c SCRIPT` (or `-m MODULE`) with `input` on its standard input.
fn python(args: &[&str], input: &[u8]) -> std::process::Output {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("python3")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 is installed (.ci/run installs it)");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn report_machine_outputs_parse_with_python() {
    let json = simbench(&["run", "--seeds", "2", "--json", "-"]);
    assert!(json.status.success());
    let tool = python(&["-m", "json.tool"], &json.stdout);
    assert!(
        tool.status.success(),
        "{}",
        String::from_utf8_lossy(&tool.stderr)
    );
    let csv = simbench(&["run", "--seeds", "2", "--csv", "-"]);
    assert!(csv.status.success());
    // Every row has the header's cells, and there is one row per run.
    let check = "import csv, sys\n\
                 rows = list(csv.reader(sys.stdin))\n\
                 assert rows[0][:5] == ['scenario', 'world_hash', 'rng', 'algorithm', 'seed'], rows[0]\n\
                 assert all(len(r) == len(rows[0]) for r in rows), 'ragged'\n\
                 print(len(rows) - 1)\n";
    let parsed = python(&["-c", check], &csv.stdout);
    assert!(
        parsed.status.success(),
        "{}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    let runs: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let count = runs["runs"].as_array().unwrap().len();
    assert_eq!(
        String::from_utf8_lossy(&parsed.stdout).trim(),
        count.to_string()
    );
}

fn sweep_validator() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/sweep.schema.json");
    let schema = serde_json::from_str(&std::fs::read_to_string(path).expect("committed")).unwrap();
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .expect("the sweep schema compiles")
}

#[test]
fn sweep_schema_file_is_fresh_and_every_sweep_validates() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/sweep.schema.json");
    let printed = simbench(&["schema", "sweep"]).stdout;
    assert!(
        printed == std::fs::read(path).unwrap(),
        "schema/sweep.schema.json is stale; regenerate it with \
         `cargo run --release -- schema sweep > schema/sweep.schema.json`"
    );
    let validator = sweep_validator();
    let cases: [&[&str]; 3] = [
        &["--concurrency", "2,4,8,16", "--seeds", "3"],
        &[
            "scenarios/harness_knee.toml",
            "--concurrency",
            "16,48,64",
            "--seeds",
            "2",
        ],
        &[
            "scenarios/harness_congestion.toml",
            "--rate",
            "0.5,1,2",
            "--seeds",
            "2",
        ],
    ];
    for args in cases {
        let out = simbench(&[&["sweep"], args, &["--quiet", "--json", "-"]].concat());
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["schema_version"], 2);
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{args:?}:\n{}", errors.join("\n"));
        let mut bad = doc.clone();
        bad["levels"][0]["summary"]["throughput"] = serde_json::json!({});
        assert!(!validator.is_valid(&bad), "accepted an unknown metric");
    }
}
