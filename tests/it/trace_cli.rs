//! `simbench trace`: one run in the Trace Event Format. The file is JSON with the format's
//! required fields on every event, its request slices are the run's requests (one per request
//! on the endpoint tracks), the same run gives the same bytes, and a bound is said.

use serde_json::Value;

use crate::support::{scratch_dir, simbench};

fn trace(args: &[&str]) -> Value {
    let out = simbench(&[&["trace", "-o", "-", "--quiet"], args].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the trace is JSON")
}

/// The Trace Event Format's required fields: `ph` and `name` on every event, `pid` and `tid`
/// on thread events, `ts` on timed ones, `dur` ≥ 0 on complete (`X`) events, `s` on instants.
fn check_fields(doc: &Value) {
    let events = doc["traceEvents"].as_array().expect("traceEvents");
    assert!(!events.is_empty());
    for e in events {
        let ph = e["ph"].as_str().unwrap_or_else(|| panic!("no ph: {e}"));
        assert!(e["name"].is_string(), "{e}");
        assert!(e["pid"].is_u64(), "{e}");
        match ph {
            "M" => assert!(e["args"].is_object(), "{e}"),
            "X" => {
                assert!(e["tid"].is_u64() && e["ts"].is_number(), "{e}");
                assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "{e}");
            }
            "i" => {
                assert!(e["ts"].is_number(), "{e}");
                assert!(["g", "p", "t"].contains(&e["s"].as_str().unwrap()), "{e}");
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
}

/// No two complete slices of one track overlap (a viewer stacks a track's slices, so they must
/// nest; requests in flight together never do), compared in whole nanoseconds as written.
fn check_lanes(doc: &Value) {
    let mut tracks: std::collections::BTreeMap<(u64, u64), Vec<(i64, i64)>> = Default::default();
    let ns = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as i64;
    for e in doc["traceEvents"].as_array().unwrap() {
        if e["ph"] == "X" {
            let track = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
            let start = ns(&e["ts"]);
            tracks
                .entry(track)
                .or_default()
                .push((start, start + ns(&e["dur"])));
        }
    }
    for (track, mut slices) in tracks {
        slices.sort_unstable();
        for pair in slices.windows(2) {
            assert!(
                pair[1].0 >= pair[0].1,
                "{track:?}: {:?} overlaps {:?}",
                pair[0],
                pair[1]
            );
        }
    }
}

fn run_requests(args: &[&str]) -> u64 {
    let out = simbench(&[&["run", "--seeds", "1", "--csv", "-", "--quiet"], args].concat());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|c| *c == "requests").unwrap();
    lines
        .next()
        .unwrap()
        .split(',')
        .nth(col)
        .unwrap()
        .parse::<f64>()
        .unwrap() as u64
}

#[test]
fn trace_cli_writes_every_request_of_the_run_as_a_slice() {
    let world =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/multi_vendor.toml");
    let world = world.to_str().unwrap();
    for (file, algorithm) in [
        (None, "wait"),
        (Some(world), "router"),
        (Some(world), "hedged"),
    ] {
        let mut args = vec!["--algorithm", algorithm];
        args.extend(file);
        let doc = trace(&args);
        check_fields(&doc);
        check_lanes(&doc);
        assert_eq!(doc["otherData"]["outcome"], "ok");
        let events = doc["traceEvents"].as_array().unwrap();
        let count = |cat: &str| events.iter().filter(|e| e["cat"] == cat).count() as u64;
        let mut run = vec!["--algorithms", algorithm];
        run.extend(file);
        let requests = run_requests(&run);
        assert_eq!(count("request"), requests, "{file:?} {algorithm}");
        assert_eq!(count("request.worker"), requests);
        assert_eq!(doc["otherData"]["requests"], requests);
        assert_eq!(doc["otherData"]["requests_left_out"], 0);
        if file.is_some() {
            // multi_vendor's three incidents, at their start and end.
            assert_eq!(count("incident"), 6, "{algorithm}");
        }
        // Every slice sits on a named track.
        let named: Vec<(u64, u64)> = events
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()))
            .collect();
        for e in events.iter().filter(|e| e["ph"] == "X") {
            let track = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
            assert!(named.contains(&track), "{e}");
        }
    }
}

#[test]
fn trace_cli_is_deterministic_and_says_what_a_bound_left_out() {
    let dir = scratch_dir("trace");
    let path = |f: &str| dir.join(f).display().to_string();
    for f in ["a.json", "b.json"] {
        let out = simbench(&["trace", "--algorithm", "backoff", "-o", &path(f), "--quiet"]);
        assert!(out.status.success());
    }
    assert_eq!(
        std::fs::read(path("a.json")).unwrap(),
        std::fs::read(path("b.json")).unwrap()
    );
    let out = simbench(&["trace", "--max-requests", "100", "-o", &path("c.json")]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the trace holds the first 100"), "{stderr}");
    let doc: Value = serde_json::from_slice(&std::fs::read(path("c.json")).unwrap()).unwrap();
    check_fields(&doc);
    let slices = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "request")
        .count();
    assert_eq!(slices, 100);
    // The summary counts what the file holds.
    let breakers = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "breaker")
        .count();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("100 requests, {breakers} breaker change")),
        "{stdout}"
    );
    let left = doc["otherData"]["requests_left_out"].as_u64().unwrap();
    assert_eq!(left + 100, doc["otherData"]["requests"].as_u64().unwrap());
    assert!(left > 0);
    // The run stops recording at the bound and counts the rest: the same run, the same
    // count, and the first 100 slices as the whole trace has them.
    let whole: Value =
        serde_json::from_slice(&std::fs::read(path("w.json")).unwrap_or_else(|_| {
            let out = simbench(&["trace", "-o", &path("w.json"), "--quiet"]);
            assert!(out.status.success());
            std::fs::read(path("w.json")).unwrap()
        }))
        .unwrap();
    assert_eq!(whole["otherData"]["requests"], doc["otherData"]["requests"]);
    assert_eq!(whole["otherData"]["requests_left_out"], 0);
    let requests = |d: &Value| -> Vec<Value> {
        let events = d["traceEvents"].as_array().unwrap();
        events
            .iter()
            .filter(|e| e["cat"] == "request")
            .cloned()
            .collect()
    };
    let (all, first) = (requests(&whole), requests(&doc));
    assert!(all.len() > 100);
    for slice in &first {
        assert!(all.contains(slice), "{slice}");
    }
    // A run the budget stopped is traced up to there, and said so even with --quiet.
    let out = simbench(&[
        "trace",
        "--wall-budget",
        "1e-9",
        "-o",
        &path("e.json"),
        "--quiet",
    ]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: the run did not finish (timeout)"),
        "{stderr}"
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(path("e.json")).unwrap()).unwrap();
    assert_eq!(doc["otherData"]["outcome"], "timeout");
    assert!(
        doc["otherData"]["reason"]
            .as_str()
            .unwrap()
            .contains("wall-clock budget")
    );
    let bad = simbench(&["trace", "--algorithm", "nope", "-o", &path("d.json")]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(!dir.join("d.json").exists());
    std::fs::remove_dir_all(dir).ok();
}
