//! The comparison report: from a sweep's runs to verdicts and rendered text.
//!
//! [`analyse`] groups the runs by algorithm (in order of first appearance), aggregates every
//! metric ([`stats`]), applies the completion gate and the per-metric winner rules ([`rank`]),
//! and fingerprints the world ([`fingerprint`]). The renderers — [`terminal`], [`markdown`],
//! [`json`], [`csv`] — turn the resulting [`Report`] into a `String` each; [`sweep`] renders a
//! concurrency or rate sweep's analysis the same way, so every output format lives here.
//!
//! This module is pure: it never runs a simulation, reads a clock, touches a file or prints.
//! A stalled run is an outcome: its metrics up to the stall are ranked like any other run's.
//! Runs a budget stopped are carried through and shown; they never reach the ranking.

pub mod csv;
pub mod decision;
pub mod fingerprint;
pub(crate) mod format;
pub mod gates;
pub mod grid;
pub mod html;
pub mod json;
pub mod markdown;
pub mod rank;
pub mod stats;
pub mod svg;
pub mod sweep;
pub mod terminal;
pub mod timeseries;
pub mod validity;

use std::collections::BTreeMap;

use crate::client::retry::ErrorClass;
use crate::metrics::{CATALOGUE, Metric, MetricInfo, MetricValues, undefined_reason};
use crate::world::{Feature, Variant, World};
use decision::Decision;
use rank::{Contestant, Gate, Standing, Verdict};
use stats::Summary;

/// How one run ended, as the report reads it.
// The finished variant carries the whole metric vector inline; a sweep holds hundreds of runs,
// not millions, so boxing it would buy nothing but an indirection on every read.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The run finished; its metrics are complete.
    Finished(MetricValues),
    /// The strategy stalled or livelocked the run: an outcome like any other, its metrics are
    /// what it did until then (`stall_rate` 1, the jobs it held in `jobs_stalled`).
    Stalled {
        /// Metrics up to the stall.
        metrics: MetricValues,
        /// `stalled` or `livelock`.
        kind: &'static str,
        /// One sentence saying where and why.
        reason: String,
    },
    /// A budget (wall clock or memory) stopped the run, or it stalled under `--rng reference`
    /// (the reference has no result for a stalled run); it has no metrics.
    Unfinished {
        /// `stalled`, `timeout`, `livelock` or `out_of_memory` (the harness's
        /// [`crate::harness::Outcome::name`]).
        kind: &'static str,
        /// One sentence saying where and why.
        reason: String,
    },
}

/// One (algorithm, seed) run.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// Registry name of the algorithm.
    pub algorithm: String,
    /// Run seed.
    pub seed: u64,
    /// Metrics, or why there are none.
    pub outcome: Outcome,
    /// Failed attempts per error class, sorted by class.
    pub error_classes: ErrorCounts,
    /// Admitted requests per endpoint, in world order.
    pub endpoint_admitted: Vec<u64>,
    /// Real seconds the run took (the only value allowed to differ between identical sweeps).
    pub wall_s: f64,
    /// The windowed recorder's series, when the sweep recorded them.
    pub timeseries: Option<Box<crate::recorder::Timeseries>>,
}

/// Failed attempts per error class that occurred, sorted by class name: a short list rather
/// than a map, because a grid keeps one per run until it writes, and a map's first node alone
/// (about 370 bytes) was a third of a kept run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorCounts(Vec<(&'static str, u64)>);

impl ErrorCounts {
    /// The counts of a run's result.
    pub fn of(counts: &BTreeMap<&'static str, u64>) -> ErrorCounts {
        ErrorCounts(counts.iter().map(|(&class, &n)| (class, n)).collect())
    }

    /// Counts stored by name (a part): each name must be an error class.
    ///
    /// # Errors
    /// The first name that is not one, with the ones that are.
    pub fn parse(counts: &BTreeMap<String, u64>) -> Result<ErrorCounts, String> {
        let known = || ErrorClass::ALL.iter().map(|c| c.name());
        counts
            .iter()
            .map(|(name, &n)| match known().find(|k| k == name) {
                Some(class) => Ok((class, n)),
                None => Err(format!(
                    "unknown error class `{name}` (known: {})",
                    known().collect::<Vec<_>>().join(", ")
                )),
            })
            .collect::<Result<_, _>>()
            .map(ErrorCounts)
    }

    /// `(class, failed attempts)`, sorted by class.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.0.iter().copied()
    }

    /// The counts by name, as a part stores them.
    pub fn to_map(&self) -> BTreeMap<String, u64> {
        self.iter().map(|(c, n)| (c.to_owned(), n)).collect()
    }
}

impl serde::Serialize for ErrorCounts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl Run {
    /// The metrics of a run that finished or stalled.
    pub fn metrics(&self) -> Option<&MetricValues> {
        match &self.outcome {
            Outcome::Finished(values)
            | Outcome::Stalled {
                metrics: values, ..
            } => Some(values),
            Outcome::Unfinished { .. } => None,
        }
    }

    /// `(kind, reason)` of a stalled run that kept its metrics.
    pub fn stall(&self) -> Option<(&'static str, &str)> {
        match &self.outcome {
            Outcome::Stalled { kind, reason, .. } => Some((kind, reason)),
            _ => None,
        }
    }
}

/// What the report says about the world, copied out so the report stands alone.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldInfo {
    /// Scenario name.
    pub name: String,
    /// Scenario summary.
    pub summary: String,
    /// Jobs (after overrides).
    pub jobs: u32,
    /// Steps per job.
    pub steps_per_job: u32,
    /// Calls per step.
    pub calls_per_step: u32,
    /// Workers (after overrides).
    pub concurrency: u32,
    /// How the jobs come ([`format::load`]): workers, or an open loop's rate.
    pub load: String,
    /// The same, as the JSON report states it.
    pub shape: LoadShape,
    /// Admission horizon \[s\] (after overrides).
    pub horizon_s: f64,
    /// Endpoint ids in world order.
    pub endpoints: Vec<String>,
    /// [`fingerprint::world_hash`] of the world.
    pub hash: String,
    /// The validity gate's queue-share threshold.
    pub max_queue_share: f64,
    /// The validity gate's knee, if known.
    pub knee_concurrency: Option<u32>,
    /// What the file sets for an algorithm (`[algorithms.<name>]`), in name order: a named
    /// variant, or a registered strategy with parameters off their defaults.
    pub settings: Vec<Variant>,
    /// The scripted incidents, in world order (the HTML report shades them).
    pub incidents: Vec<IncidentSpan>,
}

/// How a world's jobs come, as the JSON report states it: `closed` (workers), `open`
/// (arrivals at a rate) or `trace` (a recorded log's arrivals).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[schemars(deny_unknown_fields)]
pub enum LoadShape {
    /// `workers` each run one job at a time.
    Closed {
        /// Workers (after overrides).
        workers: u32,
    },
    /// Jobs arrive at a rate and queue in the harness beyond `max_in_flight`.
    Open {
        /// Mean arrivals per second.
        rate_per_s: f64,
        /// Exponential gaps (else even ones).
        poisson: bool,
        /// Most jobs in flight at once; `null` is unbounded.
        max_in_flight: Option<u32>,
    },
    /// Jobs arrive when a recorded log's did, and queue beyond `max_in_flight`.
    Trace {
        /// Most jobs in flight at once; `null` is unbounded.
        max_in_flight: Option<u32>,
    },
}

impl LoadShape {
    /// The shape of `world`'s load.
    pub fn of(world: &World) -> LoadShape {
        match world.load() {
            crate::world::Load::Closed { .. } => LoadShape::Closed {
                workers: world.concurrency(),
            },
            crate::world::Load::Open {
                rate_per_s,
                poisson,
                max_in_flight,
            } => LoadShape::Open {
                rate_per_s: *rate_per_s,
                poisson: *poisson,
                max_in_flight: *max_in_flight,
            },
            crate::world::Load::Trace { max_in_flight, .. } => LoadShape::Trace {
                max_in_flight: *max_in_flight,
            },
        }
    }
}

/// An incident as the report shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct IncidentSpan {
    /// What it does, e.g. `capacity ×0.5`.
    pub what: String,
    /// Who it hits: the ids, or the scope and a count when there are many
    /// ([`World::reach_text`]).
    pub on: String,
    /// Start \[s\].
    pub start_s: f64,
    /// End \[s\]; infinite for a revocation that lasts.
    pub end_s: f64,
}

impl WorldInfo {
    /// Copies what the report shows out of `world`.
    pub fn of(world: &World) -> WorldInfo {
        WorldInfo {
            name: world.name().to_string(),
            summary: world.summary().to_string(),
            jobs: world.jobs(),
            steps_per_job: world.steps_per_job(),
            calls_per_step: world.calls_per_step(),
            concurrency: world.concurrency(),
            load: format::load(world),
            shape: LoadShape::of(world),
            horizon_s: world.horizon_s(),
            endpoints: world.endpoints().iter().map(|e| e.id.clone()).collect(),
            hash: fingerprint::world_hash(world),
            max_queue_share: world.validity().max_queue_share,
            knee_concurrency: world.validity().knee_concurrency,
            settings: world
                .algorithms()
                .iter()
                .filter(|v| v.is_named() || !v.params.is_empty())
                .cloned()
                .collect(),
            incidents: world
                .incidents()
                .iter()
                .map(|i| IncidentSpan {
                    what: i.effect.describe(),
                    on: world.reach_text(i),
                    start_s: i.start_s,
                    end_s: i.end_s,
                })
                .collect(),
        }
    }
}

/// One algorithm's column: its status and aggregates.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// Algorithm name.
    pub algorithm: String,
    /// Why the world marks it unsuited, if it does.
    pub unsuited: Option<String>,
    /// Runs made (finished or not).
    pub runs: usize,
    /// `(seed, kind, reason)` of every run a budget stopped (no metrics).
    pub unfinished: Vec<(u64, &'static str, String)>,
    /// `(seed, kind, reason)` of every run that stalled and kept its metrics.
    pub stalls: Vec<(u64, &'static str, String)>,
    /// `(seed, reason)` of every finished run the validity gate rejects.
    pub invalid: Vec<(u64, String)>,
    /// Per-metric summaries over the finished runs that define the metric, in catalogue
    /// order; empty if none finished, `None` for a metric no finished run defines.
    pub stats: Vec<Option<Summary>>,
    /// Per metric in catalogue order: finished runs in which it is undefined (see
    /// [`crate::metrics::undefined_reason`]); empty if none finished.
    pub undefined: Vec<usize>,
    /// Mean admitted requests per finished run, per endpoint in world order.
    pub endpoint_admitted: Vec<f64>,
    /// Mean failed attempts per finished run, per error class.
    pub error_classes: BTreeMap<String, f64>,
}

impl Column {
    /// The summary of `metric`, if some finished run defines it.
    pub fn summary(&self, metric: Metric) -> Option<&Summary> {
        self.stats.get(metric as usize).and_then(Option::as_ref)
    }

    /// Finished runs in which `metric` is undefined.
    pub fn undefined_runs(&self, metric: Metric) -> usize {
        self.undefined.get(metric as usize).copied().unwrap_or(0)
    }

    /// Runs that finished.
    pub fn finished_runs(&self) -> usize {
        self.runs - self.unfinished.len()
    }

    /// Whether the column takes part in the ranking.
    pub fn standing(&self) -> Standing {
        if !self.unfinished.is_empty() {
            Standing::Unfinished
        } else if self.unsuited.is_some() {
            Standing::Unsuited
        } else {
            Standing::Ranked
        }
    }

    /// `livelocked` when every stall of the column is a livelock, else `stalled`.
    pub fn stall_word(&self) -> &'static str {
        if !self.stalls.is_empty() && self.stalls.iter().all(|(_, k, _)| *k == "livelock") {
            "livelocked"
        } else {
            "stalled"
        }
    }

    /// `stalled`, `timed out`, `livelocked`, `out of memory` or `unfinished` (a mix), for the
    /// column header and notes.
    pub fn unfinished_word(&self) -> &'static str {
        let all = |kind: &str| self.unfinished.iter().all(|(_, k, _)| *k == kind);
        if all("stalled") {
            "stalled"
        } else if all("timeout") {
            "timed out"
        } else if all("out_of_memory") {
            "out of memory"
        } else if all("livelock") {
            "livelocked"
        } else {
            "unfinished"
        }
    }
}

/// One metric's row: the catalogue entry and the verdict.
#[derive(Clone, Debug)]
pub struct Row {
    /// The metric.
    pub info: &'static MetricInfo,
    /// Who wins it, and why.
    pub verdict: Verdict,
    /// Why the metric does not apply to this world (it lacks what the metric describes); such
    /// a row is left out of every rendering but the list that names it.
    pub not_applicable: Option<&'static str>,
    /// The decimals its cells are spelled with: its unit's, or for money below 1 enough for
    /// four significant digits of its largest mean (see [`format::decimals_at`]).
    pub decimals: usize,
}

/// How the sweep was carried out, as the report states it.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepInfo {
    /// The sweep's seeds.
    pub seeds: Vec<u64>,
    /// The random-number scheme's name (`native` or `reference`).
    pub rng: &'static str,
    /// Real seconds the whole sweep took.
    pub wall_s: f64,
}

/// Everything the renderers show.
#[derive(Clone, Debug)]
pub struct Report {
    /// The world the runs came from.
    pub world: WorldInfo,
    /// How the sweep was run.
    pub sweep: SweepInfo,
    /// Every run, in sweep order.
    pub runs: Vec<Run>,
    /// One column per algorithm, in order of first appearance.
    pub columns: Vec<Column>,
    /// One row per metric, in catalogue order.
    pub rows: Vec<Row>,
    /// The completion gate shared by the gated rows.
    pub gate: Gate,
    /// The verdict for the world's objective.
    pub decision: Decision,
    /// Where `--seeds auto` stopped; `None` for a fixed number of seeds.
    pub sequential: Option<crate::sequential::Stop>,
    /// `(algorithm, reason)` of every strategy the world marks unsuited that did not run (a
    /// default comparison leaves them out), in name order.
    pub not_run: Vec<(String, String)>,
}

impl Report {
    /// Whether every run failed to finish (the CLI then exits with an error).
    pub fn nothing_finished(&self) -> bool {
        self.runs.iter().all(|r| r.metrics().is_none())
    }

    /// Runs that did not finish.
    pub fn unfinished_runs(&self) -> usize {
        self.runs.iter().filter(|r| r.metrics().is_none()).count()
    }

    /// Why the validity gate rejects `run`, if it does.
    pub fn invalid_reason(&self, run: &Run) -> Option<&str> {
        let column = self.columns.iter().find(|c| c.algorithm == run.algorithm)?;
        column
            .invalid
            .iter()
            .find(|(seed, _)| *seed == run.seed)
            .map(|(_, reason)| reason.as_str())
    }

    /// The row of `metric`.
    pub fn row(&self, metric: Metric) -> &Row {
        &self.rows[metric as usize]
    }

    /// The rows of the metrics that apply to this world, in catalogue order.
    pub fn shown_rows(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.not_applicable.is_none())
    }

    /// The rows that do not apply and are said not to: all but those of a quiet feature (the
    /// token metrics outside LLM worlds).
    pub fn listed_not_applicable(&self) -> impl Iterator<Item = &Row> {
        self.rows
            .iter()
            .filter(|r| r.not_applicable.is_some() && !r.info.needs.is_some_and(|f| f.quiet()))
    }

    /// What the file sets for the algorithms that ran, in name order.
    pub fn settings_that_ran(&self) -> impl Iterator<Item = &Variant> {
        let ran = |s: &&Variant| self.columns.iter().any(|c| c.algorithm == s.name);
        self.world.settings.iter().filter(ran)
    }

    /// Whether `metric` applies to this world.
    pub fn applies(&self, metric: Metric) -> bool {
        self.row(metric).not_applicable.is_none()
    }

    /// `recovery_s, goodput_lost_jobs (no incident that ends); cache_hit_rate (no reuse cache)`:
    /// the metrics left out and why, grouped by reason; `None` if every metric applies.
    pub fn not_applicable_text(&self) -> Option<String> {
        let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
        for row in self.listed_not_applicable() {
            let Some(reason) = row.not_applicable else {
                continue;
            };
            match groups.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, names)) => names.push(row.info.name),
                None => groups.push((reason, vec![row.info.name])),
            }
        }
        let parts: Vec<String> = groups
            .iter()
            .map(|(reason, names)| format!("{} ({reason})", names.join(", ")))
            .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

impl Report {
    /// One line per algorithm with metrics some finished run had nothing to compute from, e.g.
    /// `wait: attempts_per_completed_job, successful_job_latency_p50_ms on 3 of 3 runs (no job
    /// completed)`; grouped by reason, shown metrics only.
    pub fn undefined_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for column in &self.columns {
            // (reason, runs) → metric names, in catalogue order of first appearance.
            let mut groups: Vec<((&str, usize), Vec<&str>)> = Vec::new();
            for row in self.shown_rows() {
                let runs = column.undefined_runs(row.info.metric);
                if runs == 0 {
                    continue;
                }
                let key = (undefined_reason(row.info.metric), runs);
                match groups.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, names)) => names.push(row.info.name),
                    None => groups.push((key, vec![row.info.name])),
                }
            }
            if groups.is_empty() {
                continue;
            }
            let finished = column.finished_runs();
            let parts: Vec<String> = groups
                .iter()
                .map(|((reason, runs), names)| {
                    format!(
                        "{} on {runs} of {finished} runs ({reason})",
                        names.join(", ")
                    )
                })
                .collect();
            lines.push(format!("{}: {}", column.algorithm, parts.join("; ")));
        }
        lines
    }
}

/// Builds the report of a sweep over `world`, from its runs in sweep order.
pub fn analyse(world: &World, sweep: SweepInfo, runs: Vec<Run>) -> Report {
    analyse_for(world, &world.objective(), sweep, runs)
}

/// [`analyse`] with the verdict judged for `objective` instead of the world's (a sequential
/// look judges at a higher confidence, see [`crate::sequential`]).
pub fn analyse_for(
    world: &World,
    objective: &crate::objective::Objective,
    sweep: SweepInfo,
    runs: Vec<Run>,
) -> Report {
    let columns: Vec<Column> = algorithms_in_order(&runs)
        .into_iter()
        .map(|name| column(world, &runs, name))
        .collect();
    let contestants: Vec<Contestant<'_>> = columns
        .iter()
        .map(|c| Contestant {
            name: &c.algorithm,
            standing: c.standing(),
            valid: c.invalid.is_empty(),
            runs: runs
                .iter()
                .filter(|r| r.algorithm == c.algorithm)
                .filter_map(|r| r.metrics().map(|m| (r.seed, m)))
                .collect(),
        })
        .collect();
    let gate = rank::gate(&contestants);
    let rows = CATALOGUE
        .iter()
        .map(|info| Row {
            info,
            verdict: rank::verdict(info, &contestants, &gate),
            not_applicable: info
                .needs
                .filter(|&feature| !world.has(feature))
                .map(Feature::absence),
            decimals: format::decimals_at(
                info.unit,
                format::scale_of(
                    columns
                        .iter()
                        .filter_map(|c| c.summary(info.metric))
                        .map(|s| s.mean),
                ),
            ),
        })
        .collect();
    let decision = decision::decide(objective, &contestants, |c| {
        let column = columns.iter().find(|col| col.algorithm == c.name);
        column.map_or_else(String::new, left_out_reason)
    });
    Report {
        world: WorldInfo::of(world),
        sweep,
        columns,
        rows,
        gate,
        decision,
        not_run: world
            .unsuited()
            .iter()
            .filter(|(name, _)| !runs.iter().any(|r| &r.algorithm == *name))
            .map(|(name, reason)| (name.clone(), reason.clone()))
            .collect(),
        runs,
        sequential: None,
    }
}

/// Why a column is not judged by the verdict.
fn left_out_reason(column: &Column) -> String {
    if !column.unfinished.is_empty() {
        format!(
            "{} on {} of {} runs",
            column.unfinished_word(),
            column.unfinished.len(),
            column.runs
        )
    } else if let Some(reason) = &column.unsuited {
        format!("unsuited: {reason}")
    } else {
        "no run finished".to_owned()
    }
}

fn algorithms_in_order(runs: &[Run]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for run in runs {
        if !names.contains(&run.algorithm.as_str()) {
            names.push(&run.algorithm);
        }
    }
    names
}

fn column(world: &World, runs: &[Run], name: &str) -> Column {
    let mine: Vec<&Run> = runs.iter().filter(|r| r.algorithm == name).collect();
    let finished: Vec<&Run> = mine
        .iter()
        .copied()
        .filter(|r| r.metrics().is_some())
        .collect();
    let (stats, undefined) = if finished.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        CATALOGUE
            .iter()
            .map(|info| {
                let values: Vec<f64> = finished
                    .iter()
                    .filter_map(|r| r.metrics().and_then(|m| m.value(info.metric)))
                    .collect();
                let undefined = finished.len() - values.len();
                (Summary::of(&values), undefined)
            })
            .unzip()
    };
    let per_run = |total: u64| total as f64 / finished.len().max(1) as f64;
    let endpoint_admitted = (0..world.endpoints().len())
        .map(|e| per_run(finished.iter().map(|r| r.endpoint_admitted[e]).sum()))
        .collect();
    let mut classes: BTreeMap<String, u64> = BTreeMap::new();
    for run in &finished {
        for (class, n) in run.error_classes.iter() {
            *classes.entry(class.to_owned()).or_default() += n;
        }
    }
    Column {
        algorithm: name.to_string(),
        unsuited: world.unsuited().get(name).cloned(),
        runs: mine.len(),
        invalid: finished
            .iter()
            .filter_map(|r| {
                let reason = validity::judge(r.metrics()?, world.validity())?;
                Some((r.seed, reason))
            })
            .collect(),
        unfinished: mine
            .iter()
            .filter_map(|r| match &r.outcome {
                Outcome::Unfinished { kind, reason } => Some((r.seed, *kind, reason.clone())),
                Outcome::Finished(_) | Outcome::Stalled { .. } => None,
            })
            .collect(),
        stalls: mine
            .iter()
            .filter_map(|r| {
                r.stall()
                    .map(|(kind, reason)| (r.seed, kind, reason.to_owned()))
            })
            .collect(),
        stats,
        undefined,
        endpoint_admitted,
        error_classes: classes
            .into_iter()
            .map(|(class, n)| (class, per_run(n)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile;
    use crate::metrics::{self, Tally};

    fn run(algorithm: &str, seed: u64, jobs_done: Option<f64>) -> Run {
        let outcome = match jobs_done {
            Some(done) => {
                let mut v = metrics::compute(&mut Tally::default(), &[]);
                v.set(Metric::JobsDone, done);
                Outcome::Finished(v)
            }
            None => Outcome::Unfinished {
                kind: "stalled",
                reason: "stuck".into(),
            },
        };
        Run {
            algorithm: algorithm.into(),
            seed,
            outcome,
            error_classes: ErrorCounts::of(&BTreeMap::from([("rate_limit", 4)])),
            endpoint_admitted: vec![10, 20, 30],
            wall_s: 0.0,
            timeseries: None,
        }
    }

    #[test]
    fn columns_follow_first_appearance_and_summarise_finished_runs_only() {
        let world = compile::builtin_bursty();
        let runs = vec![
            run("sticky", 1, Some(10.0)),
            run("failover", 1, Some(30.0)),
            run("sticky", 2, Some(20.0)),
            run("wait", 1, Some(5.0)),
            run("wait", 2, None),
        ];
        let sweep = SweepInfo {
            seeds: vec![1, 2],
            rng: "native",
            wall_s: 0.0,
        };
        let report = analyse(&world, sweep, runs);
        let names: Vec<&str> = report
            .columns
            .iter()
            .map(|c| c.algorithm.as_str())
            .collect();
        assert_eq!(names, ["sticky", "failover", "wait"]);
        let [sticky, failover, wait] = &report.columns[..] else {
            panic!("three columns")
        };
        assert_eq!(sticky.summary(Metric::JobsDone).unwrap().mean, 15.0);
        assert_eq!(sticky.standing(), Standing::Ranked);
        assert_eq!(failover.standing(), Standing::Unsuited);
        assert_eq!(wait.standing(), Standing::Unfinished);
        assert_eq!(wait.summary(Metric::JobsDone).unwrap().n, 1);
        assert_eq!(wait.error_classes["rate_limit"], 4.0);
        assert_eq!(wait.endpoint_admitted, [10.0, 20.0, 30.0]);
        assert_eq!(report.unfinished_runs(), 1);
        assert!(!report.nothing_finished());
        // Only sticky is ranked: no contest anywhere, and no star for the unsuited or stalled.
        assert!(report.rows.iter().all(|r| r.verdict.winners.is_empty()));
    }
}
