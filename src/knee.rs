//! The concurrency knee: where adding load stops buying throughput and starts buying refusals
//! and tail latency.
//!
//! Owns two pure steps of `simbench sweep`. [`aggregate`] turns the runs made at each level of a
//! sweep (the same seeds at every level: common random numbers) into per-level summaries and
//! validity counts; [`find`] applies the knee rule to the per-seed readings. A level is a
//! closed loop's worker count or an open loop's arrival rate; this module only sees their order.
//!
//! The rule, with every threshold a named constant below. The first level is the baseline. The
//! step from level i−1 to level i *passes* when all three hold:
//!
//! - (a) throughput rises meaningfully: mean throughput at i ≥ mean at i−1 × (1 + [`MIN_RISE`]),
//!   and the mean per-seed rise exceeds [`RISE_SE_K`] paired standard errors of the per-seed
//!   differences (the report's winner rule: pairing by seed cancels the world's shared luck);
//! - (b) the refusal ratio (429s + read timeouts per request) has not left its baseline: mean at
//!   i ≤ baseline mean + max([`REFUSAL_SLACK`], [`REFUSAL_STDEV_K`] × baseline stdev);
//! - (c) service p99 has not jumped: mean at i ≤ [`SERVICE_JUMP`] × baseline mean.
//!
//! The knee is the last level of the unbroken run of passing steps from the baseline. If every
//! step passes, the knee is the last level and may lie higher. If the very first step fails, the
//! knee is the first level when that step still raised throughput (only the cost — refusals or
//! tail — broke it), and there is no knee in range when it did not (the curve is flat from the
//! start, so the range begins at or past the knee).
//!
//! It never runs a simulation, formats text, reads a clock or touches a file.

use std::collections::BTreeMap;

use crate::metrics::{Metric, sample_stdev};
use crate::report::stats::{Summary, mean};
use crate::report::{Run, rank, validity};
use crate::world::Validity;

/// (a) A step must raise mean throughput by at least this share of the previous level's.
pub const MIN_RISE: f64 = 0.05;
/// (a) …and by more than this many paired standard errors of the per-seed rises (the report's
/// [`rank::SIGNIFICANCE_K`]), so a rise the seeds disagree about is not counted.
pub const RISE_SE_K: f64 = rank::SIGNIFICANCE_K;
/// (b) The refusal ratio may exceed the baseline's mean by this much (absolute) at least.
pub const REFUSAL_SLACK: f64 = 0.02;
/// (b) …or by this many of the baseline's standard deviations across seeds, if that is larger.
pub const REFUSAL_STDEV_K: f64 = 2.0;
/// (c) Service p99 may grow to this multiple of the baseline's before it counts as a jump.
pub const SERVICE_JUMP: f64 = 1.5;

/// The metrics a sweep shows per level, in column order.
pub const SHOWN: [Metric; 5] = [
    Metric::ThroughputRps,
    Metric::RefusalTimeoutRatio,
    Metric::ServiceP99Ms,
    Metric::ObservedP99Ms,
    Metric::QueueShare,
];

/// One finished run's readings that the knee rule uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// Completed jobs per simulated second \[jobs/s\].
    pub throughput_rps: f64,
    /// 429 refusals plus read timeouts per request \[ratio\]; `None` when the run sent none.
    pub refusal_ratio: Option<f64>,
    /// p99 service time of served first attempts \[ms\]; `None` when none was served.
    pub service_p99_ms: Option<f64>,
}

/// One level's readings by seed; seeds whose run did not finish are absent.
pub type Readings = BTreeMap<u64, Point>;

/// The runs made at one level, and the validity thresholds of that level's world.
#[derive(Clone, Copy, Debug)]
pub struct LevelRuns<'a> {
    /// The runs, one per seed, in seed order.
    pub runs: &'a [Run],
    /// The world's validity gate at this level.
    pub validity: &'a Validity,
}

/// What one level shows.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelStats {
    /// Runs made.
    pub runs: usize,
    /// Summaries of [`SHOWN`] over the finished runs, in that order; empty if none finished.
    pub summaries: Vec<Option<Summary>>,
    /// `(seed, reason)` of every finished run the validity gate rejects.
    pub invalid: Vec<(u64, String)>,
    /// `(seed, reason)` of every run a budget stopped (a stalled run keeps its metrics).
    pub unfinished: Vec<(u64, String)>,
    /// `(seed, reason)` of every run that stalled: it counts with what it did until then.
    pub stalled: Vec<(u64, String)>,
    /// The knee rule's readings.
    pub readings: Readings,
}

impl LevelStats {
    /// The summary of `metric` (one of [`SHOWN`]), if any run finished.
    pub fn summary(&self, metric: Metric) -> Option<&Summary> {
        let at = SHOWN.iter().position(|&m| m == metric)?;
        self.summaries.get(at).and_then(Option::as_ref)
    }

    /// Runs that finished and passed the validity gate.
    pub fn valid(&self) -> usize {
        self.runs - self.unfinished.len() - self.invalid.len()
    }
}

/// The sweep-level view: each level's statistics and the knee.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    /// One entry per level, in level order.
    pub levels: Vec<LevelStats>,
    /// The knee rule's verdict.
    pub knee: Knee,
}

/// The objective a sweep judges its levels by: the world's when it states one (or the command
/// line does), else the highest throughput, since "how much load?" is a sweep's question and a
/// comparison's default, most jobs done, ties whenever every level finishes its jobs.
pub fn sweep_objective(world: &crate::world::World) -> crate::objective::Objective {
    let objective = world.objective();
    if objective.metric_written {
        return objective;
    }
    // A table that sets only a confidence, constraints or tie-breaks keeps the sweep's metric.
    crate::objective::Objective {
        metric: Metric::ThroughputRps,
        ..objective
    }
}

/// The level the objective prefers: each level is a contestant of the verdict's rule (the same
/// seeds at every level, so the comparison is paired), named by `names`.
///
/// It answers another question than the knee. The knee is the most load at which a harness
/// still measures the provider (refusals at their baseline, no jump in the service tail); the
/// best operating point is where the objective is best, which may lie past the knee when the
/// refusals it brings are retried harmlessly.
pub fn best_operating_point(
    objective: &crate::objective::Objective,
    names: &[String],
    levels: &[LevelRuns<'_>],
) -> crate::report::decision::Decision {
    let contestants: Vec<rank::Contestant<'_>> = names
        .iter()
        .zip(levels)
        .map(|(name, level)| {
            let runs: Vec<(u64, &crate::metrics::MetricValues)> = level
                .runs
                .iter()
                .filter_map(|r| r.metrics().map(|m| (r.seed, m)))
                .collect();
            rank::Contestant {
                name,
                standing: if runs.len() == level.runs.len() {
                    rank::Standing::Ranked
                } else {
                    rank::Standing::Unfinished
                },
                valid: runs
                    .iter()
                    .all(|(_, m)| validity::judge(m, level.validity).is_none()),
                runs,
            }
        })
        .collect();
    crate::report::decision::decide(objective, &contestants, |c| {
        let level = &levels[names.iter().position(|n| n == c.name).unwrap_or(0)];
        let stopped = level.runs.iter().filter(|r| r.metrics().is_none()).count();
        format!("{stopped} of {} runs stopped by a budget", level.runs.len())
    })
}

/// Summarises every level and finds the knee.
///
/// # Panics
/// As [`find`]: fewer than two levels, or no finished run at the first level.
pub fn aggregate(levels: &[LevelRuns<'_>]) -> Analysis {
    let levels: Vec<LevelStats> = levels.iter().map(level_stats).collect();
    let readings: Vec<Readings> = levels.iter().map(|l| l.readings.clone()).collect();
    Analysis {
        knee: find(&readings),
        levels,
    }
}

fn level_stats(level: &LevelRuns<'_>) -> LevelStats {
    let finished: Vec<(u64, &crate::metrics::MetricValues)> = level
        .runs
        .iter()
        .filter_map(|r| r.metrics().map(|m| (r.seed, m)))
        .collect();
    let summaries = SHOWN
        .iter()
        .map(|&metric| {
            let values: Vec<f64> = finished
                .iter()
                .filter_map(|(_, m)| m.value(metric))
                .collect();
            Summary::of(&values)
        })
        .collect();
    LevelStats {
        runs: level.runs.len(),
        summaries,
        invalid: finished
            .iter()
            .filter_map(|&(seed, m)| Some((seed, validity::judge(m, level.validity)?)))
            .collect(),
        unfinished: level
            .runs
            .iter()
            .filter_map(|r| match &r.outcome {
                crate::report::Outcome::Unfinished { kind, reason } => {
                    Some((r.seed, format!("{kind}: {reason}")))
                }
                crate::report::Outcome::Finished(_) | crate::report::Outcome::Stalled { .. } => {
                    None
                }
            })
            .collect(),
        stalled: level
            .runs
            .iter()
            .filter_map(|r| r.stall().map(|(_, reason)| (r.seed, reason.to_owned())))
            .collect(),
        readings: finished
            .iter()
            .map(|&(seed, m)| {
                let point = Point {
                    throughput_rps: m.get(Metric::ThroughputRps),
                    refusal_ratio: m.value(Metric::RefusalTimeoutRatio),
                    service_p99_ms: m.value(Metric::ServiceP99Ms),
                };
                (seed, point)
            })
            .collect(),
    }
}

/// What the rule concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finding {
    /// A knee inside the range: some step after it fails.
    Knee,
    /// The first step raised throughput but broke (b) or (c): the knee is the first level.
    FirstLevel,
    /// Every step passes: the knee is the last level and may lie higher.
    LastLevel,
    /// The first step did not raise throughput: the range starts at or past the knee.
    NoKnee,
}

/// The first level's values every step is compared with: means over the finished runs that
/// define each metric, as the sweep's table shows them (`None` when no run does: a run with
/// no served first attempt has no service p99, which is not 0 ms).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Baseline {
    /// Mean refusal ratio at the first level.
    pub refusal_mean: Option<f64>,
    /// Its sample standard deviation across seeds (0 with fewer than two).
    pub refusal_stdev: f64,
    /// Mean service p99 at the first level \[ms\].
    pub service_p99_ms: Option<f64>,
}

impl Baseline {
    fn of(readings: &Readings) -> Baseline {
        let refusals = defined(readings, |p| p.refusal_ratio);
        Baseline {
            refusal_mean: defined_mean(&refusals),
            refusal_stdev: sample_stdev(&refusals),
            service_p99_ms: defined_mean(&defined(readings, |p| p.service_p99_ms)),
        }
    }

    /// (b)'s ceiling on the mean refusal ratio; `None` without a baseline.
    pub fn refusal_limit(&self) -> Option<f64> {
        let slack = f64::max(REFUSAL_SLACK, REFUSAL_STDEV_K * self.refusal_stdev);
        self.refusal_mean.map(|m| m + slack)
    }

    /// (c)'s ceiling on the mean service p99 \[ms\]; `None` without a baseline.
    pub fn service_limit_ms(&self) -> Option<f64> {
        self.service_p99_ms.map(|m| SERVICE_JUMP * m)
    }
}

/// The values of one reading over the runs that define it.
fn defined(readings: &Readings, f: fn(&Point) -> Option<f64>) -> Vec<f64> {
    readings.values().filter_map(f).collect()
}

/// The mean of `values`, `None` when there are none.
fn defined_mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| mean(values))
}

/// Test (a) on one step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rise {
    /// Mean throughput at the lower level \[jobs/s\].
    pub from_rps: f64,
    /// Mean throughput at the higher level \[jobs/s\].
    pub to_rps: f64,
    /// Mean of the per-seed rises over the seeds both levels finished \[jobs/s\].
    pub paired_rise_rps: f64,
    /// Standard error of those per-seed rises; 0 with fewer than two pairs \[jobs/s\].
    pub paired_se_rps: f64,
    /// Seeds both levels finished: the pairs the rise is tested on (none fails the test).
    pub pairs: usize,
    /// Whether the rise is large enough and larger than the noise.
    pub passed: bool,
}

/// Test (b) or (c) on one step: a mean against a ceiling.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ceiling {
    /// The higher level's mean; `None` when none of its finished runs defines the metric.
    pub value: Option<f64>,
    /// The most it may be; `None` when no run of the first level defines it (no baseline).
    pub limit: Option<f64>,
    /// `value <= limit`; a test with either side undefined has nothing to compare and does
    /// not fail the step (the other tests judge it).
    pub passed: bool,
}

impl Ceiling {
    /// Whether both sides are defined, so the test compared something.
    pub fn tested(&self) -> bool {
        self.value.is_some() && self.limit.is_some()
    }
}

/// The three tests on the step into one level; `None` fields mean that level has no finished run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// (a) throughput rises meaningfully.
    pub rise: Option<Rise>,
    /// (b) the refusal ratio stays at its baseline.
    pub refusal: Option<Ceiling>,
    /// (c) service p99 has not jumped.
    pub service: Option<Ceiling>,
}

impl Step {
    /// Whether all three tests pass (a level without finished runs fails them all).
    pub fn passed(&self) -> bool {
        self.rise.is_some_and(|r| r.passed)
            && self.refusal.is_some_and(|c| c.passed)
            && self.service.is_some_and(|c| c.passed)
    }
}

/// The knee rule's verdict over a whole sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Knee {
    /// What was found.
    pub finding: Finding,
    /// Index of the knee level, which is also the recommended level.
    pub level: usize,
    /// The first level's values.
    pub baseline: Baseline,
    /// `steps[i]` is the step from level i to level i + 1.
    pub steps: Vec<Step>,
}

impl Knee {
    /// The step that decided the verdict: the first failing one, or the last one when every
    /// step passes.
    pub fn deciding_step(&self) -> (usize, &Step) {
        let i = self.level.min(self.steps.len() - 1);
        (i, &self.steps[i])
    }

    /// Whether the recommendation is a fallback rather than a knee the data shows.
    pub fn flagged(&self) -> bool {
        self.finding == Finding::NoKnee
    }
}

/// Applies the knee rule to the per-seed readings of each level, in level order.
///
/// # Panics
/// Panics with fewer than two levels or when the first level has no reading: there is then no
/// step to judge or no baseline to judge it against (the CLI checks both first).
pub fn find(levels: &[Readings]) -> Knee {
    assert!(levels.len() >= 2, "a knee needs at least two levels");
    assert!(
        !levels[0].is_empty(),
        "the first level needs a finished run"
    );
    let baseline = Baseline::of(&levels[0]);
    let steps: Vec<Step> = levels
        .windows(2)
        .map(|pair| step(&pair[0], &pair[1], &baseline))
        .collect();
    let passing = steps.iter().take_while(|s| s.passed()).count();
    let finding = if passing == steps.len() {
        Finding::LastLevel
    } else if passing > 0 {
        Finding::Knee
    } else if steps[0].rise.is_some_and(|r| r.passed) {
        Finding::FirstLevel
    } else {
        Finding::NoKnee
    };
    Knee {
        finding,
        level: passing,
        baseline,
        steps,
    }
}

fn step(lower: &Readings, higher: &Readings, baseline: &Baseline) -> Step {
    if higher.is_empty() {
        return Step {
            rise: None,
            refusal: None,
            service: None,
        };
    }
    let means = |f: fn(&Point) -> Option<f64>| defined_mean(&defined(higher, f));
    let refusal = means(|p| p.refusal_ratio);
    let service = means(|p| p.service_p99_ms);
    Step {
        rise: (!lower.is_empty()).then(|| rise(lower, higher)),
        refusal: Some(ceiling(refusal, baseline.refusal_limit())),
        service: Some(ceiling(service, baseline.service_limit_ms())),
    }
}

fn ceiling(value: Option<f64>, limit: Option<f64>) -> Ceiling {
    Ceiling {
        value,
        limit,
        passed: match (value, limit) {
            (Some(v), Some(l)) => v <= l,
            _ => true,
        },
    }
}

/// Test (a): a rise of at least [`MIN_RISE`] that the per-seed differences agree on.
fn rise(lower: &Readings, higher: &Readings) -> Rise {
    let throughput = |r: &Readings| mean(&r.values().map(|p| p.throughput_rps).collect::<Vec<_>>());
    let (from_rps, to_rps) = (throughput(lower), throughput(higher));
    let diffs: Vec<f64> = higher
        .iter()
        .filter_map(|(seed, hi)| Some(hi.throughput_rps - lower.get(seed)?.throughput_rps))
        .collect();
    let paired_rise_rps = mean(&diffs);
    let paired_se_rps = if diffs.is_empty() {
        0.0
    } else {
        sample_stdev(&diffs) / (diffs.len() as f64).sqrt()
    };
    let passed = !diffs.is_empty()
        && to_rps >= from_rps * (1.0 + MIN_RISE)
        && paired_rise_rps > RISE_SE_K * paired_se_rps;
    Rise {
        from_rps,
        to_rps,
        paired_rise_rps,
        paired_se_rps,
        pairs: diffs.len(),
        passed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A level from `(throughput, refusal ratio, service p99)` per seed, seeds 1, 2, 3, ….
    fn level(points: &[(f64, f64, f64)]) -> Readings {
        points
            .iter()
            .enumerate()
            .map(|(i, &(throughput_rps, refusal_ratio, service_p99_ms))| {
                let point = Point {
                    throughput_rps,
                    refusal_ratio: Some(refusal_ratio),
                    service_p99_ms: Some(service_p99_ms),
                };
                (i as u64 + 1, point)
            })
            .collect()
    }

    /// A level whose three seeds read `throughput ± 0.01`, the given refusal ratio and p99.
    fn steady(throughput: f64, refusal: f64, service_ms: f64) -> Readings {
        level(&[
            (throughput - 0.01, refusal, service_ms),
            (throughput, refusal, service_ms),
            (throughput + 0.01, refusal, service_ms),
        ])
    }

    /// The finding, the knee's index and which tests failed on the deciding step (a, b, c).
    #[track_caller]
    fn check(levels: &[Readings], finding: Finding, knee: usize, failed: &str) {
        let verdict = find(levels);
        let (_, step) = verdict.deciding_step();
        let mut fails = String::new();
        if !step.rise.is_some_and(|r| r.passed) {
            fails.push('a');
        }
        if !step.refusal.is_some_and(|c| c.passed) {
            fails.push('b');
        }
        if !step.service.is_some_and(|c| c.passed) {
            fails.push('c');
        }
        assert_eq!(
            (verdict.finding, verdict.level, fails.as_str()),
            (finding, knee, failed),
            "{verdict:#?}"
        );
    }

    #[test]
    fn a_clean_knee_in_the_middle() {
        let levels = [
            steady(1.0, 0.0, 800.0),
            steady(1.9, 0.0, 820.0),
            steady(3.5, 0.005, 850.0),
            steady(3.6, 0.15, 900.0), // flat, and refusals start: past the knee
            steady(3.6, 0.40, 1500.0),
        ];
        check(&levels, Finding::Knee, 2, "ab");
    }

    #[test]
    fn no_knee_in_range_when_throughput_is_flat_from_the_start() {
        let levels = [
            steady(2.0, 0.3, 900.0),
            steady(2.02, 0.3, 910.0),
            steady(2.01, 0.5, 1400.0),
        ];
        check(&levels, Finding::NoKnee, 0, "a");
        assert!(find(&levels).flagged());
    }

    #[test]
    fn knee_at_the_first_level_when_the_first_rise_costs_refusals() {
        let levels = [
            steady(1.0, 0.01, 800.0),
            steady(1.6, 0.20, 820.0),
            steady(2.0, 0.45, 830.0),
        ];
        check(&levels, Finding::FirstLevel, 0, "b");
        assert!(!find(&levels).flagged());
    }

    #[test]
    fn knee_at_the_last_level_when_every_step_passes() {
        let levels = [
            steady(1.0, 0.0, 800.0),
            steady(2.0, 0.0, 800.0),
            steady(4.0, 0.01, 850.0),
        ];
        check(&levels, Finding::LastLevel, 2, "");
    }

    #[test]
    fn a_noisy_rise_is_not_significant() {
        // Mean throughput rises 10 %, but one seed falls: 2 paired SEs exceed the mean rise.
        let levels = [
            level(&[(1.0, 0.0, 800.0), (1.0, 0.0, 800.0), (1.0, 0.0, 800.0)]),
            level(&[(2.0, 0.0, 800.0), (2.0, 0.0, 800.0), (2.0, 0.0, 800.0)]),
            level(&[(2.9, 0.0, 800.0), (1.4, 0.0, 800.0), (2.3, 0.0, 800.0)]),
        ];
        check(&levels, Finding::Knee, 1, "a");
        let rise = find(&levels).steps[1].rise.unwrap();
        assert!(rise.to_rps >= rise.from_rps * (1.0 + MIN_RISE));
        assert!(rise.paired_rise_rps <= RISE_SE_K * rise.paired_se_rps);
    }

    #[test]
    fn a_refusal_jump_ends_the_rise() {
        // Throughput still climbs, but the refusal ratio leaves baseline + 0.02.
        let levels = [
            steady(1.0, 0.01, 800.0),
            steady(2.0, 0.02, 800.0),
            steady(3.0, 0.029, 800.0),
            steady(4.0, 0.031, 800.0),
        ];
        check(&levels, Finding::Knee, 2, "b");
    }

    #[test]
    fn a_service_p99_jump_ends_the_rise() {
        let levels = [
            steady(1.0, 0.0, 1000.0),
            steady(2.0, 0.0, 1499.0),
            steady(3.0, 0.0, 1501.0),
        ];
        check(&levels, Finding::Knee, 1, "c");
    }

    #[test]
    fn the_refusal_tolerance_widens_with_a_noisy_baseline() {
        let noisy = level(&[(1.0, 0.0, 800.0), (1.0, 0.1, 800.0), (1.0, 0.2, 800.0)]);
        let baseline = Baseline::of(&noisy);
        assert!((baseline.refusal_limit().unwrap() - (0.1 + 2.0 * 0.1)).abs() < 1e-12);
    }

    #[test]
    fn a_level_without_finished_runs_fails_its_step() {
        let levels = [
            steady(1.0, 0.0, 800.0),
            steady(2.0, 0.0, 800.0),
            Readings::new(),
            steady(4.0, 0.0, 800.0),
        ];
        check(&levels, Finding::Knee, 1, "abc");
    }

    /// A run with no served first attempt has no service p99: the baseline and a level's mean
    /// are over the runs that define it, as the table's are, never with a 0 ms in their place.
    #[test]
    fn an_undefined_service_p99_is_left_out_not_read_as_zero() {
        let with_gap = |points: &[(f64, Option<f64>)]| -> Readings {
            points
                .iter()
                .enumerate()
                .map(|(i, &(throughput_rps, service_p99_ms))| {
                    let point = Point {
                        throughput_rps,
                        refusal_ratio: Some(0.0),
                        service_p99_ms,
                    };
                    (i as u64 + 1, point)
                })
                .collect()
        };
        // The baseline's mean is over the three seeds that define it: 1,000 ms, limit 1,500.
        let low = with_gap(&[
            (1.0, Some(900.0)),
            (1.01, None),
            (0.99, Some(1100.0)),
            (1.0, Some(1000.0)),
        ]);
        let high = with_gap(&[
            (2.0, Some(1400.0)),
            (2.01, None),
            (1.99, None),
            (2.0, Some(1400.0)),
        ]);
        let knee = find(&[low.clone(), high]);
        assert_eq!(knee.baseline.service_p99_ms, Some(1000.0));
        let service = knee.steps[0].service.unwrap();
        assert_eq!((service.value, service.limit), (Some(1400.0), Some(1500.0)));
        assert!(service.passed && service.tested());
        assert_eq!(knee.finding, Finding::LastLevel);
        // No baseline at all: (c) has nothing to compare and leaves the step to (a) and (b).
        let none = with_gap(&[(1.0, None), (1.0, None), (1.0, None)]);
        let knee = find(&[none, steady(2.0, 0.0, 2116.0)]);
        let service = knee.steps[0].service.unwrap();
        assert_eq!(
            (service.limit, service.passed, service.tested()),
            (None, true, false)
        );
        assert_eq!(knee.finding, Finding::LastLevel);
    }
}
