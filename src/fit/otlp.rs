//! OpenTelemetry spans in the OTLP JSON encoding (an `ExportTraceServiceRequest`, or one per
//! line as the collector's file exporter writes them) as request-log entries.
//!
//! A span is a request when it carries GenAI (`gen_ai.*`) or HTTP client
//! (`http.response.status_code`) attributes; others (the application's own spans) are
//! skipped, and so are an agent's own spans (`gen_ai.operation.name` `invoke_agent`,
//! `create_agent`, `execute_tool`): they call a model, they are no call. A request span with
//! request spans under it (a GenAI `chat` span over the HTTP client's `POST` of each attempt)
//! is not counted itself: its children are the requests sent, and the last of them to end
//! takes the token counts it lacks from it. Read: the span's start and end, `server.address` (else `gen_ai.provider.name` or
//! `gen_ai.system`, else the span's name) as the endpoint, `http.response.status_code` (else the span status and
//! `error.type`), `gen_ai.usage.input_tokens` / `output_tokens`, `gen_ai.request.max_tokens`,
//! `http.request.resend_count` as the attempt, `gen_ai.usage.cache_read.input_tokens` (or the
//! older `gen_ai.usage.cache_read_input_tokens`) as a cache hit when above 0. Prompt and completion events and attributes
//! (`gen_ai.input.messages`, …) are never read.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::input::{LogError, check_entry, parse_document};
use crate::request_log::{Entry, EntryOutcome, ErrorKind};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Export {
    #[serde(default)]
    resource_spans: Vec<ResourceSpans>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceSpans {
    #[serde(default)]
    scope_spans: Vec<ScopeSpans>,
}

#[derive(Deserialize)]
struct ScopeSpans {
    #[serde(default)]
    spans: Vec<Span>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Span {
    #[serde(default)]
    name: String,
    #[serde(default)]
    trace_id: String,
    #[serde(default)]
    span_id: String,
    #[serde(default)]
    parent_span_id: String,
    start_time_unix_nano: Nanos,
    end_time_unix_nano: Nanos,
    #[serde(default)]
    attributes: Vec<KeyValue>,
    #[serde(default)]
    status: Option<Status>,
}

/// OTLP JSON writes 64-bit integers as strings; some exporters write numbers.
#[derive(Deserialize)]
#[serde(untagged)]
enum Nanos {
    Text(String),
    Number(u64),
}

impl Nanos {
    fn whole(&self) -> Option<u64> {
        match self {
            Nanos::Text(s) => s.parse::<u64>().ok(),
            Nanos::Number(n) => Some(*n),
        }
    }

    fn seconds(&self) -> Option<f64> {
        let n = self.whole()?;
        // Split so the fraction keeps its nanoseconds however large the epoch.
        Some((n / 1_000_000_000) as f64 + (n % 1_000_000_000) as f64 * 1e-9)
    }
}

/// An attribute's `intValue`: a signed 64-bit integer, as a string or a number (a negative
/// count is read, so the check names it, not the type).
#[derive(Deserialize)]
#[serde(untagged)]
enum Int {
    Text(String),
    Number(i64),
}

#[derive(Deserialize)]
struct KeyValue {
    key: String,
    value: AnyValue,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnyValue {
    #[serde(default)]
    string_value: Option<String>,
    #[serde(default)]
    int_value: Option<Int>,
    #[serde(default)]
    double_value: Option<f64>,
}

#[derive(Deserialize)]
struct Status {
    #[serde(default)]
    code: Option<i64>,
}

impl Span {
    fn attribute(&self, key: &str) -> Option<&AnyValue> {
        self.attributes
            .iter()
            .find(|a| a.key == key)
            .map(|a| &a.value)
    }
    fn number(&self, key: &str) -> Option<f64> {
        let v = self.attribute(key)?;
        v.double_value
            .or_else(|| match v.int_value.as_ref()? {
                Int::Text(s) => s.parse::<f64>().ok(),
                Int::Number(n) => Some(*n as f64),
            })
            .or_else(|| v.string_value.as_deref()?.parse().ok())
    }
    fn text(&self, key: &str) -> Option<&str> {
        self.attribute(key)?.string_value.as_deref()
    }
    /// The first attribute simbench reads that holds no usable value: a number that is not
    /// one, a status outside HTTP's.
    fn bad_attribute(&self) -> Option<(&'static str, String)> {
        for key in NUMBERS {
            if let Some(v) = self.attribute(key)
                && self.number(key).is_none()
            {
                let shown = v
                    .string_value
                    .as_deref()
                    .unwrap_or("a value of another type");
                return Some((key, format!("`{shown}` is not a number")));
            }
        }
        if let Some(n) = self.number(RESEND)
            && !(n >= 0.0 && n.fract() == 0.0 && n < f64::from(u32::MAX))
        {
            return Some((
                RESEND,
                format!("{n} is not a count of resends (0, 1, 2, …)"),
            ));
        }
        let status = self.number(STATUS)?;
        (!(100.0..600.0).contains(&status) || status.fract() != 0.0).then(|| {
            (
                STATUS,
                format!("{status} is not an HTTP status (100 to 599)"),
            )
        })
    }
    fn is_request(&self) -> bool {
        const AGENT_OWN: [&str; 3] = ["invoke_agent", "create_agent", "execute_tool"];
        let agent_own = self
            .text("gen_ai.operation.name")
            .is_some_and(|op| AGENT_OWN.contains(&op));
        !agent_own
            && self
                .attributes
                .iter()
                .any(|a| a.key.starts_with("gen_ai.") || a.key == "http.response.status_code")
    }

    /// The span's key within the file (its trace and id), if it has an id.
    fn key(&self) -> Option<(&str, &str)> {
        (!self.span_id.is_empty()).then_some((self.trace_id.as_str(), self.span_id.as_str()))
    }

    /// Its parent's key, if it names one.
    fn parent_key(&self) -> Option<(&str, &str)> {
        (!self.parent_span_id.is_empty())
            .then_some((self.trace_id.as_str(), self.parent_span_id.as_str()))
    }
}

/// Which request spans wrap other request spans, and which of their children (the last to
/// end) inherits their token counts.
struct Nesting<'a> {
    /// Per wrapping span: the global index of its child that ends last.
    last_child: BTreeMap<(&'a str, &'a str), usize>,
    /// Request spans by key.
    by_key: BTreeMap<(&'a str, &'a str), &'a Span>,
    /// The first request span (by global index) whose parents lead back to it: each would
    /// wrap the next, and none would count.
    on_a_cycle: Option<usize>,
}

impl<'a> Nesting<'a> {
    fn of(requests: &[(usize, &'a Span)]) -> Self {
        let by_key: BTreeMap<_, _> = requests
            .iter()
            .filter_map(|(_, s)| Some((s.key()?, *s)))
            .collect();
        let mut last_child: BTreeMap<(&str, &str), (u64, usize)> = BTreeMap::new();
        for (global, span) in requests {
            let Some(parent) = span.parent_key().filter(|k| by_key.contains_key(k)) else {
                continue;
            };
            let end = span.end_time_unix_nano.whole().unwrap_or(0);
            let last = last_child.entry(parent).or_insert((end, *global));
            if end >= last.0 {
                *last = (end, *global);
            }
        }
        let on_a_cycle = first_on_a_cycle(requests);
        Nesting {
            last_child: last_child.into_iter().map(|(k, (_, g))| (k, g)).collect(),
            by_key,
            on_a_cycle,
        }
    }

    /// Whether `span` wraps request spans, so is not counted.
    fn wraps(&self, span: &Span) -> bool {
        span.key().is_some_and(|k| self.last_child.contains_key(&k))
    }

    /// Gives the request of span `global` the token counts it lacks from the span it is the
    /// last child of.
    fn inherit(&self, global: usize, span: &Span, entry: &mut Entry) {
        let Some(parent) = span.parent_key() else {
            return;
        };
        if self.last_child.get(&parent) != Some(&global) {
            return;
        }
        let wrapper = self.by_key[&parent];
        let inherited = |own: &mut Option<f64>, key: &str| {
            if own.is_none() {
                *own = wrapper.number(key);
            }
        };
        inherited(&mut entry.input_tokens, "gen_ai.usage.input_tokens");
        if entry.outcome == EntryOutcome::Ok {
            inherited(&mut entry.output_tokens, "gen_ai.usage.output_tokens");
        }
        inherited(&mut entry.max_tokens, "gen_ai.request.max_tokens");
        if entry.cache_hit.is_none() {
            entry.cache_hit = cache_hit(wrapper);
        }
    }
}

/// The first request span, by global index, whose chain of parents comes back to it. Each
/// span has at most one parent, so a walk up from every span not yet seen, marking the spans
/// of the walk, meets a span of its own walk exactly when there is a cycle: linear time.
fn first_on_a_cycle(requests: &[(usize, &Span)]) -> Option<usize> {
    let position: BTreeMap<(&str, &str), usize> = (requests.iter().enumerate())
        .filter_map(|(k, (_, s))| Some((s.key()?, k)))
        .collect();
    let parent: Vec<Option<usize>> = (requests.iter())
        .map(|(_, s)| s.parent_key().and_then(|key| position.get(&key).copied()))
        .collect();
    // The walk that first reached each span.
    let mut walk_of: Vec<Option<usize>> = vec![None; requests.len()];
    let mut found: Option<usize> = None;
    for walk in 0..requests.len() {
        let mut at = Some(walk);
        while let Some(k) = at {
            match walk_of[k] {
                Some(w) if w == walk => {
                    let global = requests[k].0;
                    found = Some(found.map_or(global, |f| f.min(global)));
                    break;
                }
                Some(_) => break,
                None => walk_of[k] = Some(walk),
            }
            at = parent[k];
        }
    }
    found
}

/// Whether the span's answer says the provider read part of the prompt from its cache.
fn cache_hit(span: &Span) -> Option<bool> {
    span.number("gen_ai.usage.cache_read.input_tokens")
        .or_else(|| span.number("gen_ai.usage.cache_read_input_tokens"))
        .map(|n| n > 0.0)
}

const STATUS: &str = "http.response.status_code";
const RESEND: &str = "http.request.resend_count";

/// The attributes read as numbers.
const NUMBERS: [&str; 7] = [
    STATUS,
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.request.max_tokens",
    RESEND,
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_read_input_tokens",
];

/// The span field or attribute a request-log field comes from, so a problem names what the
/// file holds.
fn otlp_field(field: &str) -> &str {
    match field {
        "start_s" => "startTimeUnixNano",
        "end_s" => "endTimeUnixNano",
        "status" => STATUS,
        "input_tokens" => "gen_ai.usage.input_tokens",
        "output_tokens" => "gen_ai.usage.output_tokens",
        "max_tokens" => "gen_ai.request.max_tokens",
        "attempt" => RESEND,
        "endpoint" => "server.address",
        other => other,
    }
}

/// Line and column of `field` (a key or an attribute's name) in the file's `span`-th span
/// (counted over every export): the span found by its `startTimeUnixNano` key, the field as
/// the first such string after it, else the span itself.
fn locate(text: &str, span: usize, field: &str) -> Option<(usize, usize)> {
    let at = text.match_indices("\"startTimeUnixNano\"").nth(span)?.0;
    let next = text[at + 1..]
        .find("\"startTimeUnixNano\"")
        .map_or(text.len(), |n| at + 1 + n);
    let at = text[at..next]
        .find(&format!("\"{field}\""))
        .map_or(at, |n| at + n);
    let line = text[..at].matches('\n').count() + 1;
    let column = at - text[..at].rfind('\n').map_or(0, |n| n + 1) + 1;
    Some((line, column))
}

/// Reads OTLP JSON (one export, or one per line) into entries; the first problem is returned,
/// located.
pub fn read(file: &str, text: &str) -> Result<Vec<Entry>, LogError> {
    let mut entries = Vec::new();
    // Each entry's send time and span, to name one whose time cannot be the run's.
    let mut places: Vec<(f64, usize)> = Vec::new();
    let mut spans_at: Vec<(usize, usize, usize, String)> = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text);
    let mut exports = Vec::new();
    for n in 1.. {
        // Exports follow one another, apart only by whitespace, until the text ends.
        if stream.end().is_ok() {
            break;
        }
        let export: Export = parse_document(file, text, &mut stream, &format!("export {n}: "))?;
        exports.push(export);
    }
    // Every span: its export (from 1), index in the export, index in the file (the n-th span
    // of the file is where the n-th `startTimeUnixNano` key is, which locates a problem by
    // line and column).
    let spans: Vec<(usize, usize, usize, &Span)> = exports
        .iter()
        .enumerate()
        .flat_map(|(n, export)| {
            export
                .resource_spans
                .iter()
                .flat_map(|r| &r.scope_spans)
                .flat_map(|s| &s.spans)
                .enumerate()
                .map(move |(i, span)| (n + 1, i, span))
        })
        .enumerate()
        .map(|(global, (n, i, span))| (n, i, global, span))
        .collect();
    let requests: Vec<(usize, &Span)> = spans
        .iter()
        .filter(|(.., span)| span.is_request())
        .map(|&(.., global, span)| (global, span))
        .collect();
    let nesting = Nesting::of(&requests);
    for &(export, i, global, span) in &spans {
        if nesting.on_a_cycle == Some(global) {
            let field = otlp_field("parentSpanId");
            let (line, column) = locate(text, global, field).unzip();
            return Err(LogError {
                file: file.to_owned(),
                line,
                column,
                field: Some(format!("export {export} span {i} ({}): {field}", span.name)),
                message: "its parents lead back to it (parentSpanId through parentSpanId): a \
                          trace is a tree, so no span is its own ancestor"
                    .into(),
            });
        }
        if !span.is_request() || nesting.wraps(span) {
            continue;
        }
        let at = |field: &str, message: String| {
            let field = otlp_field(field);
            let (line, column) = locate(text, global, field).unzip();
            LogError {
                file: file.to_owned(),
                line,
                column,
                field: Some(format!("export {export} span {i} ({}): {field}", span.name)),
                message,
            }
        };
        if let Some((key, why)) = span.bad_attribute() {
            return Err(at(key, why));
        }
        let (Some(start_s), Some(end_s)) = (
            span.start_time_unix_nano.seconds(),
            span.end_time_unix_nano.seconds(),
        ) else {
            return Err(at(
                "startTimeUnixNano",
                "times must be whole nanoseconds since the Unix epoch".into(),
            ));
        };
        let mut entry = entry(span, start_s, end_s);
        nesting.inherit(global, span, &mut entry);
        check_entry(&entry).map_err(|(field, message)| at(field, message))?;
        places.push((entry.start_s, entries.len()));
        spans_at.push((export, i, global, span.name.clone()));
        entries.push(entry);
    }
    if let Some((k, message)) = super::input::implausible_times(&mut places) {
        let (export, i, global, name) = &spans_at[k];
        let field = otlp_field("startTimeUnixNano");
        let (line, column) = locate(text, *global, field).unzip();
        return Err(LogError {
            file: file.to_owned(),
            line,
            column,
            field: Some(format!("export {export} span {i} ({name}): {field}")),
            message,
        });
    }
    Ok(entries)
}

/// A failed span without an HTTP status, by its `error.type`: a status code, or the name an
/// instrumentation gives the exception (`RateLimitError`, `APITimeoutError`,
/// `InternalServerError` from the OpenAI SDK; `rate_limit`, `timeout` elsewhere), read case-
/// and separator-blind. Anything else is a connection failure.
fn error_outcome(error_type: &str) -> (EntryOutcome, Option<ErrorKind>) {
    let name: String = error_type
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if let Ok(code) = name.parse::<u16>()
        && (100..600).contains(&code)
    {
        return super::har::outcome_of(Some(code), false);
    }
    let has = |words: &[&str]| words.iter().any(|w| name.contains(w));
    if has(&["ratelimit", "toomanyrequests"]) {
        (EntryOutcome::RateLimited, None)
    } else if has(&["timeout", "timedout"]) {
        (EntryOutcome::ClientTimeout, None)
    } else if has(&["overloaded"]) {
        (EntryOutcome::Overloaded, None)
    } else if has(&[
        "internalserver",
        "serviceunavailable",
        "servererror",
        "badgateway",
    ]) {
        (EntryOutcome::Error, Some(ErrorKind::Upstream))
    } else {
        (EntryOutcome::Error, Some(ErrorKind::Connection))
    }
}

fn entry(span: &Span, start_s: f64, end_s: f64) -> Entry {
    let status = span
        .number("http.response.status_code")
        .and_then(|s| u16::try_from(s as i64).ok())
        .filter(|s| (100..600).contains(s));
    let failed = span.status.as_ref().and_then(|s| s.code) == Some(2);
    let error_type = span.text("error.type");
    let (outcome, error) = match (status, failed) {
        (Some(_), _) => super::har::outcome_of(status, false),
        (None, false) => (EntryOutcome::Ok, None),
        (None, true) => error_outcome(error_type.unwrap_or_default()),
    };
    let endpoint = span
        .text("server.address")
        .or_else(|| span.text("gen_ai.provider.name"))
        .or_else(|| span.text("gen_ai.system"))
        .unwrap_or(&span.name)
        .to_owned();
    let ok = outcome == EntryOutcome::Ok;
    Entry {
        start_s,
        arrived_s: None,
        end_s,
        endpoint,
        outcome,
        status: status.or(ok.then_some(200)),
        error,
        retry_after_s: None,
        ratelimit: Vec::new(),
        input_tokens: span.number("gen_ai.usage.input_tokens"),
        output_tokens: span.number("gen_ai.usage.output_tokens").filter(|_| ok),
        max_tokens: span.number("gen_ai.request.max_tokens"),
        ttft_s: None,
        job: None,
        step: None,
        attempt: span.number(RESEND).map(|n| n as u32 + 1),
        call: None,
        hedge: false,
        cache_hit: cache_hit(span),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wrong-typed field of a later export is named by its export and key path.
    #[test]
    fn a_wrong_typed_field_names_its_export_and_path() {
        let export = |start: &str| {
            format!(
                "{{\"resourceSpans\": [{{\"scopeSpans\": [{{\"spans\": [{{\"name\": \"POST\", \
                 \"startTimeUnixNano\": {start}, \"endTimeUnixNano\": \"2000000000\"}}]}}]}}]}}"
            )
        };
        let text = format!("{}\n{}", export("\"1000000000\""), export("[1]"));
        let error = read("x.json", &text).expect_err("a list is no time");
        assert_eq!(
            error.field.as_deref(),
            Some("export 2: resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano")
        );
        assert_eq!(error.line, Some(2));
    }

    #[test]
    fn sdk_exception_names_are_read_as_what_they_are() {
        let cases = [
            ("RateLimitError", EntryOutcome::RateLimited, None),
            ("rate_limit", EntryOutcome::RateLimited, None),
            ("429", EntryOutcome::RateLimited, None),
            ("APITimeoutError", EntryOutcome::ClientTimeout, None),
            ("timeout", EntryOutcome::ClientTimeout, None),
            (
                "InternalServerError",
                EntryOutcome::Error,
                Some(ErrorKind::Upstream),
            ),
            ("503", EntryOutcome::Error, Some(ErrorKind::Upstream)),
            (
                "APIConnectionError",
                EntryOutcome::Error,
                Some(ErrorKind::Connection),
            ),
            ("", EntryOutcome::Error, Some(ErrorKind::Connection)),
        ];
        for (name, outcome, error) in cases {
            assert_eq!(error_outcome(name), (outcome, error), "{name}");
        }
    }

    /// One span of trace 1: its id, parent (`""` for none), name, start and end in ms, and
    /// attributes as OTLP JSON.
    fn span(id: &str, parent: &str, name: &str, (from, to): (u64, u64), attrs: &str) -> String {
        format!(
            "{{\"traceId\": \"01\", \"spanId\": \"{id}\", \"parentSpanId\": \"{parent}\", \
             \"name\": \"{name}\", \"startTimeUnixNano\": \"{}\", \"endTimeUnixNano\": \"{}\", \
             \"attributes\": [{attrs}]}}",
            from * 1_000_000,
            to * 1_000_000
        )
    }

    /// Spans whose parents lead back to themselves would each wrap the next and none count:
    /// refused at the first of them, not read as a log without requests.
    #[test]
    fn spans_that_are_their_own_ancestors_are_refused() {
        let status = "{\"key\": \"http.response.status_code\", \"value\": {\"intValue\": \"200\"}}";
        let export = |spans: &[String]| {
            format!(
                "{{\"resourceSpans\": [{{\"scopeSpans\": [{{\"spans\": [{}]}}]}}]}}",
                spans.join(", ")
            )
        };
        let fine = span("z", "", "POST", (0, 5), status);
        for spans in [
            vec![fine.clone(), span("a", "a", "POST", (10, 20), status)],
            vec![
                fine.clone(),
                span("a", "b", "POST", (10, 20), status),
                span("b", "c", "POST", (30, 40), status),
                span("c", "a", "POST", (50, 60), status),
            ],
        ] {
            let error = read("x.json", &export(&spans)).expect_err("a cycle");
            assert!(
                error.message.contains("its parents lead back to it"),
                "{error}"
            );
            assert_eq!(
                error.field.as_deref(),
                Some("export 1 span 1 (POST): parentSpanId")
            );
        }
        // A chain that ends is a tree: the innermost span counts.
        let chain = [
            span("a", "", "POST", (10, 100), status),
            span("b", "a", "POST", (20, 90), status),
            span("c", "b", "POST", (30, 80), status),
        ];
        assert_eq!(read("x.json", &export(&chain)).expect("a tree").len(), 1);
    }

    #[test]
    fn nested_request_spans_count_once_and_an_agent_s_own_spans_not_at_all() {
        let attr = |k: &str, v: &str| format!("{{\"key\": \"{k}\", \"value\": {v}}}");
        let text = |s: &str| format!("{{\"stringValue\": \"{s}\"}}");
        let int = |n: u32| format!("{{\"intValue\": \"{n}\"}}");
        let host = attr("server.address", &text("api.x.test"));
        let status = |code| format!("{host}, {}", attr(STATUS, &int(code)));
        let spans = [
            span(
                "a",
                "",
                "invoke_agent helper",
                (0, 9000),
                &attr("gen_ai.operation.name", &text("invoke_agent")),
            ),
            span(
                "c",
                "a",
                "chat m",
                (10, 2000),
                &[
                    attr("gen_ai.operation.name", &text("chat")),
                    host.clone(),
                    attr("gen_ai.usage.input_tokens", &int(100)),
                    attr("gen_ai.usage.output_tokens", &int(40)),
                ]
                .join(", "),
            ),
            span("p1", "c", "POST", (250, 260), &status(429)),
            span("p2", "c", "POST", (500, 1990), &status(200)),
            span(
                "t",
                "a",
                "execute_tool get_weather",
                (2100, 2200),
                &attr("gen_ai.operation.name", &text("execute_tool")),
            ),
            span(
                "x",
                "",
                "chat m",
                (3000, 3500),
                &[host.clone(), attr("gen_ai.usage.input_tokens", &int(7))].join(", "),
            ),
        ];
        let export = format!(
            "{{\"resourceSpans\": [{{\"scopeSpans\": [{{\"spans\": [{}]}}]}}]}}",
            spans.join(", ")
        );
        let entries = read("x.json", &export).expect("a valid export");
        let seen: Vec<_> = entries
            .iter()
            .map(|e| (e.start_s, e.outcome, e.input_tokens, e.output_tokens))
            .collect();
        assert_eq!(
            seen,
            [
                (0.25, EntryOutcome::RateLimited, None, None),
                (0.5, EntryOutcome::Ok, Some(100.0), Some(40.0)),
                (3.0, EntryOutcome::Ok, Some(7.0), None),
            ],
            "the attempts under the chat span, the last with its tokens; no agent or tool span"
        );
    }
}
