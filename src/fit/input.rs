//! Reading request logs: JSON Lines of [`Entry`] values into a compact [`Log`], every problem
//! located by file, line, column and field.
//!
//! The fitter keeps numbers only: an entry's endpoint becomes an index, its optional fields
//! `NaN` or a sentinel, so a million requests take about 100 MB. Headers are summarised per
//! (endpoint, unit) as they are read.

use std::collections::BTreeMap;
use std::fmt;

use crate::request_log::{Entry, EntryOutcome, ErrorKind, HeaderUnit};

/// A problem with an input log, located as precisely as the format allows.
#[derive(Clone, Debug, PartialEq)]
pub struct LogError {
    /// The file as named on the command line.
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// The field at fault (a key, or a path such as `log.entries[3].time`), when known.
    pub field: Option<String>,
    /// What is wrong, and what would be right.
    pub message: String,
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Absent numbers are `NaN`, absent ids `u32::MAX` / `u64::MAX`.
pub const NONE_ID: u32 = u32::MAX;

/// One request, compact.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    /// Sent \[s\], on the log's own clock.
    pub start: f64,
    /// A job's first request: when the job arrived, if the client's queue held it \[s\];
    /// `NaN` when absent.
    pub arrived: f64,
    /// Ended \[s\].
    pub end: f64,
    /// Index into [`Log::endpoints`].
    pub endpoint: u32,
    /// How it ended.
    pub outcome: EntryOutcome,
    /// What went wrong, when it did.
    pub error: Option<ErrorKind>,
    /// HTTP status, 0 when none.
    pub status: u16,
    /// Retry-After \[s\] or `NaN`.
    pub retry_after: f64,
    /// Prompt tokens or `NaN`.
    pub input: f64,
    /// Output tokens or `NaN`.
    pub output: f64,
    /// `max_tokens` or `NaN`.
    pub max_tokens: f64,
    /// Time to first token \[s\] or `NaN`.
    pub ttft: f64,
    /// Job id or `u64::MAX`.
    pub job: u64,
    /// Step, attempt and call or [`NONE_ID`].
    pub step: u32,
    /// Attempt (1-based) or [`NONE_ID`].
    pub attempt: u32,
    /// Call or [`NONE_ID`].
    pub call: u32,
    /// A hedge copy.
    pub hedge: bool,
    /// Served from the provider's cache, when the log says.
    pub cache_hit: Option<bool>,
    /// A 429 whose own rate-limit headers show a limit without room for it (a published
    /// limit refused it, not the concurrency limit or a bucket).
    pub limit_refused: bool,
}

impl Request {
    /// Admitted by the provider (served, or ended by the client while in service).
    pub fn admitted(&self) -> bool {
        matches!(
            self.outcome,
            EntryOutcome::Ok
                | EntryOutcome::Error
                | EntryOutcome::ClientTimeout
                | EntryOutcome::Cancelled
                | EntryOutcome::Unfinished
        )
    }
}

/// One observed value of a rate-limit header.
#[derive(Clone, Copy, Debug)]
pub struct HeaderSample {
    /// When the answer came \[s\].
    pub at: f64,
    /// `x-ratelimit-limit-*`.
    pub limit: f64,
    /// `x-ratelimit-remaining-*`.
    pub remaining: f64,
    /// `x-ratelimit-reset-*` \[s\].
    pub reset_s: f64,
}

/// The most header samples kept per (file, endpoint, limit): enough to pin a limit and its
/// window, bounded however long the log.
pub const MAX_HEADER_SAMPLES: usize = 20_000;

/// One input file's requests, sorted by send time (ties in file order).
#[derive(Clone, Debug, Default)]
pub struct Segment {
    /// The file as named.
    pub name: String,
    /// Its requests.
    pub requests: Vec<Request>,
    /// Header samples per (endpoint, unit, limit as bits): two limits of one unit (a minute's
    /// and a day's tokens) are told apart by their size. At most [`MAX_HEADER_SAMPLES`] each.
    pub headers: BTreeMap<(u32, HeaderUnitKey, u64), Vec<HeaderSample>>,
    /// The time on the file's own clock that its times now count from (its first request, or
    /// an earlier arrival) \[s\].
    pub origin: f64,
}

/// [`HeaderUnit`] as an ordered key.
pub type HeaderUnitKey = u8;

/// The key of a header unit.
pub fn unit_key(unit: HeaderUnit) -> HeaderUnitKey {
    match unit {
        HeaderUnit::Requests => 0,
        HeaderUnit::Tokens => 1,
        HeaderUnit::InputTokens => 2,
        HeaderUnit::OutputTokens => 3,
    }
}

/// The unit of a key.
pub fn key_unit(key: HeaderUnitKey) -> HeaderUnit {
    match key {
        0 => HeaderUnit::Requests,
        1 => HeaderUnit::Tokens,
        2 => HeaderUnit::InputTokens,
        _ => HeaderUnit::OutputTokens,
    }
}

/// Every input file, with one list of endpoint names shared by all.
#[derive(Clone, Debug, Default)]
pub struct Log {
    /// Endpoint names in order of first appearance.
    pub endpoints: Vec<String>,
    /// One per input file; times of different files are never compared.
    pub segments: Vec<Segment>,
}

impl Log {
    /// Adds one file's entries (already read and checked).
    pub fn push_segment(&mut self, name: &str, entries: impl IntoIterator<Item = Entry>) {
        let mut segment = self.segment(name);
        for entry in entries {
            segment.add(&entry);
        }
        segment.finish();
    }

    /// Starts a file's segment: entries are added one by one, so a reader can stream them.
    pub fn segment(&mut self, name: &str) -> SegmentBuilder<'_> {
        SegmentBuilder {
            segment: Segment {
                name: name.to_owned(),
                ..Segment::default()
            },
            known: self.endpoints.len(),
            log: self,
        }
    }

    fn endpoint_index(&mut self, name: &str) -> u32 {
        match self.endpoints.iter().position(|e| e == name) {
            Some(i) => i as u32,
            None => {
                self.endpoints.push(name.to_owned());
                (self.endpoints.len() - 1) as u32
            }
        }
    }

    /// Requests in every file.
    pub fn len(&self) -> usize {
        self.segments.iter().map(|s| s.requests.len()).sum()
    }

    /// No request in any file.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every request of endpoint `e`, file by file.
    pub fn of(&self, e: u32) -> impl Iterator<Item = &Request> {
        self.segments
            .iter()
            .flat_map(|s| s.requests.iter())
            .filter(move |r| r.endpoint == e)
    }
}

/// One file's segment being read.
pub struct SegmentBuilder<'a> {
    log: &'a mut Log,
    segment: Segment,
    /// Endpoints named by earlier files; the ones this file adds are numbered at its end.
    known: usize,
}

impl SegmentBuilder<'_> {
    /// Adds one entry: its numbers, and its headers while the sample has room.
    pub fn add(&mut self, entry: &Entry) {
        let endpoint = self.log.endpoint_index(&entry.endpoint);
        for h in &entry.ratelimit {
            let samples = self
                .segment
                .headers
                .entry((endpoint, unit_key(h.unit), h.limit.to_bits()))
                .or_default();
            samples.push(HeaderSample {
                at: entry.end_s,
                limit: h.limit,
                remaining: h.remaining,
                reset_s: h.reset_s,
            });
            // The earliest ones are kept, whatever order the file lists them in.
            if samples.len() >= 2 * MAX_HEADER_SAMPLES {
                keep_earliest(samples);
            }
        }
        self.segment.requests.push(compact(entry, endpoint));
    }

    /// Entries added so far.
    pub fn len(&self) -> usize {
        self.segment.requests.len()
    }

    /// No entry added yet.
    pub fn is_empty(&self) -> bool {
        self.segment.requests.is_empty()
    }

    /// Sorts the requests by send time and adds the segment to the log. Requests sent at one
    /// instant are ordered by what they hold, never by where the file has them (a harness may
    /// write at sending, at completion or from many threads): admitted ones before refused ones
    /// (a refusal at an instant comes when the admissions took the room), then by end and the
    /// rest. The endpoints this file names first are numbered in that order too, so the fitted
    /// world is the same for any order of the same lines.
    pub fn finish(mut self) {
        let names = &self.log.endpoints;
        self.segment.requests.sort_by(|a, b| canonical(a, b, names));
        self.renumber_new_endpoints();
        for samples in self.segment.headers.values_mut() {
            keep_earliest(samples);
        }
        // Times count from the file's first request, so logs on any clock (a simulation's,
        // the Unix epoch) line up with each other and with a world's time 0.
        // A job that waited in the client's queue arrived before its first request was sent.
        let origin = self.segment.requests.first().map_or(0.0, |r| r.start);
        let origin = self
            .segment
            .requests
            .iter()
            .filter(|r| r.arrived.is_finite())
            .fold(origin, |o, r| o.min(r.arrived));
        self.segment.origin = origin;
        if origin != 0.0 {
            for r in &mut self.segment.requests {
                r.start -= origin;
                r.arrived -= origin;
                r.end -= origin;
            }
            for sample in self.segment.headers.values_mut().flatten() {
                sample.at -= origin;
            }
        }
        self.log.segments.push(self.segment);
    }

    /// Numbers the endpoints first named in this file by their first request in time order.
    fn renumber_new_endpoints(&mut self) {
        let known = self.known;
        let mut order: Vec<u32> = Vec::new();
        for r in &self.segment.requests {
            if r.endpoint as usize >= known && !order.contains(&r.endpoint) {
                order.push(r.endpoint);
            }
        }
        let mut new_index = vec![0u32; self.log.endpoints.len()];
        for (i, slot) in new_index.iter_mut().enumerate() {
            *slot = i as u32;
        }
        for (k, &old) in order.iter().enumerate() {
            new_index[old as usize] = (known + k) as u32;
        }
        let mut names = self.log.endpoints.split_off(known);
        let mut renamed = vec![String::new(); names.len()];
        for (old, name) in names.drain(..).enumerate() {
            renamed[new_index[known + old] as usize - known] = name;
        }
        self.log.endpoints.extend(renamed);
        for r in &mut self.segment.requests {
            r.endpoint = new_index[r.endpoint as usize];
        }
        let headers = std::mem::take(&mut self.segment.headers);
        self.segment.headers = headers
            .into_iter()
            .map(|((e, unit, limit), v)| ((new_index[e as usize], unit, limit), v))
            .collect();
    }
}

/// The order of requests within a file: by send time, then by what each holds (see
/// [`SegmentBuilder::finish`]); endpoints compare by name, not by file order.
fn canonical(a: &Request, b: &Request, names: &[String]) -> std::cmp::Ordering {
    let f = |x: f64, y: f64| x.total_cmp(&y);
    f(a.start, b.start)
        .then_with(|| b.admitted().cmp(&a.admitted()))
        .then_with(|| f(a.end, b.end))
        .then_with(|| names[a.endpoint as usize].cmp(&names[b.endpoint as usize]))
        .then_with(|| (a.job, a.step, a.attempt, a.call).cmp(&(b.job, b.step, b.attempt, b.call)))
        .then_with(|| {
            (a.outcome as u8, a.status, a.hedge).cmp(&(b.outcome as u8, b.status, b.hedge))
        })
        .then_with(|| a.error.map(|e| e as u8).cmp(&b.error.map(|e| e as u8)))
        .then_with(|| (a.cache_hit, a.limit_refused).cmp(&(b.cache_hit, b.limit_refused)))
        .then_with(|| f(a.retry_after, b.retry_after))
        .then_with(|| f(a.input, b.input))
        .then_with(|| f(a.output, b.output))
        .then_with(|| f(a.max_tokens, b.max_tokens))
        .then_with(|| f(a.ttft, b.ttft))
}

/// Sorts header samples by time (then value) and keeps at most [`MAX_HEADER_SAMPLES`], the
/// earliest.
fn keep_earliest(samples: &mut Vec<HeaderSample>) {
    samples.sort_by(|a, b| {
        (a.at.total_cmp(&b.at))
            .then(a.limit.total_cmp(&b.limit))
            .then(a.remaining.total_cmp(&b.remaining))
            .then(a.reset_s.total_cmp(&b.reset_s))
    });
    samples.truncate(MAX_HEADER_SAMPLES);
}

fn compact(entry: &Entry, endpoint: u32) -> Request {
    let nan = |x: Option<f64>| x.unwrap_or(f64::NAN);
    let id = |x: Option<u32>| x.unwrap_or(NONE_ID);
    Request {
        start: entry.start_s,
        arrived: nan(entry.arrived_s),
        end: entry.end_s,
        endpoint,
        outcome: entry.outcome,
        error: entry.error,
        status: entry.status.unwrap_or(0),
        retry_after: nan(entry.retry_after_s),
        input: nan(entry.input_tokens),
        output: nan(entry.output_tokens),
        max_tokens: nan(entry.max_tokens),
        ttft: nan(entry.ttft_s),
        job: entry.job.unwrap_or(u64::MAX),
        step: id(entry.step),
        attempt: id(entry.attempt),
        call: id(entry.call),
        hedge: entry.hedge,
        cache_hit: entry.cache_hit,
        limit_refused: entry.outcome == EntryOutcome::RateLimited
            && entry
                .ratelimit
                .iter()
                .any(|h| h.remaining < need(entry, h.unit).max(1.0)),
    }
}

/// What a request takes from a limit counting `unit`, as far as the client knows it.
fn need(entry: &Entry, unit: HeaderUnit) -> f64 {
    let input = entry.input_tokens.unwrap_or(0.0);
    let max_tokens = entry.max_tokens.unwrap_or(0.0);
    match unit {
        HeaderUnit::Requests => 1.0,
        HeaderUnit::InputTokens => input,
        HeaderUnit::OutputTokens => max_tokens,
        HeaderUnit::Tokens => input + max_tokens,
    }
}

/// Reads a request log in JSON Lines (blank lines are skipped), handing each checked entry
/// to `sink`; the first problem is returned, located. Returns the entries read.
pub fn read_jsonl(
    file: &str,
    reader: impl std::io::BufRead,
    sink: &mut dyn FnMut(Entry),
) -> Result<usize, LogError> {
    let mut count = 0;
    let mut starts: Vec<(f64, (usize, Option<usize>))> = Vec::new();
    let mut seen: BTreeMap<(u64, u32, u32, Option<u32>), usize> = BTreeMap::new();
    for (i, line) in reader.lines().enumerate() {
        let located = |column: Option<usize>, field: Option<String>, message: String| LogError {
            file: file.to_owned(),
            line: Some(i + 1),
            column,
            field,
            message,
        };
        let line = line.map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => located(
                None,
                None,
                "is not UTF-8 text (Latin-1, UTF-16 or another encoding?); save the log as \
                 UTF-8"
                    .into(),
            ),
            _ => located(None, None, format!("cannot be read: {e}")),
        })?;
        // A byte-order mark (spreadsheet and Windows editors write one) is not content at the
        // start; further down it is where a second file was appended to the first.
        let line = if i == 0 {
            line.strip_prefix('\u{feff}').unwrap_or(&line)
        } else if line.starts_with('\u{feff}') {
            return Err(located(
                Some(1),
                None,
                "starts with a byte-order mark, which begins a file: two logs joined into one \
                 (`cat a b`)? One file is one run: give each log as its own argument"
                    .into(),
            ));
        } else {
            &line
        };
        if line.contains('\0') {
            return Err(located(
                None,
                None,
                "holds NUL characters: UTF-16 or UTF-32 text without a byte-order mark? Save the \
                 log as UTF-8"
                    .into(),
            ));
        }
        if line.trim().is_empty() {
            continue;
        }
        if let Some(found) = not_an_object(line) {
            let message = format!(
                "the line is {found}, not a JSON object: a request log has one object per line, \
                 `{{\"start_s\": …, \"end_s\": …, \"endpoint\": …, \"outcome\": …}}` \
                 (docs/request-log.md)"
            );
            return Err(located(Some(1), None, message));
        }
        let entry: Entry = serde_json::from_str(line).map_err(|e| {
            if e.to_string().starts_with("trailing characters") {
                let message = "more follows the line's JSON object: a request log has one \
                               object per line"
                    .to_owned();
                return located(Some(e.column()), None, message);
            }
            // A lone `{` (a document spread over lines) ends early; `other_format` says so.
            let cut_short = e.classify() == serde_json::error::Category::Eof;
            if count == 0 && e.line() == 1 && e.column() == 1 && !cut_short {
                let message = "is not JSON: simbench reads request logs as JSON Lines, HAR or \
                               OTLP JSON (docs/request-log.md), not CSV or plain text"
                    .to_owned();
                return located(Some(1), None, message);
            }
            let (field, message) = describe_serde(&e, line, "line");
            let dated = matches!(field.as_deref(), Some("start_s" | "end_s" | "arrived_s"))
                && message.starts_with("invalid type: string");
            let message = if dated {
                format!(
                    "{message}: times are seconds as numbers, on any one clock (the run's start, \
                     the Unix epoch), not text such as a date"
                )
            } else {
                message
            };
            let message = match other_format(&e, field.as_deref(), i) {
                Some(hint) => format!("{message}; {hint}"),
                None => message,
            };
            located(Some(e.column()), field, message)
        })?;
        check_entry(&entry).map_err(|(field, message)| {
            let column = line.find(&format!("\"{field}\"")).map(|c| c + 1);
            located(column, Some(field.to_owned()), message)
        })?;
        if let (Some(job), Some(step), Some(attempt), false) =
            (entry.job, entry.step, entry.attempt, entry.hedge)
            && let Some(first) = seen.insert((job, step, attempt, entry.call), i + 1)
        {
            let message = format!(
                "the same request as line {first} (job {job}, step {step}, attempt {attempt}{}): \
                 a request is logged once, and a second copy of a call in flight is marked \
                 `\"hedge\": true`",
                entry
                    .call
                    .map_or_else(String::new, |c| format!(", call {c}"))
            );
            let column = line.find("\"job\"").map(|c| c + 1);
            return Err(located(column, Some("job".into()), message));
        }
        let column = line.find("\"start_s\"").map(|c| c + 1);
        starts.push((entry.start_s, (i + 1, column)));
        sink(entry);
        count += 1;
    }
    if let Some(((line, column), message)) = implausible_times(&mut starts) {
        return Err(LogError {
            file: file.to_owned(),
            line: Some(line),
            column,
            field: Some("start_s".into()),
            message,
        });
    }
    Ok(count)
}

/// What a line holds when it is JSON but not an object (`an array`, `a number`, …); `None`
/// for an object's start and for what is not JSON at all (`nope` is no `null`).
fn not_an_object(line: &str) -> Option<&'static str> {
    if line.trim_start().starts_with('{') {
        return None;
    }
    match serde_json::from_str::<serde_json::Value>(line).ok()? {
        serde_json::Value::Array(_) => Some("an array"),
        serde_json::Value::String(_) => Some("a string"),
        serde_json::Value::Number(_) => Some("a number"),
        serde_json::Value::Bool(_) => Some("a boolean"),
        serde_json::Value::Null => Some("null"),
        serde_json::Value::Object(_) => None,
    }
}

/// A hint when a JSON Lines error looks like another format read as one: a HAR or OTLP
/// document spread over lines, or OTLP exports one per line.
fn other_format(e: &serde_json::Error, field: Option<&str>, index: usize) -> Option<&'static str> {
    match field {
        Some("resourceSpans") => Some("this is OpenTelemetry (OTLP JSON): pass --format otlp"),
        Some("log") => Some("this is a HAR file: pass --format har"),
        _ if index == 0 && e.classify() == serde_json::error::Category::Eof => Some(
            "if the file is one JSON document over many lines (a HAR file, an OTLP export), \
             pass --format har or --format otlp",
        ),
        _ => None,
    }
}

/// A whole JSON document (HAR, OTLP export) deserialized with the key path of a field it
/// rejects; `prefix` goes before that path (`export 2: `). Trailing text is refused, as
/// `serde_json::from_str` does.
pub(crate) fn parse_document<T: serde::de::DeserializeOwned>(
    file: &str,
    text: &str,
    de: &mut serde_json::Deserializer<serde_json::de::StrRead<'_>>,
    prefix: &str,
) -> Result<T, LogError> {
    serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let path = e.path().to_string();
        let mut error = document_error(file, text, e.inner());
        let inner = e.into_inner();
        // A data error names its field by the path (a missing or unknown key's under it);
        // serde's own guess, the key before the column, is kept for syntax errors.
        if inner.classify() == serde_json::error::Category::Data && !matches!(&*path, "." | "?") {
            error.field = Some(match named_field(&inner.to_string()) {
                Some(name) => format!("{prefix}{path}.{name}"),
                None => format!("{prefix}{path}"),
            });
        }
        error
    })
}

/// A serde error in a whole JSON document (HAR, OTLP), located by its line and column.
pub(crate) fn document_error(file: &str, text: &str, e: &serde_json::Error) -> LogError {
    let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
    let (field, message) = describe_serde(e, line, "file");
    LogError {
        file: file.to_owned(),
        line: Some(e.line()),
        column: Some(e.column()),
        field,
        message,
    }
}

/// The field a serde error is about and its message without serde's location suffix; `unit`
/// is what an early end cuts short (`line` or `file`).
pub(crate) fn describe_serde(
    error: &serde_json::Error,
    line: &str,
    unit: &str,
) -> (Option<String>, String) {
    let text = error.to_string();
    let message = match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    };
    let named = named_field(&message);
    let eof = error.classify() == serde_json::error::Category::Eof;
    let field = named.or_else(|| (!eof).then(|| key_before(line, error.column())).flatten());
    let message = if message.contains("untagged enum Nanos") {
        "expected whole nanoseconds since the Unix epoch (a string of digits or a number)".into()
    } else if message.contains("untagged enum Int") {
        "expected a whole number from -2^63 to 2^63 - 1 (a string of digits or a number)".into()
    } else {
        match error.classify() {
            serde_json::error::Category::Eof => format!("{message} (the {unit} is cut short)"),
            serde_json::error::Category::Syntax => format!("{message} (not valid JSON)"),
            _ => message,
        }
    };
    (field, message)
}

/// The key a missing, unknown or duplicate field error names.
fn named_field(message: &str) -> Option<String> {
    ["missing field `", "unknown field `", "duplicate field `"]
        .iter()
        .find_map(|prefix| {
            let rest = message.strip_prefix(prefix)?;
            Some(rest[..rest.find('`')?].to_owned())
        })
}

/// The last object key that starts before `column` (1-based) of `line`: the field whose value
/// serde rejected there.
fn key_before(line: &str, column: usize) -> Option<String> {
    let prefix = line.get(..column.min(line.len()))?;
    let colon = prefix.rfind("\":")?;
    let open = prefix[..colon].rfind('"')?;
    Some(prefix[open + 1..colon].to_owned())
}

/// A number as a message shows it: huge ones in exponent form, not three hundred digits.
fn short(x: f64) -> String {
    if x.abs() >= 1e12 {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}

/// The longest request a log may hold \[s\]: the longest latency a world describes
/// (`latency.mean_s`, `median_s`, … are at most 10^6 s).
pub const MAX_DURATION_S: f64 = 1e6;

/// The largest time a log may hold \[s\]: Unix seconds reach it in the year 2286, so a larger
/// one is in other units.
pub const MAX_TIME_S: f64 = 1e10;

/// The longest endpoint name a log may hold, in characters.
pub const MAX_ENDPOINT_CHARS: usize = 256;

/// The most prompt tokens one request may count: a world's token sizes stop there.
pub const MAX_TOKENS: f64 = 1e8;

/// The most output tokens, or `max_tokens`, one request may count: the fitted world asks for
/// the largest of them as its `tokens.max_tokens`, which stops there.
pub const MAX_OUTPUT_TOKENS: f64 = 1e7;

/// The longest Retry-After or limit reset a log may hold \[s\]: a world's waits stop there.
pub const MAX_WAIT_S: f64 = 1e9;

/// The longest silence between two requests of one log \[s\]: longer than any latency a world
/// describes, so a request that far from every other is on another clock, in other units or
/// from another run.
pub const MAX_GAP_S: f64 = MAX_DURATION_S;

/// The longest stretch one log may cover \[s\] (116 days): the fit bins a log's failures every
/// two seconds over its whole stretch, so the bound is also its memory's.
pub const MAX_SPAN_S: f64 = 1e7;

/// A request whose send time cannot belong to the log's run, given every request's send time
/// and where its reader found it: the place of the one to blame and why. Past a silence of
/// more than [`MAX_GAP_S`], the request on the smaller side of it (the later side on a tie);
/// past [`MAX_SPAN_S`] from the first request, the first request beyond it.
pub(crate) fn implausible_times<P: Copy>(starts: &mut [(f64, P)]) -> Option<(P, String)> {
    starts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = starts.len();
    let widest = (1..n).max_by(|&a, &b| {
        let gap = |i: usize| starts[i].0 - starts[i - 1].0;
        gap(a).total_cmp(&gap(b)).then(b.cmp(&a))
    })?;
    let gap = starts[widest].0 - starts[widest - 1].0;
    const HINT: &str = "one log holds one run: are all the times seconds on one clock (not \
                        milliseconds, not a mix of clocks)? Put runs in files of their own";
    if gap > MAX_GAP_S {
        let (blamed, other, side) = if widest < n - widest {
            (widest - 1, widest, "before")
        } else {
            (widest, widest - 1, "after")
        };
        let message = format!(
            "this request is sent at {}, {} {side} the nearest other in the file (at {}): \
             more than 10^6 s (11.6 days) of silence; {HINT}",
            short(starts[blamed].0),
            span_text(gap),
            short(starts[other].0)
        );
        return Some((starts[blamed].1, message));
    }
    let first = starts[0].0;
    let beyond = starts.iter().position(|s| s.0 - first > MAX_SPAN_S)?;
    let message = format!(
        "this request is sent at {}, {} after the file's first (at {}), and a fit reads at most \
         10^7 s (116 days) of one log; {HINT}, or fit a shorter stretch",
        short(starts[beyond].0),
        span_text(starts[beyond].0 - first),
        short(first)
    );
    Some((starts[beyond].1, message))
}

/// `2.000e9 s (63.4 years)`, `1500000 s (17.4 days)`: a long stretch with a unit one can
/// picture.
fn span_text(s: f64) -> String {
    const DAY: f64 = 86_400.0;
    const YEAR: f64 = 365.25 * DAY;
    let seconds = if s >= 1e9 {
        format!("{s:.3e}")
    } else {
        format!("{s:.0}")
    };
    let pictured = match s / YEAR {
        years if years >= 1e4 => format!("{years:.2e} years"),
        years if years >= 1.0 => format!("{years:.1} years"),
        _ => format!("{:.1} days", s / DAY),
    };
    format!("{seconds} s ({pictured})")
}

/// The status and error kind the outcome allows (docs/request-log.md's table of outcomes): a
/// 429 logged as an `error` would count as a failure and hide a refusal.
fn check_outcome(e: &Entry) -> Result<(), (&'static str, String)> {
    use EntryOutcome as O;
    use ErrorKind as K;
    let name = serde_json::to_value(e.outcome).expect("an outcome is a string");
    let name = name.as_str().expect("an outcome is a string");
    let (fits, says): (fn(u16) -> bool, &str) = match e.outcome {
        O::Ok => (|s| s / 100 == 2, "a success is a 2xx answer"),
        O::Error => (
            |s| s / 100 == 5,
            "an error is a 5xx answer or none (a 429 is `rate_limited`; a 400, 401 or 413 \
             `rejected`)",
        ),
        O::Overloaded => (
            |s| s / 100 == 5,
            "an overload is a 529 (or another 5xx) or none",
        ),
        O::RateLimited => (
            |s| s == 429 || s == 503,
            "a rate limit is a 429 (or a 503 with Retry-After, a vendor shedding load)",
        ),
        O::Rejected => (
            |s| s / 100 == 4 && s != 429,
            "a rejection is a 4xx answer other than 429, or none",
        ),
        O::ClientTimeout | O::Cancelled | O::Unfinished => (
            |s| s / 100 == 2,
            "a request cut short has no status, or the 2xx its headers had",
        ),
    };
    if let Some(status) = e.status.filter(|s| !fits(*s)) {
        return Err((
            "status",
            format!(
                "{status} with outcome `{name}`: {says}; give the outcome the status says \
                 (docs/request-log.md)"
            ),
        ));
    }
    let kinds: &[K] = match e.outcome {
        O::Error => &[K::Upstream, K::Connection, K::Timeout],
        O::Rejected => &[K::ConnectionRefused, K::Unauthorized, K::TooLarge],
        _ => &[],
    };
    if let Some(kind) = e.error.filter(|k| !kinds.contains(k)) {
        let kind = serde_json::to_value(kind).expect("a kind is a string");
        let kind = kind.as_str().expect("a kind is a string");
        let hint = match e.outcome {
            O::Ok => "a success has no error; give the outcome `error` or leave the error out",
            O::Error => "an error's kind is `upstream`, `connection` or `timeout`",
            O::Rejected => {
                "a rejection's kind is `connection_refused`, `unauthorized` or `too_large`"
            }
            _ => "only `error` and `rejected` take a kind; leave it out",
        };
        return Err(("error", format!("`{kind}` with outcome `{name}`: {hint}")));
    }
    // The kind says what the status must be: a kind read against it would count the failure
    // as what it was not (a 503 counted as a broken connection).
    if let (Some(kind), Some(status)) = (e.error, e.status) {
        let (fits, says) = match kind {
            K::Connection => (false, "a broken connection has no answer, so no status"),
            K::ConnectionRefused => (false, "a refused connection has no answer, so no status"),
            K::Timeout => (status == 504, "a server timeout has no status, or 504"),
            K::Upstream => (status / 100 == 5, "an upstream failure is a 5xx"),
            K::Unauthorized => (
                status == 401 || status == 403,
                "an unauthorized request is a 401 or 403",
            ),
            K::TooLarge => (
                status == 400 || status == 413,
                "a request too large is a 400 or 413",
            ),
        };
        if !fits {
            let kind = serde_json::to_value(kind).expect("a kind is a string");
            let kind = kind.as_str().expect("a kind is a string");
            return Err((
                "error",
                format!(
                    "`{kind}` with status {status}: {says}; give the kind the status says \
                     (docs/request-log.md)"
                ),
            ));
        }
    }
    if e.outcome == O::RateLimited && e.status == Some(503) && e.retry_after_s.is_none() {
        return Err((
            "status",
            "503 with outcome `rate_limited` and no `retry_after_s`: a 503 is a rate limit only \
             with Retry-After (a vendor shedding load); without it, it is an `error` of kind \
             `upstream`"
                .into(),
        ));
    }
    Ok(())
}

/// What serde cannot check: finite, ordered times and counts that make sense.
pub(crate) fn check_entry(e: &Entry) -> Result<(), (&'static str, String)> {
    let finite = |name: &'static str, x: f64| {
        if x.is_finite() {
            Ok(())
        } else {
            Err((name, format!("{x} is not a finite number")))
        }
    };
    finite("start_s", e.start_s)?;
    finite("end_s", e.end_s)?;
    if e.end_s < e.start_s {
        return Err((
            "end_s",
            format!(
                "the request ends ({}) before it starts ({}); both are seconds on one clock",
                e.end_s, e.start_s
            ),
        ));
    }
    if e.end_s - e.start_s > MAX_DURATION_S {
        return Err((
            "end_s",
            format!(
                "the request lasts {} s (end_s - start_s), longer than any latency a world \
                 describes (10^6 s, 11.6 days); are both times in seconds on one clock?",
                short(e.end_s - e.start_s)
            ),
        ));
    }
    if let Some(ttft) = e.ttft_s
        && ttft.is_finite()
        && ttft > (e.end_s - e.start_s) * (1.0 + 1e-9) + 1e-6
    {
        return Err((
            "ttft_s",
            format!(
                "the first token ({ttft} s after the start) comes after the request ends ({} s \
                 after it); both count from start_s, in seconds",
                e.end_s - e.start_s
            ),
        ));
    }
    if let Some(status) = e.status
        && !(100..=599).contains(&status)
    {
        return Err((
            "status",
            format!(
                "{status} is not an HTTP status (100 to 599); leave it out when there was none"
            ),
        ));
    }
    if e.endpoint.is_empty() {
        return Err((
            "endpoint",
            "is empty; name the endpoint or deployment".into(),
        ));
    }
    if let Some(arrived) = e.arrived_s {
        finite("arrived_s", arrived)?;
        if arrived > e.start_s {
            return Err((
                "arrived_s",
                format!(
                    "the job arrives ({arrived}) after its request was sent ({}); arrived_s is \
                     when the client's queue took the job, at or before start_s",
                    e.start_s
                ),
            ));
        }
        if e.start_s - arrived > MAX_GAP_S {
            return Err((
                "arrived_s",
                format!(
                    "the job waits {} in the client's queue before this request is sent (at \
                     {}): more than 10^6 s (11.6 days), so the two are not times of one run; \
                     leave arrived_s out (not 0) when the job did not wait",
                    span_text(e.start_s - arrived),
                    short(e.start_s)
                ),
            ));
        }
        let later = e.step.is_some_and(|s| s > 0)
            || e.attempt.is_some_and(|a| a > 1)
            || e.call.is_some_and(|c| c > 0)
            || e.hedge;
        if later {
            return Err((
                "arrived_s",
                "is only for a job's first request (step 0, attempt 1, call 0, not a hedge); \
                 leave it out of the others"
                    .into(),
            ));
        }
    }
    for (name, t) in [
        ("start_s", e.start_s),
        ("end_s", e.end_s),
        ("arrived_s", e.arrived_s.unwrap_or(0.0)),
    ] {
        if t > MAX_TIME_S {
            return Err((
                name,
                format!(
                    "{} s is past 10^10 s (the year 2286 as Unix seconds); are these \
                     milliseconds or nanoseconds?",
                    short(t)
                ),
            ));
        }
        if t < -MAX_TIME_S {
            return Err((
                name,
                format!(
                    "{} s is before -10^10 s (the year 1653 as Unix seconds); times are \
                     seconds on one clock, from the Unix epoch or the run's start",
                    short(t)
                ),
            ));
        }
    }
    if let Some(status) = e.status.filter(|s| matches!(s / 100, 1 | 3)) {
        return Err((
            "status",
            format!(
                "{status} is an interim answer or a redirect, neither a success nor a failure \
                 of the API; log each request with its final answer"
            ),
        ));
    }
    check_outcome(e)?;
    let non_negative = [
        ("retry_after_s", e.retry_after_s),
        ("input_tokens", e.input_tokens),
        ("output_tokens", e.output_tokens),
        ("max_tokens", e.max_tokens),
        ("ttft_s", e.ttft_s),
    ];
    for (name, value) in non_negative {
        if let Some(x) = value
            && !(x.is_finite() && x >= 0.0)
        {
            return Err((name, format!("{x} must be a finite number >= 0")));
        }
    }
    // A name the world could not take would fail only in the fitted world, far from here.
    if e.endpoint.chars().any(char::is_control) {
        return Err((
            "endpoint",
            format!(
                "`{}` holds a control character (a line break, a tab, …); an endpoint's name \
                 is one line of text",
                e.endpoint.escape_debug()
            ),
        ));
    }
    if !e.endpoint.is_empty() && e.endpoint.trim().is_empty() {
        return Err((
            "endpoint",
            "is only blanks; an endpoint's name must show in a table".into(),
        ));
    }
    if e.endpoint.chars().count() > MAX_ENDPOINT_CHARS {
        return Err((
            "endpoint",
            format!(
                "is {} characters long; an endpoint's name (a host, a deployment) has at most \
                 {MAX_ENDPOINT_CHARS}",
                e.endpoint.chars().count()
            ),
        ));
    }
    // Past what a world can hold, a value would fail only in the fitted world, far from here.
    let tokens = [
        ("input_tokens", e.input_tokens, MAX_TOKENS, "10^8"),
        ("output_tokens", e.output_tokens, MAX_OUTPUT_TOKENS, "10^7"),
        ("max_tokens", e.max_tokens, MAX_OUTPUT_TOKENS, "10^7"),
    ];
    for (name, value, most, shown) in tokens {
        if let Some(x) = value.filter(|x| *x > most) {
            return Err((
                name,
                format!(
                    "{} tokens in one request is more than a world describes ({shown}); are \
                     these tokens, not bytes or a running total?",
                    short(x)
                ),
            ));
        }
    }
    if let Some(x) = e.retry_after_s.filter(|x| *x > MAX_WAIT_S) {
        return Err((
            "retry_after_s",
            format!(
                "a Retry-After of {} s is longer than a world describes (10^9 s); is it in \
                 seconds?",
                short(x)
            ),
        ));
    }
    for h in &e.ratelimit {
        let fields = [
            ("limit", h.limit),
            ("remaining", h.remaining),
            ("reset_s", h.reset_s),
        ];
        for (name, x) in fields {
            if !(x.is_finite() && x >= 0.0) {
                return Err((
                    "ratelimit",
                    format!("its `{name}` {x} must be a finite number >= 0"),
                ));
            }
        }
        if h.remaining > h.limit {
            return Err((
                "ratelimit",
                format!(
                    "its `remaining` {} is above its `limit` {}: a header says how much of the \
                     limit is left",
                    h.remaining, h.limit
                ),
            ));
        }
        if h.reset_s > MAX_WAIT_S {
            return Err((
                "ratelimit",
                format!(
                    "its `reset_s` {} is longer than a world describes (10^9 s); is it in \
                     seconds, not a Unix time?",
                    short(h.reset_s)
                ),
            ));
        }
    }
    if e.attempt == Some(0) {
        return Err(("attempt", "attempts count from 1 (the first try)".into()));
    }
    Ok(())
}

/// The log of one file's JSON Lines `text` (for tests).
#[cfg(test)]
pub fn log_of(text: &str) -> Log {
    let mut entries = Vec::new();
    read_jsonl("t.jsonl", text.as_bytes(), &mut |e| entries.push(e)).expect("a valid log");
    let mut log = Log::default();
    log.push_segment("t.jsonl", entries);
    log
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> LogError {
        read_jsonl("log.jsonl", text.as_bytes(), &mut |_| ()).expect_err("refused")
    }

    /// The same lines in any order make the same log: requests, endpoint numbers, headers.
    #[test]
    fn the_order_of_the_lines_does_not_matter() {
        let lines = [
            r#"{"start_s":0,"end_s":1,"endpoint":"b","outcome":"ok","status":200,"ratelimit":[{"unit":"requests","limit":10,"remaining":9,"reset_s":6}]}"#,
            r#"{"start_s":0,"end_s":0,"endpoint":"b","outcome":"rate_limited","status":429}"#,
            r#"{"start_s":0,"end_s":2,"endpoint":"a","outcome":"ok","status":200}"#,
            r#"{"start_s":0.5,"end_s":1,"endpoint":"c","outcome":"error","status":503,"ratelimit":[{"unit":"requests","limit":10,"remaining":8,"reset_s":5}]}"#,
            r#"{"start_s":0.5,"end_s":0.5,"endpoint":"a","outcome":"rate_limited","status":429}"#,
        ];
        let shown = |order: &[usize]| {
            let text: Vec<&str> = order.iter().map(|&i| lines[i]).collect();
            let log = log_of(&text.join("\n"));
            format!(
                "{:?} {:?} {:?}",
                log.endpoints, log.segments[0].requests, log.segments[0].headers
            )
        };
        let first = shown(&[0, 1, 2, 3, 4]);
        for order in [[4, 3, 2, 1, 0], [1, 4, 0, 3, 2], [2, 0, 4, 1, 3]] {
            assert_eq!(shown(&order), first, "{order:?}");
        }
        let log = log_of(&lines.join("\n"));
        assert_eq!(
            log.endpoints,
            ["b", "a", "c"],
            "in the order of their first request (sent at 0, ended first)"
        );
        let at_zero: Vec<bool> = log.segments[0].requests[..3]
            .iter()
            .map(Request::admitted)
            .collect();
        assert_eq!(
            at_zero,
            [true, true, false],
            "admissions before a refusal at one instant"
        );
    }

    #[test]
    fn bad_lines_are_located_by_line_column_and_field() {
        let ok = r#"{"start_s":0,"end_s":1,"endpoint":"a","outcome":"ok"}"#;
        let e = error(&format!(
            "{ok}\n{ok}\n{{\"start_s\":0,\"end_s\":\"x\",\"endpoint\":\"a\",\"outcome\":\"ok\"}}"
        ));
        assert_eq!((e.line, e.field.as_deref()), (Some(3), Some("end_s")));
        assert!(e.message.contains("invalid type"), "{e}");
        let e = error(r#"{"start_s":0,"end_s":1,"outcome":"ok"}"#);
        assert_eq!(e.field.as_deref(), Some("endpoint"));
        assert!(e.to_string().starts_with("log.jsonl:1:"), "{e}");
        let e = error(r#"{"start_s":0,"end_s":1,"endpoint":"a","outcome":"ok","stat":200}"#);
        assert_eq!(e.field.as_deref(), Some("stat"));
        let e = error(r#"{"start_s":0,"end_s":1,"endpoint":"a","outcome":"#);
        assert!(e.message.contains("cut short"), "{e}");
        let e = error(r#"{"start_s":5,"end_s":1,"endpoint":"a","outcome":"ok"}"#);
        assert_eq!((e.field.as_deref(), e.column), (Some("end_s"), Some(14)));
        let e = error(r#"{"start_s":0,"end_s":1,"endpoint":"a","outcome":"fine"}"#);
        assert_eq!(e.field.as_deref(), Some("outcome"));
        assert!(e.message.contains("rate_limited"), "{e}");
        let e = error(r#"{"start_s":1,"arrived_s":2,"end_s":3,"endpoint":"a","outcome":"ok"}"#);
        assert_eq!(e.field.as_deref(), Some("arrived_s"));
        assert!(e.message.contains("after its request was sent"), "{e}");
        let e = error(
            r#"{"start_s":1,"arrived_s":0,"end_s":3,"endpoint":"a","outcome":"ok","attempt":2}"#,
        );
        assert!(e.message.contains("only for a job's first request"), "{e}");
    }

    /// An error's kind and its status must agree; a 503 is a rate limit only with Retry-After.
    #[test]
    fn a_kind_that_contradicts_its_status_is_refused() {
        let line = |outcome: &str, status: u16, kind: &str| {
            format!(
                r#"{{"start_s":0,"end_s":1,"endpoint":"a","outcome":"{outcome}","status":{status},"error":"{kind}"}}"#
            )
        };
        for (outcome, status, kind) in [
            ("error", 503, "connection"),
            ("error", 500, "timeout"),
            ("error", 502, "connection"),
            ("rejected", 401, "too_large"),
            ("rejected", 400, "unauthorized"),
            ("rejected", 403, "connection_refused"),
        ] {
            let e = error(&line(outcome, status, kind));
            assert_eq!(e.field.as_deref(), Some("error"), "{e}");
            assert!(
                e.message
                    .contains(&format!("`{kind}` with status {status}")),
                "{e}"
            );
        }
        for (outcome, status, kind) in [
            ("error", 504, "timeout"),
            ("error", 500, "upstream"),
            ("rejected", 403, "unauthorized"),
            ("rejected", 413, "too_large"),
        ] {
            let text = line(outcome, status, kind);
            assert!(
                read_jsonl("log.jsonl", text.as_bytes(), &mut |_| ()).is_ok(),
                "{text}"
            );
        }
        let e = error(
            r#"{"start_s":0,"end_s":1,"endpoint":"a","outcome":"rate_limited","status":503}"#,
        );
        assert_eq!(e.field.as_deref(), Some("status"));
        assert!(e.message.contains("no `retry_after_s`"), "{e}");
        let shed = r#"{"start_s":0,"end_s":1,"endpoint":"a","outcome":"rate_limited","status":503,"retry_after_s":2}"#;
        assert!(read_jsonl("log.jsonl", shed.as_bytes(), &mut |_| ()).is_ok());
    }
}
