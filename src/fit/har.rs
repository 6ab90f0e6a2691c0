//! HAR 1.2 (HTTP Archive: what browsers, mitmproxy and debugging proxies export) as request-log
//! entries.
//!
//! Read per entry: `startedDateTime` and `time` (the request's span), the request URL's host
//! (the endpoint; an Azure-style `/deployments/<name>/` path adds the deployment), the response
//! status, `retry-after-ms` / `retry-after`, the `x-ratelimit-*` headers, and `timings.wait`
//! as the time to first token of a streamed (`text/event-stream`) answer. Bodies — prompts,
//! completions, post data — are never read: serde skips them unparsed. Token counts live only
//! in bodies, so a HAR log gives no token model.

use serde::Deserialize;

use super::input::{LogError, check_entry, document_error, parse_document};
use super::time::{parse_http_date, parse_rfc3339};
use crate::request_log::{Entry, EntryOutcome, ErrorKind, HeaderUnit, RateLimitHeader};

#[derive(Deserialize)]
struct HarFile {
    log: HarLog,
}

#[derive(Deserialize)]
struct HarLog {
    entries: Vec<HarEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HarEntry {
    started_date_time: String,
    time: f64,
    request: HarRequest,
    response: HarResponse,
    #[serde(default)]
    timings: Option<HarTimings>,
}

#[derive(Deserialize)]
struct HarRequest {
    url: String,
}

#[derive(Deserialize)]
struct HarResponse {
    status: i64,
    #[serde(default)]
    headers: Vec<HarHeader>,
    #[serde(default)]
    content: Option<HarContent>,
}

#[derive(Deserialize)]
struct HarHeader {
    name: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HarContent {
    #[serde(default)]
    mime_type: Option<String>,
}

#[derive(Deserialize)]
struct HarTimings {
    #[serde(default)]
    wait: Option<f64>,
}

/// Reads a HAR file into entries; the first problem is returned, located.
pub fn read(file: &str, text: &str) -> Result<Vec<Entry>, LogError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let har: HarFile = parse_document(file, text, &mut de, "")?;
    de.end().map_err(|e| document_error(file, text, &e))?;
    let mut entries = Vec::with_capacity(har.log.entries.len());
    for (i, e) in har.log.entries.iter().enumerate() {
        let at = |field: &str, message: String| {
            let (line, column) = locate(text, i, field).unzip();
            LogError {
                file: file.to_owned(),
                line,
                column,
                field: Some(format!("log.entries[{i}].{field}")),
                message,
            }
        };
        let start_s = parse_rfc3339(&e.started_date_time).ok_or_else(|| {
            let text = &e.started_date_time;
            // A date and time of day without an offset reads as any time zone's.
            let message = if parse_rfc3339(&format!("{text}Z")).is_some() {
                format!(
                    "`{text}` has no UTC offset: a HAR 1.2 date and time carries one (`Z` or \
                     `+02:00`, as in 2026-12-01T09:30:00.125Z), without which it could be any \
                     time zone's"
                )
            } else {
                format!(
                    "`{text}` is not an ISO 8601 date and time such as 2026-12-01T09:30:00.125Z"
                )
            };
            at("startedDateTime", message)
        })?;
        if !(e.time.is_finite() && e.time >= 0.0) {
            return Err(at(
                "time",
                format!("{} must be a number of milliseconds >= 0", e.time),
            ));
        }
        let status = e.response.status;
        if status != 0 && !(100..600).contains(&status) {
            return Err(at(
                "response.status",
                format!("{status} is not an HTTP status (100 to 599, or 0 for no answer)"),
            ));
        }
        if !e.request.url.contains("://") {
            return Err(at(
                "request.url",
                format!(
                    "`{}` is not an absolute URL (HAR writes `https://host/path`); the host \
                     names the endpoint",
                    e.request.url
                ),
            ));
        }
        let entry = entry(e, start_s).map_err(|message| at("response.headers", message))?;
        check_entry(&entry).map_err(|(field, message)| at(har_field(field), message))?;
        entries.push(entry);
    }
    let mut starts: Vec<(f64, usize)> = entries.iter().map(|e| e.start_s).zip(0..).collect();
    if let Some((i, message)) = super::input::implausible_times(&mut starts) {
        let (line, column) = locate(text, i, "startedDateTime").unzip();
        return Err(LogError {
            file: file.to_owned(),
            line,
            column,
            field: Some(format!("log.entries[{i}].startedDateTime")),
            message,
        });
    }
    Ok(entries)
}

/// The HAR field a request-log field comes from, so a problem names what the file holds.
fn har_field(field: &str) -> &str {
    match field {
        "start_s" => "startedDateTime",
        "end_s" => "time",
        "ttft_s" => "timings.wait",
        "retry_after_s" => "response.headers",
        "endpoint" => "request.url",
        "status" | "error" => "response.status",
        "ratelimit" => "response.headers",
        other => other,
    }
}

/// Line and column of `field` (dotted: `response.headers`) in entry `i`: the entry found by its
/// `startedDateTime` key (one per entry), then each key of the path as the first such key after
/// the one before (the response's `headers`, not the request's).
fn locate(text: &str, i: usize, field: &str) -> Option<(usize, usize)> {
    let mut at = text.match_indices("\"startedDateTime\"").nth(i)?.0;
    for key in field.split('.') {
        at += text[at..].find(&format!("\"{key}\""))?;
    }
    let line = text[..at].matches('\n').count() + 1;
    let column = at - text[..at].rfind('\n').map_or(0, |n| n + 1) + 1;
    Some((line, column))
}

/// The wait a response's `retry-after-ms` or `Retry-After` asks for \[s\], if any: whole or
/// fractional seconds, or an HTTP date (RFC 9110 §10.2.3), counted from the response's `Date`
/// header or else from when the response ended; a date already past asks for no wait. A value
/// that is none of these is refused rather than read as no Retry-After.
fn retry_after<'a>(
    header: &dyn Fn(&str) -> Option<&'a str>,
    answered_s: f64,
) -> Result<Option<f64>, String> {
    if let Some(v) = header("retry-after-ms") {
        return match v.parse::<f64>() {
            Ok(ms) if ms.is_finite() && ms >= 0.0 => Ok(Some(ms / 1000.0)),
            _ => Err(format!(
                "`retry-after-ms: {v}` is not a number of milliseconds >= 0"
            )),
        };
    }
    let Some(v) = header("retry-after") else {
        return Ok(None);
    };
    if let Ok(s) = v.parse::<f64>()
        && s.is_finite()
        && s >= 0.0
    {
        return Ok(Some(s));
    }
    let Some(at) = parse_http_date(v) else {
        return Err(format!(
            "`Retry-After: {v}` is neither seconds nor an HTTP date such as `Wed, 21 Oct 2026 \
             07:28:00 GMT`"
        ));
    };
    let now = header("date")
        .and_then(parse_http_date)
        .unwrap_or(answered_s);
    Ok(Some((at - now).max(0.0)))
}

/// A header the fit reads given twice with different values: which one the server meant
/// cannot be told, and reading the first would be a silent guess.
fn disagreeing_headers(headers: &[HarHeader]) -> Result<(), String> {
    let read = |name: &str| {
        let name = name.to_ascii_lowercase();
        ["retry-after-ms", "retry-after", "date"].contains(&name.as_str())
            || name.starts_with("x-ratelimit-")
    };
    for (k, h) in headers.iter().enumerate().filter(|(_, h)| read(&h.name)) {
        let later = headers[k + 1..].iter().find(|other| {
            other.name.eq_ignore_ascii_case(&h.name) && other.value.trim() != h.value.trim()
        });
        if let Some(other) = later {
            return Err(format!(
                "the response has two `{}` headers that disagree (`{}` and `{}`): which one the \
                 server meant cannot be told",
                h.name,
                h.value.trim(),
                other.value.trim()
            ));
        }
    }
    Ok(())
}

fn entry(e: &HarEntry, start_s: f64) -> Result<Entry, String> {
    let header = |name: &str| {
        e.response
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value.trim())
    };
    disagreeing_headers(&e.response.headers)?;
    let status = u16::try_from(e.response.status)
        .ok()
        .filter(|s| (100..600).contains(s));
    let retry_after_s = retry_after(&header, start_s + e.time / 1000.0)?;
    let streamed = e
        .response
        .content
        .as_ref()
        .and_then(|c| c.mime_type.as_deref())
        .is_some_and(|m| m.starts_with("text/event-stream"));
    let ttft_s = e
        .timings
        .as_ref()
        .and_then(|t| t.wait)
        .filter(|w| streamed && *w >= 0.0)
        .map(|w| w / 1000.0);
    let (outcome, error) = outcome_of(status, retry_after_s.is_some());
    Ok(Entry {
        start_s,
        arrived_s: None,
        end_s: start_s + e.time / 1000.0,
        endpoint: endpoint_of(&e.request.url),
        outcome,
        status,
        error,
        retry_after_s,
        ratelimit: ratelimit_headers(&header)?,
        input_tokens: None,
        output_tokens: None,
        max_tokens: None,
        ttft_s,
        job: None,
        step: None,
        attempt: None,
        call: None,
        hedge: false,
        cache_hit: None,
    })
}

/// The outcome and error kind an HTTP status means (no status: the connection failed).
pub fn outcome_of(status: Option<u16>, retry_after: bool) -> (EntryOutcome, Option<ErrorKind>) {
    match status {
        None => (EntryOutcome::Error, Some(ErrorKind::Connection)),
        Some(200..=299) => (EntryOutcome::Ok, None),
        Some(429) => (EntryOutcome::RateLimited, None),
        Some(529) => (EntryOutcome::Overloaded, None),
        // A 503 with Retry-After is the vendor shedding load, as a 429 is.
        Some(503) if retry_after => (EntryOutcome::RateLimited, None),
        Some(504) => (EntryOutcome::Error, Some(ErrorKind::Timeout)),
        Some(500..=599) => (EntryOutcome::Error, Some(ErrorKind::Upstream)),
        Some(401 | 403) => (EntryOutcome::Rejected, Some(ErrorKind::Unauthorized)),
        Some(400 | 413) => (EntryOutcome::Rejected, Some(ErrorKind::TooLarge)),
        Some(_) => (EntryOutcome::Rejected, None),
    }
}

/// `scheme://host[:port]/path?query` → `host[:port]` (without the scheme's own port, 443 or
/// 80: one origin), plus `/<name>` for an Azure-style `/deployments/<name>/` path.
pub fn endpoint_of(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (host, path) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    // Host names are case-insensitive: `API.x.test` and `api.x.test` are one endpoint.
    let host = host
        .rsplit_once('@')
        .map_or(host, |(_, h)| h)
        .to_ascii_lowercase();
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "https" => ":443",
        "http" => ":80",
        _ => "",
    };
    let host = match host.strip_suffix(default_port) {
        Some(bare) if !default_port.is_empty() => bare.to_owned(),
        _ => host,
    };
    let deployment = path
        .split('/')
        .skip_while(|s| *s != "deployments")
        .nth(1)
        .filter(|d| !d.is_empty());
    match deployment {
        Some(d) => format!("{host}/{d}"),
        None => host.to_owned(),
    }
}

/// The `x-ratelimit-limit/remaining/reset-{requests,tokens}` headers (OpenAI's names; the
/// reset as a duration such as `6m0s` or `20ms`). A limit needs its limit and remaining; a
/// value that is not a number (or duration) >= 0 is refused, naming the header, rather than
/// dropped.
pub fn ratelimit_headers<'a>(
    header: &dyn Fn(&str) -> Option<&'a str>,
) -> Result<Vec<RateLimitHeader>, String> {
    let mut out = Vec::new();
    for unit in [
        HeaderUnit::Requests,
        HeaderUnit::Tokens,
        HeaderUnit::InputTokens,
        HeaderUnit::OutputTokens,
    ] {
        let suffix = unit.unit().header_suffix();
        let value = |kind: &str, read: fn(&str) -> Option<f64>, what: &str| {
            let name = format!("x-ratelimit-{kind}-{suffix}");
            header(&name)
                .map(|v| {
                    read(v)
                        .filter(|x| x.is_finite() && *x >= 0.0)
                        .ok_or_else(|| format!("`{name}: {v}` is not {what}"))
                })
                .transpose()
        };
        let number = |text: &str| text.parse::<f64>().ok();
        let limit = value("limit", number, "a number >= 0")?;
        let remaining = value("remaining", number, "a number >= 0")?;
        let reset_s = value(
            "reset",
            parse_duration,
            "a duration >= 0 such as `6m0s`, `20ms` or `1.5` (seconds)",
        )?;
        if let (Some(limit), Some(remaining)) = (limit, remaining) {
            out.push(RateLimitHeader {
                unit,
                limit,
                remaining,
                reset_s: reset_s.unwrap_or(0.0),
            });
        }
    }
    Ok(out)
}

/// `1h2m3.5s`, `6m0s`, `20ms`, `0.5s` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Option<f64> {
    if let Ok(seconds) = text.parse::<f64>() {
        return Some(seconds);
    }
    let mut total = 0.0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let (number, tail) = rest.split_at(digits);
        let value: f64 = number.parse().ok()?;
        let (scale, len) = if tail.starts_with("ms") {
            (0.001, 2)
        } else if tail.starts_with('h') {
            (3600.0, 1)
        } else if tail.starts_with('m') {
            (60.0, 1)
        } else if tail.starts_with('s') {
            (1.0, 1)
        } else {
            return None;
        };
        total += value * scale;
        rest = &tail[len..];
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wrong type and a wrong value of one field are named by the same key path.
    #[test]
    fn a_wrong_typed_field_is_named_by_its_whole_path() {
        let har = |time: &str| {
            format!(
                "{{\"log\": {{\"entries\": [\n{{\"startedDateTime\": \"2026-01-01T00:00:00Z\", \
                 \"time\": {time}, \"request\": {{\"method\": \"POST\", \"url\": \"https://a/v1\", \
                 \"headers\": []}}, \"response\": {{\"status\": 200, \"headers\": []}}}}]}}}}"
            )
        };
        let field = |text: &str| read("x.har", text).err().and_then(|e| e.field);
        let path = Some("log.entries[0].time".to_owned());
        assert_eq!(field(&har("\"fast\"")), path);
        assert_eq!(field(&har("-5")), path);
        let missing = har("1").replace("\"request\"", "\"req\"");
        let error = read("x.har", &missing).expect_err("no request");
        assert_eq!(error.field.as_deref(), Some("log.entries[0].request"));
        assert_eq!((error.line, error.column.is_some()), (Some(2), true));
        assert!(
            read("x.har", &format!("{}\n}}", har("1"))).is_err(),
            "trailing text"
        );
    }

    #[test]
    fn durations_urls_and_statuses_read_as_the_vendors_write_them() {
        assert_eq!(parse_duration("6m0s"), Some(360.0));
        assert_eq!(parse_duration("20ms"), Some(0.02));
        assert_eq!(parse_duration("1h2m3.5s"), Some(3723.5));
        assert_eq!(parse_duration("0.25"), Some(0.25));
        assert_eq!(parse_duration("soon"), None);
        assert_eq!(
            endpoint_of("https://api.openai.com/v1/chat/completions"),
            "api.openai.com"
        );
        assert_eq!(
            endpoint_of("HTTPS://API.OpenAI.com/v1"),
            endpoint_of("https://api.openai.com/v1"),
            "host names are case-insensitive"
        );
        assert_eq!(
            endpoint_of(
                "https://x.openai.azure.com/openai/deployments/gpt4o-east/chat/completions?api-version=1"
            ),
            "x.openai.azure.com/gpt4o-east"
        );
        for same in [
            "https://api.x.test:443/v1",
            "https://api.x.test?x=1",
            "https://api.x.test#top",
        ] {
            assert_eq!(endpoint_of(same), "api.x.test", "{same}: one origin");
        }
        assert_eq!(endpoint_of("http://api.x.test:443/v1"), "api.x.test:443");
        assert_eq!(endpoint_of("http://localhost:80/v1"), "localhost");
        assert_eq!(outcome_of(Some(429), true).0, EntryOutcome::RateLimited);
        assert_eq!(outcome_of(Some(503), false).1, Some(ErrorKind::Upstream));
        assert_eq!(outcome_of(None, false).1, Some(ErrorKind::Connection));
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_http_dates() {
        let headers = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| *v)
            }
        };
        let ended = parse_http_date("Wed, 21 Oct 2026 07:27:30 GMT").unwrap();
        let read = |pairs| {
            let header = headers(pairs);
            retry_after(&header, ended)
        };
        assert_eq!(read(&[("Retry-After", "2")]), Ok(Some(2.0)));
        assert_eq!(
            read(&[("retry-after-ms", "1500"), ("Retry-After", "2")]),
            Ok(Some(1.5))
        );
        assert_eq!(read(&[]), Ok(None));
        // A date counts from the response's Date header, else from when it ended.
        const DATE: (&str, &str) = ("Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT");
        assert_eq!(read(&[DATE]), Ok(Some(30.0)));
        assert_eq!(
            read(&[DATE, ("Date", "Wed, 21 Oct 2026 07:27:50 GMT")]),
            Ok(Some(10.0))
        );
        assert_eq!(
            read(&[("Retry-After", "Wed, 21 Oct 2026 07:00:00 GMT")]),
            Ok(Some(0.0))
        );
        for bad in [
            &[("Retry-After", "soon")][..],
            &[("Retry-After", "-3")],
            &[("retry-after-ms", "NaN")],
        ] {
            assert!(read(bad).is_err(), "{bad:?}");
        }
    }
}
