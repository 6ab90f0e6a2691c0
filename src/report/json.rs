//! The JSON report (`--json PATH`): every run, the aggregates, the verdicts and the provenance
//! (simbench version and world hash), 2-space indented.
//!
//! Owns the JSON shape (reference §8.6 plus `simbench_version`, `world_hash`, `median`,
//! `outcome`/`reason` per run, `stalled` (runs that stalled and kept their metrics), `unfinished`
//! (runs a budget stopped, without metrics), `not_applicable` and `settings`). A metric that does
//! not apply to the world is absent from `metrics`, `aggregates` and `winners` and listed under
//! `not_applicable` with the reason; a metric a run has nothing to compute from (no job
//! completed, no request sent…) is absent from that run's `metrics` and listed in its
//! `undefined` with the reason, and aggregates count such runs in `undefined_runs`. Objects keep report order — algorithms as they
//! first ran, metrics in catalogue order — rather than sorting keys. Values are rounded to 6
//! decimals (money below 0.1 to 6 significant digits); verdicts were computed from the unrounded ones. Streams into any `io::Write` (the
//! runs one at a time, so a report of a million runs is never held whole as text); where it
//! goes is the caller's decision.

use std::collections::BTreeMap;
use std::io::{self, Write};

use schemars::{JsonSchema, SchemaGenerator, json_schema};
use serde::Serialize;
use serde::ser::SerializeMap;

use super::decision::{self, Comparison, Decision};
use super::format::{round_value, round6};
use super::{ErrorCounts, LoadShape, Outcome, Report, Run};
use crate::metrics::{CATALOGUE, Metric, undefined_reason};
use crate::objective::{Bound, Objective, Source};

/// The JSON Schema (draft 2020-12) of the report, as `simbench schema report` prints it and
/// `schema/report.schema.json` stores it, ending with a newline.
pub fn schema_text() -> String {
    schema_of::<Document<'_>>()
}

/// The draft 2020-12 schema of what `T` serializes to, pretty-printed with a final newline.
pub(crate) fn schema_of<T: JsonSchema>() -> String {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema is JSON");
    text.push('\n');
    text
}

/// Renders the JSON report, ending with a newline.
pub fn render(report: &Report) -> String {
    let mut bytes = Vec::new();
    write(report, &mut bytes).expect("writing to memory cannot fail");
    String::from_utf8(bytes).expect("serde_json writes UTF-8")
}

/// Writes the JSON report, ending with a newline.
pub fn write(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let doc = Document {
        schema_version: SCHEMA_VERSION,
        simbench_version: env!("CARGO_PKG_VERSION"),
        world_hash: &report.world.hash,
        scenario: &report.world.name,
        summary: &report.world.summary,
        seeds: &report.sweep.seeds,
        rng: report.sweep.rng,
        jobs: report.world.jobs,
        concurrency: match report.world.shape {
            LoadShape::Closed { workers } => Some(workers),
            _ => None,
        },
        load: report.world.shape,
        wall_s: (report.sweep.wall_s * 1e3).round() / 1e3,
        objective: objective(&report.decision.objective, report.sequential.as_ref()),
        verdict: verdict(&report.decision),
        sequential: report.sequential.as_ref().map(sequential),
        runs: Runs(report),
        aggregates: aggregates(report),
        not_applicable: Ordered(
            report
                .listed_not_applicable()
                .filter_map(|r| r.not_applicable.map(|why| (r.info.name, why)))
                .collect(),
        ),
        winners: Ordered(
            report
                .shown_rows()
                .map(|r| (r.info.name, r.verdict.winners.clone()))
                .collect(),
        ),
        excluded_by_completion: Ordered(
            report
                .shown_rows()
                .filter(|r| r.info.gated)
                .map(|r| {
                    let list = r
                        .verdict
                        .excluded
                        .iter()
                        .map(|e| Excluded {
                            algorithm: &e.algorithm,
                            completion_ratio: round6(e.completion_ratio),
                        })
                        .collect();
                    (r.info.name, list)
                })
                .collect(),
        ),
        settings: Ordered(
            report
                .settings_that_ran()
                .map(|s| {
                    let params = Ordered(s.params.iter().map(|(k, v)| (k.as_str(), *v)).collect());
                    let setting = JsonSetting {
                        kind: &s.kind,
                        params,
                    };
                    (s.name.as_str(), setting)
                })
                .collect(),
        ),
        unsuited: Ordered(
            report
                .columns
                .iter()
                .filter_map(|c| c.unsuited.as_deref().map(|u| (c.algorithm.as_str(), u)))
                .collect(),
        ),
        not_run: Ordered(
            report
                .not_run
                .iter()
                .map(|(name, reason)| (name.as_str(), reason.as_str()))
                .collect(),
        ),
        not_compared: Ordered(
            report
                .shown_rows()
                .filter_map(|r| r.verdict.not_compared.as_deref().map(|a| (r.info.name, a)))
                .collect(),
        ),
        stalled: Ordered(
            report
                .columns
                .iter()
                .filter(|c| !c.stalls.is_empty())
                .map(|c| (c.algorithm.as_str(), unfinished(&c.stalls)))
                .collect(),
        ),
        unfinished: Ordered(
            report
                .columns
                .iter()
                .filter(|c| !c.unfinished.is_empty())
                .map(|c| (c.algorithm.as_str(), unfinished(&c.unfinished)))
                .collect(),
        ),
        invalid: Ordered(
            report
                .columns
                .iter()
                .filter(|c| !c.invalid.is_empty())
                .map(|c| {
                    let runs = c
                        .invalid
                        .iter()
                        .map(|(seed, reason)| Invalid {
                            seed: *seed,
                            reason,
                        })
                        .collect();
                    (c.algorithm.as_str(), runs)
                })
                .collect(),
        ),
    };
    write_pretty(out, &doc)
}

/// Writes `value` as indented JSON and a newline. serde_json writes such a document in many
/// small pieces (an indent, a quote, a key, a colon); through `dyn Write` each was a call the
/// compiler could not inline (the report's JSON took 39 instructions a byte). A buffer of a
/// known type in between takes them inline and passes on 64 KiB at a time.
pub fn write_pretty<T: Serialize + ?Sized>(out: &mut dyn Write, value: &T) -> io::Result<()> {
    let mut buffered = io::BufWriter::with_capacity(64 * 1024, out);
    serde_json::to_writer_pretty(&mut buffered, value)?;
    buffered.write_all(b"\n")?;
    buffered.flush()
}

/// [`write_pretty`] without the indentation: a machine file.
pub fn write_compact<T: Serialize + ?Sized>(out: &mut dyn Write, value: &T) -> io::Result<()> {
    let mut buffered = io::BufWriter::with_capacity(64 * 1024, out);
    serde_json::to_writer(&mut buffered, value)?;
    buffered.write_all(b"\n")?;
    buffered.flush()
}

/// The runs, serialized one at a time as they are written rather than collected first.
struct Runs<'a>(&'a Report);

impl JsonSchema for Runs<'_> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Runs".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
        array_of::<JsonRun<'_>>(
            generator,
            "Every run, in plan order (algorithm-major, seeds in order).",
        )
    }
}

/// The schema of an array of `T` that a custom serializer streams (so no `Vec<T>` exists).
pub(crate) fn array_of<T: JsonSchema>(
    generator: &mut SchemaGenerator,
    description: &str,
) -> schemars::Schema {
    json_schema!({
        "description": description,
        "type": "array",
        "items": generator.subschema_for::<T>(),
    })
}

impl Serialize for Runs<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.runs.iter().map(|r| run(self.0, r)))
    }
}

/// A JSON object whose keys keep the order given (serde_json's own map would sort them).
pub(crate) struct Ordered<K, V>(pub(crate) Vec<(K, V)>);

impl<K, V> Ordered<K, V> {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// An object of any keys (algorithm or metric names) whose values are all `V`.
impl<K, V: JsonSchema> JsonSchema for Ordered<K, V> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Map_of_{}", V::schema_name()).into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
        json_schema!({
            "type": "object",
            "additionalProperties": generator.subschema_for::<V>(),
        })
    }
}

impl<K: Serialize, V: Serialize> Serialize for Ordered<K, V> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The version of this JSON shape: raised whenever a field changes meaning or goes away
/// (added fields do not raise it). `schema/report.schema.json` describes it.
/// 2: `concurrency` is `null` for an open loop or a trace replay (it held the unused worker
/// count), and `load` says how the jobs come.
pub const SCHEMA_VERSION: u32 = 2;

/// The report of `simbench run --json`: every run, the aggregates, the per-metric winners and
/// the verdict, with the provenance (simbench version, world hash). Algorithms appear in the
/// order they first ran, metrics in catalogue order; values are rounded to 6 decimals (money
/// below 0.1 to 6 significant digits).
#[derive(Serialize, JsonSchema)]
#[schemars(title = "simbench run report", deny_unknown_fields)]
struct Document<'a> {
    /// The version of this shape; raised when a field changes meaning or goes away.
    #[schemars(extend("const" = SCHEMA_VERSION))]
    schema_version: u32,
    /// The simbench that wrote it.
    simbench_version: &'static str,
    /// The world's fingerprint: equal hashes, equal worlds (objective and thresholds aside).
    world_hash: &'a str,
    /// The scenario's `name`.
    scenario: &'a str,
    /// The scenario's `summary`.
    summary: &'a str,
    /// The seeds run, in order.
    seeds: &'a [u64],
    /// The random-number scheme: `native`, or `reference` (exact replay of the reference).
    #[schemars(extend("enum" = ["native", "reference"]))]
    rng: &'static str,
    /// Jobs per run (after overrides).
    jobs: u32,
    /// Closed-loop workers (after overrides); `null` for an open loop or a trace replay, which
    /// have no workers (`load` says how their jobs come).
    concurrency: Option<u32>,
    /// How the jobs come.
    load: LoadShape,
    /// Real seconds the comparison took: the only value that differs between identical runs.
    wall_s: f64,
    /// What the verdict optimised.
    objective: JsonObjective,
    /// Which strategy to pick for the objective, and how sure.
    verdict: JsonVerdict<'a>,
    /// Where `--seeds auto` stopped; null for a fixed number of seeds.
    sequential: Option<JsonSequential<'a>>,
    runs: Runs<'a>,
    /// Algorithm → metric → its summary over the runs that have metrics (finished or stalled).
    #[schemars(schema_with = "aggregates_schema")]
    aggregates: Ordered<&'a str, Ordered<&'static str, Aggregate>>,
    /// Metric → why it does not apply to this world (it is absent everywhere else).
    #[schemars(schema_with = "metric_map::<String>")]
    not_applicable: Ordered<&'static str, &'static str>,
    /// Metric → the algorithms that win it (the reference's star rule), possibly none.
    #[schemars(schema_with = "metric_map::<Vec<String>>")]
    winners: Ordered<&'static str, Vec<String>>,
    /// Gated metric → the algorithms the completion gate left out of it.
    #[schemars(schema_with = "metric_map::<Vec<Excluded<'_>>>")]
    excluded_by_completion: Ordered<&'static str, Vec<Excluded<'a>>>,
    /// Algorithm → how the world configures it (`[algorithms.<name>]`).
    settings: Ordered<&'a str, JsonSetting<'a>>,
    /// Algorithm → why the world marks it unsuited (those that ran).
    unsuited: Ordered<&'a str, &'a str>,
    /// Algorithm → why the world marks it unsuited, for those it marks that did not run (a
    /// default comparison leaves them out).
    not_run: Ordered<&'a str, &'a str>,
    /// Metric → the one algorithm eligible for it (nothing to compare it with).
    #[schemars(schema_with = "metric_map::<String>")]
    not_compared: Ordered<&'static str, &'a str>,
    /// Algorithm → its runs that stalled or livelocked and kept their metrics.
    stalled: Ordered<&'a str, Vec<Unfinished<'a>>>,
    /// Algorithm → its runs without metrics (stopped by a budget, or stalled under
    /// `--rng reference`).
    unfinished: Ordered<&'a str, Vec<Unfinished<'a>>>,
    /// Algorithm → its runs the validity gate rejects.
    invalid: Ordered<&'a str, Vec<Invalid<'a>>>,
}

/// The name of a metric of the catalogue (in the schema's `$defs`, referred to everywhere).
struct MetricName;

impl JsonSchema for MetricName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MetricName".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = CATALOGUE.iter().map(|m| m.name).collect();
        json_schema!({
            "description": "A metric of the catalogue (`simbench list` describes each).",
            "type": "string",
            "enum": names,
        })
    }
}

/// A string naming a metric of the catalogue.
pub(crate) fn metric_name_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
    metric_name(generator)
}

/// A string naming a metric of the catalogue.
fn metric_name(generator: &mut SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<MetricName>()
}

/// Several metric names.
fn metric_names(generator: &mut SchemaGenerator) -> schemars::Schema {
    json_schema!({ "type": "array", "items": metric_name(generator) })
}

/// An object keyed by metric names whose values are all `V`.
pub(crate) fn metric_map<V: JsonSchema>(generator: &mut SchemaGenerator) -> schemars::Schema {
    json_schema!({
        "type": "object",
        "propertyNames": metric_name(generator),
        "additionalProperties": generator.subschema_for::<V>(),
    })
}

/// Algorithm → metric → summary.
fn aggregates_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": metric_map::<Aggregate>(generator),
    })
}

/// An algorithm as the file configures it: its strategy and the parameters set off default.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct JsonSetting<'a> {
    /// The registered strategy it is.
    kind: &'a str,
    /// Parameter → value, for those set off their defaults.
    params: Ordered<&'a str, f64>,
}

/// A run the validity gate rejected.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Invalid<'a> {
    seed: u64,
    /// Why its latency describes the harness rather than the provider.
    reason: &'a str,
}

/// One (algorithm, seed) run.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct JsonRun<'a> {
    scenario: &'a str,
    algorithm: &'a str,
    seed: u64,
    /// `ok`, `stalled` or `livelock` (with metrics; without under `--rng reference`), `timeout`
    /// or `out_of_memory` (without).
    #[schemars(extend("enum" = ["ok", "stalled", "livelock", "timeout", "out_of_memory"]))]
    outcome: &'static str,
    /// Why it did not finish.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    /// Runs with metrics: whether the validity gate accepts the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    valid: Option<bool>,
    /// Why the validity gate rejects it.
    #[serde(skip_serializing_if = "Option::is_none")]
    invalid_reason: Option<&'a str>,
    /// Metric → value, for every metric that applies to the world and that the run defines.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "metric_map::<f64>")]
    metrics: Option<Ordered<&'static str, f64>>,
    /// Metrics that apply to the world but that this run has nothing to compute from.
    #[serde(skip_serializing_if = "Ordered::is_empty")]
    #[schemars(schema_with = "metric_map::<String>")]
    undefined: Ordered<&'static str, &'static str>,
    /// Error class → failed attempts.
    #[schemars(with = "BTreeMap<String, u64>")]
    error_classes: &'a ErrorCounts,
    /// Endpoint id → admitted requests.
    endpoint_admitted: Ordered<&'a str, u64>,
}

fn run<'a>(report: &'a Report, run: &'a Run) -> JsonRun<'a> {
    let (outcome, reason) = match &run.outcome {
        Outcome::Finished(_) => ("ok", None),
        Outcome::Stalled { kind, reason, .. } | Outcome::Unfinished { kind, reason } => {
            (*kind, Some(reason.as_str()))
        }
    };
    JsonRun {
        scenario: &report.world.name,
        algorithm: &run.algorithm,
        seed: run.seed,
        outcome,
        reason,
        valid: run.metrics().map(|_| report.invalid_reason(run).is_none()),
        invalid_reason: report.invalid_reason(run),
        metrics: run.metrics().map(|m| {
            let applicable = m
                .iter_defined()
                .filter(|(info, _)| report.applies(info.metric));
            Ordered(
                applicable
                    .filter_map(|(info, v)| Some((info.name, round_value(info.unit, v?))))
                    .collect(),
            )
        }),
        undefined: Ordered(
            run.metrics()
                .map(|m| {
                    m.iter_defined()
                        .filter(|(info, v)| v.is_none() && report.applies(info.metric))
                        .map(|(info, _)| (info.name, undefined_reason(info.metric)))
                        .collect()
                })
                .unwrap_or_default(),
        ),
        error_classes: &run.error_classes,
        endpoint_admitted: Ordered(
            report
                .world
                .endpoints
                .iter()
                .map(String::as_str)
                .zip(run.endpoint_admitted.iter().copied())
                .collect(),
        ),
    }
}

/// One metric of one algorithm over its runs with metrics.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Aggregate {
    /// Mean over the runs that define it.
    mean: f64,
    min: f64,
    max: f64,
    /// Sample standard deviation (0 for one run).
    stdev: f64,
    median: f64,
    /// Finished runs left out because the metric is undefined in them.
    #[serde(skip_serializing_if = "is_zero")]
    undefined_runs: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Per algorithm with at least one finished run, per metric in catalogue order.
fn aggregates(report: &Report) -> Ordered<&str, Ordered<&'static str, Aggregate>> {
    let all: Vec<Metric> = CATALOGUE.iter().map(|m| m.metric).collect();
    aggregates_of(report, &all)
}

/// [`aggregates`] of the metrics in `shown`, in that order (a grid cell shows a few).
pub(crate) fn aggregates_of<'a>(
    report: &'a Report,
    shown: &[Metric],
) -> Ordered<&'a str, Ordered<&'static str, Aggregate>> {
    Ordered(
        report
            .columns
            .iter()
            .filter(|c| !c.stats.is_empty())
            .map(|c| {
                let per_metric = shown
                    .iter()
                    .map(|&m| (m.info(), c.summary(m)))
                    .filter(|(info, _)| report.applies(info.metric))
                    .filter_map(|(info, s)| {
                        let s = s?;
                        let round = |x: f64| round_value(info.unit, x);
                        let a = Aggregate {
                            mean: round(s.mean),
                            min: round(s.min),
                            max: round(s.max),
                            stdev: round(s.stdev),
                            median: round(s.median),
                            undefined_runs: c.undefined_runs(info.metric),
                        };
                        Some((info.name, a))
                    })
                    .collect();
                (c.algorithm.as_str(), Ordered(per_metric))
            })
            .collect(),
    )
}

/// An algorithm the completion gate left out of a metric.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Excluded<'a> {
    algorithm: &'a str,
    /// Its mean `jobs_done` over the best's.
    completion_ratio: f64,
}

/// A run that stalled, or stopped without metrics.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Unfinished<'a> {
    seed: u64,
    #[schemars(extend("enum" = ["stalled", "livelock", "timeout", "out_of_memory"]))]
    outcome: &'static str,
    reason: &'a str,
}

fn unfinished<'a>(runs: &'a [(u64, &'static str, String)]) -> Vec<Unfinished<'a>> {
    runs.iter()
        .map(|(seed, outcome, reason)| Unfinished {
            seed: *seed,
            outcome,
            reason,
        })
        .collect()
}

/// The objective as data.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct JsonObjective {
    /// The metric optimised.
    #[schemars(schema_with = "metric_name")]
    metric: &'static str,
    /// Which way is better.
    #[schemars(extend("enum" = ["higher", "lower"]))]
    direction: &'static str,
    /// Limits on means the pick must meet.
    constraints: Vec<JsonConstraint>,
    /// Metrics that decide, in order, when the objective cannot.
    #[schemars(schema_with = "metric_names")]
    tie_break: Vec<&'static str>,
    /// The confidence the verdict holds at (under `--seeds auto`, over all looks together).
    confidence: f64,
    /// `default` (no `[objective]`) or `world` (the file's, after command-line overrides).
    #[schemars(extend("enum" = ["default", "world"]))]
    source: &'static str,
}

/// A limit on a metric's mean (exactly one of `max`, `min`), and in a breach the mean.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct JsonConstraint {
    #[schemars(schema_with = "metric_name")]
    metric: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    max: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min: Option<f64>,
    /// The algorithm's mean, in a breach.
    #[serde(skip_serializing_if = "Option::is_none")]
    mean: Option<Option<f64>>,
}

fn constraint(metric: Metric, bound: Bound, mean: Option<Option<f64>>) -> JsonConstraint {
    let info = metric.info();
    let (max, min) = match bound {
        Bound::AtMost(x) => (Some(x), None),
        Bound::AtLeast(x) => (None, Some(x)),
    };
    JsonConstraint {
        metric: info.name,
        max,
        min,
        mean: mean.map(|m| m.map(|m| round_value(info.unit, m))),
    }
}

/// Where `--seeds auto` stopped (`null` for a fixed number of seeds).
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct JsonSequential<'a> {
    /// Seeds run at each planned look.
    looks: &'a [u32],
    /// Looks taken before it stopped.
    looks_taken: usize,
    /// Seeds run.
    seeds: u32,
    /// The most seeds it could run.
    max_seeds: u32,
    /// Whether the verdict picked a strategy.
    decided: bool,
    /// Whether it stopped because there is nothing to decide (no strategy meets every
    /// constraint, or none could be judged), which more seeds would not change.
    nothing_to_decide: bool,
    /// The confidence of each look's intervals (the verdict's comparisons are at it).
    per_look_confidence: f64,
    /// The sentence the terminal and markdown print.
    text: String,
}

fn sequential(stop: &crate::sequential::Stop) -> JsonSequential<'_> {
    JsonSequential {
        looks: &stop.design.looks,
        looks_taken: stop.looks_taken,
        seeds: stop.seeds,
        max_seeds: stop.design.max(),
        decided: stop.decided,
        nothing_to_decide: stop.nothing_to_decide,
        per_look_confidence: round6(stop.design.per_look()),
        text: stop.describe(),
    }
}

/// The objective as stated: under `--seeds auto` its confidence is the one all looks together
/// hold, not a single look's.
fn objective(o: &Objective, sequential: Option<&crate::sequential::Stop>) -> JsonObjective {
    JsonObjective {
        metric: o.metric.info().name,
        direction: o.metric.info().direction.name(),
        constraints: o
            .constraints
            .iter()
            .map(|c| constraint(c.metric, c.bound, None))
            .collect(),
        tie_break: o.tie_break.iter().map(|m| m.info().name).collect(),
        confidence: sequential.map_or(o.confidence, |s| s.design.confidence),
        source: match o.source {
            Source::Default => "default",
            Source::World => "world",
        },
    }
}

/// The verdict: `decision` is `pick` (decided), `only_feasible` (the one strategy meeting every
/// constraint), `no_decision` (the leaders cannot be separated) or `none` (nothing to pick).
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct JsonVerdict<'a> {
    #[schemars(extend("enum" = ["pick", "only_feasible", "no_decision", "none"]))]
    decision: &'static str,
    /// The headline, as the terminal prints it.
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pick: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    runner_up: Option<&'a str>,
    /// With no decision: the candidates still in contention after the last level.
    #[serde(skip_serializing_if = "Option::is_none")]
    inseparable: Option<Vec<&'a str>>,
    /// The comparisons with the runner-up (or between the two inseparable leaders), one per
    /// level of the objective that was reached, the deciding one last.
    comparisons: Vec<JsonComparison<'a>>,
    /// Algorithm → the constraints its means break.
    breaches: Ordered<&'a str, Vec<JsonConstraint>>,
    /// Algorithm → why the verdict does not judge it.
    not_judged: Ordered<&'a str, &'a str>,
    /// Algorithm → its completion ratio (mean `jobs_done` over the best's), for each one the
    /// completion gate kept from a gated (†) level of the objective it would have been ranked on.
    completion_gated: Ordered<&'a str, f64>,
}

/// A paired comparison of two algorithms on one metric.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct JsonComparison<'a> {
    #[schemars(schema_with = "metric_name")]
    metric: &'static str,
    /// The pick, or the level's leader.
    first: &'a str,
    /// The runner-up, or the candidate closest to the leader.
    second: &'a str,
    /// With no decision: every candidate the leader could not be told from on this level.
    #[serde(skip_serializing_if = "Option::is_none")]
    tied: Option<&'a [String]>,
    /// `first`'s mean.
    mean: f64,
    /// `second`'s mean.
    other_mean: f64,
    /// Mean of the per-seed differences, first − second.
    difference: f64,
    /// `[low, high]` of the difference at the verdict's confidence, or null for fewer than two
    /// seeds.
    interval: Option<[f64; 2]>,
    /// Seeds both have the metric on.
    seeds: usize,
    /// Seeds on which `first` was better.
    seeds_won: usize,
    /// Whether the interval lies wholly on `first`'s side of zero.
    separated: bool,
}

fn comparison<'a>(
    c: &Comparison,
    (first, second): (&'a str, &'a str),
    tied: Option<&'a [String]>,
    separated: bool,
) -> JsonComparison<'a> {
    let unit = c.metric.info().unit;
    let round = |x: f64| round_value(unit, x);
    JsonComparison {
        metric: c.metric.info().name,
        first,
        second,
        tied,
        mean: round(c.mean),
        other_mean: round(c.other_mean),
        difference: round(c.difference.mean),
        interval: c
            .difference
            .interval
            .map(|(low, high)| [round(low), round(high)]),
        seeds: c.difference.n,
        seeds_won: c.seeds_won,
        separated,
    }
}

/// The verdict as this report writes it, for other documents that carry one (the sweep's best
/// operating point).
pub(crate) fn verdict(d: &Decision) -> JsonVerdict<'_> {
    let mut inseparable = None;
    let (decision, pick, runner_up, comparisons) = match &d.outcome {
        decision::Outcome::Decided {
            pick,
            runner_up,
            decided,
            tied,
        } => {
            let names = (pick.as_str(), runner_up.as_str());
            let mut all: Vec<JsonComparison<'_>> = tied
                .iter()
                .map(|c| comparison(c, names, None, false))
                .collect();
            all.push(comparison(decided, names, None, true));
            ("pick", Some(pick.as_str()), Some(runner_up.as_str()), all)
        }
        decision::Outcome::Alone { pick } => {
            ("only_feasible", Some(pick.as_str()), None, Vec::new())
        }
        decision::Outcome::Undecided { levels } => {
            inseparable = levels.last().map(|l| {
                let tied = l.tied.iter().map(String::as_str);
                std::iter::once(l.leader.as_str()).chain(tied).collect()
            });
            let all = levels
                .iter()
                .map(|l| {
                    let names = (l.leader.as_str(), l.tied[0].as_str());
                    comparison(&l.closest, names, Some(&l.tied), false)
                })
                .collect();
            ("no_decision", None, None, all)
        }
        decision::Outcome::Nothing => ("none", None, None, Vec::new()),
    };
    JsonVerdict {
        decision,
        text: d.headline(),
        pick,
        runner_up,
        inseparable,
        comparisons,
        breaches: Ordered(
            d.breaches
                .iter()
                .map(|(name, broken)| {
                    let list = broken
                        .iter()
                        .map(|b| constraint(b.constraint.metric, b.constraint.bound, Some(b.mean)))
                        .collect();
                    (name.as_str(), list)
                })
                .collect(),
        ),
        not_judged: Ordered(
            d.left_out
                .iter()
                .map(|(name, why)| (name.as_str(), why.as_str()))
                .collect(),
        ),
        completion_gated: Ordered(
            d.gated_out
                .iter()
                .map(|(name, ratio)| (name.as_str(), round6(*ratio)))
                .collect(),
        ),
    }
}
