//! One run in the Trace Event Format (the JSON that Perfetto and `chrome://tracing` open), for
//! `simbench trace`.
//!
//! Two processes: `endpoints`, a track (thread) per endpoint holding a slice per request sent
//! to it, coloured by outcome, and its breaker changes as instant events; `workers`, a track
//! per worker (a closed loop's worker, an open loop's slot) holding the same requests and, in
//! the gaps between them, what the worker was waiting for: a retry (the next request is a
//! later attempt of the same step) or a lease and its next call. Incidents are global instant
//! events at their start and end. Times are microseconds of simulated time.
//!
//! Bounded: at most `max_requests` requests are written (the first ones sent); beyond, the
//! rest are left out and `otherData` says how many, so a viewer never meets a file it cannot
//! load.

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::harness::TraceRecord;
use crate::recorder::Change;
use crate::request_log::{self, EntryOutcome};
use crate::world::World;

/// Process ids of the two groups of tracks.
const ENDPOINTS: u32 = 1;
const WORKERS: u32 = 2;

/// What the export holds, for the caller to report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    /// Requests written as slices (on the endpoint tracks).
    pub requests: usize,
    /// Requests left out by the bound.
    pub left_out: usize,
}

/// Writes the run of `algorithm` (seed `seed`) on `world`, its requests `trace` and its breaker
/// `changes`, as one Trace Event Format object.
pub fn write(
    world: &World,
    run: (&str, u64),
    trace: &[TraceRecord],
    changes: &[Change],
    max_requests: usize,
    out: &mut dyn Write,
) -> io::Result<Written> {
    let kept = &trace[..trace.len().min(max_requests)];
    let written = Written {
        requests: kept.len(),
        left_out: trace.len() - kept.len(),
    };
    let mut events = tracks(world, kept);
    for record in kept {
        events.extend(request_slices(world, record));
    }
    events.extend(waits(kept));
    // Changes after the last request written would sit on an empty stretch of the tracks.
    let until = if written.left_out > 0 {
        kept.iter().map(|r| r.end_s).fold(0.0, f64::max)
    } else {
        f64::INFINITY
    };
    events.extend(
        changes
            .iter()
            .filter(|c| c.at_s <= until)
            .map(|c| breaker_event(world, c)),
    );
    events.extend(incident_events(world));
    let (algorithm, seed) = run;
    let doc = json!({
        "displayTimeUnit": "ms",
        "otherData": {
            "scenario": world.name(),
            "algorithm": algorithm,
            "seed": seed,
            "requests": trace.len(),
            "requests_written": written.requests,
            "requests_left_out": written.left_out,
            "time": "simulated seconds, as microseconds",
        },
        "traceEvents": events,
    });
    crate::report::json::write_compact(out, &doc)?;
    Ok(written)
}

/// Names and orders the processes and threads.
fn tracks(world: &World, kept: &[TraceRecord]) -> Vec<Value> {
    let meta = |pid: u32, tid: Option<u32>, name: &str, value: Value| {
        let mut e = json!({ "ph": "M", "pid": pid, "name": name, "args": value });
        if let Some(tid) = tid {
            e["tid"] = tid.into();
        }
        e
    };
    let mut out = vec![
        meta(
            ENDPOINTS,
            None,
            "process_name",
            json!({ "name": "endpoints" }),
        ),
        meta(
            ENDPOINTS,
            None,
            "process_sort_index",
            json!({ "sort_index": 0 }),
        ),
        meta(WORKERS, None, "process_name", json!({ "name": "workers" })),
        meta(
            WORKERS,
            None,
            "process_sort_index",
            json!({ "sort_index": 1 }),
        ),
    ];
    for (e, endpoint) in world.endpoints().iter().enumerate() {
        out.push(meta(
            ENDPOINTS,
            Some(e as u32),
            "thread_name",
            json!({ "name": endpoint.id }),
        ));
    }
    let workers = kept.iter().map(|r| r.worker + 1).max().unwrap_or(0);
    for w in 0..workers {
        out.push(meta(
            WORKERS,
            Some(w),
            "thread_name",
            json!({ "name": format!("worker {w}") }),
        ));
    }
    out
}

/// The colour a viewer gives an outcome (names from the format's reserved palette).
fn colour(outcome: EntryOutcome) -> &'static str {
    match outcome {
        EntryOutcome::Ok => "good",
        EntryOutcome::Error => "bad",
        EntryOutcome::RateLimited => "yellow",
        EntryOutcome::Overloaded => "olive",
        EntryOutcome::Rejected => "terrible",
        EntryOutcome::ClientTimeout => "terrible",
        EntryOutcome::Cancelled => "grey",
        EntryOutcome::Unfinished => "black",
    }
}

fn micros(s: f64) -> f64 {
    (s * 1e6 * 1000.0).round() / 1000.0
}

/// A request's slice on its endpoint's track and on its worker's.
fn request_slices(world: &World, r: &TraceRecord) -> [Value; 2] {
    let entry = request_log::entry(world, r);
    let name = serde_json::to_value(entry.outcome).expect("an outcome is a string");
    let mut args = json!({
        "job": r.job,
        "step": r.step,
        "attempt": r.attempt,
        "call": r.call,
        "worker": r.worker,
    });
    if let Some(status) = entry.status {
        args["status"] = status.into();
    }
    if r.hedge {
        args["hedge"] = true.into();
    }
    if let Some(after) = r.retry_after_s {
        args["retry_after_s"] = after.into();
    }
    let slice = |pid: u32, tid: u32, cat: &str| {
        json!({
            "ph": "X",
            "pid": pid,
            "tid": tid,
            "ts": micros(r.at_s),
            "dur": micros(r.end_s - r.at_s),
            "name": name,
            "cat": cat,
            "cname": colour(entry.outcome),
            "args": args,
        })
    };
    [
        slice(ENDPOINTS, r.resource as u32, "request"),
        slice(WORKERS, r.worker, "request.worker"),
    ]
}

/// The gaps on each worker's track between one of its requests ending and its next being
/// sent: a retry's wait, or the wait for a lease and the next call.
fn waits(kept: &[TraceRecord]) -> Vec<Value> {
    let mut last: Vec<Option<&TraceRecord>> = Vec::new();
    let mut out = Vec::new();
    for r in kept.iter().filter(|r| !r.hedge) {
        let w = r.worker as usize;
        if last.len() <= w {
            last.resize(w + 1, None);
        }
        if let Some(prev) = last[w]
            && r.at_s > prev.end_s
        {
            let retry = prev.job == r.job && prev.step == r.step && r.attempt > prev.attempt;
            out.push(json!({
                "ph": "X",
                "pid": WORKERS,
                "tid": r.worker,
                "ts": micros(prev.end_s),
                "dur": micros(r.at_s - prev.end_s),
                "name": if retry { "retry wait" } else { "wait" },
                "cat": "wait",
                "cname": if retry { "rail_idle" } else { "rail_animation" },
                "args": { "job": r.job, "step": r.step, "attempt": r.attempt },
            }));
        }
        last[w] = Some(r);
    }
    out
}

fn breaker_event(world: &World, c: &Change) -> Value {
    let state = crate::report::timeseries::state_name(c.state);
    json!({
        "ph": "i",
        "s": "t",
        "pid": ENDPOINTS,
        "tid": c.endpoint,
        "ts": micros(c.at_s),
        "name": format!("breaker: {state}"),
        "cat": "breaker",
        "args": { "endpoint": world.endpoints()[c.endpoint].id, "state": state },
    })
}

/// Every incident's start and (when it ends) end, as global instant events.
fn incident_events(world: &World) -> Vec<Value> {
    let mut out = Vec::new();
    for incident in world.incidents() {
        let what = incident.effect.describe();
        let ids: Vec<&str> = incident
            .endpoints
            .iter()
            .map(|&e| world.endpoints()[e].id.as_str())
            .collect();
        let mut at = |t: f64, edge: &str| {
            out.push(json!({
                "ph": "i",
                "s": "g",
                "pid": ENDPOINTS,
                "tid": 0,
                "ts": micros(t),
                "name": format!("{what} {edge}: {}", ids.join(", ")),
                "cat": "incident",
            }));
        };
        at(incident.start_s, "starts");
        if incident.end_s.is_finite() {
            at(incident.end_s, "ends");
        }
    }
    out
}
