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
/// nest; requests in flight together never do), compared in whole ticks as written
/// (`otherData.time_resolution_ns`: nanoseconds, or microseconds times a power of two).
fn check_lanes(doc: &Value) {
    let mut tracks: std::collections::BTreeMap<(u64, u64), Vec<(i64, i64)>> = Default::default();
    let tick_ns = doc["otherData"]["time_resolution_ns"].as_f64().unwrap();
    let ns = |v: &Value| {
        let micros = v.as_f64().unwrap();
        if tick_ns >= 1000.0 {
            let ticks = micros / (tick_ns / 1000.0);
            assert_eq!(
                ticks,
                ticks.round(),
                "{micros} µs is whole ticks of {tick_ns} ns"
            );
            ticks as i64
        } else {
            (micros * 1000.0).round() as i64
        }
    };
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
    let left = doc["otherData"]["requests_left_out"].as_u64().unwrap();
    assert!(
        stdout.contains(&format!(
            "100 of {} requests, {breakers} breaker change",
            100 + left
        )),
        "{stdout}"
    );
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
    // A strategy the world marks unsuited is traced, with the warning `run` gives.
    let unsuited = simbench(&["trace", "--algorithm", "failover", "-o", &path("e.json")]);
    assert_eq!(unsuited.status.code(), Some(0));
    let err = String::from_utf8_lossy(&unsuited.stderr);
    assert!(
        err.contains(
            "warning: `failover` is unsuited to this world (`bursty_provider`): single pool"
        ),
        "{err}"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// A run longer than a viewer's doubles hold in nanoseconds (2^53 ns, 104 days) is written in
/// whole microseconds (times a power of two past 2^53 of them), so its slices neither overlap
/// nor pile up at one instant; incidents after the trace's last request are counted, not
/// drawn.
#[test]
fn trace_cli_keeps_times_exact_past_what_nanoseconds_hold() {
    let long = [
        "--set",
        "concurrency=1",
        "--set",
        "horizon_s=1e12",
        "--set",
        "steps_per_job=1",
        "--set",
        "calls_per_step=1",
    ];
    // 15 jobs 10^9 s apart: past 9.2 × 10^9 s a 64-bit count of nanoseconds overflows.
    let doc = trace(
        &[
            &long[..],
            &["--set", "jobs=15", "--set", "load.think_s=1e9"],
        ]
        .concat(),
    );
    check_fields(&doc);
    check_lanes(&doc);
    assert_eq!(doc["otherData"]["time_resolution_ns"], 2000);
    for e in doc["traceEvents"].as_array().unwrap() {
        if e["cat"] == "request" {
            let at_s = e["ts"].as_f64().unwrap() / 1e6;
            let job = e["args"]["job"].as_f64().unwrap();
            assert!((at_s - job * 1e9).abs() < 100.0, "{e}");
        }
    }
    // 200 jobs 10^5 s apart: 2 × 10^7 s, past 2^53 ns, in whole microseconds.
    let doc = trace(
        &[
            &long[..],
            &["--set", "jobs=200", "--set", "load.think_s=1e5"],
        ]
        .concat(),
    );
    check_lanes(&doc);
    assert_eq!(doc["otherData"]["time_resolution_ns"], 1000);
    // The built-in world's 600 s: nanoseconds, and an outage long after it is not drawn.
    let doc = trace(&[
        "--set",
        "incidents=[{kind=\"outage\",start_s=1e9,end_s=2e9},{kind=\"latency\",factor=2,start_s=10,end_s=20}]",
    ]);
    check_lanes(&doc);
    assert_eq!(doc["otherData"]["time_resolution_ns"], 1);
    assert_eq!(doc["otherData"]["incident_edges_after_the_trace"], 2);
    let incidents: Vec<&Value> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "incident")
        .collect();
    assert_eq!(incidents.len(), 2);
    assert!(
        incidents
            .iter()
            .all(|e| e["name"].as_str().unwrap().starts_with("latency"))
    );
}

/// A seed that is not a whole number from 0 to 2^63 − 1 is refused in words, not with the
/// parser's "invalid digit found in string".
#[test]
fn trace_cli_refuses_a_seed_that_is_not_one() {
    for value in ["-1", "1.5", "9223372036854775808", "x"] {
        let out = simbench(&["trace", "--seed", value, "-o", "-"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "`{value}` is not a seed: a whole number from 0 to"
            )),
            "{value}: {stderr}"
        );
        assert!(out.stdout.is_empty());
    }
}
