//! The algorithm registry: the single list of strategies the CLI, schema, docs and reports read.

use crate::client::strategies::{
    backoff::Backoff, failover::Failover, immediate::Immediate, least_busy::LeastBusy,
    quota_aware::QuotaAware, sticky::Sticky, wait::Wait,
};
use crate::client::strategy::Strategy;

/// One registered strategy.
#[derive(Debug)]
pub struct AlgorithmInfo {
    /// Registry key, used in files and on the command line.
    pub name: &'static str,
    /// One-line description.
    pub summary: &'static str,
    /// Builds the strategy with its default parameters.
    pub build: fn() -> Box<dyn Strategy>,
}

/// Every strategy, in registry order.
pub const ALGORITHMS: &[AlgorithmInfo] = &[
    AlgorithmInfo {
        name: "immediate",
        summary: "Take a free resource or fail the attempt at once.",
        build: || Box::new(Immediate),
    },
    AlgorithmInfo {
        name: "wait",
        summary: "Take a free resource or queue until one frees up.",
        build: || Box::new(Wait),
    },
    AlgorithmInfo {
        name: "backoff",
        summary: "Poll for a free resource with jittered exponential backoff.",
        build: || Box::new(Backoff::default()),
    },
    AlgorithmInfo {
        name: "least_busy",
        summary: "Pick the least-loaded resource; wait when none is free.",
        build: || Box::new(LeastBusy),
    },
    AlgorithmInfo {
        name: "failover",
        summary: "Try each pool in order at once, then wait on the primary.",
        build: || Box::new(Failover),
    },
    AlgorithmInfo {
        name: "sticky",
        summary: "Reuse the resource of the attempt's previous call while it is free.",
        build: || Box::new(Sticky),
    },
    AlgorithmInfo {
        name: "quota_aware",
        summary: "Prefer the resource with the largest share of its quota left.",
        build: || Box::new(QuotaAware::default()),
    },
];

/// Names of every strategy, in registry order.
pub fn names() -> impl Iterator<Item = &'static str> {
    ALGORITHMS.iter().map(|a| a.name)
}

/// The registry entry named `name`.
pub fn find(name: &str) -> Option<&'static AlgorithmInfo> {
    ALGORITHMS.iter().find(|a| a.name == name)
}
