//! Loading a scenario: bytes → TOML tree → JSON instance → schema and cross-field checks → typed
//! [`Scenario`] → frozen [`World`].
//!
//! [`load`] is the one entry point. It collects every problem before it gives up and returns
//! them all in one [`ScenarioErrors`] with spans into the file: values JSON cannot hold (nan,
//! inf, integers beyond 64 bits), schema violations and cross-field rules are all reported
//! together. Only a syntax error stops early, because the rest of the tree is then unreliable.
//! Typed deserialization runs last, on a tree already known to be valid. Nothing is
//! clamped or silently repaired: a value is either in range or reported. This module never reads
//! files and never prints; the caller hands it bytes.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;
use toml::de::DeTable;

use crate::diagnostics::{Finding, ScenarioErrors, Seg, finding, line_column};
use crate::scenario::{self as spec, Scenario};
use crate::schema::{self, Problem, Target};
use crate::world::{
    Backoff, Breaker, Cycle, Distribution, Endpoint, FailureKinds, Failures, Jitter, Latency, Load,
    RateLimit, RetryPolicy, Validity, World,
};

/// The largest scenario file [`load`] accepts, in bytes (1 MiB). Real scenarios are a few KiB;
/// the limit stops a wrong argument (a log, a binary) from being parsed at length.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;

/// The built-in `bursty_provider` world, as TOML.
pub const BUILTIN_BURSTY_TOML: &str = include_str!("../scenarios/bursty.toml");

/// The origin name of the built-in world in reports.
pub const BUILTIN_BURSTY_ORIGIN: &str = "<built-in bursty>";

/// Tolerance on the sum of `[provider.failure_kinds]`.
const FAILURE_KINDS_TOLERANCE: f64 = 1e-9;
/// Most storm windows one instant may fall in (`storm_duration_s / storm_check_s`): each request
/// inspects them all, so an unbounded ratio would make a run hang.
const MAX_STORM_WINDOWS: u32 = 1000;

/// Loads one scenario file.
///
/// `origin` names the file in diagnostics (usually its path).
///
/// # Errors
/// Returns every problem found, with positions, if the bytes are not a valid scenario: too
/// large, not UTF-8, not TOML, not matching the schema, or breaking a cross-field rule.
pub fn load(origin: &str, bytes: &[u8]) -> Result<World, ScenarioErrors> {
    let text = check_bytes(origin, bytes)?;
    let (root, syntax) = DeTable::parse_recoverable(text);
    if !syntax.is_empty() {
        let first = syntax_finding(&root, text, syntax);
        return Err(ScenarioErrors::new(origin, text.to_owned(), vec![first]));
    }
    let mut problems = Vec::new();
    let instance = schema::to_json(&root, &mut problems);
    problems.extend(schema::validate(&root, &instance));
    check(&instance.json, &root, text, &mut problems);
    if problems.is_empty() {
        match Scenario::deserialize(toml::de::Deserializer::from(root.clone())) {
            Ok(scenario) => return Ok(build(&scenario)),
            Err(e) => problems.push(Problem {
                path: Vec::new(),
                target: Target::Span(e.span().unwrap_or(0..0)),
                message: e.message().to_owned(),
                label: "here".into(),
                help: None,
            }),
        }
    }
    let findings = problems
        .into_iter()
        .map(|p| schema::resolve(&root, text, p))
        .collect();
    Err(ScenarioErrors::new(origin, text.to_owned(), findings))
}

/// The built-in `bursty_provider` world (`scenarios/bursty.toml`, compiled into the binary).
///
/// # Panics
/// Panics if the built-in file is invalid, which the test suite rules out.
pub fn builtin_bursty() -> World {
    match load(BUILTIN_BURSTY_ORIGIN, BUILTIN_BURSTY_TOML.as_bytes()) {
        Ok(world) => world,
        Err(errors) => panic!(
            "the built-in scenario is invalid:\n{}",
            errors.render_plain()
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Bytes and syntax.

/// Checks the size limit and UTF-8 before any parsing.
fn check_bytes<'b>(origin: &str, bytes: &'b [u8]) -> Result<&'b str, ScenarioErrors> {
    if bytes.len() > MAX_FILE_BYTES {
        // Keep only the first line as context: the rest is not worth holding or showing.
        let head = &bytes[..bytes.len().min(200)];
        let head = String::from_utf8_lossy(head);
        let first_line = head.lines().next().unwrap_or_default().to_owned();
        let f = finding(
            &first_line,
            0..0,
            &[],
            format!(
                "file is larger than the {MAX_FILE_BYTES}-byte (1 MiB) limit ({} bytes or more)",
                bytes.len()
            ),
            "file starts here".into(),
            Some(
                "scenario files are small TOML files; check that this is the file you meant".into(),
            ),
        );
        return Err(ScenarioErrors::new(origin, first_line, vec![f]));
    }
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let text = String::from_utf8_lossy(bytes).into_owned();
        // The lossy text has the same prefix, then U+FFFD (3 bytes) for the bad sequence.
        let span = at..(at + 3).min(text.len());
        let what = match bytes.get(at) {
            Some(b) if e.error_len().is_some() => format!("invalid byte 0x{b:02x}"),
            _ => "an incomplete character at the end".to_owned(),
        };
        let f = finding(
            &text,
            span,
            &[],
            format!("file is not valid UTF-8: {what}"),
            "not UTF-8".into(),
            Some("TOML files must be UTF-8; re-save the file as UTF-8".into()),
        );
        ScenarioErrors::new(origin, text, vec![f])
    })
}

/// The first syntax error, in file order. The recovering parser's later errors are often
/// consequences of the first (an unclosed bracket swallows the next lines), so they are counted,
/// not shown.
fn syntax_finding(
    root: &Spanned<DeTable<'_>>,
    text: &str,
    mut errors: Vec<toml::de::Error>,
) -> Finding {
    errors.sort_by_key(|e| e.span().map_or(0, |s| s.start));
    let more = errors.len().saturating_sub(1);
    let Some(first) = errors.first() else {
        let message = "TOML syntax error".to_owned();
        return finding(text, 0..0, &[], message, "here".into(), None);
    };
    let span = first.span().unwrap_or(0..0);
    let mut message = format!("TOML syntax error: {}", first.message());
    let mut help = None;
    let word = text.get(span.clone()).unwrap_or_default();
    let bare_word = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        && word.starts_with(|c: char| c.is_alphabetic())
        && !matches!(word, "true" | "false" | "nan" | "inf");
    if bare_word
        && text
            .get(..span.start)
            .is_some_and(|t| t.trim_end().ends_with('='))
    {
        // The parser reads an unquoted word as a failed boolean; say what the user meant.
        message = "TOML syntax error: string values must be quoted".to_owned();
        help = Some(format!("write `\"{word}\"`"));
    }
    if first.message() == "duplicate key" {
        let key = text.get(span.clone()).unwrap_or_default().trim_matches('"');
        message = format!("TOML syntax error: duplicate key `{key}`");
        help = Some(match earlier_key(root, key, span.start) {
            Some(at) => format!(
                "`{key}` is already defined on line {}; a key can be set only once per table \
                 (use [[...]] for a list of tables)",
                line_column(text, at).0
            ),
            None => {
                "a key can be set only once per table (use [[...]] for a list of tables)".to_owned()
            }
        });
    }
    if more > 0 {
        let note = format!(
            "{more} more syntax error{} after this one not shown; fix this one first",
            if more == 1 { "" } else { "s" }
        );
        help = Some(match help {
            Some(h) => format!("{h}\n{note}"),
            None => note,
        });
    }
    finding(text, span, &[], message, "here".into(), help)
}

/// The start of the closest definition of `key` before `before`, anywhere in the tree.
fn earlier_key(root: &Spanned<DeTable<'_>>, key: &str, before: usize) -> Option<usize> {
    fn walk(table: &DeTable<'_>, key: &str, before: usize, best: &mut Option<usize>) {
        for (k, v) in table.iter() {
            let start = k.span().start;
            if k.get_ref().as_ref() == key && start < before {
                *best = Some(best.map_or(start, |b: usize| b.max(start)));
            }
            walk_value(v.get_ref(), key, before, best);
        }
    }
    fn walk_value(
        value: &toml::de::DeValue<'_>,
        key: &str,
        before: usize,
        best: &mut Option<usize>,
    ) {
        match value {
            toml::de::DeValue::Table(t) => walk(t, key, before, best),
            toml::de::DeValue::Array(a) => {
                for item in a.iter() {
                    walk_value(item.get_ref(), key, before, best);
                }
            }
            _ => {}
        }
    }
    let mut best = None;
    walk(root.get_ref(), key, before, &mut best);
    best
}

// ---------------------------------------------------------------------------------------------
// Cross-field checks.

fn key(k: &str) -> Seg {
    Seg::Key(k.to_owned())
}

/// A number in the instance, or the schema default when the key (or its table) is absent.
/// `None` when the value is there but not a usable number: the schema stage reports that.
fn number(json: &Value, path: &[Seg]) -> Option<f64> {
    let mut node = json;
    for seg in path {
        let next = match (seg, node) {
            (Seg::Key(k), Value::Object(map)) => map.get(k),
            (Seg::Index(i), Value::Array(items)) => items.get(*i),
            _ => return None,
        };
        match next {
            Some(v) => node = v,
            None => return schema::field(path)?.schema.get("default")?.as_f64(),
        }
    }
    node.as_f64()
}

/// " (`trough` is not set and defaults to 0.35)" for each key of a rule the file leaves out, so
/// a message about a default is not a mystery.
fn defaulted_note(
    keys: &[(&Vec<Seg>, &str)],
    written: &dyn Fn(&[Seg]) -> bool,
    json: &Value,
) -> String {
    keys.iter()
        .filter(|(path, _)| !written(path))
        .filter_map(|(path, name)| {
            number(json, path).map(|v| format!(" (`{name}` is not set and defaults to {v})"))
        })
        .collect()
}

/// Rules the schema cannot express, checked on the JSON instance (with schema defaults filled
/// in) so that they are reported together with schema violations. Each rule blames a key the
/// user wrote, never a default.
fn check(json: &Value, root: &Spanned<DeTable<'_>>, text: &str, out: &mut Vec<Problem>) {
    let written = |path: &[Seg]| schema::locate(root, path).exact;
    let pick = |first: Vec<Seg>, second: Vec<Seg>| if written(&first) { first } else { second };
    let trough_at = vec![key("cycle"), key("trough")];
    let peak_at = vec![key("cycle"), key("peak")];
    if let (Some(trough), Some(peak)) = (number(json, &trough_at), number(json, &peak_at)) {
        if trough > peak {
            out.push(Problem {
                path: pick(trough_at.clone(), peak_at.clone()),
                target: Target::Value,
                message: format!("`cycle.trough` ({trough}) is greater than `cycle.peak` ({peak})"),
                label: "trough above peak".into(),
                help: Some(format!(
                    "the capacity factor swings between trough (lowest) and peak (highest): \
                     0 <= trough <= peak{}",
                    defaulted_note(
                        &[(&trough_at, "trough"), (&peak_at, "peak")],
                        &written,
                        json
                    )
                )),
            });
        }
    }

    let degrade_at = vec![key("breaker"), key("degrade_after")];
    let dead_at = vec![key("breaker"), key("dead_after")];
    if let (Some(degrade), Some(dead)) = (number(json, &degrade_at), number(json, &dead_at)) {
        if dead < degrade {
            out.push(Problem {
                path: pick(dead_at.clone(), degrade_at.clone()),
                target: Target::Value,
                message: format!(
                    "`breaker.dead_after` ({dead}) is less than `breaker.degrade_after` \
                     ({degrade})"
                ),
                label: "dead before degraded".into(),
                help: Some(format!(
                    "an endpoint is degraded before it is declared dead: \
                     dead_after >= degrade_after{}",
                    defaulted_note(
                        &[(&dead_at, "dead_after"), (&degrade_at, "degrade_after")],
                        &written,
                        json
                    )
                )),
            });
        }
    }

    let kinds_at = vec![key("provider"), key("failure_kinds")];
    let share = |name: &str| {
        let mut path = kinds_at.clone();
        path.push(key(name));
        number(json, &path)
    };
    if let (Some(a), Some(b), Some(c)) = (share("http_503"), share("connection"), share("timeout"))
    {
        let sum = a + b + c;
        if (sum - 1.0).abs() > FAILURE_KINDS_TOLERANCE {
            out.push(Problem {
                path: kinds_at,
                target: Target::Value,
                message: format!(
                    "`provider.failure_kinds` shares sum to {}, not 1",
                    (sum * 1e9).round() / 1e9
                ),
                label: "shares must sum to 1".into(),
                help: Some(format!(
                    "http_503 + connection + timeout = {a} + {b} + {c}; each is a share of all \
                     injected failures, so together they must be 1"
                )),
            });
        }
    }

    check_load(json, &written, out);
    let endpoints = json.get("endpoints").and_then(Value::as_array);
    for i in 0..endpoints.map_or(0, Vec::len) {
        check_distribution(json, i, &written, out);
        let at = |name: &str| vec![key("endpoints"), Seg::Index(i), key("failures"), key(name)];
        let (check_at, duration_at) = (at("storm_check_s"), at("storm_duration_s"));
        if let (Some(check), Some(duration)) = (number(json, &check_at), number(json, &duration_at))
            && check > 0.0
            && duration / check > MAX_STORM_WINDOWS as f64
        {
            out.push(Problem {
                path: pick(check_at, duration_at),
                target: Target::Value,
                message: format!(
                    "storms of {duration} s checked every {check} s overlap {:.0} at a time",
                    duration / check
                ),
                label: "storm windows too dense".into(),
                help: Some(format!(
                    "every request looks at each storm that could cover it, so \
                     storm_duration_s / storm_check_s must be at most {MAX_STORM_WINDOWS}; \
                     for a storm that is nearly always on, raise storm_rate instead"
                )),
            });
        }
    }
    let mut first_use: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, endpoint) in endpoints.into_iter().flatten().enumerate() {
        let Some(id) = endpoint.get("id").and_then(Value::as_str) else {
            continue;
        };
        let Some(&first) = first_use.get(id) else {
            first_use.insert(id, i);
            continue;
        };
        let earlier = schema::locate(root, &[key("endpoints"), Seg::Index(first), key("id")]);
        out.push(Problem {
            path: vec![key("endpoints"), Seg::Index(i), key("id")],
            target: Target::Value,
            message: format!("duplicate endpoint id `{id}`"),
            label: "already used".into(),
            help: Some(format!(
                "`endpoints[{first}].id` (line {}) is also `{id}`; endpoint ids must be unique",
                line_column(text, earlier.value.start).0
            )),
        });
    }
}

/// The string at `path`, if the file (or a schema default) gives one.
fn string_at<'j>(json: &'j Value, path: &[Seg]) -> Option<&'j str> {
    let mut node = json;
    for seg in path {
        node = match (seg, node) {
            (Seg::Key(k), Value::Object(map)) => map.get(k)?,
            (Seg::Index(i), Value::Array(items)) => items.get(*i)?,
            _ => return None,
        };
    }
    node.as_str()
}

/// `mean_s` belongs to the exponential and constant shapes, `median_s` and `sigma` to the
/// lognormal one: a key the chosen shape ignores is an error, not a silent no-op.
fn check_distribution(
    json: &Value,
    i: usize,
    written: &dyn Fn(&[Seg]) -> bool,
    out: &mut Vec<Problem>,
) {
    let at = |name: &str| vec![key("endpoints"), Seg::Index(i), key("latency"), key(name)];
    let shape = string_at(json, &at("distribution")).unwrap_or("lognormal");
    let uses_mean = shape != "lognormal";
    if uses_mean && !written(&at("mean_s")) {
        out.push(Problem {
            path: vec![key("endpoints"), Seg::Index(i), key("latency")],
            target: Target::Value,
            message: format!("`distribution = \"{shape}\"` needs `mean_s`"),
            label: "this table needs `mean_s`".into(),
            help: Some(format!(
                "the {shape} shape is set by its mean: add `mean_s = …` (seconds, > 0)"
            )),
        });
    }
    let ignored: &[&str] = if uses_mean {
        &["median_s", "sigma"]
    } else {
        &["mean_s"]
    };
    for name in ignored {
        if written(&at(name)) {
            out.push(Problem {
                path: at(name),
                target: Target::Key,
                message: format!("`{name}` is not used by `distribution = \"{shape}\"`"),
                label: "not used by this shape".into(),
                help: Some(if uses_mean {
                    "exponential and constant latencies are set by `mean_s` alone".into()
                } else {
                    "a lognormal latency is set by `median_s` and `sigma`; `mean_s` is for \
                     distribution = \"exponential\" or \"constant\""
                        .into()
                }),
            });
        }
    }
}

/// An open loop needs its rate; a closed loop has no use for the open-loop keys.
fn check_load(json: &Value, written: &dyn Fn(&[Seg]) -> bool, out: &mut Vec<Problem>) {
    let at = |name: &str| vec![key("load"), key(name)];
    let open = string_at(json, &at("model")) == Some("open");
    if open && !written(&at("rate_per_s")) {
        out.push(Problem {
            path: vec![key("load")],
            target: Target::Value,
            message: "`model = \"open\"` needs `rate_per_s`".into(),
            label: "this table needs `rate_per_s`".into(),
            help: Some("an open loop offers jobs at a rate: add `rate_per_s = …` (> 0)".into()),
        });
    }
    if !open {
        for name in ["rate_per_s", "arrivals", "max_in_flight"] {
            if written(&at(name)) {
                out.push(Problem {
                    path: at(name),
                    target: Target::Key,
                    message: format!("`load.{name}` only applies to `model = \"open\"`"),
                    label: "not used by a closed loop".into(),
                    help: Some(
                        "a closed loop runs `concurrency` workers; set `model = \"open\"` to \
                         offer jobs at a rate instead"
                            .into(),
                    ),
                });
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scenario -> World.

/// Freezes a checked scenario. Every value is already in range, so this cannot fail.
fn build(s: &Scenario) -> World {
    World {
        name: s.name.clone(),
        summary: s.summary.clone(),
        seed: s.seed,
        jobs: s.jobs,
        concurrency: s.concurrency,
        horizon_s: s.horizon_s,
        steps_per_job: s.steps_per_job,
        calls_per_step: s.calls_per_step,
        cycle: Cycle::new(
            s.cycle.period_s,
            s.cycle.trough,
            s.cycle.peak,
            s.cycle.phase_s,
        ),
        retry: RetryPolicy {
            max_attempts: s.retry.max_attempts,
            backoff: Backoff {
                base: s.retry.base,
                factor: s.retry.factor,
                cap: s.retry.cap,
                jitter: match s.retry.jitter {
                    spec::Jitter::None => Jitter::None,
                    spec::Jitter::Full => Jitter::Full,
                    spec::Jitter::Equal => Jitter::Equal,
                },
            },
            retry_classified: s.retry.retry_classified,
            retry_unknown: s.retry.retry_unknown,
            max_total_s: s.retry.max_total_s,
        },
        breaker: Breaker {
            degrade_after: s.breaker.degrade_after,
            dead_after: s.breaker.dead_after,
            cooldown_s: s.breaker.cooldown_s,
        },
        capacity_retry_after_s: s.provider.capacity_retry_after_s,
        failure_kinds: FailureKinds {
            http_503: s.provider.failure_kinds.http_503,
            connection: s.provider.failure_kinds.connection,
            timeout: s.provider.failure_kinds.timeout,
        },
        endpoints: s.endpoints.iter().map(build_endpoint).collect(),
        unsuited: s.unsuited.clone(),
        load: match s.load.model {
            spec::LoadModel::Closed => Load::Closed,
            spec::LoadModel::Open => Load::Open {
                rate_per_s: s.load.rate_per_s.expect("checked: open needs a rate"),
                poisson: s.load.arrivals.unwrap_or_default() == spec::Arrivals::Poisson,
                max_in_flight: s.load.max_in_flight,
            },
        },
        validity: Validity {
            max_queue_share: s.validity.max_queue_share,
            knee_concurrency: s.validity.knee_concurrency,
        },
    }
}

fn build_endpoint(e: &spec::Endpoint) -> Endpoint {
    Endpoint {
        id: e.id.clone(),
        capacity: e.capacity,
        weight: e.weight,
        quota_units: e.quota_units.filter(|q| *q > 0.0),
        latency: Latency {
            distribution: match e.latency.distribution {
                spec::Distribution::Lognormal => Distribution::Lognormal,
                spec::Distribution::Exponential => Distribution::Exponential,
                spec::Distribution::Constant => Distribution::Constant,
            },
            mean_s: e.latency.mean_s.unwrap_or(e.latency.median_s),
            median_s: e.latency.median_s,
            sigma: e.latency.sigma,
            tail_rate: e.latency.tail_rate,
            tail_factor: e.latency.tail_factor,
        },
        failures: Failures {
            error_rate: e.failures.error_rate,
            storm_rate: e.failures.storm_rate,
            storm_check_s: e.failures.storm_check_s,
            storm_duration_s: e.failures.storm_duration_s,
            storm_error_rate: e.failures.storm_error_rate,
        },
        rate_limit: e.rate_limit.as_ref().map(|r| {
            RateLimit::new(
                r.per_window,
                r.window_s,
                r.burst,
                r.retry_after_s,
                r.tightening,
                r.tightening_floor,
                r.recovery_per_window,
            )
        }),
    }
}
