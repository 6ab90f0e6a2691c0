//! The verdict: which strategy to pick for the world's objective, by how much, and how sure.
//!
//! The rule, in order:
//! 1. Every ranked strategy's mean over seeds is checked against each constraint; one that
//!    breaks a constraint (or leaves its metric undefined) is not picked, and the verdict says
//!    what it breaks.
//! 2. The rest are ordered by the objective's mean. The leader is decided on that metric when
//!    the Student-t interval of its paired per-seed difference to *every* other candidate lies
//!    wholly on its side of zero (at the objective's confidence).
//! 3. Otherwise the candidates the leader cannot be told from go on to the first tie-break,
//!    and so on; when the tie-breaks run out, there is no decision: run more seeds.
//!
//! On a gated (†) metric, as in the table, strategies the completion gate leaves out are not
//! ranked (when their shortfall holds at the verdict's confidence): one that finished 9 jobs
//! has superb latency percentiles, and must not be picked for them. A gated objective leaves
//! them unjudged; a gated tie-break drops them from the tie, and when fewer than two remain
//! the verdict stops at the level before.
//!
//! Pairing by seed cancels the luck both strategies share (common random numbers). The
//! interval is over seeds, the unit of replication; it says nothing about worlds other than
//! this one.

use std::collections::BTreeMap;

use crate::metrics::{Direction, Metric};
use crate::objective::{Constraint, Objective};

use super::format::{percent, whole_percent};
use super::rank::{COMPLETION_FLOOR, Contestant, Standing};
use super::stats::{Paired, mean};

/// A constraint an algorithm breaks.
#[derive(Clone, Debug, PartialEq)]
pub struct Breach {
    /// The constraint.
    pub constraint: Constraint,
    /// The algorithm's mean of the metric; `None` when no finished run defines it.
    pub mean: Option<f64>,
}

/// Two algorithms compared on one metric, the pick's side first.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The metric.
    pub metric: Metric,
    /// The pick's (or leader's) mean.
    pub mean: f64,
    /// The other's mean.
    pub other_mean: f64,
    /// Per-seed differences `pick − other`, summarised with their interval.
    pub difference: Paired,
    /// Seeds on which the pick is strictly better.
    pub seeds_won: usize,
}

/// One level of an undecided verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    /// The candidate with the best mean among those still in contention.
    pub leader: String,
    /// The candidates it cannot be told from, best mean first.
    pub tied: Vec<String>,
    /// The leader against the first of `tied`.
    pub closest: Comparison,
    /// How many candidates define the metric on some seed: 0 when no run does, and the
    /// level then ranked nobody.
    pub defined_by: usize,
}

/// What the verdict says.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// `pick` beats every other candidate on `decided.metric`; on the metrics before it
    /// (`tied`) it could not be told from `runner_up`.
    Decided {
        /// The strategy to pick.
        pick: String,
        /// The next best on the deciding metric.
        runner_up: String,
        /// The comparison on the deciding metric.
        decided: Comparison,
        /// The comparisons on the earlier levels, where they tied.
        tied: Vec<Comparison>,
    },
    /// The only strategy that meets every constraint.
    Alone {
        /// The strategy to pick.
        pick: String,
    },
    /// On every level the leader could not be told from some other candidate.
    Undecided {
        /// Per level, in order: who led, which candidates it could not be told from, and the
        /// comparison with the closest of them.
        levels: Vec<Level>,
    },
    /// No strategy meets every constraint (or none was ranked).
    Nothing,
}

/// The verdict of a report.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The objective judged.
    pub objective: Objective,
    /// What it says.
    pub outcome: Outcome,
    /// Per algorithm (column order), the constraints its means break.
    pub breaches: Vec<(String, Vec<Breach>)>,
    /// Algorithms not judged, with why.
    pub left_out: Vec<(String, String)>,
    /// Algorithms the completion gate kept from a gated level they would have been ranked
    /// on (the objective, or a tie-break they reached), with their completion ratio.
    pub gated_out: Vec<(String, f64)>,
}

/// The verdict on `contestants` (column order) for `objective`; `left_out` says why a
/// contestant that is not ranked was not judged.
pub fn decide(
    objective: &Objective,
    contestants: &[Contestant<'_>],
    left_out: impl Fn(&Contestant<'_>) -> String,
) -> Decision {
    let mut breaches = Vec::new();
    let mut feasible: Vec<&Contestant<'_>> = Vec::new();
    let mut skipped = Vec::new();
    for c in contestants {
        if c.standing != Standing::Ranked || !c.has_values() {
            skipped.push((c.name.to_string(), left_out(c)));
            continue;
        }
        let broken = breaches_of(objective, c);
        if broken.is_empty() {
            feasible.push(c);
        } else {
            breaches.push((c.name.to_string(), broken));
        }
    }
    // One that leaves the objective undefined in every run (a job latency where it finished
    // no job) cannot be ranked on it, nor told from the leader on any number of seeds: it is
    // not judged, unless no one defines it (then the tie-breaks rank them all).
    let metric = objective.metric;
    if feasible.iter().any(|c| c.defines(metric)) {
        feasible.retain(|c| {
            let defines = c.defines(metric);
            if !defines {
                let why = format!("{} undefined in every finished run", metric.info().name);
                skipped.push((c.name.to_string(), why));
            }
            defines
        });
    }
    // A gated objective ranks only those the completion gate admits, unless nobody defines it
    // (then it ranks nobody, and the tie-breaks, gated or not, decide).
    let below = below_the_gate(contestants, objective.confidence);
    let mut gated_out = Vec::new();
    if metric.info().gated && feasible.iter().any(|c| c.defines(metric)) {
        feasible.retain(|c| {
            let ratio = gated_ratio(&below, c.name);
            ratio.inspect(|&r| gated_out.push((c.name.to_string(), r)));
            ratio.is_none()
        });
    }
    let outcome = outcome(objective, feasible, &below, &mut gated_out);
    Decision {
        objective: objective.clone(),
        outcome,
        breaches,
        left_out: skipped,
        gated_out,
    }
}

/// The strategies the completion gate leaves out of the verdict's gated levels, with their
/// completion ratio: those the table's gate leaves out ([`super::rank::gate`]) whose shortfall
/// is not luck, i.e. whose per-seed `jobs_done` less 90 % of the best's (paired by seed) has
/// its interval wholly below zero at the verdict's confidence. The table's gate reads means
/// alone; applied as such, it would let two runs of one strategy pick one another whenever
/// five seeds happen to finish a tenth fewer jobs for one.
fn below_the_gate(contestants: &[Contestant<'_>], confidence: f64) -> Vec<(String, f64)> {
    let gate = super::rank::gate(contestants);
    let best = contestants
        .iter()
        .filter(|c| c.standing == Standing::Ranked && c.has_values())
        .max_by(|a, b| {
            let jobs = |c: &Contestant<'_>| c.run_mean(Metric::JobsDone);
            jobs(a).total_cmp(&jobs(b))
        });
    let Some(best) = best else {
        return Vec::new();
    };
    let best_jobs = best.series(Metric::JobsDone);
    gate.excluded
        .iter()
        .filter(|e| {
            let Some(c) = contestants.iter().find(|c| c.name == e.algorithm) else {
                return false;
            };
            let shortfalls: Vec<f64> = c
                .series(Metric::JobsDone)
                .iter()
                .filter_map(|(seed, jobs)| {
                    let best = best_jobs.get(seed)?;
                    Some(jobs - COMPLETION_FLOOR * best)
                })
                .collect();
            Paired::of(&shortfalls, confidence)
                .interval
                .is_some_and(|(_, high)| high < 0.0)
        })
        .map(|e| (e.algorithm.clone(), e.completion_ratio))
        .collect()
}

/// The completion ratio of `name` when the verdict's completion gate leaves it out.
fn gated_ratio(below: &[(String, f64)], name: &str) -> Option<f64> {
    below.iter().find(|(n, _)| n == name).map(|&(_, r)| r)
}

fn breaches_of(objective: &Objective, c: &Contestant<'_>) -> Vec<Breach> {
    objective
        .constraints
        .iter()
        .filter_map(|constraint| {
            let values: Vec<f64> = c.series(constraint.metric).into_values().collect();
            let mean = (!values.is_empty()).then(|| mean(&values));
            let holds = mean.is_some_and(|m| constraint.bound.holds(m));
            (!holds).then_some(Breach {
                constraint: *constraint,
                mean,
            })
        })
        .collect()
}

fn outcome(
    objective: &Objective,
    feasible: Vec<&Contestant<'_>>,
    below: &[(String, f64)],
    gated_out: &mut Vec<(String, f64)>,
) -> Outcome {
    match feasible.len() {
        0 => return Outcome::Nothing,
        1 => {
            return Outcome::Alone {
                pick: feasible[0].name.to_string(),
            };
        }
        _ => {}
    }
    let mut pool = feasible;
    let mut history: Vec<Level> = Vec::new();
    for metric in objective.levels() {
        // A gated tie-break ranks only the tied that pass the completion gate (the objective's
        // own gate was applied before); with fewer than two, it cannot tell anyone apart.
        if !history.is_empty() && metric.info().gated {
            let (kept, dropped): (Vec<&Contestant<'_>>, Vec<&Contestant<'_>>) = pool
                .iter()
                .copied()
                .partition(|c| gated_ratio(below, c.name).is_none());
            for c in dropped {
                if let Some(r) = gated_ratio(below, c.name) {
                    gated_out.push((c.name.to_string(), r));
                }
            }
            if kept.len() < 2 {
                break;
            }
            pool = kept;
        }
        let series: Vec<BTreeMap<u64, f64>> = pool.iter().map(|c| c.series(metric)).collect();
        // A tie-break no run defines (a job latency where no job finished) cannot tell the tied
        // apart: the verdict stops at the level before, rather than rank them on nothing.
        if !history.is_empty() && series.iter().all(BTreeMap::is_empty) {
            break;
        }
        let order = best_first(metric, &series);
        let leader = order[0];
        let compare = |other: usize| comparison(metric, &series[leader], &series[other], objective);
        let tied: Vec<usize> = order[1..]
            .iter()
            .copied()
            .filter(|&other| !separated(metric, &compare(other).difference))
            .collect();
        // A tie-break that compares the tied on one common seed knows nothing of their order:
        // the verdict stops at the level before it, which leads with its own leader (a strategy
        // that finished one job in two seeds must not lead on its latency).
        let one_seed = |&other: &usize| compare(other).difference.n == 1;
        if !history.is_empty() && order[1..].iter().any(one_seed) {
            break;
        }
        let Some(&closest) = tied.first() else {
            let runner_up = order[1];
            let pick = pool[leader].name.to_string();
            let runner = pool[runner_up].name.to_string();
            let tied = earlier_levels(objective, metric, pool[leader], pool[runner_up]);
            return Outcome::Decided {
                pick,
                runner_up: runner,
                decided: compare(runner_up),
                tied,
            };
        };
        history.push(Level {
            leader: pool[leader].name.to_string(),
            tied: tied.iter().map(|&i| pool[i].name.to_string()).collect(),
            closest: compare(closest),
            defined_by: series.iter().filter(|s| !s.is_empty()).count(),
        });
        // A strategy "tied" on one common seed is not known to be close: a tie-break must not
        // lift it over the leader (at one seed, the strategy that failed fastest would lead on
        // latency), so the verdict leads with this level's leader. (With no common seed the
        // level ranked nothing, and the next one ranks them all.)
        if tied.iter().any(|&other| compare(other).difference.n == 1) {
            break;
        }
        pool = std::iter::once(leader)
            .chain(tied)
            .map(|i| pool[i])
            .collect();
    }
    Outcome::Undecided { levels: history }
}

/// The pick against the runner-up on the levels before `decided`.
fn earlier_levels(
    objective: &Objective,
    decided: Metric,
    pick: &Contestant<'_>,
    runner_up: &Contestant<'_>,
) -> Vec<Comparison> {
    objective
        .levels()
        .take_while(|m| *m != decided)
        .map(|m| comparison(m, &pick.series(m), &runner_up.series(m), objective))
        .collect()
}

/// Indices best first by mean; a series with no value (the metric undefined in every run) and
/// any non-finite mean come last; equal means keep column order.
fn best_first(metric: Metric, series: &[BTreeMap<u64, f64>]) -> Vec<usize> {
    let higher = metric.info().direction == Direction::Higher;
    let key = |s: &BTreeMap<u64, f64>| {
        let values: Vec<f64> = s.values().copied().collect();
        let m = mean(&values);
        if values.is_empty() || !m.is_finite() {
            (1, 0.0)
        } else {
            (0, if higher { -m } else { m })
        }
    };
    let keys: Vec<(u8, f64)> = series.iter().map(key).collect();
    let mut order: Vec<usize> = (0..series.len()).collect();
    order.sort_by(|&a, &b| {
        keys[a]
            .0
            .cmp(&keys[b].0)
            .then(keys[a].1.total_cmp(&keys[b].1))
    });
    order
}

/// `a` against `b` over the seeds both define.
fn comparison(
    metric: Metric,
    a: &BTreeMap<u64, f64>,
    b: &BTreeMap<u64, f64>,
    objective: &Objective,
) -> Comparison {
    let higher = metric.info().direction == Direction::Higher;
    let pairs: Vec<(f64, f64)> = a
        .iter()
        .filter_map(|(seed, x)| b.get(seed).map(|y| (*x, *y)))
        .collect();
    let differences: Vec<f64> = pairs.iter().map(|(x, y)| x - y).collect();
    let seeds_won = pairs
        .iter()
        .filter(|(x, y)| if higher { x > y } else { x < y })
        .count();
    Comparison {
        metric,
        mean: mean(&a.values().copied().collect::<Vec<_>>()),
        other_mean: mean(&b.values().copied().collect::<Vec<_>>()),
        difference: Paired::of(&differences, objective.confidence),
        seeds_won,
    }
}

/// Whether the interval of `pick − other` lies wholly on the better side of zero.
fn separated(metric: Metric, difference: &Paired) -> bool {
    let Some((low, high)) = difference.interval else {
        return false;
    };
    match metric.info().direction {
        Direction::Higher => low > 0.0,
        _ => high < 0.0,
    }
}

impl Decision {
    /// The strategy the verdict picks, or leads with when it cannot decide: the leader of the
    /// last level reached, which the tie-breaks before it narrowed to.
    pub fn leader(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Decided { pick, .. } | Outcome::Alone { pick } => Some(pick),
            Outcome::Undecided { levels } => levels.last().map(|l| l.leader.as_str()),
            Outcome::Nothing => None,
        }
    }

    /// The verdict in one sentence, e.g. `pick backoff for most jobs_done: …`.
    pub fn headline(&self) -> String {
        let level = pct(self.objective.confidence);
        match &self.outcome {
            Outcome::Decided {
                pick,
                runner_up,
                decided,
                tied,
            } => {
                let info = decided.metric.info();
                let mut text = format!(
                    "pick {pick} for {} {}: {} against {} for {runner_up}, {}, better on {} of {} seeds",
                    aim(decided.metric),
                    info.name,
                    value(decided.metric, decided.mean, true, scale(decided)),
                    value(decided.metric, decided.other_mean, false, scale(decided)),
                    difference(decided, &level),
                    decided.seeds_won,
                    decided.difference.n
                );
                if !tied.is_empty() {
                    let parts: Vec<String> = tied
                        .iter()
                        .map(|c| match c.difference.n {
                            0 => format!("{} (no seed where both define it)", c.metric.info().name),
                            _ => format!("{} {}", c.metric.info().name, difference(c, &level)),
                        })
                        .collect();
                    text.push_str(&format!("; before that they tie on {}", parts.join(", ")));
                }
                text
            }
            Outcome::Alone { pick } => {
                let why = if !self.breaches.is_empty() {
                    "the only one that meets every constraint"
                } else if !self.left_out.is_empty() {
                    "the only one judged"
                } else {
                    "the only one compared"
                };
                format!("pick {pick}: {why}")
            }
            Outcome::Undecided { levels } => undecided(levels, &level),
            Outcome::Nothing if self.breaches.is_empty() => {
                "no decision: no strategy could be judged".to_owned()
            }
            Outcome::Nothing => "no decision: no strategy meets every constraint".to_owned(),
        }
    }

    /// What the objective is and where it came from.
    pub fn objective_line(&self) -> String {
        let origin = match self.objective.source {
            crate::objective::Source::Default => {
                " (the default; [objective] in the world changes it)"
            }
            crate::objective::Source::World => "",
        };
        format!("objective: {}{origin}", self.objective.describe())
    }

    /// One line per constraint some algorithm breaks (with each one's mean), then one for
    /// those not judged.
    pub fn notes(&self) -> Vec<String> {
        let mut lines: Vec<String> = Vec::new();
        for constraint in &self.objective.constraints {
            let breakers: Vec<String> = self
                .breaches
                .iter()
                .filter_map(|(name, broken)| {
                    let b = broken.iter().find(|b| b.constraint == *constraint)?;
                    let mean = b.mean.map_or_else(
                        || "undefined".to_owned(),
                        |m| value(constraint.metric, m, false, m),
                    );
                    Some(format!("{name} ({mean})"))
                })
                .collect();
            if !breakers.is_empty() {
                lines.push(format!(
                    "breaks {}: {}",
                    constraint.describe(),
                    breakers.join(", ")
                ));
            }
        }
        if !self.gated_out.is_empty() {
            let parts: Vec<String> = self
                .gated_out
                .iter()
                .map(|(name, ratio)| format!("{name} {}", percent(*ratio)))
                .collect();
            lines.push(format!(
                "not ranked on † metrics (completion vs the best, under {}): {}",
                whole_percent(COMPLETION_FLOOR),
                parts.join(", ")
            ));
        }
        if !self.left_out.is_empty() {
            let parts: Vec<String> = self
                .left_out
                .iter()
                .map(|(name, why)| format!("{name} ({why})"))
                .collect();
            lines.push(format!("not judged: {}", parts.join(", ")));
        }
        lines
    }
}

/// `the highest` or `the lowest`, as the metric's direction says.
fn aim(metric: Metric) -> &'static str {
    match metric.info().direction {
        Direction::Higher => "the highest",
        _ => "the lowest",
    }
}

/// `no decision on 3 seeds: backoff leads jobs_done but cannot be separated from sticky, wait
/// (+4.0 over sticky, 95 % CI …); of those, …; run more seeds`.
/// Names a line can still be read with; a grid's hundreds of tied cells go to the JSON.
const NAMES_SHOWN: usize = 12;

/// `a, b, c`, or the first [`NAMES_SHOWN`] and how many more (the JSON verdict lists them all).
fn some_names(names: &[String]) -> String {
    if names.len() <= NAMES_SHOWN {
        return names.join(", ");
    }
    format!(
        "{} and {} more (the JSON verdict lists them all)",
        names[..NAMES_SHOWN].join(", "),
        names.len() - NAMES_SHOWN
    )
}

/// Whether the leader and the closest candidate of every level are equal value for value on
/// every seed (at least two): "run more seeds" would promise what the seeds so far give no
/// sign of.
pub fn equal_on_every_seed(levels: &[Level]) -> bool {
    !levels.is_empty()
        && levels.iter().all(|l| {
            let d = &l.closest.difference;
            l.defined_by > 0 && d.n >= 2 && d.mean == 0.0 && d.stdev == 0.0
        })
}

fn undecided(levels: &[Level], confidence: &str) -> String {
    let name = |l: &Level| l.closest.metric.info().name;
    // Only the objective can be undefined everywhere and still be a level: a tie-break no run
    // defines ends the verdict before it (see `outcome`).
    if let [only] = levels
        && only.defined_by == 0
    {
        return format!(
            "no decision: no run defines {} (the objective) or a tie-break, so nothing ranks \
             the strategies; the notes on undefined metrics say why",
            name(only)
        );
    }
    let n = levels
        .iter()
        .find(|l| l.defined_by > 0)
        .map_or(0, |l| l.closest.difference.n);
    let all_equal = equal_on_every_seed(levels);
    let parts: Vec<String> = levels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if l.defined_by == 0 {
                return format!("no run defines {}", name(l));
            }
            // After a level that ranked nobody, the candidates are still all of them.
            let lead = if i == 0 || levels[i - 1].defined_by == 0 {
                format!("{} leads {}", l.leader, name(l))
            } else {
                format!(
                    "of those, {} has {} {}",
                    l.leader,
                    aim(l.closest.metric),
                    name(l)
                )
            };
            let common = l.closest.difference.n;
            if common < 2 {
                return format!(
                    "{lead}, but {} with {} {} no confidence interval",
                    crate::text::plural(common, "common seed"),
                    l.tied[0],
                    if common == 1 { "gives" } else { "give" }
                );
            }
            let d = &l.closest.difference;
            if d.mean == 0.0 && d.stdev == 0.0 {
                // No lead at all: "leads" would name a winner where every seed says a tie.
                let of_those = if lead.starts_with("of those") {
                    "of those, "
                } else {
                    ""
                };
                // Said once at the end when every level is so.
                let equal = if all_equal {
                    String::new()
                } else {
                    format!(" ({} and {} are equal on every seed)", l.leader, l.tied[0])
                };
                return format!(
                    "{of_those}{} does not separate {} from {}{equal}",
                    name(l),
                    l.leader,
                    some_names(&l.tied),
                );
            }
            let (mean, interval) = signed_parts(&l.closest, confidence);
            format!(
                "{lead} but cannot be separated from {} ({mean} over {}, {})",
                some_names(&l.tied),
                l.tied[0],
                interval.unwrap_or_else(|| crate::text::plural(common, "seed") + " with it")
            )
        })
        .collect();
    if all_equal {
        let last = levels.last().expect("a verdict has a level");
        return format!(
            "no decision on {n} seeds: {}; {} and {} are equal on every seed in each of these \
             metrics, so more seeds may not separate them either (a tie-break they differ on, \
             --tie-break, may)",
            parts.join("; "),
            last.leader,
            last.tied[0]
        );
    }
    if n < 2 {
        return format!(
            "no decision: {}; run more seeds (e.g. --seeds 10)",
            parts.join("; ")
        );
    }
    format!(
        "no decision on {n} seeds: {}; run more seeds",
        parts.join("; ")
    )
}

/// `95 %` for 0.95, `99.5 %` for 0.995.
pub fn pct(confidence: f64) -> String {
    let text = format!("{:.1}", confidence * 100.0);
    format!("{} %", text.trim_end_matches(".0"))
}

/// A mean in the metric's precision for values as large as `scale`, with the unit when asked.
fn value(metric: Metric, x: f64, unit: bool, scale: f64) -> String {
    let info = metric.info();
    let decimals = super::format::decimals_at(info.unit, scale.abs());
    let text = super::format::thousands(x, decimals);
    if unit && info.unit != "ratio" {
        format!("{text} {}", info.unit)
    } else {
        text
    }
}

/// `+4.0 (95 % CI +1.2 to +6.8)`: the mean difference and its interval, signed.
fn difference(c: &Comparison, level: &str) -> String {
    let (mean, interval) = signed_parts(c, level);
    match interval {
        Some(interval) => format!("{mean} ({interval})"),
        None => mean,
    }
}

/// The size of a comparison's values, which its figures are all spelled at.
fn scale(c: &Comparison) -> f64 {
    super::format::scale_of([c.mean, c.other_mean])
}

/// `+4.0` and `95 % CI +1.2 to +6.8` (none for fewer than two seeds).
fn signed_parts(c: &Comparison, level: &str) -> (String, Option<String>) {
    let signed = |x: f64| {
        let text = value(c.metric, x, false, scale(c));
        if text.starts_with('-') || text.chars().all(|ch| "0.,".contains(ch)) {
            text
        } else {
            format!("+{text}")
        }
    };
    let d = &c.difference;
    let interval = d.interval.map(|(low, high)| {
        // Equal differences on every seed leave the interval no width: say so, rather than
        // print a point as if it were a confident range.
        if d.stdev == 0.0 && d.mean == 0.0 {
            format!("equal on each of {} seeds", d.n)
        } else if d.stdev == 0.0 {
            format!(
                "the same on each of {} seeds: its {level} CI has no width",
                d.n
            )
        } else {
            format!("{level} CI {} to {}", signed(low), signed(high))
        }
    });
    (signed(d.mean), interval)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_long_tie_names_the_first_few_and_counts_the_rest() {
        let names: Vec<String> = (0..20).map(|k| format!("c{k}")).collect();
        assert_eq!(some_names(&names[..3]), "c0, c1, c2");
        assert_eq!(
            some_names(&names[..NAMES_SHOWN]).matches(", ").count(),
            NAMES_SHOWN - 1
        );
        let long = some_names(&names);
        assert!(long.starts_with("c0, c1,"), "{long}");
        assert!(long.contains("c11 and 8 more"), "{long}");
        assert!(!long.contains("c12"), "{long}");
    }

    use super::*;
    use crate::metrics::{self, MetricValues, Tally};
    use crate::objective::Bound;

    fn values(jobs: f64, p99: f64, refusals: f64) -> MetricValues {
        let mut v = metrics::compute(&mut Tally::default(), &[]);
        v.set(Metric::JobsDone, jobs);
        v.set(Metric::SuccessfulJobLatencyP99Ms, p99);
        v.set(Metric::RefusalRate, refusals);
        v
    }

    /// `(jobs, p99, refusal rate)` of one seed.
    type Seed = (f64, f64, f64);

    /// `(name, values per seed)`.
    fn field(spec: &[(&str, &[Seed])]) -> Vec<(String, Vec<MetricValues>)> {
        spec.iter()
            .map(|(name, seeds)| {
                let runs = seeds.iter().map(|&(j, p, r)| values(j, p, r)).collect();
                (name.to_string(), runs)
            })
            .collect()
    }

    fn judge(objective: &Objective, field: &[(String, Vec<MetricValues>)]) -> Decision {
        let contestants: Vec<Contestant<'_>> = field
            .iter()
            .map(|(name, runs)| Contestant {
                name,
                standing: Standing::Ranked,
                valid: true,
                runs: runs
                    .iter()
                    .enumerate()
                    .map(|(s, v)| (s as u64, v))
                    .collect(),
            })
            .collect();
        decide(objective, &contestants, |_| "never".into())
    }

    #[test]
    fn a_clear_leader_is_decided_on_the_objective() {
        let runs = field(&[
            ("a", &[(90.0, 5.0, 0.0), (92.0, 5.0, 0.0), (91.0, 5.0, 0.0)]),
            ("b", &[(80.0, 1.0, 0.0), (81.0, 1.0, 0.0), (83.0, 1.0, 0.0)]),
            ("c", &[(70.0, 1.0, 0.0), (75.0, 1.0, 0.0), (72.0, 1.0, 0.0)]),
        ]);
        let d = judge(&Objective::default(), &runs);
        let Outcome::Decided {
            pick,
            runner_up,
            decided,
            tied,
        } = d.outcome
        else {
            panic!("decided: {:?}", d.outcome)
        };
        assert_eq!((pick.as_str(), runner_up.as_str()), ("a", "b"));
        assert_eq!(decided.metric, Metric::JobsDone);
        assert_eq!(decided.seeds_won, 3);
        assert!((decided.difference.mean - 9.666_666).abs() < 1e-5);
        assert!(tied.is_empty());
        let d = judge(&Objective::default(), &runs);
        assert_eq!(
            d.headline(),
            "pick a for the highest jobs_done: 91.0 jobs against 81.3 for b, +9.7 (95 % CI +5.9 to \
             +13.5), better on 3 of 3 seeds"
        );
    }

    #[test]
    fn equal_jobs_go_to_the_tie_break() {
        let runs = field(&[
            (
                "a",
                &[(100.0, 9.0, 0.0), (100.0, 9.5, 0.0), (100.0, 9.2, 0.0)],
            ),
            (
                "b",
                &[(100.0, 7.0, 0.0), (100.0, 7.1, 0.0), (100.0, 7.4, 0.0)],
            ),
        ]);
        let d = judge(&Objective::default(), &runs);
        let Outcome::Decided {
            pick,
            decided,
            tied,
            ..
        } = d.outcome
        else {
            panic!("decided: {:?}", d.outcome)
        };
        assert_eq!(pick, "b");
        assert_eq!(decided.metric, Metric::SuccessfulJobLatencyP99Ms);
        assert_eq!(tied.len(), 1);
        assert_eq!(tied[0].difference.interval, Some((0.0, 0.0)));
    }

    /// Equal jobs on every seed, then noisy latencies: the first level names no leader; and
    /// when every level is equal, the verdict says so once.
    #[test]
    fn a_level_equal_on_every_seed_names_no_leader() {
        let runs = field(&[
            ("a", &[(0.0, 9.0, 0.0), (0.0, 5.0, 0.0), (0.0, 9.2, 0.0)]),
            ("b", &[(0.0, 5.0, 0.0), (0.0, 9.1, 0.0), (0.0, 7.4, 0.0)]),
        ]);
        let headline = judge(&Objective::default(), &runs).headline();
        assert!(
            headline.starts_with(
                "no decision on 3 seeds: jobs_done does not separate a from b (a and b are \
                 equal on every seed); of those, "
            ),
            "{headline}"
        );
        assert!(headline.ends_with("run more seeds"), "{headline}");
        let runs = field(&[
            ("a", &[(0.0, 9.0, 0.0), (0.0, 5.0, 0.0)]),
            ("b", &[(0.0, 9.0, 0.0), (0.0, 5.0, 0.0)]),
        ]);
        assert_eq!(
            judge(&Objective::default(), &runs).headline(),
            "no decision on 2 seeds: jobs_done does not separate a from b; of those, \
             successful_job_latency_p99_ms does not separate a from b; a and b are equal on every \
             seed in each of these metrics, so more seeds may not separate them either (a \
             tie-break they differ on, --tie-break, may)"
        );
    }

    #[test]
    fn noise_gives_no_decision() {
        let runs = field(&[
            (
                "a",
                &[(100.0, 9.0, 0.0), (90.0, 5.0, 0.0), (95.0, 9.2, 0.0)],
            ),
            ("b", &[(92.0, 5.0, 0.0), (99.0, 9.1, 0.0), (93.0, 7.4, 0.0)]),
        ]);
        let d = judge(&Objective::default(), &runs);
        let Outcome::Undecided { levels } = &d.outcome else {
            panic!("undecided: {:?}", d.outcome)
        };
        assert_eq!(levels.len(), 2);
        assert_eq!(
            (levels[0].leader.as_str(), levels[0].tied.as_slice()),
            ("a", &["b".to_string()][..])
        );
        assert_eq!(
            (levels[1].leader.as_str(), levels[1].tied.as_slice()),
            ("b", &["a".to_string()][..])
        );
        assert!(d.headline().starts_with(
            "no decision on 3 seeds: a leads jobs_done but cannot be separated from b (+0.3 over b, 95 % CI"
        ), "{}", d.headline());
    }

    #[test]
    fn one_seed_leads_with_the_objective_not_a_tie_break() {
        // At one seed nothing separates; the strategy that finished 5 jobs and failed fast must
        // not lead on latency over the one that finished 1,400.
        let runs = field(&[
            ("a", &[(1400.0, 9.0, 0.0)]),
            ("b", &[(5.0, 0.5, 0.0)]),
            ("c", &[(1390.0, 8.0, 0.0)]),
        ]);
        let d = judge(&Objective::default(), &runs);
        let Outcome::Undecided { levels } = &d.outcome else {
            panic!("undecided: {:?}", d.outcome)
        };
        assert_eq!(levels.len(), 1, "{levels:?}");
        assert_eq!(d.leader(), Some("a"));
        assert_eq!(
            d.headline(),
            "no decision: a leads jobs_done, but 1 common seed with c gives no confidence \
             interval; run more seeds (e.g. --seeds 10)"
        );
    }

    #[test]
    fn a_tie_break_on_one_common_seed_is_not_taken() {
        // Two seeds tie a and b on jobs_done; b has a job latency on one seed only, so the
        // tie-break compares them on one seed: the verdict leads with a, the jobs_done leader.
        let mut runs = field(&[
            ("a", &[(502.0, 9.0, 0.0), (1078.0, 8.0, 0.0)]),
            ("b", &[(0.0, 1.0, 0.0), (1.0, 1.7, 0.0)]),
        ]);
        runs[1].1[0] = {
            let mut v = metrics::compute(&mut Tally::default(), &[]);
            v.set(Metric::JobsDone, 0.0);
            v
        };
        let d = judge(&Objective::default(), &runs);
        let Outcome::Undecided { levels } = &d.outcome else {
            panic!("undecided: {:?}", d.outcome)
        };
        assert_eq!(levels.len(), 1, "{levels:?}");
        assert_eq!(d.leader(), Some("a"));
    }

    #[test]
    fn a_strategy_that_breaks_a_constraint_is_not_picked() {
        let runs = field(&[
            ("a", &[(90.0, 5.0, 0.2), (92.0, 5.0, 0.3), (91.0, 5.0, 0.2)]),
            ("b", &[(80.0, 1.0, 0.0), (81.0, 1.0, 0.0), (83.0, 1.0, 0.0)]),
        ]);
        let objective = Objective {
            constraints: vec![Constraint {
                metric: Metric::RefusalRate,
                bound: Bound::AtMost(0.05),
            }],
            ..Objective::default()
        };
        let d = judge(&objective, &runs);
        assert_eq!(d.outcome, Outcome::Alone { pick: "b".into() });
        assert_eq!(
            d.headline(),
            "pick b: the only one that meets every constraint"
        );
        assert_eq!(d.breaches.len(), 1);
        let one = judge(&Objective::default(), &runs[..1]);
        assert_eq!(one.headline(), "pick a: the only one compared");
        let (name, broken) = &d.breaches[0];
        assert_eq!(name, "a");
        assert!((broken[0].mean.unwrap() - 0.233_333).abs() < 1e-5);
        let none = Objective {
            constraints: vec![Constraint {
                metric: Metric::JobsDone,
                bound: Bound::AtLeast(1000.0),
            }],
            ..Objective::default()
        };
        assert_eq!(judge(&none, &runs).outcome, Outcome::Nothing);
    }

    #[test]
    fn a_tie_break_no_run_defines_is_not_ranked_on() {
        // Every strategy finished no job: they tie on jobs_done, and no run has a job latency,
        // so the verdict stops at jobs_done instead of naming a "lowest" p99 of nothing.
        let none = |jobs: f64| {
            let mut v = metrics::compute(&mut Tally::default(), &[]);
            v.set(Metric::JobsDone, jobs);
            v
        };
        let runs: Vec<(String, Vec<MetricValues>)> = ["a", "b", "c"]
            .iter()
            .map(|name| (name.to_string(), vec![none(0.0), none(0.0), none(0.0)]))
            .collect();
        assert!(
            runs[0].1[0]
                .value(Metric::SuccessfulJobLatencyP99Ms)
                .is_none()
        );
        let d = judge(&Objective::default(), &runs);
        let Outcome::Undecided { levels } = &d.outcome else {
            panic!("undecided: {:?}", d.outcome)
        };
        assert_eq!(levels.len(), 1);
        assert!(!d.headline().contains("p99"), "{}", d.headline());
    }

    /// A strategy that finished no job on any seed has no job latency: it is not judged, and
    /// the others are decided between as if it had not run (it used to tie with the leader on
    /// "0 common seeds", on any number of seeds).
    #[test]
    fn a_strategy_that_never_defines_the_objective_is_not_judged() {
        let latency = Objective {
            metric: Metric::SuccessfulJobLatencyP99Ms,
            tie_break: vec![],
            ..Objective::default()
        };
        let mut runs = field(&[
            ("a", &[(90.0, 5.0, 0.0), (92.0, 5.5, 0.0), (91.0, 5.2, 0.0)]),
            ("b", &[(88.0, 9.0, 0.0), (89.0, 9.9, 0.0), (90.0, 9.4, 0.0)]),
            ("dead", &[(0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)]),
        ]);
        for v in &mut runs[2].1 {
            v.undefine(Metric::SuccessfulJobLatencyP99Ms);
        }
        let d = judge(&latency, &runs);
        let Outcome::Decided {
            pick, runner_up, ..
        } = &d.outcome
        else {
            panic!("decided: {:?}", d.outcome)
        };
        assert_eq!((pick.as_str(), runner_up.as_str()), ("a", "b"));
        assert_eq!(
            d.left_out,
            [(
                "dead".to_owned(),
                "successful_job_latency_p99_ms undefined in every finished run".to_owned()
            )]
        );
        // Beside one that defines it, it leaves that one alone.
        let d = judge(&latency, &[runs[0].clone(), runs[2].clone()]);
        assert_eq!(d.headline(), "pick a: the only one judged");
    }

    /// The completion gate of the table's † rows holds in the verdict: a strategy that finished
    /// a tenth of the jobs has the best latency, and is not picked for it.
    #[test]
    fn a_gated_objective_ranks_only_what_the_completion_gate_admits() {
        let latency = Objective {
            metric: Metric::SuccessfulJobLatencyP99Ms,
            tie_break: vec![],
            ..Objective::default()
        };
        let runs = field(&[
            ("a", &[(90.0, 5.0, 0.0), (92.0, 5.5, 0.0), (91.0, 5.2, 0.0)]),
            ("b", &[(88.0, 9.0, 0.0), (89.0, 9.9, 0.0), (90.0, 9.4, 0.0)]),
            ("few", &[(9.0, 1.0, 0.0), (8.0, 1.1, 0.0), (10.0, 1.2, 0.0)]),
        ]);
        let d = judge(&latency, &runs);
        let Outcome::Decided { pick, .. } = &d.outcome else {
            panic!("decided: {:?}", d.outcome)
        };
        assert_eq!(pick, "a");
        assert_eq!(d.gated_out, [("few".to_owned(), 9.0 / 91.0)]);
        assert_eq!(
            d.notes(),
            ["not ranked on † metrics (completion vs the best, under 90 %): few 9.9 %"]
        );
        // jobs_done is not gated: there the gate keeps nobody out.
        let d = judge(&Objective::default(), &runs);
        assert!(d.gated_out.is_empty(), "{d:?}");
    }

    /// A gated tie-break drops the tied the gate leaves out; with one left it cannot rank, so
    /// the verdict stops at the level before rather than pick on the gate alone.
    #[test]
    fn a_gated_tie_break_ranks_only_the_tied_the_gate_admits() {
        let stalls = Objective {
            metric: Metric::StallRate,
            tie_break: vec![Metric::SuccessfulJobLatencyP99Ms],
            ..Objective::default()
        };
        let mut runs = field(&[
            (
                "a",
                &[(100.0, 9.0, 0.0), (101.0, 9.5, 0.0), (99.0, 9.2, 0.0)],
            ),
            (
                "b",
                &[(98.0, 5.0, 0.0), (99.0, 5.5, 0.0), (100.0, 5.2, 0.0)],
            ),
            ("d", &[(10.0, 1.0, 0.0), (12.0, 1.1, 0.0), (11.0, 1.2, 0.0)]),
        ]);
        for (_, seeds) in &mut runs {
            for v in seeds {
                v.set(Metric::StallRate, 0.0);
            }
        }
        // All tie on stalls; d, a tenth of the jobs, has the lowest p99 and is not ranked on it.
        let d = judge(&stalls, &runs);
        let Outcome::Decided { pick, tied, .. } = &d.outcome else {
            panic!("decided: {:?}", d.outcome)
        };
        assert_eq!((pick.as_str(), tied.len()), ("b", 1));
        assert_eq!(d.gated_out, [("d".to_owned(), 11.0 / 100.0)]);
        // With a and d only, a alone passes the gate: the tie-break ranks nobody.
        let d = judge(&stalls, &[runs[0].clone(), runs[2].clone()]);
        let Outcome::Undecided { levels } = &d.outcome else {
            panic!("undecided: {:?}", d.outcome)
        };
        assert_eq!((levels.len(), levels[0].leader.as_str()), (1, "a"));
        assert_eq!(d.gated_out, [("d".to_owned(), 11.0 / 100.0)]);
    }

    /// The gate reads means, but the verdict leaves a strategy out only when its shortfall
    /// holds at the verdict's confidence: twins whose seeds happened to differ stay in.
    #[test]
    fn a_shortfall_within_the_noise_keeps_a_strategy_in() {
        let latency = Objective {
            metric: Metric::SuccessfulJobLatencyP99Ms,
            tie_break: vec![],
            ..Objective::default()
        };
        // b's mean is 86 % of a's, but one seed of three has b ahead.
        let runs = field(&[
            (
                "a",
                &[(100.0, 9.0, 0.0), (140.0, 9.5, 0.0), (100.0, 9.2, 0.0)],
            ),
            (
                "b",
                &[(110.0, 5.0, 0.0), (80.0, 5.5, 0.0), (103.0, 5.2, 0.0)],
            ),
        ]);
        let d = judge(&latency, &runs);
        assert!(d.gated_out.is_empty(), "{d:?}");
        let Outcome::Decided { pick, .. } = &d.outcome else {
            panic!("decided: {:?}", d.outcome)
        };
        assert_eq!(pick, "b");
    }

    #[test]
    fn an_objective_no_run_defines_is_said_so() {
        let jobs_only = |jobs: f64| {
            let mut v = metrics::compute(&mut Tally::default(), &[]);
            v.set(Metric::JobsDone, jobs);
            v
        };
        let runs: Vec<(String, Vec<MetricValues>)> = [("a", 1.0), ("b", 0.0)]
            .iter()
            .map(|&(name, j)| (name.to_string(), vec![jobs_only(j), jobs_only(j + 1.0)]))
            .collect();
        let latency = |tie_break: Vec<Metric>| Objective {
            metric: Metric::SuccessfulJobLatencyP99Ms,
            tie_break,
            ..Objective::default()
        };
        let d = judge(&latency(vec![]), &runs);
        assert_eq!(
            d.headline(),
            "no decision: no run defines successful_job_latency_p99_ms (the objective) or a \
             tie-break, so nothing ranks the strategies; the notes on undefined metrics say why"
        );
        // The tie-break still ranks all of them: a leads jobs_done by exactly 1 on both seeds.
        let d = judge(&latency(vec![Metric::JobsDone]), &runs);
        let Outcome::Decided { pick, tied, .. } = &d.outcome else {
            panic!("decided: {:?}", d.outcome)
        };
        assert_eq!((pick.as_str(), tied.len()), ("a", 1));
        assert!(
            d.headline().ends_with(
                "; before that they tie on successful_job_latency_p99_ms (no seed where both \
                 define it)"
            ),
            "{}",
            d.headline()
        );
        let noisy: Vec<(String, Vec<MetricValues>)> = [("a", [3.0, 1.0]), ("b", [1.0, 2.0])]
            .iter()
            .map(|(name, j)| (name.to_string(), j.map(jobs_only).to_vec()))
            .collect();
        let d = judge(&latency(vec![Metric::JobsDone]), &noisy);
        assert!(
            d.headline().starts_with(
                "no decision on 2 seeds: no run defines successful_job_latency_p99_ms; a leads \
                 jobs_done but cannot be separated from b (+0.5 over b, 95 % CI"
            ),
            "{}",
            d.headline()
        );
    }

    #[test]
    fn one_seed_decides_nothing() {
        let runs = field(&[("a", &[(100.0, 1.0, 0.0)]), ("b", &[(50.0, 2.0, 0.0)])]);
        let d = judge(&Objective::default(), &runs);
        assert!(matches!(d.outcome, Outcome::Undecided { .. }), "{d:?}");
    }
}
