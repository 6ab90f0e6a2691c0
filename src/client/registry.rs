//! The algorithm registry: the single list of strategies the CLI, schema, docs and reports read.

/// One registered strategy.
#[derive(Debug)]
pub struct AlgorithmInfo {
    /// Registry key, used in files and on the command line.
    pub name: &'static str,
    /// One-line description.
    pub summary: &'static str,
}

/// Every strategy, in registry order.
pub const ALGORITHMS: &[AlgorithmInfo] = &[
    AlgorithmInfo {
        name: "immediate",
        summary: "Take a free resource or fail the attempt at once.",
    },
    AlgorithmInfo {
        name: "wait",
        summary: "Take a free resource or queue until one frees up.",
    },
    AlgorithmInfo {
        name: "backoff",
        summary: "Poll for a free resource with jittered exponential backoff.",
    },
    AlgorithmInfo {
        name: "least_busy",
        summary: "Pick the least-loaded resource; wait when none is free.",
    },
    AlgorithmInfo {
        name: "failover",
        summary: "Try each pool in order at once, then wait on the primary.",
    },
    AlgorithmInfo {
        name: "sticky",
        summary: "Reuse the resource of the attempt's previous call when free.",
    },
    AlgorithmInfo {
        name: "quota_aware",
        summary: "Prefer the resource with the largest share of its quota left.",
    },
];

/// Names of every strategy, in registry order.
pub fn names() -> impl Iterator<Item = &'static str> {
    ALGORITHMS.iter().map(|a| a.name)
}
