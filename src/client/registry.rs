//! The algorithm registry: the single list of strategies the CLI, schema, docs and reports read.

use crate::client::params::{ParamInfo, Params};
use crate::client::strategies::{
    aimd::Aimd,
    backoff::Backoff,
    budget_pacer::BudgetPacer,
    failover::Failover,
    gradient::Gradient,
    header_pacer::HeaderPacer,
    hedged::Hedged,
    immediate::Immediate,
    least_busy::LeastBusy,
    p2c::PowerOfTwo,
    quota_aware::QuotaAware,
    retry_after_aware::RetryAfterAware,
    router::{Router, Routing},
    sdk_retry::SdkClient,
    sticky::Sticky,
    tenacity_exponential::TenacityExponential,
    wait::Wait,
};
use crate::client::strategy::Strategy;

/// One registered strategy.
#[derive(Debug)]
pub struct AlgorithmInfo {
    /// Registry key, used in files and on the command line.
    pub name: &'static str,
    /// One-line description.
    pub summary: &'static str,
    /// Its tunable parameters (`[algorithms.<name>]` in a scenario file).
    pub params: &'static [ParamInfo],
    /// Pairs `[a, b]` of parameters that must satisfy `a <= b` (defaults filled in).
    pub ordered: &'static [[&'static str; 2]],
    /// Parameters that bound the sleep between two polls for a lease from above: their
    /// minimum ([`MIN_POLL_DELAY_S`]) keeps the strategy from polling at zero delay.
    pub poll_delay: &'static [&'static str],
    /// Builds the strategy with the given parameter values.
    pub make: fn(&Params) -> Box<dyn Strategy>,
}

impl AlgorithmInfo {
    /// Its declared defaults, with `overrides` (name → value) applied.
    ///
    /// # Panics
    /// Panics on a name it does not declare or a value out of its range: the scenario compiler
    /// checks both first.
    pub fn values<'a>(&self, overrides: impl IntoIterator<Item = (&'a str, f64)>) -> Params {
        Params::new(self.name, self.params, overrides)
    }

    /// The declared parameter `name`.
    pub fn param(&self, name: &str) -> Option<&'static ParamInfo> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Builds the strategy with every parameter at its default.
    pub fn build_default(&self) -> Box<dyn Strategy> {
        (self.make)(&self.values([]))
    }
}

/// The shortest sleep bound a polling strategy accepts \[s\]: the resolution retry delays are
/// rounded to. A bound of 0 would make a waiting call poll at zero delay, and one far below the
/// clock's resolution would advance simulated time by nothing (or by subnormal steps), so the
/// run would stand still while the call waits.
pub const MIN_POLL_DELAY_S: f64 = 1e-4;

const BACKOFF_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "base",
        unit: "s",
        default: 0.2,
        min: MIN_POLL_DELAY_S,
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
        min: MIN_POLL_DELAY_S,
        max: 3600.0,
        integer: false,
        meaning: "Largest sleep before jitter.",
    },
];

const WAIT_PARAMS: &[ParamInfo] = &[ParamInfo {
    name: "timeout_s",
    unit: "s",
    default: 0.0,
    min: 0.0,
    max: 1e6,
    integer: false,
    meaning: "Longest wait for a lease before the call gives up as unavailable (class `unknown`); 0, the reference's value, waits for ever.",
}];

const STICKY_PARAMS: &[ParamInfo] = &[ParamInfo {
    name: "fallback_after_s",
    unit: "s",
    default: 0.0,
    min: 0.0,
    max: 1e6,
    integer: false,
    meaning: "Meant as how long a call waits for the resource its attempt used before falling back to any free one (0, the reference's value: at once). It never acts: an attempt's next call starts at the instant its previous call's success gave that resource back, READY with a free slot (or REVOKED, which falls back at once), so every value runs as 0 does.",
}];

const QUOTA_AWARE_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "reserve",
        unit: "ratio",
        default: 0.05,
        min: 0.0,
        max: 1.0,
        integer: false,
        meaning: "Share of its declared quota at or below which a resource's share is lowered by `penalty`. Resources with a quota rank by share anyway, so this reorders none of them; it only decides when one drops below the resources without a quota (score −100), which takes a `penalty` above 100 plus its share.",
    },
    ParamInfo {
        name: "penalty",
        unit: "ratio",
        default: 10.0,
        min: 0.0,
        max: 1000.0,
        integer: false,
        meaning: "Subtracted from the share of a resource inside its reserve. It never reorders resources with a quota (every share inside the reserve is already below every share outside it); a resource with share s inside it ranks below those without a quota once s − penalty < −100: at the reference's 10, only after its usage passes 91 times its `quota_units`.",
    },
];

/// The bounds and the start of an adaptive limit.
const LIMIT_ORDER: &[[&str; 2]] = &[["min", "initial"], ["initial", "max"]];

/// `min`, `max` and `initial` of an adaptive concurrency limit.
macro_rules! limit_params {
    ($initial:expr) => {
        [
            ParamInfo {
                name: "initial",
                unit: "requests",
                default: $initial,
                min: 1.0,
                max: 100_000.0,
                integer: false,
                meaning: "Limit at the start of a run.",
            },
            ParamInfo {
                name: "min",
                unit: "requests",
                default: 1.0,
                min: 1.0,
                max: 100_000.0,
                integer: false,
                meaning: "Lowest limit: this many requests may always be in flight.",
            },
            ParamInfo {
                name: "max",
                unit: "requests",
                default: 1000.0,
                min: 1.0,
                max: 100_000.0,
                integer: false,
                meaning: "Highest limit.",
            },
        ]
    };
}

const AIMD_PARAMS: &[ParamInfo] = &{
    let [initial, min, max] = limit_params!(10.0);
    [
        initial,
        min,
        max,
        ParamInfo {
            name: "step",
            unit: "requests",
            default: 1.0,
            min: 0.01,
            max: 1000.0,
            integer: false,
            meaning: "Increase per limit's worth of successes (each success adds step / limit).",
        },
        ParamInfo {
            name: "factor",
            unit: "ratio",
            default: 0.5,
            min: 0.01,
            max: 0.99,
            integer: false,
            meaning: "Multiplier applied on a 429 or read timeout (at most once per window of requests).",
        },
    ]
};

const GRADIENT_PARAMS: &[ParamInfo] = &{
    let [initial, min, max] = limit_params!(10.0);
    [
        initial,
        min,
        max,
        ParamInfo {
            name: "queue_size",
            unit: "requests",
            default: 4.0,
            min: 0.0,
            max: 1000.0,
            integer: false,
            meaning: "Headroom added to limit · gradient at each update.",
        },
        ParamInfo {
            name: "smoothing",
            unit: "ratio",
            default: 0.2,
            min: 0.01,
            max: 1.0,
            integer: false,
            meaning: "Weight of the new target in each update (1 = no smoothing).",
        },
        ParamInfo {
            name: "tolerance",
            unit: "ratio",
            default: 1.5,
            min: 1.0,
            max: 10.0,
            integer: false,
            meaning: "How far the short latency may exceed the long one before the limit shrinks.",
        },
        ParamInfo {
            name: "window",
            unit: "answers",
            default: 10.0,
            min: 1.0,
            max: 100_000.0,
            integer: true,
            meaning: "Answers per update: the short latency is their successes' mean.",
        },
        ParamInfo {
            name: "long_window",
            unit: "windows",
            default: 600.0,
            min: 1.0,
            max: 1_000_000.0,
            integer: true,
            meaning: "Span of the exponential average that forms the long latency.",
        },
    ]
};

const HEDGED_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "percentile",
        unit: "ratio",
        default: 0.95,
        min: 0.5,
        max: 1.0,
        integer: false,
        meaning: "A request still unanswered at this percentile of recent latencies is hedged.",
    },
    ParamInfo {
        name: "window",
        unit: "requests",
        default: 100.0,
        min: 1.0,
        max: 100_000.0,
        integer: true,
        meaning: "Recent successful latencies the percentile is taken over (no hedging until seen).",
    },
];

/// openai-python v3.3.1's retry constants (`_constants.py`) and behaviour (`_base_client.py`).
const SDK_RETRY_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "max_retries",
        unit: "retries",
        default: 2.0,
        min: 0.0,
        max: 1000.0,
        integer: true,
        meaning: "Retries after the first attempt (`DEFAULT_MAX_RETRIES`): a call makes at most 1 + max_retries attempts.",
    },
    ParamInfo {
        name: "initial_delay_s",
        unit: "s",
        default: 0.5,
        min: 0.0,
        max: 3600.0,
        integer: false,
        meaning: "Backoff before the first retry, before jitter (`INITIAL_RETRY_DELAY`); doubles per retry.",
    },
    ParamInfo {
        name: "max_delay_s",
        unit: "s",
        default: 8.0,
        min: 0.0,
        max: 3600.0,
        integer: false,
        meaning: "Largest backoff before jitter (`MAX_RETRY_DELAY`).",
    },
    ParamInfo {
        name: "jitter",
        unit: "ratio",
        default: 0.25,
        min: 0.0,
        max: 1.0,
        integer: false,
        meaning: "The backoff is multiplied by 1 - jitter * u, u uniform in [0, 1).",
    },
    ParamInfo {
        name: "max_retry_after_s",
        unit: "s",
        default: 120.0,
        min: 0.0,
        max: 1e6,
        integer: false,
        meaning: "A Retry-After above 0 and at most this long is slept as sent (`MAX_RETRY_AFTER_DELAY`; 60 before v2.52.0).",
    },
    ParamInfo {
        name: "over_cap_gives_up",
        unit: "flag",
        default: 1.0,
        min: 0.0,
        max: 1.0,
        integer: true,
        meaning: "1: a Retry-After above max_retry_after_s ends the retries (v2.52.0 on); 0: it is ignored and the backoff applies (earlier versions).",
    },
];

/// tenacity 9.1.4's `wait_random_exponential` and `stop_after_attempt`, with the OpenAI
/// cookbook's arguments (`min=1, max=60`, 6 attempts).
const TENACITY_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "min_s",
        unit: "s",
        default: 1.0,
        min: 0.0,
        max: 3600.0,
        integer: false,
        meaning: "`min`: the shortest wait, and the floor of the window's top.",
    },
    ParamInfo {
        name: "max_s",
        unit: "s",
        default: 60.0,
        min: 0.0,
        max: 1e6,
        integer: false,
        meaning: "`max`: the largest top of the wait window.",
    },
    ParamInfo {
        name: "multiplier",
        unit: "s",
        default: 1.0,
        min: 0.0,
        max: 3600.0,
        integer: false,
        meaning: "`multiplier`: the window's top after attempt n fails is multiplier * 2^(n-1), within [min_s, max_s].",
    },
    ParamInfo {
        name: "attempts",
        unit: "attempts",
        default: 6.0,
        min: 1.0,
        max: 1000.0,
        integer: true,
        meaning: "`stop_after_attempt`: attempts in all, the first included.",
    },
];

const FAILOVER_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "leave_refused",
        unit: "flag",
        default: 0.0,
        min: 0.0,
        max: 1.0,
        integer: true,
        meaning: "1: keep off an endpoint that answered 429 until its Retry-After has passed, or \"overloaded\" for overloaded_s; 0: the reference's failover, which does not.",
    },
    ParamInfo {
        name: "overloaded_s",
        unit: "s",
        default: 5.0,
        min: 0.0,
        max: 86_400.0,
        integer: false,
        meaning: "With leave_refused = 1: how long an \"overloaded\" answer (no Retry-After) keeps calls off its endpoint.",
    },
];

const BUDGET_PACER_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "requests_per_minute",
        unit: "requests/min",
        default: 1500.0,
        min: 1e-3,
        max: 1e9,
        integer: false,
        meaning: "`max_requests_per_minute`: the request budget (the script's default is half of 3,000).",
    },
    ParamInfo {
        name: "tokens_per_minute",
        unit: "tokens/min",
        default: 125_000.0,
        min: 1.0,
        max: 1e12,
        integer: false,
        meaning: "`max_tokens_per_minute`: the token budget, charged prompt + max_tokens per request (the script's default is half of 250,000).",
    },
    ParamInfo {
        name: "pause_s",
        unit: "s",
        default: 15.0,
        min: 0.0,
        max: 86_400.0,
        integer: false,
        meaning: "`seconds_to_pause_after_rate_limit_error`: every request waits this long after a 429.",
    },
    ParamInfo {
        name: "max_attempts",
        unit: "attempts",
        default: 5.0,
        min: 1.0,
        max: 1000.0,
        integer: true,
        meaning: "`max_attempts`: attempts in all per request, retried at once on any error.",
    },
];

const HEADER_PACER_PARAMS: &[ParamInfo] = &[ParamInfo {
    name: "reserve",
    unit: "ratio",
    default: 0.0,
    min: 0.0,
    max: 0.99,
    integer: false,
    meaning: "Share of every limit the client leaves unused, against requests it cannot see.",
}];

const ROUTER_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "num_retries",
        unit: "retries",
        default: 2.0,
        min: 0.0,
        max: 100.0,
        integer: true,
        meaning: "`num_retries`: retries inside a pool before falling back (LiteLLM takes the OpenAI SDK's 2).",
    },
    ParamInfo {
        name: "cooldown_s",
        unit: "s",
        default: 5.0,
        min: 0.0,
        max: 86_400.0,
        integer: false,
        meaning: "`cooldown_time`: how long a deployment stays out after it is cooled down (a 429's Retry-After instead, when it carries one).",
    },
    ParamInfo {
        name: "allowed_fails",
        unit: "failures",
        default: 0.0,
        min: 0.0,
        max: 1e6,
        integer: true,
        meaning: "`allowed_fails` set explicitly: cool a deployment once more than this many answers failed within cooldown_s; 0: LiteLLM's default rule (429 at once, or over half failing).",
    },
    ParamInfo {
        name: "max_fallbacks",
        unit: "pools",
        default: 5.0,
        min: 0.0,
        max: 1000.0,
        integer: true,
        meaning: "`max_fallbacks`: pools after the primary, in file order, that a call falls back to.",
    },
];

/// Every strategy, in registry order.
pub const ALGORITHMS: &[AlgorithmInfo] = &[
    AlgorithmInfo {
        name: "immediate",
        summary: "Take a free resource or fail the attempt at once.",
        params: &[],
        ordered: &[],
        poll_delay: &[],
        make: |_| Box::new(Immediate),
    },
    AlgorithmInfo {
        name: "wait",
        summary: "Take a free resource or queue until one frees up.",
        params: WAIT_PARAMS,
        ordered: &[],
        poll_delay: &[],
        make: |p| Box::new(Wait::new(p)),
    },
    AlgorithmInfo {
        name: "backoff",
        summary: "Poll for a free resource with jittered exponential backoff.",
        params: BACKOFF_PARAMS,
        ordered: &[["base", "cap"]],
        poll_delay: &["base", "cap"],
        make: |p| Box::new(Backoff::new(p)),
    },
    AlgorithmInfo {
        name: "least_busy",
        summary: "Pick the least-loaded resource; wait when none is free.",
        params: &[],
        ordered: &[],
        poll_delay: &[],
        make: |_| Box::new(LeastBusy),
    },
    AlgorithmInfo {
        name: "failover",
        summary: "Try each pool in order at once, then wait on the primary; with leave_refused = 1, keep off an endpoint after its 429 or \"overloaded\".",
        params: FAILOVER_PARAMS,
        ordered: &[],
        poll_delay: &[],
        make: |p| Box::new(Failover::new(p)),
    },
    AlgorithmInfo {
        name: "sticky",
        summary: "Reuse the resource of the attempt's previous call while it is free.",
        params: STICKY_PARAMS,
        ordered: &[],
        poll_delay: &[],
        make: |p| Box::new(Sticky::new(p)),
    },
    AlgorithmInfo {
        name: "quota_aware",
        summary: "Prefer the resource with the largest share of its quota left.",
        params: QUOTA_AWARE_PARAMS,
        ordered: &[],
        poll_delay: &[],
        make: |p| Box::new(QuotaAware::new(p)),
    },
    AlgorithmInfo {
        name: "p2c",
        summary: "Draw two free resources at random; take the one with fewer leases.",
        params: &[],
        ordered: &[],
        poll_delay: &[],
        make: |_| Box::new(PowerOfTwo),
    },
    AlgorithmInfo {
        name: "retry_after_aware",
        summary: "Keep every worker off an endpoint until its last 429's Retry-After has passed.",
        params: &[],
        ordered: &[],
        poll_delay: &[],
        make: |_| Box::new(RetryAfterAware),
    },
    AlgorithmInfo {
        name: "aimd",
        summary: "Adaptive concurrency limit: +step per limit's worth of successes, ×factor on a 429 or timeout.",
        params: AIMD_PARAMS,
        ordered: LIMIT_ORDER,
        poll_delay: &[],
        make: |p| Box::new(Aimd::new(p)),
    },
    AlgorithmInfo {
        name: "gradient",
        summary: "Adaptive concurrency limit from the long/short latency ratio (Gradient2).",
        params: GRADIENT_PARAMS,
        ordered: LIMIT_ORDER,
        poll_delay: &[],
        make: |p| Box::new(Gradient::new(p)),
    },
    AlgorithmInfo {
        name: "hedged",
        summary: "Send a copy to another endpoint when a request outlasts a recent-latency percentile; first answer wins.",
        params: HEDGED_PARAMS,
        ordered: &[],
        poll_delay: &[],
        make: |p| Box::new(Hedged::new(p)),
    },
    AlgorithmInfo {
        name: "sdk_retry",
        summary: "The OpenAI Python SDK's own retries on one endpoint: Retry-After up to 120 s, else 0.5 s doubling to 8 s, jittered; 2 retries.",
        params: SDK_RETRY_PARAMS,
        ordered: &[["initial_delay_s", "max_delay_s"]],
        poll_delay: &[],
        make: |p| Box::new(SdkClient::new(p)),
    },
    AlgorithmInfo {
        name: "tenacity_exponential",
        summary: "The cookbook's tenacity decorator on one endpoint: uniform wait in [1 s, min(60 s, 2^(n-1) s)], 6 attempts, every error, no Retry-After.",
        params: TENACITY_PARAMS,
        ordered: &[["min_s", "max_s"]],
        poll_delay: &[],
        make: |p| Box::new(TenacityExponential::new(p)),
    },
    AlgorithmInfo {
        name: "budget_pacer",
        summary: "The cookbook's parallel request processor: paces to RPM and TPM budgets (prompt + max_tokens), pauses 15 s after a 429, retries at once, 5 attempts.",
        params: BUDGET_PACER_PARAMS,
        ordered: &[],
        poll_delay: &[],
        make: |p| Box::new(BudgetPacer::new(p)),
    },
    AlgorithmInfo {
        name: "header_pacer",
        summary: "Paces from the x-ratelimit remaining/reset headers of every limit and waits out each 429's Retry-After.",
        params: HEADER_PACER_PARAMS,
        ordered: &[],
        poll_delay: &[],
        make: |p| Box::new(HeaderPacer::new(p)),
    },
    AlgorithmInfo {
        name: "router",
        summary: "LiteLLM's Router, simple-shuffle: random deployment weighted by rpm/tpm, cooldowns, 2 retries per pool, then fallback pools.",
        params: ROUTER_PARAMS,
        ordered: &[],
        poll_delay: &[],
        make: |p| Box::new(Router::new(Routing::SimpleShuffle, p)),
    },
    AlgorithmInfo {
        name: "router_least_busy",
        summary: "`router` routing to the deployment with the fewest requests in flight.",
        params: ROUTER_PARAMS,
        ordered: &[],
        poll_delay: &[],
        make: |p| Box::new(Router::new(Routing::LeastBusy, p)),
    },
    AlgorithmInfo {
        name: "router_usage_based",
        summary: "`router` routing to the lowest tokens used this minute, within each deployment's rpm/tpm.",
        params: ROUTER_PARAMS,
        ordered: &[],
        poll_delay: &[],
        make: |p| Box::new(Router::new(Routing::UsageBased, p)),
    },
    AlgorithmInfo {
        name: "router_latency_based",
        summary: "`router` routing to the lowest recent latency per output token.",
        params: ROUTER_PARAMS,
        ordered: &[],
        poll_delay: &[],
        make: |p| Box::new(Router::new(Routing::LatencyBased, p)),
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
