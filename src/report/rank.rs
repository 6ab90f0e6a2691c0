//! Who wins each metric: the completion gate, the tie tolerance and the paired test (reference
//! semantics §8.3–§8.5).
//!
//! Owns the rules and nothing else: it reads finished runs' metric values and returns verdicts.
//! It never formats, never aggregates for display ([`super::stats`] does) and never sees a run
//! that did not finish. There is deliberately no composite score: each metric is judged alone.

use std::collections::BTreeMap;

use crate::metrics::{Direction, Metric, MetricInfo, MetricValues, sample_stdev};

use super::stats::mean;

/// Gated rows compare only algorithms whose mean `jobs_done` reaches this share of the best.
pub const COMPLETION_FLOOR: f64 = 0.9;
/// Means within this share of the best are a tie whatever the paired test says.
pub const TIE_TOLERANCE: f64 = 0.01;
/// A challenger ties with the leader while its gap is within this many paired standard errors.
pub const SIGNIFICANCE_K: f64 = 2.0;
/// Below this |best| the tie tolerance is absolute (0.01) instead of relative.
const NEAR_ZERO: f64 = 1e-12;

/// What the reference's rule amounts to at `seeds` seeds against the verdict's `confidence`,
/// e.g. `; at 3 seeds its confidence is 82 %, not 95 %: …`; empty from the seed count at which
/// "within k standard errors" is an interval at least as wide as the verdict's.
pub fn rule_confidence_note(seeds: usize, confidence: f64) -> String {
    if seeds < 2 {
        return "; one seed has no standard error, so only the 1 % tie applies".into();
    }
    let coverage = super::stats::t_coverage(SIGNIFICANCE_K, (seeds - 1) as f64);
    if coverage >= confidence {
        return String::new();
    }
    // The verdict's confidence as its headline writes it (98.3 % under `--seeds auto`).
    let (mut rule, mut verdict) = (
        super::format::whole_percent(coverage),
        super::decision::pct(confidence),
    );
    // Close enough to round alike: a decimal tells them apart (94.6 %, not 95.0 %).
    if rule == verdict
        || super::format::whole_percent(coverage) == super::format::whole_percent(confidence)
    {
        rule = format!("{:.1} %", coverage * 100.0);
        verdict = format!("{:.1} %", confidence * 100.0);
    }
    format!(
        "; at {seeds} seeds its confidence is {rule}, not the verdict's {verdict}: the verdict \
         uses Student-t intervals"
    )
}

/// Whether an algorithm takes part in the ranking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Ranked normally.
    Ranked,
    /// The world marks it unsuited: shown, counted as present, never ranked, never the baseline.
    Unsuited,
    /// A budget stopped some of its runs (or they stalled under `--rng reference`): left out
    /// of every ranking and of the gate.
    Unfinished,
}

/// One algorithm's finished runs, as the ranking sees them.
#[derive(Clone, Debug)]
pub struct Contestant<'a> {
    /// Algorithm name.
    pub name: &'a str,
    /// Whether it is ranked.
    pub standing: Standing,
    /// Every finished run passed the validity gate (latency rows rank only valid ones).
    pub valid: bool,
    /// `(seed, values)` of its finished runs, in run order (duplicates allowed).
    pub runs: Vec<(u64, &'a MetricValues)>,
}

impl Contestant<'_> {
    pub(super) fn has_values(&self) -> bool {
        !self.runs.is_empty()
    }

    /// Whether some finished run defines `metric`.
    pub(super) fn defines(&self, metric: Metric) -> bool {
        self.runs.iter().any(|(_, v)| v.is_defined(metric))
    }

    /// Mean over every finished run that defines `metric` (duplicates included), as the
    /// aggregates compute it.
    pub(super) fn run_mean(&self, metric: Metric) -> f64 {
        let values: Vec<f64> = self
            .runs
            .iter()
            .filter_map(|(_, v)| v.value(metric))
            .collect();
        mean(&values)
    }

    /// One value per seed that defines `metric`; on a duplicate seed the last run wins.
    pub(super) fn series(&self, metric: Metric) -> BTreeMap<u64, f64> {
        self.runs
            .iter()
            .filter_map(|(seed, v)| v.value(metric).map(|x| (*seed, x)))
            .collect()
    }
}

/// An algorithm left out of the gated rows, with its completion ratio.
#[derive(Clone, Debug, PartialEq)]
pub struct Exclusion {
    /// Algorithm name.
    pub algorithm: String,
    /// Its mean `jobs_done` over the best suited algorithm's.
    pub completion_ratio: f64,
}

/// The completion gate: the same for every gated metric, since it reads only `jobs_done`.
#[derive(Clone, Debug, PartialEq)]
pub struct Gate {
    /// Best mean `jobs_done` over ranked algorithms; nobody is excluded when it is ≤ 0.
    pub baseline: f64,
    /// Algorithms below [`COMPLETION_FLOOR`], by completion ratio descending (stable).
    pub excluded: Vec<Exclusion>,
}

impl Gate {
    fn excludes(&self, name: &str) -> bool {
        self.excluded.iter().any(|e| e.algorithm == name)
    }
}

/// Computes the completion gate.
///
/// Unsuited algorithms are listed if below the floor but never set the baseline; algorithms with
/// unfinished runs are neither (their means over the surviving seeds are not comparable).
pub fn gate(contestants: &[Contestant<'_>]) -> Gate {
    let baseline = contestants
        .iter()
        .filter(|c| c.standing == Standing::Ranked && c.has_values())
        .map(|c| c.run_mean(Metric::JobsDone))
        .fold(f64::NEG_INFINITY, f64::max);
    let baseline = if baseline.is_finite() { baseline } else { 0.0 };
    let mut excluded = Vec::new();
    if baseline > 0.0 {
        excluded = contestants
            .iter()
            .filter(|c| c.standing != Standing::Unfinished && c.has_values())
            .map(|c| Exclusion {
                algorithm: c.name.to_string(),
                completion_ratio: c.run_mean(Metric::JobsDone) / baseline,
            })
            .filter(|e| e.completion_ratio < COMPLETION_FLOOR)
            .collect();
        excluded.sort_by(|a, b| b.completion_ratio.total_cmp(&a.completion_ratio));
    }
    Gate { baseline, excluded }
}

/// Why a row has the winners it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A neutral metric: context only, never ranked.
    Neutral,
    /// Fewer than two eligible algorithms: nobody is crowned.
    TooFew,
    /// Every eligible mean is exactly zero: nobody is crowned.
    AllZero,
    /// One winner, or several that the data cannot separate.
    Ranked,
}

/// The judgement of one metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Why the winners are what they are.
    pub kind: Kind,
    /// Winners, best first; empty unless `kind` is [`Kind::Ranked`].
    pub winners: Vec<String>,
    /// On a gated row where the gate left exactly one eligible algorithm out of two or more.
    pub not_compared: Option<String>,
    /// The gate's exclusions on a gated row; empty otherwise.
    pub excluded: Vec<Exclusion>,
    /// On a latency row: ranked algorithms left out because a run failed the validity gate.
    pub invalid: Vec<String>,
}

impl Verdict {
    /// A verdict that crowns nobody and holds nothing: what a report that no longer shows its
    /// per-metric rows keeps in their place.
    pub fn blank() -> Verdict {
        Verdict {
            kind: Kind::Neutral,
            winners: Vec::new(),
            not_compared: None,
            excluded: Vec::new(),
            invalid: Vec::new(),
        }
    }
}

/// Judges one metric.
pub fn verdict(info: &MetricInfo, contestants: &[Contestant<'_>], gate: &Gate) -> Verdict {
    let excluded = if info.gated {
        gate.excluded.clone()
    } else {
        Vec::new()
    };
    let present = contestants.iter().filter(|c| c.has_values()).count();
    let invalid: Vec<String> = contestants
        .iter()
        .filter(|c| info.latency && !c.valid && c.has_values())
        .filter(|c| c.standing == Standing::Ranked)
        .map(|c| c.name.to_string())
        .collect();
    let eligible: Vec<&Contestant<'_>> = contestants
        .iter()
        .filter(|c| c.has_values() && c.standing == Standing::Ranked)
        .filter(|c| c.defines(info.metric))
        .filter(|c| !(info.gated && gate.excludes(c.name)))
        .filter(|c| !invalid.iter().any(|name| name == c.name))
        .collect();
    let not_compared =
        (info.gated && present >= 2 && eligible.len() == 1).then(|| eligible[0].name.to_string());
    let (kind, winners) = if info.direction == Direction::Neutral {
        (Kind::Neutral, Vec::new())
    } else if eligible.len() < 2 {
        (Kind::TooFew, Vec::new())
    } else {
        crown(info, &eligible)
    };
    Verdict {
        kind,
        winners,
        not_compared: if kind == Kind::Neutral {
            None
        } else {
            not_compared
        },
        excluded,
        invalid,
    }
}

/// Picks the winners among two or more eligible algorithms (§8.4 steps 4–9).
fn crown(info: &MetricInfo, eligible: &[&Contestant<'_>]) -> (Kind, Vec<String>) {
    let higher = info.direction == Direction::Higher;
    let series: Vec<BTreeMap<u64, f64>> = eligible.iter().map(|c| c.series(info.metric)).collect();
    let means: Vec<f64> = series
        .iter()
        .map(|s| mean(&s.values().copied().collect::<Vec<_>>()))
        .collect();
    if means.iter().all(|&m| m == 0.0) {
        return (Kind::AllZero, Vec::new());
    }
    // Metrics are finite by construction; should one not be, it ranks last instead of
    // breaking the order (`ranking` is total, so there is always a leader).
    let mut order: Vec<usize> = (0..means.len()).collect();
    order.sort_by(|&a, &b| ranking(higher, means[a], means[b]));
    let leader = order[0];
    let best = means[leader];
    if !best.is_finite() {
        return (Kind::TooFew, Vec::new());
    }
    let scale = if best.abs() > NEAR_ZERO {
        best.abs()
    } else {
        1.0
    };
    let winners = order
        .into_iter()
        .filter(|&i| {
            let gap = (means[i] - best).abs();
            let se = paired_standard_error(&series[i], &series[leader]);
            gap <= f64::max(TIE_TOLERANCE * scale, SIGNIFICANCE_K * se)
        })
        .map(|i| eligible[i].name);
    (Kind::Ranked, winners.map(str::to_string).collect())
}

/// Best first: the larger (`higher`) or smaller mean, and any non-finite mean after every finite
/// one. A total order whatever the values, so sorting by it never panics.
fn ranking(higher: bool, a: f64, b: f64) -> std::cmp::Ordering {
    let key = |x: f64| {
        if x.is_finite() {
            (0, if higher { -x } else { x })
        } else {
            (1, 0.0)
        }
    };
    let ((ka, xa), (kb, xb)) = (key(a), key(b));
    ka.cmp(&kb).then(xa.total_cmp(&xb))
}

/// Standard error of the per-seed differences over the seeds both series have; 0 for fewer
/// than two common seeds. Pairing by seed cancels the world's luck, which both runs share.
fn paired_standard_error(a: &BTreeMap<u64, f64>, leader: &BTreeMap<u64, f64>) -> f64 {
    let diffs: Vec<f64> = a
        .iter()
        .filter_map(|(seed, x)| leader.get(seed).map(|y| x - y))
        .collect();
    if diffs.is_empty() {
        return 0.0;
    }
    sample_stdev(&diffs) / (diffs.len() as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The verdict's confidence is written as its headline writes it: under `--seeds auto`
    /// each look's 98.3 %, not a rounded 98 %.
    #[test]
    fn the_rule_note_states_the_verdicts_confidence_as_the_headline_does() {
        let note = rule_confidence_note(10, 1.0 - 0.05 / 3.0);
        assert!(note.contains("not the verdict's 98.3 %"), "{note}");
        let note = rule_confidence_note(3, 0.95);
        assert!(note.contains("is 82 %, not the verdict's 95 %"), "{note}");
    }
    use crate::metrics::{self, CATALOGUE, Tally};

    /// A run whose metrics are all zero (and defined) except those given.
    fn values(set: &[(Metric, f64)]) -> MetricValues {
        let mut v = metrics::compute(&mut Tally::default(), &[]);
        for info in CATALOGUE {
            v.set(info.metric, 0.0);
        }
        for &(m, x) in set {
            v.set(m, x);
        }
        v
    }

    /// Hand-made runs: one `MetricValues` per seed, seeds 1, 2, 3, ….
    struct Field {
        entries: Vec<(&'static str, Standing, Vec<MetricValues>)>,
        invalid: Vec<&'static str>,
    }

    impl Field {
        fn new() -> Field {
            Field {
                entries: Vec::new(),
                invalid: Vec::new(),
            }
        }
        /// Marks `name`'s runs as failing the validity gate.
        fn invalid(mut self, name: &'static str) -> Field {
            self.invalid.push(name);
            self
        }
        fn add(mut self, name: &'static str, standing: Standing, runs: Vec<MetricValues>) -> Field {
            self.entries.push((name, standing, runs));
            self
        }
        /// Adds `name` with `metric` taking `xs` on seeds 1, 2, … and `jobs_done` = 1000.
        fn series(self, name: &'static str, metric: Metric, xs: &[f64]) -> Field {
            let runs = xs
                .iter()
                .map(|&x| values(&[(Metric::JobsDone, 1000.0), (metric, x)]))
                .collect();
            self.add(name, Standing::Ranked, runs)
        }
        fn contestants(&self) -> Vec<Contestant<'_>> {
            self.entries
                .iter()
                .map(|(name, standing, runs)| Contestant {
                    name,
                    standing: *standing,
                    valid: !self.invalid.contains(name),
                    runs: runs
                        .iter()
                        .enumerate()
                        .map(|(k, v)| (k as u64 + 1, v))
                        .collect(),
                })
                .collect()
        }
        fn judge(&self, metric: Metric) -> Verdict {
            let contestants = self.contestants();
            verdict(metric.info(), &contestants, &gate(&contestants))
        }
        fn winners(&self, metric: Metric) -> Vec<String> {
            self.judge(metric).winners
        }
    }

    /// A value clearly better than `base` for `metric`'s direction.
    fn better(info: &MetricInfo, base: f64) -> f64 {
        match info.direction {
            Direction::Higher => base * 3.0,
            _ => base / 3.0,
        }
    }

    #[test]
    fn near_idle_algorithm_cannot_win_any_gated_row() {
        let gated: Vec<&MetricInfo> = CATALOGUE.iter().filter(|m| m.gated).collect();
        assert_eq!(gated.len(), 35);
        for info in gated {
            let m = info.metric;
            let run = |done: f64, x: f64| values(&[(Metric::JobsDone, done), (m, x)]);
            let field = Field::new()
                .add("steady", Standing::Ranked, vec![run(1000.0, 10.0); 3])
                .add(
                    "idle",
                    Standing::Ranked,
                    vec![run(5.0, better(info, 10.0)); 3],
                )
                .add("close", Standing::Ranked, vec![run(950.0, 10.05); 3]);
            let v = field.judge(m);
            assert!(!v.winners.contains(&"idle".into()), "{}", info.name);
            assert!(!v.winners.is_empty(), "{}", info.name);
            assert_eq!(
                v.excluded,
                vec![Exclusion {
                    algorithm: "idle".into(),
                    completion_ratio: 0.005
                }],
                "{}",
                info.name
            );
            // Without a second eligible algorithm the survivor is named, not crowned.
            let pair = Field::new()
                .add("steady", Standing::Ranked, vec![run(1000.0, 10.0); 3])
                .add(
                    "idle",
                    Standing::Ranked,
                    vec![run(5.0, better(info, 10.0)); 3],
                );
            let v = pair.judge(m);
            assert_eq!(
                (v.kind, v.winners.len()),
                (Kind::TooFew, 0),
                "{}",
                info.name
            );
            assert_eq!(v.not_compared.as_deref(), Some("steady"), "{}", info.name);
        }
    }

    #[test]
    fn the_gate_is_strict_at_ninety_percent() {
        let run = |done: f64| values(&[(Metric::JobsDone, done), (Metric::Utilization, 0.5)]);
        let field = Field::new()
            .add("a", Standing::Ranked, vec![run(1000.0)])
            .add("b", Standing::Ranked, vec![run(900.0)])
            .add("c", Standing::Ranked, vec![run(899.0)])
            .add("d", Standing::Ranked, vec![run(100.0)]);
        let g = gate(&field.contestants());
        let names: Vec<&str> = g.excluded.iter().map(|e| e.algorithm.as_str()).collect();
        assert_eq!(names, ["c", "d"]);
        assert_eq!(field.winners(Metric::Utilization), ["a", "b"]);
    }

    #[test]
    fn ungated_rows_never_name_a_lone_survivor() {
        let run = |done: f64| values(&[(Metric::JobsDone, done)]);
        let field = Field::new()
            .add("solo", Standing::Ranked, vec![run(10.0)])
            .add("odd", Standing::Unsuited, vec![run(20.0)]);
        let v = field.judge(Metric::JobsDone);
        assert_eq!((v.kind, v.not_compared), (Kind::TooFew, None));
        // A gated row with the same field names the survivor (the unsuited one counts as present).
        let v = field.judge(Metric::Utilization);
        assert_eq!(v.not_compared.as_deref(), Some("solo"));
        // A report with a single algorithm never produces the note.
        let single = Field::new().add("solo", Standing::Ranked, vec![run(10.0)]);
        assert_eq!(single.judge(Metric::Utilization).not_compared, None);
    }

    #[test]
    fn a_metric_a_contestant_never_defines_is_not_ranked_for_it() {
        let m = Metric::AttemptsPerCompletedJob;
        let mut nothing = values(&[(Metric::JobsDone, 1000.0)]);
        nothing.undefine(m);
        let field = Field::new()
            .series("a", m, &[2.0, 2.1])
            .series("b", m, &[3.0, 3.1])
            .add("c", Standing::Ranked, vec![nothing.clone(), nothing]);
        // c's undefined 0 would otherwise be the best "attempts per completed job".
        assert_eq!(field.winners(m), ["a"]);
    }

    #[test]
    fn all_zero_row_crowns_nobody() {
        let m = Metric::AcquireWaitP50Ms;
        let field = Field::new()
            .series("a", m, &[0.0, 0.0])
            .series("b", m, &[0.0, 0.0]);
        let v = field.judge(m);
        assert_eq!((v.kind, v.winners.len()), (Kind::AllZero, 0));
        // Near zero the tolerance is absolute: 0.005 ties with 0, 0.02 does not.
        let near = Field::new()
            .series("zero", m, &[0.0])
            .series("tiny", m, &[0.005])
            .series("small", m, &[0.02]);
        assert_eq!(near.winners(m), ["zero", "tiny"]);
    }

    #[test]
    fn a_small_lead_wins_only_when_the_paired_test_separates_it() {
        let m = Metric::ThroughputRps;
        // Leader 1.3 % ahead on average; the per-seed differences swing widely: a tie.
        let noisy = Field::new()
            .series("lead", m, &[103.0, 99.6, 101.3])
            .series("chase", m, &[99.0, 101.0, 100.0]);
        assert_eq!(noisy.winners(m), ["lead", "chase"]);
        // The same means with the same 1.3 lead on every seed: the lead is real.
        let tight = Field::new()
            .series("lead", m, &[101.3, 102.3, 100.3])
            .series("chase", m, &[100.0, 101.0, 99.0]);
        assert_eq!(tight.winners(m), ["lead"]);
        // Within 1 % the tolerance ties them even with a perfectly consistent gap.
        let close =
            Field::new()
                .series("lead", m, &[100.9, 101.9])
                .series("chase", m, &[100.0, 101.0]);
        assert_eq!(close.winners(m), ["lead", "chase"]);
    }

    #[test]
    fn winners_are_sorted_best_first_and_challengers_face_the_leader_only() {
        let m = Metric::RefusalRate; // lower is better
        let field = Field::new()
            .series("b", m, &[0.2015])
            .series("a", m, &[0.2000])
            .series("c", m, &[0.2030]);
        // c is within 1 % of b but not of the leader a (0.2030 − 0.2000 > 0.002).
        assert_eq!(field.winners(m), ["a", "b"]);
    }

    #[test]
    fn unsuited_algorithms_are_never_ranked_nor_the_baseline() {
        let run = |done: f64, u: f64| values(&[(Metric::JobsDone, done), (Metric::Utilization, u)]);
        let field = Field::new()
            .add("odd", Standing::Unsuited, vec![run(2000.0, 0.99)])
            .add("a", Standing::Ranked, vec![run(1000.0, 0.5)])
            .add("b", Standing::Ranked, vec![run(950.0, 0.6)]);
        let g = gate(&field.contestants());
        assert_eq!(g.baseline, 1000.0);
        assert!(g.excluded.is_empty());
        assert_eq!(field.winners(Metric::Utilization), ["b"]);
        assert_eq!(field.winners(Metric::JobsDone), ["a"]);
        // Listed with its ratio when below the floor, like anyone else.
        let low = Field::new()
            .add("odd", Standing::Unsuited, vec![run(10.0, 0.99)])
            .add("a", Standing::Ranked, vec![run(1000.0, 0.5)]);
        assert_eq!(gate(&low.contestants()).excluded[0].algorithm, "odd");
    }

    #[test]
    fn algorithms_with_unfinished_runs_are_left_out_of_everything() {
        let run = |done: f64, u: f64| values(&[(Metric::JobsDone, done), (Metric::Utilization, u)]);
        let field = Field::new()
            .add("stuck", Standing::Unfinished, vec![run(5000.0, 0.99)])
            .add("a", Standing::Ranked, vec![run(1000.0, 0.5)])
            .add("b", Standing::Ranked, vec![run(100.0, 0.6)]);
        let g = gate(&field.contestants());
        assert_eq!(g.baseline, 1000.0);
        let names: Vec<&str> = g.excluded.iter().map(|e| e.algorithm.as_str()).collect();
        assert_eq!(names, ["b"]);
        assert_eq!(field.winners(Metric::JobsDone), ["a"]);
        assert_eq!(
            field.judge(Metric::Utilization).not_compared.as_deref(),
            Some("a")
        );
        // With no finished run at all it is not even present.
        let gone = Field::new().add("stuck", Standing::Unfinished, vec![]).add(
            "a",
            Standing::Ranked,
            vec![run(1000.0, 0.5)],
        );
        assert_eq!(gone.judge(Metric::Utilization).not_compared, None);
    }

    #[test]
    fn neutral_rows_never_crown() {
        for info in CATALOGUE
            .iter()
            .filter(|m| m.direction == Direction::Neutral)
        {
            let field = Field::new().series("a", info.metric, &[1.0, 2.0]).series(
                "b",
                info.metric,
                &[10.0, 20.0],
            );
            let v = field.judge(info.metric);
            assert_eq!(
                (v.kind, v.winners.len()),
                (Kind::Neutral, 0),
                "{}",
                info.name
            );
        }
    }

    #[test]
    fn an_invalid_algorithm_ranks_on_throughput_but_not_on_latency() {
        for info in CATALOGUE
            .iter()
            .filter(|m| m.direction != Direction::Neutral)
        {
            let m = info.metric;
            let good = if info.direction == Direction::Higher {
                30.0
            } else {
                10.0
            };
            let field = Field::new()
                .series("harness_bound", m, &[good, good, good])
                .series("honest", m, &[20.0, 20.0, 20.0])
                .series("other", m, &[21.0, 21.5, 22.0])
                .invalid("harness_bound");
            let verdict = field.judge(m);
            if info.latency {
                assert!(
                    !verdict.winners.contains(&"harness_bound".to_string()),
                    "{}",
                    info.name
                );
                assert_eq!(verdict.invalid, ["harness_bound"], "{}", info.name);
            } else {
                assert_eq!(verdict.winners, ["harness_bound"], "{}", info.name);
                assert!(verdict.invalid.is_empty());
            }
        }
    }

    #[test]
    fn duplicate_seeds_keep_the_last_run_in_the_paired_series() {
        let m = Metric::ThroughputRps;
        let v = |x: f64| values(&[(Metric::JobsDone, 1000.0), (m, x)]);
        let a = [v(50.0), v(100.0)];
        let b = [v(99.5)];
        let contestants = vec![
            Contestant {
                name: "a",
                standing: Standing::Ranked,
                valid: true,
                runs: vec![(1, &a[0]), (1, &a[1])],
            },
            Contestant {
                name: "b",
                standing: Standing::Ranked,
                valid: true,
                runs: vec![(1, &b[0])],
            },
        ];
        let verdict = verdict(m.info(), &contestants, &gate(&contestants));
        assert_eq!(verdict.winners, ["a", "b"]);
    }

    /// The ranking is total: a non-finite mean (which the engine never produces) ranks last
    /// and never panics, whichever direction, even when every mean is one.
    #[test]
    fn non_finite_means_rank_last_and_never_panic() {
        for m in [Metric::Utilization, Metric::RefusalRate] {
            let field = Field::new()
                .series("nan", m, &[f64::NAN])
                .series("inf", m, &[f64::INFINITY])
                .series("ninf", m, &[f64::NEG_INFINITY])
                .series("a", m, &[0.4]);
            assert_eq!(field.winners(m), ["a"], "{m:?}");
            let broken =
                Field::new()
                    .series("nan", m, &[f64::NAN])
                    .series("inf", m, &[f64::INFINITY]);
            assert_eq!(broken.judge(m).winners, Vec::<String>::new());
        }
        assert_eq!(ranking(true, 2.0, f64::NAN), std::cmp::Ordering::Less);
        assert_eq!(ranking(false, f64::NAN, 2.0), std::cmp::Ordering::Greater);
        assert_eq!(ranking(false, 1.0, 2.0), std::cmp::Ordering::Less);
        assert_eq!(ranking(true, 1.0, 2.0), std::cmp::Ordering::Greater);
    }
}
