//! The compiled world: a frozen, validated description of one scenario.
//!
//! A `World` is built only by [`crate::compile`] from a checked scenario file, so every value in
//! it is in range and every derived constant (refill rate, burst size, cycle shape) is computed
//! once. Nothing here is mutable after construction and nothing here knows about TOML, serde or
//! files: the simulator takes a `&World` and cannot change it.
//!
//! Times are `f64` seconds, as in the reference, so that the reference's own arithmetic can be
//! reproduced exactly (see `docs/design.md`, "Why f64 seconds?").

use std::collections::BTreeMap;
use std::f64::consts::PI;

use crate::objective::Objective;
use crate::threshold::Assertion;

pub use crate::tokens::{Charge, Limit, Price, Saturation, TokenLatency, Tokens};

/// One scenario, compiled. Construct it with [`crate::compile`].
#[derive(Clone, Debug)]
pub struct World {
    pub(crate) name: String,
    pub(crate) summary: String,
    pub(crate) seed: u64,
    pub(crate) jobs: u32,
    pub(crate) concurrency: u32,
    pub(crate) horizon_s: f64,
    pub(crate) steps_per_job: u32,
    pub(crate) calls_per_step: u32,
    pub(crate) cycle: Cycle,
    pub(crate) retry: RetryPolicy,
    pub(crate) breaker: Breaker,
    pub(crate) capacity_retry_after_s: f64,
    pub(crate) failure_kinds: FailureKinds,
    pub(crate) endpoints: Vec<Endpoint>,
    pub(crate) unsuited: BTreeMap<String, String>,
    pub(crate) algorithms: Vec<Variant>,
    pub(crate) load: Load,
    pub(crate) validity: Validity,
    pub(crate) pools: Vec<PoolSpec>,
    pub(crate) incidents: Vec<Incident>,
    pub(crate) recovery: Recovery,
    pub(crate) tokens: Option<Tokens>,
    pub(crate) objective: Option<Objective>,
    pub(crate) thresholds: Vec<Assertion>,
}

impl World {
    /// Identifier of the world, used in reports.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// One-paragraph description of the world.
    pub fn summary(&self) -> &str {
        &self.summary
    }
    /// Base seed; run `k` of a sweep uses `seed + k`.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// Number of jobs in the queue.
    pub fn jobs(&self) -> u32 {
        self.jobs
    }
    /// Number of closed-loop workers.
    pub fn concurrency(&self) -> u32 {
        self.concurrency
    }
    /// Simulated time after which no new job is claimed \[s\].
    pub fn horizon_s(&self) -> f64 {
        self.horizon_s
    }
    /// Sequential steps per job.
    pub fn steps_per_job(&self) -> u32 {
        self.steps_per_job
    }
    /// Sequential calls per step attempt.
    pub fn calls_per_step(&self) -> u32 {
        self.calls_per_step
    }
    /// The provider-wide capacity rhythm.
    pub fn cycle(&self) -> &Cycle {
        &self.cycle
    }
    /// The client retry policy shared by every algorithm.
    pub fn retry(&self) -> &RetryPolicy {
        &self.retry
    }
    /// The client circuit breaker thresholds.
    pub fn breaker(&self) -> &Breaker {
        &self.breaker
    }
    /// Retry-After carried by a capacity refusal \[s\].
    pub fn capacity_retry_after_s(&self) -> f64 {
        self.capacity_retry_after_s
    }
    /// How a provider failure splits into 503 / connection reset / read timeout.
    pub fn failure_kinds(&self) -> &FailureKinds {
        &self.failure_kinds
    }
    /// Endpoints in file order (this is the pool order used for tie-breaks).
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }
    /// Algorithms this world cannot exercise, with the reason.
    pub fn unsuited(&self) -> &BTreeMap<String, String> {
        &self.unsuited
    }
    /// Strategy settings from `[algorithms.<name>]`, in name order: parameter overrides of
    /// registered strategies (`name == kind`) and named variants (`name != kind`).
    pub fn algorithms(&self) -> &[Variant] {
        &self.algorithms
    }
    /// The settings written for `name` (a registered strategy or a named variant), if any.
    pub fn variant(&self, name: &str) -> Option<&Variant> {
        self.algorithms.iter().find(|v| v.name == name)
    }
    /// The named variants (tables whose name is not their kind), in name order.
    pub fn named_variants(&self) -> impl Iterator<Item = &Variant> {
        self.algorithms.iter().filter(|v| v.is_named())
    }
    /// How the harness offers load (closed loop of workers, or open-loop arrivals).
    pub fn load(&self) -> &Load {
        &self.load
    }
    /// The memory of the trace this world replays \[bytes\]; 0 for any other load.
    pub fn trace_bytes(&self) -> u64 {
        match &self.load {
            Load::Trace { replay, .. } => replay.bytes(),
            _ => 0,
        }
    }
    /// The validity gate's thresholds.
    pub fn validity(&self) -> &Validity {
        &self.validity
    }
    /// The world's `[thresholds]` assertions.
    pub fn thresholds(&self) -> &[Assertion] {
        &self.thresholds
    }
    /// What the verdict optimises: the world's `[objective]`, or the default.
    pub fn objective(&self) -> Objective {
        self.objective.clone().unwrap_or_default()
    }
    /// The client's pools in failover order; the first is the primary. Never empty: a file
    /// without `[[pools]]` has one pool holding every endpoint.
    pub fn pools(&self) -> &[PoolSpec] {
        &self.pools
    }
    /// The scripted incidents, in file order.
    pub fn incidents(&self) -> &[Incident] {
        &self.incidents
    }
    /// The indices of the endpoints `incident` hits, in world order for a scope and in the
    /// file's order for a list.
    pub fn reach<'a>(&'a self, incident: &'a Incident) -> impl Iterator<Item = usize> + 'a {
        let (every, listed): (usize, &[usize]) = match &incident.scope {
            Scope::Everywhere => (self.endpoints.len(), &[]),
            Scope::Pool(p) => (0, &self.pools[*p].members),
            Scope::Listed(list) => (0, list),
        };
        (0..every).chain(listed.iter().copied())
    }
    /// How many endpoints `incident` hits.
    pub fn reach_len(&self, incident: &Incident) -> usize {
        match &incident.scope {
            Scope::Everywhere => self.endpoints.len(),
            Scope::Pool(p) => self.pools[*p].members.len(),
            Scope::Listed(list) => list.len(),
        }
    }
    /// Who `incident` hits, in a few words for a tooltip or a trace: the ids when there are
    /// few, else the scope and how many (`all 5000 endpoints`).
    pub fn reach_text(&self, incident: &Incident) -> String {
        const SHOWN: usize = 8;
        let ids = self.reach(incident).map(|e| self.endpoints[e].id.as_str());
        let count = self.reach_len(incident);
        if count <= SHOWN {
            return ids.collect::<Vec<_>>().join(", ");
        }
        match &incident.scope {
            Scope::Everywhere => format!("all {count} endpoints"),
            Scope::Pool(p) => format!("pool {} ({count} endpoints)", self.pools[*p].name),
            Scope::Listed(_) => format!(
                "{} and {} more",
                ids.take(3).collect::<Vec<_>>().join(", "),
                count - 3
            ),
        }
    }
    /// How recovery after the incidents is measured.
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }
    /// Whether any endpoint has a reuse cache.
    pub fn has_cache(&self) -> bool {
        self.endpoints.iter().any(|e| e.cache.is_some())
    }
    /// Whether the world has `feature`, which some metrics need in order to mean anything.
    pub fn has(&self, feature: Feature) -> bool {
        match feature {
            Feature::EndingIncident => self.incidents.iter().any(|i| i.end_s.is_finite()),
            Feature::Cache => self.has_cache(),
            Feature::RetryBudget => self.retry.budget.is_some(),
            Feature::RetryThrottle => self.retry.throttle.is_some(),
            Feature::Tokens => self.tokens.is_some(),
            Feature::Price => self.endpoints.iter().any(|e| e.price.is_some()),
            Feature::Limits => self.endpoints.iter().any(|e| !e.limits.is_empty()),
        }
    }
    /// Request sizes in tokens, when the world has them.
    pub fn tokens(&self) -> Option<&Tokens> {
        self.tokens.as_ref()
    }
    /// A copy with the size knobs replaced; values are checked by the caller's parser.
    ///
    /// # Panics
    /// Panics if `jobs` or `concurrency` is zero, `horizon_s` or `rate_per_s` is not positive
    /// and finite, or `rate_per_s` is given for a closed-loop world (callers check
    /// [`World::load`] first and report a usage error).
    pub fn with_overrides(&self, overrides: &Overrides) -> World {
        let mut world = self.clone();
        if let Some(jobs) = overrides.jobs {
            assert!(jobs >= 1, "jobs must be at least 1");
            world.jobs = jobs;
        }
        if let Some(concurrency) = overrides.concurrency {
            assert!(concurrency >= 1, "concurrency must be at least 1");
            world.concurrency = concurrency;
        }
        if let Some(horizon_s) = overrides.horizon_s {
            assert!(
                horizon_s.is_finite() && horizon_s > 0.0,
                "horizon must be positive"
            );
            world.horizon_s = horizon_s;
        }
        if let Some(rate) = overrides.rate_per_s {
            assert!(rate.is_finite() && rate > 0.0, "rate must be positive");
            let Load::Open { rate_per_s, .. } = &mut world.load else {
                panic!("an arrival rate only applies to an open-loop world");
            };
            *rate_per_s = rate;
        }
        world
    }
}

/// One `[algorithms.<name>]` table, checked against the algorithm registry by
/// [`crate::compile`]. The world only records names and numbers; the registry turns them into a
/// strategy (see [`crate::sweep::resolve`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Variant {
    /// The name used on the command line and in reports.
    pub name: String,
    /// The registered strategy it configures (equal to `name` for a plain override).
    pub kind: String,
    /// The values written that differ from the strategy's defaults, sorted by parameter name.
    /// A value equal to its default is not kept, so writing a default out changes nothing.
    pub params: Vec<(String, f64)>,
}

impl Variant {
    /// Whether this is a named variant rather than parameters of a registered strategy.
    pub fn is_named(&self) -> bool {
        self.name != self.kind
    }

    /// `backoff_slow = backoff (base = 1)` for a named variant, `wait (timeout_s = 30)` for a
    /// registered strategy's own parameters; `(defaults)` when nothing differs.
    pub fn describe(&self) -> String {
        let values: Vec<String> = self
            .params
            .iter()
            .map(|(name, value)| format!("{name} = {value}"))
            .collect();
        let values = if values.is_empty() {
            "defaults".to_string()
        } else {
            values.join(", ")
        };
        if self.is_named() {
            format!("{} = {} ({values})", self.name, self.kind)
        } else {
            format!("{} ({values})", self.name)
        }
    }
}

/// The load model of a world.
#[derive(Clone, Debug, PartialEq)]
pub enum Load {
    /// `concurrency` workers, each running one job at a time, pausing between jobs when
    /// `think` says so.
    Closed {
        /// The pause between a worker's jobs; `None` when there is none.
        think: Option<Think>,
    },
    /// Jobs arrive on a schedule and queue in the harness when `max_in_flight` are running.
    Open {
        /// Mean arrivals per second.
        rate_per_s: f64,
        /// Exponential (Poisson) or even gaps.
        poisson: bool,
        /// Most jobs in flight at once; `None` is unbounded.
        max_in_flight: Option<u32>,
    },
    /// Jobs arrive when a recorded log's did (with its sizes) and queue in the harness when
    /// `max_in_flight` are running.
    Trace {
        /// The arrivals and sizes.
        replay: crate::trace_load::SharedReplay,
        /// Most jobs in flight at once; `None` is unbounded.
        max_in_flight: Option<u32>,
    },
}

/// A closed loop's pause between a worker's jobs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Think {
    /// The pause, or its mean \[s\] (> 0).
    pub mean_s: f64,
    /// Exponential pauses (else every pause is `mean_s`).
    pub exponential: bool,
}

/// Thresholds of the validity gate.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Validity {
    /// Largest allowed `queue_wait_p99 / observed_p99`.
    pub max_queue_share: f64,
    /// A known concurrency knee; runs above it are invalid.
    pub knee_concurrency: Option<u32>,
}

/// One client-side pool (a vendor): its endpoints and how it picks among them.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PoolSpec {
    /// Pool name.
    pub name: String,
    /// The selection rule inside the pool.
    pub selection: Selection,
    /// Indices of its endpoints, in world order.
    pub members: Vec<usize>,
}

/// How a pool picks one of its free endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    /// Lowest active/capacity ratio, round-robin among equals (the reference's rule).
    LeastBusy,
    /// Rotate over the free endpoints whatever their load.
    RoundRobin,
    /// The first free endpoint in world order.
    InOrder,
}

impl Selection {
    /// The name written in files.
    pub fn name(self) -> &'static str {
        match self {
            Selection::LeastBusy => "least_busy",
            Selection::RoundRobin => "round_robin",
            Selection::InOrder => "in_order",
        }
    }
}

/// A part of a world that only some worlds have. A metric that describes it (recovery after
/// incidents, cache hits, retries a budget denied) does not apply to a world without it: its 0
/// there would mean "nothing to measure", not "measured zero", so reports leave it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// An incident with an end, after which recovery can be measured.
    EndingIncident,
    /// A reuse cache on some endpoint.
    Cache,
    /// A retry budget (`[retry.budget]`).
    RetryBudget,
    /// Client-side throttling (`[retry.throttle]`).
    RetryThrottle,
    /// Request sizes in tokens (`[tokens]`).
    Tokens,
    /// A price on some endpoint.
    Price,
    /// Published limits (`limits`) on some endpoint.
    Limits,
}

impl Feature {
    /// Why a world lacking the feature has nothing to measure, for report notes.
    pub fn absence(self) -> &'static str {
        match self {
            Feature::EndingIncident => "no incident that ends",
            Feature::Cache => "no reuse cache",
            Feature::RetryBudget => "no [retry.budget]",
            Feature::RetryThrottle => "no [retry.throttle]",
            Feature::Tokens => "no [tokens]",
            Feature::Price => "no endpoint has a price",
            Feature::Limits => "no endpoint has limits",
        }
    }

    /// Whether a world without the feature leaves its metrics out silently: the token metrics
    /// belong to LLM worlds, and listing them as "not applicable" under every other world
    /// would only be noise (and would change the reports of worlds written before them).
    pub fn quiet(self) -> bool {
        matches!(self, Feature::Tokens | Feature::Price | Feature::Limits)
    }
}

/// One scripted incident: `effect` on the endpoints of `scope` for simulated times in
/// `[start_s, end_s)`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Incident {
    /// What changes.
    pub effect: Effect,
    /// Which endpoints it hits ([`World::reach`] lists them).
    pub scope: Scope,
    /// Start (inclusive) \[s\].
    pub start_s: f64,
    /// End (exclusive); infinite for a revocation that lasts \[s\].
    pub end_s: f64,
}

/// Merges lists of incident indices, each ascending, into one ascending sequence: the
/// incidents on one endpoint, gathered from its scopes (every endpoint, its pool, its own
/// list) in file order. Empty lists are dropped first, so the usual endpoint, whose incidents
/// all come from one scope, walks a single slice.
pub(crate) fn in_file_order<const K: usize>(mut lists: [&[usize]; K]) -> InFileOrder<'_, K> {
    let mut live = 0;
    for k in 0..K {
        if !lists[k].is_empty() {
            lists.swap(live, k);
            live += 1;
        }
    }
    InFileOrder { lists, live }
}

/// The iterator of [`in_file_order`]: the first `live` lists are not empty.
pub(crate) struct InFileOrder<'a, const K: usize> {
    lists: [&'a [usize]; K],
    live: usize,
}

impl<const K: usize> Iterator for InFileOrder<'_, K> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let k = match self.live {
            0 => return None,
            1 => 0,
            live => (0..live)
                .min_by_key(|&k| self.lists[k][0])
                .expect("live lists"),
        };
        let (&i, rest) = self.lists[k].split_first().expect("a live list");
        self.lists[k] = rest;
        if rest.is_empty() {
            self.live -= 1;
            self.lists.swap(k, self.live);
        }
        Some(i)
    }
}

/// The endpoints an incident hits, as the file names them. Kept by name rather than expanded,
/// so that a thousand incidents on every one of a thousand endpoints cost a thousand entries,
/// not a million.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every endpoint (the file names neither `endpoints` nor `pool`).
    Everywhere,
    /// Every endpoint of a pool, by index in [`World::pools`].
    Pool(usize),
    /// The endpoints listed, by index, in the file's order.
    Listed(Vec<usize>),
}

impl Incident {
    /// Whether the incident is on at time `t`.
    pub fn active(&self, t: f64) -> bool {
        self.start_s <= t && t < self.end_s
    }
}

/// What an incident does to an endpoint while it lasts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Effect {
    /// Requests are refused at once (connection refused), or with `error`, admitted and failed
    /// with a 503 after their latency.
    Outage {
        /// Admitted then failed, rather than refused at once.
        error: bool,
    },
    /// The concurrency limit is multiplied by this.
    Capacity(f64),
    /// Service times are multiplied by this.
    Latency(f64),
    /// A forced storm; `None` uses the endpoint's storm error rate.
    Storm(Option<f64>),
    /// The token refill rate is multiplied by this.
    RateLimit(f64),
    /// The key is revoked: every request fails with a fatal error.
    Revoke,
}

impl Effect {
    /// What the incident does, in a few words: `outage`, `capacity ×0.5`.
    pub fn describe(&self) -> String {
        match self {
            Effect::Outage { .. } => "outage".to_owned(),
            Effect::Capacity(f) => format!("capacity ×{f}"),
            Effect::Latency(f) => format!("latency ×{f}"),
            Effect::Storm(_) => "storm".to_owned(),
            Effect::RateLimit(f) => format!("rate limit ×{f}"),
            Effect::Revoke => "revoked key".to_owned(),
        }
    }
}

/// How recovery after incidents is measured.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Recovery {
    /// Sliding window goodput is measured over \[s\].
    pub window_s: f64,
    /// Share of the baseline goodput that counts as recovered.
    pub threshold: f64,
}

/// A per-endpoint reuse cache.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Cache {
    /// How long a job's context stays cached after a served call \[s\].
    pub ttl_s: f64,
    /// Multiplier on a hit's service time.
    pub latency_factor: f64,
    /// Tokens a hit costs (a miss costs 1).
    pub token_cost: f64,
}

/// Size knobs a command line may replace (`--jobs`, `--concurrency`, `--horizon`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Overrides {
    /// Replacement job count (≥ 1).
    pub jobs: Option<u32>,
    /// Replacement worker count (≥ 1).
    pub concurrency: Option<u32>,
    /// Replacement admission horizon \[s\] (> 0).
    pub horizon_s: Option<f64>,
    /// Replacement open-loop arrival rate \[1/s\] (> 0); only for an open-loop world.
    pub rate_per_s: Option<f64>,
}

/// The provider-wide capacity rhythm: a raised cosine between `trough` and `peak`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Cycle {
    /// Length of one cycle \[s\]; 0 means a flat cycle at `peak`.
    pub period_s: f64,
    /// Lowest capacity factor.
    pub trough: f64,
    /// Highest capacity factor.
    pub peak: f64,
    /// Time shift of the cycle \[s\].
    pub phase_s: f64,
    mid: f64,
    amp: f64,
    omega: f64,
}

impl Cycle {
    pub(crate) fn new(period_s: f64, trough: f64, peak: f64, phase_s: f64) -> Cycle {
        let omega = if period_s > 0.0 {
            2.0 * PI / period_s
        } else {
            0.0
        };
        Cycle {
            period_s,
            trough,
            peak,
            phase_s,
            mid: (peak + trough) / 2.0,
            amp: (peak - trough) / 2.0,
            omega,
        }
    }

    /// Capacity factor at time `t` \[s\].
    pub fn factor(&self, t: f64) -> f64 {
        if self.period_s <= 0.0 {
            return self.peak;
        }
        self.mid - self.amp * (self.omega * (t - self.phase_s)).cos()
    }

    /// `round_half_even(scale · factor(t))`, and a half-width `h` such that the same
    /// expression, as computed, rounds to the same value at every instant in `[t − h, t + h]`
    /// (0 when `t` is too close to a rounding boundary to promise anything). The bound is the
    /// factor's greatest slope, `scale · amp · ω`, and a generous bound on the rounding error of
    /// each evaluation (a few ulps of every term, the argument's included), so a caller may skip
    /// the cosine inside the window and still get exactly what evaluating it would give: two
    /// evaluations in the window differ by at most `slope · h` plus twice that error, which must
    /// stay below the distance to the boundary; `h` takes nine tenths of what that allows (the
    /// rest covers the rounding of `t ± h` itself; with 1.2 the test below fails).
    pub fn rounded_steady(&self, scale: f64, t: f64) -> (f64, f64) {
        let raw = scale * self.factor(t);
        let rounded = raw.round_ties_even();
        let slope = (scale * self.amp * self.omega).abs();
        if self.period_s <= 0.0 || slope == 0.0 {
            return (rounded, f64::INFINITY);
        }
        let x = (self.omega * (t - self.phase_s)).abs();
        // Within the window the argument stays below 2|x| + 1: its error is bounded there too.
        let reach = (x + 1.0) / self.omega;
        let ulps = 16.0 * f64::EPSILON;
        let error = ulps
            * ((scale * self.amp).abs() * (2.0 * x + 2.0)
                + (scale * self.mid).abs()
                + raw.abs()
                + 1.0);
        let to_boundary = 0.5 - (raw - rounded).abs();
        let h = 0.9 * (to_boundary - 2.0 * error) / slope;
        (rounded, if h > 0.0 { h.min(reach) } else { 0.0 })
    }

    /// Closed-form integral of [`Cycle::factor`] over `[a, b]` \[s\].
    pub fn integral(&self, a: f64, b: f64) -> f64 {
        if b <= a {
            return 0.0;
        }
        if self.period_s <= 0.0 {
            return self.peak * (b - a);
        }
        let w = self.omega;
        let exact = self.mid * (b - a)
            - (self.amp / w) * ((w * (b - self.phase_s)).sin() - (w * (a - self.phase_s)).sin());
        // The factor lies in [trough, peak], so its integral does too; the closed form can
        // stray outside by rounding (it subtracts nearly equal terms over short intervals),
        // which would make the offered capacity 0 or negative near a trough of 0.
        exact.max(self.trough * (b - a)).min(self.peak * (b - a))
    }
}

/// The shape of a latency distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// `median_s · exp(sigma · Z)`.
    Lognormal,
    /// Exponential with mean `mean_s`.
    Exponential,
    /// Always `mean_s`.
    Constant,
    /// From the call's tokens and the endpoint's load ([`Latency::tokens`]); `mean_s` holds the
    /// mean at idle for the world's sizes.
    Tokens,
    /// Piecewise-linear inverse CDF through [`Latency::quantiles`]; `mean_s` holds its mean.
    Empirical,
}

/// Service time: a body distribution with an occasional slow tail.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Latency {
    /// Shape of the body.
    pub distribution: Distribution,
    /// Mean of the body for the exponential and constant shapes \[s\].
    pub mean_s: f64,
    /// Median of the lognormal body \[s\].
    pub median_s: f64,
    /// Log-space standard deviation; 0 means a constant latency.
    pub sigma: f64,
    /// Probability that a request lands in the slow tail.
    pub tail_rate: f64,
    /// Multiplier applied to a tail request's latency.
    pub tail_factor: f64,
    /// The token model of the `tokens` shape.
    pub tokens: Option<TokenLatency>,
    /// `(quantile, seconds)` points of the `empirical` shape, quantiles from 0 to 1; empty
    /// for every other shape.
    pub quantiles: Vec<(f64, f64)>,
}

impl Latency {
    /// Expected latency \[s\]: the body's mean times `1 + tail_rate·(tail_factor − 1)`, where a
    /// lognormal body's mean is `median·exp(σ²/2)`.
    pub fn expected_s(&self) -> f64 {
        let body = match self.distribution {
            Distribution::Lognormal => self.median_s * (self.sigma * self.sigma / 2.0).exp(),
            Distribution::Exponential
            | Distribution::Constant
            | Distribution::Tokens
            | Distribution::Empirical => self.mean_s,
        };
        body * (1.0 + self.tail_rate * (self.tail_factor - 1.0))
    }
}

/// Independent errors plus storms anchored to simulated time.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Failures {
    /// Error probability of an admitted request outside a storm.
    pub error_rate: f64,
    /// Probability that a storm starts at each check instant.
    pub storm_rate: f64,
    /// Spacing of the storm check instants \[s\].
    pub storm_check_s: f64,
    /// Length of a storm \[s\].
    pub storm_duration_s: f64,
    /// Error probability of an admitted request inside a storm.
    pub storm_error_rate: f64,
}

impl Failures {
    /// Whether storms can happen at all.
    pub fn storms_enabled(&self) -> bool {
        self.storm_rate > 0.0 && self.storm_duration_s > 0.0
    }
    /// Spacing of storm windows, never zero \[s\].
    pub fn check_s(&self) -> f64 {
        self.storm_check_s.max(1e-9)
    }
}

/// A token bucket that tightens when pushed and recovers per window.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RateLimit {
    /// Tokens granted per window.
    pub per_window: u64,
    /// Window length \[s\].
    pub window_s: f64,
    /// Bucket size as a multiple of `per_window`.
    pub burst: f64,
    /// Retry-After carried by a quota refusal \[s\].
    pub retry_after_s: f64,
    /// Factor applied to the refill allowance on every refusal.
    pub tightening: f64,
    /// Lowest allowance the tightening can reach.
    pub tightening_floor: f64,
    /// Allowance regained per elapsed window.
    pub recovery_per_window: f64,
    /// Derived: tokens per second at full allowance.
    pub refill_per_s: f64,
    /// Derived: bucket size in tokens, `per_window * burst` (at least 1: compile refuses a
    /// smaller bucket).
    pub burst_size: f64,
}

impl RateLimit {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        per_window: u64,
        window_s: f64,
        burst: f64,
        retry_after_s: f64,
        tightening: f64,
        tightening_floor: f64,
        recovery_per_window: f64,
    ) -> RateLimit {
        let per_window_f = per_window as f64;
        assert!(
            per_window_f * burst >= 1.0,
            "a bucket of less than one request is refused by compile"
        );
        let refill_per_s = if window_s > 0.0 {
            per_window_f / window_s
        } else {
            per_window_f
        };
        RateLimit {
            per_window,
            window_s,
            burst,
            retry_after_s,
            tightening,
            tightening_floor,
            recovery_per_window,
            refill_per_s,
            burst_size: per_window_f * burst,
        }
    }
}

/// One endpoint of the provider, and the client-side resource of the same id.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Endpoint {
    /// Endpoint id, unique in the world.
    pub id: String,
    /// Nominal concurrency; also the client pool's capacity for this resource (at least 1).
    pub capacity: u32,
    /// Share of the provider cycle this endpoint feels.
    pub weight: f64,
    /// Declared quota for `quota_aware`; `None` means no quota.
    pub quota_units: Option<f64>,
    /// Latency distribution.
    pub latency: Latency,
    /// Error and storm model.
    pub failures: Failures,
    /// Token bucket; `None` means unmetered.
    pub rate_limit: Option<RateLimit>,
    /// Index of the endpoint's pool in [`World::pools`].
    pub pool: usize,
    /// Reuse cache; `None` means none.
    pub cache: Option<Cache>,
    /// Published limits (requests or tokens per window), all enforced at once.
    pub limits: Vec<Limit>,
    /// When tokens are charged against the token limits.
    pub charge: Charge,
    /// Price per million tokens; `None` means not priced.
    pub price: Option<Price>,
    /// What the endpoint answers when saturated.
    pub saturation: Saturation,
    /// The client's own cap on requests in flight here; `None` means `capacity`.
    pub client_cap: Option<u32>,
}

impl Endpoint {
    /// Capacity of the client-side resource: the client cap when set, else `max(1, capacity)`.
    pub fn pool_capacity(&self) -> u32 {
        self.client_cap.unwrap_or(self.capacity).max(1)
    }
}

/// How a backoff delay is randomised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Jitter {
    /// The raw delay.
    None,
    /// Uniform in `[0, raw)`.
    Full,
    /// `raw/2` plus uniform in `[0, raw/2)`.
    Equal,
}

impl Jitter {
    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
        }
    }
}

/// Exponential backoff parameters: `min(cap, base·factor^(k−1))`, then jitter.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    /// First delay \[s\].
    pub base: f64,
    /// Growth per further attempt.
    pub factor: f64,
    /// Largest delay before jitter \[s\].
    pub cap: f64,
    /// Randomisation mode.
    pub jitter: Jitter,
}

impl Backoff {
    /// The un-jittered delay before attempt `k + 1` after `k` failures (k ≥ 1) \[s\].
    pub fn raw(&self, k: u32) -> f64 {
        let exp = k.saturating_sub(1).min(i32::MAX as u32) as i32;
        self.cap.min(self.base * self.factor.powi(exp))
    }
}

/// The client retry policy (§6 of the reference semantics).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts per step, first one included.
    pub max_attempts: u32,
    /// Backoff used when an error carries no Retry-After.
    pub backoff: Backoff,
    /// Retry errors of a retryable class (rate_limit, timeout, connection, upstream).
    pub retry_classified: bool,
    /// Retry errors of class `unknown` (such as "nothing available").
    pub retry_unknown: bool,
    /// A Retry-After of `a` becomes `a × (1 + spread × u)`; 0 waits exactly `a`.
    pub retry_after_spread: f64,
    /// Give up when the step would exceed this much time since it started \[s\].
    pub max_total_s: Option<f64>,
    /// The retry budget, if any.
    pub budget: Option<RetryBudget>,
    /// Client-side throttling, if any.
    pub throttle: Option<Throttle>,
}

/// A retry budget: retries in any window of `window_s` at most `ratio` × first attempts in it
/// plus `min_per_s` × `window_s`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryBudget {
    /// Retries allowed per first attempt.
    pub ratio: f64,
    /// Retries per second always allowed.
    pub min_per_s: f64,
    /// Sliding window \[s\].
    pub window_s: f64,
}

/// Client-side throttling with multiplier `k` over a sliding window of `window_s`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Throttle {
    /// Requests beyond `k` × accepts start being rejected locally.
    pub k: f64,
    /// Sliding window \[s\].
    pub window_s: f64,
}

/// The client circuit breaker.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Breaker {
    /// Consecutive failures that mark a resource DEGRADED.
    pub degrade_after: u32,
    /// Consecutive failures that mark a resource DEAD.
    pub dead_after: u32,
    /// How long DEGRADED lasts unless a success ends it \[s\].
    pub cooldown_s: f64,
}

/// Split of provider failures into kinds, as cumulative thresholds on one uniform draw.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FailureKinds {
    /// Share of failures that are HTTP 503.
    pub http_503: f64,
    /// Share of failures that are connection resets.
    pub connection: f64,
    /// Share of failures that are read timeouts.
    pub timeout: f64,
}

#[cfg(test)]
mod tests {
    use super::{Cycle, in_file_order};

    /// An incident on every endpoint or a pool names them without listing them; a tooltip
    /// lists a few ids and counts the rest.
    #[test]
    fn scopes_reach_their_endpoints_and_say_so_briefly() {
        let mut text = String::from(
            "name = \"t\"\nsummary = \"t\"\n[[pools]]\nname = \"a\"\n[[pools]]\nname = \"b\"\n",
        );
        for e in 0..20 {
            let pool = if e < 2 { "b" } else { "a" };
            text += &format!(
                "[[endpoints]]\nid = \"e{e}\"\npool = \"{pool}\"\ncapacity = 1\nlatency = {{}}\n"
            );
        }
        let many: Vec<String> = (0..12).rev().map(|e| format!("\"e{e}\"")).collect();
        for scope in [
            String::new(),
            "pool = \"a\"\n".into(),
            "pool = \"b\"\n".into(),
            "endpoints = [\"e5\", \"e1\"]\n".into(),
            format!("endpoints = [{}]\n", many.join(", ")),
        ] {
            text += &format!("[[incidents]]\nkind = \"outage\"\nstart_s = 1\n{scope}");
        }
        let world = crate::compile::load("t.toml", text.as_bytes()).expect("valid");
        let reach: Vec<Vec<usize>> = world
            .incidents()
            .iter()
            .map(|i| world.reach(i).collect())
            .collect();
        assert_eq!(reach[0], (0..20).collect::<Vec<_>>());
        assert_eq!(reach[1], (2..20).collect::<Vec<_>>());
        assert_eq!(reach[2], vec![0, 1]);
        assert_eq!(reach[3], vec![5, 1]);
        assert_eq!(reach[4], (0..12).rev().collect::<Vec<_>>());
        let said: Vec<String> = world
            .incidents()
            .iter()
            .map(|i| world.reach_text(i))
            .collect();
        assert_eq!(
            said,
            [
                "all 20 endpoints",
                "pool a (18 endpoints)",
                "e0, e1",
                "e5, e1",
                "e11, e10, e9 and 9 more"
            ]
        );
        let merged: Vec<usize> =
            in_file_order([&[0, 4, 9][..], &[1, 2][..], &[3, 10][..]]).collect();
        assert_eq!(merged, [0, 1, 2, 3, 4, 9, 10]);
    }

    /// Inside the window `rounded_steady` promises, evaluating the factor anywhere gives the
    /// same rounded capacity: across cycles, scales, phases and times up to 10^7 s, at the
    /// window's edges and at points spread inside it. Windows are not empty (the cache must save
    /// cosines), except at a rounding boundary.
    #[test]
    fn the_steady_window_keeps_the_rounding() {
        let mut x = 11u64;
        let mut unit = || {
            x = crate::rng::mix64(x);
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut wide, mut empty) = (0, 0);
        for _ in 0..20_000 {
            let period = 1.0 + unit() * 600.0;
            let trough = unit();
            let cycle = Cycle::new(
                period,
                trough,
                trough + unit() * (1.0 - trough) + 1e-9,
                unit() * 100.0,
            );
            let scale = 1.0 + (unit() * 500.0).floor() * (0.5 + unit());
            let t = unit() * 10f64.powi((unit() * 7.0) as i32);
            let (rounded, h) = cycle.rounded_steady(scale, t);
            assert_eq!(rounded, (scale * cycle.factor(t)).round_ties_even());
            if h == 0.0 {
                empty += 1;
                continue;
            }
            wide += 1;
            for k in 0..=8 {
                let at = t - h + 2.0 * h * f64::from(k) / 8.0;
                assert_eq!(
                    (scale * cycle.factor(at)).round_ties_even(),
                    rounded,
                    "period {period}, scale {scale}, t {t}, h {h}, at {at}"
                );
            }
        }
        assert!(wide > 15_000, "{wide} windows, {empty} empty");
        // At a rounding boundary (5 × the trough 0.5 at the trough itself: 2.5) nothing is promised.
        let at_trough = Cycle::new(120.0, 0.5, 1.0, 0.0);
        assert_eq!(at_trough.rounded_steady(5.0, 0.0), (2.0, 0.0));
        let flat = Cycle::new(0.0, 0.5, 1.0, 0.0);
        assert_eq!(flat.rounded_steady(7.0, 3.0), (7.0, f64::INFINITY));
    }
}
