//! `simbench fit` as a command: the readers (request log, HAR 1.2, OTLP JSON) on hand-written
//! specification-conformant files and on broken ones, whose expected diagnostics are kept as
//! data beside them (`tests/data/logs/broken/NAME.expected`); bodies are never copied; the
//! three readers fit the same world from the same traffic.

use std::path::{Path, PathBuf};

use crate::support::{scratch_dir, simbench};

fn logs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/logs")
}

/// Every broken log is refused with exit 1 and exactly its expected, located diagnostic
/// (`SIMBENCH_BLESS=1` rewrites the expectations).
#[test]
fn fit_cli_refuses_every_broken_log_with_its_located_diagnostic() {
    let dir = logs().join("broken");
    let mut cases = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".expected") {
            continue;
        }
        cases += 1;
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_simbench"))
            .current_dir(&dir)
            .args(["fit", &name, "-o", "-"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert!(
            out.stdout.is_empty(),
            "{name}: a refused log writes no world"
        );
        let stderr = String::from_utf8(out.stderr).unwrap();
        let first = stderr.lines().next().unwrap_or("").to_owned();
        let expected_path = dir.join(format!("{name}.expected"));
        if std::env::var_os("SIMBENCH_BLESS").is_some() {
            std::fs::write(&expected_path, format!("{first}\n")).unwrap();
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap();
        assert_eq!(first, expected.trim_end(), "{name}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    }
    assert!(cases >= 12, "{cases} broken logs");
}

/// A log named twice, or by two names (a symbolic link), would count its requests twice:
/// refused with exit 2 before anything is written.
#[test]
fn fit_cli_refuses_a_log_named_twice() {
    let dir = scratch_dir("fit_twice");
    let har = logs().join("proxy.har");
    let link = dir.join("again.har");
    std::os::unix::fs::symlink(&har, &link).unwrap();
    let out_path = dir.join("w.toml");
    for second in [har.clone(), link.clone()] {
        let out = simbench(&[
            "fit",
            har.to_str().unwrap(),
            second.to_str().unwrap(),
            "-o",
            out_path.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("is given twice"), "{stderr}");
        assert!(!out_path.exists());
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A log read in the wrong `--format` says which format its content looks like.
#[test]
fn fit_cli_names_the_format_a_log_looks_like_when_told_another() {
    for (log, format, hint) in [
        (
            "proxy.har",
            "otlp",
            "it looks like a HAR file: pass --format har",
        ),
        (
            "spans.otlp.json",
            "har",
            "it looks like OTLP spans: pass --format otlp",
        ),
    ] {
        let path = logs().join(log);
        let out = simbench(&["fit", path.to_str().unwrap(), "--format", format, "-o", "-"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(hint), "{log} as {format}: {stderr}");
        assert!(out.stdout.is_empty());
    }
}

/// A log of more endpoints than a world file can hold (every command refuses a file over
/// 1 MiB) is refused with the size and the count, not as a world that fails to load.
#[test]
fn fit_cli_refuses_a_world_too_large_for_a_file_and_says_why() {
    let dir = scratch_dir("fit_large");
    let log = dir.join("hosts.jsonl");
    let lines: String = (0..1700)
        .map(|i| {
            format!(
                "{{\"start_s\":{},\"end_s\":{},\"endpoint\":\"host{i}\",\"outcome\":\"ok\"}}\n",
                f64::from(i) * 0.1,
                f64::from(i) * 0.1 + 0.3
            )
        })
        .collect();
    std::fs::write(&log, lines).unwrap();
    let out_path = dir.join("w.toml");
    let out = simbench(&[
        "fit",
        log.to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("over the 1,048,576 (1 MiB) a world file may hold, so it was not written: it has 1,700 endpoints"),
        "{stderr}"
    );
    assert!(!stderr.contains("this is a bug"), "{stderr}");
    assert!(!out_path.exists());
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn fit_cli_reads_har_and_otlp_files_written_from_their_specifications_and_copies_no_body() {
    let dir = scratch_dir("fit-cli");
    let world = dir.join("fitted.toml");
    let report = dir.join("report.txt");
    let out = simbench(&[
        "fit",
        logs().join("proxy.har").to_str().unwrap(),
        logs().join("spans.otlp.json").to_str().unwrap(),
        logs().join("collector.json").to_str().unwrap(),
        "-o",
        world.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&world).unwrap();
    let report = std::fs::read_to_string(&report).unwrap();
    let validated = simbench(&["validate", world.to_str().unwrap()]);
    assert!(validated.status.success(), "{text}");
    for secret in ["SECRET-PROMPT-TEXT", "SECRET-COMPLETION-TEXT"] {
        assert!(
            !text.contains(secret) && !report.contains(secret),
            "{secret} copied"
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains(secret), "{secret} printed");
    }
    // The HAR's host and Azure deployment, the OTLP's server.address and provider name.
    for id in [
        "\"api.example-llm.test\"",
        "\"res.openai.azure.test/gpt-east\"",
        "\"openai\"",
    ] {
        assert!(text.contains(&format!("id = {id}")), "{id}: {text}");
    }
    // The HAR's 429s (one per reader) make a bucket; its reset connection (status 0) and the
    // OTLP spans' usage give the error rate and the sizes.
    assert!(text.contains("[endpoints.rate_limit]"), "{text}");
    assert!(
        text.contains("error_rate = 0.2  # 1 failed of 5 served"),
        "{text}"
    );
    assert!(
        text.contains("[tokens]") && text.contains("value = 1200.0"),
        "{text}"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// One simulated run, written as a request log, a HAR file and OTLP spans: the three fits
/// find the same latency (to the HAR's millisecond precision).
#[test]
fn fit_cli_the_three_readers_fit_the_same_latency_from_the_same_traffic() {
    let dir = scratch_dir("fit-readers");
    let (jsonl, entries) = logged_run(&dir, None, "wait");
    let har = dir.join("run.har");
    std::fs::write(&har, to_har(&entries).to_string()).unwrap();
    let otlp = dir.join("run.json");
    std::fs::write(&otlp, to_otlp(&entries).to_string()).unwrap();
    let median = |log: &Path| -> Vec<f64> {
        let (_, doc) = fitted_world(log);
        let mut medians: Vec<(String, f64)> = doc["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let id = e["id"].as_str().unwrap().to_owned();
                (id, e["latency"]["median_s"].as_float().unwrap())
            })
            .collect();
        medians.sort_by(|a, b| a.0.cmp(&b.0));
        medians.into_iter().map(|m| m.1).collect()
    };
    let (a, b, c) = (median(&jsonl), median(&har), median(&otlp));
    assert_eq!(a.len(), 3);
    for ((x, y), z) in a.iter().zip(&b).zip(&c) {
        assert!(
            (x / y - 1.0).abs() < 0.01 && (x / z - 1.0).abs() < 0.01,
            "{a:?} {b:?} {c:?}"
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A reuse cache is fitted from the hits a log marks: from the request log (with job ids, so
/// its time to live is bounded) and from OTLP spans (`gen_ai.usage.cache_read.input_tokens`,
/// no job ids, so the default time to live). The latency model rests on the misses.
#[test]
fn fit_cli_fits_a_reuse_cache_from_the_hits_a_log_marks() {
    let dir = scratch_dir("fit-cache");
    let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/cache_reuse.toml");
    let (jsonl, entries) = logged_run(&dir, Some(&world), "sticky");
    assert!(entries.iter().any(|e| e["cache_hit"] == true));
    let otlp = dir.join("run.json");
    std::fs::write(&otlp, to_otlp(&entries).to_string()).unwrap();
    for (log, ttl_known) in [(&jsonl, true), (&otlp, false)] {
        let (text, doc) = fitted_world(log);
        let endpoints = doc["endpoints"].as_array().unwrap();
        assert_eq!(endpoints.len(), 4, "{text}");
        for e in endpoints {
            let median = e["latency"]["median_s"].as_float().unwrap();
            assert!(
                (median / 0.8 - 1.0).abs() < 0.05,
                "{log:?}: median {median}\n{text}"
            );
            let cache = e["cache"]
                .as_table()
                .unwrap_or_else(|| panic!("no cache:\n{text}"));
            let factor = cache["latency_factor"].as_float().unwrap();
            assert!(
                (factor / 0.25 - 1.0).abs() < 0.1,
                "{log:?}: factor {factor}"
            );
            let ttl = cache["ttl_s"].as_float().unwrap();
            // The client calls again within seconds: a lower bound at most, so the default.
            assert_eq!(ttl, 60.0, "{log:?}");
            let note = text.lines().find(|l| l.starts_with("ttl_s")).unwrap();
            assert_eq!(note.contains("no job ids"), !ttl_known, "{note}");
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

/// The world `simbench fit LOG` writes, as text and parsed.
fn fitted_world(log: &Path) -> (String, toml::Table) {
    let out = simbench(&["fit", log.to_str().unwrap(), "-o", "-", "--quiet"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let doc = toml::from_str(&text).unwrap();
    (text, doc)
}

/// The world `simbench fit LOG --report` writes, and its report.
fn fit_with_report(log: &Path) -> (String, String) {
    let out = simbench(&["fit", log.to_str().unwrap(), "-o", "-", "--report"]);
    let report = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{report}");
    (String::from_utf8(out.stdout).unwrap(), report)
}

/// One seed of `algorithm` on `world` (the built-in world when `None`) logged to
/// `dir/run.jsonl`, with its entries.
fn logged_run(
    dir: &Path,
    world: Option<&Path>,
    algorithm: &str,
) -> (PathBuf, Vec<serde_json::Value>) {
    let jsonl = dir.join("run.jsonl");
    let mut args = vec!["run"];
    args.extend(world.map(|w| w.to_str().unwrap()));
    args.extend(["--algorithms", algorithm, "--seeds", "1", "--request-log"]);
    args.extend([jsonl.to_str().unwrap(), "--quiet"]);
    let out = simbench(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let entries = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (jsonl, entries)
}

/// HAR 1.2 of request-log entries: one entry per request, the endpoint as the host.
fn to_har(entries: &[serde_json::Value]) -> serde_json::Value {
    let base = 1_796_117_400.0;
    let har_entries: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| {
            let start = e["start_s"].as_f64().unwrap();
            let end = e["end_s"].as_f64().unwrap();
            let ms = ((base + start) * 1000.0).round() as i64;
            let (secs, millis) = (ms.div_euclid(1000), ms.rem_euclid(1000));
            let status = e["status"].as_u64().unwrap_or(0);
            serde_json::json!({
                "startedDateTime": format!("{}.{millis:03}Z", iso(secs)),
                "time": (end - start) * 1000.0,
                "request": { "method": "POST", "url": format!("https://{}/v1/chat/completions", e["endpoint"].as_str().unwrap()), "httpVersion": "HTTP/1.1", "cookies": [], "headers": [], "queryString": [], "headersSize": -1, "bodySize": 0 },
                "response": { "status": status, "statusText": "", "httpVersion": "HTTP/1.1", "cookies": [], "headers": [], "content": { "size": 0, "mimeType": "application/json" }, "redirectURL": "", "headersSize": -1, "bodySize": 0 },
                "cache": {},
                "timings": { "send": 0, "wait": (end - start) * 1000.0, "receive": 0 }
            })
        })
        .collect();
    serde_json::json!({ "log": { "version": "1.2", "creator": { "name": "test", "version": "1" }, "entries": har_entries } })
}

/// OTLP JSON spans of request-log entries.
fn to_otlp(entries: &[serde_json::Value]) -> serde_json::Value {
    let nanos = |s: f64| {
        format!(
            "{}",
            (1_796_117_400.0 + s) as u64 * 1_000_000_000 + ((s.fract()) * 1e9).round() as u64
        )
    };
    let spans: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| {
            let mut attributes = vec![
                serde_json::json!({ "key": "gen_ai.operation.name", "value": { "stringValue": "chat" } }),
                serde_json::json!({ "key": "server.address", "value": { "stringValue": e["endpoint"] } }),
            ];
            if let Some(status) = e["status"].as_u64() {
                attributes.push(serde_json::json!({ "key": "http.response.status_code", "value": { "intValue": status.to_string() } }));
            }
            if let Some(hit) = e["cache_hit"].as_bool() {
                let cached = if hit { "1536" } else { "0" };
                attributes.push(serde_json::json!({ "key": "gen_ai.usage.cache_read.input_tokens", "value": { "intValue": cached } }));
            }
            serde_json::json!({
                "traceId": "00000000000000000000000000000001",
                "spanId": "0000000000000001",
                "name": "chat",
                "kind": 3,
                "startTimeUnixNano": nanos(e["start_s"].as_f64().unwrap()),
                "endTimeUnixNano": nanos(e["end_s"].as_f64().unwrap()),
                "attributes": attributes,
                "status": { "code": if e["status"].is_null() { 2 } else { 0 } }
            })
        })
        .collect();
    serde_json::json!({ "resourceSpans": [ { "resource": { "attributes": [] }, "scopeSpans": [ { "scope": { "name": "test" }, "spans": spans } ] } ] })
}

/// `YYYY-MM-DDTHH:MM:SS` of Unix seconds (civil from days, Howard Hinnant's algorithm).
fn iso(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// An endpoint of the client's world that no log shows (a backup never used) is kept whole,
/// in the client's order, and reported as not identified.
#[test]
fn fit_cli_keeps_the_clients_unseen_endpoints_as_its_world_describes_them() {
    let dir = scratch_dir("fit-unseen");
    let primary = "[[endpoints]]\nid = \"primary\"\ncapacity = 8\nlatency = { median_s = 0.2 }\n\
                   failures = { error_rate = 0.0, storm_rate = 0.0 }\n";
    let head = "name = \"w\"\nsummary = \"w\"\njobs = 300\n";
    let backup = "[[endpoints]]\nid = \"backup\"\ncapacity = 3\nlatency = { median_s = 0.777 }\n";
    std::fs::write(dir.join("true.toml"), format!("{head}{primary}")).unwrap();
    std::fs::write(dir.join("client.toml"), format!("{head}{backup}{primary}")).unwrap();
    let path = |f: &str| dir.join(f).display().to_string();
    let o = simbench(&[
        "run",
        &path("true.toml"),
        "--seeds",
        "1",
        "--algorithms",
        "wait",
        "--request-log",
        &path("log.jsonl"),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = simbench(&[
        "fit",
        &path("log.jsonl"),
        "-o",
        &path("fit.toml"),
        "--client",
        &path("client.toml"),
        "--report",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = String::from_utf8_lossy(&o.stdout).into_owned();
    let unseen = report
        .split("not identified from the data")
        .nth(1)
        .unwrap_or("");
    assert!(unseen.contains("endpoints.backup"), "{report}");
    let fitted = std::fs::read_to_string(dir.join("fit.toml")).unwrap();
    let (b, p) = (
        fitted.find("id = \"backup\"").unwrap(),
        fitted.find("id = \"primary\"").unwrap(),
    );
    assert!(b < p, "the client's order:\n{fitted}");
    assert!(fitted.contains("median_s = 0.777"), "{fitted}");
    let o = simbench(&["validate", &path("fit.toml")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The multi_vendor world's incident — vendor_a's capacity to 30 %, its latency tripled and a
/// storm at 25 % errors, from 240 s to 480 s — is fitted as incidents of both its endpoints,
/// at their time, from three logs of one strategy.
#[test]
fn fit_cli_finds_the_capacity_latency_and_storm_incidents_of_a_world() {
    use simbench::world::Effect;
    let dir = scratch_dir("fit-incidents");
    let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/multi_vendor.toml");
    let mut logs = Vec::new();
    for seed in 20261129..20261132u64 {
        let log = dir.join(format!("{seed}.jsonl")).display().to_string();
        let o = simbench(&[
            "run",
            world.to_str().unwrap(),
            "--algorithms",
            "backoff",
            "--seeds",
            "3",
            "--request-log",
            &log,
            "--log-run",
            &format!("backoff:{seed}"),
            "--quiet",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        logs.push(log);
    }
    let fitted = dir.join("fitted.toml");
    let mut args = vec!["fit", "-o", fitted.to_str().unwrap(), "--quiet"];
    args.extend(logs.iter().map(String::as_str));
    let o = simbench(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let w = crate::request_log::load(&fitted);
    let text = std::fs::read_to_string(&fitted).unwrap();
    for id in ["a-east", "a-west"] {
        let e = w.endpoints().iter().position(|x| x.id == id).unwrap();
        let mine: Vec<_> = w
            .incidents()
            .iter()
            .filter(|i| i.scope == simbench::world::Scope::Listed(vec![e]))
            .collect();
        for i in &mine {
            assert!((i.start_s - 240.0).abs() < 5.0, "{id}: {i:?}\n{text}");
            assert!((i.end_s - 480.0).abs() < 10.0, "{id}: {i:?}\n{text}");
        }
        let find =
            |pick: &dyn Fn(&Effect) -> Option<f64>| mine.iter().find_map(|i| pick(&i.effect));
        let capacity = find(&|x| match x {
            Effect::Capacity(f) => Some(*f),
            _ => None,
        });
        let latency = find(&|x| match x {
            Effect::Latency(f) => Some(*f),
            _ => None,
        });
        let storm = find(&|x| match x {
            Effect::Storm(r) => *r,
            _ => None,
        });
        // 8 × 0.3 rounds to 2: any factor that rounds the same acts the same.
        let limit = capacity.map(|f| (8.0 * f).round());
        assert_eq!(limit, Some(2.0), "{id}:\n{text}");
        assert!(
            latency.is_some_and(|f| (f / 3.0 - 1.0).abs() < 0.1),
            "{id}:\n{text}"
        );
        assert!(
            storm.is_some_and(|r| (r - 0.25).abs() < 0.05),
            "{id}:\n{text}"
        );
    }
    // No incident on the vendor that had none.
    assert_eq!(w.incidents().len(), 6, "{text}");
    std::fs::remove_dir_all(dir).ok();
}

/// llm_two_vendors' limit binds only at the start of a log (the cycle's trough at t = 0, when
/// every worker starts), so the logs cannot tell its cycle: with `--client` the client world's
/// (the format's default) stands, since the logs do not contradict it; with `--logs-only` the
/// fitter's own guess is written, marked as not identified. `--logs-only` needs `--client`.
#[test]
fn fit_cli_keeps_the_clients_cycle_where_the_logs_cannot_tell_it() {
    let dir = scratch_dir("fit-prior");
    let world = crate::request_log::root().join("scenarios/llm_two_vendors.toml");
    let (log, _) = logged_run(&dir, Some(&world), "retry_after_aware");
    let fit = |extra: &[&str]| {
        let mut args = vec!["fit", log.to_str().unwrap(), "-o", "-", "--quiet"];
        args.extend(["--client", world.to_str().unwrap()]);
        args.extend_from_slice(extra);
        let out = simbench(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let doc: toml::Table = toml::from_str(&text).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("period_s"))
            .unwrap()
            .to_owned();
        (doc["cycle"].clone(), line)
    };
    let (cycle, line) = fit(&[]);
    assert_eq!(cycle["period_s"].as_float(), Some(120.0), "{line}");
    assert_eq!(cycle["trough"].as_float(), Some(0.35), "{line}");
    assert!(line.contains("the format's default"), "{line}");
    assert!(line.contains("which the logs do not contradict"), "{line}");
    let (_, own) = fit(&["--logs-only"]);
    assert!(!own.contains("contradict"), "{own}");
    let out = simbench(&["fit", log.to_str().unwrap(), "--logs-only"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--client"), "{err}");
    // The client world, or a base it extends, is an input: no output may overwrite it.
    let mine = dir.join("mine.toml");
    let base = dir.join("base.toml");
    std::fs::copy(&world, &base).unwrap();
    std::fs::write(&mine, "extends = \"base.toml\"\n").unwrap();
    for (output, flag, what) in [
        (&mine, "-o", "the scenario file"),
        (&base, "--report", "a base"),
    ] {
        let before = std::fs::read(output).unwrap();
        let out = simbench(&[
            "fit",
            log.to_str().unwrap(),
            "--client",
            mine.to_str().unwrap(),
            flag,
            output.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(what) && err.contains("refusing"), "{err}");
        assert_eq!(std::fs::read(output).unwrap(), before, "{flag}");
    }
    // One file is one run: named twice, it would count as two.
    let log = log.to_str().unwrap();
    let out = simbench(&["fit", log, log]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is given twice"), "{err}");
    // `-` reads the log from standard input: the same world but for the file's name.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_simbench"))
        .args(["fit", "-", "-o", "-", "--quiet"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let bytes = std::fs::read(log).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &bytes));
    let piped = child.wait_with_output().unwrap();
    assert!(piped.status.success());
    let from_file = simbench(&["fit", log, "-o", "-", "--quiet"]);
    let body = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .lines()
            .skip(1)
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(body(&piped.stdout), body(&from_file.stdout));
}

/// A prior the logs contradict does not stand: bursty's logs show its 120 s cycle over many
/// periods, so a client world that says 300 s with a shallow trough is overruled, and its
/// storm timing (a storm at every check, for two minutes) too.
#[test]
fn fit_cli_overrules_a_prior_the_logs_contradict() {
    let dir = scratch_dir("fit-wrong-prior");
    let world = crate::request_log::root().join("scenarios/bursty.toml");
    let (log, _) = logged_run(&dir, Some(&world), "wait");
    let text = std::fs::read_to_string(&world).unwrap();
    let wrong = text
        .replace("period_s = 120.0", "period_s = 300.0")
        .replace("trough = 0.35", "trough = 0.8")
        .replace("storm_rate = 0.08", "storm_rate = 1.0")
        .replace("storm_duration_s = 30.0", "storm_duration_s = 120.0");
    for key in ["period_s = 120.0", "trough = 0.35", "storm_rate = 0.08"] {
        assert!(text.contains(key), "{key}");
    }
    let client = dir.join("client.toml");
    std::fs::write(&client, wrong).unwrap();
    let out = simbench(&[
        "fit",
        log.to_str().unwrap(),
        "-o",
        "-",
        "--quiet",
        "--client",
        client.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fitted: toml::Table = toml::from_str(&String::from_utf8(out.stdout).unwrap()).unwrap();
    let period = fitted["cycle"]["period_s"].as_float().unwrap();
    assert!((period - 120.0).abs() < 6.0, "{period}");
    let fast = fitted["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"].as_str() == Some("fast-flaky"))
        .unwrap();
    let storm_rate = fast["failures"]["storm_rate"].as_float().unwrap();
    assert!(storm_rate < 0.5, "{storm_rate}");
}

/// A closed loop whose workers pause between jobs (a twentieth of a job's 0.52 s, within the
/// tenth the fit allows a closed loop's handoff): the fit reads it as closed and finds the
/// pause and whether it is fixed or exponential, and a loop without one writes none. The
/// breaker, which no log shows, is stated as assumed.
#[test]
fn fit_cli_finds_a_closed_loops_pause_between_jobs() {
    let dir = scratch_dir("fit-think");
    let world = dir.join("thinking.toml");
    let exponential = "think_s = 0.026\nthink = \"exponential\"";
    for (think, expect) in [
        ("think_s = 0.026", Some((0.026, "fixed"))),
        (exponential, Some((0.026, "exponential"))),
        ("", None),
    ] {
        let text = crate::open_loop::thinking(
            8,
            64,
            "{ median_s = 0.5, sigma = 0.3, tail_rate = 0.0 }",
            think,
            200.0,
        );
        std::fs::write(&world, text).unwrap();
        let (log, _) = logged_run(&dir, Some(&world), "wait");
        let (text, doc) = fitted_world(&log);
        assert_eq!(doc["concurrency"].as_integer(), Some(8), "{text}");
        let line = text.lines().find(|l| l.starts_with("concurrency")).unwrap();
        assert!(line.ends_with("(a closed loop)"), "{line}");
        let load = doc.get("load").and_then(|l| l.as_table());
        assert_eq!(load.and_then(|l| l.get("model")), None, "{text}");
        let think_s = load
            .and_then(|l| l.get("think_s"))
            .and_then(|t| t.as_float());
        match expect {
            // A fixed pause is its median, exact; exponential ones their mean, from draws.
            Some((want, shape)) => {
                let got = think_s.unwrap_or_else(|| panic!("no think_s: {text}"));
                let within = if shape == "fixed" { 1e-9 } else { 0.05 * want };
                assert!((got - want).abs() < within, "{got} against {want}");
                let written = load.and_then(|l| l.get("think")).and_then(|t| t.as_str());
                assert_eq!(written, Some(shape), "{text}");
            }
            None => assert_eq!(think_s, None, "{text}"),
        }
        let breaker = doc["breaker"].as_table().unwrap();
        assert_eq!(breaker["degrade_after"].as_integer(), Some(3));
        assert!(
            text.contains("degrade_after = 3  # not identified"),
            "{text}"
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A job the client's own queue held (a pacer, a limit's wait) arrives at its `arrived_s`, not
/// at its first request: a closed loop whose strategy holds jobs back is fitted as that closed
/// loop, without a pause between jobs (the wait read as think time) or an open loop (the waits
/// read as arrivals that follow no end). The fitted world simulates the wait again.
#[test]
fn fit_cli_reads_a_wait_in_the_clients_queue_as_the_clients_not_as_a_pause() {
    let dir = scratch_dir("fit-arrived");
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    for (world, algorithm, workers) in [
        ("llm_tpm_tier", "aimd", 32),
        ("llm_daily_quota", "budget_pacer", 4),
    ] {
        let path = scenarios.join(format!("{world}.toml"));
        let (log, entries) = logged_run(&dir, Some(&path), algorithm);
        let waited = entries
            .iter()
            .filter(|e| {
                let start = e["start_s"].as_f64().unwrap();
                e["arrived_s"].as_f64().is_some_and(|a| a < start)
            })
            .count();
        assert!(waited > 100, "{world}: only {waited} jobs waited");
        let (text, doc) = fitted_world(&log);
        assert_eq!(doc["concurrency"].as_integer(), Some(workers), "{text}");
        let line = text.lines().find(|l| l.starts_with("concurrency")).unwrap();
        assert!(line.ends_with("(a closed loop)"), "{world}: {line}");
        let load = doc.get("load").and_then(|l| l.as_table());
        for key in ["model", "think_s"] {
            assert_eq!(load.and_then(|l| l.get(key)), None, "{world}: {text}");
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

/// Vendors send whole-number `remaining` values: a limit hardly used (one or two of 500 at a
/// time) still shows its window, as the range the rounding leaves, whichever way it rounds. A
/// limit of 0 is left out and said so, never silently.
#[test]
fn fit_cli_reads_a_window_from_whole_number_remaining_values_and_says_what_it_leaves_out() {
    let dir = scratch_dir("fit-whole");
    let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/llm_tpm_tier.toml");
    let (_, entries) = logged_run(&dir, Some(&world), "wait");
    let rewritten = |round: fn(f64) -> f64, requests_limit: Option<f64>| {
        let path = dir.join("whole.jsonl");
        let lines: Vec<String> = entries
            .iter()
            .map(|e| {
                let mut e = e.clone();
                for h in e["ratelimit"].as_array_mut().into_iter().flatten() {
                    h["remaining"] = round(h["remaining"].as_f64().unwrap()).into();
                    if let Some(limit) = requests_limit.filter(|_| h["unit"] == "requests") {
                        h["limit"] = limit.into();
                        h["remaining"] = limit.into();
                    }
                }
                e.to_string()
            })
            .collect();
        std::fs::write(&path, lines.join("\n")).unwrap();
        path
    };
    let per_minute = "{ unit = \"requests\", limit = 500.0, per = \"minute\" }";
    for round in [f64::floor, f64::round, f64::ceil] {
        let log = rewritten(round, None);
        let (text, report) = fit_with_report(&log);
        assert!(text.contains(per_minute), "{text}");
        assert!(
            report.contains("whole-number remaining: windows of"),
            "{report}"
        );
    }
    let log = rewritten(f64::floor, Some(0.0));
    let (text, report) = fit_with_report(&log);
    assert!(!text.contains("unit = \"requests\""), "{text}");
    assert!(
        text.contains("# the headers publish a requests limit of 0, left out:"),
        "{text}"
    );
    assert!(report.contains("(requests limit left out)"), "{report}");
    std::fs::remove_dir_all(dir).ok();
}

/// A request bucket is written only when it decides the log better than no bucket at all.
/// Without its rate-limit headers, `llm_tpm_tier`'s log under `aimd` has a few refusals from a
/// token limit, which no request bucket explains: it is left out, and said so. Under `wait`
/// the refusals are many and a bucket does explain most of them: it is written.
#[test]
fn fit_cli_writes_a_request_bucket_only_when_it_explains_the_refusals_better_than_none() {
    let dir = scratch_dir("fit-bucket-null");
    let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/llm_tpm_tier.toml");
    for (algorithm, written) in [("aimd", false), ("wait", true)] {
        let (_, entries) = logged_run(&dir, Some(&world), algorithm);
        let lines: Vec<String> = entries
            .iter()
            .map(|e| {
                let mut e = e.clone();
                e.as_object_mut().unwrap().remove("ratelimit");
                e.to_string()
            })
            .collect();
        let log = dir.join("headerless.jsonl");
        std::fs::write(&log, lines.join("\n")).unwrap();
        let (text, report) = fit_with_report(&log);
        assert!(report.contains("quota refusals"), "{report}");
        assert_eq!(text.contains("[endpoints.rate_limit]"), written, "{text}");
        let left_out = "quota refusals that no published limit explains are not fitted";
        assert_eq!(text.contains(left_out), !written, "{text}");
        assert_eq!(report.contains("(left out)"), !written, "{report}");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// Request sizes cross a `--client` boundary either way: a client world without `[tokens]`
/// keeps the logs' sizes (and their `max_tokens`), and logs without token counts take the
/// client world's `[tokens]`, which its token limits and prices need. Both fitted worlds load.
#[test]
fn fit_cli_carries_request_sizes_across_a_client_that_disagrees_about_tokens() {
    let dir = scratch_dir("fit-tokens");
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let cases = [
        ("llm_tpm_tier.toml", "bursty.toml", "max_tokens ="),
        ("bursty.toml", "llm_tpm_tier.toml", "max_tokens = 1024"),
    ];
    for (logged, client, expect) in cases {
        let (log, _) = logged_run(&dir, Some(&scenarios.join(logged)), "wait");
        let out = dir.join("fit.toml");
        let o = simbench(&[
            "fit",
            log.to_str().unwrap(),
            "--client",
            scenarios.join(client).to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ]);
        assert!(
            o.status.success(),
            "{logged} with {client}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let fitted = std::fs::read_to_string(&out).unwrap();
        let tokens = fitted.split("[tokens]").nth(1).unwrap_or("");
        assert!(tokens.contains(expect), "{logged} with {client}:\n{fitted}");
        let o = simbench(&["validate", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

/// A fitted world that would not load is not written: here the client's trace load names its
/// log relative to itself, which the fitted world in another folder cannot reach. Next to the
/// client the same fit loads, and a base's `jobs` that the trace overrules is not copied.
#[test]
fn fit_cli_never_writes_a_world_that_does_not_load() {
    let dir = scratch_dir("fit-unloadable");
    let (log, _) = logged_run(&dir, None, "wait");
    let bursty = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/bursty.toml");
    let client = dir.join("client.toml");
    std::fs::write(
        &client,
        format!(
            "extends = {:?}\n[load]\nmodel = \"trace\"\ntrace = \"run.jsonl\"\n",
            bursty.display().to_string()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("elsewhere")).unwrap();
    let fit = |out: &Path| {
        simbench(&[
            "fit",
            log.to_str().unwrap(),
            "--client",
            client.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ])
    };
    let away = dir.join("elsewhere/fit.toml");
    let o = fit(&away);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot read the trace"), "{stderr}");
    assert!(
        stderr.contains("does not load, so it was not written"),
        "{stderr}"
    );
    assert!(!away.exists(), "nothing written");
    let beside = dir.join("fit.toml");
    let o = fit(&beside);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let fitted = std::fs::read_to_string(&beside).unwrap();
    assert!(!fitted.lines().any(|l| l.starts_with("jobs =")), "{fitted}");
}

/// Headers that publish a token limit, in a log without token counts (a HAR capture has no
/// bodies): the token limit is left out and said so, the request limit kept; the fit used to
/// write nothing ("a limit counted in tokens needs [tokens]").
#[test]
fn fit_cli_leaves_out_a_token_limit_the_log_has_no_token_counts_for() {
    let dir = scratch_dir("fit-token-headers");
    let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/llm_tpm_tier.toml");
    let (_, entries) = logged_run(&dir, Some(&world), "wait");
    let bare: Vec<String> = entries
        .iter()
        .map(|e| {
            let mut e = e.clone();
            let fields = e.as_object_mut().unwrap();
            for k in ["input_tokens", "output_tokens", "max_tokens", "ttft_s"] {
                fields.remove(k);
            }
            e.to_string()
        })
        .collect();
    assert!(bare.iter().any(|e| e.contains("\"unit\":\"tokens\"")));
    let log = dir.join("bare.jsonl");
    std::fs::write(&log, bare.join("\n") + "\n").unwrap();
    let (text, doc) = fitted_world(&log);
    assert!(doc.get("tokens").is_none(), "{text}");
    assert!(
        text.contains("# the headers publish a tokens limit, left out:"),
        "{text}"
    );
    let limits = doc["endpoints"][0]["limits"].as_array().expect("limits");
    assert!(
        limits
            .iter()
            .all(|l| l["unit"].as_str() == Some("requests")),
        "{limits:?}"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// A client-side log times each request from before it left to after its answer came back:
/// every start a little early, every end a little late (up to 20 µs each here), so a slot the
/// server freed looks busy past the next send. The fit reads that round trip off the
/// refusals (which the server answers at once) and finds the same capacity, cycle and bucket
/// as from the exact log; it used to lose the cycle and write a bucket of a few requests.
#[test]
fn fit_cli_finds_the_same_limits_in_a_client_side_log_as_in_the_servers() {
    let dir = scratch_dir("fit-client-side");
    let (exact, entries) = logged_run(&dir, None, "backoff");
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut unit = || {
        // A fixed xorshift stream: the test's logs are the same on every machine.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    // Each request sent `early` before the server saw it and answered `late` after.
    let client_log = |name: &str, noise: &mut dyn FnMut() -> (f64, f64)| {
        let mut text = String::new();
        for mut e in entries.clone() {
            let (early, late) = noise();
            let start = e["start_s"].as_f64().unwrap() - early;
            let end = e["end_s"].as_f64().unwrap() + late;
            e["start_s"] = start.into();
            e["end_s"] = end.into();
            if e.get("arrived_s")
                .and_then(|a| a.as_f64())
                .is_some_and(|a| a > start)
            {
                e["arrived_s"] = start.into();
            }
            text.push_str(&format!("{e}\n"));
        }
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    // Up to 20 µs of noise on every start and end.
    let jittered = client_log("client.jsonl", &mut || (unit() * 20e-6, unit() * 20e-6));
    // A real client's round trips: 0.2 to 14 ms (log-uniform), split at random between the
    // way out and the way back, as a loopback client against `simbench serve` measured them.
    let mut round_trip = || {
        let rtt = 0.2e-3 * 70f64.powf(unit());
        let out = unit() * rtt;
        (out, rtt - out)
    };
    let far = client_log("far.jsonl", &mut round_trip);
    let limits = |doc: &toml::Table| {
        let endpoints = doc["endpoints"].as_array().unwrap().iter().map(|e| {
            let (id, capacity) = (e["id"].to_string(), e["capacity"].to_string());
            let bucket = e.get("rate_limit").map(|b| b["per_window"].to_string());
            (id, capacity, bucket)
        });
        let endpoints: std::collections::BTreeSet<_> = endpoints.collect();
        (doc["cycle"].to_string(), endpoints)
    };
    // What the provider admits at the cycle's peak, per endpoint: the pool times its weight.
    let admitted = |doc: &toml::Table| -> std::collections::BTreeMap<String, i64> {
        let endpoints = doc["endpoints"].as_array().unwrap().iter().map(|e| {
            let capacity = e["capacity"].as_integer().unwrap() as f64;
            let weight = e.get("weight").and_then(|w| w.as_float()).unwrap_or(1.0);
            (e["id"].to_string(), (capacity * weight).round() as i64)
        });
        endpoints.collect()
    };
    let (_, exact) = fitted_world(&exact);
    let (_, jittered) = fitted_world(&jittered);
    let (_, far) = fitted_world(&far);
    let period = exact["cycle"]["period_s"].as_float().unwrap();
    assert!(period > 0.0, "the exact log's cycle");
    assert_eq!(limits(&jittered), limits(&exact));
    let trough = |doc: &toml::Table| doc["cycle"]["trough"].as_float().unwrap();
    assert!(
        (far["cycle"]["period_s"].as_float().unwrap() - period).abs() < 0.01 * period
            && (trough(&far) - trough(&exact)).abs() < 0.01,
        "{} against {}",
        far["cycle"],
        exact["cycle"]
    );
    // slow-steady's limit (14) lies above the client's 12 workers, so only how deep the
    // troughs cut tells it: to within one under round trips of up to 14 ms. The others bind.
    let (far, exact) = (admitted(&far), admitted(&exact));
    assert_eq!(
        far.keys().collect::<Vec<_>>(),
        exact.keys().collect::<Vec<_>>()
    );
    for (id, limit) in &exact {
        let within = if id.contains("slow-steady") { 1 } else { 0 };
        assert!(
            (far[id] - limit).abs() <= within,
            "{id}: {} against {limit}",
            far[id]
        );
    }
}
