//! The JSON report (`--json PATH`): every run, the aggregates, the verdicts and the provenance
//! (simbench version and world hash), 2-space indented.
//!
//! Owns the JSON shape (reference §8.6 plus `simbench_version`, `world_hash`, `median`,
//! `outcome`/`reason` per run, `stalled`, `not_applicable` and `settings`). A metric that does
//! not apply to the world is absent from `metrics`, `aggregates` and `winners` and listed under
//! `not_applicable` with the reason; a metric a run has nothing to compute from (no job
//! completed, no request sent…) is absent from that run's `metrics` and listed in its
//! `undefined` with the reason, and aggregates count such runs in `undefined_runs`. Objects keep report order — algorithms as they
//! first ran, metrics in catalogue order — rather than sorting keys. Values are rounded to 6
//! decimals; verdicts were computed from the unrounded ones. Streams into any `io::Write` (the
//! runs one at a time, so a report of a million runs is never held whole as text); where it
//! goes is the caller's decision.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;
use serde::ser::SerializeMap;

use super::format::round6;
use super::{Column, Outcome, Report, Run};
use crate::metrics::{CATALOGUE, undefined_reason};

/// Renders the JSON report, ending with a newline.
pub fn render(report: &Report) -> String {
    let mut bytes = Vec::new();
    write(report, &mut bytes).expect("writing to memory cannot fail");
    String::from_utf8(bytes).expect("serde_json writes UTF-8")
}

/// Writes the JSON report, ending with a newline.
pub fn write(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let doc = Document {
        simbench_version: env!("CARGO_PKG_VERSION"),
        world_hash: &report.world.hash,
        scenario: &report.world.name,
        summary: &report.world.summary,
        seeds: &report.sweep.seeds,
        rng: report.sweep.rng,
        jobs: report.world.jobs,
        concurrency: report.world.concurrency,
        wall_s: (report.sweep.wall_s * 1e3).round() / 1e3,
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
                .filter(|c| !c.unfinished.is_empty())
                .map(|c| (c.algorithm.as_str(), unfinished(c)))
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
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    out.write_all(b"\n")
}

/// The runs, serialized one at a time as they are written rather than collected first.
struct Runs<'a>(&'a Report);

impl Serialize for Runs<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.runs.iter().map(|r| run(self.0, r)))
    }
}

/// A JSON object whose keys keep the order given (serde_json's own map would sort them).
struct Ordered<K, V>(Vec<(K, V)>);

impl<K, V> Ordered<K, V> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
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

#[derive(Serialize)]
struct Document<'a> {
    simbench_version: &'static str,
    world_hash: &'a str,
    scenario: &'a str,
    summary: &'a str,
    seeds: &'a [u64],
    rng: &'static str,
    jobs: u32,
    concurrency: u32,
    wall_s: f64,
    runs: Runs<'a>,
    aggregates: Ordered<&'a str, Ordered<&'static str, Aggregate>>,
    not_applicable: Ordered<&'static str, &'static str>,
    winners: Ordered<&'static str, Vec<String>>,
    excluded_by_completion: Ordered<&'static str, Vec<Excluded<'a>>>,
    settings: Ordered<&'a str, JsonSetting<'a>>,
    unsuited: Ordered<&'a str, &'a str>,
    not_compared: Ordered<&'static str, &'a str>,
    stalled: Ordered<&'a str, Vec<Unfinished<'a>>>,
    invalid: Ordered<&'a str, Vec<Invalid<'a>>>,
}

/// An algorithm as the file configures it: its strategy and the parameters set off default.
#[derive(Serialize)]
struct JsonSetting<'a> {
    kind: &'a str,
    params: Ordered<&'a str, f64>,
}

/// A run the validity gate rejected.
#[derive(Serialize)]
struct Invalid<'a> {
    seed: u64,
    reason: &'a str,
}

#[derive(Serialize)]
struct JsonRun<'a> {
    scenario: &'a str,
    algorithm: &'a str,
    seed: u64,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    /// Finished runs: whether the validity gate accepts the run, and why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    valid: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    invalid_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics: Option<Ordered<&'static str, f64>>,
    /// Metrics that apply to the world but that this run has nothing to compute from.
    #[serde(skip_serializing_if = "Ordered::is_empty")]
    undefined: Ordered<&'static str, &'static str>,
    error_classes: &'a BTreeMap<String, u64>,
    endpoint_admitted: BTreeMap<&'a str, u64>,
}

fn run<'a>(report: &'a Report, run: &'a Run) -> JsonRun<'a> {
    let (outcome, reason) = match &run.outcome {
        Outcome::Finished(_) => ("ok", None),
        Outcome::Unfinished { kind, reason } => (*kind, Some(reason.as_str())),
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
                    .filter_map(|(info, v)| Some((info.name, round6(v?))))
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
        endpoint_admitted: report
            .world
            .endpoints
            .iter()
            .map(String::as_str)
            .zip(run.endpoint_admitted.iter().copied())
            .collect(),
    }
}

#[derive(Serialize)]
struct Aggregate {
    mean: f64,
    min: f64,
    max: f64,
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
    Ordered(
        report
            .columns
            .iter()
            .filter(|c| !c.stats.is_empty())
            .map(|c| {
                let per_metric = CATALOGUE
                    .iter()
                    .zip(&c.stats)
                    .filter(|(info, _)| report.applies(info.metric))
                    .filter_map(|(info, s)| {
                        let s = s.as_ref()?;
                        let a = Aggregate {
                            mean: round6(s.mean),
                            min: round6(s.min),
                            max: round6(s.max),
                            stdev: round6(s.stdev),
                            median: round6(s.median),
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

#[derive(Serialize)]
struct Excluded<'a> {
    algorithm: &'a str,
    completion_ratio: f64,
}

#[derive(Serialize)]
struct Unfinished<'a> {
    seed: u64,
    outcome: &'static str,
    reason: &'a str,
}

fn unfinished(column: &Column) -> Vec<Unfinished<'_>> {
    column
        .unfinished
        .iter()
        .map(|(seed, outcome, reason)| Unfinished {
            seed: *seed,
            outcome,
            reason,
        })
        .collect()
}
