//! CI gates: assertions on a report (`aimd.refusal_rate < 0.02`, `verdict == aimd`) and
//! regressions against a baseline report (every metric of every algorithm whose paired change
//! is significant and larger than a tolerance). Pure: the caller reads the baseline file and
//! picks the exit code.

use std::collections::BTreeMap;

use crate::metrics::{CATALOGUE, Direction, Metric};
use crate::threshold::Assertion;

use super::Report;
use super::decision::Outcome;
use super::format::{decimals_at, round_value, scale_of, thousands, whole_percent};
use super::stats::{Paired, mean};

/// `None` if `assertion` holds on `report`, else why not.
pub fn check(assertion: &Assertion, report: &Report) -> Option<String> {
    match assertion {
        Assertion::Metric {
            algorithm,
            metric,
            op,
            value,
        } => {
            let info = metric.info();
            let shown = format!("{algorithm}.{} {} {value}", info.name, op.symbol());
            let column = report.columns.iter().find(|c| c.algorithm == *algorithm);
            let Some(summary) = column.and_then(|c| c.summary(*metric)) else {
                return Some(format!(
                    "{shown}: no finished run of {algorithm} defines it"
                ));
            };
            (!op.holds(summary.mean, *value))
                .then(|| format!("{shown}: the mean is {}", summary.mean))
        }
        Assertion::Verdict { equal, algorithm } => {
            let pick = match &report.decision.outcome {
                Outcome::Decided { pick, .. } | Outcome::Alone { pick } => Some(pick),
                Outcome::Undecided { .. } | Outcome::Nothing => None,
            };
            let holds = (pick == Some(algorithm)) == *equal;
            let op = if *equal { "==" } else { "!=" };
            (!holds).then(|| {
                format!(
                    "verdict {op} {algorithm}: the verdict is `{}`",
                    report.decision.headline()
                )
            })
        }
    }
}

/// A baseline report as the regression check reads it: per algorithm, per metric, the value of
/// each seed's finished run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Baseline {
    /// The world hash the baseline names.
    pub world_hash: String,
    /// The random-number scheme it was run with (`native`, `reference`; empty when unsaid).
    pub rng: String,
    /// algorithm → metric → seed → value.
    pub values: BTreeMap<String, BTreeMap<Metric, BTreeMap<u64, f64>>>,
}

impl Baseline {
    /// `backoff, aimd at seeds 1–5`: what the baseline holds, for a gate that compared nothing.
    pub fn describe(&self) -> String {
        let seeds: std::collections::BTreeSet<u64> = self
            .values
            .values()
            .flat_map(|metrics| metrics.values().flat_map(|by_seed| by_seed.keys().copied()))
            .collect();
        if seeds.is_empty() {
            return "no finished run".into();
        }
        let names: Vec<&str> = self.values.keys().map(String::as_str).collect();
        format!("{} at seeds {}", names.join(", "), seed_ranges(&seeds))
    }

    /// Reads the `runs` of a JSON report (`--json` output of `simbench run`).
    pub fn from_json(doc: &serde_json::Value) -> Result<Baseline, String> {
        let runs = doc
            .get("runs")
            .and_then(|r| r.as_array())
            .ok_or("not a simbench report: it has no `runs` array")?;
        let mut values: BTreeMap<String, BTreeMap<Metric, BTreeMap<u64, f64>>> = BTreeMap::new();
        for run in runs {
            let (Some(algorithm), Some(seed)) = (
                run.get("algorithm").and_then(|a| a.as_str()),
                run.get("seed").and_then(|s| s.as_u64()),
            ) else {
                return Err("a run without `algorithm` and `seed`".into());
            };
            let Some(metrics) = run.get("metrics").and_then(|m| m.as_object()) else {
                continue; // A run that did not finish has no metrics to compare.
            };
            let per_metric = values.entry(algorithm.to_owned()).or_default();
            for (name, value) in metrics {
                if let (Some(metric), Some(x)) = (Metric::from_name(name), value.as_f64()) {
                    per_metric.entry(metric).or_default().insert(seed, x);
                }
            }
        }
        let world_hash = doc
            .get("world_hash")
            .and_then(|h| h.as_str())
            .unwrap_or_default()
            .to_owned();
        let rng = (doc.get("rng").and_then(|r| r.as_str()))
            .unwrap_or_default()
            .to_owned();
        Ok(Baseline {
            world_hash,
            rng,
            values,
        })
    }
}

/// One metric of one algorithm that got significantly worse.
#[derive(Clone, Debug, PartialEq)]
pub struct Regression {
    /// Algorithm name.
    pub algorithm: String,
    /// The metric.
    pub metric: Metric,
    /// Baseline mean over the paired seeds.
    pub before: f64,
    /// Current mean over the paired seeds.
    pub after: f64,
    /// Per-seed `after − before` with its interval.
    pub change: Paired,
}

impl Regression {
    /// `aimd jobs_done: 1,991.2 → 1,874.4 jobs (-116.8, 95 % CI -122.5 to -111.1, 5 seeds)`.
    pub fn describe(&self, confidence: f64) -> String {
        let info = self.metric.info();
        let d = decimals_at(info.unit, scale_of([self.before, self.after]));
        let shown = |x: f64| thousands(x, d);
        let signed = |x: f64| {
            let text = shown(x);
            if text.starts_with('-') {
                text
            } else {
                format!("+{text}")
            }
        };
        let interval = self.change.interval.map_or(String::new(), |(low, high)| {
            format!(
                ", {} CI {} to {}",
                whole_percent(confidence),
                signed(low),
                signed(high)
            )
        });
        format!(
            "{} {}: {} → {} {} ({}{interval}, {} seeds)",
            self.algorithm,
            info.name,
            shown(self.before),
            shown(self.after),
            info.unit,
            signed(self.change.mean),
            self.change.n
        )
    }
}

/// What a comparison with a baseline found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gated {
    /// The regressions.
    pub regressions: Vec<Regression>,
    /// Algorithms of the run that no metric compared: absent from the baseline, or with fewer
    /// than two finished seeds in common with it (a change needs pairs to be tested).
    pub unpaired: Vec<String>,
}

/// Every ranked metric of every algorithm in both reports whose paired per-seed change is
/// worse at `confidence` (the interval lies wholly on the worse side of zero) and larger than
/// `tolerance` times the baseline mean's magnitude (or than `tolerance` itself near zero);
/// and the algorithms nothing could be compared for.
pub fn regressions(report: &Report, baseline: &Baseline, confidence: f64, tolerance: f64) -> Gated {
    let mut out = Vec::new();
    let mut unpaired = Vec::new();
    for run_column in &report.columns {
        let Some(before) = baseline.values.get(&run_column.algorithm) else {
            unpaired.push(run_column.algorithm.clone());
            continue;
        };
        let mut compared = false;
        let now = current_values(report, &run_column.algorithm);
        for info in CATALOGUE
            .iter()
            .filter(|i| i.direction != Direction::Neutral)
        {
            let (Some(a), Some(b)) = (before.get(&info.metric), now.get(&info.metric)) else {
                continue;
            };
            let pairs: Vec<(f64, f64)> = b
                .iter()
                .filter_map(|(seed, x)| a.get(seed).map(|y| (*y, *x)))
                .collect();
            if pairs.len() < 2 {
                continue;
            }
            compared = true;
            let diffs: Vec<f64> = pairs.iter().map(|(y, x)| x - y).collect();
            let change = Paired::of(&diffs, confidence);
            let Some((low, high)) = change.interval else {
                continue;
            };
            let worse = match info.direction {
                Direction::Higher => high < 0.0,
                _ => low > 0.0,
            };
            let before_mean = mean(&pairs.iter().map(|p| p.0).collect::<Vec<_>>());
            let scale = if before_mean.abs() > 1e-12 {
                before_mean.abs()
            } else {
                1.0
            };
            if worse && change.mean.abs() > tolerance * scale {
                out.push(Regression {
                    algorithm: run_column.algorithm.clone(),
                    metric: info.metric,
                    before: before_mean,
                    after: mean(&pairs.iter().map(|p| p.1).collect::<Vec<_>>()),
                    change,
                });
            }
        }
        if !compared {
            unpaired.push(run_column.algorithm.clone());
        }
    }
    Gated {
        regressions: out,
        unpaired,
    }
}

/// metric → seed → value of `algorithm`'s finished runs in `report`.
fn current_values(report: &Report, algorithm: &str) -> BTreeMap<Metric, BTreeMap<u64, f64>> {
    let mut out: BTreeMap<Metric, BTreeMap<u64, f64>> = BTreeMap::new();
    for run in report.runs.iter().filter(|r| r.algorithm == algorithm) {
        let Some(values) = run.metrics() else {
            continue;
        };
        for (info, value) in values.iter_defined() {
            if let Some(x) = value.filter(|_| report.applies(info.metric)) {
                // As the report's JSON writes it, so that a rerun matches its own baseline to
                // the bit (the rounding's leftovers would otherwise all lean one way).
                let x = round_value(info.unit, x);
                out.entry(info.metric).or_default().insert(run.seed, x);
            }
        }
    }
    out
}

/// `1–5, 9, 11–12`.
fn seed_ranges(seeds: &std::collections::BTreeSet<u64>) -> String {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for &seed in seeds {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == seed => *end = seed,
            _ => runs.push((seed, seed)),
        }
    }
    runs.iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}–{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
