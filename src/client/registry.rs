//! The algorithm registry: the single list of strategies the CLI, schema, docs and reports read.

use crate::client::strategies::{
    backoff::Backoff, failover::Failover, immediate::Immediate, least_busy::LeastBusy,
    p2c::PowerOfTwo, quota_aware::QuotaAware, retry_after_aware::RetryAfterAware, sticky::Sticky,
    wait::Wait,
};
use crate::client::strategy::Strategy;

/// One tunable parameter of a strategy, declared once here: the scenario schema, the
/// diagnostics, `simbench list` and the docs read it.
#[derive(Debug)]
pub struct ParamInfo {
    /// Key in `[algorithms.<name>]`.
    pub name: &'static str,
    /// Unit of the value (`s`, `ratio`, `count`, …).
    pub unit: &'static str,
    /// The reference's value (or the strategy author's, for new strategies).
    pub default: f64,
    /// Smallest allowed value.
    pub min: f64,
    /// Largest allowed value.
    pub max: f64,
    /// Whether the value must be a whole number.
    pub integer: bool,
    /// What it controls, in one sentence.
    pub meaning: &'static str,
}

/// Parameter values for one strategy, one per declared parameter, in declaration order.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    values: Vec<(&'static str, f64)>,
}

impl Params {
    /// The declared defaults of `info`, with `overrides` (name → value) applied.
    ///
    /// # Panics
    /// Panics on a name `info` does not declare or a value out of its range: the scenario
    /// compiler checks both first.
    pub fn new<'a>(
        info: &AlgorithmInfo,
        overrides: impl IntoIterator<Item = (&'a str, f64)>,
    ) -> Params {
        let mut values: Vec<(&'static str, f64)> =
            info.params.iter().map(|p| (p.name, p.default)).collect();
        for (name, value) in overrides {
            let param = info
                .param(name)
                .unwrap_or_else(|| panic!("`{}` has no parameter `{name}`", info.name));
            assert!(
                (param.min..=param.max).contains(&value),
                "`{}.{name}` = {value} is out of range",
                info.name
            );
            let slot = values
                .iter_mut()
                .find(|(n, _)| *n == name)
                .expect("declared");
            slot.1 = value;
        }
        Params { values }
    }

    /// The value of parameter `name`.
    ///
    /// # Panics
    /// Panics if the strategy does not declare `name` (a bug in the strategy's constructor).
    pub fn get(&self, name: &str) -> f64 {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no parameter `{name}`"))
    }

    /// `(name, value)` in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        self.values.iter().copied()
    }
}

/// One registered strategy.
#[derive(Debug)]
pub struct AlgorithmInfo {
    /// Registry key, used in files and on the command line.
    pub name: &'static str,
    /// One-line description.
    pub summary: &'static str,
    /// Its tunable parameters (`[algorithms.<name>]` in a scenario file).
    pub params: &'static [ParamInfo],
    /// Builds the strategy with the given parameter values.
    pub make: fn(&Params) -> Box<dyn Strategy>,
}

impl AlgorithmInfo {
    /// The declared parameter `name`.
    pub fn param(&self, name: &str) -> Option<&'static ParamInfo> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Builds the strategy with every parameter at its default.
    pub fn build_default(&self) -> Box<dyn Strategy> {
        (self.make)(&Params::new(self, []))
    }
}

const BACKOFF_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "base",
        unit: "s",
        default: 0.2,
        min: 0.0,
        max: 3600.0,
        integer: false,
        meaning: "Longest sleep after the first empty poll (before jitter).",
    },
    ParamInfo {
        name: "factor",
        unit: "ratio",
        default: 2.0,
        min: 1.0,
        max: 100.0,
        integer: false,
        meaning: "Growth of the longest sleep per further empty poll.",
    },
    ParamInfo {
        name: "cap",
        unit: "s",
        default: 10.0,
        min: 0.0,
        max: 3600.0,
        integer: false,
        meaning: "Largest sleep before jitter.",
    },
];

const QUOTA_AWARE_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "reserve",
        unit: "ratio",
        default: 0.05,
        min: 0.0,
        max: 1.0,
        integer: false,
        meaning: "Share of a quota kept in reserve: a resource at or below it is used last.",
    },
    ParamInfo {
        name: "penalty",
        unit: "ratio",
        default: 10.0,
        min: 0.0,
        max: 1000.0,
        integer: false,
        meaning: "How far a resource inside its reserve is pushed down the ranking.",
    },
];

/// Every strategy, in registry order.
pub const ALGORITHMS: &[AlgorithmInfo] = &[
    AlgorithmInfo {
        name: "immediate",
        summary: "Take a free resource or fail the attempt at once.",
        params: &[],
        make: |_| Box::new(Immediate),
    },
    AlgorithmInfo {
        name: "wait",
        summary: "Take a free resource or queue until one frees up.",
        params: &[],
        make: |_| Box::new(Wait),
    },
    AlgorithmInfo {
        name: "backoff",
        summary: "Poll for a free resource with jittered exponential backoff.",
        params: BACKOFF_PARAMS,
        make: |p| Box::new(Backoff::new(p)),
    },
    AlgorithmInfo {
        name: "least_busy",
        summary: "Pick the least-loaded resource; wait when none is free.",
        params: &[],
        make: |_| Box::new(LeastBusy),
    },
    AlgorithmInfo {
        name: "failover",
        summary: "Try each pool in order at once, then wait on the primary.",
        params: &[],
        make: |_| Box::new(Failover),
    },
    AlgorithmInfo {
        name: "sticky",
        summary: "Reuse the resource of the attempt's previous call while it is free.",
        params: &[],
        make: |_| Box::new(Sticky),
    },
    AlgorithmInfo {
        name: "quota_aware",
        summary: "Prefer the resource with the largest share of its quota left.",
        params: QUOTA_AWARE_PARAMS,
        make: |p| Box::new(QuotaAware::new(p)),
    },
    AlgorithmInfo {
        name: "p2c",
        summary: "Draw two free resources at random; take the one with fewer leases.",
        params: &[],
        make: |_| Box::new(PowerOfTwo),
    },
    AlgorithmInfo {
        name: "retry_after_aware",
        summary: "Keep every worker off an endpoint until its last 429's Retry-After has passed.",
        params: &[],
        make: |_| Box::new(RetryAfterAware),
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
