//! `[objective]` as written: what the verdict optimises and which limits a pick must respect.
//! Metric names come from the metric catalogue, so the schema lists exactly the catalogue's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::metrics::{CATALOGUE, Metric};

/// What "best" means for this world: the metric to optimise (in the catalogue's direction:
/// `jobs_done` higher, a latency lower), constraints the pick must meet, and tie-breaks for when
/// the objective cannot separate the leaders. Default: absent, which means the defaults of
/// every key below: most `jobs_done`, then lower `successful_job_latency_p99_ms`, no
/// constraints, 95 % confidence.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Objective {
    /// The metric to optimise, in its catalogue direction (`simbench list` shows it): a metric
    /// with a direction (not a neutral one). Default "jobs_done".
    #[serde(default = "default_metric")]
    #[schemars(schema_with = "constrained_metric_schema")]
    pub metric: String,

    /// Limits on the mean over seeds of other metrics; a strategy that breaks one is not picked,
    /// and the verdict says which it breaks. Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<Constraint>,

    /// Metrics that decide, in order, between strategies the objective cannot separate, e.g.
    /// `["cost"]`; `[]` for none. Default ["successful_job_latency_p99_ms"].
    #[serde(default = "default_tie_break")]
    #[schemars(schema_with = "constrained_metrics_schema")]
    pub tie_break: Vec<String>,

    /// Confidence of the intervals the verdict rests on. Default 0.95; range 0.5 to 0.999.
    #[serde(default = "default_confidence")]
    #[schemars(range(min = 0.5, max = 0.999))]
    pub confidence: f64,
}

/// One limit: `{ metric = "refusal_rate", max = 0.05 }` or `{ metric = "jobs_done", min = 2900 }`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Constraint {
    /// The metric limited. Required; any metric of the catalogue but `wall_s`.
    #[schemars(schema_with = "constrained_metric_schema")]
    pub metric: String,

    /// Largest allowed mean (in the metric's unit). One of `max` and `min` is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -1e15, max = 1e15))]
    pub max: Option<f64>,

    /// Smallest allowed mean (in the metric's unit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -1e15, max = 1e15))]
    pub min: Option<f64>,
}

fn default_metric() -> String {
    "jobs_done".into()
}

fn default_tie_break() -> Vec<String> {
    vec!["successful_job_latency_p99_ms".into()]
}

fn default_confidence() -> f64 {
    0.95
}

/// Names of the metrics a constraint may limit (all but the wall time, which is not simulated).
pub fn constrained_metric_names() -> Vec<&'static str> {
    CATALOGUE
        .iter()
        .filter(|m| m.metric != Metric::WallS)
        .map(|m| m.name)
        .collect()
}

fn constrained_metrics_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": { "type": "string", "enum": constrained_metric_names() },
    })
}

fn constrained_metric_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "string", "enum": constrained_metric_names() })
}

/// `[thresholds]`: what a CI job asserts on every run of this world; a violated one makes
/// `simbench run` exit 3 with the list of what failed.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    /// Assertions, each `ALGORITHM.METRIC OP NUMBER` on the mean over seeds (e.g.
    /// `"aimd.refusal_rate < 0.02"`) or `verdict == ALGORITHM` / `verdict != ALGORITHM`; OP is
    /// one of <, <=, >, >=, ==, !=. Required; at least one (a table that asserts nothing
    /// would pass every run).
    #[schemars(length(min = 1))]
    pub assert: Vec<String>,
}
