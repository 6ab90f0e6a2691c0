//! `simbench validate` and `simbench schema` as a user runs them: exit codes, the summary line,
//! every file checked, and the JSON output.

use crate::support::simbench;
use std::path::Path;
use std::process::Output;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn scenario_cli_valid_files_exit_0() {
    let out = simbench(&[
        "validate",
        "scenarios/bursty.toml",
        "tests/data/valid/minimal.toml",
        "tests/data/valid/edge_values.toml",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "3 files: 3 valid, 0 invalid\n");
    assert!(out.stdout.is_empty());
}

#[test]
fn scenario_cli_any_invalid_file_exits_1_and_all_are_checked() {
    let out = simbench(&[
        "validate",
        "tests/data/invalid/nan.toml",
        "scenarios/bursty.toml",
        "tests/data/invalid/bad_jitter.toml",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("tests/data/invalid/nan.toml:4:13]"), "{err}");
    assert!(
        err.contains("tests/data/invalid/bad_jitter.toml:11:10]"),
        "{err}"
    );
    assert!(err.ends_with("3 files: 1 valid, 2 invalid\n"), "{err}");
}

#[test]
fn scenario_cli_unreadable_file_exits_2_and_the_others_are_still_checked() {
    let out = simbench(&[
        "validate",
        "tests/data/no-such-file.toml",
        "tests/data/invalid/nan.toml",
        "scenarios/bursty.toml",
        "tests/data",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("error: cannot read `tests/data/no-such-file.toml`"),
        "{err}"
    );
    assert!(err.contains("error: cannot read `tests/data`"), "{err}");
    assert!(err.contains("tests/data/invalid/nan.toml:4:13]"), "{err}");
    assert!(
        err.ends_with("4 files: 1 valid, 1 invalid, 2 unreadable\n"),
        "{err}"
    );
}

#[test]
fn scenario_cli_usage_errors_exit_2() {
    assert_eq!(simbench(&["validate"]).status.code(), Some(2));
    assert_eq!(
        simbench(&["validate", "--format", "xml", "a.toml"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn scenario_cli_json_output_carries_every_finding() {
    let out = simbench(&[
        "validate",
        "--format",
        "json",
        "tests/data/invalid/errors_in_two_endpoints.toml",
        "scenarios/bursty.toml",
        "missing.toml",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(
        doc["summary"],
        serde_json::json!({"files": 3, "valid": 1, "invalid": 1, "unreadable": 1, "problems": 2})
    );
    let statuses: Vec<&str> = doc["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["status"].as_str().expect("status"))
        .collect();
    assert_eq!(statuses, ["invalid", "valid", "unreadable"]);
    assert_eq!(
        doc["findings"],
        serde_json::json!([
            {
                "file": "tests/data/invalid/errors_in_two_endpoints.toml",
                "line": 8,
                "column": 37,
                "key_path": "endpoints[0].latency.sigma",
                "message": "`endpoints[0].latency.sigma` = -1 is out of range",
                "help": "allowed range: 0 <= sigma <= 10",
            },
            {
                "file": "tests/data/invalid/errors_in_two_endpoints.toml",
                "line": 14,
                "column": 27,
                "key_path": "endpoints[1].failures.error_rate",
                "message": "`endpoints[1].failures.error_rate` = 2 is out of range",
                "help": "allowed range: 0 <= error_rate <= 1",
            },
        ])
    );
}

#[test]
fn scenario_cli_json_for_valid_files_exits_0() {
    let out = simbench(&["validate", "--format", "json", "scenarios/bursty.toml"]);
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(doc["findings"], serde_json::json!([]));
}

#[test]
fn scenario_cli_schema_prints_the_committed_schema() {
    let out = simbench(&["schema"]);
    assert_eq!(out.status.code(), Some(0));
    let committed =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/scenario.schema.json"))
            .expect("committed schema");
    assert_eq!(out.stdout, committed);
}
