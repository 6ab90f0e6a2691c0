//! The simulated provider: what happens to one request at one endpoint.
//!
//! It owns the endpoint-side state (in-flight count, token bucket, storm weather) and the
//! counters the report shows per endpoint. It never sees the client's pool, breaker or strategy,
//! and the client never sees it: only the harness joins the two. Its randomness comes from keyed
//! streams (request ordinal, storm window), so its dice do not depend on who is asking or when.

pub mod limits;
pub mod timeline;

use std::cell::Cell;

use crate::rng::{RandomSource, Stream};
use crate::tokens::{CallSize, LimitHeader, Saturation};
use crate::world::{Distribution, Endpoint, World};
use limits::{Blocked, Limits};
use timeline::Timeline;

/// Why a request was refused (both are HTTP 429 with a Retry-After).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The endpoint's cycle-scaled concurrency limit was reached.
    Capacity,
    /// The token bucket was empty.
    Quota,
    /// One of the endpoint's published limits had no room (429 with that limit's Retry-After).
    Limit {
        /// Which limit, in the endpoint's order.
        index: usize,
    },
    /// The endpoint was saturated and answers "overloaded" (529/503, no Retry-After).
    Overloaded,
}

/// Why a request was turned away without being admitted or refused by a limit (scripted
/// incidents only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// An outage: the connection was refused.
    Outage,
    /// The key was revoked (HTTP 401): a fatal error.
    Revoked,
    /// The request asks more tokens than a limit allows in a whole window (HTTP 400): a fatal
    /// error, since no wait would admit it.
    TooLarge,
}

/// The kind of an admitted request's failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// HTTP 503.
    Upstream,
    /// Connection reset.
    Connection,
    /// Read timeout.
    Timeout,
}

/// The provider's answer at arrival time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arrival {
    /// Refused at once (zero simulated time), with its Retry-After \[s\].
    Refused {
        /// Which limit refused it.
        refusal: Refusal,
        /// Retry-After carried by the 429 \[s\].
        retry_after_s: f64,
    },
    /// Turned away at once (zero simulated time) by a scripted incident.
    Rejected(Rejection),
    /// Admitted: it occupies the endpoint for `latency_s`, then succeeds or fails.
    Admitted {
        /// Sampled service time \[s\].
        latency_s: f64,
        /// The failure decided at arrival, surfaced when the latency has elapsed.
        failure: Option<FailureKind>,
        /// Tokens consumed (1 if metered, a cache hit's cost on a hit, else 0), reported as
        /// usage on success.
        tokens: f64,
        /// The call's tokens and timing, in a world with `[tokens]`.
        usage: Option<Usage>,
    },
}

/// How an admitted request of a token world is served (its sizes stay with the caller, which
/// drew them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Usage {
    /// Time to first token \[s\].
    pub ttft_s: f64,
    /// Whether the prompt was served from the reuse cache (priced as cached input).
    pub cached: bool,
}

impl Usage {
    /// Of `output` tokens, those written by `elapsed_s` after admission, for a request whose
    /// whole service takes `latency_s` (all of them at the end; none before the first token).
    pub fn written_by(&self, output: f64, elapsed_s: f64, latency_s: f64) -> f64 {
        if elapsed_s >= latency_s {
            return output;
        }
        let decode_s = latency_s - self.ttft_s;
        if elapsed_s <= self.ttft_s || decode_s <= 0.0 {
            return 0.0;
        }
        // Whole tokens written; a count a rounding error short of a whole one (times are sums
        // of simulated instants: 1.55 − 1.1 is 0.44999…) is that whole one.
        let written = output * (elapsed_s - self.ttft_s) / decode_s;
        let whole = written.round();
        if (written - whole).abs() <= 1e-9 * output.max(1.0) {
            whole
        } else {
            written.floor()
        }
    }
}

/// Per-endpoint counters, as the reference keeps them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EndpointStats {
    /// Requests that reached the endpoint, refusals included.
    pub requests: u64,
    /// Requests admitted.
    pub admitted: u64,
    /// Requests refused by the concurrency limit.
    pub refused_capacity: u64,
    /// Requests refused by the token bucket.
    pub refused_quota: u64,
    /// Requests refused by a published limit counting requests (windows under a day).
    pub refused_request_limit: u64,
    /// Requests refused by a published limit counting tokens (windows under a day).
    pub refused_token_limit: u64,
    /// Requests refused by a published limit with a window of a day or more.
    pub refused_daily_limit: u64,
    /// Requests answered "overloaded" because the endpoint was saturated.
    pub overloaded: u64,
    /// Requests turned away by an outage or a revoked key.
    pub rejected: u64,
    /// Admitted requests served from the reuse cache.
    pub cache_hits: u64,
    /// Admitted requests that failed.
    pub failed: u64,
    /// Sum of admitted requests' latencies \[s\].
    pub busy_s: f64,
    /// Capacity offered over the run: `capacity·weight·∫factor` \[capacity·s\].
    pub offered_capacity_s: f64,
    /// Tokens consumed.
    pub tokens_used: f64,
    /// Largest in-flight count seen.
    pub peak_in_flight: u32,
}

/// Storm decisions remembered per endpoint (a power of two above the windows one instant spans
/// in any sensible world; see the compile-time limit on `storm_duration_s / storm_check_s`).
const STORM_CACHE: usize = 64;

/// Endpoint-side state of one endpoint.
#[derive(Clone, Debug)]
struct EndpointState {
    in_flight: u32,
    tokens: f64,
    allowance: f64,
    refilled_at: f64,
    /// Recent storm decisions, direct-mapped by window: `(window + 1, storm)`; 0 is empty.
    /// Decisions are a pure function of the window, so the cache only saves draws, and its size
    /// stays fixed however long the run.
    storms: Box<[(u64, bool); STORM_CACHE]>,
    /// `[from, until)`: a span with no storm, as the last scan found (empty at first). No window
    /// that could storm starts inside it, so a request arriving there needs no scan.
    calm: (f64, f64),
    limits: Limits,
    stats: EndpointStats,
}

/// A rounded capacity as a count: at least 1, at most `u32::MAX`.
fn clamp_capacity(rounded: f64) -> u32 {
    if rounded < 1.0 {
        1
    } else if rounded >= f64::from(u32::MAX) {
        u32::MAX
    } else {
        rounded as u32
    }
}

/// The simulated provider for one run.
#[derive(Debug)]
pub struct Provider<'w> {
    world: &'w World,
    endpoints: Vec<EndpointState>,
    /// Cumulative thresholds of the failure-kind split.
    kind_503: f64,
    kind_connection: f64,
    /// Last `(time, cycle factor)` computed.
    factor_at: Cell<(f64, f64)>,
    /// Per endpoint, `[from, until]` and the capacity the cycle alone gives throughout it
    /// ([`Cycle::rounded_steady`]): the cosine is computed once per window, not per arrival.
    steady: Vec<Cell<(f64, f64, u32)>>,
    timeline: Timeline<'w>,
}

impl<'w> Provider<'w> {
    /// A fresh provider at t = 0.
    pub fn new(world: &'w World) -> Provider<'w> {
        let endpoints = world
            .endpoints()
            .iter()
            .map(|endpoint| EndpointState {
                in_flight: 0,
                tokens: endpoint
                    .rate_limit
                    .as_ref()
                    .map_or(f64::INFINITY, |bucket| bucket.burst_size),
                allowance: 1.0,
                refilled_at: 0.0,
                storms: Box::new([(0, false); STORM_CACHE]),
                calm: (0.0, 0.0),
                limits: Limits::new(&endpoint.limits),
                stats: EndpointStats::default(),
            })
            .collect();
        let kinds = world.failure_kinds();
        Provider {
            world,
            endpoints,
            kind_503: kinds.http_503,
            kind_connection: kinds.http_503 + kinds.connection,
            factor_at: Cell::new((f64::NAN, 0.0)),
            steady: vec![Cell::new((f64::NAN, f64::NAN, 0)); world.endpoints().len()],
            timeline: Timeline::new(world),
        }
    }

    /// The concurrency limit of endpoint `e` at time `now`: `max(1, round_half_even(c·w·f(t)))`.
    /// A capacity incident multiplies the factor.
    // On every request's path: inlined, as a profile-guided build inlines it (docs/performance.md).
    #[inline(always)]
    pub fn effective_capacity(&self, e: usize, now: f64) -> u32 {
        let touched = self.timeline.touches(e);
        if !touched {
            let (from, until, capacity) = self.steady[e].get();
            if from <= now && now <= until {
                return capacity;
            }
        }
        let endpoint = &self.world.endpoints()[e];
        let scale = f64::from(endpoint.capacity) * endpoint.weight;
        if touched {
            let raw = scale * self.factor(now) * self.timeline.capacity_factor(e, now);
            return clamp_capacity(raw.round_ties_even());
        }
        let (rounded, h) = self.world.cycle().rounded_steady(scale, now);
        let capacity = clamp_capacity(rounded);
        self.steady[e].set((now - h, now + h, capacity));
        capacity
    }

    /// The cycle factor at `now`, remembered for the last instant asked: arrivals often share
    /// an instant (workers refused together retry together), and the cosine is not free.
    fn factor(&self, now: f64) -> f64 {
        let (at, factor) = self.factor_at.get();
        if at == now {
            return factor;
        }
        let factor = self.world.cycle().factor(now);
        self.factor_at.set((now, factor));
        factor
    }

    /// A request arrives at endpoint `e` at time `now` (§2.2). `reuse` says that an earlier
    /// call of the same job was served here recently enough for the endpoint's cache to hold
    /// its context (the harness tracks that, as a real client would send a session key).
    ///
    /// `size` is the call's tokens in a world with `[tokens]`: the published limits charge it,
    /// and a `"tokens"` latency is computed from it.
    // Inlined into its callers (the harness's send above all): returned through memory, the
    // arrival was read back before it was all written (2 % of a bursty run's time, measured).
    #[inline(always)]
    pub fn arrive<R: RandomSource>(
        &mut self,
        e: usize,
        now: f64,
        rng: &R,
        reuse: bool,
        size: Option<&CallSize>,
    ) -> Arrival {
        let touched = self.timeline.touches(e);
        if touched && let Some(rejection) = self.rejection(e, now) {
            let stats = &mut self.endpoints[e].stats;
            stats.requests += 1;
            stats.rejected += 1;
            return Arrival::Rejected(rejection);
        }
        let capacity = self.effective_capacity(e, now);
        let world = self.world;
        let endpoint = &world.endpoints()[e];
        let hit = reuse.then_some(endpoint.cache.as_ref()).flatten();
        let cost = hit.map_or(1.0, |cache| cache.token_cost);
        let state = &mut self.endpoints[e];
        state.stats.requests += 1;
        let ordinal = state.stats.requests;
        if state.in_flight >= capacity {
            if endpoint.saturation == Saturation::Overloaded {
                state.stats.overloaded += 1;
                return Arrival::Refused {
                    refusal: Refusal::Overloaded,
                    retry_after_s: 0.0,
                };
            }
            state.stats.refused_capacity += 1;
            state.tighten(endpoint);
            return Arrival::Refused {
                refusal: Refusal::Capacity,
                retry_after_s: world.capacity_retry_after_s(),
            };
        }
        if !endpoint.limits.is_empty()
            && let Some(refused) = self.admit_limits(e, now, size)
        {
            return refused;
        }
        let state = &mut self.endpoints[e];
        if let Some(bucket) = &endpoint.rate_limit {
            let refill_s = if touched {
                self.timeline.refill_seconds(e, state.refilled_at, now)
            } else {
                now - state.refilled_at
            };
            state.refill(endpoint, now, refill_s);
            if state.tokens < cost {
                state.stats.refused_quota += 1;
                state.tighten(endpoint);
                return Arrival::Refused {
                    refusal: Refusal::Quota,
                    retry_after_s: bucket.retry_after_s,
                };
            }
        }
        let mut stream = rng.request(e, ordinal);
        state.stats.admitted += 1;
        state.in_flight += 1;
        state.stats.peak_in_flight = state.stats.peak_in_flight.max(state.in_flight);
        let (mut latency_s, mut usage) = match size {
            None => (sample_latency(endpoint, &mut stream), None),
            Some(size) => {
                let load = f64::from(state.in_flight - 1) / f64::from(capacity);
                let (latency_s, usage) = token_latency(endpoint, size, load, &mut stream);
                (
                    latency_s,
                    Some(Usage {
                        cached: hit.is_some(),
                        ..usage
                    }),
                )
            }
        };
        if let Some(cache) = hit {
            if endpoint.latency.tokens.is_some() && size.is_some() {
                // A prompt cache saves the prefill, not the decode: only the time to first
                // token shrinks.
                let u = usage.as_mut().expect("a token request has a usage");
                latency_s -= u.ttft_s * (1.0 - cache.latency_factor);
                u.ttft_s *= cache.latency_factor;
            } else {
                latency_s *= cache.latency_factor;
                if let Some(u) = &mut usage {
                    u.ttft_s *= cache.latency_factor;
                }
            }
            state.stats.cache_hits += 1;
        }
        let mut storm_rate = self
            .in_storm(e, now, rng)
            .then_some(endpoint.failures.storm_error_rate);
        if touched {
            let factor = self.timeline.latency_factor(e, now);
            latency_s *= factor;
            if let Some(u) = &mut usage {
                u.ttft_s *= factor;
            }
            let forced = self
                .timeline
                .storm(e, now, endpoint.failures.storm_error_rate);
            storm_rate = match (storm_rate, forced) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
        let mut failure = self.decide_failure(endpoint, storm_rate, &mut stream);
        if touched && self.timeline.outage(e, now) == Some(true) {
            failure = Some(FailureKind::Upstream);
        }
        let state = &mut self.endpoints[e];
        let tokens = if endpoint.rate_limit.is_some() {
            state.tokens = (state.tokens - cost).max(0.0);
            cost
        } else {
            0.0
        };
        state.stats.tokens_used += tokens;
        state.stats.busy_s += latency_s;
        Arrival::Admitted {
            latency_s,
            failure,
            tokens,
            usage,
        }
    }

    /// An incident that turns a request away at `now`: a revoked key first, then a refusing
    /// outage.
    fn rejection(&self, e: usize, now: f64) -> Option<Rejection> {
        match self.timeline.revoked_or_outage(e, now) {
            (true, _) => Some(Rejection::Revoked),
            (false, Some(false)) => Some(Rejection::Outage),
            _ => None,
        }
    }

    /// Charges the published limits of endpoint `e` for a request of `size` (a request limit
    /// only, without `[tokens]`); the refusal or rejection when one has no room. Kept out of
    /// [`Provider::arrive`] so that worlds without published limits pay one branch for them.
    #[inline(never)]
    fn admit_limits(&mut self, e: usize, now: f64, size: Option<&CallSize>) -> Option<Arrival> {
        const NONE: CallSize = CallSize {
            input: 0.0,
            output: 0.0,
            max_tokens: 0.0,
        };
        let endpoint = &self.world.endpoints()[e];
        let state = &mut self.endpoints[e];
        let size = size.unwrap_or(&NONE);
        match state
            .limits
            .admit(&endpoint.limits, endpoint.charge, size, now)
        {
            Ok(()) => None,
            Err(Blocked::TooLarge { .. }) => {
                state.stats.rejected += 1;
                Some(Arrival::Rejected(Rejection::TooLarge))
            }
            Err(Blocked::Wait {
                index,
                retry_after_s,
            }) => {
                let limit = &endpoint.limits[index];
                let stats = &mut state.stats;
                *if limit.is_daily() {
                    &mut stats.refused_daily_limit
                } else if limit.unit == crate::tokens::Unit::Requests {
                    &mut stats.refused_request_limit
                } else {
                    &mut stats.refused_token_limit
                } += 1;
                Some(Arrival::Refused {
                    refusal: Refusal::Limit { index },
                    retry_after_s,
                })
            }
        }
    }

    /// An admitted request at endpoint `e` has finished (its latency elapsed, or the client
    /// gave up on it).
    pub fn finish(&mut self, e: usize, failed: bool) {
        let state = &mut self.endpoints[e];
        debug_assert!(state.in_flight > 0, "finish without an admitted request");
        state.in_flight -= 1;
        if failed {
            state.stats.failed += 1;
        }
    }

    /// Settles the token limits of endpoint `e` for a request of `size` admitted at
    /// `admitted_at` that ended at `now` having written `written` output tokens.
    pub fn settle(&mut self, e: usize, size: &CallSize, written: f64, admitted_at: f64, now: f64) {
        let endpoint = &self.world.endpoints()[e];
        if !endpoint.limits.is_empty() {
            let state = &mut self.endpoints[e];
            state.limits.settle(
                &endpoint.limits,
                endpoint.charge,
                size,
                written,
                admitted_at,
                now,
            );
        }
    }

    /// Appends the state of every published limit of endpoint `e` at `now` to `out`: what the
    /// `x-ratelimit-*` headers of an answer from it carry.
    pub fn limit_headers(&mut self, e: usize, now: f64, out: &mut Vec<LimitHeader>) {
        let endpoint = &self.world.endpoints()[e];
        self.endpoints[e].limits.headers(&endpoint.limits, now, out);
    }

    /// [`Provider::limit_headers`] leaving the state as it is (for the trace).
    pub fn peek_limit_headers(&self, e: usize, now: f64, out: &mut Vec<LimitHeader>) {
        let endpoint = &self.world.endpoints()[e];
        self.endpoints[e]
            .limits
            .peek_headers(&endpoint.limits, now, out);
    }

    /// Requests in flight at endpoint `e`.
    pub fn in_flight(&self, e: usize) -> u32 {
        self.endpoints[e].in_flight
    }

    /// Whether endpoint `e` is inside a storm at time `t` (storms start at multiples of the
    /// check interval, each lasting `storm_duration_s`; overlapping storms chain).
    // On every request's path: inlined, as a profile-guided build inlines it (docs/performance.md).
    #[inline(always)]
    pub fn in_storm<R: RandomSource>(&mut self, e: usize, t: f64, rng: &R) -> bool {
        // Inside a calm span first: the answer most requests get.
        let (from, until) = self.endpoints[e].calm;
        if from <= t && t < until {
            return false;
        }
        let failures = &self.world.endpoints()[e].failures;
        if !failures.storms_enabled() || t < 0.0 {
            return false;
        }
        let c = failures.check_s();
        let d = failures.storm_duration_s;
        let k_hi = (t / c).floor() as u64;
        let k_lo = ((t - d) / c).floor().max(0.0) as u64;
        // Newest first, as overlapping storms chain (a plain loop: the closure of `any` was
        // not inlined once `arrive` grew).
        for k in (k_lo..=k_hi).rev() {
            let start = k as f64 * c;
            if start <= t && t < start + d && self.storm_starts(e, k, rng) {
                return true;
            }
        }
        // Calm until the next window starts: the windows scanned stay calm or end, the range
        // only moves up, and a later window starts no earlier (`k_hi`'s own start may lie just
        // above `t` when `t / c` rounded up).
        let next = k_hi as f64 * c;
        let until = if next > t {
            next
        } else {
            (k_hi + 1) as f64 * c
        };
        self.endpoints[e].calm = (t, until);
        false
    }

    fn storm_starts<R: RandomSource>(&mut self, e: usize, k: u64, rng: &R) -> bool {
        let rate = self.world.endpoints()[e].failures.storm_rate;
        let slot = &mut self.endpoints[e].storms[(k % STORM_CACHE as u64) as usize];
        if slot.0 != k + 1 {
            *slot = (k + 1, rng.storm(e, k).uniform() < rate);
        }
        slot.1
    }

    /// `storm_rate` is the error rate of the storm the request arrived in, if any.
    fn decide_failure(
        &self,
        endpoint: &Endpoint,
        storm_rate: Option<f64>,
        stream: &mut impl Stream,
    ) -> Option<FailureKind> {
        let p = storm_rate.unwrap_or(endpoint.failures.error_rate);
        if stream.uniform() >= p {
            return None;
        }
        let r = stream.uniform();
        Some(if r < self.kind_503 {
            FailureKind::Upstream
        } else if r < self.kind_connection {
            FailureKind::Connection
        } else {
            FailureKind::Timeout
        })
    }

    /// Closes the run at `makespan_s`: fills the offered-capacity integral and returns the
    /// per-endpoint counters in world order.
    pub fn into_stats(self, makespan_s: f64) -> Vec<EndpointStats> {
        let cycle = self.world.cycle();
        let integral = cycle.integral(0.0, makespan_s);
        let timeline = &self.timeline;
        // Endpoints that meet the incidents of one scope only share its integral: thousands
        // of endpoints under thousands of incidents everywhere take one sweep, not thousands.
        let mut by_scope = vec![None; self.world.pools().len() + 1];
        self.endpoints
            .into_iter()
            .zip(self.world.endpoints())
            .enumerate()
            .map(|(e, (state, endpoint))| {
                let mut stats = state.stats;
                let sweep = || timeline.offered(e, 0.0, makespan_s, |a, b| cycle.integral(a, b));
                let offered = match timeline.shared_scope(e) {
                    _ if !timeline.touches(e) => integral,
                    Some(scope) => *by_scope[scope].get_or_insert_with(sweep),
                    None => sweep(),
                };
                stats.offered_capacity_s = f64::from(endpoint.capacity) * endpoint.weight * offered;
                stats
            })
            .collect()
    }
}

impl EndpointState {
    /// Lazy refill at an arrival that passed the capacity check (§2.4): the whole interval is
    /// credited at the allowance after recovery. `refill_s` is the interval's length weighted
    /// by any rate-limit incident (the plain length without one).
    fn refill(&mut self, endpoint: &Endpoint, now: f64, refill_s: f64) {
        let Some(bucket) = &endpoint.rate_limit else {
            return;
        };
        let elapsed = now - self.refilled_at;
        if elapsed <= 0.0 {
            return;
        }
        // A full allowance stays full (recovery is never negative): no division to wait on.
        if self.allowance < 1.0 {
            let windows = if bucket.window_s > 0.0 {
                elapsed / bucket.window_s
            } else {
                0.0
            };
            self.allowance = (self.allowance + bucket.recovery_per_window * windows).min(1.0);
        }
        self.tokens =
            (self.tokens + refill_s * bucket.refill_per_s * self.allowance).min(bucket.burst_size);
        self.refilled_at = now;
    }

    /// Every refusal of a metered endpoint tightens its refill allowance.
    fn tighten(&mut self, endpoint: &Endpoint) {
        if let Some(bucket) = &endpoint.rate_limit {
            self.allowance = (self.allowance * bucket.tightening).max(bucket.tightening_floor);
        }
    }
}

/// The latency and time to first token of a call of `size` admitted at `load` (in flight
/// before it over capacity): the token formula for a `"tokens"` latency, else the sampled
/// latency, all of it before the first token. `cached` is left false for the caller to set.
#[inline(never)]
fn token_latency(
    endpoint: &Endpoint,
    size: &CallSize,
    load: f64,
    stream: &mut impl Stream,
) -> (f64, Usage) {
    let latency_s = match &endpoint.latency.tokens {
        Some(model) => {
            let (ttft, per_token) = model.timing(size.input, load);
            let tail = tail_multiplier(endpoint, stream);
            let usage = Usage {
                ttft_s: ttft * tail,
                cached: false,
            };
            return ((ttft + size.output * per_token) * tail, usage);
        }
        None => sample_latency(endpoint, stream),
    };
    let usage = Usage {
        ttft_s: latency_s,
        cached: false,
    };
    (latency_s, usage)
}

/// The body of the distribution, then the tail multiplier (§1.3). A lognormal body draws one
/// normal (none when σ = 0), an exponential one a uniform, a constant one nothing.
// On every request's path: inlined, as a profile-guided build inlines it (docs/performance.md).
#[inline(always)]
fn sample_latency(endpoint: &Endpoint, stream: &mut impl Stream) -> f64 {
    let latency = &endpoint.latency;
    let mut v = match latency.distribution {
        Distribution::Lognormal if latency.sigma > 0.0 => {
            latency.median_s * (latency.sigma * stream.gauss()).exp()
        }
        Distribution::Lognormal => latency.median_s,
        Distribution::Exponential => -latency.mean_s * (1.0 - stream.uniform()).ln(),
        Distribution::Empirical => crate::tokens::inverse_cdf(&latency.quantiles, stream.uniform()),
        // Without a call size (never in a checked world) the idle mean stands in.
        Distribution::Constant | Distribution::Tokens => latency.mean_s,
    };
    v *= tail_multiplier(endpoint, stream);
    v.max(0.0)
}

/// `tail_factor` with probability `tail_rate` (one uniform when the rate is positive), else 1.
fn tail_multiplier(endpoint: &Endpoint, stream: &mut impl Stream) -> f64 {
    let latency = &endpoint.latency;
    if latency.tail_rate > 0.0 && stream.uniform() < latency.tail_rate {
        latency.tail_factor
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hang-up at 1.55 s of a request whose first token came at 1.1 s, written at 400 a
    /// second: 180 tokens, though 1.55 − 1.1 is 0.44999… in floating point.
    #[test]
    fn a_hang_up_counts_the_whole_tokens_written() {
        let usage = Usage {
            ttft_s: 0.5 + 0.5 * 1.2,
            cached: false,
        };
        let latency_s = usage.ttft_s + 200.0 / 400.0;
        assert_eq!(usage.written_by(200.0, 1.55, latency_s), 180.0);
        assert_eq!(usage.written_by(200.0, 1.5, latency_s), 160.0);
        assert_eq!(usage.written_by(200.0, 1.1024, latency_s), 0.0);
        assert_eq!(usage.written_by(200.0, 1.1026, latency_s), 1.0);
    }
    use crate::rng::Native;

    /// The calm span a scan leaves behind never changes an answer: a provider asked at rising
    /// times (window boundaries among them) agrees with a fresh one asked each time alone.
    #[test]
    fn the_calm_span_gives_the_same_storms_as_a_fresh_scan() {
        for (check_s, duration_s) in [(10.0f64, 30.0f64), (0.3, 0.7), (7.0, 7.0), (2.5, 0.1)] {
            let text = format!(
                "name = \"storms\"\nsummary = \"storms\"\n[[endpoints]]\nid = \"a\"\ncapacity = 4\nlatency = {{ median_s = 0.1 }}\n\
                 failures = {{ storm_rate = 0.2, storm_check_s = {check_s}, storm_duration_s = {duration_s} }}\n"
            );
            let world = crate::compile::load("storms.toml", text.as_bytes()).expect("valid");
            let rng = Native::new(7, ["a"]);
            let mut asked = Provider::new(&world);
            let (mut t, mut x, mut storms) = (0.0f64, 1u64, 0);
            for i in 0..20_000u64 {
                x = crate::rng::mix64(x);
                t += if i % 7 == 0 {
                    // Land exactly on a window's start now and then.
                    ((t / check_s).floor() + 1.0) * check_s - t
                } else {
                    (x >> 11) as f64 / (1u64 << 53) as f64 * check_s / 3.0
                };
                let fresh = Provider::new(&world).in_storm(0, t, &rng);
                assert_eq!(asked.in_storm(0, t, &rng), fresh, "t = {t}");
                storms += usize::from(fresh);
            }
            assert!(
                storms > 0 && storms < 20_000,
                "{check_s}/{duration_s}: {storms}"
            );
        }
    }

    /// An empirical latency draws through its points: the sample's quantiles are the
    /// interpolated ones, its mean is the world's expected latency, and no tail is added.
    #[test]
    fn empirical_latency_follows_its_quantiles() {
        let text = "name = \"e\"\nsummary = \"e\"\n[[endpoints]]\nid = \"a\"\ncapacity = 4\n\
                    latency = { distribution = \"empirical\", quantiles = [[0, 0.1], [0.5, 0.3], [0.9, 1.0], [1, 5.0]] }\n";
        let world = crate::compile::load("e.toml", text.as_bytes()).expect("valid");
        let endpoint = &world.endpoints()[0];
        assert_eq!(
            endpoint.latency.tail_rate, 0.0,
            "measured points hold the tail"
        );
        let rng = Native::new(3, ["a"]);
        let n = 200_000u32;
        let mut draws: Vec<f64> = (0..n)
            .map(|i| sample_latency(endpoint, &mut rng.acquire(i, 0, 0)))
            .collect();
        let mean = draws.iter().sum::<f64>() / f64::from(n);
        draws.sort_by(f64::total_cmp);
        let at = |q: f64| draws[(q * f64::from(n)) as usize];
        for (q, want) in [(0.25, 0.2), (0.5, 0.3), (0.7, 0.65), (0.95, 3.0)] {
            assert!(
                (at(q) - want).abs() < 0.02 * want,
                "q{q}: {} vs {want}",
                at(q)
            );
        }
        let expected = endpoint.latency.expected_s();
        assert!(
            (mean - expected).abs() < 0.01 * expected,
            "{mean} vs {expected}"
        );
        assert!(draws[0] >= 0.1 && draws[draws.len() - 1] <= 5.0);
    }
}
