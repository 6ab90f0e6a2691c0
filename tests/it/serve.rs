//! `simbench serve`: the world over HTTP on loopback. A server is started on port 0 (the first
//! line of its standard output names the address), spoken to with plain HTTP/1.1 over
//! `std::net` (and with curl when installed), and stopped with SIGTERM by the test. Checked:
//! the OpenAI shapes of answers, streams and errors; the key; the body bound; that the served
//! limit holds under a burst from many clients, read from the request log; and that the log is
//! complete when the server stops.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::scratch_dir;

/// A running server, stopped (SIGTERM, then waited for) when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        crate::support::default_stop_signals_for_children();
        let mut child = Command::new(env!("CARGO_BIN_EXE_simbench"))
            .arg("serve")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("simbench serve starts");
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("the address line");
        let addr = first
            .trim()
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("not an address: {first:?}"))
            .to_owned();
        assert!(addr.starts_with("127.0.0.1:"), "{addr}");
        Server { child, addr }
    }

    /// Sends SIGTERM and waits: the exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
        let exit = self.child.wait().expect("the server exits");
        std::mem::forget(self);
        exit
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An answer: status, headers (lower-case names), body (de-chunked).
struct Answer {
    status: u16,
    /// The status line, reason phrase included.
    status_line: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// One request over a fresh connection (`Connection: close`).
fn request(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut text = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(body);
    stream.write_all(text.as_bytes()).expect("send");
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    parse_answer(&raw)
}

fn parse_answer(raw: &[u8]) -> Answer {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status_line = head.lines().next().unwrap_or("").to_owned();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Answer {
        status,
        status_line,
        headers,
        body,
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || tail.len() < n {
            break;
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].trim_start_matches("\r\n");
    }
    out
}

/// `clients` threads each sending `each` requests with `body`, every answer checked by
/// `check`: the statuses, in no particular order.
fn burst(addr: &str, clients: usize, each: usize, body: &str, check: fn(&Answer)) -> Vec<u16> {
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let (addr, body) = (addr.to_owned(), body.to_owned());
            std::thread::spawn(move || {
                (0..each)
                    .map(|_| request(&addr, "POST", "/v1/chat/completions", &[], &body))
                    .map(|a| {
                        check(&a);
                        a.status
                    })
                    .collect::<Vec<u16>>()
            })
        })
        .collect();
    threads
        .into_iter()
        .flat_map(|t| t.join().expect("a client"))
        .collect()
}

const CHAT: &str = r#"{"model":"m","messages":[{"role":"user","content":"hello, world"}]}"#;

fn read_log(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("the log")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn serve_answers_in_the_openai_shapes_and_logs_every_request() {
    let dir = scratch_dir("serve-shapes");
    let log = dir.join("served.jsonl");
    let server = Server::start(&[
        "--port",
        "0",
        "--time-scale",
        "20",
        "--request-log",
        log.to_str().unwrap(),
        "tests/data/worlds/serve_tight.toml",
    ]);
    let addr = server.addr.clone();
    let ok = request(&addr, "POST", "/v1/chat/completions", &[], CHAT);
    assert_eq!(ok.status, 200, "{}", ok.body);
    let json = ok.json();
    assert_eq!(json["object"], "chat.completion");
    assert_eq!(json["model"], "m");
    assert_eq!(json["choices"][0]["message"]["role"], "assistant");
    assert!(json["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
    assert_eq!(ok.header("x-ratelimit-limit-requests"), Some("20"));
    assert_eq!(ok.header("x-ratelimit-remaining-requests"), Some("19"));
    assert!(ok.header("x-ratelimit-reset-requests").is_some());

    let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":8}"#;
    let streamed = request(&addr, "POST", "/api/v1/chat/completions", &[], body);
    assert_eq!(streamed.status, 200);
    assert_eq!(streamed.header("content-type"), Some("text/event-stream"));
    let events: Vec<&str> = streamed
        .body
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .collect();
    assert_eq!(events.last(), Some(&"data: [DONE]"), "{}", streamed.body);
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap())
        .collect();
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, " tok".repeat(8));
    assert_eq!(chunks.last().unwrap()["usage"]["completion_tokens"], 8);

    let bad = request(&addr, "POST", "/v1/chat/completions", &[], "{not json");
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["error"]["type"], "invalid_request_error");
    let missing = request(
        &addr,
        "POST",
        "/v1/chat/completions",
        &[],
        r#"{"model":"m"}"#,
    );
    assert_eq!(missing.json()["error"]["param"], "messages");
    let unknown = request(&addr, "POST", "/nowhere/v1/chat/completions", &[], CHAT);
    assert_eq!(unknown.status, 404);
    let huge = format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":"{}"}}]}}"#,
        "x".repeat(2 << 20)
    );
    let too_big = request(&addr, "POST", "/v1/chat/completions", &[], &huge);
    assert_eq!(too_big.status, 413);
    let models = request(&addr, "GET", "/v1/models", &[], "");
    assert_eq!(models.json()["data"][0]["id"], "api");
    let malformed = request(
        &addr,
        "POST",
        "/v1/chat/completions",
        &[("x-simbench-job", "seven")],
        CHAT,
    );
    assert_eq!(malformed.status, 400);
    assert_eq!(malformed.json()["error"]["param"], "x-simbench-job");
    let tagged = request(
        &addr,
        "POST",
        "/v1/chat/completions",
        &[
            ("x-simbench-job", "7"),
            ("x-simbench-step", "1"),
            ("x-stainless-retry-count", "2"),
        ],
        CHAT,
    );
    assert_eq!(tagged.status, 200, "{}", tagged.body);
    assert!(server.stop().success());
    // Three chat requests reached the world; the malformed ones never did.
    let entries = read_log(&log);
    assert_eq!(entries.len(), 3, "{entries:?}");
    assert_eq!(
        entries[0].get("job"),
        None,
        "an untagged request has no job"
    );
    assert_eq!(
        (
            &entries[2]["job"],
            &entries[2]["step"],
            &entries[2]["attempt"]
        ),
        (&Value::from(7), &Value::from(1), &Value::from(3))
    );
    assert!(
        entries
            .iter()
            .all(|e| e["outcome"] == "ok" && e["endpoint"] == "api")
    );
    assert!(entries[1]["ttft_s"].as_f64().is_some());
}

#[test]
fn serve_asks_for_the_key_when_given_one() {
    let server = Server::start(&["--api-key", "sk-test", "tests/data/worlds/serve_tight.toml"]);
    let addr = server.addr.clone();
    let none = request(&addr, "POST", "/v1/chat/completions", &[], CHAT);
    assert_eq!(none.status, 401);
    assert_eq!(none.json()["error"]["code"], "invalid_api_key");
    let wrong = request(
        &addr,
        "POST",
        "/v1/chat/completions",
        &[("Authorization", "Bearer nope")],
        CHAT,
    );
    assert_eq!(wrong.status, 401);
    let right = request(
        &addr,
        "POST",
        "/v1/chat/completions",
        &[("Authorization", "Bearer sk-test")],
        CHAT,
    );
    assert_eq!(right.status, 200, "{}", right.body);
    assert!(server.stop().success());
}

/// A burst of 24 clients × 6 requests against 20 requests per fixed 10 s window (served at
/// ×20, so a window lasts half a real second): the log shows no window admitting more than 20,
/// every refusal is a 429 with Retry-After (and retry-after-ms), and every answer a client got
/// has its line.
#[test]
fn the_served_limit_holds_under_a_burst_and_the_log_is_complete() {
    let dir = scratch_dir("serve-burst");
    let log = dir.join("burst.jsonl");
    let server = Server::start(&[
        "--time-scale",
        "20",
        "--request-log",
        log.to_str().unwrap(),
        "tests/data/worlds/serve_tight.toml",
    ]);
    let addr = server.addr.clone();
    let statuses = burst(&addr, 24, 6, CHAT, |a| {
        if a.status == 429 {
            assert!(a.header("retry-after").is_some());
            let ms: f64 = a.header("retry-after-ms").unwrap().parse().unwrap();
            assert!(ms > 0.0 && ms <= 500.0, "{ms}");
            assert_eq!(a.json()["error"]["code"], "rate_limit_exceeded");
        }
    });
    assert!(server.stop().success());
    let ok = statuses.iter().filter(|&&s| s == 200).count();
    let refused = statuses.iter().filter(|&&s| s == 429).count();
    assert_eq!(ok + refused, statuses.len(), "{statuses:?}");
    assert!(refused > 0 && ok >= 20, "ok {ok}, refused {refused}");
    let entries = read_log(&log);
    assert_eq!(entries.len(), statuses.len());
    let mut per_window = std::collections::BTreeMap::<u64, usize>::new();
    for e in entries.iter().filter(|e| e["outcome"] != "rate_limited") {
        let window = (e["start_s"].as_f64().unwrap() / 10.0).floor() as u64;
        *per_window.entry(window).or_default() += 1;
    }
    assert!(per_window.values().all(|&n| n <= 20), "{per_window:?}");
    assert_eq!(per_window.values().sum::<usize>(), ok);
}

/// curl, when installed (.ci/run installs it), sees the headers and the event stream.
#[test]
fn curl_sees_the_rate_limit_headers_and_the_event_stream() {
    let curl = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("curl"))
            .find(|c| c.is_file())
    });
    let Some(curl): Option<PathBuf> = curl else {
        assert_ne!(
            std::env::var("SIMBENCH_REAL_COMPONENTS").as_deref(),
            Ok("required"),
            "no curl"
        );
        eprintln!("skipped: no curl on the PATH");
        return;
    };
    let server = Server::start(&["--time-scale", "20", "tests/data/worlds/serve_tight.toml"]);
    let url = format!("http://{}/v1/chat/completions", server.addr);
    let body =
        r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":4}"#;
    let out = Command::new(curl)
        .args([
            "-sS",
            "-N",
            "-i",
            "-H",
            "content-type: application/json",
            "-d",
            body,
            &url,
        ])
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.contains("x-ratelimit-remaining-requests: 19"),
        "{text}"
    );
    assert!(text.contains("content-type: text/event-stream"), "{text}");
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
    assert!(server.stop().success());
}

/// Garbage on the wire — random bytes, a truncated request, an oversized header — gets a 4xx
/// or a closed connection, never a crash: the server still answers afterwards.
#[test]
fn garbage_on_the_wire_never_brings_the_server_down() {
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let server = Server::start(&["--time-scale", "50", "tests/data/worlds/serve_tight.toml"]);
    let addr = server.addr.clone();
    let send = |bytes: &[u8]| {
        let mut stream = TcpStream::connect(&addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(15)))
            .unwrap();
        let _ = stream.write_all(bytes);
        let _ = stream.shutdown(std::net::Shutdown::Write);
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        raw
    };
    let mut fixed: Vec<Vec<u8>> = vec![
        b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"model\"".to_vec(),
        b"GET / HTTP/9.9\r\n\r\n".to_vec(),
        format!("GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(64 << 10)).into_bytes(),
        b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".to_vec(),
        b"\x00\xff\r\n\r\n".to_vec(),
    ];
    let mut runner = TestRunner::new(crate::support::proptest_config(64));
    for _ in 0..64 {
        let tree = proptest::collection::vec(any::<u8>(), 0..512)
            .new_tree(&mut runner)
            .expect("a value");
        fixed.push(tree.current());
    }
    for bytes in &fixed {
        let raw = send(bytes);
        let answer = parse_answer(&raw);
        assert!(
            raw.is_empty() || (400..500).contains(&answer.status),
            "{:?} → {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(80)]),
            String::from_utf8_lossy(&raw[..raw.len().min(200)])
        );
    }
    let ok = request(&server.addr, "POST", "/v1/chat/completions", &[], CHAT);
    assert_eq!(ok.status, 200);
    assert!(server.stop().success());
}

/// The aggregate of `metric` for `algorithm` in a JSON report: (mean, stdev).
fn aggregate(report: &Value, algorithm: &str, metric: &str) -> (f64, f64) {
    let a = &report["aggregates"][algorithm][metric];
    (a["mean"].as_f64().unwrap(), a["stdev"].as_f64().unwrap())
}

/// The official `openai` package (installed by .ci/run into a throwaway venv, named by
/// `SIMBENCH_OPENAI_PYTHON`), 8 workers × 200 jobs with its default retries, against the
/// served serve_tight world at ×10 and ×50; and the same world simulated with `sdk_retry` on
/// 10 seeds. Jobs done, requests, 429s and retries agree within max(3 seed stdevs, 5 % of the
/// simulated mean): the seeds barely differ on this world (fixed windows, no failures); the
/// served clock starts at the first request, so the client meets the windows at the simulated
/// phase however long Python takes to start (anchored at the server's start, it met them late
/// and saw 65–68 429s for 72 in CI); and a
/// real client's scheduling jitter — a millisecond is K simulated milliseconds — can move a
/// retry across a window boundary, which 5 % of 272 requests covers. The 429 share is the same
/// at both scales within that tolerance.
#[test]
fn the_official_openai_sdk_agrees_with_the_simulated_sdk_retry() {
    let Some(python) = std::env::var_os("SIMBENCH_OPENAI_PYTHON") else {
        assert_ne!(
            std::env::var("SIMBENCH_REAL_COMPONENTS").as_deref(),
            Ok("required"),
            "SIMBENCH_OPENAI_PYTHON names no Python with the openai package"
        );
        eprintln!("skipped: set SIMBENCH_OPENAI_PYTHON to a Python with `pip install openai`");
        return;
    };
    let world = "tests/data/worlds/serve_tight.toml";
    let out = crate::support::simbench(&[
        "run",
        world,
        "--algorithms",
        "sdk_retry",
        "--seeds",
        "10",
        "--json",
        "-",
        "--quiet",
    ]);
    assert!(out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let jobs = report["jobs"].as_u64().unwrap();
    let workers = report["concurrency"].as_u64().unwrap();
    let simulated = |metric| aggregate(&report, "sdk_retry", metric);
    let (requests, requests_sd) = simulated("requests");
    let (done, done_sd) = simulated("jobs_done");
    let (retries, retries_sd) = simulated("retry_requests");
    let (refusal_rate, _) = simulated("refusal_rate");
    let refused = refusal_rate * requests;
    let within =
        |served: f64, mean: f64, sd: f64| (served - mean).abs() <= (3.0 * sd).max(0.05 * mean);
    let mut shares = Vec::new();
    let dir = scratch_dir("serve-sdk");
    for scale in ["10", "50"] {
        let log = dir.join(format!("served-x{scale}.jsonl"));
        let log_arg = log.to_str().unwrap();
        let server = Server::start(&["--time-scale", scale, "--request-log", log_arg, world]);
        let out = Command::new(&python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openai_sdk/workers.py"))
            .arg(format!("http://{}/v1", server.addr))
            .args([workers.to_string(), jobs.to_string()])
            .output()
            .expect("python runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(server.stop().success());
        let served: Value = serde_json::from_slice(&out.stdout).unwrap();
        eprintln!(
            "×{scale}: served {served}; simulated jobs_done {done} ± {done_sd}, requests {requests} ± {requests_sd}, 429s {refused:.1}, retries {retries} ± {retries_sd}"
        );
        let get = |k: &str| served[k].as_f64().unwrap();
        assert!(
            within(get("jobs_done"), done, done_sd),
            "×{scale} jobs_done"
        );
        assert!(
            within(get("requests"), requests, requests_sd),
            "×{scale} requests"
        );
        assert!(
            within(get("rate_limited"), refused, requests_sd),
            "×{scale} 429s"
        );
        assert!(
            within(get("retries"), retries, retries_sd),
            "×{scale} retries"
        );
        shares.push(get("rate_limited") / get("requests"));
        served_log_has_the_load(&log, &served, jobs, workers, scale == "10");
    }
    assert!(
        (shares[0] - shares[1]).abs() <= 0.05 * refusal_rate.max(0.01) + 0.02,
        "{shares:?}"
    );
}

/// The served log of the SDK run has a line per request the client counted, each with the job
/// the client tagged it with (`x-simbench-job`) and the attempt from the SDK's own
/// `x-stainless-retry-count`: every job, its retries as the client counted them, and a fit of
/// the log finds the client's concurrency and, when `closed`, its closed loop and the pause
/// between a worker's jobs. Each worker
/// starts its next job some real milliseconds after its last one ended, which the time scale
/// stretches: at ×50 that is some 7 ms, a tenth of a mean job's simulated time, and the share
/// of starts that soon moves around the fit's threshold with the machine's load.
fn served_log_has_the_load(log: &Path, served: &Value, jobs: u64, workers: u64, closed: bool) {
    let lines = read_log(log);
    assert_eq!(lines.len() as u64, served["requests"].as_u64().unwrap());
    let mut seen = std::collections::BTreeSet::new();
    let mut retries = 0;
    for line in &lines {
        let job = line["job"]
            .as_u64()
            .unwrap_or_else(|| panic!("no job: {line}"));
        let attempt = line["attempt"]
            .as_u64()
            .unwrap_or_else(|| panic!("no attempt: {line}"));
        assert!(job < jobs && (1..=3).contains(&attempt), "{line}");
        seen.insert(job);
        retries += u64::from(attempt > 1);
    }
    assert_eq!(seen.len() as u64, jobs, "every job has its lines");
    assert_eq!(retries, served["retries"].as_u64().unwrap());
    let fitted = log.with_extension("toml");
    let out =
        crate::support::simbench(&["fit", log.to_str().unwrap(), "-o", fitted.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&fitted).unwrap();
    let world: toml::Table = toml::from_str(&text).unwrap();
    // The client's concurrency is found either way: as a closed loop's workers, or (when the
    // real milliseconds between a worker's jobs, stretched by the time scale, pass the fit's
    // threshold on a loaded machine) as an open loop's most jobs at once.
    let found = match world.get("concurrency") {
        Some(c) => c.as_integer(),
        None if !closed => world["load"]["max_in_flight"].as_integer(),
        None => None,
    };
    assert_eq!(found, Some(workers as i64), "{text}");
    let loop_line = text
        .lines()
        .find(|l| l.starts_with("concurrency") || l.starts_with("model"))
        .unwrap();
    eprintln!("{}: {loop_line}", log.display());
    if closed {
        // Closed, and the workers' own time between jobs is the pause: never nothing.
        let load = world["load"].as_table().expect("[load] with the pause");
        assert!(!load.contains_key("model"), "{text}");
        assert!(loop_line.ends_with("(a closed loop)"), "{text}");
        let think_s = load["think_s"].as_float().unwrap();
        assert!(think_s > 0.0 && think_s < 1.0, "{text}");
    }
}

/// SIGINT with an answer in progress and no time to drain: the server exits 0, the client's
/// connection is closed, and the log still has the request, as cut short.
#[test]
fn sigint_cuts_answers_in_progress_and_the_log_keeps_them() {
    let dir = scratch_dir("serve-sigint");
    let log = dir.join("cut.jsonl");
    let server = Server::start(&[
        "--drain-s",
        "0",
        "--request-log",
        log.to_str().unwrap(),
        "--set",
        "endpoints.api.latency.median_s=30",
        "tests/data/worlds/serve_tight.toml",
    ]);
    let addr = server.addr.clone();
    let client =
        std::thread::spawn(move || request(&addr, "POST", "/v1/chat/completions", &[], CHAT));
    std::thread::sleep(Duration::from_millis(300));
    let mut server = server;
    let status = Command::new("kill")
        .args(["-INT", &server.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let exit = server.child.wait().expect("the server exits");
    assert!(exit.success(), "{exit:?}");
    let answer = client.join().expect("the client");
    assert_eq!(answer.status, 0, "no answer: {}", answer.body);
    let entries = read_log(&log);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["outcome"], "client_timeout");
}

/// `--max-connections 2`: with two connections open, a third is not served until one closes.
#[test]
fn a_connection_beyond_the_cap_waits_for_one_to_close() {
    let server = Server::start(&[
        "--max-connections",
        "2",
        "--time-scale",
        "20",
        "tests/data/worlds/serve_tight.toml",
    ]);
    let idle: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(&server.addr).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut third = TcpStream::connect(&server.addr).expect("the backlog takes it");
    let text = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{CHAT}",
        CHAT.len()
    );
    third.write_all(text.as_bytes()).unwrap();
    third
        .set_read_timeout(Some(Duration::from_millis(700)))
        .unwrap();
    let mut byte = [0u8; 1];
    assert!(third.read(&mut byte).is_err(), "served beyond the cap");
    drop(idle);
    third
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut raw = byte[..0].to_vec();
    let _ = third.read_to_end(&mut raw);
    assert_eq!(parse_answer(&raw).status, 200);
    assert!(server.stop().success());
}

/// The token limit holds too: a burst of 16 clients × 5 requests of about 100 prompt tokens
/// with `max_tokens` 50 against 2,000 tokens per fixed 10 s window charged at admission (served
/// at ×20): per window, what admissions took less what ends gave back, from the log, never
/// exceeds 2,000, and the answers carry the token headers.
#[test]
fn the_served_token_limit_holds_under_a_burst() {
    let dir = scratch_dir("serve-tokens");
    let log = dir.join("tokens.jsonl");
    let server = Server::start(&[
        "--time-scale",
        "20",
        "--request-log",
        log.to_str().unwrap(),
        "tests/data/worlds/serve_tokens.toml",
    ]);
    let addr = server.addr.clone();
    let prompt = "word ".repeat(78);
    let body = format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":"{prompt}"}}],"max_tokens":50}}"#
    );
    let statuses = burst(&addr, 16, 5, &body, |a| {
        assert_eq!(
            a.header("x-ratelimit-limit-tokens"),
            Some("2000"),
            "{:?}",
            a.headers
        );
    });
    assert!(server.stop().success());
    assert!(
        statuses.contains(&429) && statuses.contains(&200),
        "{statuses:?}"
    );
    // Admission takes prompt + max_tokens; the unused part of max_tokens comes back when the
    // request ends, to the window it was charged in (a window that has reset since owes
    // nothing). So per window: what admissions there took, less what they gave back there.
    let mut per_window = std::collections::BTreeMap::<u64, f64>::new();
    let entries = read_log(&log);
    assert_eq!(entries.len(), statuses.len());
    let window = |t: &Value| (t.as_f64().unwrap() / 10.0).floor() as u64;
    for e in entries.iter().filter(|e| e["outcome"] == "ok") {
        let (input, max) = (
            e["input_tokens"].as_f64().unwrap(),
            e["max_tokens"].as_f64().unwrap(),
        );
        // 390 characters: 98 tokens of text and 4 for the message; the asked max_tokens.
        assert_eq!((input, max), (102.0, 50.0));
        let unused = max - e["output_tokens"].as_f64().unwrap();
        let charged = per_window.entry(window(&e["start_s"])).or_default();
        *charged += input + max;
        if window(&e["start_s"]) == window(&e["end_s"]) {
            *charged -= unused;
        }
    }
    eprintln!("net tokens per window: {per_window:?}");
    assert!(per_window.values().all(|&t| t <= 2000.0), "{per_window:?}");
}

/// The world's weather on the wire: beyond a saturated endpoint's capacity a 529
/// "overloaded" at once, an outage closes the connection without an answer, and a failing
/// endpoint answers 503 after its latency, with its rate-limit headers as every answer has
/// them; the log says each.
#[test]
fn overloaded_outages_and_failures_are_served_as_the_world_says() {
    let dir = scratch_dir("serve-incidents");
    let log = dir.join("weather.jsonl");
    let server = Server::start(&[
        "--time-scale",
        "10",
        "--request-log",
        log.to_str().unwrap(),
        "--set",
        "endpoints.flaky.limits=[{ unit = \"requests\", limit = 1000, per = \"minute\" }]",
        "tests/data/worlds/serve_incidents.toml",
    ]);
    let addr = server.addr.clone();
    let holder = {
        let addr = addr.clone();
        std::thread::spawn(move || request(&addr, "POST", "/busy/v1/chat/completions", &[], CHAT))
    };
    std::thread::sleep(Duration::from_millis(60));
    let overloaded = request(&addr, "POST", "/busy/v1/chat/completions", &[], CHAT);
    assert_eq!(overloaded.status, 529, "{}", overloaded.body);
    assert_eq!(overloaded.status_line, "HTTP/1.1 529 Site is overloaded");
    assert_eq!(overloaded.json()["error"]["type"], "overloaded_error");
    assert_eq!(holder.join().unwrap().status, 200);
    let down = request(&addr, "POST", "/down/v1/chat/completions", &[], CHAT);
    assert_eq!(down.status, 0, "an outage answers nothing");
    let failed = request(&addr, "POST", "/flaky/v1/chat/completions", &[], CHAT);
    assert_eq!(failed.status, 503);
    assert_eq!(failed.header("x-ratelimit-limit-requests"), Some("1000"));
    assert!(failed.header("x-ratelimit-remaining-requests").is_some());
    assert_eq!(failed.json()["error"]["type"], "server_error");
    assert!(server.stop().success());
    let outcomes: Vec<(String, String)> = read_log(&log)
        .iter()
        .map(|e| {
            (
                e["endpoint"].as_str().unwrap().to_owned(),
                e["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for expected in [
        ("busy", "overloaded"),
        ("busy", "ok"),
        ("down", "rejected"),
        ("flaky", "error"),
    ] {
        assert!(
            outcomes.contains(&(expected.0.to_owned(), expected.1.to_owned())),
            "{expected:?} not in {outcomes:?}"
        );
    }
}

/// The edges a demanding client meets: the key guards every route (the models too); a known
/// path asked with the wrong method is a 405 whose `Allow` names the right one; a model is
/// found by its id; a body that never comes ends in a 408 (a 413 when declared past the bound)
/// instead of holding the connection; of two limits in one unit the
/// headers carry the one that binds (a minute's tokens, not a day's).
#[test]
fn serve_guards_every_route_and_answers_at_its_edges() {
    let server = Server::start(&[
        "--api-key",
        "sk-test",
        "--time-scale",
        "50",
        "scenarios/llm_daily_quota.toml",
    ]);
    let addr = server.addr.clone();
    let key = [("Authorization", "Bearer sk-test")];
    assert_eq!(request(&addr, "GET", "/v1/models", &[], "").status, 401);
    assert_eq!(
        request(&addr, "POST", "/nope/v1/chat/completions", &[], CHAT).status,
        401
    );
    let models = request(&addr, "GET", "/v1/models", &key, "");
    assert_eq!(models.status, 200);
    let id = models.json()["data"][0]["id"].as_str().unwrap().to_owned();
    let one = request(&addr, "GET", &format!("/v1/models/{id}"), &key, "");
    assert_eq!(
        (one.status, one.json()["id"].as_str()),
        (200, Some(id.as_str()))
    );
    assert_eq!(
        request(&addr, "GET", "/v1/models/nope", &key, "").status,
        404
    );
    // HEAD is GET without the body: the same status and length.
    let head = request(&addr, "HEAD", "/v1/models", &key, "");
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty(), "{}", head.body);
    assert_eq!(
        head.header("content-length"),
        models.header("content-length")
    );
    assert_eq!(
        request(&addr, "HEAD", &format!("/v1/models/{id}"), &key, "").status,
        200
    );
    for (method, path, allow) in [
        ("POST", "/v1/models", "GET, HEAD"),
        ("GET", "/v1/chat/completions", "POST"),
    ] {
        let answer = request(&addr, method, path, &key, "");
        assert_eq!(answer.status, 405, "{method} {path}");
        assert_eq!(answer.header("allow"), Some(allow), "{method} {path}");
    }
    // A body that stops coming holds the connection only for the body's time: then a 408 and
    // the connection closed; 413 when what was declared is past the bound anyway.
    let head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-test\r\n";
    let stalled: Vec<_> = [("100", 408), ("99999999999", 413)]
        .into_iter()
        .map(|(length, status)| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(&addr).expect("connect");
                stream
                    .set_read_timeout(Some(Duration::from_secs(60)))
                    .unwrap();
                write!(stream, "{head}Content-Length: {length}\r\n\r\n{{").unwrap();
                let mut raw = Vec::new();
                let _ = stream.read_to_end(&mut raw);
                let answer = parse_answer(&raw);
                assert_eq!(answer.status, status, "{length}: {}", answer.body);
                assert_eq!(answer.header("connection"), Some("close"));
            })
        })
        .collect();
    for thread in stalled {
        thread.join().expect("a stalled body is answered");
    }
    // 200,000 tokens a minute and 45,000,000 a day: the minute's, with the least left, binds.
    let chat = request(&addr, "POST", "/v1/chat/completions", &key, CHAT);
    assert_eq!(chat.status, 200, "{}", chat.body);
    assert_eq!(chat.header("x-ratelimit-limit-tokens"), Some("200000"));
    assert!(server.stop().success());
}

/// Refusals before serving leave the files as they were: a taken port names the address and
/// the way out, and the request log named is not truncated; a drain time past a day is refused.
#[test]
fn serve_refuses_a_taken_port_before_touching_the_log() {
    let dir = scratch_dir("serve-port");
    let log = dir.join("keep.jsonl");
    std::fs::write(&log, "{\"kept\":true}\n").unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = crate::support::simbench(&[
        "serve",
        "--port",
        &port,
        "--request-log",
        log.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{stderr}"
    );
    assert!(stderr.contains("--port 0"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "{\"kept\":true}\n");
    for drain in ["1e20", "inf", "-1"] {
        let out = crate::support::simbench(&["serve", "--drain-s", drain]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{drain}: {stderr}");
        assert!(stderr.contains("is not a drain time"), "{drain}: {stderr}");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// The request log follows the rules of every output: the scenario, a base it extends or a
/// link to either is refused before anything is written, and missing folders are made. A key
/// no client could send is refused, as is a seed past a world's range.
#[test]
fn serve_refuses_to_log_over_its_inputs_and_makes_the_log_folders() {
    let dir = scratch_dir("serve-inputs");
    let world = dir.join("w.toml");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/worlds/serve_tight.toml"),
    )
    .unwrap();
    std::fs::write(&world, &text).unwrap();
    let child = dir.join("child.toml");
    std::fs::write(&child, "extends = \"w.toml\"\nname = \"child\"\n").unwrap();
    let link = dir.join("link.toml");
    std::os::unix::fs::symlink(&world, &link).unwrap();
    for (file, log, what) in [
        (&world, &world, "is the scenario file"),
        (&child, &world, "is a base that the scenario extends"),
        (&world, &link, "is the scenario file"),
    ] {
        let out = crate::support::simbench(&[
            "serve",
            file.to_str().unwrap(),
            "--request-log",
            log.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(what), "{stderr}");
        assert!(stderr.contains("nothing was written"), "{stderr}");
        assert_eq!(std::fs::read_to_string(&world).unwrap(), text);
    }
    let nested = dir.join("made/for/it.jsonl");
    let server = Server::start(&[
        world.to_str().unwrap(),
        "--request-log",
        nested.to_str().unwrap(),
    ]);
    assert!(server.stop().success());
    assert!(nested.exists());
    for (flag, value, says) in [
        ("--api-key", "", "empty key"),
        ("--api-key", "a b", "a character a header cannot carry"),
        (
            "--seed",
            "9223372036854775808",
            "a whole number from 0 to 9223372036854775807",
        ),
        ("--seed", "-1", "`-1` is not a seed"),
        ("--seed", "1.5", "`1.5` is not a seed"),
        ("--port", "-1", "-1 is not in 0..=65535"),
    ] {
        let out = crate::support::simbench(&["serve", flag, value]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(stderr.contains(says), "{flag} {value}: {stderr}");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// SIGHUP (a closed terminal) drains as SIGTERM does, and a second signal cuts the drain short:
/// the answer in progress is logged as cut, not lost.
#[test]
fn sighup_drains_and_a_second_signal_cuts_the_drain() {
    let dir = scratch_dir("serve-hup");
    let log = dir.join("hup.jsonl");
    let mut server = Server::start(&[
        "--drain-s",
        "600",
        "--request-log",
        log.to_str().unwrap(),
        "--set",
        "endpoints.api.latency.median_s=600",
        "tests/data/worlds/serve_tight.toml",
    ]);
    let addr = server.addr.clone();
    let client =
        std::thread::spawn(move || request(&addr, "POST", "/v1/chat/completions", &[], CHAT));
    std::thread::sleep(Duration::from_millis(300));
    let pid = server.child.id().to_string();
    let signal = |name: &str| {
        let status = Command::new("kill").args([name, &pid]).status();
        assert!(status.expect("kill runs").success());
    };
    signal("-HUP");
    // Past the first 0.1 s of the drain, when the server has said it is waiting.
    std::thread::sleep(Duration::from_millis(500));
    assert!(server.child.try_wait().unwrap().is_none(), "still draining");
    signal("-INT");
    let exit = server.child.wait().expect("the server exits");
    assert!(exit.success(), "{exit:?}");
    assert_eq!(client.join().expect("the client").status, 0);
    let entries = read_log(&log);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["outcome"], "client_timeout");
    std::fs::remove_dir_all(dir).ok();
}

/// A request log that cannot be written (a full disk) is not lost in silence: the server goes
/// on answering, and the command fails when it stops.
#[test]
fn serve_fails_when_its_request_log_lost_entries() {
    if !Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full");
        return;
    }
    let server = Server::start(&[
        "--time-scale",
        "50",
        "--request-log",
        "/dev/full",
        "tests/data/worlds/serve_tight.toml",
    ]);
    let addr = server.addr.clone();
    assert_eq!(
        request(&addr, "POST", "/v1/chat/completions", &[], CHAT).status,
        200
    );
    assert_eq!(
        request(&addr, "POST", "/v1/chat/completions", &[], CHAT).status,
        200
    );
    let exit = server.stop();
    assert_eq!(exit.code(), Some(2), "{exit:?}");
}

/// A client that half-closes right after its request (`shutdown(SHUT_WR)`) is taken as gone,
/// but its request, fully received, is always admitted, charged and logged, as
/// `client_timeout`: hyper ending the connection on the end of input used to drop half of them
/// unlogged and uncharged (5 of 10 missing).
#[test]
fn a_half_closed_request_is_always_charged_and_logged() {
    let dir = scratch_dir("serve-half-close");
    let log = dir.join("served.jsonl");
    let server = Server::start(&[
        "--request-log",
        log.to_str().unwrap(),
        "tests/data/worlds/serve_tight.toml",
    ]);
    let addr = server.addr.clone();
    for _ in 0..10 {
        let mut stream = TcpStream::connect(&addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        write!(
            stream,
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{CHAT}",
            CHAT.len()
        )
        .unwrap();
        stream.shutdown(std::net::Shutdown::Write).unwrap();
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
    }
    let after = request(&addr, "POST", "/v1/chat/completions", &[], CHAT);
    assert_eq!(after.status, 200, "{}", after.body);
    // 20 a window: the ten half-closed requests took ten, this one the eleventh.
    assert_eq!(after.header("x-ratelimit-remaining-requests"), Some("9"));
    assert!(server.stop().success());
    let lines = read_log(&log);
    let gone = lines
        .iter()
        .filter(|l| l["outcome"] == "client_timeout")
        .count();
    assert_eq!((lines.len(), gone), (11, 10), "{lines:?}");
    std::fs::remove_dir_all(dir).ok();
}

/// The edges QA found: percent-encoded ids (`%2F` inside an id) address their endpoint, a
/// broken escape is a 400; an unknown id is a 404 whatever the method; the `Bearer` scheme is
/// case-insensitive; `max_tokens` written as `2.0` or `1e2` is a whole number; a declared
/// length past the bound is refused at once; a one-token stream sends its token at the time to
/// first token; a negative time scale gets the option's own message.
#[test]
fn serve_decodes_ids_and_answers_the_qa_edges() {
    let dir = scratch_dir("serve-edges");
    let world = dir.join("ids.toml");
    std::fs::write(
        &world,
        r#"name = "ids"
summary = "endpoint ids that URLs encode"
seed = 5
jobs = 10
concurrency = 2
horizon_s = 600.0

[[endpoints]]
id = "org/model v1"
capacity = 4
latency = { median_s = 0.1, sigma = 0.1, tail_rate = 0.0 }
failures = { error_rate = 0.0, storm_rate = 0.0 }

[[endpoints]]
id = "é:x"
capacity = 4
latency = { median_s = 0.1, sigma = 0.1, tail_rate = 0.0 }
failures = { error_rate = 0.0, storm_rate = 0.0 }
"#,
    )
    .unwrap();
    let server = Server::start(&[
        "--api-key",
        "sk-test",
        "--max-body-bytes",
        "1024",
        world.to_str().unwrap(),
    ]);
    let addr = server.addr.clone();
    let key = [("Authorization", "bearer sk-test")];
    for (path, id) in [
        ("/v1/models/org%2Fmodel%20v1", "org/model v1"),
        ("/v1/models/%C3%A9:x", "é:x"),
        ("/v1/models/%c3%a9%3Ax", "é:x"),
    ] {
        let one = request(&addr, "GET", path, &key, "");
        assert_eq!(one.status, 200, "{path}: {}", one.body);
        assert_eq!(one.json()["id"], id, "{path}");
    }
    for path in [
        "/org%2Fmodel%20v1/v1/chat/completions",
        "/%C3%A9:x/v1/chat/completions",
    ] {
        let chat = request(&addr, "POST", path, &key, CHAT);
        assert_eq!(chat.status, 200, "{path}: {}", chat.body);
    }
    // The header carries the id's UTF-8 bytes, as curl and the SDKs send it.
    let by_header = [key[0], ("x-simbench-endpoint", "é:x")];
    let chat = request(&addr, "POST", "/v1/chat/completions", &by_header, CHAT);
    assert_eq!(chat.status, 200, "{}", chat.body);
    let unknown = [key[0], ("x-simbench-endpoint", "é:y")];
    let chat = request(&addr, "POST", "/v1/chat/completions", &unknown, CHAT);
    assert_eq!(chat.status, 404, "{}", chat.body);
    assert!(chat.body.contains("`é:y`"), "{}", chat.body);
    for path in [
        "/v1/models/%zz",
        "/v1/models/%FF",
        "/a%2/v1/chat/completions",
    ] {
        assert_eq!(request(&addr, "GET", path, &key, "").status, 400, "{path}");
    }
    for method in ["GET", "POST"] {
        for path in ["/zzz/v1/chat/completions", "/v1/models/zzz"] {
            let answer = request(&addr, method, path, &key, CHAT);
            assert_eq!(answer.status, 404, "{method} {path}");
        }
    }
    assert_eq!(
        request(&addr, "GET", "/%C3%A9:x/v1/chat/completions", &key, "").status,
        405
    );
    for scheme in ["BEARER", "Bearer", "bEaReR"] {
        let auth = format!("{scheme} sk-test");
        let models = request(&addr, "GET", "/v1/models", &[("Authorization", &auth)], "");
        assert_eq!(models.status, 200, "{scheme}");
    }
    for (max, status) in [("2.0", 200), ("1e2", 200), ("2.5", 400)] {
        let body = format!(
            r#"{{"model":"m","messages":[{{"role":"user","content":"hi"}}],"max_tokens":{max}}}"#
        );
        let answer = request(&addr, "POST", "/v1/chat/completions", &key, &body);
        assert_eq!(answer.status, status, "{max}: {}", answer.body);
    }
    // Declared past the bound, nothing of the body sent: the 413 comes at once, not after the
    // body's 10 s.
    // Within 5 s, while the 10 s a body has to come are far from over.
    let mut stream = TcpStream::connect(&addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-test\r\nContent-Length: 5000\r\n\r\n"
    )
    .unwrap();
    let mut head = String::new();
    BufReader::new(&stream)
        .read_line(&mut head)
        .expect("the 413 within 5 s");
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    assert!(server.stop().success());
    for scale in ["-1", "-0.5", "0"] {
        let out = crate::support::simbench(&["serve", "--time-scale", scale]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{scale}: {stderr}");
        assert!(stderr.contains("is not a time scale"), "{scale}: {stderr}");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A whole (non-streamed) answer is sent when the request ends, so its headers say how the
/// limits stand after its own settlement: the unused part of `max_tokens` already given back
/// (they used to be taken a moment before, 20 tokens short here). A stream's headers go out at
/// admission and say what admission left.
#[test]
fn a_whole_answer_carries_the_limits_as_its_request_leaves_them() {
    let server = Server::start(&["tests/data/worlds/serve_tokens.toml"]);
    let addr = server.addr.clone();
    let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":50}"#;
    let whole = request(&addr, "POST", "/v1/chat/completions", &[], body);
    assert_eq!(whole.status, 200, "{}", whole.body);
    let usage = &whole.json()["usage"];
    let (prompt, output) = (
        usage["prompt_tokens"].as_f64().unwrap(),
        usage["completion_tokens"].as_f64().unwrap(),
    );
    assert!(output < 50.0, "the test needs unused max_tokens: {output}");
    // One fixed 10 s window of 2,000 tokens, and the answer came within it (about 0.5 s).
    let remaining = |a: &Answer| -> f64 {
        a.header("x-ratelimit-remaining-tokens")
            .expect("the token header")
            .parse()
            .unwrap()
    };
    assert_eq!(
        remaining(&whole),
        2000.0 - prompt - output,
        "{:?}",
        whole.headers
    );
    let streamed = request(
        &addr,
        "POST",
        "/v1/chat/completions",
        &[],
        &body.replace("\"max_tokens\"", "\"stream\":true,\"max_tokens\""),
    );
    assert_eq!(streamed.status, 200);
    assert_eq!(
        remaining(&streamed),
        2000.0 - prompt - output - prompt - 50.0,
        "{:?}",
        streamed.headers
    );
    assert!(server.stop().success());
}

/// An answer cut at the world's `max_tokens` (the request set none) stops for `length`, as one
/// cut at the request's own, whole or streamed.
#[test]
fn an_answer_cut_at_the_worlds_cap_stops_for_length() {
    // Outputs of median 30 tokens under a cap of 2: every answer is cut.
    let server = Server::start(&[
        "--set",
        "tokens.max_tokens=2",
        "tests/data/worlds/serve_tokens.toml",
    ]);
    let addr = server.addr.clone();
    let whole = request(&addr, "POST", "/v1/chat/completions", &[], CHAT);
    assert_eq!(whole.status, 200, "{}", whole.body);
    let json = whole.json();
    assert_eq!(json["usage"]["completion_tokens"], 2);
    assert_eq!(json["choices"][0]["finish_reason"], "length");
    let streamed = request(
        &addr,
        "POST",
        "/v1/chat/completions",
        &[],
        &CHAT.replace("\"model\"", "\"stream\":true,\"model\""),
    );
    assert_eq!(streamed.status, 200);
    assert!(
        streamed.body.contains("\"finish_reason\":\"length\""),
        "{}",
        streamed.body
    );
    // Uncut: the world's cap above every output.
    drop(server);
    let server = Server::start(&[
        "--set",
        "tokens.max_tokens=1000",
        "tests/data/worlds/serve_tokens.toml",
    ]);
    let whole = request(&server.addr, "POST", "/v1/chat/completions", &[], CHAT);
    assert_eq!(whole.json()["choices"][0]["finish_reason"], "stop");
    assert!(server.stop().success());
}

/// A request log that is standard output by another name (`/dev/stdout`, or the file standard
/// output was sent to) is written after the address line, as `-` is, not over it.
#[test]
fn a_request_log_on_standard_output_by_another_name_keeps_the_address_line() {
    crate::support::default_stop_signals_for_children();
    let dir = scratch_dir("serve-stdout-log");
    for by_name in ["/dev/stdout", "same file"] {
        let out = dir.join("out.txt");
        let log = if by_name == "same file" {
            out.to_str().unwrap().to_owned()
        } else {
            by_name.to_owned()
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_simbench"))
            .args([
                "serve",
                "--request-log",
                &log,
                "tests/data/worlds/serve_tight.toml",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .expect("simbench serve starts");
        let mut first = String::new();
        for _ in 0..200 {
            first = std::fs::read_to_string(&out).unwrap();
            if first.ends_with('\n') {
                break;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let addr = first
            .trim()
            .strip_prefix("http://")
            .expect("the address")
            .to_owned();
        let answer = request(&addr, "POST", "/v1/chat/completions", &[], CHAT);
        assert_eq!(answer.status, 200, "{by_name}");
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        assert!(status.expect("kill runs").success());
        assert!(child.wait().expect("the server exits").success());
        let text = std::fs::read_to_string(&out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{by_name}: {text}");
        assert_eq!(lines[0], format!("http://{addr}"), "{by_name}");
        let entry: Value = serde_json::from_str(lines[1]).expect("a log line");
        assert_eq!(entry["outcome"], "ok", "{by_name}");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A server started with SIGINT ignored (a script's background job, `nohup`) keeps it so, and
/// says to stop it with SIGTERM rather than offer a Ctrl-C that would do nothing.
#[test]
fn a_server_started_with_sigint_ignored_says_how_to_stop_it() {
    crate::support::default_stop_signals_for_children();
    let bin = env!("CARGO_BIN_EXE_simbench");
    for (trap, says) in [
        ("", "stop with Ctrl-C"),
        ("trap '' INT; ", "stop with SIGTERM: kill "),
    ] {
        let mut child = Command::new("sh")
            .args(["-c", &format!("{trap}exec \"$0\" serve --port 0"), bin])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sh runs");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .expect("the address line");
        let mut banner = String::new();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        stderr.read_line(&mut banner).expect("the banner");
        assert!(banner.contains(says), "{trap:?}: {banner}");
        if !trap.is_empty() {
            assert!(
                banner.trim_end().ends_with(&child.id().to_string()),
                "{banner}"
            );
            // SIGINT does nothing; SIGTERM stops it.
            let int = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status();
            assert!(int.expect("kill runs").success());
            std::thread::sleep(Duration::from_millis(300));
            assert!(child.try_wait().unwrap().is_none(), "SIGINT stayed ignored");
        }
        let term = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        assert!(term.expect("kill runs").success());
        assert!(child.wait().expect("the server exits").success());
    }
}
