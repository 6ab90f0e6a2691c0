//! Trace-driven load (`[load] model = "trace"`): the arrival times of a real log's jobs, and
//! their request sizes where the log has them, replayed against every strategy; the strategies
//! then decide everything else (where to send, when to retry, what to give up).
//!
//! A job is what the log's `job` ids group (its arrival is its first request). A request
//! without a job id is a job of its own unless it is a retry (`attempt` > 1) or a hedge copy,
//! so a HAR file or an OTLP export, which carry no ids, replays one job per first attempt.
//! Times count from the log's first request and are divided by `speed`. This module only
//! parses bytes it is handed: the caller reads the file.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::fit::input::{Log, NONE_ID};
use crate::request_log::EntryOutcome;

/// The log formats a trace may be in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// The request log (JSON Lines).
    Jsonl,
    /// HAR 1.2.
    Har,
    /// OTLP JSON spans.
    Otlp,
}

impl LogFormat {
    /// A log's format from its file name, else from its first bytes.
    pub fn detect(name: &str, head: &[u8]) -> LogFormat {
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".har") {
            return LogFormat::Har;
        }
        if lower.ends_with(".jsonl") || lower.ends_with(".ndjson") {
            return LogFormat::Jsonl;
        }
        let head = String::from_utf8_lossy(&head[..head.len().min(1 << 16)]);
        if head.contains("\"resourceSpans\"") {
            LogFormat::Otlp
        } else if head.contains("\"log\"") && head.contains("\"entries\"") {
            LogFormat::Har
        } else {
            LogFormat::Jsonl
        }
    }
}

/// A call's key (job, step, call) and its logged (prompt, output) tokens.
type CallTokens = ((u32, u32, u32), (f64, f64));

/// The jobs of a trace, compiled: arrival times and the sizes the log recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    /// The log as named in the world (for reports).
    pub source: String,
    /// Arrival of each job \[s\], rising, the first at 0 (after `speed`).
    pub arrivals_s: Vec<f64>,
    /// Sizes per (job, step, call), sorted by key: prompt tokens, and output tokens (`NaN`
    /// when the log has none for that call, e.g. it never succeeded).
    sizes: Vec<CallTokens>,
    /// A digest of everything above but the name, for the world's fingerprint.
    pub digest: u64,
}

/// The trace, shared by every run of a world (a million arrivals are read once).
pub type SharedReplay = Arc<Replay>;

impl Replay {
    /// The memory it holds \[bytes\] (its vectors' contents and its name).
    pub fn bytes(&self) -> u64 {
        let arrivals = self.arrivals_s.len() * std::mem::size_of::<f64>();
        let sizes = self.sizes.len() * std::mem::size_of::<CallTokens>();
        (std::mem::size_of::<Replay>() + arrivals + sizes + self.source.len()) as u64
    }

    /// Jobs in the trace.
    pub fn jobs(&self) -> usize {
        self.arrivals_s.len()
    }

    /// Whether the log recorded any request size.
    pub fn has_sizes(&self) -> bool {
        !self.sizes.is_empty()
    }

    /// The logged prompt and output tokens of call `call` of step `step` of job `job`.
    pub fn size(&self, job: u32, step: u32, call: u32) -> Option<(f64, f64)> {
        let key = (job, step, call);
        self.sizes
            .binary_search_by(|(k, _)| k.cmp(&key))
            .ok()
            .map(|i| self.sizes[i].1)
    }

    /// The replay of `log` (one file's segment), its times counted from `origin_s` on the
    /// log's own clock (its first arrival when `None`) and divided by `speed`. `None` when the
    /// log holds no job.
    pub fn from_log(source: &str, log: &Log, speed: f64, origin_s: Option<f64>) -> Option<Replay> {
        let segment = log.segments.first()?;
        let requests = &segment.requests;
        // The segment's times count from its first arrival; `origin_s` moves that start.
        let lead = origin_s.map_or(0.0, |o| segment.origin - o);
        let mut index: BTreeMap<u64, u32> = BTreeMap::new();
        // Each job's arrival and id, in the order of their first requests.
        let mut jobs: Vec<(f64, u64)> = Vec::new();
        let mut sizes: BTreeMap<(u32, u32, u32), (f64, f64)> = BTreeMap::new();
        for r in requests {
            // A job the client's queue held arrived before its first request was sent.
            let arrival = if r.arrived.is_finite() {
                r.arrived
            } else {
                r.start
            };
            let job = if r.job != u64::MAX {
                *index.entry(r.job).or_insert_with(|| {
                    jobs.push((arrival, r.job));
                    (jobs.len() - 1) as u32
                })
            } else if r.hedge || (r.attempt != NONE_ID && r.attempt > 1) {
                continue; // a retry or a copy of a job already counted
            } else {
                jobs.push((arrival, u64::MAX));
                (jobs.len() - 1) as u32
            };
            let id = |x: u32| if x == NONE_ID { 0 } else { x };
            let entry = sizes
                .entry((job, id(r.step), id(r.call)))
                .or_insert((f64::NAN, f64::NAN));
            if entry.0.is_nan() && r.input.is_finite() {
                entry.0 = r.input;
            }
            if entry.1.is_nan() && r.outcome == EntryOutcome::Ok && r.output.is_finite() {
                entry.1 = r.output;
            }
        }
        if jobs.is_empty() {
            return None;
        }
        // Jobs are numbered in order of arrival (ties by their logged id, then by their first
        // request), which can differ from the order of their first requests when the client's
        // queue did not serve them first come, first served.
        let mut order: Vec<u32> = (0..jobs.len() as u32).collect();
        order.sort_by(|&a, &b| {
            let (x, y) = (jobs[a as usize], jobs[b as usize]);
            x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)).then(a.cmp(&b))
        });
        let mut renumber = vec![0u32; jobs.len()];
        for (new, &old) in order.iter().enumerate() {
            renumber[old as usize] = new as u32;
        }
        let arrivals_s: Vec<f64> = order
            .iter()
            .map(|&j| (jobs[j as usize].0 + lead) / speed)
            .collect();
        let mut sizes: Vec<_> = sizes
            .into_iter()
            .filter(|(_, (input, _))| input.is_finite())
            .map(|((job, step, call), size)| ((renumber[job as usize], step, call), size))
            .collect();
        sizes.sort_by_key(|(key, _)| *key);
        let digest = digest(&arrivals_s, &sizes);
        Some(Replay {
            source: source.to_owned(),
            arrivals_s,
            sizes,
            digest,
        })
    }
}

/// The compression a log's first bytes announce, named as the tool that undoes it: read as
/// text, such a file is only "not UTF-8".
pub fn compressed(head: &[u8]) -> Option<&'static str> {
    let magic: [(&[u8], &str); 4] = [
        (b"\x1f\x8b", "gzip"),
        (b"\x28\xb5\x2f\xfd", "zstd"),
        (b"\xfd7zXZ\x00", "xz"),
        (b"BZh", "bzip2"),
    ];
    (magic.into_iter())
        .find(|(bytes, _)| head.starts_with(bytes))
        .map(|(_, tool)| tool)
}

/// Reads a log of any [`LogFormat`] from its bytes into one segment. The error is one line:
/// the file, line, column and field where the format allows.
pub fn read_log(name: &str, bytes: &[u8]) -> Result<Log, String> {
    let mut log = Log::default();
    let mut segment = log.segment(name);
    let located = |e: crate::fit::input::LogError| e.to_string();
    if let Some(tool) = compressed(bytes) {
        return Err(format!(
            "{name}: the log is {tool}-compressed: decompress it first (`{tool} -dk FILE`) and \
             name the decompressed file"
        ));
    }
    match LogFormat::detect(name, bytes) {
        LogFormat::Jsonl => {
            crate::fit::input::read_jsonl(name, bytes, &mut |entry| segment.add(&entry))
                .map_err(located)?;
        }
        format => {
            let text = std::str::from_utf8(bytes)
                .map_err(|_| format!("{name}: the log is not UTF-8 text"))?;
            let entries = if format == LogFormat::Har {
                crate::fit::har::read(name, text)
            } else {
                crate::fit::otlp::read(name, text)
            }
            .map_err(located)?;
            for entry in &entries {
                segment.add(entry);
            }
        }
    }
    if segment.is_empty() {
        return Err(format!("{name}: the log holds no request"));
    }
    segment.finish();
    Ok(log)
}

fn digest(arrivals: &[f64], sizes: &[CallTokens]) -> u64 {
    let mut h = crate::rng::mix64(arrivals.len() as u64);
    for a in arrivals {
        h = crate::rng::mix64(h ^ a.to_bits());
    }
    for ((job, step, call), (input, output)) in sizes {
        let key = (u64::from(*job) << 32) ^ (u64::from(*step) << 16) ^ u64::from(*call);
        h = crate::rng::mix64(h ^ key);
        h = crate::rng::mix64(h ^ input.to_bits());
        h = crate::rng::mix64(h ^ output.to_bits());
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_log::Entry;

    fn entry(json: &str) -> Entry {
        serde_json::from_str(json).expect("a valid entry")
    }

    /// Jobs are grouped by id and arrive at their first request; without ids a retry is not
    /// a new job; sizes are the first prompt and the successful output.
    #[test]
    fn jobs_arrive_at_their_first_request_with_their_logged_sizes() {
        let mut log = Log::default();
        log.push_segment(
            "t.jsonl",
            [
                r#"{"start_s":100.0,"end_s":101.0,"endpoint":"a","outcome":"rate_limited","status":429,"input_tokens":50,"job":7,"step":0,"attempt":1,"call":0}"#,
                r#"{"start_s":102.0,"end_s":103.0,"endpoint":"a","outcome":"ok","status":200,"input_tokens":50,"output_tokens":20,"job":7,"step":0,"attempt":2,"call":0}"#,
                r#"{"start_s":100.5,"end_s":101.0,"endpoint":"a","outcome":"ok","status":200,"job":9,"step":0,"attempt":1,"call":0}"#,
                r#"{"start_s":104.0,"end_s":105.0,"endpoint":"a","outcome":"ok","status":200}"#,
                r#"{"start_s":106.0,"end_s":107.0,"endpoint":"a","outcome":"ok","status":200,"attempt":2}"#,
            ]
            .map(entry),
        );
        let replay = Replay::from_log("t.jsonl", &log, 2.0, None).expect("jobs");
        assert_eq!(replay.arrivals_s, vec![0.0, 0.25, 2.0]);
        assert_eq!(replay.size(0, 0, 0), Some((50.0, 20.0)));
        assert_eq!(replay.size(1, 0, 0), None, "no tokens logged");
        assert!(replay.has_sizes());
        let same = Replay::from_log("other name", &log, 2.0, None).expect("jobs");
        assert_eq!(replay.digest, same.digest);
        let faster = Replay::from_log("t.jsonl", &log, 4.0, None).expect("jobs");
        assert_ne!(replay.digest, faster.digest);
    }

    /// A job the client's queue held arrives at its `arrived_s`, and jobs are numbered in order
    /// of arrival even when the queue sent them in another order; the origin is the earliest
    /// arrival.
    #[test]
    fn queued_jobs_arrive_when_they_arrived_not_when_they_were_sent() {
        let mut log = Log::default();
        log.push_segment(
            "q.jsonl",
            [
                r#"{"start_s":10.0,"end_s":11.0,"endpoint":"a","outcome":"ok","input_tokens":5,"job":4,"step":0,"attempt":1,"call":0}"#,
                r#"{"start_s":12.0,"arrived_s":9.0,"end_s":13.0,"endpoint":"a","outcome":"ok","input_tokens":7,"job":3,"step":0,"attempt":1,"call":0}"#,
            ]
            .map(entry),
        );
        let replay = Replay::from_log("q.jsonl", &log, 1.0, None).expect("jobs");
        assert_eq!(replay.arrivals_s, vec![0.0, 1.0]);
        assert_eq!(replay.size(0, 0, 0).unwrap().0, 7.0, "job 3 arrived first");
        assert_eq!(replay.size(1, 0, 0).unwrap().0, 5.0);
    }

    #[test]
    fn formats_are_told_by_name_then_content() {
        assert_eq!(LogFormat::detect("x.HAR", b"{}"), LogFormat::Har);
        assert_eq!(
            LogFormat::detect("x.json", b"{\"resourceSpans\": []}"),
            LogFormat::Otlp
        );
        assert_eq!(
            LogFormat::detect("x.json", b"{\"log\": {\"entries\": []}}"),
            LogFormat::Har
        );
        assert_eq!(
            LogFormat::detect("x.log", b"{\"start_s\":0}"),
            LogFormat::Jsonl
        );
    }

    #[test]
    fn a_compressed_log_is_named_by_its_tool() {
        assert_eq!(compressed(b"\x1f\x8b\x08\x00"), Some("gzip"));
        assert_eq!(compressed(b"\x28\xb5\x2f\xfd\x00"), Some("zstd"));
        assert_eq!(compressed(b"{\"start_s\":0}"), None);
        let error = read_log("t.jsonl.gz", b"\x1f\x8b\x08\x00\x00").unwrap_err();
        assert!(
            error.starts_with("t.jsonl.gz: the log is gzip-compressed"),
            "{error}"
        );
    }
}
