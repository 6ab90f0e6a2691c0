//! The OpenAI chat-completions wire format, as far as `simbench serve` speaks it: reading a
//! request body into what the world needs (prompt size, `max_tokens`, streaming), and writing
//! answers, stream chunks and errors in that API's shapes. Pure: bytes in, strings out, so the
//! parser can be fuzzed without a socket.
//!
//! The prompt's size is an estimate, as no tokenizer is shipped: 4 characters of message text
//! per token, plus 4 tokens per message (the chat format's own overhead). The answer's text is
//! synthetic: one ` tok` per output token.

use serde_json::{Value, json};

/// What a chat-completions request asks, as far as the world cares.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    /// The `model` named (echoed back; a world endpoint may be chosen by it).
    pub model: String,
    /// `stream: true`: server-sent events.
    pub stream: bool,
    /// `stream_options.include_usage`: a last chunk with the usage.
    pub include_usage: bool,
    /// `max_completion_tokens`, else `max_tokens`, when given.
    pub max_tokens: Option<u32>,
    /// Estimated prompt tokens.
    pub prompt_tokens: u32,
}

/// An error answer: HTTP status and the body's `error` fields.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// `error.message`.
    pub message: String,
    /// `error.type`.
    pub kind: &'static str,
    /// `error.param`: the offending field, if one.
    pub param: Option<String>,
    /// `error.code`.
    pub code: Option<&'static str>,
}

impl ApiError {
    /// A 400 `invalid_request_error` about `param`.
    pub fn invalid(param: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError {
            status: 400,
            message: message.into(),
            kind: "invalid_request_error",
            param: param.map(str::to_owned),
            code: None,
        }
    }

    /// The JSON body: `{"error": {"message", "type", "param", "code"}}`.
    pub fn body(&self) -> String {
        json!({
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        })
        .to_string()
    }
}

/// Characters of message text per estimated token, and tokens added per message.
const CHARS_PER_TOKEN: usize = 4;
const TOKENS_PER_MESSAGE: usize = 4;

/// The largest `max_tokens` accepted (larger asks are refused, not clamped).
pub const MAX_TOKENS: u32 = 1_000_000;

/// Reads a request body.
pub fn parse(body: &[u8]) -> Result<ChatRequest, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::invalid(
            None,
            format!("We could not parse the JSON body of your request: {e}."),
        )
    })?;
    let Value::Object(map) = value else {
        return Err(ApiError::invalid(
            None,
            "The request body must be a JSON object.",
        ));
    };
    let model = match map.get("model") {
        Some(Value::String(m)) if !m.is_empty() => m.clone(),
        Some(_) => {
            return Err(ApiError::invalid(
                Some("model"),
                "`model` must be a non-empty string.",
            ));
        }
        None => {
            return Err(ApiError::invalid(
                Some("model"),
                "Missing required parameter: 'model'.",
            ));
        }
    };
    let messages = match map.get("messages") {
        Some(Value::Array(list)) if !list.is_empty() => list,
        Some(Value::Array(_)) => {
            return Err(ApiError::invalid(
                Some("messages"),
                "`messages` must not be empty.",
            ));
        }
        Some(_) => {
            return Err(ApiError::invalid(
                Some("messages"),
                "`messages` must be an array.",
            ));
        }
        None => {
            return Err(ApiError::invalid(
                Some("messages"),
                "Missing required parameter: 'messages'.",
            ));
        }
    };
    let mut chars = 0usize;
    for (i, message) in messages.iter().enumerate() {
        chars += message_chars(message)
            .map_err(|(at, why)| ApiError::invalid(Some(&format!("messages[{i}]{at}")), why))?;
    }
    let stream = flag(&map, "stream", "")?;
    let include_usage = match map.get("stream_options") {
        None | Some(Value::Null) => false,
        Some(Value::Object(options)) => flag(options, "include_usage", "stream_options.")?,
        Some(_) => {
            return Err(ApiError::invalid(
                Some("stream_options"),
                "`stream_options` must be an object.",
            ));
        }
    };
    let max_tokens = match ["max_completion_tokens", "max_tokens"]
        .iter()
        .find_map(|k| map.get(*k).filter(|v| !v.is_null()).map(|v| (*k, v)))
    {
        None => None,
        Some((key, v)) => match whole_number(v) {
            Some(n) if n >= 1 && n <= u64::from(MAX_TOKENS) => Some(n as u32),
            _ => {
                return Err(ApiError::invalid(
                    Some(key),
                    format!("`{key}` must be a whole number from 1 to {MAX_TOKENS}."),
                ));
            }
        },
    };
    let prompt = chars.div_ceil(CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE * messages.len();
    Ok(ChatRequest {
        model,
        stream,
        include_usage,
        max_tokens,
        prompt_tokens: u32::try_from(prompt).unwrap_or(u32::MAX),
    })
}

/// A JSON number that is a whole one, `2.0` and `1e2` too (JSON does not tell them from `2`
/// and `100`, and some clients write every number as a float); `2.5` is not.
fn whole_number(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|x| x.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(x))
            .map(|x| x as u64)
    })
}

/// A boolean field, false when absent or null; `within` prefixes its name in the error.
fn flag(map: &serde_json::Map<String, Value>, key: &str, within: &str) -> Result<bool, ApiError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ApiError::invalid(
            Some(&format!("{within}{key}")),
            format!("`{within}{key}` must be a boolean."),
        )),
    }
}

/// The roles the chat completions API takes.
const ROLES: [&str; 6] = [
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
];

const MESSAGE_SHAPE: &str = "Each message must be an object with a `role` string and a \
    `content` string or array of content parts (null or absent only for an assistant's turn).";

/// Characters of a message's text; else where in the message it is wrong (`.role`, a part's
/// `.content[2]`) and why.
fn message_chars(message: &Value) -> Result<usize, (String, String)> {
    let shape = |at: &str| (at.to_owned(), MESSAGE_SHAPE.to_owned());
    let Value::Object(m) = message else {
        return Err(shape(""));
    };
    let role = m
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| shape(""))?;
    if !ROLES.contains(&role) {
        let supported = ROLES.map(|r| format!("'{r}'")).join(", ");
        return Err((
            ".role".into(),
            format!("Invalid value: '{role}'. Supported values are: {supported}."),
        ));
    }
    let content = match m.get("content") {
        // Only an assistant's turn may come without text (it made tool calls instead).
        None | Some(Value::Null) if role == "assistant" => 0,
        None | Some(Value::Null) => return Err(shape(".content")),
        Some(Value::String(s)) => s.chars().count(),
        Some(Value::Array(parts)) => {
            let mut n = 0;
            for (j, part) in parts.iter().enumerate() {
                n += part_chars(part).map_err(|why| (format!(".content[{j}]"), why))?;
            }
            n
        }
        Some(_) => return Err(shape(".content")),
    };
    let name = m
        .get("name")
        .and_then(Value::as_str)
        .map_or(0, |s| s.chars().count());
    Ok(content + name)
}

/// The content part types the API takes.
const PART_TYPES: [&str; 5] = ["text", "refusal", "image_url", "input_audio", "file"];

/// Characters of a content part: a `text` part's text (or a `refusal` part's); images, audio
/// and files count as nothing, since only text is estimated. Another type is refused, as the
/// API refuses it: a client that sends one has a bug a real endpoint would show.
fn part_chars(part: &Value) -> Result<usize, String> {
    let kind = part.get("type").and_then(Value::as_str);
    let field = match kind {
        Some("text") => "text",
        Some("refusal") => "refusal",
        Some(other) if PART_TYPES.contains(&other) => return Ok(0),
        Some(other) => {
            return Err(format!(
                "Invalid content part type `{}`: the types are {}.",
                other.escape_debug(),
                PART_TYPES.map(|t| format!("`{t}`")).join(", ")
            ));
        }
        None => return Err("Each content part must be an object with a `type` string.".into()),
    };
    match part.get(field).and_then(Value::as_str) {
        Some(t) => Ok(t.chars().count()),
        None => Err(format!("A `{field}` part needs a `{field}` string.")),
    }
}

/// The synthetic text of `tokens` output tokens.
pub fn text(tokens: u32) -> String {
    " tok".repeat(tokens as usize)
}

/// Why the answer stopped: `length` when it ran into `max_tokens`.
pub fn finish_reason(output: u32, max_tokens: Option<u32>) -> &'static str {
    if max_tokens.is_some_and(|m| output >= m) {
        "length"
    } else {
        "stop"
    }
}

/// The `usage` object.
fn usage(prompt: u32, completion: u32) -> Value {
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": u64::from(prompt) + u64::from(completion),
    })
}

/// What every answer to one request shares.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope<'a> {
    /// `chatcmpl-…`.
    pub id: &'a str,
    /// Unix seconds.
    pub created: u64,
    /// The model asked for.
    pub model: &'a str,
}

/// A whole (non-streaming) answer.
pub fn completion(env: &Envelope<'_>, request: &ChatRequest, output: u32) -> String {
    json!({
        "id": env.id,
        "object": "chat.completion",
        "created": env.created,
        "model": env.model,
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": text(output), "refusal": null },
            "logprobs": null,
            "finish_reason": finish_reason(output, request.max_tokens),
        }],
        "usage": usage(request.prompt_tokens, output),
    })
    .to_string()
}

/// One server-sent event carrying a stream chunk with `delta` (and `finish_reason`).
pub fn chunk(env: &Envelope<'_>, delta: Value, finish: Option<&str>) -> String {
    let body = json!({
        "id": env.id,
        "object": "chat.completion.chunk",
        "created": env.created,
        "model": env.model,
        "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }],
    });
    format!("data: {body}\n\n")
}

/// The first chunk: the role, no text yet.
pub fn first_chunk(env: &Envelope<'_>) -> String {
    chunk(env, json!({ "role": "assistant", "content": "" }), None)
}

/// A chunk of `tokens` output tokens.
pub fn text_chunk(env: &Envelope<'_>, tokens: u32) -> String {
    chunk(env, json!({ "content": text(tokens) }), None)
}

/// The chunks that end a stream: the finish reason, the usage when asked, then `[DONE]`.
pub fn last_chunks(env: &Envelope<'_>, request: &ChatRequest, output: u32) -> String {
    let mut out = chunk(
        env,
        json!({}),
        Some(finish_reason(output, request.max_tokens)),
    );
    if request.include_usage {
        let body = json!({
            "id": env.id,
            "object": "chat.completion.chunk",
            "created": env.created,
            "model": env.model,
            "choices": [],
            "usage": usage(request.prompt_tokens, output),
        });
        out.push_str(&format!("data: {body}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    out
}

/// An error inside a stream that has begun (the status line is already sent).
pub fn stream_error(error: &ApiError) -> String {
    format!("data: {}\n\n", error.body())
}

/// `x` rounded up to a whole number, 0 below zero. A value within a billionth (relative, at
/// least 1e-9 absolute) above a whole number is that number: it is the float error of the
/// scaling, not time, and a plain ceiling would add a whole unit for it (2.047 s × 1000 is
/// 2047.0000000000002, whose ceiling sent `retry-after-ms: 2048` for a 2.047 s Retry-After).
pub fn ceil_whole(x: f64) -> u64 {
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    if x >= u64::MAX as f64 {
        return u64::MAX;
    }
    let tolerance = (x * 1e-9).max(1e-9);
    (x - tolerance).ceil().clamp(0.0, u64::MAX as f64) as u64
}

/// A duration as OpenAI's `x-ratelimit-reset-*` headers write it: `20ms`, `1.5s`, `6m0s`.
pub fn duration(seconds: f64) -> String {
    // Whole milliseconds, rounded up (a client that waits this long finds the room back),
    // then split: "450ms", "6s", "6m0s", "23h59m59.441s", as Go prints a duration.
    let ms = ceil_whole(seconds * 1000.0);
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = format!("{}", (ms % 60_000) as f64 / 1000.0);
    let minutes = ms / 60_000;
    match (minutes / 60, minutes % 60) {
        (0, 0) => format!("{secs}s"),
        (0, m) => format!("{m}m{secs}s"),
        (h, m) => format!("{h}h{m}m{secs}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(body: &str) -> ChatRequest {
        parse(body.as_bytes()).unwrap_or_else(|e| panic!("{body}: {e:?}"))
    }

    #[test]
    fn a_request_reads_its_size_stream_and_limit() {
        let r = ok(
            r#"{"model":"m","messages":[{"role":"user","content":"abcdefgh"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":50}"#,
        );
        assert_eq!(r.prompt_tokens, 2 + 4);
        assert!(r.stream && r.include_usage);
        assert_eq!(r.max_tokens, Some(50));
        let parts = ok(
            r#"{"model":"m","messages":[{"role":"user","name":"ab","content":[{"type":"text","text":"abcd"},{"type":"image_url","image_url":{"url":"x"}}]},{"role":"assistant","content":null}],"max_completion_tokens":7,"max_tokens":9}"#,
        );
        assert_eq!(parts.prompt_tokens, 2 + 8);
        assert_eq!(parts.max_tokens, Some(7));
        assert!(!parts.stream);
        // Whole numbers written as floats are whole numbers.
        for (text, n) in [("2.0", 2), ("1e2", 100), ("1E2", 100), ("7.000", 7)] {
            let body = format!(
                r#"{{"model":"m","messages":[{{"role":"user","content":""}}],"max_tokens":{text}}}"#
            );
            assert_eq!(ok(&body).max_tokens, Some(n), "{text}");
        }
    }

    #[test]
    fn bad_requests_name_the_field_in_the_apis_error_shape() {
        let cases = [
            ("{", None),
            ("[]", None),
            (
                r#"{"messages":[{"role":"user","content":"x"}]}"#,
                Some("model"),
            ),
            (r#"{"model":"m"}"#, Some("messages")),
            (r#"{"model":"m","messages":[]}"#, Some("messages")),
            (
                r#"{"model":"m","messages":[{"content":"x"}]}"#,
                Some("messages[0]"),
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":5}]}"#,
                Some("messages[0].content"),
            ),
            (
                r#"{"model":"m","messages":[{"role":"user"}]}"#,
                Some("messages[0].content"),
            ),
            (
                r#"{"model":"m","messages":[{"role":"system","content":null}]}"#,
                Some("messages[0].content"),
            ),
            (
                r#"{"model":"m","messages":[{"role":"wizard","content":"x"}]}"#,
                Some("messages[0].role"),
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text"}]}]}"#,
                Some("messages[0].content[1]"),
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":[{"text":"a"}]}]}"#,
                Some("messages[0].content[0]"),
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"bogus","x":1}]}]}"#,
                Some("messages[0].content[1]"),
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":""}],"stream_options":{"include_usage":"yes"}}"#,
                Some("stream_options.include_usage"),
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":""}],"stream":"yes"}"#,
                Some("stream"),
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":""}],"max_tokens":0}"#,
                Some("max_tokens"),
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":""}],"max_tokens":-3}"#,
                Some("max_tokens"),
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":""}],"max_tokens":1.5}"#,
                Some("max_tokens"),
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":""}],"max_tokens":2.5}"#,
                Some("max_tokens"),
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":""}],"max_tokens":1e7}"#,
                Some("max_tokens"),
            ),
            (
                r#"{"model":"m","messages":[{"role":"user","content":""}],"max_completion_tokens":0.0}"#,
                Some("max_completion_tokens"),
            ),
        ];
        for (body, param) in cases {
            let e = parse(body.as_bytes()).expect_err(body);
            assert_eq!(e.status, 400, "{body}");
            assert_eq!(e.param.as_deref(), param, "{body}");
            let json: Value = serde_json::from_str(&e.body()).unwrap();
            assert_eq!(json["error"]["type"], "invalid_request_error");
            assert!(
                json["error"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty())
            );
        }
    }

    #[test]
    fn answers_and_chunks_are_the_apis_json() {
        let env = Envelope {
            id: "chatcmpl-1",
            created: 5,
            model: "m",
        };
        let request = ok(
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}"#,
        );
        let whole: Value = serde_json::from_str(&completion(&env, &request, 3)).unwrap();
        assert_eq!(whole["choices"][0]["finish_reason"], "length");
        assert_eq!(whole["choices"][0]["message"]["content"], " tok tok tok");
        assert_eq!(whole["usage"]["total_tokens"], 3 + 5);
        let tail = last_chunks(&env, &request, 2);
        let events: Vec<&str> = tail.split("\n\n").filter(|e| !e.is_empty()).collect();
        assert_eq!(events.len(), 3);
        assert_eq!(events[2], "data: [DONE]");
        let usage: Value = serde_json::from_str(&events[1]["data: ".len()..]).unwrap();
        assert_eq!(usage["usage"]["completion_tokens"], 2);
        assert_eq!(usage["choices"].as_array().map(Vec::len), Some(0));
    }

    /// JSON values of any shape, leaning towards the request's own keys.
    fn value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let key = prop_oneof![
            Just("model".to_owned()),
            Just("messages".to_owned()),
            Just("role".to_owned()),
            Just("content".to_owned()),
            Just("text".to_owned()),
            Just("stream".to_owned()),
            Just("stream_options".to_owned()),
            Just("include_usage".to_owned()),
            Just("max_tokens".to_owned()),
            Just("max_completion_tokens".to_owned()),
            "[a-z]{0,6}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::btree_map(key.clone(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config {
            cases: 2000,
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]

        /// Any bytes: an answer or a 400 in the API's shape, never a panic.
        #[test]
        fn the_parser_never_panics_on_bytes(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            if let Err(e) = parse(&bytes) {
                proptest::prop_assert_eq!(e.status, 400);
            }
        }

        /// Any JSON: a request whose sizes are in range, or a 400 naming what is wrong.
        #[test]
        fn the_parser_never_panics_on_json(v in value()) {
            match parse(v.to_string().as_bytes()) {
                Ok(r) => {
                    proptest::prop_assert!(r.prompt_tokens >= 4);
                    proptest::prop_assert!(r.max_tokens.is_none_or(|m| (1..=MAX_TOKENS).contains(&m)));
                }
                Err(e) => {
                    proptest::prop_assert_eq!(e.status, 400);
                    let body: Value = serde_json::from_str(&e.body()).unwrap();
                    proptest::prop_assert!(body["error"]["message"].is_string());
                }
            }
        }
    }

    #[test]
    fn whole_milliseconds_round_up_but_not_for_float_error() {
        assert_eq!(2.047 * 1000.0, 2047.0000000000002);
        assert_eq!(ceil_whole(2.047 * 1000.0), 2047);
        assert_eq!(ceil_whole(2047.001), 2048);
        assert_eq!(ceil_whole(0.5), 1);
        assert_eq!(ceil_whole(0.0), 0);
        assert_eq!(ceil_whole(-3.0), 0);
        assert_eq!(ceil_whole(f64::NAN), 0);
        assert_eq!(ceil_whole(f64::INFINITY), u64::MAX);
        // Every whole millisecond up to an hour, as the provider rounds its Retry-After, and
        // divided by a time scale: the header says that millisecond, never the next.
        for ms in 1..=3_600_000u64 {
            let s = ms as f64 / 1000.0;
            assert_eq!(ceil_whole(s * 1000.0), ms, "{s}");
            if ms % 997 == 0 {
                for k in [3.0, 7.0, 10.0, 50.0] {
                    assert_eq!(ceil_whole(s * k / k * 1000.0), ms, "{s} at {k}");
                }
            }
        }
        assert_eq!(duration(2.047), "2.047s");
    }

    #[test]
    fn durations_are_written_as_the_vendor_writes_them() {
        assert_eq!(duration(0.02), "20ms");
        assert_eq!(duration(1.5), "1.5s");
        assert_eq!(duration(360.0), "6m0s");
        assert_eq!(duration(-1.0), "0ms");
        // Seconds rounded up into a whole minute carry into it (this once read "1m60s").
        assert_eq!(duration(119.9999), "2m0s");
        assert_eq!(duration(86_399.441), "23h59m59.441s");
        assert_eq!(duration(3600.0), "1h0m0s");
        for s in [0.02, 1.5, 61.25, 360.0, 3_725.5, 86_400.0] {
            assert_eq!(crate::fit::har::parse_duration(&duration(s)), Some(s));
        }
    }
}
