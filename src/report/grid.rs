//! The report of a grid sweep (`simbench sweep --grid`, and `simbench merge` of its parts).
//!
//! Per world and grid point, a cell report: the run report of that point's world over the
//! algorithms and seeds, whose verdict says which algorithm wins there. Per world, the best cell:
//! the same verdict rule over every (point, algorithm) pair as one contest — pairing by seed
//! works across points because every point runs the same seeds — with the leader's mean and
//! Student-t interval at the objective's confidence. Renders JSON (schema: `simbench schema
//! grid`), a CSV row per run, and a terminal summary. Pure: the runs come in, text goes out.

use std::collections::BTreeMap;
use std::io::{self, Write};

use schemars::JsonSchema;
use serde::Serialize;

use super::decision::{self, Decision, Outcome};
use super::format::round6;
use super::json::{self, JsonVerdict, Ordered};
use super::rank::{Contestant, Verdict};
use super::stats::{Summary, t_quantile};
use super::{Report, Run, SweepInfo, analyse};
use crate::grid::{self, Axis};
use crate::metrics::{CATALOGUE, Metric};
use crate::objective::Objective;
use crate::text::plural;
use crate::world::World;

/// One world of a grid, as the analysis needs it.
pub struct GridWorld<'a> {
    /// The file as given, or how the built-in world is named.
    pub file: String,
    /// The world without the grid's overrides (its name and hash head the section).
    pub base: &'a World,
    /// The world at each grid point, in point order.
    pub at: Vec<&'a World>,
    /// The algorithms compared at every point.
    pub algorithms: Vec<String>,
}

/// What the grid report shows.
pub struct GridReport {
    /// The plan's hash.
    pub plan: String,
    /// The axes.
    pub axes: Vec<Axis>,
    /// The points, one value index per axis.
    pub points: Vec<Vec<usize>>,
    /// Seeds per cell.
    pub seeds: u32,
    /// `native` or `reference`.
    pub rng: &'static str,
    /// Per world.
    pub worlds: Vec<WorldGrid>,
    /// Real seconds the command took.
    pub wall_s: f64,
}

/// One world's cells and its best cell.
pub struct WorldGrid {
    /// The file as given.
    pub file: String,
    /// Scenario name.
    pub name: String,
    /// World hash without the grid's overrides.
    pub hash: String,
    /// The algorithms compared.
    pub algorithms: Vec<String>,
    /// Per point, the run report of that point's world.
    pub cells: Vec<Report>,
    /// The verdict over every (point, algorithm), named `ALGORITHM @ POINT`.
    pub best: Decision,
    /// The best cell's (point, algorithm), mean and interval, if any cell ran.
    pub leader: Option<Leader>,
    /// Every contestant of the best-cell contest that stands for several points (its runs the
    /// same at each), in contest order: named at its first point, the others listed.
    pub folded: Vec<Folded>,
}

/// A contestant whose runs an axis does not change: one contestant for several points.
pub struct Folded {
    /// The point it is named at (its first).
    pub point: usize,
    /// Algorithm name.
    pub algorithm: String,
    /// The later points with the same runs.
    pub same_runs_at: Vec<usize>,
}

/// The best cell and how sure its value is.
pub struct Leader {
    /// Point index.
    pub point: usize,
    /// Algorithm name.
    pub algorithm: String,
    /// The objective over its seeds.
    pub summary: Summary,
    /// `(low, high)` of the mean at the objective's confidence; `None` for one seed.
    pub interval: Option<(f64, f64)>,
    /// Other points where this algorithm's runs are the same, value for value: the axes that
    /// differ there do not change it, so they are one contestant.
    pub same_runs_at: Vec<usize>,
}

/// Whether two contestants are the same runs: the same seeds with the same outcomes.
fn same_runs(a: &Contestant<'_>, b: &Contestant<'_>) -> bool {
    a.standing == b.standing
        && a.valid == b.valid
        && a.runs.len() == b.runs.len()
        && a.runs
            .iter()
            .zip(&b.runs)
            .all(|((sa, ma), (sb, mb))| sa == sb && ma.same_outcome(mb))
}

/// A hash of what [`same_runs`] compares: contestants with the same runs have the same one.
fn runs_fingerprint(c: &Contestant<'_>) -> u64 {
    use std::hash::Hasher;
    // Fixed keys: the same on every machine, though only equality within one report matters.
    let mut state = std::hash::DefaultHasher::new();
    state.write_u8(c.standing as u8);
    state.write_u8(u8::from(c.valid));
    state.write_usize(c.runs.len());
    for (seed, metrics) in &c.runs {
        state.write_u64(*seed);
        metrics.hash_outcome(&mut state);
    }
    state.finish()
}

/// Builds the grid report from the runs in plan order (world, point, algorithm, seed).
///
/// # Panics
/// If `runs` does not hold exactly one run per cell of the plan.
pub fn analyse_grid(
    plan: &str,
    plan_shape: (&[Axis], u32, &'static str),
    worlds: &[GridWorld<'_>],
    runs: Vec<Run>,
    wall_s: f64,
) -> GridReport {
    analyse_cells(plan, plan_shape, worlds, runs, wall_s, slim)
}

/// [`analyse_grid`] with what each cell's report keeps decided by `keep`.
fn analyse_cells(
    plan: &str,
    (axes, seeds, rng): (&[Axis], u32, &'static str),
    worlds: &[GridWorld<'_>],
    runs: Vec<Run>,
    wall_s: f64,
    keep: fn(Report) -> Report,
) -> GridReport {
    let points = grid::points(axes);
    // The cells take their runs from the front of the plan while its buffer shrinks behind
    // them, so a large grid holds its runs once, not twice.
    let mut runs = runs;
    runs.reverse();
    let worlds = worlds
        .iter()
        .map(|w| {
            let per_cell = w.algorithms.len() * seeds as usize;
            let cells: Vec<Report> =
                w.at.iter()
                    .map(|world| {
                        let mine = take_front(&mut runs, per_cell);
                        assert_eq!(mine.len(), per_cell, "one run per cell");
                        let info = SweepInfo {
                            seeds: seed_list(&mine),
                            rng,
                            wall_s: mine.iter().map(|r| r.wall_s).sum(),
                        };
                        keep(analyse(world, info, mine))
                    })
                    .collect();
            world_grid(w, axes, &points, cells)
        })
        .collect();
    assert!(runs.is_empty(), "one run per cell");
    GridReport {
        plan: plan.to_owned(),
        axes: axes.to_vec(),
        points,
        seeds,
        rng,
        worlds,
        wall_s,
    }
}

/// A cell's report cut down to what the grid's renderers and its best-cell contest read: the
/// runs, the verdict, the columns' standing and the summaries of the shown metrics, which
/// metrics apply. A grid holds a report per cell until it writes; a run report's per-metric
/// verdicts (every winner's name for every metric), the summaries of metrics a cell does not
/// show and the world's description are what it does not need.
fn slim(mut cell: Report) -> Report {
    for row in &mut cell.rows {
        row.verdict = Verdict::blank();
    }
    // The summaries are kept up to the last shown metric (they are looked up by catalogue
    // index, and one past the end reads as "no summary"); the rest are never shown.
    let kept = shown_metrics(&cell.decision.objective)
        .iter()
        .map(|&m| m as usize + 1)
        .max()
        .unwrap_or(0);
    for column in &mut cell.columns {
        column.stats.truncate(kept);
        column.stats.shrink_to_fit();
        column.undefined.truncate(kept);
        column.undefined.shrink_to_fit();
        column.endpoint_admitted = Vec::new();
        column.error_classes = BTreeMap::new();
    }
    let world = &mut cell.world;
    world.summary = String::new();
    world.endpoints = Vec::new();
    world.settings = Vec::new();
    world.incidents = Vec::new();
    cell
}

/// The first `n` runs of the plan held reversed in `reversed`, in plan order; the room they
/// took is given back to the allocator at once (shrinking a block in place: glibc's `realloc`
/// splits it or remaps its pages rather than copying), so the runs are never held twice.
fn take_front(reversed: &mut Vec<Run>, n: usize) -> Vec<Run> {
    let mut mine = reversed.split_off(reversed.len().saturating_sub(n));
    mine.reverse();
    reversed.shrink_to_fit();
    mine
}

fn seed_list(runs: &[Run]) -> Vec<u64> {
    let mut seeds: Vec<u64> = Vec::new();
    for r in runs {
        if !seeds.contains(&r.seed) {
            seeds.push(r.seed);
        }
    }
    seeds
}

/// The name of a (point, algorithm) in the contest for the best cell.
fn contestant_name(axes: &[Axis], point: &[usize], algorithm: &str) -> String {
    format!("{algorithm} @ {}", grid::label(axes, point))
}

fn world_grid(
    w: &GridWorld<'_>,
    axes: &[Axis],
    points: &[Vec<usize>],
    cells: Vec<Report>,
) -> WorldGrid {
    let objective = w.base.objective();
    let mut names = Vec::new();
    let mut keys = Vec::new();
    for (p, cell) in cells.iter().enumerate() {
        for column in &cell.columns {
            names.push(contestant_name(axes, &points[p], &column.algorithm));
            keys.push((p, column.algorithm.clone()));
        }
    }
    // A run that an axis does not change (an algorithm that ignores `algorithms.aimd.factor`)
    // is one contestant, not one per value: identical runs at a later point join the first.
    let mut contestants: Vec<Contestant<'_>> = Vec::new();
    let mut kept: Vec<usize> = Vec::new();
    let mut same: Vec<Vec<usize>> = Vec::new();
    // The contestants kept so far by (algorithm, fingerprint), in the order kept: a candidate
    // is compared only with those that may be its twin, not with every one before it.
    let mut by_fingerprint: BTreeMap<(&str, u64), Vec<usize>> = BTreeMap::new();
    let mut k = 0;
    for (p, cell) in cells.iter().enumerate() {
        for column in &cell.columns {
            let candidate = Contestant {
                name: &names[k],
                standing: column.standing(),
                valid: column.invalid.is_empty(),
                runs: cell
                    .runs
                    .iter()
                    .filter(|r| r.algorithm == column.algorithm)
                    .filter_map(|r| r.metrics().map(|m| (r.seed, m)))
                    .collect(),
            };
            let key = (column.algorithm.as_str(), runs_fingerprint(&candidate));
            let alike = by_fingerprint.entry(key).or_default();
            let twin = alike
                .iter()
                .copied()
                .find(|&t| same_runs(&contestants[t], &candidate));
            match twin {
                Some(t) => same[t].push(p),
                None => {
                    alike.push(contestants.len());
                    contestants.push(candidate);
                    kept.push(k);
                    same.push(Vec::new());
                }
            }
            k += 1;
        }
    }
    let best = decision::decide(&objective, &contestants, |c| {
        let i = names.iter().position(|n| n == c.name).unwrap_or(0);
        let (p, algorithm) = &keys[i];
        let column = cells[*p]
            .columns
            .iter()
            .find(|col| &col.algorithm == algorithm);
        column.map_or_else(String::new, super::left_out_reason)
    });
    let leader = best.leader().and_then(|name| {
        let c = contestants.iter().position(|c| c.name == name)?;
        let (point, algorithm) = keys[kept[c]].clone();
        let values: Vec<f64> = contestants[c]
            .runs
            .iter()
            .filter_map(|(_, m)| m.value(objective.metric))
            .collect();
        let summary = Summary::of(&values)?;
        Some(Leader {
            point,
            algorithm,
            same_runs_at: same[c].clone(),
            interval: mean_interval(&summary, objective.confidence),
            summary,
        })
    });
    let folded = same
        .iter()
        .enumerate()
        .filter(|(_, at)| !at.is_empty())
        .map(|(c, at)| {
            let (point, algorithm) = keys[kept[c]].clone();
            Folded {
                point,
                algorithm,
                same_runs_at: at.clone(),
            }
        })
        .collect();
    WorldGrid {
        file: w.file.clone(),
        name: w.base.name().to_owned(),
        hash: super::fingerprint::world_hash(w.base),
        algorithms: w.algorithms.clone(),
        cells,
        best,
        leader,
        folded,
    }
}

/// The Student-t interval of a mean at `confidence`; `None` for fewer than two values.
fn mean_interval(s: &Summary, confidence: f64) -> Option<(f64, f64)> {
    (s.n >= 2).then(|| {
        let half =
            t_quantile(0.5 + confidence / 2.0, (s.n - 1) as f64) * s.stdev / (s.n as f64).sqrt();
        (s.mean - half, s.mean + half)
    })
}

/// The metrics a cell's aggregates show: the objective, its constraints, its tie-breaks and
/// `jobs_done`, each once, in that order.
fn shown_metrics(objective: &Objective) -> Vec<Metric> {
    let mut shown = vec![objective.metric];
    shown.extend(objective.constraints.iter().map(|c| c.metric));
    shown.extend(objective.tie_break.iter().copied());
    shown.push(Metric::JobsDone);
    let mut unique = Vec::new();
    for m in shown {
        if !unique.contains(&m) {
            unique.push(m);
        }
    }
    unique
}

/// The grid report as JSON.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, title = "simbench grid report")]
pub(crate) struct Document<'a> {
    /// `simbench-grid/1`.
    format: &'static str,
    /// The plan's hash (parts of this sweep name it).
    plan: &'a str,
    /// The grid axes: each key with its values, as typed.
    axes: &'a [Axis],
    /// Cells per world: points × algorithms × seeds.
    seeds: u32,
    /// `native` or `reference`.
    #[schemars(extend("enum" = ["native", "reference"]))]
    rng: &'static str,
    worlds: Vec<JsonWorld<'a>>,
    /// Real seconds the command took (the only value that differs between identical sweeps,
    /// with each run's `wall_s`).
    wall_s: f64,
}

/// One world of the grid.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct JsonWorld<'a> {
    /// The scenario file as given.
    file: &'a str,
    /// Scenario name.
    name: &'a str,
    /// World hash before the grid's overrides.
    hash: &'a str,
    algorithms: &'a [String],
    /// The verdict over every (point, algorithm) as one contest, named `ALGORITHM @ POINT`.
    best: JsonBest<'a>,
    /// Per point.
    cells: Vec<JsonCell<'a>>,
}

/// The best cell.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct JsonBest<'a> {
    /// The leading cell's point (key → value), when some cell ran: the pick when the verdict
    /// decides, else (`verdict.decision` is `no_decision`) the leader after the tie-breaks, a
    /// mean ahead but not separated.
    #[serde(skip_serializing_if = "Option::is_none")]
    point: Option<Ordered<&'a str, serde_json::Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    algorithm: Option<&'a str>,
    /// The objective's metric.
    #[schemars(schema_with = "json::metric_name_schema")]
    metric: &'static str,
    /// The leader's mean over its seeds.
    #[serde(skip_serializing_if = "Option::is_none")]
    mean: Option<f64>,
    /// `[low, high]` of that mean at the objective's confidence (Student t over seeds).
    #[serde(skip_serializing_if = "Option::is_none")]
    interval: Option<[f64; 2]>,
    /// Other points where the leader's runs are the same, value for value (axes it ignores).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    same_runs_at: Vec<Ordered<&'a str, serde_json::Value>>,
    /// Every contestant that stands for several points (the leader too), as the verdict names
    /// it (`ALGORITHM @ POINT`, its first point), with the later points of the same runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    same_runs: Vec<JsonFolded<'a>>,
    verdict: JsonVerdict<'a>,
}

/// A contestant of the best-cell contest for several points.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct JsonFolded<'a> {
    /// `ALGORITHM @ POINT`, as the verdict names it.
    contestant: String,
    /// The algorithm.
    algorithm: &'a str,
    /// The point it is named at.
    point: Ordered<&'a str, serde_json::Value>,
    /// The later points where its runs are the same.
    same_runs_at: Vec<Ordered<&'a str, serde_json::Value>>,
}

/// One grid point of one world.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct JsonCell<'a> {
    /// Key → value (TOML values as JSON; a bare word as a string).
    point: Ordered<&'a str, serde_json::Value>,
    /// The world hash at this point.
    world_hash: &'a str,
    /// The verdict among the algorithms at this point.
    verdict: JsonVerdict<'a>,
    /// Algorithm → metric → aggregate over seeds, for the objective, its constraints and
    /// tie-breaks, and `jobs_done`.
    #[schemars(
        with = "std::collections::BTreeMap<String, std::collections::BTreeMap<String, json::Aggregate>>"
    )]
    aggregates: Ordered<&'a str, Ordered<&'static str, json::Aggregate>>,
}

/// A point's values as JSON: each value text read as TOML (`3` → 3, `{ a = 1 }` → an object), a
/// bare word as the string it is.
fn point_json<'a>(axes: &'a [Axis], point: &[usize]) -> Ordered<&'a str, serde_json::Value> {
    Ordered(
        axes.iter()
            .zip(point)
            .map(|(a, &v)| (a.key.as_str(), toml_value(&a.values[v])))
            .collect(),
    )
}

fn toml_value(text: &str) -> serde_json::Value {
    toml::from_str::<toml::Table>(&format!("v = {text}"))
        .ok()
        .and_then(|t| t.get("v").and_then(|v| serde_json::to_value(v).ok()))
        .unwrap_or_else(|| serde_json::Value::String(text.to_owned()))
}

fn document(report: &GridReport) -> Document<'_> {
    Document {
        format: "simbench-grid/1",
        plan: &report.plan,
        axes: &report.axes,
        seeds: report.seeds,
        rng: report.rng,
        worlds: report
            .worlds
            .iter()
            .map(|w| json_world(report, w))
            .collect(),
        wall_s: round6(report.wall_s),
    }
}

fn json_world<'a>(report: &'a GridReport, w: &'a WorldGrid) -> JsonWorld<'a> {
    let leader = w.leader.as_ref();
    let unit = w.best.objective.metric.info().unit;
    let round = |x: f64| super::format::round_value(unit, x);
    JsonWorld {
        file: &w.file,
        name: &w.name,
        hash: &w.hash,
        algorithms: &w.algorithms,
        best: JsonBest {
            point: leader.map(|l| point_json(&report.axes, &report.points[l.point])),
            algorithm: leader.map(|l| l.algorithm.as_str()),
            metric: w.best.objective.metric.info().name,
            mean: leader.map(|l| round(l.summary.mean)),
            interval: leader
                .and_then(|l| l.interval)
                .map(|(lo, hi)| [round(lo), round(hi)]),
            same_runs_at: leader.map_or_else(Vec::new, |l| {
                l.same_runs_at
                    .iter()
                    .map(|&p| point_json(&report.axes, &report.points[p]))
                    .collect()
            }),
            same_runs: w
                .folded
                .iter()
                .map(|f| JsonFolded {
                    contestant: contestant_name(
                        &report.axes,
                        &report.points[f.point],
                        &f.algorithm,
                    ),
                    algorithm: &f.algorithm,
                    point: point_json(&report.axes, &report.points[f.point]),
                    same_runs_at: f
                        .same_runs_at
                        .iter()
                        .map(|&p| point_json(&report.axes, &report.points[p]))
                        .collect(),
                })
                .collect(),
            verdict: json::verdict(&w.best),
        },
        cells: w
            .cells
            .iter()
            .zip(&report.points)
            .map(|(cell, point)| JsonCell {
                point: point_json(&report.axes, point),
                world_hash: &cell.world.hash,
                verdict: json::verdict(&cell.decision),
                aggregates: json::aggregates_of(cell, &shown_metrics(&cell.decision.objective)),
            })
            .collect(),
    }
}

/// Writes the JSON report.
pub fn write_json(report: &GridReport, out: &mut dyn Write) -> io::Result<()> {
    crate::report::json::write_pretty(out, &document(report))
}

/// The JSON Schema of the grid report.
pub fn schema_text() -> String {
    json::schema_of::<Document<'_>>()
}

/// Writes one CSV row per run: the run export's key columns, one column per axis (named by its
/// key), then the outcome and every metric, as `simbench run --csv`.
pub fn write_csv(report: &GridReport, out: &mut dyn Write) -> io::Result<()> {
    // `file` tells apart two worlds of one `name` (an edited copy beside its original).
    let mut header = vec!["scenario", "file", "world_hash", "rng", "algorithm", "seed"];
    header.extend(report.axes.iter().map(|a| a.key.as_str()));
    header.extend(["outcome", "valid"]);
    header.extend(CATALOGUE.iter().map(|m| m.name));
    let header: Vec<String> = header.iter().map(|h| super::csv::field(h)).collect();
    writeln!(out, "{}", header.join(","))?;
    for w in &report.worlds {
        for (cell, point) in w.cells.iter().zip(&report.points) {
            for run in &cell.runs {
                let mut cells = super::csv::key_cells(cell, run);
                cells.insert(1, super::csv::field(&w.file));
                cells.extend(
                    report
                        .axes
                        .iter()
                        .zip(point)
                        .map(|(a, &v)| super::csv::field(&a.values[v])),
                );
                let valid = cell.invalid_reason(run).is_none();
                cells.extend(super::csv::outcome_cells(run, valid, &|m| cell.applies(m)));
                writeln!(out, "{}", cells.join(","))?;
            }
        }
    }
    Ok(())
}

/// The terminal summary: per world, one line per point with its verdict, then the best cell.
pub fn terminal(report: &GridReport) -> String {
    let mut out = String::new();
    for w in &report.worlds {
        let info = w.best.objective.metric.info();
        let metric = info.name;
        // The report's precision for the metric's unit and the size of the values spelled
        // together (`scale`).
        let short = |x: f64, scale: f64| {
            super::format::thousands(x, super::format::decimals_at(info.unit, scale.abs()))
        };
        out.push_str(&format!(
            "{} ({}): {} × {} × {}\n",
            w.name,
            w.file,
            plural(report.points.len(), "point"),
            plural(w.algorithms.len(), "algorithm"),
            plural(report.seeds as usize, "seed")
        ));
        for (cell, point) in w.cells.iter().zip(&report.points) {
            let lead = cell.decision.leader().and_then(|name| {
                let column = cell.columns.iter().find(|c| c.algorithm == name)?;
                let s = column.summary(cell.decision.objective.metric)?;
                Some(format!(" ({metric} {})", short(s.mean, s.mean)))
            });
            out.push_str(&format!(
                "  {}: {}{}\n",
                grid::label(&report.axes, point),
                cell.decision.headline(),
                lead.unwrap_or_default()
            ));
        }
        match &w.leader {
            Some(l) => {
                let interval = l.interval.map_or_else(String::new, |(lo, hi)| {
                    format!(
                        ", {} interval {} to {}",
                        super::format::whole_percent(w.best.objective.confidence),
                        short(lo, l.summary.mean),
                        short(hi, l.summary.mean)
                    )
                });
                let same = if l.same_runs_at.is_empty() {
                    String::new()
                } else {
                    let at: Vec<String> = l
                        .same_runs_at
                        .iter()
                        .map(|&p| grid::label(&report.axes, &report.points[p]))
                        .collect();
                    format!(" (the same runs at {})", at.join("; "))
                };
                // Without a decision the leader is a mean ahead, not a winner.
                let title = match &w.best.outcome {
                    // The leader is the tie-breaks' (see the verdict below), not the objective's.
                    Outcome::Undecided { levels } if levels.len() > 1 => {
                        "best cell: not decided; leading after the tie-breaks"
                    }
                    Outcome::Undecided { .. } => "best cell: not decided; leading",
                    _ => "best cell",
                };
                out.push_str(&format!(
                    "{title}: {} @ {}{same}: {metric} {} over {}{interval}\n  {}\n",
                    l.algorithm,
                    grid::label(&report.axes, &report.points[l.point]),
                    short(l.summary.mean, l.summary.mean),
                    plural(l.summary.n, "seed"),
                    w.best.headline()
                ));
                // The other contestants that stand for several points, which the verdict names
                // at their first point only.
                let others: Vec<String> = w
                    .folded
                    .iter()
                    .filter(|f| (f.point, f.algorithm.as_str()) != (l.point, l.algorithm.as_str()))
                    .map(|f| {
                        let at: Vec<String> = f
                            .same_runs_at
                            .iter()
                            .map(|&p| grid::label(&report.axes, &report.points[p]))
                            .collect();
                        format!(
                            "{} (also {})",
                            contestant_name(&report.axes, &report.points[f.point], &f.algorithm),
                            at.join("; ")
                        )
                    })
                    .collect();
                if !others.is_empty() {
                    out.push_str(&format!(
                        "  the same runs at several points: {}\n",
                        others.join(", ")
                    ));
                }
            }
            None => out.push_str(&format!("best cell: none: {}\n", w.best.headline())),
        }
    }
    out
}

/// A number for a summary line: up to 4 significant decimals.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile;
    use crate::metrics::{self, Tally};
    use crate::report::Outcome;

    /// A run whose objective metrics and a few others vary with the algorithm, seed and point.
    fn run(algorithm: &str, seed: u64, point: usize) -> Run {
        let k = (seed % 7) as f64 + point as f64 * 3.0 + algorithm.len() as f64;
        let outcome = if algorithm == "backoff" && seed == 2 && point == 1 {
            Outcome::Unfinished {
                kind: "timeout",
                reason: "the wall-clock budget ran out".into(),
            }
        } else {
            let mut v = metrics::compute(&mut Tally::default(), &[]);
            v.set(Metric::JobsDone, 100.0 + k);
            v.set(Metric::SuccessfulJobLatencyP99Ms, 900.0 - 11.0 * k);
            v.set(Metric::ThroughputRps, 2.5 + k / 10.0);
            v.set(Metric::RefusalRate, k / 100.0);
            Outcome::Finished(v)
        };
        Run {
            algorithm: algorithm.into(),
            seed,
            outcome,
            error_classes: crate::report::ErrorCounts::of(&BTreeMap::from([("rate_limit", seed)])),
            endpoint_admitted: vec![10, 20, 30],
            wall_s: 0.0,
            timeseries: None,
        }
    }

    fn rendered(report: &GridReport) -> (String, String, String) {
        let mut json = Vec::new();
        write_json(report, &mut json).unwrap();
        let mut csv = Vec::new();
        write_csv(report, &mut csv).unwrap();
        (
            String::from_utf8(json).unwrap(),
            String::from_utf8(csv).unwrap(),
            terminal(report),
        )
    }

    #[test]
    fn a_slim_cell_renders_as_the_whole_report_does() {
        let world = compile::builtin_bursty();
        let axes = vec![Axis::parse("retry.max_attempts=3,5").unwrap()];
        let algorithms = ["wait", "backoff", "sticky"];
        let grid_world = GridWorld {
            file: "bursty".into(),
            base: &world,
            at: vec![&world, &world],
            algorithms: algorithms.iter().map(|a| a.to_string()).collect(),
        };
        let runs = || {
            let mut runs = Vec::new();
            for point in 0..2 {
                for a in algorithms {
                    for seed in 0..4 {
                        runs.push(run(a, seed, point));
                    }
                }
            }
            runs
        };
        let shape = (axes.as_slice(), 4, "native");
        let worlds = [grid_world];
        let whole = analyse_cells("p", shape, &worlds, runs(), 1.0, |r| r);
        let slimmed = analyse_grid("p", shape, &worlds, runs(), 1.0);
        assert!(
            slimmed.worlds[0].cells[0]
                .rows
                .iter()
                .all(|r| r.verdict.winners.is_empty()),
            "the slim cells drop the per-metric verdicts"
        );
        assert!(
            whole.worlds[0].cells[0]
                .rows
                .iter()
                .any(|r| !r.verdict.winners.is_empty()),
            "the whole report has some to drop"
        );
        let (json, csv, text) = rendered(&whole);
        assert!(
            json.contains("\"best\"") && text.contains("best cell"),
            "{text}"
        );
        assert_eq!(rendered(&slimmed), (json, csv, text));
    }
}
