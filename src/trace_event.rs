//! One run in the Trace Event Format (the JSON that Perfetto and `chrome://tracing` open), for
//! `simbench trace`.
//!
//! A process per endpoint, its tracks (threads) holding a slice per request sent to it,
//! coloured by outcome, and its breaker changes as instant events; a process `workers`, a track
//! per worker (a closed loop's worker, an open loop's slot) holding the same requests and, in
//! the gaps between them, what the worker was waiting for: a retry (the next request is a
//! later attempt of the same step) or a lease and its next call. Incidents are global instant
//! events at their start and end. Times are microseconds of simulated time, to the nanosecond
//! (in a run too long for that, to a coarser tick: [`Clock`]).
//!
//! A viewer draws a track's slices as a stack, so slices on one track must nest; requests in
//! flight together never do. Each endpoint and worker therefore gets as many tracks (lanes) as
//! it had requests in flight at once: a slice goes on the first of its lanes free at its start
//! (an endpoint's first lane, a worker's first for its own requests and the waits between them,
//! its later ones for hedge copies). Ends and starts are compared in whole ticks, as written,
//! so no two slices of a track overlap even by a rounding.
//!
//! Bounded: at most `max_requests` requests are written (the first ones sent); beyond, the
//! rest are left out and `otherData` says how many, so a viewer never meets a file it cannot
//! load.

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::harness::{Outcome, TraceRecord};
use crate::recorder::Change;
use crate::request_log::{self, EntryOutcome};
use crate::world::{Incident, World};

/// What the export holds, for the caller to report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    /// Requests written as slices (on the endpoint tracks).
    pub requests: usize,
    /// Requests left out by the bound.
    pub left_out: u64,
    /// Breaker changes written (those after the last written request are left out with it).
    pub changes: usize,
}

/// The run a trace shows: its algorithm, seed and how it ended.
pub struct Traced<'a> {
    /// Algorithm name.
    pub algorithm: &'a str,
    /// Run seed.
    pub seed: u64,
    /// How the run ended.
    pub outcome: &'a Outcome,
    /// Requests sent after the last one recorded (the run stopped recording at the limit).
    pub omitted: u64,
}

/// What the export holds, before any of it is written: the caller reports it whether or not
/// the file is written.
/// `omitted` requests were sent after the recorded `trace`.
pub fn count(
    trace: &[TraceRecord],
    omitted: u64,
    changes: &[Change],
    max_requests: usize,
) -> Written {
    let kept = &trace[..trace.len().min(max_requests)];
    let all = trace.len() as u64 + omitted;
    let until = last_end(kept, all);
    Written {
        requests: kept.len(),
        left_out: all - kept.len() as u64,
        changes: changes.iter().filter(|c| c.at_s <= until).count(),
    }
}

/// Changes after the last request written would sit on an empty stretch of the tracks: with
/// requests left out, changes up to the last written one's end are written.
fn last_end(kept: &[TraceRecord], all: u64) -> f64 {
    if (kept.len() as u64) < all {
        kept.iter().map(|r| r.end_s).fold(0.0, f64::max)
    } else {
        f64::INFINITY
    }
}

/// Writes `run` on `world`, its requests `trace` and its breaker `changes`, as one Trace Event
/// Format object.
pub fn write(
    world: &World,
    run: &Traced<'_>,
    trace: &[TraceRecord],
    changes: &[Change],
    max_requests: usize,
    out: &mut dyn Write,
) -> io::Result<Written> {
    let written = count(trace, run.omitted, changes, max_requests);
    let kept = &trace[..written.requests];
    let until = last_end(kept, trace.len() as u64 + run.omitted);
    let shown = || changes.iter().filter(|c| c.at_s <= until);
    let latest = latest(kept, shown().map(|c| c.at_s));
    let clock = Clock::for_latest(latest);
    let layout = Layout::of(world, kept, clock);
    let mut other = json!({
        "scenario": world.name(),
        "algorithm": run.algorithm,
        "seed": run.seed,
        "outcome": run.outcome.name(),
        "requests": trace.len() as u64 + run.omitted,
        "requests_written": written.requests,
        "requests_left_out": written.left_out,
        "time": "simulated seconds, as microseconds",
        "time_resolution_ns": clock.tick_ns,
    });
    let later = incident_edges(world).filter(|&(t, _)| t > latest).count();
    if later > 0 {
        other["incident_edges_after_the_trace"] = later.into();
    }
    if let Some(reason) = run.outcome.reason() {
        other["reason"] = reason.into();
    }
    // The object's keys in their sorted order, and the events written one at a time as they
    // are made: a trace of 200,000 requests held as one JSON tree took gigabytes.
    let mut out = io::BufWriter::with_capacity(64 * 1024, out);
    out.write_all(b"{\"displayTimeUnit\":\"ms\",\"otherData\":")?;
    serde_json::to_writer(&mut out, &other)?;
    out.write_all(b",\"traceEvents\":[")?;
    let mut first = true;
    let mut event = |value: &Value| -> io::Result<()> {
        if !std::mem::take(&mut first) {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut out, value).map_err(io::Error::from)
    };
    for track in layout.tracks(world) {
        event(&track)?;
    }
    for (i, record) in kept.iter().enumerate() {
        for slice in request_slices(world, record, layout.tracks_of(i, record), clock) {
            event(&slice)?;
        }
    }
    for wait in &layout.waits {
        event(&wait_slice(wait, &layout, clock))?;
    }
    for change in shown() {
        event(&breaker_event(world, change, clock))?;
    }
    for incident in incident_events(world, clock, latest) {
        event(&incident)?;
    }
    out.write_all(b"]}\n")?;
    out.flush()?;
    Ok(written)
}

/// The latest instant of the run the trace shows \[s\]: a request's end or a breaker change.
/// Incidents are shown up to it, not after: an incident scripted long after the run would
/// stretch the viewer's timeline until the requests could not be seen.
fn latest(kept: &[TraceRecord], changes: impl Iterator<Item = f64>) -> f64 {
    kept.iter()
        .map(|r| r.end_s)
        .chain(changes)
        .fold(0.0, f64::max)
}

/// Integers a viewer's doubles hold exactly (2^53).
const EXACT: f64 = 9_007_199_254_740_992.0;

/// The whole ticks of simulated time a trace is written in, and its ends compared in. A
/// viewer reads times as doubles, which hold whole nanoseconds only up to 2^53 of them (104
/// days): a trace that reaches past that is written in whole microseconds, or in a power of
/// two of them, so that every time, and every start plus duration, is exact.
#[derive(Clone, Copy)]
struct Clock {
    tick_ns: u64,
}

impl Clock {
    /// The finest clock that holds `latest_s` exactly.
    fn for_latest(latest_s: f64) -> Clock {
        let ns = latest_s * 1e9;
        let mut tick_ns = 1;
        if ns >= EXACT {
            tick_ns = 1000;
            while ns / tick_ns as f64 >= EXACT {
                tick_ns *= 2;
            }
        }
        Clock { tick_ns }
    }

    /// Simulated seconds in whole ticks.
    fn ticks(self, s: f64) -> i64 {
        (s * 1e9 / self.tick_ns as f64).round() as i64
    }

    /// Ticks as the format's microseconds.
    fn micros(self, ticks: i64) -> f64 {
        if self.tick_ns == 1 {
            ticks as f64 / 1000.0
        } else {
            ticks as f64 * (self.tick_ns / 1000) as f64
        }
    }
}

/// A span of simulated time in ticks.
#[derive(Clone, Copy)]
struct Span {
    start: i64,
    end: i64,
}

impl Span {
    fn of(at_s: f64, end_s: f64, clock: Clock) -> Span {
        let start = clock.ticks(at_s);
        Span {
            start,
            end: clock.ticks(end_s).max(start),
        }
    }
}

/// The lanes of one endpoint or worker: when each is next free.
#[derive(Default)]
struct Lanes {
    free_at: Vec<i64>,
}

impl Lanes {
    /// The first lane from `from` on that is free at the span's start; a new one if none is.
    fn place(&mut self, span: Span, from: usize) -> usize {
        if self.free_at.len() < from {
            self.free_at.resize(from, i64::MIN);
        }
        let lane = (from..self.free_at.len())
            .find(|&l| self.free_at[l] <= span.start)
            .unwrap_or_else(|| {
                self.free_at.push(i64::MIN);
                self.free_at.len() - 1
            });
        self.free_at[lane] = span.end;
        lane
    }

    /// Lanes in use, at least one (an endpoint or worker gets its first track even when empty).
    fn count(&self) -> usize {
        self.free_at.len().max(1)
    }
}

/// A worker's wait between two of its requests.
struct Wait {
    worker: u32,
    /// Its lane among the worker's (set by [`Layout::of`]).
    lane: usize,
    span: Span,
    retry: bool,
    job: u32,
    step: u32,
    attempt: u32,
}

/// A slice of a worker's tracks: a request (its index) or a wait (its index).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Slice {
    Request(usize),
    Wait(usize),
}

/// Which track each slice goes on, and the tracks.
struct Layout {
    /// Per request written: its endpoint lane and its worker lane.
    lanes: Vec<(usize, usize)>,
    /// Lanes per endpoint.
    endpoint_lanes: Vec<usize>,
    /// Per worker, the thread id of its first lane; the last entry is the total.
    worker_first_tid: Vec<usize>,
    /// The gaps between a worker's own requests.
    waits: Vec<Wait>,
}

impl Layout {
    fn of(world: &World, kept: &[TraceRecord], clock: Clock) -> Layout {
        let spans: Vec<Span> = kept
            .iter()
            .map(|r| Span::of(r.at_s, r.end_s, clock))
            .collect();
        // Placed in order of start (then end), which is what makes first-free lanes as few as
        // the most slices in flight at once.
        let mut order: Vec<usize> = (0..kept.len()).collect();
        order.sort_by_key(|&i| (spans[i].start, spans[i].end, i));
        let mut endpoints: Vec<Lanes> =
            world.endpoints().iter().map(|_| Lanes::default()).collect();
        let mut lanes = vec![(0, 0); kept.len()];
        for &i in &order {
            lanes[i].0 = endpoints[kept[i].resource].place(spans[i], 0);
        }
        let worker_count = kept
            .iter()
            .map(|r| r.worker as usize + 1)
            .max()
            .unwrap_or(0);
        let mut workers: Vec<Lanes> = (0..worker_count).map(|_| Lanes::default()).collect();
        // A worker's own requests and the waits between them take its first lane; hedge copies
        // the later ones. Waits exactly fill the gaps, so they go through the same lanes.
        let mut waits = waits(kept, clock);
        let mut items: Vec<(Span, usize, Slice)> = order
            .iter()
            .map(|&i| (spans[i], kept[i].worker as usize, Slice::Request(i)))
            .chain(
                waits
                    .iter()
                    .enumerate()
                    .map(|(k, w)| (w.span, w.worker as usize, Slice::Wait(k))),
            )
            .collect();
        items.sort_by_key(|&(span, _, slice)| (span.start, span.end, slice));
        for (span, worker, slice) in items {
            match slice {
                Slice::Request(i) => {
                    lanes[i].1 = workers[worker].place(span, usize::from(kept[i].hedge));
                }
                Slice::Wait(k) => waits[k].lane = workers[worker].place(span, 0),
            }
        }
        let mut worker_first_tid = vec![0];
        for w in &workers {
            worker_first_tid.push(worker_first_tid.last().copied().unwrap_or(0) + w.count());
        }
        Layout {
            lanes,
            endpoint_lanes: endpoints.iter().map(Lanes::count).collect(),
            worker_first_tid,
            waits,
        }
    }

    /// The process of the workers, after the endpoints'.
    fn workers_pid(&self) -> usize {
        self.endpoint_lanes.len() + 1
    }

    /// Request `i` (`r`)'s (pid, tid) on its endpoint and on its worker.
    fn tracks_of(&self, i: usize, r: &TraceRecord) -> [(usize, usize); 2] {
        let (endpoint_lane, worker_lane) = self.lanes[i];
        [
            (endpoint_pid(r.resource), endpoint_lane),
            (self.workers_pid(), self.worker_tid(r.worker, worker_lane)),
        ]
    }

    /// The thread id of a worker's lane.
    fn worker_tid(&self, worker: u32, lane: usize) -> usize {
        self.worker_first_tid[worker as usize] + lane
    }

    /// Names and orders the processes and threads.
    fn tracks(&self, world: &World) -> Vec<Value> {
        let mut out = Vec::new();
        let process = |pid: usize, name: String, sort: usize, out: &mut Vec<Value>| {
            out.push(
                json!({ "ph": "M", "pid": pid, "name": "process_name", "args": { "name": name } }),
            );
            out.push(json!({ "ph": "M", "pid": pid, "name": "process_sort_index", "args": { "sort_index": sort } }));
        };
        let thread = |pid: usize, tid: usize, name: String| {
            [
                json!({ "ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": { "name": name } }),
                json!({ "ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index", "args": { "sort_index": tid } }),
            ]
        };
        for (e, endpoint) in world.endpoints().iter().enumerate() {
            let pid = endpoint_pid(e);
            process(pid, format!("endpoint {}", endpoint.id), e, &mut out);
            for lane in 0..self.endpoint_lanes[e] {
                out.extend(thread(pid, lane, lane_name(&endpoint.id, lane)));
            }
        }
        let pid = self.workers_pid();
        process(pid, "workers".to_owned(), pid, &mut out);
        for (w, pair) in self.worker_first_tid.windows(2).enumerate() {
            for tid in pair[0]..pair[1] {
                out.extend(thread(
                    pid,
                    tid,
                    lane_name(&format!("worker {w}"), tid - pair[0]),
                ));
            }
        }
        out
    }
}

/// Endpoint `e`'s process id (ids count from 1).
fn endpoint_pid(e: usize) -> usize {
    e + 1
}

/// A lane's track name: the first is the endpoint's or worker's own; others are numbered.
fn lane_name(owner: &str, lane: usize) -> String {
    match lane {
        0 => owner.to_owned(),
        _ => format!("{owner} ({})", lane + 1),
    }
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

/// A request's slice on its endpoint's track and on its worker's, at `tracks` (pid, tid).
fn request_slices(
    world: &World,
    r: &TraceRecord,
    tracks: [(usize, usize); 2],
    clock: Clock,
) -> [Value; 2] {
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
    let span = Span::of(r.at_s, r.end_s, clock);
    let slice = |(pid, tid): (usize, usize), cat: &str| {
        json!({
            "ph": "X",
            "pid": pid,
            "tid": tid,
            "ts": clock.micros(span.start),
            "dur": clock.micros(span.end - span.start),
            "name": name,
            "cat": cat,
            "cname": colour(entry.outcome),
            "args": args,
        })
    };
    [
        slice(tracks[0], "request"),
        slice(tracks[1], "request.worker"),
    ]
}

/// The gaps on each worker's track between one of its requests ending and its next being
/// sent: a retry's wait, or the wait for a lease and the next call.
fn waits(kept: &[TraceRecord], clock: Clock) -> Vec<Wait> {
    let mut last: Vec<Option<&TraceRecord>> = Vec::new();
    let mut out = Vec::new();
    for r in kept.iter().filter(|r| !r.hedge) {
        let w = r.worker as usize;
        if last.len() <= w {
            last.resize(w + 1, None);
        }
        if let Some(prev) = last[w] {
            let span = Span::of(prev.end_s, r.at_s, clock);
            if span.end > span.start {
                out.push(Wait {
                    worker: r.worker,
                    lane: 0,
                    span,
                    retry: prev.job == r.job && prev.step == r.step && r.attempt > prev.attempt,
                    job: r.job,
                    step: r.step,
                    attempt: r.attempt,
                });
            }
        }
        last[w] = Some(r);
    }
    out
}

fn wait_slice(w: &Wait, layout: &Layout, clock: Clock) -> Value {
    json!({
        "ph": "X",
        "pid": layout.workers_pid(),
        "tid": layout.worker_tid(w.worker, w.lane),
        "ts": clock.micros(w.span.start),
        "dur": clock.micros(w.span.end - w.span.start),
        "name": if w.retry { "retry wait" } else { "wait" },
        "cat": "wait",
        "cname": if w.retry { "rail_idle" } else { "rail_animation" },
        "args": { "job": w.job, "step": w.step, "attempt": w.attempt },
    })
}

fn breaker_event(world: &World, c: &Change, clock: Clock) -> Value {
    let state = crate::report::timeseries::state_name(c.state);
    json!({
        "ph": "i",
        "s": "t",
        "pid": endpoint_pid(c.endpoint),
        "tid": 0,
        "ts": clock.micros(clock.ticks(c.at_s)),
        "name": format!("breaker: {state}"),
        "cat": "breaker",
        "args": { "endpoint": world.endpoints()[c.endpoint].id, "state": state },
    })
}

/// Every incident's start and (when it ends) end up to `latest`, as global instant events.
fn incident_events(world: &World, clock: Clock, latest: f64) -> impl Iterator<Item = Value> {
    incident_edges(world)
        .filter(move |&(t, _)| t <= latest)
        .map(move |(t, (incident, edge))| {
            let what = incident.effect.describe();
            let on = world.reach_text(incident);
            json!({
                "ph": "i",
                "s": "g",
                "pid": endpoint_pid(0),
                "tid": 0,
                "ts": clock.micros(clock.ticks(t)),
                "name": format!("{what} {edge}: {on}"),
                "cat": "incident",
            })
        })
}

/// Every incident's start and (when it ends) end, in file order.
fn incident_edges(world: &World) -> impl Iterator<Item = (f64, (&Incident, &'static str))> {
    world.incidents().iter().flat_map(|incident| {
        let end = incident
            .end_s
            .is_finite()
            .then_some((incident.end_s, (incident, "ends")));
        std::iter::once((incident.start_s, (incident, "starts"))).chain(end)
    })
}
