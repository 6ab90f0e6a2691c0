//! OpenTelemetry spans in the OTLP JSON encoding (an `ExportTraceServiceRequest`, or one per
//! line as the collector's file exporter writes them) as request-log entries.
//!
//! A span is a request when it carries GenAI (`gen_ai.*`) or HTTP client
//! (`http.response.status_code`) attributes; others (the application's own spans) are
//! skipped. Read: the span's start and end, `server.address` (else `gen_ai.provider.name` or
//! `gen_ai.system`) as the endpoint, `http.response.status_code` (else the span status and
//! `error.type`), `gen_ai.usage.input_tokens` / `output_tokens`, `gen_ai.request.max_tokens`,
//! `http.request.resend_count` as the attempt, `gen_ai.usage.cache_read.input_tokens` (or the
//! older `gen_ai.usage.cache_read_input_tokens`) as a cache hit when above 0. Prompt and completion events and attributes
//! (`gen_ai.input.messages`, …) are never read.

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
    fn seconds(&self) -> Option<f64> {
        let n = match self {
            Nanos::Text(s) => s.parse::<u64>().ok()?,
            Nanos::Number(n) => *n,
        };
        // Split so the fraction keeps its nanoseconds however large the epoch.
        Some((n / 1_000_000_000) as f64 + (n % 1_000_000_000) as f64 * 1e-9)
    }
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
    int_value: Option<Nanos>,
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
                Nanos::Text(s) => s.parse::<f64>().ok(),
                Nanos::Number(n) => Some(*n as f64),
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
        self.attributes
            .iter()
            .any(|a| a.key.starts_with("gen_ai.") || a.key == "http.response.status_code")
    }
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
    // Spans of every export so far: the n-th span of the file is where the n-th
    // `startTimeUnixNano` key is, which locates a problem by line and column.
    let mut before = 0;
    for exports in 0.. {
        // Exports follow one another, apart only by whitespace, until the text ends.
        if stream.end().is_ok() {
            break;
        }
        let prefix = format!("export {}: ", exports + 1);
        let export: Export = parse_document(file, text, &mut stream, &prefix)?;
        let spans: Vec<&Span> = export
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans)
            .collect();
        let first = before;
        before += spans.len();
        for (i, span) in spans
            .into_iter()
            .enumerate()
            .filter(|(_, s)| s.is_request())
        {
            let at = |field: &str, message: String| {
                let field = otlp_field(field);
                let (line, column) = locate(text, first + i, field).unzip();
                LogError {
                    file: file.to_owned(),
                    line,
                    column,
                    field: Some(format!(
                        "export {} span {i} ({}): {field}",
                        exports + 1,
                        span.name
                    )),
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
            let entry = entry(span, start_s, end_s);
            check_entry(&entry).map_err(|(field, message)| at(field, message))?;
            places.push((entry.start_s, entries.len()));
            spans_at.push((exports + 1, i, first + i, span.name.clone()));
            entries.push(entry);
        }
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
    if let Ok(code) = name.parse::<u16>() {
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
        cache_hit: span
            .number("gen_ai.usage.cache_read.input_tokens")
            .or_else(|| span.number("gen_ai.usage.cache_read_input_tokens"))
            .map(|n| n > 0.0),
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
}
