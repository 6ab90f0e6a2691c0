//! The request log: one JSON object per request attempt, one per line (JSON Lines).
//!
//! It is what a client's harness or a proxy would record of its traffic — when each request
//! was sent and answered, where, with what status, Retry-After, rate-limit headers and token
//! counts — and what `simbench fit` learns a world from. `simbench run --request-log` writes it
//! for one simulated run, so every world yields ground-truth logs; the HAR and OTLP readers of
//! `fit` turn other tools' files into the same entries. The format is documented in
//! `docs/request-log.md`, with its generated schema in `schema/request-log.schema.json`.

use std::cell::RefCell;
use std::io::{self, Write};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::harness::{Answer, CallResult, Sink, TraceRecord};
use crate::provider::{FailureKind, Refusal, Rejection};
use crate::tokens::{LimitHeader, Unit};
use crate::world::World;

/// The version of the format; bumped when a field changes meaning.
pub const FORMAT_VERSION: u32 = 1;

/// One request attempt as the client saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// When the request was sent, in seconds from any fixed origin (a simulation's start, the
    /// Unix epoch). Required.
    pub start_s: f64,
    /// For a job's first request: when the job arrived, if the client's own queue (a free
    /// slot, a lease, a pacer) held it before `start_s`; same clock, <= `start_s`. A trace
    /// replays the job at this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrived_s: Option<f64>,
    /// When its answer (or the client's giving up) came, on the same clock; >= `start_s`.
    /// Required.
    pub end_s: f64,
    /// The endpoint, deployment or vendor it went to. Required.
    pub endpoint: String,
    /// How it ended. Required.
    pub outcome: EntryOutcome,
    /// The HTTP status, when an answer came (absent for a connection error or a client
    /// timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 100, max = 599))]
    pub status: Option<u16>,
    /// What went wrong, for an `error` or `rejected` outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorKind>,
    /// The Retry-After the answer carried, in seconds (from `retry-after-ms` when given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub retry_after_s: Option<f64>,
    /// The `x-ratelimit-limit/remaining/reset-*` headers of the answer, one per limit.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(with = "Option<Vec<RateLimitHeader>>")]
    pub ratelimit: Vec<RateLimitHeader>,
    /// Prompt tokens sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub input_tokens: Option<f64>,
    /// Output tokens generated: all of them on success, those written before the cut for a
    /// client timeout or a cancelled hedge copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub output_tokens: Option<f64>,
    /// The `max_tokens` the request asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_tokens: Option<f64>,
    /// Seconds from sending to the first output token (streaming answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub ttft_s: Option<f64>,
    /// The job (unit of work) the request belongs to, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<u64>,
    /// The step of the job (0-based), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// The attempt at the step (1 = first try), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub attempt: Option<u32>,
    /// The call within the attempt (0-based), when a step makes several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<u32>,
    /// A hedge copy: a second request for a call already in flight.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "std::ops::Not::not"
    )]
    #[schemars(with = "Option<bool>")]
    pub hedge: bool,
    /// Whether the provider served (part of) the prompt from its cache, when the answer says:
    /// OpenAI's `usage.prompt_tokens_details.cached_tokens` > 0, Anthropic's
    /// `usage.cache_read_input_tokens` > 0, OpenTelemetry's `gen_ai.usage.cache_read.input_tokens`
    /// > 0. Absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_hit: Option<bool>,
}

/// How a request ended, as the client saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryOutcome {
    /// A successful answer (2xx).
    Ok,
    /// A failed answer after service: a 5xx, a connection reset, the server's read timeout.
    Error,
    /// A 429 refusal.
    RateLimited,
    /// "Overloaded" (529, or 503 without Retry-After at once): the endpoint was saturated.
    Overloaded,
    /// Turned away at once without service: connection refused, 401, 400 too large.
    Rejected,
    /// The client's own timeout ended the request.
    ClientTimeout,
    /// The client cancelled it (the losing copy of a hedged call).
    Cancelled,
    /// Still in flight when the log ends.
    Unfinished,
}

/// What went wrong with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A server error answer (503 and other 5xx).
    Upstream,
    /// The connection was reset while the request was served.
    Connection,
    /// The server side timed out.
    Timeout,
    /// The connection was refused (an outage).
    ConnectionRefused,
    /// The key was refused (401/403).
    Unauthorized,
    /// The request was too large for the limit (400/413).
    TooLarge,
}

/// One limit's rate-limit headers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimitHeader {
    /// What it counts: `requests`, `tokens`, `input_tokens` or `output_tokens`.
    pub unit: HeaderUnit,
    /// `x-ratelimit-limit-*`: the allowance per window.
    #[schemars(range(min = 0))]
    pub limit: f64,
    /// `x-ratelimit-remaining-*`: what is left.
    #[schemars(range(min = 0))]
    pub remaining: f64,
    /// `x-ratelimit-reset-*`: seconds until the allowance is whole again.
    #[schemars(range(min = 0))]
    pub reset_s: f64,
}

/// What a rate-limit header counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HeaderUnit {
    /// Requests.
    Requests,
    /// Prompt plus output tokens.
    Tokens,
    /// Prompt tokens.
    InputTokens,
    /// Output tokens.
    OutputTokens,
}

impl HeaderUnit {
    /// The world's unit of the same name.
    pub fn unit(self) -> Unit {
        match self {
            HeaderUnit::Requests => Unit::Requests,
            HeaderUnit::Tokens => Unit::Tokens,
            HeaderUnit::InputTokens => Unit::InputTokens,
            HeaderUnit::OutputTokens => Unit::OutputTokens,
        }
    }

    fn of(unit: Unit) -> HeaderUnit {
        match unit {
            Unit::Requests => HeaderUnit::Requests,
            Unit::Tokens => HeaderUnit::Tokens,
            Unit::InputTokens => HeaderUnit::InputTokens,
            Unit::OutputTokens => HeaderUnit::OutputTokens,
        }
    }
}

impl EntryOutcome {
    /// The request was served (admitted and answered), so its duration is a service time.
    pub fn served(self) -> bool {
        matches!(self, EntryOutcome::Ok | EntryOutcome::Error)
    }
}

/// The entry of one traced request of a run of `world`.
pub fn entry(world: &World, record: &TraceRecord) -> Entry {
    let (outcome, status, error) = classify(record);
    let tokens = world.tokens().is_some();
    Entry {
        start_s: record.at_s,
        arrived_s: record.arrived_s,
        end_s: record.end_s,
        endpoint: world.endpoints()[record.resource].id.clone(),
        outcome,
        status,
        error,
        retry_after_s: record.retry_after_s,
        ratelimit: record.headers.iter().map(header).collect(),
        input_tokens: tokens.then_some(record.size.input),
        output_tokens: record.output_tokens,
        max_tokens: tokens.then_some(record.size.max_tokens),
        ttft_s: record.ttft_s,
        job: Some(record.job.into()),
        step: Some(record.step),
        attempt: Some(record.attempt),
        call: Some(record.call),
        hedge: record.hedge,
        cache_hit: cache_answer(world, record),
    }
}

/// A served request of an endpoint with a reuse cache reports whether it hit; others say
/// nothing, as an answer without cache usage would.
fn cache_answer(world: &World, record: &TraceRecord) -> Option<bool> {
    let cache = world.endpoints()[record.resource].cache.is_some();
    (cache && record.result == CallResult::Admitted).then_some(record.cached)
}

/// A field whose `null` reads as absent, as every optional field's does.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A limit's state as the log's `ratelimit` entry.
pub fn header(h: &LimitHeader) -> RateLimitHeader {
    RateLimitHeader {
        unit: HeaderUnit::of(h.unit),
        limit: h.limit,
        remaining: h.remaining,
        reset_s: h.reset_s,
    }
}

/// The outcome, HTTP status and error kind a client sees of a traced request.
fn classify(record: &TraceRecord) -> (EntryOutcome, Option<u16>, Option<ErrorKind>) {
    use EntryOutcome as O;
    match (record.result, record.answer) {
        (CallResult::Refused(Refusal::Overloaded), _) => (O::Overloaded, Some(529), None),
        (CallResult::Refused(_), _) => (O::RateLimited, Some(429), None),
        (CallResult::Rejected(Rejection::Outage), _) => {
            (O::Rejected, None, Some(ErrorKind::ConnectionRefused))
        }
        (CallResult::Rejected(Rejection::Revoked), _) => {
            (O::Rejected, Some(401), Some(ErrorKind::Unauthorized))
        }
        (CallResult::Rejected(Rejection::TooLarge), _) => {
            (O::Rejected, Some(400), Some(ErrorKind::TooLarge))
        }
        (CallResult::Admitted, Answer::Ok) => (O::Ok, Some(200), None),
        (CallResult::Admitted, Answer::Failed(FailureKind::Upstream)) => {
            (O::Error, Some(503), Some(ErrorKind::Upstream))
        }
        (CallResult::Admitted, Answer::Failed(FailureKind::Connection)) => {
            (O::Error, None, Some(ErrorKind::Connection))
        }
        (CallResult::Admitted, Answer::Failed(FailureKind::Timeout)) => {
            (O::Error, None, Some(ErrorKind::Timeout))
        }
        (CallResult::Admitted, Answer::ClientTimeout) => (O::ClientTimeout, None, None),
        (CallResult::Admitted, Answer::Cancelled) => (O::Cancelled, None, None),
        (CallResult::Admitted, Answer::InFlight | Answer::AtOnce) => (O::Unfinished, None, None),
    }
}

/// The JSON Schema of one line of the log (`schema/request-log.schema.json`).
pub fn schema_text() -> String {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<Entry>();
    schema.insert(
        "$id".into(),
        format!("https://simbench.dev/schema/request-log-v{FORMAT_VERSION}.schema.json").into(),
    );
    schema.insert(
        "description".into(),
        "One line of a simbench request log (JSON Lines): one request attempt as the client \
         saw it. See docs/request-log.md."
            .into(),
    );
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema is JSON");
    text.push('\n');
    text
}

/// Writes the trace of a run of `world` as JSON Lines, in the order the requests were sent.
pub fn write(world: &World, trace: &[TraceRecord], out: &mut dyn Write) -> io::Result<()> {
    // A buffer of a known type takes serde_json's small writes inline (see
    // `report::json::write_pretty`).
    let mut out = io::BufWriter::with_capacity(64 * 1024, out);
    for record in trace {
        write_line(world, record, &mut out)?;
    }
    out.flush()
}

/// Writes the log of a run of `world` into `out` while `run` goes: `run` gets the sink to hand
/// the harness ([`crate::harness::run_streamed`]), so the log never holds more than the
/// requests in flight. Returns what `run` returned and the requests it logged; after a write
/// error the run goes on but writes no more, and the error is returned.
pub fn stream<T>(
    world: &World,
    out: &mut dyn Write,
    run: impl FnOnce(Sink<'_>) -> T,
) -> io::Result<(T, u64)> {
    let state = RefCell::new((io::BufWriter::with_capacity(64 * 1024, out), Ok(()), 0_u64));
    let sink = |record: TraceRecord| {
        let (out, status, count) = &mut *state.borrow_mut();
        *count += 1;
        if status.is_ok() {
            *status = write_line(world, &record, out);
        }
    };
    let result = run(&sink);
    let (mut out, status, count) = state.into_inner();
    status?;
    out.flush()?;
    Ok((result, count))
}

/// One request's line.
fn write_line(world: &World, record: &TraceRecord, out: &mut impl Write) -> io::Result<()> {
    serde_json::to_writer(&mut *out, &entry(world, record))?;
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_round_trips_through_json_and_leaves_absent_fields_out() {
        let entry = Entry {
            start_s: 1.5,
            arrived_s: None,
            end_s: 1.5,
            endpoint: "a".into(),
            outcome: EntryOutcome::RateLimited,
            status: Some(429),
            error: None,
            retry_after_s: Some(0.25),
            ratelimit: vec![],
            input_tokens: None,
            output_tokens: None,
            max_tokens: None,
            ttft_s: None,
            job: Some(3),
            step: Some(0),
            attempt: Some(2),
            call: Some(0),
            hedge: false,
            cache_hit: None,
        };
        let text = serde_json::to_string(&entry).expect("serializes");
        assert_eq!(
            text,
            r#"{"start_s":1.5,"end_s":1.5,"endpoint":"a","outcome":"rate_limited","status":429,"retry_after_s":0.25,"job":3,"step":0,"attempt":2,"call":0}"#
        );
        assert_eq!(serde_json::from_str::<Entry>(&text).expect("parses"), entry);
        // `null` reads as absent for every optional field, the list and the flag included.
        let nulls = text.replace(
            "\"job\":3",
            "\"job\":3,\"hedge\":null,\"ratelimit\":null,\"ttft_s\":null",
        );
        assert_eq!(
            serde_json::from_str::<Entry>(&nulls).expect("parses"),
            entry
        );
    }
}
