//! The sweep's outputs: the terminal table with its verdict, the JSON document and the CSV rows.
//!
//! Owns how a [`crate::knee::Analysis`] reads: one row per level, the knee row marked, and the
//! reasons — the deciding step's three tests with their numbers — in every output. The table
//! is a `String`; the JSON and CSV, which grow with levels × seeds, are streamed into any
//! `io::Write` run by run. Where they go is the caller's decision. Numbers are computed in
//! [`crate::knee`] from unrounded values; rounding happens here only.

use std::io::{self, Write};

use schemars::{JsonSchema, SchemaGenerator, json_schema};
use serde::Serialize;
use tabled::builder::Builder;
use tabled::settings::object::{Columns, Rows};
use tabled::settings::{Alignment, Style};

use crate::knee::{
    self, Analysis, Ceiling, Finding, LevelStats, MIN_RISE, REFUSAL_SLACK, REFUSAL_STDEV_K,
    RISE_SE_K, Rise, SERVICE_JUMP, SHOWN, Step,
};
use crate::metrics::{CATALOGUE, Metric, undefined_reason};
use crate::report::csv::{field as csv_field, outcome_cells};
use crate::report::decision::{Decision, Outcome as DecisionOutcome};
use crate::report::format::{self, fixed, round6, thousands};
use crate::report::json::Ordered;
use crate::report::{Outcome, Run};
use crate::text::plural;

/// What a sweep varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knob {
    /// A closed loop's worker count.
    Concurrency,
    /// An open loop's arrival rate \[jobs/s\].
    Rate,
}

impl Knob {
    /// The scenario key the level replaces, used as a column and JSON name.
    pub fn name(self) -> &'static str {
        match self {
            Knob::Concurrency => "concurrency",
            Knob::Rate => "rate_per_s",
        }
    }

    /// A level as the user wrote it: `8`, `2.5`.
    pub fn spell(self, level: f64) -> String {
        match self {
            Knob::Concurrency => format!("{level:.0}"),
            // Plain decimals where they stay short; an exponent past them (1e-300 has 300 zeros).
            Knob::Rate if (1e-4..1e15).contains(&level) => format!("{level}"),
            Knob::Rate => format!("{level:e}"),
        }
    }

    /// The chart's axis label, with the unit: `concurrency [workers]`, `rate_per_s [jobs/s]`.
    pub fn axis_label(self) -> String {
        match self {
            Knob::Concurrency => format!("{} [workers]", self.name()),
            Knob::Rate => format!("{} [jobs/s]", self.name()),
        }
    }

    /// The word in "recommended …".
    fn noun(self) -> &'static str {
        match self {
            Knob::Concurrency => "concurrency",
            Knob::Rate => "rate",
        }
    }

    fn json(self, level: f64) -> serde_json::Value {
        match self {
            Knob::Concurrency => serde_json::Value::from(level as u64),
            // A level names the runs: written as given, never rounded into another (1e-9).
            Knob::Rate => serde_json::Value::from(level),
        }
    }
}

/// Everything the outputs show.
pub struct SweepView<'a> {
    /// What the levels are.
    pub knob: Knob,
    /// The levels, increasing.
    pub levels: &'a [f64],
    /// The runs of each level, in seed order.
    pub runs: &'a [Vec<Run>],
    /// Per-level statistics and the knee.
    pub analysis: &'a Analysis,
    /// Scenario name.
    pub scenario: &'a str,
    /// Hash of the world before any level was applied.
    pub world_hash: String,
    /// Hash of each level's world.
    pub level_hashes: Vec<String>,
    /// The swept algorithm.
    pub algorithm: &'a str,
    /// The seeds, the same at every level.
    pub seeds: &'a [u64],
    /// Jobs per run.
    pub jobs: u32,
    /// The random-number scheme's name.
    pub rng: &'static str,
    /// Real seconds the sweep took.
    pub wall_s: f64,
    /// Whether each catalogue metric applies to the world (the levels never change that).
    pub applies: Vec<bool>,
    /// The level the world's objective prefers ([`knee::best_operating_point`]), its
    /// contestants named as [`SweepView::level_name`] spells them.
    pub best: &'a Decision,
}

impl SweepView<'_> {
    fn spell(&self, i: usize) -> String {
        Self::level_name(self.knob, self.levels[i])
    }

    /// `concurrency 20`: a level as the text names it (and the operating point's verdict).
    pub fn level_name(knob: Knob, level: f64) -> String {
        format!("{} {}", knob.name(), knob.spell(level))
    }

    /// The index of the level the operating point's verdict picks, if it picks one.
    fn best_level(&self) -> Option<usize> {
        let pick = match &self.best.outcome {
            DecisionOutcome::Decided { pick, .. } | DecisionOutcome::Alone { pick } => pick,
            _ => return None,
        };
        (0..self.levels.len()).find(|&i| self.spell(i) == *pick)
    }
}

/// The table, then the notes and the verdict with its reasons.
pub fn terminal(view: &SweepView<'_>) -> String {
    let mut builder = Builder::default();
    builder.push_record(header(view));
    for i in 0..view.levels.len() {
        builder.push_record(row(view, i));
    }
    let mut table = builder.build();
    table.with(Style::rounded());
    table.modify(Columns::new(0..SHOWN.len() + 2), Alignment::right());
    table.modify(Rows::first(), Alignment::center());
    let mut out = table.to_string();
    out.push('\n');
    for line in notes(view)
        .into_iter()
        .chain(reasons(view))
        .chain(operating_point(view))
    {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The best operating point for the objective, and how it differs from the knee.
pub fn operating_point(view: &SweepView<'_>) -> Vec<String> {
    let best = view.best;
    // The contestants of a sweep are levels, not strategies.
    let nothing_meets =
        best.outcome == crate::report::decision::Outcome::Nothing && !best.breaches.is_empty();
    let headline = if nothing_meets {
        "no decision: no level meets every constraint".to_owned()
    } else {
        best.headline()
    };
    let mut lines = vec![
        format!("best operating point: {}", crate::text::escape(&headline)),
        format!("  {}", best.objective_line()),
        format!("  {}", best.notes().join("; ")),
    ];
    lines.retain(|l| !l.trim().is_empty());
    let knee = view.analysis.knee.level;
    let explanation = match view.best_level() {
        Some(level) if level == knee && view.analysis.knee.finding == Finding::NoKnee => {
            let remedy = match unmeasured_first_step(view) {
                Some(_) => format!(
                    "no run finished at {}; give the runs more budget or add levels between",
                    view.spell(1)
                ),
                None if unloaded_first_step(view).is_some() => {
                    "rerun with higher levels to find one".to_string()
                }
                None => "rerun with lower levels to find one".to_string(),
            };
            format!(
                "  the fallback level ({}) is also the best operating point for the objective, \
                 but it is not a measured knee: {remedy}.",
                view.spell(knee)
            )
        }
        Some(level) if level == knee => {
            let stats = &view.analysis.levels[knee];
            if stats.invalid.is_empty() {
                "  the knee is also the best operating point: the load that keeps the \
                 measurement honest is the load the objective prefers."
                    .to_string()
            } else {
                // The knee's tests read the provider (refusals, service p99); a queue in the
                // harness, an open loop's above all, grows without moving either.
                format!(
                    "  the knee is also the best operating point, but {} of its {} runs fail the \
                     validity gate: the harness's own queue holds the observed tail there, so \
                     it measures the harness, not the provider; benchmark at a level whose runs \
                     are valid.",
                    stats.invalid.len(),
                    stats.runs
                )
            }
        }
        Some(level) => {
            let mean = |i: usize, metric: Metric| {
                view.analysis.levels[i]
                    .summary(metric)
                    .map_or_else(|| "n/a".to_string(), |s| number(metric, s.mean))
            };
            let refused = |i: usize| {
                view.analysis.levels[i]
                    .summary(Metric::RefusalTimeoutRatio)
                    .map_or(0.0, |s| s.mean)
            };
            let (side, trade) = if level > knee && refused(level) > refused(knee) {
                (
                    "past",
                    "the extra load the objective wants comes with the refusals and tail a \
                     measurement must not include, and a workload that retries them can afford",
                )
            } else if level > knee {
                (
                    "past",
                    "the extra load the objective wants comes with the tail of a saturating \
                     service, which a measurement must not include and a workload can afford",
                )
            } else {
                (
                    "below",
                    "more load than that no longer pays off for the objective",
                )
            };
            format!(
                "  why they differ: the knee ({}) is the most load at which the harness still \
                 measures the provider (throughput rising, refusals at their baseline, no jump \
                 in service p99); the objective prefers {}, {side} the knee: throughput {} \
                 against {} jobs/s, 429s + timeouts {} against {} per request, service p99 {} \
                 against {} ms — {trade}. Benchmark the provider at the knee; run the workload \
                 at the best operating point.",
                view.spell(knee),
                view.spell(level),
                mean(level, Metric::ThroughputRps),
                mean(knee, Metric::ThroughputRps),
                mean(level, Metric::RefusalTimeoutRatio),
                mean(knee, Metric::RefusalTimeoutRatio),
                mean(level, Metric::ServiceP99Ms),
                mean(knee, Metric::ServiceP99Ms),
            )
        }
        None if nothing_meets => "  no level meets every constraint (the breaches are named \
                 above): relax the constraint, or sweep other levels; more seeds will not change \
                 that."
            .to_string(),
        None => match &best.outcome {
            crate::report::decision::Outcome::Undecided { levels }
                if crate::report::decision::equal_on_every_seed(levels) =>
            {
                "  no level is the best operating point: the levels the objective cannot \
                 separate are named above, equal on every seed; more seeds may not separate \
                 them either."
            }
            _ => {
                "  no level is the best operating point yet: the levels the objective cannot \
                 separate are named above; run more seeds."
            }
        }
        .to_string(),
    };
    lines.push(explanation);
    lines
}

fn header(view: &SweepView<'_>) -> Vec<String> {
    let mut cells = vec![view.knob.name().to_string()];
    cells.extend(SHOWN.iter().map(|&m| column_title(m).to_string()));
    cells.extend(["valid".into(), "step (a b c)".into(), String::new()]);
    cells
}

fn column_title(metric: Metric) -> &'static str {
    match metric {
        Metric::ThroughputRps => "throughput [jobs/s]",
        Metric::RefusalTimeoutRatio => "429+timeout [ratio]",
        Metric::ServiceP99Ms => "service p99 [ms]",
        Metric::ObservedP99Ms => "observed p99 [ms]",
        Metric::QueueShare => "queue share",
        other => other.info().name,
    }
}

fn row(view: &SweepView<'_>, i: usize) -> Vec<String> {
    let level = &view.analysis.levels[i];
    let mut cells = vec![view.knob.spell(view.levels[i])];
    cells.extend(SHOWN.iter().map(|&m| match level.summary(m) {
        // One seed has no sample deviation: "± 0" would read as a measured spread of zero.
        Some(s) if s.n < 2 => format!("{} ± —", number(m, s.mean)),
        Some(s) => format!("{} ± {}", number(m, s.mean), number(m, s.stdev)),
        None => "—".into(),
    }));
    cells.push(valid_cell(level));
    cells.push(match i {
        0 => "baseline".into(),
        _ => step_cell(&view.analysis.knee.steps[i - 1]),
    });
    cells.push(knee_mark(view, i).to_string());
    cells
}

fn valid_cell(level: &LevelStats) -> String {
    let mut text = format!("{}/{}", level.valid(), level.runs);
    if !level.unfinished.is_empty() {
        text.push_str(&format!(" ({} unfinished)", level.unfinished.len()));
    }
    if !level.stalled.is_empty() {
        text.push_str(&format!(" ({} stalled)", level.stalled.len()));
    }
    text
}

fn step_cell(step: &Step) -> String {
    if step.passed() {
        "pass".into()
    } else {
        format!("fail {}", failed_tests(step).join(" "))
    }
}

fn knee_mark(view: &SweepView<'_>, i: usize) -> &'static str {
    let knee = &view.analysis.knee;
    match (i == knee.level, knee.finding) {
        (false, _) => "",
        (true, Finding::Knee | Finding::FirstLevel) => "◀ knee",
        (true, Finding::LastLevel) => "◀ knee (or higher)",
        (true, Finding::NoKnee) => "◀ fallback",
    }
}

/// `a`, `b`, `c` for each test the step fails (a level without finished runs fails all).
fn failed_tests(step: &Step) -> Vec<&'static str> {
    let mut failed = Vec::new();
    if !step.rise.is_some_and(|r| r.passed) {
        failed.push("a");
    }
    if !step.refusal.is_some_and(|c| c.passed) {
        failed.push("b");
    }
    if !step.service.is_some_and(|c| c.passed) {
        failed.push("c");
    }
    failed
}

/// A metric value with the precision the sweep table uses.
fn number(metric: Metric, x: f64) -> String {
    match metric.info().unit {
        "ms" => thousands(x, 0),
        "jobs/s" => fixed(x, 3),
        _ => fixed(x, 4),
    }
}

/// What ran and how to read the table, then every invalid or unfinished run.
fn notes(view: &SweepView<'_>) -> Vec<String> {
    let mut lines = vec![
        format!(
            "{} · {} · {} at every level · {} jobs · rng {} · wall {} s · world {}",
            crate::text::escape(view.scenario),
            crate::text::escape(view.algorithm),
            seed_list(view.seeds),
            view.jobs,
            view.rng,
            fixed(view.wall_s, 1),
            view.world_hash
        ),
        format!(
            "mean ± sample stdev over seeds. step = the move from the row above: (a) throughput ≥ +{} % and > {} paired SE of the per-seed rises; (b) 429+timeout ≤ baseline + max({}, {} × baseline stdev); (c) service p99 ≤ {} × baseline. valid = runs passing the validity gate.",
            fixed(MIN_RISE * 100.0, 0),
            fixed(RISE_SE_K, 0),
            REFUSAL_SLACK,
            fixed(REFUSAL_STDEV_K, 0),
            SERVICE_JUMP,
        ),
    ];
    lines.extend(run_notes(view));
    lines
}

/// One line per level with invalid or stalled runs, and one per unfinished run: what the
/// level's figures leave out or count only in part.
pub fn run_notes(view: &SweepView<'_>) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, level) in view.analysis.levels.iter().enumerate() {
        if let Some((_, first)) = level.invalid.first() {
            lines.push(format!(
                "INVALID at {}: {} of {} runs — {first}",
                view.spell(i),
                level.invalid.len(),
                level.runs
            ));
        }
        for (seed, reason) in &level.unfinished {
            lines.push(format!(
                "unfinished at {}: seed {seed}: {reason}",
                view.spell(i)
            ));
        }
        if let Some((seed, first)) = level.stalled.first() {
            lines.push(format!(
                "stalled at {}: {} of {} runs, each counted with what it did until the stall — seed {seed}: {first}",
                view.spell(i),
                level.stalled.len(),
                level.runs
            ));
        }
    }
    lines
}

/// The verdict, the recommendation and the deciding step's three tests with their numbers.
pub fn reasons(view: &SweepView<'_>) -> Vec<String> {
    let knee = &view.analysis.knee;
    let (s, step) = knee.deciding_step();
    let (lower, higher) = (view.spell(s), view.spell(s + 1));
    let at = view.spell(knee.level);
    let noun = view.knob.noun();
    let value = view.knob.spell(view.levels[knee.level]);
    let failed = failed_tests(step).join(", ");
    let mut lines = match knee.finding {
        Finding::Knee | Finding::FirstLevel => vec![
            if knee.finding == Finding::Knee {
                format!(
                    "knee: {at} — the last level of the unbroken run of passing steps from the baseline ({}).",
                    view.spell(0)
                )
            } else {
                format!(
                    "knee at the first level: {at} — the step to {higher} raised throughput but fails ({failed}); the knee may lie between the two: add levels there."
                )
            },
            format!(
                "recommended {noun}: {value} — beyond it, the step to {higher} fails ({failed}): {}.",
                costs(step, &view.analysis.levels[s + 1])
            ),
        ],
        Finding::LastLevel => vec![
            format!(
                "knee at the last level: {at} — every step passes, so it may lie higher: extend the range."
            ),
            format!(
                "recommended {noun}: {value} — the highest level measured; every step up to it paid off."
            ),
        ],
        Finding::NoKnee => vec![
            match unmeasured_first_step(view) {
                Some((seed, reason)) => format!(
                    "no knee found: no run finished at {higher} (seed {seed}: {reason}), so the first step could not be judged: give the runs more budget (--wall-budget, --memory-budget), fewer jobs, or levels between {lower} and {higher}."
                ),
                None => match unloaded_first_step(view) {
                    Some(rps) => format!(
                        "no knee in range: throughput does not rise meaningfully from {lower} to {higher}, yet the provider keeps up with the arrivals at {higher} ({} jobs/s): rates this low bring too few jobs within the run to tell apart: rerun with higher levels.",
                        fixed(rps, 6)
                    ),
                    None => format!(
                        "no knee in range: throughput does not rise meaningfully from {lower} to {higher}, so the range starts at or past the knee: rerun with lower levels."
                    ),
                },
            },
            format!(
                "recommended {noun}: {value} (FLAGGED: the first level as a fallback, not a measured knee)."
            ),
        ],
    };
    lines.push(format!("deciding step, {lower} → {higher}:"));
    lines.push(format!(
        "  (a) throughput rises meaningfully: {}",
        rise_text(step.rise.as_ref(), &higher)
    ));
    lines.push(format!(
        "  (b) 429+timeout ratio stays at its baseline: {}",
        refusal_text(step.refusal.as_ref(), knee, &higher)
    ));
    lines.push(format!(
        "  (c) service p99 has not jumped: {}",
        service_text(step.service.as_ref(), knee, &higher)
    ));
    let recommended = &view.analysis.levels[knee.level];
    if let Some((_, first)) = recommended.invalid.first() {
        lines.push(format!(
            "warning: {} of {} runs at the recommended level fail the validity gate — {first}",
            recommended.invalid.len(),
            recommended.runs
        ));
    }
    lines
}

/// The first unfinished run of the second level when none of its runs finished: the first
/// step then measured nothing, which says nothing about where the knee lies.
fn unmeasured_first_step<'v>(view: &'v SweepView<'_>) -> Option<&'v (u64, String)> {
    let step = view.analysis.knee.steps.first()?;
    if step.rise.is_some() {
        return None;
    }
    view.analysis.levels.get(1)?.unfinished.first()
}

/// The second level's mean throughput when an open loop's first step is flat although the
/// provider kept up with that level's arrivals (at least half its rate served): the rates were
/// too low for the runs to see, not past the knee.
fn unloaded_first_step(view: &SweepView<'_>) -> Option<f64> {
    if view.knob != Knob::Rate {
        return None;
    }
    let rps = view
        .analysis
        .levels
        .get(1)?
        .summary(Metric::ThroughputRps)?
        .mean;
    (rps >= 0.5 * view.levels[1]).then_some(rps)
}

/// What the extra load of a failing step bought instead of (or along with) throughput; when no
/// run at the higher level finished, that nothing was measured there.
fn costs(step: &Step, higher: &LevelStats) -> String {
    if step.rise.is_none() && step.refusal.is_none() && step.service.is_none() {
        if let Some((seed, reason)) = higher.unfinished.first() {
            return format!(
                "no run finished there, so nothing was measured (seed {seed}: {reason})"
            );
        }
    }
    let mut prices = Vec::new();
    if !step.refusal.is_some_and(|c| c.passed) {
        prices.push("refusals and timeouts above the baseline");
    }
    if !step.service.is_some_and(|c| c.passed) {
        prices.push("a jump in service p99");
    }
    let pushed_back = !step.refusal.is_some_and(|c| c.passed);
    let prices = prices.join(" and ");
    match step.rise {
        // (b) failing means the endpoint refuses; (c) alone, that the service itself saturates.
        Some(r) if r.passed && pushed_back => format!(
            "its extra throughput comes with {prices}: the endpoint has begun to push back, so a latency measured there describes the limiter as much as the service"
        ),
        Some(r) if r.passed => format!(
            "its extra throughput comes with {prices}: the service itself is saturating, so requests there wait behind each other"
        ),
        _ if prices.is_empty() => "more load buys no meaningful throughput".into(),
        _ => format!("more load buys no meaningful throughput, only {prices}"),
    }
}

fn verdict_word(passed: bool) -> &'static str {
    if passed { "pass" } else { "FAIL" }
}

fn no_run(level: &str) -> String {
    format!("FAIL — no run finished at {level}")
}

fn rise_text(rise: Option<&Rise>, higher: &str) -> String {
    let Some(r) = rise else {
        return no_run(higher);
    };
    let change = if r.from_rps > 0.0 {
        format!("{:+.1} %", (r.to_rps / r.from_rps - 1.0) * 100.0)
    } else {
        "from zero".into()
    };
    let head = format!(
        "{} — {} → {} jobs/s ({change}; needs ≥ +{} %)",
        verdict_word(r.passed),
        fixed(r.from_rps, 3),
        fixed(r.to_rps, 3),
        fixed(MIN_RISE * 100.0, 0),
    );
    match r.pairs {
        0 => format!("{head}, but no seed finished at both levels: no per-seed rise to test"),
        1 => format!(
            "{head}, per-seed rise {} on the one seed both levels finished (one pair has no \
             paired SE)",
            fixed(r.paired_rise_rps, 3)
        ),
        n => format!(
            "{head}, mean per-seed rise {} vs {} × paired SE {} = {} over {n} seeds",
            fixed(r.paired_rise_rps, 3),
            fixed(RISE_SE_K, 0),
            fixed(r.paired_se_rps, 3),
            fixed(RISE_SE_K * r.paired_se_rps, 3)
        ),
    }
}

fn refusal_text(c: Option<&Ceiling>, knee: &knee::Knee, higher: &str) -> String {
    let Some(c) = c else {
        return no_run(higher);
    };
    let (Some(value), Some(limit), Some(mean)) = (c.value, c.limit, knee.baseline.refusal_mean)
    else {
        return untested(c, "sent a request");
    };
    format!(
        "{} — {} {} limit {} (baseline {} + max({}, {} × stdev {}))",
        verdict_word(c.passed),
        fixed(value, 4),
        if c.passed { "≤" } else { ">" },
        fixed(limit, 4),
        fixed(mean, 4),
        REFUSAL_SLACK,
        fixed(REFUSAL_STDEV_K, 0),
        fixed(knee.baseline.refusal_stdev, 4)
    )
}

fn service_text(c: Option<&Ceiling>, knee: &knee::Knee, higher: &str) -> String {
    let Some(c) = c else {
        return no_run(higher);
    };
    let (Some(value), Some(limit), Some(baseline)) =
        (c.value, c.limit, knee.baseline.service_p99_ms)
    else {
        return untested(c, "served a first attempt");
    };
    format!(
        "{} — {} ms {} limit {} ms ({} × baseline {} ms)",
        verdict_word(c.passed),
        thousands(value, 0),
        if c.passed { "≤" } else { ">" },
        thousands(limit, 0),
        SERVICE_JUMP,
        thousands(baseline, 0)
    )
}

/// A ceiling test with a side no finished run defines: it compared nothing.
fn untested(c: &Ceiling, why: &str) -> String {
    let side = if c.limit.is_none() {
        "the first level"
    } else {
        "the higher level"
    };
    format!("not tested — no finished run at {side} {why}, so there is nothing to compare")
}

/// Writes the JSON document, 2-space indented, ending with a newline.
pub fn write_json(view: &SweepView<'_>, out: &mut dyn Write) -> io::Result<()> {
    let knee = &view.analysis.knee;
    let finding = match knee.finding {
        Finding::Knee => "knee",
        Finding::FirstLevel => "knee_at_first_level",
        Finding::LastLevel => "knee_at_last_level",
        Finding::NoKnee => "no_knee_in_range",
    };
    let doc = Document {
        schema_version: SCHEMA_VERSION,
        simbench_version: env!("CARGO_PKG_VERSION"),
        world_hash: &view.world_hash,
        scenario: view.scenario,
        algorithm: view.algorithm,
        knob: view.knob.name(),
        seeds: view.seeds,
        rng: view.rng,
        jobs: view.jobs,
        wall_s: (view.wall_s * 1e3).round() / 1e3,
        rule: RuleJson {
            min_rise: MIN_RISE,
            rise_se_k: RISE_SE_K,
            refusal_slack: REFUSAL_SLACK,
            refusal_stdev_k: REFUSAL_STDEV_K,
            service_jump: SERVICE_JUMP,
        },
        baseline: BaselineJson {
            refusal_timeout_ratio_mean: knee.baseline.refusal_mean.map(round6),
            refusal_timeout_ratio_stdev: round6(knee.baseline.refusal_stdev),
            refusal_timeout_ratio_limit: knee.baseline.refusal_limit().map(round6),
            service_p99_ms_mean: knee.baseline.service_p99_ms.map(round6),
            service_p99_ms_limit: knee.baseline.service_limit_ms().map(round6),
        },
        levels: (0..view.levels.len())
            .map(|i| level_json(view, i))
            .collect(),
        knee: KneeJson {
            finding,
            level: view.knob.json(view.levels[knee.level]),
        },
        recommendation: Recommendation {
            knob: view.knob.name(),
            level: view.knob.json(view.levels[knee.level]),
            flagged: knee.flagged(),
        },
        reasons: reasons(view),
        best_operating_point: BestJson {
            level: view.best_level().map(|i| view.knob.json(view.levels[i])),
            verdict: crate::report::json::verdict(view.best),
            text: operating_point(view),
        },
    };
    crate::report::json::write_pretty(out, &doc)
}

/// The version of the sweep's JSON shape: raised whenever a field changes meaning or goes away
/// (added fields do not raise it). `schema/sweep.schema.json` describes it.
pub const SCHEMA_VERSION: u32 = 2;

/// The JSON Schema (draft 2020-12) of the sweep's JSON, as `simbench schema sweep` prints it
/// and `schema/sweep.schema.json` stores it, ending with a newline.
pub fn schema_text() -> String {
    crate::report::json::schema_of::<Document<'_>>()
}

/// A level: a whole number of workers, or an arrival rate.
fn level_schema(_: &mut SchemaGenerator) -> schemars::Schema {
    json_schema!({ "type": "number" })
}

/// A level, or null.
fn optional_level_schema(_: &mut SchemaGenerator) -> schemars::Schema {
    json_schema!({ "type": ["number", "null"] })
}

/// The JSON of `simbench sweep --json`: one algorithm at increasing load levels on the same
/// seeds, each level's runs and summaries, the knee rule's steps and finding, and the best
/// operating point for the objective.
#[derive(Serialize, JsonSchema)]
#[schemars(title = "simbench sweep report", deny_unknown_fields)]
struct Document<'a> {
    /// The version of this shape.
    #[schemars(extend("const" = SCHEMA_VERSION))]
    schema_version: u32,
    simbench_version: &'static str,
    world_hash: &'a str,
    scenario: &'a str,
    algorithm: &'a str,
    knob: &'static str,
    seeds: &'a [u64],
    rng: &'static str,
    jobs: u32,
    wall_s: f64,
    rule: RuleJson,
    baseline: BaselineJson,
    levels: Vec<LevelJson<'a>>,
    knee: KneeJson,
    recommendation: Recommendation,
    reasons: Vec<String>,
    best_operating_point: BestJson<'a>,
}

/// The level the objective prefers (null when it cannot pick one), the verdict's comparisons
/// between levels, and the lines the terminal prints.
#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct BestJson<'a> {
    #[schemars(schema_with = "optional_level_schema")]
    level: Option<serde_json::Value>,
    /// The verdict between levels, as `simbench run --json` writes its `verdict`.
    verdict: crate::report::json::JsonVerdict<'a>,
    text: Vec<String>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct RuleJson {
    min_rise: f64,
    rise_se_k: f64,
    refusal_slack: f64,
    refusal_stdev_k: f64,
    service_jump: f64,
}

#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct BaselineJson {
    /// Null when no finished run at the first level sent a request.
    refusal_timeout_ratio_mean: Option<f64>,
    refusal_timeout_ratio_stdev: f64,
    refusal_timeout_ratio_limit: Option<f64>,
    /// Null when no finished run at the first level served a first attempt.
    service_p99_ms_mean: Option<f64>,
    service_p99_ms_limit: Option<f64>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct KneeJson {
    #[schemars(extend("enum" = ["knee", "knee_at_first_level", "knee_at_last_level", "no_knee_in_range"]))]
    finding: &'static str,
    #[schemars(schema_with = "level_schema")]
    level: serde_json::Value,
}

#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Recommendation {
    #[schemars(extend("enum" = ["concurrency", "rate_per_s"]))]
    knob: &'static str,
    #[schemars(schema_with = "level_schema")]
    level: serde_json::Value,
    flagged: bool,
}

#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct LevelJson<'a> {
    #[schemars(schema_with = "level_schema")]
    level: serde_json::Value,
    world_hash: &'a str,
    runs: LevelRuns<'a>,
    #[schemars(schema_with = "crate::report::json::metric_map::<SummaryJson>")]
    summary: Ordered<&'static str, SummaryJson>,
    valid_runs: usize,
    valid_share: f64,
    /// The step from the previous level; `None` for the baseline.
    step: Option<StepJson>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct RunJson<'a> {
    seed: u64,
    #[schemars(extend("enum" = ["ok", "stalled", "livelock", "timeout", "out_of_memory"]))]
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    valid: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[schemars(schema_with = "crate::report::json::metric_map::<f64>")]
    metrics: Ordered<&'static str, f64>,
    /// Metrics this run has nothing to compute from, with the reason.
    #[serde(skip_serializing_if = "Ordered::is_empty")]
    #[schemars(schema_with = "crate::report::json::metric_map::<String>")]
    undefined: Ordered<&'static str, &'static str>,
}

/// A level's runs, serialized one at a time as they are written rather than collected first.
struct LevelRuns<'a> {
    level: &'a LevelStats,
    runs: &'a [Run],
}

impl JsonSchema for LevelRuns<'_> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "LevelRuns".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
        crate::report::json::array_of::<RunJson<'_>>(
            generator,
            "The level's runs, one per seed, in seed order.",
        )
    }
}

impl Serialize for LevelRuns<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.runs.iter().map(|r| run_json(self.level, r)))
    }
}

#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct SummaryJson {
    mean: f64,
    stdev: f64,
    min: f64,
    max: f64,
    n: usize,
}

#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct StepJson {
    passed: bool,
    rise: Option<RiseJson>,
    refusal: Option<CeilingJson>,
    service: Option<CeilingJson>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct RiseJson {
    from_rps: f64,
    to_rps: f64,
    paired_rise_rps: f64,
    paired_se_rps: f64,
    /// Seeds both levels finished, which the per-seed rises pair.
    pairs: usize,
    passed: bool,
}

#[derive(Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct CeilingJson {
    /// Null when no finished run at the higher level defines the metric.
    value: Option<f64>,
    /// Null when no finished run at the first level does (no baseline).
    limit: Option<f64>,
    /// True when either side is null: the test compared nothing.
    passed: bool,
}

fn level_json<'a>(view: &'a SweepView<'_>, i: usize) -> LevelJson<'a> {
    let level = &view.analysis.levels[i];
    LevelJson {
        level: view.knob.json(view.levels[i]),
        world_hash: &view.level_hashes[i],
        runs: LevelRuns {
            level,
            runs: &view.runs[i],
        },
        summary: Ordered(
            SHOWN
                .iter()
                .filter_map(|&m| {
                    let s = level.summary(m)?;
                    let round = |x: f64| format::round_value(m.info().unit, x);
                    let summary = SummaryJson {
                        mean: round(s.mean),
                        stdev: round(s.stdev),
                        min: round(s.min),
                        max: round(s.max),
                        n: s.n,
                    };
                    Some((m.info().name, summary))
                })
                .collect(),
        ),
        valid_runs: level.valid(),
        valid_share: round6(level.valid() as f64 / level.runs.max(1) as f64),
        step: i
            .checked_sub(1)
            .map(|s| step_json(&view.analysis.knee.steps[s])),
    }
}

/// The metrics a sweep's JSON carries per run: the shown ones plus their context.
const RUN_METRICS: [Metric; 9] = [
    Metric::ThroughputRps,
    Metric::RefusalTimeoutRatio,
    Metric::RefusalRate,
    Metric::ServiceP99Ms,
    Metric::ObservedP99Ms,
    Metric::QueueWaitP99Ms,
    Metric::QueueShare,
    Metric::ConcurrencyUsed,
    Metric::JobsDone,
];

fn run_json<'a>(level: &'a LevelStats, run: &Run) -> RunJson<'a> {
    let reason = level
        .invalid
        .iter()
        .chain(&level.unfinished)
        .find(|(seed, _)| *seed == run.seed)
        .map(|(_, reason)| reason.as_str());
    match &run.outcome {
        Outcome::Finished(values)
        | Outcome::Stalled {
            metrics: values, ..
        } => RunJson {
            seed: run.seed,
            outcome: run.stall().map_or("ok", |(kind, _)| kind),
            valid: Some(reason.is_none()),
            reason,
            metrics: Ordered(
                RUN_METRICS
                    .iter()
                    .filter_map(|&m| {
                        let info = m.info();
                        Some((info.name, format::round_value(info.unit, values.value(m)?)))
                    })
                    .collect(),
            ),
            undefined: Ordered(
                RUN_METRICS
                    .iter()
                    .filter(|&&m| !values.is_defined(m))
                    .map(|&m| (m.info().name, undefined_reason(m)))
                    .collect(),
            ),
        },
        Outcome::Unfinished { kind, .. } => RunJson {
            seed: run.seed,
            outcome: kind,
            valid: None,
            reason,
            metrics: Ordered(Vec::new()),
            undefined: Ordered(Vec::new()),
        },
    }
}

fn step_json(step: &Step) -> StepJson {
    let ceiling = |c: &Ceiling| CeilingJson {
        value: c.value.map(round6),
        limit: c.limit.map(round6),
        passed: c.passed,
    };
    StepJson {
        passed: step.passed(),
        rise: step.rise.map(|r| RiseJson {
            from_rps: round6(r.from_rps),
            to_rps: round6(r.to_rps),
            paired_rise_rps: round6(r.paired_rise_rps),
            paired_se_rps: round6(r.paired_se_rps),
            pairs: r.pairs,
            passed: r.passed,
        }),
        refusal: step.refusal.as_ref().map(ceiling),
        service: step.service.as_ref().map(ceiling),
    }
}

/// Writes one CSV row per (level, seed) with every catalogue metric, like `simbench run --csv`.
pub fn write_csv(view: &SweepView<'_>, out: &mut dyn Write) -> io::Result<()> {
    let mut header = vec![
        "scenario",
        "world_hash",
        "rng",
        "algorithm",
        view.knob.name(),
        "seed",
        "outcome",
        "valid",
    ];
    header.extend(CATALOGUE.iter().map(|m| m.name));
    writeln!(out, "{}", header.join(","))?;
    for (i, runs) in view.runs.iter().enumerate() {
        let level = &view.analysis.levels[i];
        for run in runs {
            // The level's own world hash: each level is a world of its own.
            let mut cells = vec![
                csv_field(view.scenario),
                view.level_hashes[i].clone(),
                view.rng.to_owned(),
                csv_field(view.algorithm),
                view.knob.spell(view.levels[i]),
                run.seed.to_string(),
            ];
            let valid = !level.invalid.iter().any(|(s, _)| *s == run.seed);
            cells.extend(outcome_cells(run, valid, &|m| view.applies[m as usize]));
            writeln!(out, "{}", cells.join(","))?;
        }
    }
    Ok(())
}

/// `3 seeds 20260917…20260919`, or the list when it has gaps.
fn seed_list(seeds: &[u64]) -> String {
    format!("{} {}", plural(seeds.len(), "seed"), format::seeds(seeds))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rise with no seed, or one seed, common to both levels says so instead of printing a
    /// paired test of zeros.
    #[test]
    fn a_rise_says_how_many_seeds_it_pairs() {
        let rise = |pairs, se| Rise {
            from_rps: 1.0,
            to_rps: 2.0,
            paired_rise_rps: if pairs == 0 { 0.0 } else { 1.0 },
            paired_se_rps: se,
            pairs,
            passed: pairs > 0,
        };
        let none = rise_text(Some(&rise(0, 0.0)), "concurrency 8");
        assert!(none.starts_with("FAIL — 1.000 → 2.000 jobs/s"), "{none}");
        assert!(none.ends_with("no seed finished at both levels: no per-seed rise to test"));
        let one = rise_text(Some(&rise(1, 0.0)), "concurrency 8");
        assert!(one.contains("per-seed rise 1.000 on the one seed"), "{one}");
        assert!(!one.contains("× paired SE"), "{one}");
        let three = rise_text(Some(&rise(3, 0.1)), "concurrency 8");
        assert!(
            three.ends_with("mean per-seed rise 1.000 vs 2 × paired SE 0.100 = 0.200 over 3 seeds"),
            "{three}"
        );
    }

    #[test]
    fn numbers_are_spelled_like_the_report() {
        assert_eq!(seed_list(&[5, 6, 7]), "3 seeds 5…7");
        assert_eq!(seed_list(&[5]), "1 seed 5");
        assert_eq!(Knob::Rate.spell(2.5), "2.5");
        assert_eq!(Knob::Rate.axis_label(), "rate_per_s [jobs/s]");
        assert_eq!(Knob::Concurrency.axis_label(), "concurrency [workers]");
        assert_eq!(Knob::Concurrency.spell(8.0), "8");
    }
}
