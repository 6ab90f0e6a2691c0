//! Loading a scenario: bytes → document (with its `extends` chain and overrides, see
//! [`crate::compose`]) → JSON instance → schema and cross-field checks → typed [`Scenario`] →
//! frozen [`World`].
//!
//! [`load`] takes one self-contained text; [`load_with`] also follows `extends` through a reader
//! the caller supplies and applies `--set` overrides. Both collect every problem before they give
//! up and return them all in one [`ScenarioErrors`], each with a span in the text that wrote the
//! value: values JSON cannot hold (nan, inf, integers beyond 64 bits), schema violations and
//! cross-field rules are all reported together. Only a syntax error or a broken `extends` chain
//! stops early, because the rest of the tree is then unreliable. Typed deserialization runs last,
//! on a tree already known to be valid. Nothing is clamped or silently repaired: a value is
//! either in range or reported. This module never reads files and never prints; the caller hands
//! it bytes (and, for `extends`, a reader).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::client::registry::{self, AlgorithmInfo};
use crate::compose::doc::{self, Node};
use crate::compose::{self, Composed};
pub use crate::compose::{MAX_EXTENDS_DEPTH, Override, Reader, check_shape};
use crate::diagnostics::{ScenarioErrors, Seg, Source, show_number};
use crate::scenario::{self as spec, Scenario};
use crate::schema::{self, Problem, Target};
use crate::threshold::Assertion;
use crate::world::{
    self as world, Backoff, Breaker, Cycle, Distribution, Endpoint, FailureKinds, Failures, Jitter,
    Latency, Load, RateLimit, Recovery, RetryPolicy, Validity, Variant, World,
};

mod objective;
mod tokens;
mod topology;
pub use objective::inapplicable;
pub use topology::DEFAULT_POOL;

/// The largest scenario file [`load`] accepts (composition reads the files, so the limit is
/// its own).
pub use crate::compose::MAX_FILE_BYTES;

/// Drops the cross-field problems (those from `first` on) that only follow from a value the
/// schema stage already reported: a rule is not checked in a table that holds a bad value (an
/// `incidents[0].kind` that is no kind, a `load.model` that is no model) or inside a bad value.
/// Unknown keys change nothing a rule reads, so they do not count. An override that could not
/// be applied (`unapplied`, its key) counts as a bad value at its key.
fn drop_knock_ons(problems: &mut Vec<Problem>, first: usize, unapplied: &[Vec<Seg>]) {
    let scope = |path: &[Seg]| match path.split_last() {
        None => None,
        // A bad top-level value silences only rules about that value itself.
        Some((_, [])) => Some(path.to_vec()),
        Some((_, table)) => Some(table.to_vec()),
    };
    let scopes: Vec<Vec<Seg>> = problems[..first]
        .iter()
        .filter(|p| matches!(p.target, Target::Value))
        .map(|p| p.path.as_slice())
        .chain(unapplied.iter().map(Vec::as_slice))
        .filter_map(scope)
        .collect();
    let rules = problems.split_off(first);
    problems.extend(
        rules
            .into_iter()
            .filter(|r| !scopes.iter().any(|s| r.path.starts_with(s))),
    );
}

/// The built-in `bursty_provider` world, as TOML.
pub const BUILTIN_BURSTY_TOML: &str = include_str!("../scenarios/bursty.toml");

/// The origin name of the built-in world in reports.
pub const BUILTIN_BURSTY_ORIGIN: &str = "<built-in bursty>";

/// Tolerance on the sum of `[provider.failure_kinds]`.
const FAILURE_KINDS_TOLERANCE: f64 = 1e-9;
/// The shortest cycle period \[s\] (0, a flat cycle, aside): the spacing of f64 times near the
/// longest horizon plus phase (2e12 s) is 2.4e-4 s, so a shorter rhythm would be sampled at
/// random phases.
const MIN_CYCLE_PERIOD_S: f64 = 1e-3;
/// Most storm windows one instant may fall in (`storm_duration_s / storm_check_s`): each request
/// inspects them all, so an unbounded ratio would make a run hang.
const MAX_STORM_WINDOWS: u32 = 1000;

/// What [`load_with`] may use beyond the text it is handed.
pub struct LoadOptions<'a> {
    /// Reads the files an `extends` chain names (paths relative to the file that names them,
    /// already joined). [`load`] uses a reader that refuses.
    pub read: &'a Reader<'a>,
    /// Reads the data files a world names: quantile CSVs (`quantiles_csv`) and trace logs
    /// (`[load] trace`), paths joined as for `extends`. Unlike `read`, the same file may be
    /// read twice (two endpoints sharing one table), and a trace log may be large.
    pub read_data: &'a Reader<'a>,
    /// Overrides applied in order to the composed document, before any check.
    pub overrides: &'a [Override],
}

impl Default for LoadOptions<'_> {
    /// Reads no file and applies no override.
    fn default() -> Self {
        LoadOptions {
            read: &no_files,
            read_data: &no_files,
            overrides: &[],
        }
    }
}

/// Loads one self-contained scenario text. A file that `extends` another is reported as such
/// (this loader reads no files): use [`load_with`].
///
/// `origin` names the file in diagnostics (usually its path).
///
/// # Errors
/// Returns every problem found, with positions, if the bytes are not a valid scenario: too
/// large, not UTF-8, not TOML, not matching the schema, or breaking a cross-field rule.
pub fn load(origin: &str, bytes: &[u8]) -> Result<World, ScenarioErrors> {
    load_with(origin, bytes, &LoadOptions::default())
}

fn no_files(_: &Path) -> Result<Vec<u8>, String> {
    Err("this loader reads no files (load the scenario with `compile::load_with`)".into())
}

/// Loads a scenario, following its `extends` chain with `options.read` and applying
/// `options.overrides`.
///
/// # Errors
/// As [`load`], plus a base that cannot be read, an `extends` cycle, and overrides with a bad
/// path or value; each problem is reported in the text (file, base file or override) it is in.
pub fn load_with(
    origin: &str,
    bytes: &[u8],
    options: &LoadOptions<'_>,
) -> Result<World, ScenarioErrors> {
    load_resolved(origin, bytes, options).map(|(world, _)| world)
}

/// [`load_with`], also returning the document as resolved (its bases merged in, the
/// overrides applied), for a tool that copies parts of a checked world (`simbench fit
/// --client`).
///
/// # Errors
/// As [`load_with`].
pub fn load_resolved(
    origin: &str,
    bytes: &[u8],
    options: &LoadOptions<'_>,
) -> Result<(World, toml::Value), ScenarioErrors> {
    let Composed {
        sources,
        doc,
        mut findings,
        files,
        unapplied,
    } = compose::document(
        origin,
        bytes,
        options.read,
        options.read_data,
        options.overrides,
    );
    let Some(root) = doc else {
        return Err(ScenarioErrors::new(sources, findings));
    };
    let mut problems = Vec::new();
    let instance = schema::to_json(&root, &mut problems);
    problems.extend(schema::validate(&root, &instance));
    let layers = Layers {
        sources: &sources,
        files,
    };
    check_unique_ids(&instance.json, &root, &layers, &mut problems);
    let reported = problems.len();
    check(&instance.json, &root, &layers, &mut problems);
    drop_knock_ons(&mut problems, reported, &unapplied);
    if problems.is_empty() && findings.is_empty() {
        let resolved = doc::to_toml(&root);
        match resolved.clone().try_into::<Scenario>() {
            Ok(scenario) => {
                let replay = (scenario.load.model == spec::LoadModel::Trace)
                    .then(|| trace_load(&scenario, &root, &layers, options.read_data))
                    .transpose();
                match replay {
                    Ok(replay) => {
                        // The resolved document says what the world does: a base's `jobs`
                        // that the trace overrules is not in it.
                        let mut resolved = resolved;
                        if replay.as_ref().is_some_and(|r| !r.jobs_written)
                            && let Some(table) = resolved.as_table_mut()
                        {
                            table.remove("jobs");
                        }
                        let world = build(
                            &scenario,
                            &algorithm_order(&root),
                            metric_written(&root),
                            replay,
                        );
                        objective::check_applies(&world, &mut problems);
                        if problems.is_empty() {
                            return Ok((world, resolved));
                        }
                    }
                    Err(problem) => problems.push(*problem),
                }
            }
            Err(e) => problems.push(Problem {
                path: Vec::new(),
                target: Target::Value,
                message: e.message().to_owned(),
                label: "here".into(),
                help: None,
            }),
        }
    }
    findings.extend(
        problems
            .into_iter()
            .map(|p| schema::resolve(&root, &sources, p)),
    );
    Err(ScenarioErrors::new(sources, findings))
}

/// A trace world's replay and how many of its jobs run.
struct Replayed {
    replay: crate::trace_load::SharedReplay,
    jobs: u32,
    /// Whether `jobs` is the world's own, not a base's leftover from before its trace.
    jobs_written: bool,
}

/// Reads and compiles the trace a `"trace"` load names (relative to the file that names it,
/// an override's to the working folder). Its problems are reported at `load.trace`, or at
/// `jobs` when the file asks for more jobs than the trace holds.
fn trace_load(
    s: &Scenario,
    root: &Node,
    layers: &Layers<'_>,
    read: &Reader<'_>,
) -> Result<Replayed, Box<Problem>> {
    let path = vec![key("load"), key("trace")];
    let target = s
        .load
        .trace
        .as_deref()
        .expect("checked: a trace load names its log");
    let source = doc::locate(root, &path).value.source;
    let from = if source < layers.files {
        layers.sources[source].name.as_str()
    } else {
        ""
    };
    let file = compose::join(from, target);
    let shown = file.display().to_string();
    let fail = |message: String, label: &str, help: String| {
        Box::new(Problem {
            path: path.clone(),
            target: Target::Value,
            message,
            label: label.into(),
            help: Some(help),
        })
    };
    let bytes = read(&file).map_err(|reason| {
        fail(
            format!("cannot read the trace `{shown}`: {reason}"),
            "cannot read this log",
            format!(
                "`load.trace` is a path relative to the file that names it (to the current folder \
                 when `--set` names it), so this is `{shown}`"
            ),
        )
    })?;
    let log = crate::trace_load::read_log(&shown, &bytes).map_err(|why| {
        fail(
            format!("the trace is not a usable log: {why}"),
            "bad log",
            "a trace is a request log (docs/request-log.md), a HAR 1.2 file or OTLP JSON spans, \
             as `simbench fit` reads"
                .into(),
        )
    })?;
    let speed = s.load.speed.unwrap_or(1.0);
    if let (Some(origin), Some(segment)) = (s.load.origin_s, log.segments.first())
        && origin > segment.origin
    {
        return Err(Box::new(Problem {
            path: vec![key("load"), key("origin_s")],
            target: Target::Value,
            message: format!(
                "`origin_s` is {} but the trace `{shown}` starts at {} on its own clock",
                show_number(origin),
                show_number(segment.origin)
            ),
            label: "after the log's first arrival".into(),
            help: Some(format!(
                "time 0 must come before the log's first job: set `origin_s` to at most {}, \
                 or leave it out to start at that job",
                show_number(segment.origin)
            )),
        }));
    }
    let replay = crate::trace_load::Replay::from_log(&shown, &log, speed, s.load.origin_s)
        .ok_or_else(|| {
            fail(
                format!("the trace `{shown}` holds no job"),
                "no job",
                "every request is a retry or a hedge copy; log first attempts too".into(),
            )
        })?;
    let available = u32::try_from(replay.jobs()).unwrap_or(u32::MAX);
    // A base's `jobs` under a child that switched to a trace is the base's leftover.
    let (jobs_at, model_at) = (
        doc::locate(root, &[key("jobs")]),
        doc::locate(root, &[key("load"), key("model")]),
    );
    let jobs_written = jobs_at.exact
        && !(model_at.exact
            && layers.rank(jobs_at.value.source) < layers.rank(model_at.value.source));
    let jobs = if jobs_written {
        if s.jobs > available {
            return Err(Box::new(Problem {
                path: vec![key("jobs")],
                target: Target::Value,
                message: format!(
                    "`jobs` asks for {} jobs but the trace `{shown}` holds {available}",
                    s.jobs
                ),
                label: "more than the trace holds".into(),
                help: Some(
                    "a trace replays its own jobs: leave `jobs` out to replay them all, or ask \
                     for at most as many (the first ones)"
                        .into(),
                ),
            }));
        }
        s.jobs
    } else {
        available
    };
    Ok(Replayed {
        replay: std::sync::Arc::new(replay),
        jobs,
        jobs_written,
    })
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

/// Whether the document writes the key at a path.
type Written<'a> = dyn Fn(&[Seg]) -> bool + 'a;
/// Whether the key at the first path is written and not a base's leftover under the choice at
/// the second path (see [`check`]).
type Stray<'a> = dyn Fn(&[Seg], &[Seg]) -> bool + 'a;
/// The key a rule between several keys is reported at, out of the keys it reads (see
/// [`check`]).
type Blame<'a> = dyn Fn(&[Vec<Seg>]) -> Vec<Seg> + 'a;

/// The sources of a load in order of precedence: the loaded file first, then its bases (the
/// deepest last), then the overrides.
struct Layers<'s> {
    sources: &'s [Source],
    /// How many of `sources` are files (the rest are overrides).
    files: usize,
}

impl Layers<'_> {
    /// Higher wins: overrides over the file, the file over its base, a base over its own base.
    fn rank(&self, source: doc::SourceId) -> usize {
        if source < self.files {
            self.files - source
        } else {
            source + 1
        }
    }

    /// As [`Layers::rank`], but the command line is one layer: of two overrides, the first is
    /// not the other's base (`--set load.think_s=1 --set load.model="open"` gives an open loop
    /// a pause as much as the other order does).
    fn layer(&self, source: doc::SourceId) -> usize {
        self.rank(source).min(self.files + 1)
    }
}

/// Where "`choice` needs `key`" is shown, and its label: at the choice when a later layer (a
/// child, an override) wrote it than the table, since that is the change that broke the rule
/// (`--set endpoints.a.latency.distribution=tokens` over a file's lognormal latency); else at
/// the table that lacks the key.
fn needs_at(
    table: &[Seg],
    choice: &[Seg],
    key: &str,
    written: &Written<'_>,
    stray: &Stray<'_>,
) -> (Vec<Seg>, String) {
    if written(table) && written(choice) && !stray(table, choice) {
        (choice.to_vec(), format!("needs `{key}`"))
    } else {
        (table.to_vec(), format!("this table needs `{key}`"))
    }
}

/// " (`trough` is not set and defaults to 0.35)" for each key of a rule the file leaves out, so
/// a message about a default is not a mystery.
fn defaulted_note(keys: &[(&Vec<Seg>, &str)], written: &Written<'_>, json: &Value) -> String {
    keys.iter()
        .filter(|(path, _)| !written(path))
        .filter_map(|(path, name)| {
            number(json, path)
                .map(|v| format!(" (`{name}` is not set and defaults to {})", show_number(v)))
        })
        .collect()
}

/// Rules the schema cannot express, checked on the JSON instance (with schema defaults filled
/// in) so that they are reported together with schema violations. Each rule blames a key the
/// user wrote, never a default.
fn check(json: &Value, root: &Node, layers: &Layers<'_>, out: &mut Vec<Problem>) {
    let written = |path: &[Seg]| doc::locate(root, path).exact;
    // A key that only one shape or model uses is stray when written, unless a later layer (a
    // child file, an override) switched the shape and the key is the base's leftover: a child
    // cannot delete a base's key, so that is not a mistake.
    let stray = |path: &[Seg], choice: &[Seg]| {
        let (key, chosen) = (doc::locate(root, path), doc::locate(root, choice));
        key.exact
            && !(chosen.exact && layers.layer(key.value.source) < layers.layer(chosen.value.source))
    };
    // A rule between keys (trough <= peak, start_s < end_s, …) is shown at the key the latest
    // layer wrote: an override over the file, a child over its base, since that is the change
    // that broke it. Among keys of one layer the first one listed is the rule's own place; with
    // none written (every value a default) the last one.
    let blame = |keys: &[Vec<Seg>]| {
        let mut best: Option<(usize, &Vec<Seg>)> = None;
        for path in keys {
            let found = doc::locate(root, path);
            let rank = layers.rank(found.value.source);
            if found.exact && best.is_none_or(|(top, _)| rank > top) {
                best = Some((rank, path));
            }
        }
        best.map(|(_, path)| path)
            .or(keys.last())
            .cloned()
            .unwrap_or_default()
    };
    let trough_at = vec![key("cycle"), key("trough")];
    let peak_at = vec![key("cycle"), key("peak")];
    if let (Some(trough), Some(peak)) = (number(json, &trough_at), number(json, &peak_at)) {
        if trough > peak {
            out.push(Problem {
                path: blame(&[trough_at.clone(), peak_at.clone()]),
                target: Target::Value,
                message: format!(
                    "`cycle.trough` ({}) is greater than `cycle.peak` ({})",
                    show_number(trough),
                    show_number(peak)
                ),
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

    let period_at = vec![key("cycle"), key("period_s")];
    if let Some(period) = number(json, &period_at)
        && period > 0.0
        && period < MIN_CYCLE_PERIOD_S
    {
        out.push(Problem {
            path: period_at.clone(),
            target: Target::Value,
            message: "`cycle.period_s` is shorter than the clock can follow".into(),
            label: format!("must be 0 or >= {MIN_CYCLE_PERIOD_S}"),
            help: Some(format!(
                "simulated times are f64 seconds, 0.00024 s apart near the longest horizon plus \
                 phase, and retry delays are rounded to 0.0001 s, so a rhythm faster than \
                 {MIN_CYCLE_PERIOD_S} s cannot be followed (below about 1e-308 s its capacity is \
                 not even a number); use period_s = 0 for a flat cycle"
            )),
        });
    }

    // Without a rhythm the capacity stays at `peak`: a trough below it, or a phase, would be
    // a swing that never happens.
    if number(json, &period_at) == Some(0.0) {
        let phase_at = vec![key("cycle"), key("phase_s")];
        let unused = [
            (
                &trough_at,
                number(json, &trough_at) != number(json, &peak_at),
            ),
            (&phase_at, number(json, &phase_at) != Some(0.0)),
        ];
        for (at, differs) in unused {
            if differs && stray(at, &period_at) {
                let name = crate::diagnostics::key_path(at);
                out.push(Problem {
                    path: at.clone(),
                    target: Target::Key,
                    message: format!(
                        "`{name}` never applies: `cycle.period_s = 0` is a flat cycle"
                    ),
                    label: "no rhythm to shape".into(),
                    help: Some(
                        "with period_s = 0 capacity stays at `peak` all the time: remove the key \
                         (or set trough = peak), or give the cycle a period"
                            .into(),
                    ),
                });
            }
        }
    }

    let degrade_at = vec![key("breaker"), key("degrade_after")];
    let dead_at = vec![key("breaker"), key("dead_after")];
    if let (Some(degrade), Some(dead)) = (number(json, &degrade_at), number(json, &dead_at)) {
        if dead < degrade {
            out.push(Problem {
                path: blame(&[dead_at.clone(), degrade_at.clone()]),
                target: Target::Value,
                message: format!(
                    "`breaker.dead_after` ({}) is less than `breaker.degrade_after` ({})",
                    show_number(dead),
                    show_number(degrade)
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

    let base_at = vec![key("retry"), key("base")];
    let cap_at = vec![key("retry"), key("cap")];
    if let (Some(base), Some(cap)) = (number(json, &base_at), number(json, &cap_at))
        && base > cap
    {
        out.push(Problem {
            path: blame(&[base_at.clone(), cap_at.clone()]),
            target: Target::Value,
            message: format!(
                "`retry.base` ({}) is greater than `retry.cap` ({})",
                show_number(base),
                show_number(cap)
            ),
            label: "base above cap".into(),
            help: Some(format!(
                "the backoff starts at base and grows up to cap, so every delay would be cut \
                 to cap: base <= cap{}",
                defaulted_note(&[(&base_at, "base"), (&cap_at, "cap")], &written, json)
            )),
        });
    }

    let kinds_at = vec![key("provider"), key("failure_kinds")];
    let share_at = |name: &str| {
        let mut path = kinds_at.clone();
        path.push(key(name));
        path
    };
    let share = |name: &str| number(json, &share_at(name));
    if let (Some(a), Some(b), Some(c)) = (share("http_503"), share("connection"), share("timeout"))
    {
        let sum = a + b + c;
        if (sum - 1.0).abs() > FAILURE_KINDS_TOLERANCE {
            out.push(Problem {
                path: blame(&[
                    kinds_at.clone(),
                    share_at("http_503"),
                    share_at("connection"),
                    share_at("timeout"),
                ]),
                target: Target::Value,
                message: format!(
                    "`provider.failure_kinds` shares sum to {}, not 1",
                    show_number((sum * 1e9).round() / 1e9)
                ),
                label: "shares must sum to 1".into(),
                help: Some(format!(
                    "http_503 + connection + timeout = {} + {} + {}; each is a share of all \
                     injected failures, so together they must be 1",
                    show_number(a),
                    show_number(b),
                    show_number(c)
                )),
            });
        }
    }

    check_load(json, &written, &stray, out);
    check_algorithms(json, &blame, out);
    topology::check(json, &written, &blame, out);
    tokens::check(json, &written, &stray, &blame, out);
    objective::check(json, out);
    let endpoints = json.get("endpoints").and_then(Value::as_array);
    for i in 0..endpoints.map_or(0, Vec::len) {
        check_distribution(json, i, &written, &stray, out);
        let at = |name: &str| vec![key("endpoints"), Seg::Index(i), key("failures"), key(name)];
        let (check_at, duration_at) = (at("storm_check_s"), at("storm_duration_s"));
        if let (Some(check), Some(duration)) = (number(json, &check_at), number(json, &duration_at))
            && check > 0.0
            && duration / check > MAX_STORM_WINDOWS as f64
        {
            out.push(Problem {
                path: blame(&[check_at, duration_at]),
                target: Target::Value,
                message: format!(
                    "storms of {} s checked every {} s overlap {} at a time",
                    show_number(duration),
                    show_number(check),
                    show_number((duration / check).round())
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
    for i in 0..endpoints.map_or(0, Vec::len) {
        check_bucket(json, i, &blame, out);
    }
}

/// The world's, pools' and endpoints' names say something ([`check_label`]), and endpoint ids
/// are unique. Checked before the other rules, and never silenced by a problem
/// in the same table: a child's second `[[endpoints]]` with one id is appended as a new
/// endpoint, whose missing keys follow from the repeated id.
fn check_unique_ids(json: &Value, root: &Node, layers: &Layers<'_>, out: &mut Vec<Problem>) {
    let sources = layers.sources;
    let endpoints = json.get("endpoints").and_then(Value::as_array);
    if let Some(name) = json.get("name").and_then(Value::as_str) {
        out.extend(check_label(
            name,
            vec![key("name")],
            "world name",
            WORLD_NAME_USE,
        ));
    }
    let pools = json.get("pools").and_then(Value::as_array);
    for (i, pool) in pools.into_iter().flatten().enumerate() {
        if let Some(name) = pool.get("name").and_then(Value::as_str) {
            let path = vec![key("pools"), Seg::Index(i), key("name")];
            out.extend(check_label(name, path, "pool name", POOL_NAME_USE));
        }
    }
    let mut first_use: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, endpoint) in endpoints.into_iter().flatten().enumerate() {
        let Some(id) = endpoint.get("id").and_then(Value::as_str) else {
            continue;
        };
        let path = vec![key("endpoints"), Seg::Index(i), key("id")];
        out.extend(check_label(id, path, "endpoint id", ENDPOINT_ID_USE));
        let Some(&first) = first_use.get(id) else {
            first_use.insert(id, i);
            continue;
        };
        let earlier = doc::locate(root, &[key("endpoints"), Seg::Index(first), key("id")]);
        let path = vec![key("endpoints"), Seg::Index(i), key("id")];
        let here = doc::locate(root, &path).value.source;
        out.push(Problem {
            path,
            target: Target::Value,
            message: format!("duplicate endpoint id `{id}`"),
            label: "already used".into(),
            help: Some(format!(
                "`endpoints[{first}].id` ({}) is also `{id}`; endpoint ids must be unique{}",
                compose::describe(sources, &earlier.value, here),
                if layers.files > 1 {
                    " (a child's `[[endpoints]]` with a base's id changes that endpoint; a \
                     second one with the same id is a new endpoint)"
                } else {
                    ""
                }
            )),
        });
    }
}

/// What an endpoint id is read as, for the hint of [`check_label`].
const ENDPOINT_ID_USE: &str = "an id names the endpoint in tables, CSV headers, logs and traces";
/// What a world's name is read as.
const WORLD_NAME_USE: &str = "the name heads every report and names the world in sweeps";
/// What a pool's name is read as.
const POOL_NAME_USE: &str =
    "a pool's name labels it in reports, and endpoints' `pool` and incidents refer to it";

/// A name that is only blanks reads as nothing wherever it is printed (the schema already
/// refuses an empty one). An endpoint id is also a CSV header and a log field, one line each,
/// so it holds no control character either (names are printed escaped).
fn check_label(text: &str, path: Vec<Seg>, what: &str, used: &str) -> Option<Problem> {
    let id = what == "endpoint id";
    let (message, label, why, advice) = if !text.is_empty() && text.trim().is_empty() {
        (
            format!("{what} `{text}` is only blanks"),
            "nothing to read",
            "",
            if id {
                "letters, digits, `-`, `_` or `.`"
            } else {
                "a word or two that say what it is"
            },
        )
    } else if id && text.chars().any(char::is_control) {
        (
            format!("{what} `{}` holds a control character", text.escape_debug()),
            "a line break, tab or other control character",
            ", one line each",
            "letters, digits, `-`, `_` or `.`",
        )
    } else {
        return None;
    };
    Some(Problem {
        path,
        target: Target::Value,
        message,
        label: label.into(),
        help: Some(format!("{used}{why}: use {advice}")),
    })
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
    written: &Written<'_>,
    stray: &Stray<'_>,
    out: &mut Vec<Problem>,
) {
    let at = |name: &str| vec![key("endpoints"), Seg::Index(i), key("latency"), key(name)];
    let shape = string_at(json, &at("distribution")).unwrap_or("lognormal");
    let uses_mean = matches!(shape, "exponential" | "constant");
    let needs = |name: &str, help: String, out: &mut Vec<Problem>| {
        let table = [key("endpoints"), Seg::Index(i), key("latency")];
        let (path, label) = needs_at(&table, &at("distribution"), name, written, stray);
        out.push(Problem {
            path,
            target: Target::Value,
            message: format!("`distribution = \"{shape}\"` needs `{name}`"),
            label,
            help: Some(help),
        });
    };
    if uses_mean && !written(&at("mean_s")) {
        needs(
            "mean_s",
            format!("the {shape} shape is set by its mean: add `mean_s = …` (seconds, > 0)"),
            out,
        );
    }
    if shape == "empirical" {
        // A CSV that could not be read is reported where it is named.
        if !written(&at("quantiles")) && !written(&at("quantiles_csv")) {
            needs(
                "quantiles",
                "an empirical latency is set by measured points: `quantiles = [[0, 0.05], \
                 [0.5, 0.4], [1, 9]]` (quantile, seconds), or `quantiles_csv = \"file.csv\"`"
                    .into(),
                out,
            );
        }
        tokens::check_quantiles(json, &at("quantiles"), tokens::PointUnit::Seconds, out);
    }
    let ignored: &[&str] = match shape {
        "tokens" => &["median_s", "sigma", "mean_s", "quantiles"],
        "empirical" => &["median_s", "sigma", "mean_s", "tail_rate", "tail_factor"],
        _ if uses_mean => &["median_s", "sigma", "quantiles"],
        _ => &["mean_s", "quantiles"],
    };
    for name in ignored {
        if stray(&at(name), &at("distribution")) {
            out.push(Problem {
                path: at(name),
                target: Target::Key,
                message: format!("`{name}` is not used by `distribution = \"{shape}\"`"),
                label: "not used by this shape".into(),
                help: Some(match shape {
                    "tokens" => "a latency from tokens is set by ttft_s, ttft_per_1k_input_s, \
                                 ttft_load, decode_tokens_per_s and load_slowdown"
                        .into(),
                    "empirical" => "an empirical latency is set by its `quantiles` alone; \
                                    measured points already hold the slow tail"
                        .into(),
                    _ if *name == "quantiles" => {
                        "`quantiles` is for distribution = \"empirical\"".into()
                    }
                    _ if uses_mean => {
                        "exponential and constant latencies are set by `mean_s` alone".into()
                    }
                    _ => "a lognormal latency is set by `median_s` and `sigma`; `mean_s` is for \
                          distribution = \"exponential\" or \"constant\""
                        .into(),
                }),
            });
        }
    }
}

/// A token bucket holds `per_window * burst` requests and an admission takes a whole one, so a
/// bucket of less than one would never admit anything: refused rather than rounded up.
fn check_bucket(json: &Value, i: usize, blame: &Blame<'_>, out: &mut Vec<Problem>) {
    let limit = vec![key("endpoints"), Seg::Index(i), key("rate_limit")];
    if !json
        .pointer(&format!("/endpoints/{i}/rate_limit"))
        .is_some_and(Value::is_object)
    {
        return;
    }
    let at = |name: &str| {
        let mut path = limit.clone();
        path.push(key(name));
        path
    };
    let (Some(per_window), Some(burst)) =
        (number(json, &at("per_window")), number(json, &at("burst")))
    else {
        return;
    };
    let size = per_window * burst;
    if size >= 1.0 {
        return;
    }
    out.push(Problem {
        path: blame(&[at("burst"), at("per_window")]),
        target: Target::Value,
        message: format!(
            "the rate-limit bucket holds {} of a request (per_window {} × burst {})",
            show_number(size),
            show_number(per_window),
            show_number(burst)
        ),
        label: "bucket smaller than one request".into(),
        help: Some(format!(
            "a request takes one whole token, so a bucket of less than one would never admit \
             anything: per_window * burst must be >= 1 (here burst >= {})",
            if per_window > 1.0 {
                format!("1/{}", show_number(per_window))
            } else {
                "1".into()
            }
        )),
    });
}

/// An open loop needs its rate and a trace its log; each model's keys mean nothing to the
/// others.
fn check_load(json: &Value, written: &Written<'_>, stray: &Stray<'_>, out: &mut Vec<Problem>) {
    let at = |name: &str| vec![key("load"), key(name)];
    let model = string_at(json, &at("model")).unwrap_or("closed");
    let needs = |name: &str, help: &str, out: &mut Vec<Problem>| {
        let (path, label) = needs_at(&[key("load")], &at("model"), name, written, stray);
        out.push(Problem {
            path,
            target: Target::Value,
            message: format!("`model = \"{model}\"` needs `{name}`"),
            label,
            help: Some(help.into()),
        });
    };
    if model == "open" && !written(&at("rate_per_s")) {
        needs(
            "rate_per_s",
            "an open loop offers jobs at a rate: add `rate_per_s = …` (> 0)",
            out,
        );
    }
    if model == "trace" && !written(&at("trace")) {
        needs(
            "trace",
            "a trace load replays a log's arrivals: add `trace = \"requests.jsonl\"` (a path \
             relative to this file)",
            out,
        );
    }
    let keys: [(&str, &[&str]); 8] = [
        ("rate_per_s", &["open"]),
        ("arrivals", &["open"]),
        ("max_in_flight", &["open", "trace"]),
        ("trace", &["trace"]),
        ("speed", &["trace"]),
        ("origin_s", &["trace"]),
        ("think_s", &["closed"]),
        ("think", &["closed"]),
    ];
    for (name, models) in keys {
        if models.contains(&model) || !stray(&at(name), &at("model")) {
            continue;
        }
        let closed_only = models == ["closed"];
        let models: Vec<String> = models
            .iter()
            .map(|m| format!("`model = \"{m}\"`"))
            .collect();
        out.push(Problem {
            path: at(name),
            target: Target::Key,
            message: format!("`load.{name}` only applies to {}", models.join(" or ")),
            label: format!("not used by `model = \"{model}\"`"),
            help: Some(match model {
                _ if closed_only => {
                    "only a closed loop's workers pause between jobs; an open loop's arrivals \
                     and a trace's times already say when each job starts"
                        .into()
                }
                "closed" => "a closed loop runs `concurrency` workers; set `model = \"open\"` to \
                             offer jobs at a rate, or `model = \"trace\"` to replay a log"
                    .into(),
                "open" => "an open loop draws its arrivals at `rate_per_s`; `model = \"trace\"` \
                           replays a log's instead"
                    .into(),
                _ => "a trace replays the log's own arrival times; `speed` scales them".into(),
            }),
        });
    }
    let workers = [key("concurrency")];
    if model != "closed" && stray(&workers, &at("model")) {
        out.push(Problem {
            path: workers.to_vec(),
            target: Target::Key,
            message: "`concurrency` only applies to `model = \"closed\"`".into(),
            label: format!("not used by `model = \"{model}\"`"),
            help: Some(
                "only a closed loop has workers; an open loop or a trace caps the jobs it runs \
                 at once with `load.max_in_flight`"
                    .into(),
            ),
        });
    }
}

/// `[algorithms.<name>]`: the name or `kind` must be a registered strategy, and every other key
/// one of its parameters, in range (and whole, for an integer parameter). The schema only says
/// "a table of numbers and an optional `kind`", because the parameters depend on the kind.
fn check_algorithms(json: &Value, blame: &Blame<'_>, out: &mut Vec<Problem>) {
    let Some(tables) = json.get("algorithms").and_then(Value::as_object) else {
        return;
    };
    for (name, table) in tables {
        let Some(table) = table.as_object() else {
            continue; // The schema reports a table of the wrong type.
        };
        check_variant_name(name, out);
        let Some(info) = algorithm_kind(name, table.get("kind"), out) else {
            continue;
        };
        for (param, value) in table.iter().filter(|(k, _)| *k != "kind") {
            if let Some(value) = value.as_f64() {
                check_param(name, info, param, value, out);
            }
        }
        check_order(name, info, table, blame, out);
    }
}

/// Parameters the strategy declares as ordered (`min <= initial <= max`), defaults filled in.
/// The pairs reported are the ones the user wrote both sides of: `{ min = 50, max = 10 }` is
/// "min above max", not "min above initial" (a default the user never chose); a default is
/// blamed only when no written pair is out of order.
fn check_order(
    name: &str,
    info: &AlgorithmInfo,
    table: &serde_json::Map<String, Value>,
    blame: &Blame<'_>,
    out: &mut Vec<Problem>,
) {
    let value = |param: &str| {
        let declared = info.param(param).map(|p| p.default);
        table.get(param).map_or(declared, Value::as_f64)
    };
    // A value out of its own range is reported as such (check_param), not again here.
    let in_range = |param: &str, v: f64| {
        info.param(param)
            .is_none_or(|p| (p.min..=p.max).contains(&v))
    };
    let out_of_order = |[low, high]: [&'static str; 2]| {
        let (lo, hi) = (value(low)?, value(high)?);
        (lo > hi && in_range(low, lo) && in_range(high, hi)).then_some((low, high, lo, hi))
    };
    let declared: Vec<[&str; 2]> = info.ordered.to_vec();
    // min <= initial and initial <= max give min <= max.
    let implied: Vec<[&str; 2]> = declared
        .iter()
        .flat_map(|[a, b]| {
            declared
                .iter()
                .filter(move |[c, _]| c == b)
                .map(|[_, d]| [*a, *d])
        })
        .collect();
    let written =
        |pair: &(&str, &str, f64, f64)| table.contains_key(pair.0) && table.contains_key(pair.1);
    let broken = |pairs: &[[&'static str; 2]]| -> Vec<_> {
        pairs.iter().filter_map(|p| out_of_order(*p)).collect()
    };
    let (declared, implied) = (broken(&declared), broken(&implied));
    let chosen = [
        declared.iter().copied().filter(written).collect::<Vec<_>>(),
        implied.iter().copied().filter(written).collect(),
        declared,
    ]
    .into_iter()
    .find(|group| !group.is_empty())
    .unwrap_or_default();
    for (low, high, lo, hi) in chosen {
        let at = |param: &str| vec![key("algorithms"), key(name), key(param)];
        out.push(Problem {
            path: blame(&[at(high), at(low)]),
            target: Target::Value,
            message: format!(
                "`algorithms.{name}`: {low} = {} is above {high} = {}",
                show_number(lo),
                show_number(hi)
            ),
            label: format!("{low} must be <= {high}"),
            help: Some(format!(
                "`{}` needs {low} <= {high}{}",
                info.name,
                if table.contains_key(low) && table.contains_key(high) {
                    ""
                } else {
                    " (unwritten values take their defaults)"
                }
            )),
        });
    }
}

/// Whether `name` can be written in `--algorithms a,b` and read in a report.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn check_variant_name(name: &str, out: &mut Vec<Problem>) {
    if is_plain_name(name) {
        return;
    }
    out.push(Problem {
        path: vec![key("algorithms"), key(name)],
        target: Target::Key,
        message: format!("`{name}` is not a usable algorithm name"),
        label: "not a plain name".into(),
        help: Some(
            "names are used in `--algorithms a,b` and in reports: use ASCII letters, digits, `_` \
             and `-`"
                .into(),
        ),
    });
}

/// The registered strategy `[algorithms.<name>]` configures, or `None` after reporting why
/// there is none (or when the schema already reports a `kind` of the wrong type).
fn algorithm_kind(
    name: &str,
    kind: Option<&Value>,
    out: &mut Vec<Problem>,
) -> Option<&'static AlgorithmInfo> {
    let kind_at = vec![key("algorithms"), key(name), key("kind")];
    let kind = match kind {
        None => None,
        Some(Value::String(kind)) => Some(kind.as_str()),
        Some(_) => return None,
    };
    match (registry::find(name), kind) {
        (Some(info), None) => Some(info),
        (Some(info), Some(kind)) if kind == name => Some(info),
        (Some(_), Some(kind)) => {
            out.push(Problem {
                path: kind_at,
                target: Target::Value,
                message: format!(
                    "`algorithms.{name}` configures the registered strategy `{name}`, so its \
                     kind cannot be `{kind}`"
                ),
                label: "a different strategy".into(),
                help: Some(format!(
                    "a registered name keeps its own kind; for a variant of `{kind}`, use a new \
                     name: `[algorithms.{kind}_custom]` with `kind = \"{kind}\"`"
                )),
            });
            None
        }
        (None, None) => {
            out.push(Problem {
                path: vec![key("algorithms"), key(name)],
                target: Target::Key,
                message: format!(
                    "`{name}` is not a registered algorithm, so `algorithms.{name}` needs `kind`"
                ),
                label: "a named variant without `kind`".into(),
                help: Some(missing_kind_help(name)),
            });
            None
        }
        (None, Some(kind)) => {
            let found = registry::find(kind);
            if found.is_none() {
                out.push(Problem {
                    path: kind_at,
                    target: Target::Value,
                    message: format!("unknown algorithm kind `{kind}` in `algorithms.{name}`"),
                    label: "not a registered algorithm".into(),
                    help: Some(kind_help(kind)),
                });
            }
            found
        }
    }
}

/// "did you mean `backoff`?", or the list of registered strategies when nothing is close.
fn kind_help(word: &str) -> String {
    let names: Vec<&str> = registry::names().collect();
    match schema::did_you_mean(word, names.iter().copied()) {
        Some(best) => format!("did you mean `{best}`?"),
        None => format!("registered strategies: {}", backticked(&names)),
    }
}

/// For `[algorithms.backoff_slow]` without `kind`: suggest the registered name it starts with.
fn missing_kind_help(name: &str) -> String {
    let guess = registry::names()
        .filter(|n| name.starts_with(n))
        .max_by_key(|n| n.len());
    match guess {
        Some(kind) => format!(
            "a named variant says which strategy it configures: add `kind = \"{kind}\"` (or \
             another registered strategy; `simbench list` shows them)"
        ),
        None => "a named variant says which strategy it configures: add `kind = \"…\"` \
                 naming a registered strategy (`simbench list` shows them)"
            .into(),
    }
}

fn backticked(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One `[algorithms.<name>]` key against the parameter the strategy declares.
fn check_param(name: &str, info: &AlgorithmInfo, param: &str, value: f64, out: &mut Vec<Problem>) {
    let path = vec![key("algorithms"), key(name), key(param)];
    let Some(declared) = info.param(param) else {
        out.push(Problem {
            path,
            target: Target::Key,
            message: format!("unknown parameter `{param}` in `algorithms.{name}`"),
            label: "not a parameter of this strategy".into(),
            help: Some(param_help(info, param)),
        });
        return;
    };
    let range = format!(
        "allowed range: {} <= {param} <= {} ({}); default {}",
        declared.min, declared.max, declared.unit, declared.default
    );
    if !(declared.min..=declared.max).contains(&value) {
        let bound = if value < declared.min {
            format!("must be >= {}", declared.min)
        } else {
            format!("must be <= {}", declared.max)
        };
        let help = if value < declared.min && info.poll_delay.contains(&param) {
            format!(
                "{range}; `{}` sleeps at most this long between two polls for a lease, so \
                 below {} s a waiting call would poll at (nearly) zero delay and simulated time \
                 would stand still",
                info.name,
                registry::MIN_POLL_DELAY_S
            )
        } else {
            range
        };
        out.push(Problem {
            path,
            target: Target::Value,
            message: format!(
                "`algorithms.{name}.{param}` = {} is out of range",
                show_number(value)
            ),
            label: bound,
            help: Some(help),
        });
    } else if declared.integer && value.fract() != 0.0 {
        out.push(Problem {
            path,
            target: Target::Value,
            message: format!(
                "`algorithms.{name}.{param}` must be a whole number, found {}",
                show_number(value)
            ),
            label: "expected a whole number".into(),
            help: Some(format!("`{param}` counts {}; {range}", declared.unit)),
        });
    }
}

/// "did you mean `base`? parameters of `backoff`: `base`, `factor`, `cap`".
fn param_help(info: &AlgorithmInfo, param: &str) -> String {
    if info.params.is_empty() {
        return format!("`{}` has no parameters", info.name);
    }
    let names: Vec<&str> = info.params.iter().map(|p| p.name).collect();
    let help = format!("parameters of `{}`: {}", info.name, backticked(&names));
    match schema::did_you_mean(param, names.iter().copied()) {
        Some(best) => format!("did you mean `{best}`? {help}"),
        None => help,
    }
}

// ---------------------------------------------------------------------------------------------
// Scenario -> World.

/// The names of `[algorithms]` in the order the document writes them (a base's first, then
/// the names a child or an override adds).
/// Whether the document (or an override) writes `objective.metric`, rather than leaving it to
/// its default: a sweep's own default objective differs from a comparison's.
fn metric_written(root: &Node) -> bool {
    let doc::Value::Table(top) = &root.value else {
        return false;
    };
    match top.get("objective").map(|e| &e.node.value) {
        Some(doc::Value::Table(objective)) => objective.get("metric").is_some(),
        _ => false,
    }
}

fn algorithm_order(root: &Node) -> Vec<String> {
    let doc::Value::Table(top) = &root.value else {
        return Vec::new();
    };
    match top.get("algorithms").map(|e| &e.node.value) {
        Some(doc::Value::Table(tables)) => tables.entries().iter().map(|e| e.key.clone()).collect(),
        _ => Vec::new(),
    }
}

/// The `[algorithms]` tables in `order`, each keeping only the values that differ from the
/// registry's defaults; a registered name left with no values is dropped (it changes nothing).
fn build_variants(
    tables: &BTreeMap<String, spec::AlgorithmTable>,
    order: &[String],
) -> Vec<Variant> {
    let mut names: Vec<&String> = tables.keys().collect();
    names.sort_by_key(|n| order.iter().position(|o| o == *n).unwrap_or(usize::MAX));
    names
        .into_iter()
        .filter_map(|name| {
            let table = &tables[name];
            let kind = table.kind.clone().unwrap_or_else(|| name.clone());
            let info = registry::find(&kind);
            let default = |p: &str| info.and_then(|i| i.param(p)).map(|p| p.default);
            let params: Vec<(String, f64)> = table
                .params
                .iter()
                .filter(|(p, v)| default(p) != Some(**v))
                .map(|(p, v)| (p.clone(), *v))
                .collect();
            let variant = Variant {
                name: name.clone(),
                kind,
                params,
            };
            (variant.is_named() || !variant.params.is_empty()).then_some(variant)
        })
        .collect()
}

/// Freezes a checked scenario. Every value is already in range, so this cannot fail.
fn build(
    s: &Scenario,
    algorithm_order: &[String],
    metric_written: bool,
    replay: Option<Replayed>,
) -> World {
    let (pools, pool_of) = topology::build_pools(s);
    let incidents = topology::build_incidents(s, &pools);
    let token_sizes = s.tokens.as_ref().map(tokens::build_tokens);
    World {
        name: s.name.clone(),
        summary: s.summary.clone(),
        seed: s.seed,
        jobs: replay.as_ref().map_or(s.jobs, |r| r.jobs),
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
            retry_after_spread: s.retry.retry_after_spread,
            max_total_s: s.retry.max_total_s,
            budget: s.retry.budget.as_ref().map(|b| world::RetryBudget {
                ratio: b.ratio,
                min_per_s: b.min_per_s,
                window_s: b.window_s,
            }),
            throttle: s.retry.throttle.as_ref().map(|t| world::Throttle {
                k: t.k,
                window_s: t.window_s,
            }),
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
        endpoints: s
            .endpoints
            .iter()
            .zip(pool_of)
            .map(|(e, pool)| build_endpoint(e, pool, token_sizes.as_ref()))
            .collect(),
        pools,
        incidents,
        recovery: Recovery {
            window_s: s.recovery.window_s,
            threshold: s.recovery.threshold,
        },
        unsuited: s.unsuited.clone(),
        algorithms: build_variants(&s.algorithms, algorithm_order),
        load: match s.load.model {
            spec::LoadModel::Closed => Load::Closed {
                think: s
                    .load
                    .think_s
                    .filter(|t| *t > 0.0)
                    .map(|mean_s| world::Think {
                        mean_s,
                        exponential: s.load.think.unwrap_or_default() == spec::Think::Exponential,
                    }),
            },
            spec::LoadModel::Open => Load::Open {
                rate_per_s: s.load.rate_per_s.expect("checked: open needs a rate"),
                poisson: s.load.arrivals.unwrap_or_default() == spec::Arrivals::Poisson,
                max_in_flight: s.load.max_in_flight,
            },
            spec::LoadModel::Trace => Load::Trace {
                replay: replay.expect("a trace world has its replay").replay,
                max_in_flight: s.load.max_in_flight,
            },
        },
        validity: Validity {
            max_queue_share: s.validity.max_queue_share,
            knee_concurrency: s.validity.knee_concurrency,
        },
        tokens: token_sizes,
        objective: s
            .objective
            .as_ref()
            .map(|o| objective::build(o, metric_written)),
        thresholds: s
            .thresholds
            .iter()
            .flat_map(|t| &t.assert)
            .map(|text| Assertion::parse(text).expect("checked: a valid assertion"))
            .collect(),
    }
}

fn build_endpoint(e: &spec::Endpoint, pool: usize, sizes: Option<&world::Tokens>) -> Endpoint {
    let token_latency = tokens::build_latency(&e.latency);
    let quantiles = tokens::build_quantiles(&e.latency);
    Endpoint {
        limits: e.limits.iter().map(tokens::build_limit).collect(),
        charge: tokens::build_charge(e.token_charge),
        price: e.price.as_ref().map(tokens::build_price),
        saturation: tokens::build_saturation(e.saturated),
        client_cap: e.client_cap,
        pool,
        cache: e.cache.as_ref().map(topology::build_cache),
        id: e.id.clone(),
        capacity: e.capacity,
        weight: e.weight,
        quota_units: e.quota_units.filter(|q| *q > 0.0),
        latency: Latency {
            distribution: match e.latency.distribution {
                spec::Distribution::Lognormal => Distribution::Lognormal,
                spec::Distribution::Exponential => Distribution::Exponential,
                spec::Distribution::Constant => Distribution::Constant,
                spec::Distribution::Tokens => Distribution::Tokens,
                spec::Distribution::Empirical => Distribution::Empirical,
            },
            mean_s: match (&token_latency, &quantiles[..]) {
                (Some(model), _) => tokens::idle_mean_s(model, sizes),
                (None, []) => e.latency.mean_s.unwrap_or(e.latency.median_s),
                (None, points) => crate::tokens::points_mean(points),
            },
            tokens: token_latency,
            median_s: e.latency.median_s,
            sigma: e.latency.sigma,
            // Measured quantiles already hold the slow tail.
            tail_rate: if quantiles.is_empty() {
                e.latency.tail_rate
            } else {
                0.0
            },
            tail_factor: e.latency.tail_factor,
            quantiles,
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
