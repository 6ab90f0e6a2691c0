//! `[load] model = "trace"` end to end: a trace replays a log's arrivals and sizes, so
//! replaying an open-loop run's own log reproduces the run; a bad trace is a located error.

use crate::support::{scratch_dir, simbench};
use serde_json::Value;
use std::path::Path;

/// An open loop of LLM calls in which every job sends its first request when it arrives (ample
/// capacity and limits, no failures to trip the breaker), so its log holds every arrival.
const OPEN: &str = r#"name = "open tokens"
summary = "an open loop of LLM calls"
jobs = 1500
horizon_s = 900
[load]
model = "open"
rate_per_s = 6.0
[tokens]
input = { distribution = "lognormal", median = 800, sigma = 0.6 }
output = { distribution = "lognormal", median = 200, sigma = 0.5 }
max_tokens = 1024
[[endpoints]]
id = "vendor"
capacity = 400
latency = { distribution = "tokens", ttft_s = 0.3, decode_tokens_per_s = 80 }
limits = [{ unit = "tokens", limit = 40000000, per = "minute" }]
failures = { error_rate = 0.0, storm_rate = 0.0 }
"#;

/// simbench's log counts from the run's start, and the first arrival comes after a gap of
/// its own: `origin_s = 0` keeps it there.
const REPLAY: &str = r#"extends = "open.toml"
[load]
model = "trace"
trace = "logs/open.jsonl"
origin_s = 0
"#;

fn run(dir: &Path, world: &str, out: &str, log: &str) -> Value {
    let (world, json, log) = (dir.join(world), dir.join(out), dir.join(log));
    let o = simbench(&[
        "run",
        world.to_str().unwrap(),
        "--seeds",
        "2",
        "--algorithms",
        "immediate,aimd",
        "--log-run",
        "immediate",
        "--request-log",
        log.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap()
}

/// The runs of the first seed (the one logged; a trace replays that seed's arrivals at
/// every seed), without wall times.
fn metrics(report: &Value) -> Vec<Value> {
    let first = report["runs"][0]["seed"].clone();
    let mut runs: Vec<Value> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["seed"] == first)
        .cloned()
        .collect();
    for r in &mut runs {
        r["metrics"].as_object_mut().unwrap().remove("wall_s");
    }
    assert_eq!(runs.len(), 2, "both strategies");
    runs
}

#[test]
fn replaying_an_open_loops_own_log_reproduces_every_run() {
    let dir = scratch_dir("trace-load");
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    std::fs::write(dir.join("open.toml"), OPEN).unwrap();
    std::fs::write(dir.join("replay.toml"), REPLAY).unwrap();
    let open = run(&dir, "open.toml", "open.json", "logs/open.jsonl");
    let replay = run(&dir, "replay.toml", "replay.json", "logs/replay.jsonl");
    assert_eq!(
        replay["jobs"], open["jobs"],
        "every job of the log replayed"
    );
    assert_eq!(metrics(&replay), metrics(&open));
    let (a, b) = (
        std::fs::read(dir.join("logs/open.jsonl")).unwrap(),
        std::fs::read(dir.join("logs/replay.jsonl")).unwrap(),
    );
    assert!(
        a == b,
        "the replay's request log differs from the original's"
    );
    // Twice the speed: the same jobs in half the time, so a different world and run.
    std::fs::write(dir.join("fast.toml"), format!("{REPLAY}speed = 2.0\n")).unwrap();
    let fast = run(&dir, "fast.toml", "fast.json", "logs/fast.jsonl");
    assert_eq!(fast["jobs"], open["jobs"]);
    assert_ne!(fast["world_hash"], replay["world_hash"]);
    // Each job's first request (sent on arrival by `immediate`) comes at half the time.
    let first_start = |log: &str| -> std::collections::BTreeMap<u64, f64> {
        let text = std::fs::read_to_string(dir.join(log)).unwrap();
        text.lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|v| v["step"] == 0 && v["attempt"] == 1 && v["call"] == 0)
            .map(|v| (v["job"].as_u64().unwrap(), v["start_s"].as_f64().unwrap()))
            .collect()
    };
    let (slow, quick) = (
        first_start("logs/replay.jsonl"),
        first_start("logs/fast.jsonl"),
    );
    assert!(
        quick.len() > 1000,
        "{} jobs sent at twice the speed",
        quick.len()
    );
    for (job, q) in &quick {
        let s = slow[job];
        assert!(
            (s / 2.0 - q).abs() < 1e-9,
            "job {job}: {s} at twice the speed is not {q}"
        );
    }
}

/// An open loop whose jobs wait in the harness's own queue (200 slots for 1000 arrivals a
/// second): the log's `arrived_s` carries each job's arrival, so the replay has the same queue
/// waits, not arrivals at the first sends.
#[test]
fn a_queued_open_loop_replays_its_arrivals_not_its_first_sends() {
    let dir = scratch_dir("trace-queued");
    let world = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/harness_congestion.toml"),
    )
    .unwrap();
    std::fs::write(dir.join("congested.toml"), world).unwrap();
    std::fs::write(
        dir.join("replay.toml"),
        "extends = \"congested.toml\"\n[load]\nmodel = \"trace\"\ntrace = \"first.jsonl\"\n",
    )
    .unwrap();
    let run = |world: &str, log: &str| -> Value {
        let o = simbench(&[
            "run",
            dir.join(world).to_str().unwrap(),
            "--seeds",
            "1",
            "--algorithms",
            "wait",
            "--request-log",
            dir.join(log).to_str().unwrap(),
            "--json",
            "-",
            "--quiet",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let report: Value = serde_json::from_slice(&o.stdout).unwrap();
        let mut metrics = report["runs"][0]["metrics"].clone();
        metrics.as_object_mut().unwrap().remove("wall_s");
        metrics
    };
    let original = run("congested.toml", "first.jsonl");
    let replay = run("replay.toml", "again.jsonl");
    assert!(
        original["queue_wait_p99_ms"].as_f64().unwrap() > 1000.0,
        "the harness's queue holds jobs: {}",
        original["queue_wait_p99_ms"]
    );
    assert_eq!(replay, original);
    let (a, b) = (
        std::fs::read_to_string(dir.join("first.jsonl")).unwrap(),
        std::fs::read_to_string(dir.join("again.jsonl")).unwrap(),
    );
    assert!(
        a.contains("\"arrived_s\""),
        "queued jobs carry their arrival"
    );
    assert!(
        a == b,
        "the replay's request log differs from the original's"
    );
}

/// A HAR file has no job ids: each first attempt is a job.
#[test]
fn a_har_file_replays_one_job_per_request() {
    let dir = scratch_dir("trace-har");
    let har = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/logs/proxy.har");
    std::fs::copy(&har, dir.join("proxy.har")).unwrap();
    std::fs::write(
        dir.join("w.toml"),
        "name = \"har\"\nsummary = \"har\"\n[load]\nmodel = \"trace\"\ntrace = \"proxy.har\"\n\
         [[endpoints]]\nid = \"a\"\ncapacity = 4\nlatency = { median_s = 0.2 }\n",
    )
    .unwrap();
    let json = dir.join("o.json");
    let w = dir.join("w.toml");
    let o = simbench(&[
        "run",
        w.to_str().unwrap(),
        "--seeds",
        "1",
        "--algorithms",
        "wait",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    let text = std::fs::read_to_string(&har).unwrap();
    let entries = text.matches("\"startedDateTime\"").count();
    assert!(entries > 0);
    assert_eq!(report["jobs"].as_u64(), Some(entries as u64));
    // A knee sweep has no knob on a trace; the refusal names the grid sweep that has one.
    let knee = simbench(&["sweep", w.to_str().unwrap(), "--concurrency", "2,4"]);
    let said = String::from_utf8_lossy(&knee.stderr);
    assert_eq!(knee.status.code(), Some(2), "{said}");
    assert!(said.contains("--grid load.speed=1,2,4"), "{said}");
    let grid = simbench(&[
        "sweep",
        w.to_str().unwrap(),
        "--grid",
        "load.speed=1,2",
        "--seeds",
        "1",
        "--algorithms",
        "wait",
        "--quiet",
    ]);
    assert!(
        grid.status.success(),
        "{}",
        String::from_utf8_lossy(&grid.stderr)
    );
}

/// Each broken trace world gives exit 1 and its one located diagnostic.
#[test]
fn a_bad_trace_is_a_located_error() {
    let dir = scratch_dir("trace-bad");
    std::fs::write(dir.join("open.toml"), OPEN).unwrap();
    std::fs::write(
        dir.join("broken.jsonl"),
        "{\"start_s\":0,\"end_s\":1,\"endpoint\":\"a\",\"outcome\":\"ok\"}\n{\"start_s\":1,\"end_s\":\"x\"}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("one.jsonl"),
        "{\"start_s\":0,\"end_s\":1,\"endpoint\":\"a\",\"outcome\":\"ok\",\"job\":0}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("late.jsonl"),
        "{\"start_s\":5,\"end_s\":6,\"endpoint\":\"a\",\"outcome\":\"ok\",\"job\":0}\n",
    )
    .unwrap();
    let cases = [
        (
            "[load]\nmodel = \"trace\"\n",
            "`model = \"trace\"` needs `trace`",
        ),
        (
            "[load]\nmodel = \"trace\"\ntrace = \"missing.jsonl\"\n",
            "cannot read the trace",
        ),
        (
            "[load]\nmodel = \"trace\"\ntrace = \"broken.jsonl\"\n",
            "broken.jsonl:2:",
        ),
        (
            "[load]\nmodel = \"trace\"\ntrace = \"one.jsonl\"\nrate_per_s = 3.0\n",
            "`load.rate_per_s` only applies to `model = \"open\"`",
        ),
        (
            "jobs = 5\n[load]\nmodel = \"trace\"\ntrace = \"one.jsonl\"\n",
            "`jobs` asks for 5 jobs but the trace",
        ),
        (
            "[load]\nmodel = \"open\"\nrate_per_s = 1.0\nspeed = 2.0\n",
            "`load.speed` only applies to `model = \"trace\"`",
        ),
        (
            "[load]\nmodel = \"trace\"\ntrace = \"late.jsonl\"\norigin_s = 7.5\n",
            "`origin_s` is 7.5 but the trace `",
        ),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        let world = dir.join(format!("w{i}.toml"));
        std::fs::write(
            &world,
            format!("name = \"bad\"\nsummary = \"bad\"\n{text}[[endpoints]]\nid = \"a\"\ncapacity = 4\nlatency = {{ median_s = 0.2 }}\n"),
        )
        .unwrap();
        let o = simbench(&["validate", world.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "case {i}: {err}");
        assert!(
            err.contains(expected),
            "case {i}: wanted {expected:?} in\n{err}"
        );
        assert!(
            err.contains(&format!("w{i}.toml:")),
            "case {i}: not located\n{err}"
        );
    }
}
