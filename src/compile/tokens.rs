//! The token keys of LLM worlds: the rules the schema cannot express (a shape's keys, a limit's
//! window, what needs `[tokens]`) and their compiled form ([`crate::tokens`]).

use serde_json::Value;

use super::{Blame, Stray, Written, key, needs_at, number, string_at};
use crate::diagnostics::{Seg, show_number};
use crate::scenario::tokens::{self as spec, SizeShape};
use crate::schema::{Problem, Target};
use crate::tokens::{Charge, Limit, Price, Reset, Saturation, Size, TokenLatency, Tokens, Unit};

/// The latency keys only the `"tokens"` shape reads.
pub(super) const LATENCY_KEYS: [&str; 5] = [
    "ttft_s",
    "ttft_per_1k_input_s",
    "ttft_load",
    "decode_tokens_per_s",
    "load_slowdown",
];

fn at(base: &[Seg], name: &str) -> Vec<Seg> {
    let mut path = base.to_vec();
    path.push(key(name));
    path
}

fn problem(path: Vec<Seg>, target: Target, message: String, label: &str, help: String) -> Problem {
    Problem {
        path,
        target,
        message,
        label: label.into(),
        help: Some(help),
    }
}

/// Every token rule: the sizes' shapes, and per endpoint what needs `[tokens]` and how a
/// limit gives its window.
pub(super) fn check(
    json: &Value,
    written: &Written<'_>,
    stray: &Stray<'_>,
    blame: &Blame<'_>,
    out: &mut Vec<Problem>,
) {
    let has_tokens = json.get("tokens").is_some_and(Value::is_object);
    if has_tokens {
        for name in ["input", "output"] {
            check_size(
                json,
                &[key("tokens"), key(name)],
                written,
                stray,
                blame,
                out,
            );
        }
    }
    let endpoints = json.get("endpoints").and_then(Value::as_array);
    for i in 0..endpoints.map_or(0, Vec::len) {
        let endpoint = vec![key("endpoints"), Seg::Index(i)];
        check_latency(json, &endpoint, has_tokens, written, stray, out);
        let limits = json
            .pointer(&format!("/endpoints/{i}/limits"))
            .and_then(Value::as_array);
        for j in 0..limits.map_or(0, Vec::len) {
            let mut limit = at(&endpoint, "limits");
            limit.push(Seg::Index(j));
            check_limit(json, &limit, &endpoint, has_tokens, written, out);
        }
        let charge = at(&endpoint, "token_charge");
        let counts_tokens = limits.into_iter().flatten().any(|l| {
            matches!(
                l.get("unit").and_then(Value::as_str),
                Some("input_tokens" | "output_tokens" | "tokens")
            )
        });
        if written(&charge) && !counts_tokens {
            out.push(problem(
                charge,
                Target::Key,
                "`token_charge` never applies: this endpoint has no limit counted in tokens".into(),
                "charges nothing",
                "it says when a request's tokens count against a `limits` entry with `unit = \
                 \"tokens\"` (or input_tokens, output_tokens): add such a limit, or remove the key"
                    .into(),
            ));
        }
        let price = at(&endpoint, "price");
        if written(&price) && !has_tokens {
            out.push(needs_tokens(price.clone(), "a price per million tokens"));
        }
        let cached = at(&price, "cached_input_per_mtok");
        if written(&cached) && !written(&at(&endpoint, "cache")) {
            out.push(problem(
                cached,
                Target::Key,
                "`cached_input_per_mtok` never applies: this endpoint has no `cache`".into(),
                "no cache to hit",
                "a prompt is billed at the cached price only on a reuse-cache hit: give the \
                 endpoint `cache = { ttl_s = 300 }` (its other keys have defaults), or remove \
                 the key"
                    .into(),
            ));
        }
    }
}

fn needs_tokens(path: Vec<Seg>, what: &str) -> Problem {
    problem(
        path,
        Target::Key,
        format!("{what} needs `[tokens]`"),
        "needs request sizes",
        "add a `[tokens]` table (`input`, `output`, `max_tokens`) so requests have sizes in \
         tokens"
            .into(),
    )
}

/// A size's shape needs its own keys and no other shape's.
fn check_size(
    json: &Value,
    base: &[Seg],
    written: &Written<'_>,
    stray: &Stray<'_>,
    blame: &Blame<'_>,
    out: &mut Vec<Problem>,
) {
    let shape = match string_at(json, &at(base, "distribution")) {
        Some("constant") => SizeShape::Constant,
        Some("uniform") => SizeShape::Uniform,
        Some("lognormal") => SizeShape::Lognormal,
        Some("empirical") => SizeShape::Empirical,
        _ => return, // missing or unknown: the schema stage says so
    };
    let needed = shape.keys();
    let name = shape.name();
    for k in needed {
        // A CSV that could not be read is reported where it is named.
        let from_csv = *k == "quantiles" && written(&at(base, "quantiles_csv"));
        if !written(&at(base, k)) && !from_csv {
            let (path, label) = needs_at(base, &at(base, "distribution"), k, written, stray);
            out.push(problem(
                path,
                Target::Value,
                format!("`distribution = \"{name}\"` needs `{k}`"),
                &label,
                format!("the {name} shape is set by {}", backticked(needed)),
            ));
        }
    }
    for k in SizeShape::ALL_KEYS {
        if !needed.contains(&k) && stray(&at(base, k), &at(base, "distribution")) {
            out.push(problem(
                at(base, k),
                Target::Key,
                format!("`{k}` is not used by `distribution = \"{name}\"`"),
                "not used by this shape",
                format!("the {name} shape is set by {}", backticked(needed)),
            ));
        }
    }
    if shape == SizeShape::Uniform
        && let (Some(min), Some(max)) = (
            number(json, &at(base, "min")),
            number(json, &at(base, "max")),
        )
        && min > max
    {
        out.push(problem(
            blame(&[at(base, "max"), at(base, "min")]),
            Target::Value,
            format!(
                "`max` ({}) is less than `min` ({})",
                show_number(max),
                show_number(min)
            ),
            "max below min",
            "a uniform size draws between min and max: min <= max".into(),
        ));
    }
    if shape == SizeShape::Uniform
        && let (Some(min), Some(max)) = (
            number(json, &at(base, "min")),
            number(json, &at(base, "max")),
        )
        && min <= max
        && min.ceil() > max.floor()
    {
        out.push(problem(
            blame(&[at(base, "max"), at(base, "min")]),
            Target::Value,
            format!(
                "no whole number of tokens lies from `min` ({}) to `max` ({})",
                show_number(min),
                show_number(max)
            ),
            "no whole number in range",
            format!(
                "a uniform size draws each whole number from min to max equally often: \
                 widen the range to hold one, e.g. max = {}",
                show_number(min.ceil())
            ),
        ));
    }
    if shape == SizeShape::Empirical {
        check_quantiles(json, &at(base, "quantiles"), PointUnit::Tokens, out);
    }
}

/// What the values of a quantile table count: their name in messages, an example table and
/// the rule on the smallest value.
#[derive(Clone, Copy)]
pub(super) enum PointUnit {
    /// Token counts: every value at least 1.
    Tokens,
    /// Seconds: no value below 0, and the last above 0.
    Seconds,
}

impl PointUnit {
    fn name(self) -> &'static str {
        match self {
            PointUnit::Tokens => "tokens",
            PointUnit::Seconds => "seconds",
        }
    }
    /// The largest value, as the parametric shapes' (`median_s`, a token `median`) cap it:
    /// the simulated clock stays finite.
    fn most(self) -> f64 {
        match self {
            PointUnit::Tokens => 1e8,
            PointUnit::Seconds => 1e6,
        }
    }
    fn example(self) -> &'static str {
        match self {
            PointUnit::Tokens => "[[0, 50], [0.5, 400], [0.99, 3000], [1, 8000]]",
            PointUnit::Seconds => "[[0, 0.05], [0.5, 0.4], [0.99, 2.5], [1, 9]]",
        }
    }
}

/// The first point whose value no draw can give: a repeated quantile is a jump between its
/// two values, but a point before a second quantile 0, after a second quantile 1, or between
/// two more of its quantile, is skipped over (unless it repeats a neighbour's value).
fn never_drawn(pairs: &[(f64, f64)]) -> Option<usize> {
    let n = pairs.len();
    (0..n).find(|&i| {
        let (q, v) = pairs[i];
        let same = |j: usize| pairs[j].0 == q && pairs[j].1 != v;
        let before = |j: usize| pairs[j].0 == q && pairs[j].1 == v;
        match i {
            0 => n > 1 && q == 0.0 && same(1),
            _ if i == n - 1 => q == 1.0 && same(i - 1),
            _ => pairs[i - 1].0 == q && pairs[i + 1].0 == q && !before(i - 1) && !before(i + 1),
        }
    })
}

/// Quantiles rise from 0 to 1 and the values never fall (and are in range for their unit).
pub(super) fn check_quantiles(json: &Value, path: &[Seg], unit: PointUnit, out: &mut Vec<Problem>) {
    let Some(points) = value_at(json, path).and_then(Value::as_array) else {
        return;
    };
    let pairs: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(1)?.as_f64()?)))
        .collect();
    if pairs.len() != points.len() || pairs.len() < 2 {
        return; // the schema stage reports a malformed point
    }
    let name = unit.name();
    let help = format!(
        "write `[quantile, {name}]` points with quantiles rising from 0 (the smallest \
         request) to 1 (the largest) and {name} that never fall, e.g. {}",
        unit.example()
    );
    let bad = |i: usize, message: String, label: &str| {
        let mut p = path.to_vec();
        p.push(Seg::Index(i));
        problem(p, Target::Value, message, label, help.clone())
    };
    let found = out.len();
    if pairs[0].0 != 0.0 {
        out.push(bad(
            0,
            "the first quantile must be 0".into(),
            "must start at 0",
        ));
    }
    let last = pairs.len() - 1;
    if pairs[last].0 != 1.0 {
        out.push(bad(
            last,
            "the last quantile must be 1".into(),
            "must end at 1",
        ));
    }
    for i in 1..pairs.len() {
        let ((q0, v0), (q1, v1)) = (pairs[i - 1], pairs[i]);
        if !(0.0..=1.0).contains(&q1) {
            out.push(bad(
                i,
                format!("quantile {} is outside 0 to 1", show_number(q1)),
                "a quantile is a share",
            ));
        } else if q1 < q0 {
            out.push(bad(
                i,
                format!(
                    "quantile {} does not rise from {}",
                    show_number(q1),
                    show_number(q0)
                ),
                "quantiles must rise",
            ));
        } else if v1 < v0 {
            out.push(bad(
                i,
                format!(
                    "{name} fall from {} to {}",
                    show_number(v0),
                    show_number(v1)
                ),
                &format!("{name} must not fall"),
            ));
        }
    }
    if let Some(i) = never_drawn(&pairs).filter(|_| out.len() == found) {
        let (q, v) = pairs[i];
        let mut p = path.to_vec();
        p.push(Seg::Index(i));
        out.push(problem(
            p,
            Target::Value,
            format!(
                "the point [{}, {}] is never drawn: quantile {} is repeated {}",
                show_number(q),
                show_number(v),
                show_number(q),
                if q == 0.0 || q == 1.0 && i == last {
                    "at the end of the range"
                } else {
                    "three times"
                }
            ),
            "never drawn",
            "a quantile written twice is a jump from the first value to the second (a \
             point mass); a third point at it, or a second at 0 or 1, is skipped over: remove \
             it or give it its own quantile"
                .into(),
        ));
    }
    if let Some(i) = pairs.iter().position(|&(_, v)| v > unit.most()) {
        out.push(bad(
            i,
            format!(
                "{} {name} is more than the {} a world describes",
                show_number(pairs[i].1),
                show_number(unit.most())
            ),
            &format!("must be <= {}", show_number(unit.most())),
        ));
    }
    match unit {
        PointUnit::Tokens => {
            if let Some(i) = pairs.iter().position(|&(_, v)| v < 1.0) {
                out.push(bad(
                    i,
                    "a request has at least 1 token".into(),
                    "must be >= 1",
                ));
            }
        }
        PointUnit::Seconds => {
            if let Some(i) = pairs.iter().position(|&(_, v)| v < 0.0) {
                out.push(bad(
                    i,
                    "a service time cannot be negative".into(),
                    "must be >= 0",
                ));
            } else if pairs[last].1 <= 0.0 {
                out.push(bad(
                    last,
                    "every request would take no time at all".into(),
                    "must be > 0",
                ));
            }
        }
    }
}

fn value_at<'j>(json: &'j Value, path: &[Seg]) -> Option<&'j Value> {
    let mut node = json;
    for seg in path {
        node = match (seg, node) {
            (Seg::Key(k), Value::Object(map)) => map.get(k)?,
            (Seg::Index(i), Value::Array(items)) => items.get(*i)?,
            _ => return None,
        };
    }
    Some(node)
}

/// The `"tokens"` latency needs `[tokens]`, `ttft_s` and `decode_tokens_per_s`; its keys mean
/// nothing to another shape. A base's token keys under a shape a later layer switched away from
/// are leftovers the child cannot delete, not mistakes (as for every other shape).
fn check_latency(
    json: &Value,
    endpoint: &[Seg],
    has_tokens: bool,
    written: &Written<'_>,
    stray: &Stray<'_>,
    out: &mut Vec<Problem>,
) {
    let latency = at(endpoint, "latency");
    let tokens_shape = string_at(json, &at(&latency, "distribution")) == Some("tokens");
    if tokens_shape {
        if !has_tokens {
            out.push(needs_tokens(
                at(&latency, "distribution"),
                "`distribution = \"tokens\"`",
            ));
        }
        for k in ["ttft_s", "decode_tokens_per_s"] {
            if !written(&at(&latency, k)) {
                let choice = at(&latency, "distribution");
                let (path, label) = needs_at(&latency, &choice, k, written, stray);
                out.push(problem(
                    path,
                    Target::Value,
                    format!("`distribution = \"tokens\"` needs `{k}`"),
                    &label,
                    "a latency from tokens is ttft_s (+ ttft_per_1k_input_s per 1,000 prompt \
                     tokens) to the first token, then output tokens at decode_tokens_per_s"
                        .into(),
                ));
            }
        }
        return;
    }
    for k in LATENCY_KEYS {
        if stray(&at(&latency, k), &at(&latency, "distribution")) {
            out.push(problem(
                at(&latency, k),
                Target::Key,
                format!("`{k}` is only used by `distribution = \"tokens\"`"),
                "not used by this shape",
                "set `distribution = \"tokens\"` (with a `[tokens]` table) for a latency from \
                 tokens and load"
                    .into(),
            ));
        }
    }
}

/// A limit gives its window once, and a token unit needs `[tokens]` and a charge that counts it.
fn check_limit(
    json: &Value,
    limit: &[Seg],
    endpoint: &[Seg],
    has_tokens: bool,
    written: &Written<'_>,
    out: &mut Vec<Problem>,
) {
    let (per, window) = (written(&at(limit, "per")), written(&at(limit, "window_s")));
    if per == window {
        out.push(problem(
            if per {
                at(limit, "window_s")
            } else {
                limit.to_vec()
            },
            if per { Target::Key } else { Target::Value },
            if per {
                "a limit gives its window as `per` or `window_s`, not both".into()
            } else {
                "a limit needs its window".into()
            },
            if per { "one window only" } else { "no window" },
            "write `per = \"minute\"` (second, minute, hour, day) or `window_s = …` (seconds)"
                .into(),
        ));
    }
    let unit = string_at(json, &at(limit, "unit"));
    let token_unit = matches!(unit, Some("input_tokens" | "output_tokens" | "tokens"));
    if token_unit && !has_tokens {
        out.push(needs_tokens(at(limit, "unit"), "a limit counted in tokens"));
    }
    let charge = string_at(json, &at(endpoint, "token_charge")).unwrap_or("admission");
    if unit == Some("output_tokens") && charge == "input" {
        out.push(problem(
            at(limit, "unit"),
            Target::Value,
            "an output-token limit never binds when `token_charge = \"input\"`".into(),
            "counts nothing",
            "with token_charge = \"input\" only prompt tokens are charged; use \"admission\" or \
             \"completion\" to count output tokens"
                .into(),
        ));
    }
}

fn backticked(keys: &[&str]) -> String {
    let quoted: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    quoted.join(" and ")
}

// ---------------------------------------------------------------------------------------------
// Compiled form.

/// `[tokens]`, compiled.
pub(super) fn build_tokens(t: &spec::Tokens) -> Tokens {
    Tokens {
        input: build_size(&t.input),
        output: build_size(&t.output),
        max_tokens: f64::from(t.max_tokens),
        context_grows: t.context == spec::Context::Grows,
        request_timeout_s: t.request_timeout_s,
    }
}

fn build_size(s: &spec::Size) -> Size {
    let need = |v: Option<f64>| v.expect("checked: the shape's keys are written");
    match s.distribution {
        SizeShape::Constant => Size::Constant(need(s.value)),
        // The whole numbers of the range (validation saw that it holds one).
        SizeShape::Uniform => Size::Uniform {
            min: need(s.min).ceil(),
            max: need(s.max).floor(),
        },
        SizeShape::Lognormal => Size::Lognormal {
            median: need(s.median),
            sigma: need(s.sigma),
        },
        SizeShape::Empirical => Size::Empirical(
            s.quantiles
                .as_ref()
                .expect("checked: the shape's keys are written")
                .iter()
                .map(|[q, v]| (*q, *v))
                .collect(),
        ),
    }
}

/// The token latency of a `"tokens"` shape.
pub(super) fn build_latency(l: &crate::scenario::Latency) -> Option<TokenLatency> {
    (l.distribution == crate::scenario::Distribution::Tokens).then(|| TokenLatency {
        ttft_s: l.ttft_s.expect("checked: the tokens shape needs ttft_s"),
        ttft_per_1k_input_s: l.ttft_per_1k_input_s.unwrap_or(0.0),
        ttft_load: l.ttft_load.unwrap_or(0.0),
        decode_tokens_per_s: l
            .decode_tokens_per_s
            .expect("checked: the tokens shape needs decode_tokens_per_s"),
        load_slowdown: l.load_slowdown.unwrap_or(0.0),
    })
}

/// The `(quantile, seconds)` points of an `"empirical"` latency; empty for another shape.
pub(super) fn build_quantiles(l: &crate::scenario::Latency) -> Vec<(f64, f64)> {
    if l.distribution != crate::scenario::Distribution::Empirical {
        return Vec::new();
    }
    l.quantiles
        .as_ref()
        .expect("checked: the empirical shape needs quantiles")
        .iter()
        .map(|[q, v]| (*q, *v))
        .collect()
}

/// The mean service time at idle of a token latency for the world's sizes (before the tail).
pub(super) fn idle_mean_s(latency: &TokenLatency, tokens: Option<&Tokens>) -> f64 {
    let Some(tokens) = tokens else {
        return latency.ttft_s;
    };
    let (ttft, per_token) = latency.timing(tokens.input.mean(), 0.0);
    ttft + tokens.output.mean().min(tokens.max_tokens) * per_token
}

pub(super) fn build_limit(l: &spec::Limit) -> Limit {
    let window_s = l
        .window_s
        .or(l.per.map(spec::Per::seconds))
        .expect("checked: a limit has its window");
    Limit {
        unit: match l.unit {
            spec::LimitUnit::Requests => Unit::Requests,
            spec::LimitUnit::InputTokens => Unit::InputTokens,
            spec::LimitUnit::OutputTokens => Unit::OutputTokens,
            spec::LimitUnit::Tokens => Unit::Tokens,
        },
        limit: l.limit,
        window_s,
        reset: match l.reset {
            Some(spec::ResetKind::Rolling) => Reset::Rolling,
            Some(spec::ResetKind::Fixed) => Reset::Fixed,
            None if window_s >= 86_400.0 => Reset::Fixed,
            None => Reset::Rolling,
        },
    }
}

pub(super) fn build_charge(c: Option<spec::TokenCharge>) -> Charge {
    match c.unwrap_or_default() {
        spec::TokenCharge::Admission => Charge::Admission,
        spec::TokenCharge::Input => Charge::Input,
        spec::TokenCharge::Completion => Charge::Completion,
    }
}

pub(super) fn build_price(p: &spec::Price) -> Price {
    Price {
        input_per_mtok: p.input_per_mtok,
        output_per_mtok: p.output_per_mtok,
        cached_input_per_mtok: p.cached_input_per_mtok.unwrap_or(p.input_per_mtok),
    }
}

pub(super) fn build_saturation(s: Option<spec::Saturated>) -> Saturation {
    match s.unwrap_or_default() {
        spec::Saturated::RateLimit => Saturation::RateLimit,
        spec::Saturated::Overloaded => Saturation::Overloaded,
    }
}
