//! The scenario file as written: a serde and JSON Schema mirror of the TOML format, and nothing
//! more.
//!
//! Every type here derives `Deserialize` (to read a file) and `JsonSchema` (to generate
//! `schema/scenario.schema.json`), rejects unknown keys, and carries its defaults, so a file only
//! needs the keys it changes. The doc comments are user documentation: schemars copies them into
//! the schema's `description`, editors show them on hover and `docs/scenario-format.md` tables
//! are generated from them. Ranges that JSON Schema can express sit next to the field; cross-field
//! rules (trough ≤ peak, unique ids, …) live in [`crate::compile`]. This module never validates,
//! converts units or builds a [`crate::world::World`].
//!
//! Compatibility: every table and key added later (named pools, incidents, per-algorithm tables,
//! an open-loop `[load]`) must be optional with a default that reproduces today's behaviour, so a
//! file that is valid today stays valid and means the same thing.

pub mod objective;
pub mod tokens;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A simbench scenario: a simulated API provider (endpoints with capacity, latency, failures and
/// rate limits), the load the client puts on it, and the client's retry policy. Keys are
/// snake_case with the unit last (`_s` = seconds). Every key except `name`, `summary` and
/// `endpoints` has a default.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "simbench scenario")]
pub struct Scenario {
    /// Path of a base scenario this file builds on, relative to this file (e.g.
    /// "bursty.toml"). The base's keys are the starting point and this file's keys are laid over
    /// them: tables merge key by key, `[[endpoints]]` are matched by `id` (a known id overrides
    /// that endpoint's keys, a new id is appended), other values and arrays are replaced. A base
    /// may extend another; cycles are errors. Default: absent (a self-contained file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub extends: Option<String>,

    /// Identifier of the world, shown in reports and used to label runs. Required; must not be
    /// empty. Example: "bursty_provider".
    #[schemars(length(min = 1))]
    pub name: String,

    /// One paragraph describing the world and the real-world situation it stands for, shown by
    /// `simbench list` and in reports. Required; must not be empty.
    #[schemars(length(min = 1))]
    pub summary: String,

    /// Base random seed. Run k of a sweep uses seed + k, so the same seed replays the same
    /// run. Default 20260917; range 0 to 9223372036854775807.
    #[serde(default = "default_seed")]
    #[schemars(range(min = 0, max = 9_223_372_036_854_775_807_i64))]
    pub seed: u64,

    /// Number of jobs in the client's queue (each job is `steps_per_job` sequential steps). The
    /// size of the batch the client must get through. Default 3000; range 1 to 10000000.
    #[serde(default = "default_jobs")]
    #[schemars(range(min = 1, max = 10_000_000))]
    pub jobs: u32,

    /// Closed loop only (`[load] model = "closed"`, the default): the number of client
    /// workers; each takes the next job when it finishes one. The client's parallelism (an open
    /// loop or a trace caps it with `load.max_in_flight`). Default 32; range 1 to 100000.
    #[serde(default = "default_concurrency")]
    #[schemars(range(min = 1, max = 100_000))]
    pub concurrency: u32,

    /// Admission cutoff (seconds): a closed loop claims no job after this much simulated time,
    /// and an open loop or a trace lets no job arrive at or after it (one that arrived before
    /// still starts when `max_in_flight` allows); started jobs run to the end (it is not a
    /// truncation). The length of the working session being modelled. Default 600.0; must be
    /// > 0.
    #[serde(default = "default_horizon_s")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e12))]
    pub horizon_s: f64,

    /// Sequential steps per job; a step is retried as a whole by the retry policy. A multi-stage
    /// workflow such as "search, then fetch, then summarise". Default 3; range 1 to 1000.
    #[serde(default = "default_steps_per_job")]
    #[schemars(range(min = 1, max = 1000))]
    pub steps_per_job: u32,

    /// Sequential calls (leases and requests) per step attempt; if one fails the attempt fails.
    /// Requests that must all succeed together. Default 2; range 1 to 1000.
    #[serde(default = "default_calls_per_step")]
    #[schemars(range(min = 1, max = 1000))]
    pub calls_per_step: u32,

    /// The provider-wide capacity rhythm (a daily or hourly load swing at the vendor). Optional;
    /// every key has a default.
    #[serde(default)]
    pub cycle: Cycle,

    /// The client's retry policy, the same for every algorithm. Optional; every key has a
    /// default.
    #[serde(default)]
    pub retry: Retry,

    /// The client's circuit breaker, which stops using an endpoint after repeated failures.
    /// Optional; every key has a default.
    #[serde(default)]
    pub breaker: Breaker,

    /// Provider behaviour that is the same for every endpoint. Optional; every key has a default.
    #[serde(default)]
    pub provider: Provider,

    /// Algorithms this world cannot meaningfully exercise, as `algorithm_name = "reason"`. They
    /// are left out of the default comparison and of every winner; requesting one explicitly
    /// still runs it, with a warning. Keys must be registered algorithm names. Default: empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "unsuited_schema")]
    pub unsuited: BTreeMap<String, String>,

    /// Strategy parameters and named variants, one table per algorithm. `[algorithms.backoff]`
    /// (a registered name) sets that strategy's parameters; any other name is a named variant
    /// and needs `kind = "<registered name>"` plus parameters, e.g. `[algorithms.backoff_slow]
    /// kind = "backoff", base = 1.0`, and is compared alongside the registered strategies.
    /// Parameter names, ranges and defaults come from the algorithm registry (`simbench list`),
    /// so they are checked when the file is compiled rather than by this schema. Default: empty
    /// (every strategy with its defaults, no variants).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "algorithms_schema")]
    pub algorithms: BTreeMap<String, AlgorithmTable>,

    /// How the harness offers load: a closed loop of `concurrency` workers (the default), an
    /// open loop of arrivals at a rate, or the arrivals of a recorded log (a trace).
    #[serde(default)]
    pub load: Load,

    /// When a run counts as a measurement of the provider rather than of the harness's own
    /// queue (the validity gate).
    #[serde(default)]
    pub validity: Validity,

    /// What the verdict optimises: a metric, limits on others and tie-breaks. Default: absent
    /// (most `jobs_done`, then lower `successful_job_latency_p99_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<objective::Objective>,

    /// Assertions a CI job checks on the report (`simbench run` exits 3 when one fails).
    /// Default: absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thresholds: Option<objective::Thresholds>,

    /// The client's pools (vendors), in failover order: each endpoint belongs to one pool, jobs
    /// draw from the first (the primary), and `failover` tries the pools in this order. Default:
    /// absent, which means one pool holding every endpoint with least-busy selection (the
    /// reference's single pool). Names must be unique and every pool needs an endpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<Pool>,

    /// Scripted incidents: each changes some endpoints for a window of simulated time
    /// `[start_s, end_s)`, the same for every algorithm and seed. Several may overlap (factors
    /// multiply). Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incidents: Vec<Incident>,

    /// How recovery after the incidents is measured (`recovery_s`, `goodput_lost_jobs`).
    /// Optional; every key has a default; only used when some incident ends.
    #[serde(default)]
    pub recovery: Recovery,

    /// Request sizes in tokens, for LLM worlds: with it, endpoints can publish token limits,
    /// take their latency from tokens and charge a price, and the token metrics apply. Default:
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<tokens::Tokens>,

    /// The provider's endpoints, in pool order (that order breaks ties between equally good
    /// endpoints and orders per-endpoint tables). Required; at least one; ids must be unique.
    #[schemars(length(min = 1))]
    pub endpoints: Vec<Endpoint>,
}

/// One client-side pool: a named group of endpoints (a vendor, a region) with its own selection
/// rule.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Pool {
    /// Pool name, referenced by `endpoints[].pool` and incidents. Required; must not be empty;
    /// unique among pools.
    #[schemars(length(min = 1))]
    pub name: String,

    /// How a free endpoint is picked inside this pool: `"least_busy"` (default; lowest
    /// active/capacity, round-robin among equals, as the reference does), `"round_robin"`
    /// (rotate over the free endpoints whatever their load) or `"in_order"` (the first free
    /// endpoint in file order: spill over only when it is full).
    #[serde(default)]
    pub selection: Selection,
}

/// A pool's selection rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Selection {
    // Lowest load ratio, round-robin among equals.
    #[default]
    LeastBusy,
    // Rotate over the free endpoints.
    RoundRobin,
    // The first free endpoint in file order.
    InOrder,
}

/// One scripted incident: what changes, where, and when.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Incident {
    /// What happens: `"outage"` (requests refused at once or failed, see `effect`),
    /// `"capacity"` (concurrency limit times `factor`), `"latency"` (service time times
    /// `factor`), `"storm"` (a forced failure storm at `error_rate`), `"rate_limit"` (token
    /// refill times `factor`) or `"revoke"` (the key is revoked: every request fails with a
    /// fatal 401 from `start_s` on). Required.
    pub kind: IncidentKind,

    /// Ids of the endpoints affected. Default: absent, meaning every endpoint of `pool`, or
    /// every endpoint when `pool` is absent too. Not allowed together with `pool`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub endpoints: Option<Vec<String>>,

    /// Name of a pool whose endpoints are all affected. Default: absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub pool: Option<String>,

    /// When the incident starts (seconds of simulated time, inclusive). Required; must be >= 0.
    #[schemars(range(min = 0, max = 1e12))]
    pub start_s: f64,

    /// When it ends (seconds, exclusive); must be > `start_s`. Required for every kind but
    /// `"outage"`, for which absent means for good (a dead endpoint), and `"revoke"`, which
    /// always lasts for good and takes no end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1e12))]
    pub end_s: Option<f64>,

    /// `"outage"` only: `"refuse"` (default; connection refused at once, no time spent) or
    /// `"error"` (admitted, then a 503 after the usual latency: a hung backend).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<OutageEffect>,

    /// `"capacity"`, `"latency"` and `"rate_limit"` only (required by them): the multiplier
    /// applied to the endpoint's concurrency limit, service time or token refill rate.
    /// Must be > 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e6))]
    pub factor: Option<f64>,

    /// `"storm"` only: the error rate of admitted requests during the storm. Default: the
    /// endpoint's `failures.storm_error_rate`. Range 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1))]
    pub error_rate: Option<f64>,
}

/// The kind of a scripted incident.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IncidentKind {
    // Requests refused or failed.
    Outage,
    // Concurrency limit scaled.
    Capacity,
    // Service time scaled.
    Latency,
    // A forced failure storm.
    Storm,
    // Token refill scaled.
    RateLimit,
    // Key revoked: fatal errors.
    Revoke,
}

impl IncidentKind {
    /// The name written in files.
    pub fn name(self) -> &'static str {
        match self {
            IncidentKind::Outage => "outage",
            IncidentKind::Capacity => "capacity",
            IncidentKind::Latency => "latency",
            IncidentKind::Storm => "storm",
            IncidentKind::RateLimit => "rate_limit",
            IncidentKind::Revoke => "revoke",
        }
    }
}

/// How an outage shows itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutageEffect {
    // Connection refused at once.
    #[default]
    Refuse,
    // Admitted, then a 503 after its latency.
    Error,
}

/// How recovery after an incident is measured: goodput (jobs completed per second) before the
/// first incident starts is the baseline; the run has recovered once goodput over `window_s`
/// is back to `threshold` times the baseline after the last incident ends.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Recovery {
    /// Width of the sliding window goodput is measured over (seconds). Default 10.0; must be
    /// > 0.
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e9))]
    pub window_s: f64,

    /// Share of the baseline goodput that counts as recovered. Default 0.9; must be > 0 and
    /// <= 1.
    #[schemars(extend("exclusiveMinimum" = 0), range(max = 1))]
    pub threshold: f64,
}

impl Default for Recovery {
    fn default() -> Self {
        Recovery {
            window_s: 10.0,
            threshold: 0.9,
        }
    }
}

/// One `[algorithms.<name>]` table: an optional `kind` and parameter values by name.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct AlgorithmTable {
    /// The registered strategy this table configures; required for a named variant, and if
    /// given for a registered name it must be that name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Parameter values by name, as written.
    #[serde(flatten)]
    pub params: BTreeMap<String, f64>,
}

/// The load model. In a closed loop, `concurrency` workers each run one job at a time (pausing
/// `think_s` between jobs when given), so the harness never has more in flight than it can
/// handle. In an open loop, jobs arrive at
/// `rate_per_s` whether or not earlier ones have finished, and wait in the harness's queue when
/// `max_in_flight` jobs are already running: the harness's own congestion then shows up as
/// queue wait, as in a load generator that fires requests on a schedule. A trace replays the
/// jobs of a log: each arrives when its first request was sent, with the sizes the log
/// recorded, and queues as in an open loop; the strategies decide everything else.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Load {
    /// `"closed"` (default), `"open"` or `"trace"` (the arrivals of a real log, replayed).
    pub model: LoadModel,

    /// Trace only: the request log whose jobs' arrival times (and request sizes, when the log
    /// has tokens and the world `[tokens]`) are replayed, its path relative to the file that
    /// names it, like `extends`. A request log (JSON Lines), HAR 1.2 or OTLP JSON spans, told
    /// apart as `simbench fit` does. Required for `"trace"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub trace: Option<String>,

    /// Trace only: how much faster than recorded the trace is replayed (2 = every gap
    /// halved, twice the load). Default 1; must be > 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e6))]
    pub speed: Option<f64>,

    /// Trace only: the time on the log's own clock that becomes the world's time 0 (seconds).
    /// Default: the log's first request (or an earlier `arrived_s`), so a log on any clock
    /// starts at once. A simbench request log counts from its run's start: `origin_s = 0`
    /// replays it at its own times. Must not be after the log's first arrival.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -1e15, max = 1e15))]
    pub origin_s: Option<f64>,

    /// Open loop only: mean job arrival rate (jobs per second). Required for `"open"`; must be
    /// > 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e9))]
    pub rate_per_s: Option<f64>,

    /// Open loop only: `"poisson"` (default; exponential gaps, like independent users, the
    /// first after a gap of its own) or `"uniform"` (evenly spaced from time 0, like a
    /// fixed-rate load generator).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<Arrivals>,

    /// Open loop and trace: most jobs in flight at once; later arrivals queue in the harness.
    /// Default: absent (unbounded). Range 1 to 1000000.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1_000_000))]
    pub max_in_flight: Option<u32>,

    /// Closed loop only: each worker's pause between the end of a job and the start of its
    /// next, in seconds (a user's think time, an agent's own work between tasks, a real
    /// client's overhead). Default 0: the next job starts at the same instant.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1e9))]
    pub think_s: Option<f64>,

    /// Closed loop only: `"fixed"` (default; every pause is `think_s`) or `"exponential"`
    /// (pauses of mean `think_s`, like independent users).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think: Option<Think>,
}

/// How a closed loop's pauses between jobs are spread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Think {
    // Every pause `think_s`.
    #[default]
    Fixed,
    // Exponential pauses of mean `think_s`.
    Exponential,
}

/// The load model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LoadModel {
    // Workers that each run one job at a time.
    #[default]
    Closed,
    // Arrivals on a schedule, queueing in the harness.
    Open,
    // The arrivals of a recorded log, queueing in the harness.
    Trace,
}

/// How open-loop arrivals are spaced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    // Exponential gaps (a Poisson process).
    #[default]
    Poisson,
    // Exactly 1 / rate_per_s apart.
    Uniform,
}

/// The validity gate: a run whose latency is dominated by the harness's own queue measures the
/// harness, not the provider, and is labelled INVALID instead of being ranked.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Validity {
    /// Largest allowed share of the p99 observed latency spent waiting in the harness
    /// (`queue_wait_p99 / observed_p99`). Default 0.05; range 0 to 1.
    #[schemars(range(min = 0, max = 1))]
    pub max_queue_share: f64,

    /// The concurrency knee of this provider, if known (from `simbench sweep` or elsewhere): a
    /// run using more concurrency than this is invalid. Default: absent. Range 1 to 1000000.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1_000_000))]
    pub knee_concurrency: Option<u32>,
}

impl Default for Validity {
    fn default() -> Self {
        Validity {
            max_queue_share: 0.05,
            knee_concurrency: None,
        }
    }
}

/// The provider-wide capacity rhythm: every endpoint's capacity is multiplied by a raised cosine
/// that starts at `trough` (at `phase_s`) and reaches `peak` half a period later.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Cycle {
    /// Length of one cycle (seconds); 0 means no rhythm (capacity stays at `peak`). How fast the
    /// vendor's spare capacity swings. Default 120.0; must be 0 or >= 0.001 (a faster rhythm is
    /// below the resolution of the simulated clock).
    #[schemars(range(min = 0, max = 1e12))]
    pub period_s: f64,

    /// Capacity factor at the bottom of the cycle (a fraction of nominal capacity). Default
    /// 0.35; must be >= 0 and <= `peak`.
    #[schemars(range(min = 0, max = 1e6))]
    pub trough: f64,

    /// Capacity factor at the top of the cycle (1.0 = nominal capacity). Default 1.0; must be
    /// > 0 and >= `trough`.
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e6))]
    pub peak: f64,

    /// Time shift of the cycle (seconds): the trough falls at `phase_s` (and every period after).
    /// Default 0.0; any finite number.
    #[schemars(range(min = -1e12, max = 1e12))]
    pub phase_s: f64,
}

impl Default for Cycle {
    fn default() -> Self {
        Cycle {
            period_s: 120.0,
            trough: 0.35,
            peak: 1.0,
            phase_s: 0.0,
        }
    }
}

/// The client's retry policy: how often and how long a failed step attempt is retried.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Retry {
    /// Attempts per step, the first one included (1 = never retry). Default 5; range 1 to 1000.
    #[schemars(range(min = 1, max = 1000))]
    pub max_attempts: u32,

    /// First backoff delay (seconds), used when the error carries no Retry-After. Default 0.5;
    /// must be >= 0.
    #[schemars(range(min = 0, max = 1e9))]
    pub base: f64,

    /// Growth of the backoff delay per further attempt: delay k = min(cap, base * factor^(k-1)).
    /// Default 2.0; must be >= 1.
    #[schemars(range(min = 1, max = 1e6))]
    pub factor: f64,

    /// Largest backoff delay before jitter (seconds). Default 8.0; must be >= 0 and >= `base`.
    #[schemars(range(min = 0, max = 1e9))]
    pub cap: f64,

    /// How the backoff delay is randomised so that clients do not retry in lockstep: "none"
    /// (the raw delay), "full" (uniform in [0, delay)) or "equal" (delay/2 plus uniform in
    /// [0, delay/2)). Default "full".
    pub jitter: Jitter,

    /// Retry errors of a retryable class: rate limit (429), timeout, connection reset,
    /// upstream 5xx, and local rejections by `throttle`. Default true.
    pub retry_classified: bool,

    /// Retry errors of unknown class, such as "no endpoint available". Default false.
    pub retry_unknown: bool,

    /// Spread the clients that were told the same Retry-After: wait Retry-After × (1 + spread ×
    /// u), u uniform in [0, 1) from the attempt's retry stream, instead of exactly Retry-After.
    /// The jitter above never applies to a Retry-After, so without this every client refused
    /// at once comes back at once. Default 0 (wait exactly Retry-After, as the reference);
    /// range 0 to 100.
    #[schemars(range(min = 0, max = 100))]
    pub retry_after_spread: f64,

    /// Give up on a step once retrying would exceed this much time (seconds) since the step
    /// started. A deadline on each unit of work. Default: absent (no limit); must be > 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e12))]
    pub max_total_s: Option<f64>,

    /// A retry budget shared by every worker (Finagle's RetryBudget): a retry is allowed only
    /// while the retries of the last `window_s` stay within `ratio` of the steps' first attempts
    /// in that window plus `min_per_s * window_s`; a retry it denies gives up its step. Default:
    /// absent (retries limited only by `max_attempts` and `max_total_s`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<RetryBudget>,

    /// Client-side throttling (Google SRE book, "Handling Overload"): before each request to an
    /// endpoint, reject it locally with probability max(0, (requests - k * accepts) /
    /// (requests + 1)) over that endpoint's last `window_s`. A local rejection fails the attempt
    /// with class "throttled" (retried like a 429 without Retry-After). Default: absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttle: Option<Throttle>,
}

/// The retry budget: retries over a sliding window may not exceed a share of first attempts
/// plus a small reserve, so retries cannot multiply the load on a provider that is already
/// refusing.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RetryBudget {
    /// Retries allowed per first attempt in the window. Default 0.2 (Finagle's 20 %); range 0
    /// to 1000.
    #[schemars(range(min = 0, max = 1000))]
    pub ratio: f64,

    /// Retries per second always allowed, whatever the first attempts (a reserve for a quiet
    /// client). Default 10.0; range 0 to 1e6.
    #[schemars(range(min = 0, max = 1e6))]
    pub min_per_s: f64,

    /// Length of the sliding window (seconds). Default 10.0; must be > 0.
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e9))]
    pub window_s: f64,
}

impl Default for RetryBudget {
    fn default() -> Self {
        RetryBudget {
            ratio: 0.2,
            min_per_s: 10.0,
            window_s: 10.0,
        }
    }
}

/// Adaptive client-side throttling: the client stops sending what the endpoint will most
/// likely refuse, in proportion to how much more it asks than the endpoint accepts.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Throttle {
    /// The multiplier K: requests are throttled once they exceed K times the accepted ones
    /// (accepted = not refused with a 429). Default 2.0; range 1 to 1000 (lower is more
    /// aggressive).
    #[schemars(range(min = 1, max = 1000))]
    pub k: f64,

    /// Length of the sliding window the counts cover (seconds). Default 120.0; must be > 0.
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e9))]
    pub window_s: f64,
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle {
            k: 2.0,
            window_s: 120.0,
        }
    }
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            max_attempts: 5,
            base: 0.5,
            factor: 2.0,
            cap: 8.0,
            jitter: Jitter::Full,
            retry_classified: true,
            retry_unknown: false,
            retry_after_spread: 0.0,
            max_total_s: None,
            budget: None,
            throttle: None,
        }
    }
}

/// How a backoff delay is randomised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Jitter {
    // Plain comments, not doc comments: documented variants would turn the schema's simple
    // `enum` into a `oneOf`, which gives worse errors in editors.
    // The raw delay.
    None,
    // Uniform in `[0, delay)`.
    Full,
    // `delay/2` plus uniform in `[0, delay/2)`.
    Equal,
}

/// The client's circuit breaker: consecutive failures on one endpoint first degrade it (it is
/// avoided for `cooldown_s`), then mark it dead (never used again in the run).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Breaker {
    /// Consecutive failures that mark an endpoint DEGRADED. Default 3; must be >= 1.
    #[schemars(range(min = 1))]
    pub degrade_after: u32,

    /// Consecutive failures that mark an endpoint DEAD. Default 8; must be >= `degrade_after`.
    #[schemars(range(min = 1))]
    pub dead_after: u32,

    /// How long (seconds) a DEGRADED endpoint is avoided unless a success ends it early.
    /// Default 30.0; must be >= 0.
    #[schemars(range(min = 0, max = 1e9))]
    pub cooldown_s: f64,
}

impl Default for Breaker {
    fn default() -> Self {
        Breaker {
            degrade_after: 3,
            dead_after: 8,
            cooldown_s: 30.0,
        }
    }
}

/// Provider behaviour shared by every endpoint.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Provider {
    /// Retry-After (seconds) the provider sends when it refuses a request for lack of capacity
    /// (HTTP 503 "busy"), whatever the endpoint's rate limit says. Default 0.25; must be >= 0.
    #[schemars(range(min = 0, max = 1e9))]
    pub capacity_retry_after_s: f64,

    /// How an injected failure splits into kinds. Optional; the three shares must sum to 1.
    pub failure_kinds: FailureKinds,
}

impl Default for Provider {
    fn default() -> Self {
        Provider {
            capacity_retry_after_s: 0.25,
            failure_kinds: FailureKinds::default(),
        }
    }
}

/// Shares of injected failures by kind; they must sum to 1 (within 1e-9).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FailureKinds {
    /// Share of failures that are HTTP 503 responses. Default 0.5; range 0 to 1.
    #[schemars(range(min = 0, max = 1))]
    pub http_503: f64,

    /// Share of failures that are connection resets. Default 0.3; range 0 to 1.
    #[schemars(range(min = 0, max = 1))]
    pub connection: f64,

    /// Share of failures that are read timeouts. Default 0.2; range 0 to 1.
    #[schemars(range(min = 0, max = 1))]
    pub timeout: f64,
}

impl Default for FailureKinds {
    fn default() -> Self {
        FailureKinds {
            http_503: 0.5,
            connection: 0.3,
            timeout: 0.2,
        }
    }
}

/// One endpoint of the provider (for example one region or one API key), and the client-side
/// resource of the same id.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    /// Endpoint id, shown in reports. Required; must not be empty, blanks only or hold a control character
    /// (a line break, a tab); unique among endpoints.
    #[schemars(length(min = 1))]
    pub id: String,

    /// Nominal number of requests the endpoint serves at once; also the client's concurrency
    /// cap for it. The provider's real limit is capacity * weight * cycle factor, rounded, at
    /// least 1. Required; range 1 to 1000000.
    #[schemars(range(min = 1, max = 1_000_000))]
    pub capacity: u32,

    /// Share of the provider cycle this endpoint feels (a multiplier on `capacity`). Default
    /// 1.0; must be > 0.
    #[serde(default = "default_weight")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e6))]
    pub weight: f64,

    /// Declared quota in request units, which quota-aware clients budget against (the vendor's
    /// published allowance). Default: absent; absent or 0 means no quota; must be >= 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1e15))]
    pub quota_units: Option<f64>,

    /// How long a served request takes. Required (as a table, whose keys all have defaults).
    pub latency: Latency,

    /// Random errors and failure storms. Optional; every key has a default.
    #[serde(default)]
    pub failures: Failures,

    /// Token-bucket rate limit (HTTP 429 with Retry-After when empty). Default: absent, which
    /// means unmetered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,

    /// The pool (vendor) this endpoint belongs to: a name from `[[pools]]`. Default: the first
    /// pool; required to be a declared name when `[[pools]]` is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub pool: Option<String>,

    /// A reuse cache (a prompt or session cache): a call of a job that lands on an endpoint an
    /// earlier call of the same job was served by, within `ttl_s`, is faster and cheaper.
    /// Default: absent (no cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<Cache>,

    /// Published limits, all enforced at once (requests and tokens per minute, a daily token
    /// quota, ...); a request is refused (429, with the Retry-After of the limit that refused
    /// it) unless every limit has room. Independent of `rate_limit`. Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub limits: Vec<tokens::Limit>,

    /// When tokens count against the token `limits`: `"admission"` (default; prompt plus
    /// `max_tokens` at admission, the unused part given back at the end), `"input"` (the prompt
    /// only) or `"completion"` (prompt plus output written, at the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_charge: Option<tokens::TokenCharge>,

    /// Price per million tokens (needs `[tokens]`). Default: absent (not priced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<tokens::Price>,

    /// What the endpoint answers when all its capacity is in use: `"rate_limit"` (default; a
    /// 429 with `provider.capacity_retry_after_s`) or `"overloaded"` (an error without
    /// Retry-After, as LLM vendors answer when saturated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturated: Option<tokens::Saturated>,

    /// The client's own cap on requests in flight to this endpoint. Default: absent, which
    /// means `capacity` (the provider's limit doubles as the client's cap). Range 1 to 1000000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1_000_000))]
    pub client_cap: Option<u32>,
}

/// A per-endpoint reuse cache.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Cache {
    /// How long a job's context stays cached after a call of it was served (seconds). Default
    /// 60.0; must be > 0.
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e9))]
    pub ttl_s: f64,

    /// Multiplier on the service time of a cache hit. Default 0.3; must be > 0.
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e6))]
    pub latency_factor: f64,

    /// Tokens a cache hit costs, against 1 for a miss (on metered endpoints the bucket is
    /// charged this much). Default 0.25; range 0 to 1.
    #[schemars(range(min = 0, max = 1))]
    pub token_cost: f64,
}

impl Default for Cache {
    fn default() -> Self {
        Cache {
            ttl_s: 60.0,
            latency_factor: 0.3,
            token_cost: 0.25,
        }
    }
}

/// Lognormal latency with an occasional slow tail: median * exp(sigma * Z), multiplied by
/// `tail_factor` with probability `tail_rate`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Latency {
    /// Shape of the service time: `"lognormal"` (default; `median_s` and `sigma`),
    /// `"exponential"` or `"constant"` (both set by `mean_s`; for checks against queueing
    /// theory), `"tokens"` (from the call's tokens and the endpoint's load: `ttft_s`,
    /// `ttft_per_1k_input_s`, `ttft_load`, `decode_tokens_per_s`, `load_slowdown`; needs
    /// `[tokens]`), or `"empirical"` (measured `quantiles`, or `quantiles_csv`). The slow tail
    /// applies to all but `"empirical"`, whose quantiles already hold it.
    pub distribution: Distribution,

    /// Mean service time for `"exponential"` and `"constant"` (seconds); required by them and
    /// not allowed with `"lognormal"`. Must be > 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e6))]
    pub mean_s: Option<f64>,

    /// Median service time of a request (seconds). Default 0.4; must be > 0.
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e6))]
    pub median_s: f64,

    /// Spread of the service time: the standard deviation of its logarithm (0 = every request
    /// takes exactly `median_s`). Default 0.55; must be >= 0.
    #[schemars(range(min = 0, max = 10))]
    pub sigma: f64,

    /// Probability that a request lands in the slow tail (cold caches, GC pauses, queueing).
    /// Default 0.02; range 0 to 1.
    #[schemars(range(min = 0, max = 1))]
    pub tail_rate: f64,

    /// Multiplier applied to a slow-tail request's latency. Default 6.0; must be > 0.
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e6))]
    pub tail_factor: f64,

    /// `"tokens"` shape: time to first token of an empty prompt on an idle endpoint (seconds).
    /// Required by it; must be >= 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1e6))]
    pub ttft_s: Option<f64>,

    /// `"tokens"` shape: extra time to first token per 1,000 prompt tokens (seconds). Default
    /// 0; must be >= 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1e6))]
    pub ttft_per_1k_input_s: Option<f64>,

    /// `"tokens"` shape: how much the time to first token grows at full load (1 = doubles when
    /// the endpoint is full). Default 0; must be >= 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1e6))]
    pub ttft_load: Option<f64>,

    /// `"tokens"` shape: output tokens per second of one stream on an idle endpoint. Required
    /// by it; range 0.001 to 1000000000 (slower would put requests past the end of simulated
    /// time).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.001, max = 1e9))]
    pub decode_tokens_per_s: Option<f64>,

    /// `"empirical"` shape: points `[quantile, seconds]` of the measured service time, read as
    /// a piecewise-linear inverse CDF: quantiles rise from 0 to 1 (first 0, last 1), seconds
    /// never fall and end above 0. At least 2. Give these or `quantiles_csv`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 100_000))]
    pub quantiles: Option<Vec<[f64; 2]>>,

    /// `"empirical"` shape: a CSV file of `quantile,seconds` rows (an optional header line,
    /// `#` comments), its path relative to the file that names it, like `extends`. Read when
    /// the world is loaded, as if its rows were written as `quantiles`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub quantiles_csv: Option<String>,

    /// `"tokens"` shape: how much each stream slows at full load (0.5 = a stream runs at 2/3
    /// speed when the endpoint is full). Default 0; must be >= 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1e6))]
    pub load_slowdown: Option<f64>,
}

/// The shape of a latency distribution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    // median_s * exp(sigma * Z).
    #[default]
    Lognormal,
    // Exponential with mean mean_s.
    Exponential,
    // Always mean_s.
    Constant,
    // ttft + output / speed, from the call's tokens and the endpoint's load.
    Tokens,
    // Through the measured quantiles.
    Empirical,
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            distribution: Distribution::Lognormal,
            mean_s: None,
            median_s: 0.4,
            sigma: 0.55,
            tail_rate: 0.02,
            tail_factor: 6.0,
            ttft_s: None,
            ttft_per_1k_input_s: None,
            ttft_load: None,
            decode_tokens_per_s: None,
            load_slowdown: None,
            quantiles: None,
            quantiles_csv: None,
        }
    }
}

/// Independent request errors plus failure storms: at every multiple of `storm_check_s` a storm
/// starts with probability `storm_rate` and lasts `storm_duration_s`, during which the error
/// rate is `storm_error_rate`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Failures {
    /// Probability that an admitted request fails outside a storm (background error rate).
    /// Default 0.01; range 0 to 1.
    #[schemars(range(min = 0, max = 1))]
    pub error_rate: f64,

    /// Probability that a storm (an incident at the vendor) starts at each check instant.
    /// Default 0.05; range 0 to 1.
    #[schemars(range(min = 0, max = 1))]
    pub storm_rate: f64,

    /// Spacing of the storm check instants (seconds). Default 10.0; must be > 0.
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e9))]
    pub storm_check_s: f64,

    /// Length of a storm (seconds); 0 disables storms. Default 30.0; must be >= 0.
    #[schemars(range(min = 0, max = 1e9))]
    pub storm_duration_s: f64,

    /// Probability that an admitted request fails during a storm. Default 0.5; range 0 to 1.
    #[schemars(range(min = 0, max = 1))]
    pub storm_error_rate: f64,
}

impl Default for Failures {
    fn default() -> Self {
        Failures {
            error_rate: 0.01,
            storm_rate: 0.05,
            storm_check_s: 10.0,
            storm_duration_s: 30.0,
            storm_error_rate: 0.5,
        }
    }
}

/// A token bucket that refills `per_window` tokens per `window_s`, holds up to
/// `per_window * burst`, and tightens (refills more slowly) each time a client is refused.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimit {
    /// Requests the bucket refills per window: the vendor's rate limit as it acts, announced in
    /// no header (published limits, which answers announce, are `limits`). Default 300; an
    /// integer >= 1.
    #[schemars(range(min = 1))]
    pub per_window: u64,

    /// Length of the rate-limit window (seconds). Default 60.0; must be > 0.
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e9))]
    pub window_s: f64,

    /// Bucket size as a multiple of `per_window` (how much unused allowance can be saved up for
    /// a burst). Default 1.5; must be > 0, and the bucket must hold at least one request:
    /// `per_window * burst >= 1`.
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e6))]
    pub burst: f64,

    /// Retry-After sent with a 429 refusal (seconds). Default 1.0; must be >= 0.
    #[schemars(range(min = 0, max = 1e9))]
    pub retry_after_s: f64,

    /// Factor applied to the refill allowance on every refusal (a provider that punishes
    /// clients who ignore 429s). Default 0.5; must be > 0 and <= 1 (1 = never tightens).
    #[schemars(extend("exclusiveMinimum" = 0), range(max = 1))]
    pub tightening: f64,

    /// Lowest allowance tightening can reach, as a fraction of the full refill rate. Default
    /// 0.25; must be > 0 and <= 1.
    #[schemars(extend("exclusiveMinimum" = 0), range(max = 1))]
    pub tightening_floor: f64,

    /// Allowance regained per elapsed window once refusals stop (1.0 = back to full after one
    /// quiet window). Default 1.0; must be >= 0.
    #[schemars(range(min = 0, max = 1e6))]
    pub recovery_per_window: f64,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit {
            per_window: 300,
            window_s: 60.0,
            burst: 1.5,
            retry_after_s: 1.0,
            tightening: 0.5,
            tightening_floor: 0.25,
            recovery_per_window: 1.0,
        }
    }
}

fn default_seed() -> u64 {
    20_260_917
}
fn default_jobs() -> u32 {
    3000
}
fn default_concurrency() -> u32 {
    32
}
fn default_horizon_s() -> f64 {
    600.0
}
fn default_steps_per_job() -> u32 {
    3
}
fn default_calls_per_step() -> u32 {
    2
}
fn default_weight() -> f64 {
    1.0
}

/// `[unsuited]`: keys are registry names (listed in the schema so editors can complete them),
/// values are non-empty reasons.
fn unsuited_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = crate::client::registry::names().collect();
    schemars::json_schema!({
        "type": "object",
        "propertyNames": { "enum": names },
        "additionalProperties": {
            "type": "string",
            "minLength": 1,
            "description": "Why this world cannot exercise the algorithm; shown with the \
                            warning when it is asked for.",
        },
    })
}

/// `[algorithms]`: keys are algorithm or variant names, values are tables of an optional `kind`
/// (a registered name) and numeric parameters. Which parameters exist and their ranges depend on
/// the kind, so they are checked against the registry when the file is compiled.
fn algorithms_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": {
            "type": "object",
            "description": "Parameters of one algorithm (a registered name) or of a named \
                            variant (any other name, with `kind`); see `simbench list` for \
                            each strategy's parameters, units, defaults and ranges.",
            "properties": {
                "kind": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The registered strategy this table configures: required \
                                    for a named variant; for a registered name, if given, it \
                                    must be that name."
                }
            },
            "additionalProperties": {
                "type": "number",
                "description": "A parameter value; its unit, default and range are those the \
                                strategy declares (`simbench list`)."
            }
        }
    })
}
