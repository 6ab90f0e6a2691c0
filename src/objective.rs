//! What the verdict optimises: one metric in its catalogue direction, limits on others, and
//! tie-breaks, at a stated confidence.
//!
//! The objective only judges runs; it never changes one. A world without `[objective]` gets
//! [`Objective::default`]: most jobs done, then the lower p99 of completed jobs.

use crate::metrics::{Direction, Metric};

/// A limit on the mean of a metric.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// The mean must be at most this.
    AtMost(f64),
    /// The mean must be at least this.
    AtLeast(f64),
}

impl Bound {
    /// Whether `value` respects the bound.
    pub fn holds(self, value: f64) -> bool {
        match self {
            Bound::AtMost(limit) => value <= limit,
            Bound::AtLeast(limit) => value >= limit,
        }
    }

    /// `≤ 0.05` or `≥ 2900`.
    pub fn describe(self) -> String {
        match self {
            Bound::AtMost(limit) => format!("≤ {limit}"),
            Bound::AtLeast(limit) => format!("≥ {limit}"),
        }
    }
}

/// One constraint of the objective.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Constraint {
    /// The metric limited.
    pub metric: Metric,
    /// The limit.
    pub bound: Bound,
}

impl Constraint {
    /// `refusal_rate ≤ 0.05`.
    pub fn describe(&self) -> String {
        format!("{} {}", self.metric.info().name, self.bound.describe())
    }
}

/// Where the objective came from, as the report says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// No `[objective]`: the default.
    Default,
    /// The world's `[objective]` (after any command-line override).
    World,
}

/// The compiled objective.
#[derive(Clone, Debug, PartialEq)]
pub struct Objective {
    /// The metric optimised, in its catalogue direction (never neutral).
    pub metric: Metric,
    /// Limits the pick must meet.
    pub constraints: Vec<Constraint>,
    /// Metrics that decide, in order, when the objective cannot.
    pub tie_break: Vec<Metric>,
    /// Confidence of the verdict's intervals, in (0, 1).
    pub confidence: f64,
    /// Whether the world wrote it.
    pub source: Source,
    /// Whether the world (or a command-line override) wrote `metric` itself, rather than
    /// leaving it to the default, as a table holding only a confidence or a constraint does.
    pub metric_written: bool,
}

impl Default for Objective {
    fn default() -> Self {
        Objective {
            metric: Metric::JobsDone,
            constraints: Vec::new(),
            tie_break: vec![Metric::SuccessfulJobLatencyP99Ms],
            confidence: 0.95,
            source: Source::Default,
            metric_written: false,
        }
    }
}

impl Objective {
    /// The metrics that decide, in order: the objective, then the tie-breaks (each once).
    pub fn levels(&self) -> impl Iterator<Item = Metric> + '_ {
        let ties = self
            .tie_break
            .iter()
            .enumerate()
            .filter(|(i, m)| **m != self.metric && !self.tie_break[..*i].contains(m));
        std::iter::once(self.metric).chain(ties.map(|(_, m)| *m))
    }

    /// Every metric the objective reads (for the compact table), each once, in order.
    pub fn metrics(&self) -> Vec<Metric> {
        let mut out: Vec<Metric> = Vec::new();
        let all = self
            .levels()
            .chain(self.constraints.iter().map(|c| c.metric));
        for metric in all {
            if !out.contains(&metric) {
                out.push(metric);
            }
        }
        out
    }

    /// `most jobs_done, subject to refusal_rate ≤ 0.05; then lower cost`.
    pub fn describe(&self) -> String {
        let mut text = format!("{} {}", aim(self.metric), self.metric.info().name);
        if !self.constraints.is_empty() {
            let limits: Vec<String> = self.constraints.iter().map(Constraint::describe).collect();
            text.push_str(&format!(", subject to {}", limits.join(" and ")));
        }
        for metric in self.levels().skip(1) {
            text.push_str(&format!("; then {} {}", aim(metric), metric.info().name));
        }
        text
    }
}

/// `most` for a metric where higher is better, `lowest` otherwise.
fn aim(metric: Metric) -> &'static str {
    match metric.info().direction {
        Direction::Higher => "most",
        _ => "lowest",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_most_jobs_then_the_lower_p99() {
        let objective = Objective::default();
        assert_eq!(
            objective.describe(),
            "most jobs_done; then lowest successful_job_latency_p99_ms"
        );
        assert_eq!(
            objective.levels().collect::<Vec<_>>(),
            [Metric::JobsDone, Metric::SuccessfulJobLatencyP99Ms]
        );
    }

    #[test]
    fn constraints_are_described_and_their_metrics_listed_once() {
        let objective = Objective {
            metric: Metric::JobsDone,
            constraints: vec![
                Constraint {
                    metric: Metric::RefusalRate,
                    bound: Bound::AtMost(0.05),
                },
                Constraint {
                    metric: Metric::JobsDone,
                    bound: Bound::AtLeast(2900.0),
                },
            ],
            tie_break: vec![Metric::Cost],
            confidence: 0.9,
            source: Source::World,
            metric_written: true,
        };
        assert_eq!(
            objective.describe(),
            "most jobs_done, subject to refusal_rate ≤ 0.05 and jobs_done ≥ 2900; then lowest cost"
        );
        assert_eq!(
            objective.metrics(),
            [Metric::JobsDone, Metric::Cost, Metric::RefusalRate]
        );
        assert!(Bound::AtMost(0.05).holds(0.05) && !Bound::AtMost(0.05).holds(0.0501));
        assert!(Bound::AtLeast(1.0).holds(1.0) && !Bound::AtLeast(1.0).holds(0.99));
    }
}
