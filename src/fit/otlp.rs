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

use super::input::{LogError, check_entry, document_error};
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
    fn is_request(&self) -> bool {
        self.attributes
            .iter()
            .any(|a| a.key.starts_with("gen_ai.") || a.key == "http.response.status_code")
    }
}

/// Reads OTLP JSON (one export, or one per line) into entries; the first problem is returned,
/// located.
pub fn read(file: &str, text: &str) -> Result<Vec<Entry>, LogError> {
    let mut entries = Vec::new();
    let stream = serde_json::Deserializer::from_str(text).into_iter::<Export>();
    for (exports, export) in stream.enumerate() {
        let export = export.map_err(|e| document_error(file, text, &e))?;
        let spans = export
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans);
        for (i, span) in spans.enumerate().filter(|(_, s)| s.is_request()) {
            let at = |field: &str, message: String| LogError {
                file: file.to_owned(),
                line: None,
                column: None,
                field: Some(format!(
                    "export {} span {i} ({}): {field}",
                    exports + 1,
                    span.name
                )),
                message,
            };
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
            entries.push(entry);
        }
    }
    Ok(entries)
}

fn entry(span: &Span, start_s: f64, end_s: f64) -> Entry {
    let status = span
        .number("http.response.status_code")
        .and_then(|s| u16::try_from(s as i64).ok())
        .filter(|s| (100..600).contains(s));
    let failed = span.status.as_ref().and_then(|s| s.code) == Some(2);
    let error_type = span.text("error.type");
    let (outcome, error) = match (status, failed, error_type) {
        (Some(_), _, _) => super::har::outcome_of(status, false),
        (None, false, _) => (EntryOutcome::Ok, None),
        (None, true, Some(t)) if t.contains("429") || t.contains("rate") => {
            (EntryOutcome::RateLimited, None)
        }
        (None, true, Some(t)) if t.contains("timeout") => (EntryOutcome::ClientTimeout, None),
        (None, true, _) => (EntryOutcome::Error, Some(ErrorKind::Connection)),
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
        attempt: span
            .number("http.request.resend_count")
            .map(|n| n as u32 + 1),
        call: None,
        hedge: false,
        cache_hit: span
            .number("gen_ai.usage.cache_read.input_tokens")
            .or_else(|| span.number("gen_ai.usage.cache_read_input_tokens"))
            .map(|n| n > 0.0),
    }
}
