//! `router`: a multi-deployment router in the manner of LiteLLM's `Router` (litellm 1.109.3:
//! `litellm/router_python_core.py`, the Router's logic, of which `router.py` is the facade in
//! this release; `litellm/router_strategy/`; `litellm/router_utils/cooldown_handlers.py`).
//!
//! Deployments are the endpoints; a model group is a pool. A call goes to the primary pool, its
//! retries stay there, and once they are spent (or the pool has no deployment out of cooldown)
//! it falls back to the next pools in file order, each with its own retries.
//!
//! - **Routing** among the pool's deployments that are out of cooldown and free (the world's
//!   breaker and per-endpoint cap apply as to every strategy): `simple_shuffle` draws one at
//!   random weighted by its declared `rpm` (else `tpm`, else uniformly); `least_busy` takes the
//!   fewest requests in flight (the first among equals); `usage_based` takes the lowest tokens
//!   used this calendar minute, leaving out a deployment that the request's prompt would take
//!   over its `tpm`, or whose requests this minute + 1 reach its `rpm` (random among equals);
//!   `latency_based` takes the lowest mean of its last 10 latencies per output token (a timeout
//!   counts 1000 s; none yet counts 0; random among equals). Declared `rpm`/`tpm` are the
//!   endpoint's published per-minute limits.
//! - **Cooldown** (`cooldown_s`, 5 s; a 429's Retry-After when it carries one): with
//!   `allowed_fails` = 0 (LiteLLM's default rule), a 429 cools a deployment at once unless it is
//!   alone in its pool; more than half of its answers failing, at least 5, in a 60 s window,
//!   too (not when alone); all of at least 1,000 failing, even when alone; a 401 at once.
//!   Connection errors and a 400 (a request too large for a limit) never cool; a 400 still
//!   counts among the failures of the minute. With `allowed_fails` = n > 0 (LiteLLM's
//!   explicit setting), a deployment cools once more than n of its answers (resets and 400s
//!   excepted) failed within `cooldown_s` of the first, unless it is alone with nowhere to fall
//!   back to.
//! - **Retries** (`num_retries`, 2): 429, 5xx, "overloaded", timeouts, connection errors, and a
//!   selection that found nothing, while the pool has a deployment out of cooldown. The delay
//!   is 0 in a pool of several deployments with one out of cooldown; otherwise the Retry-After
//!   when 0 < it ≤ 60 s, else `min(0.5 · 2^k, 8)` s after the k-th retry, plus up to 0.75 s of
//!   jitter. The last failure in a pool sleeps the same way before falling back. A 401 is not
//!   retried.
//! - **Fallbacks**: at most `max_fallbacks` (5) pools after the primary.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::client::params::Params;
use crate::client::pool::{Filter, Pool, ResourceId, Scope, Score, State as Breaker};
use crate::client::retry::{Decision, ErrorClass, Failure, GiveUp, RetryLoop};
use crate::client::strategy::{
    Acquire, AttemptState, CallState, Dice, Feedback, Response, Route, Strategy,
};

/// How the router picks among a pool's deployments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routing {
    /// Random, weighted by declared rpm, else tpm, else uniform.
    SimpleShuffle,
    /// Fewest requests in flight.
    LeastBusy,
    /// Lowest tokens used this calendar minute, within declared rpm/tpm.
    UsageBased,
    /// Lowest recent latency per output token.
    LatencyBased,
}

/// What a pick in one pool found.
enum Pick {
    Leased(ResourceId),
    /// Nothing free now, but a deployment within its limits has requests in flight.
    Full,
    /// Nothing to wait for.
    Nothing,
}

/// LiteLLM's `INITIAL_RETRY_DELAY`, `MAX_RETRY_DELAY` and `JITTER` \[s\].
const INITIAL_DELAY_S: f64 = 0.5;
const MAX_DELAY_S: f64 = 8.0;
const JITTER_S: f64 = 0.75;
/// The largest Retry-After slept as sent (`calculate_retry_after`) \[s\].
const MAX_RETRY_AFTER_S: f64 = 60.0;
/// The failure-share rule: window, share, minimum answers; and the all-failing rule's minimum.
const WINDOW_S: f64 = 60.0;
const FAILURE_SHARE: f64 = 0.5;
const MIN_ANSWERS: u32 = 5;
const MIN_ANSWERS_ALONE: u32 = 1000;
/// Latency samples kept per deployment, and what a timeout counts \[s per token\].
const LATENCY_SAMPLES: usize = 10;
const TIMEOUT_PENALTY: f64 = 1000.0;

/// The router; see the module documentation.
#[derive(Debug)]
pub struct Router {
    routing: Routing,
    cooldown_s: f64,
    allowed_fails: u32,
    retries: Retries,
    state: RefCell<State>,
}

/// The router's retry rule: which failures are retried, and how many attempts a step may make
/// over its pools. Delays are the router's own, slept when the next attempt begins (they depend
/// on the pool's health then).
#[derive(Debug)]
pub struct Retries {
    /// Retries per pool.
    pub num_retries: u32,
    /// Pools after the primary.
    pub max_fallbacks: u32,
    /// Pools the router uses in this run (learnt on its first acquire).
    pools: AtomicU32,
}

impl RetryLoop for Retries {
    fn decide(&self, failure: &Failure, _: &mut dyn FnMut() -> f64) -> Decision {
        if failure.class == ErrorClass::Fatal {
            return Decision::GiveUp(GiveUp::PolicyDeclined);
        }
        let pools = self.pools.load(Ordering::Relaxed).max(1);
        let most = (1 + self.num_retries).saturating_mul(pools);
        if failure.attempts_used >= most {
            return Decision::GiveUp(GiveUp::AttemptsExhausted);
        }
        Decision::Retry(0.0)
    }
}

/// What the router keeps per deployment.
#[derive(Clone, Debug, Default)]
struct Deployment {
    cooled_until: f64,
    /// The failure-share window: its start, successes and failures in it.
    window_start: f64,
    successes: u32,
    failures: u32,
    /// The `allowed_fails` window: its start and failures in it.
    fails_start: f64,
    fails: u32,
    /// The calendar minute of `requests`/`tokens`, and what this router sent there.
    minute: i64,
    requests: f64,
    tokens: f64,
    /// Latest latencies per output token, oldest overwritten first.
    latencies: Vec<f64>,
    next_latency: usize,
    /// Alone in every pool it belongs to.
    alone: bool,
}

#[derive(Debug, Default)]
struct State {
    deployments: Vec<Deployment>,
    /// Pools the router may use: the primary and its fallbacks.
    pools: usize,
}

impl Router {
    /// From the registry's parameters, routing with `routing`.
    pub fn new(routing: Routing, params: &Params) -> Router {
        Router {
            routing,
            cooldown_s: params.get("cooldown_s"),
            allowed_fails: params.get("allowed_fails") as u32,
            retries: Retries {
                num_retries: params.get("num_retries") as u32,
                max_fallbacks: params.get("max_fallbacks") as u32,
                pools: AtomicU32::new(1),
            },
            state: RefCell::new(State::default()),
        }
    }

    /// Learns the fleet on the run's first acquire.
    fn know(&self, state: &mut State, pool: &Pool) {
        if !state.deployments.is_empty() {
            return;
        }
        let n = pool.resources().len();
        state.pools = pool
            .pool_count()
            .min(1 + self.retries.max_fallbacks as usize);
        self.retries
            .pools
            .store(state.pools as u32, Ordering::Relaxed);
        state.deployments = (0..n)
            .map(|r| Deployment {
                alone: (0..pool.pool_count())
                    .filter(|&g| pool.members_in(Scope::Pool(g)).contains(&r))
                    .all(|g| pool.members_in(Scope::Pool(g)).len() == 1),
                latencies: Vec::with_capacity(LATENCY_SAMPLES),
                ..Deployment::default()
            })
            .collect();
    }

    /// Deployments of pool `g` out of cooldown at `now`.
    fn healthy(state: &State, pool: &Pool, g: usize, now: f64) -> usize {
        pool.members_in(Scope::Pool(g))
            .iter()
            .filter(|&&r| state.deployments[r].cooled_until <= now)
            .count()
    }

    /// Starts an attempt: moves on to the next pool when the route's retries there are spent
    /// or nothing there is out of cooldown, and says how long to sleep first.
    fn begin(
        &self,
        state: &State,
        pool: &Pool,
        attempt: &mut AttemptState,
        now: f64,
        u: f64,
    ) -> f64 {
        let route = &mut attempt.route;
        let mut sleep_s = 0.0;
        if route.pool >= state.pools {
            return 0.0;
        }
        if attempt.attempt > 1 {
            let healthy = Router::healthy(state, pool, route.pool, now);
            if healthy > 0 {
                let several = pool.members_in(Scope::Pool(route.pool)).len() > 1;
                if !several {
                    sleep_s = backoff(route.tries - 1, attempt.previous_retry_after_s, u);
                }
                if route.tries > self.retries.num_retries {
                    *route = Route {
                        pool: route.pool + 1,
                        tries: 0,
                    };
                }
            } else {
                *route = Route {
                    pool: route.pool + 1,
                    tries: 0,
                };
            }
        }
        while route.pool < state.pools && Router::healthy(state, pool, route.pool, now) == 0 {
            route.pool += 1;
        }
        route.tries += 1;
        sleep_s
    }

    /// Picks and leases a deployment of pool `g`, or says why not.
    fn pick(
        &self,
        state: &mut State,
        pool: &mut Pool,
        g: usize,
        call: &CallState,
        now: f64,
        dice: &mut dyn Dice,
    ) -> Pick {
        let minute = calendar_minute(now);
        let mut candidates: Vec<ResourceId> = Vec::new();
        let mut full = false;
        for i in 0..pool.members_in(Scope::Pool(g)).len() {
            let r = pool.members_in(Scope::Pool(g))[i];
            let d = &mut state.deployments[r];
            if d.cooled_until > now {
                continue;
            }
            d.enter(minute);
            if self.routing == Routing::UsageBased {
                let resource = &pool.resources()[r];
                let over_tpm = resource
                    .declared_tpm
                    .is_some_and(|tpm| d.tokens + call.demand.input > tpm);
                let over_rpm = resource
                    .declared_rpm
                    .is_some_and(|rpm| d.requests + 1.0 >= rpm);
                if over_tpm || over_rpm {
                    continue;
                }
            }
            if pool.available(r, now) {
                candidates.push(r);
            } else {
                let resource = &pool.resources()[r];
                full |= resource.active() > 0
                    && !matches!(resource.raw_state(), Breaker::Dead | Breaker::Revoked);
            }
        }
        let chosen = match self.routing {
            Routing::SimpleShuffle => shuffle(pool, &candidates, dice),
            Routing::LeastBusy => candidates
                .iter()
                .copied()
                .min_by_key(|&r| pool.resources()[r].active()),
            Routing::UsageBased => lowest(&candidates, |r| state.deployments[r].tokens, dice),
            Routing::LatencyBased => {
                lowest(&candidates, |r| mean(&state.deployments[r].latencies), dice)
            }
        };
        let Some(chosen) = chosen else {
            return if full { Pick::Full } else { Pick::Nothing };
        };
        pool.select_in(Scope::Pool(g), None, Filter::Only(chosen), Score::None, now)
            .expect("a candidate is free");
        state.deployments[chosen].requests += 1.0;
        Pick::Leased(chosen)
    }

    /// What an answer from `r` teaches the cooldown rules.
    fn learn(&self, d: &mut Deployment, feedback: &Feedback, can_fall_back: bool) {
        let now = feedback.at;
        if now >= d.window_start + WINDOW_S {
            (d.window_start, d.successes, d.failures) = (now, 0, 0);
        }
        let failed = match feedback.response {
            Response::Success => {
                d.successes += 1;
                // Counted in the minute the answer arrives, as LiteLLM's success callback does.
                d.enter(calendar_minute(now));
                d.tokens += feedback.input_tokens + feedback.output_tokens;
                let per_token = if feedback.output_tokens > 0.0 {
                    feedback.latency_s() / feedback.output_tokens
                } else {
                    feedback.latency_s()
                };
                d.sample(per_token);
                return;
            }
            Response::Refused => {
                d.failures += 1;
                None
            }
            // A 400 counts among the minute's failures, but LiteLLM cools on no 4xx but 429,
            // 401, 404 and 408 (`_is_cooldown_required`): a request too large for a limit says
            // nothing of the deployment.
            Response::Invalid => {
                d.failures += 1;
                return;
            }
            Response::Failed(class) => {
                d.failures += 1;
                if class == ErrorClass::Timeout {
                    d.sample(TIMEOUT_PENALTY);
                }
                Some(class)
            }
        };
        if failed == Some(ErrorClass::Connection) {
            return;
        }
        let rate_limited = feedback.retry_after_s.is_some();
        let cool = if self.allowed_fails > 0 {
            if now >= d.fails_start + self.cooldown_s {
                (d.fails_start, d.fails) = (now, 0);
            }
            d.fails += 1;
            let lone = d.alone && !can_fall_back;
            d.fails > self.allowed_fails && !lone
        } else {
            let answers = d.successes + d.failures;
            let share = f64::from(d.failures) / f64::from(answers);
            (rate_limited && !d.alone)
                || (d.successes == 0 && answers >= MIN_ANSWERS_ALONE)
                || (share > FAILURE_SHARE && answers >= MIN_ANSWERS && !d.alone)
                || failed == Some(ErrorClass::Fatal)
        };
        if cool {
            let away = feedback.retry_after_s.unwrap_or(self.cooldown_s);
            d.cooled_until = d.cooled_until.max(now + away);
        }
    }
}

impl Deployment {
    /// Starts the counts of `minute` when they belong to an earlier one.
    fn enter(&mut self, minute: i64) {
        if self.minute != minute {
            (self.minute, self.requests, self.tokens) = (minute, 0.0, 0.0);
        }
    }

    fn sample(&mut self, value: f64) {
        if self.latencies.len() < LATENCY_SAMPLES {
            self.latencies.push(value);
        } else {
            self.latencies[self.next_latency] = value;
        }
        self.next_latency = (self.next_latency + 1) % LATENCY_SAMPLES;
    }
}

/// The calendar minute of `now` \[s\] (usage-based routing counts per calendar minute).
fn calendar_minute(now: f64) -> i64 {
    (now / 60.0).floor() as i64
}

/// The sleep before a retry in a pool of one deployment (or none out of cooldown) after `k`
/// retries, given the failure's Retry-After and a uniform draw `u`.
pub fn backoff(k: u32, retry_after_s: Option<f64>, u: f64) -> f64 {
    let base = match retry_after_s {
        Some(after) if after > 0.0 && after <= MAX_RETRY_AFTER_S => after,
        _ => (INITIAL_DELAY_S * 2f64.powi(k.min(64) as i32)).min(MAX_DELAY_S),
    };
    base + JITTER_S * u
}

/// The mean of `samples`, 0 when there are none (an untried deployment goes first).
fn mean(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        0.0
    } else {
        samples.iter().sum::<f64>() / samples.len() as f64
    }
}

/// A random draw among `candidates` weighted by declared rpm, else tpm, else uniform.
fn shuffle(pool: &Pool, candidates: &[ResourceId], dice: &mut dyn Dice) -> Option<ResourceId> {
    if candidates.len() <= 1 {
        return candidates.first().copied();
    }
    let resources = pool.resources();
    let declared = |field: fn(&crate::client::pool::Resource) -> Option<f64>| -> Vec<f64> {
        candidates
            .iter()
            .map(|&r| field(&resources[r]).unwrap_or(0.0))
            .collect()
    };
    let weights = [declared(|r| r.declared_rpm), declared(|r| r.declared_tpm)]
        .into_iter()
        .find(|w| w.iter().any(|&x| x > 0.0))
        .unwrap_or_else(|| vec![1.0; candidates.len()]);
    let total: f64 = weights.iter().sum();
    let mut target = dice.uniform() * total;
    for (&r, &w) in candidates.iter().zip(&weights) {
        if target < w {
            return Some(r);
        }
        target -= w;
    }
    candidates
        .iter()
        .zip(&weights)
        .rev()
        .find(|(_, w)| **w > 0.0)
        .map(|(r, _)| *r)
}

/// The candidate with the lowest `score`, random among equals.
fn lowest(
    candidates: &[ResourceId],
    score: impl Fn(ResourceId) -> f64,
    dice: &mut dyn Dice,
) -> Option<ResourceId> {
    let best = candidates
        .iter()
        .map(|&r| score(r))
        .fold(f64::INFINITY, f64::min);
    let tied: Vec<ResourceId> = candidates
        .iter()
        .copied()
        .filter(|&r| score(r) == best)
        .collect();
    match tied.len() {
        0 => None,
        1 => Some(tied[0]),
        n => Some(tied[((dice.uniform() * n as f64) as usize).min(n - 1)]),
    }
}

impl Strategy for Router {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        attempt: &mut AttemptState,
        call: &mut CallState,
        dice: &mut dyn Dice,
    ) -> Acquire {
        let mut state = self.state.borrow_mut();
        self.know(&mut state, pool);
        if !attempt.begun {
            attempt.begun = true;
            let u = if attempt.attempt > 1 {
                dice.uniform()
            } else {
                0.0
            };
            let sleep_s = self.begin(&state, pool, attempt, now, u);
            if sleep_s > 0.0 {
                return Acquire::Sleep(sleep_s);
            }
        }
        loop {
            let g = attempt.route.pool;
            if g >= state.pools {
                // LiteLLM's `RouterRateLimitError`: nothing out of cooldown anywhere.
                return Acquire::Unavailable;
            }
            match self.pick(&mut state, pool, g, call, now, dice) {
                Pick::Leased(r) => return Acquire::Leased(r),
                Pick::Full => return Acquire::WaitFor(Scope::Pool(g)),
                Pick::Nothing if Router::healthy(&state, pool, g, now) == 0 => {
                    attempt.route = Route {
                        pool: g + 1,
                        tries: 1,
                    };
                }
                // Nothing within its limits (usage_based), or nothing the breaker lets through:
                // the selection fails, and the attempt with it.
                Pick::Nothing => return Acquire::Unavailable,
            }
        }
    }

    fn in_cooldown(&self, endpoint: usize, now: f64) -> Option<bool> {
        let state = self.state.borrow();
        Some(
            state
                .deployments
                .get(endpoint)
                .is_some_and(|d| d.cooled_until > now),
        )
    }

    fn begin_run(&self) {
        *self.state.borrow_mut() = State::default();
    }

    fn uses_feedback(&self) -> bool {
        true
    }

    fn observe(&self, feedback: &Feedback) {
        let mut state = self.state.borrow_mut();
        let can_fall_back = state.pools > 1;
        if let Some(d) = state.deployments.get_mut(feedback.resource) {
            self.learn(d, feedback, can_fall_back);
        }
    }

    fn retry_loop(&self) -> Option<&dyn RetryLoop> {
        Some(&self.retries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::registry;
    use crate::compile;

    /// Two pools: `primary` with deployments a and b, `fallback` with c (each of capacity 4).
    const TWO_POOLS: &str = r#"
name = "routed"
summary = "two pools"
[[pools]]
name = "primary"
[[pools]]
name = "fallback"
[[endpoints]]
id = "a"
pool = "primary"
capacity = 4
latency = { median_s = 0.1 }
[[endpoints]]
id = "b"
pool = "primary"
capacity = 4
latency = { median_s = 0.1 }
[[endpoints]]
id = "c"
pool = "fallback"
capacity = 4
latency = { median_s = 0.1 }
"#;

    /// One pool of one deployment.
    const ALONE: &str = r#"
name = "alone"
summary = "one deployment"
[[endpoints]]
id = "a"
capacity = 4
latency = { median_s = 0.1 }
"#;

    struct Fixed(f64);
    impl Dice for Fixed {
        fn uniform(&mut self) -> f64 {
            self.0
        }
    }

    fn router(routing: Routing) -> Router {
        let router = Router::new(routing, &registry::find("router").unwrap().values([]));
        router.begin_run();
        router
    }

    fn pool(text: &str) -> Pool {
        Pool::new(&compile::load("routed.toml", text.as_bytes()).expect("valid"))
    }

    /// One step of a scripted call: its attempt state carried from the last attempt.
    struct Step {
        attempt: AttemptState,
    }

    impl Step {
        fn new() -> Step {
            Step {
                attempt: AttemptState {
                    attempt: 1,
                    ..AttemptState::default()
                },
            }
        }

        /// The next attempt, after a failure that carried `retry_after_s`.
        fn retry(&mut self, retry_after_s: Option<f64>) {
            self.attempt = AttemptState {
                attempt: self.attempt.attempt + 1,
                route: self.attempt.route,
                previous_retry_after_s: retry_after_s,
                ..AttemptState::default()
            };
        }

        fn acquire(&mut self, router: &Router, pool: &mut Pool, now: f64, u: f64) -> Acquire {
            router.acquire(
                pool,
                now,
                &mut self.attempt,
                &mut CallState::default(),
                &mut Fixed(u),
            )
        }
    }

    /// The answer `response` from `r` at `at`, then the lease goes back.
    fn answer(
        router: &Router,
        pool: &mut Pool,
        r: ResourceId,
        at: f64,
        response: Response,
        retry_after_s: Option<f64>,
    ) {
        router.observe(&Feedback {
            resource: r,
            sent_at: at,
            at,
            response,
            in_flight: pool.active_total(),
            retry_after_s,
            input_tokens: 0.0,
            output_tokens: 0.0,
            headers: &[],
        });
        pool.release(r);
    }

    fn leased(acquired: Acquire) -> ResourceId {
        match acquired {
            Acquire::Leased(r) => r,
            other => panic!("expected a lease, got {other:?}"),
        }
    }

    #[test]
    fn a_429_cools_its_deployment_for_the_retry_after_and_the_retry_goes_to_the_other_at_once() {
        let router = router(Routing::SimpleShuffle);
        let mut pool = pool(TWO_POOLS);
        let mut step = Step::new();
        let first = leased(step.acquire(&router, &mut pool, 0.0, 0.2));
        answer(
            &router,
            &mut pool,
            first,
            0.0,
            Response::Refused,
            Some(10.0),
        );
        step.retry(Some(10.0));
        // Several deployments and one out of cooldown: no sleep, and not the one that refused.
        let second = leased(step.acquire(&router, &mut pool, 0.0, 0.2));
        assert_ne!(second, first);
        assert!(second < 2, "still the primary pool");
        answer(&router, &mut pool, second, 0.0, Response::Success, None);
        // Until the Retry-After has passed only `second` is chosen, whatever the draw.
        for u in [0.0, 0.5, 0.99] {
            let r = leased(Step::new().acquire(&router, &mut pool, 9.9, u));
            assert_eq!(r, second);
            answer(&router, &mut pool, r, 9.9, Response::Success, None);
        }
        let drawn: Vec<ResourceId> = [0.0, 0.99]
            .iter()
            .map(|&u| {
                let r = leased(Step::new().acquire(&router, &mut pool, 10.0, u));
                answer(&router, &mut pool, r, 10.0, Response::Success, None);
                r
            })
            .collect();
        assert_eq!(drawn, [0, 1], "both back at the end of the Retry-After");
    }

    #[test]
    fn a_step_makes_one_attempt_and_two_retries_in_the_primary_then_falls_back() {
        let router = router(Routing::LeastBusy);
        let mut pool = pool(TWO_POOLS);
        let mut step = Step::new();
        let mut sent = Vec::new();
        for k in 0..4 {
            let now = f64::from(k);
            let r = leased(step.acquire(&router, &mut pool, now, 0.5));
            sent.push(r);
            answer(
                &router,
                &mut pool,
                r,
                now,
                Response::Failed(ErrorClass::Upstream),
                None,
            );
            step.retry(None);
        }
        // Least busy ties go to the first: a three times, then the fallback pool's c.
        assert_eq!(sent, [0, 0, 0, 2]);
        assert_eq!(step.attempt.route, Route { pool: 1, tries: 1 });
        assert_eq!(
            router.retries.decide(
                &Failure {
                    class: ErrorClass::Upstream,
                    retry_after_s: None,
                    attempts_used: 6,
                    elapsed_s: 0.0
                },
                &mut || 0.0
            ),
            Decision::GiveUp(GiveUp::AttemptsExhausted),
            "3 attempts in each of the two pools"
        );
    }

    #[test]
    fn over_half_failing_of_five_answers_cools_a_deployment_for_cooldown_s() {
        let router = router(Routing::LeastBusy);
        let mut pool = pool(TWO_POOLS);
        // a: 2 successes, then failures; the 5th answer makes 3 of 5 failed.
        let script = [
            Response::Success,
            Response::Success,
            Response::Failed(ErrorClass::Upstream),
            Response::Refused,
        ];
        for response in script {
            let r = leased(Step::new().acquire(&router, &mut pool, 1.0, 0.0));
            assert_eq!(r, 0);
            answer(&router, &mut pool, r, 1.0, response, None);
        }
        assert_eq!(leased(Step::new().acquire(&router, &mut pool, 1.0, 0.0)), 0);
        answer(
            &router,
            &mut pool,
            0,
            1.0,
            Response::Failed(ErrorClass::Timeout),
            None,
        );
        // Cooled for 5 s: b takes everything until then.
        let r = leased(Step::new().acquire(&router, &mut pool, 5.9, 0.0));
        assert_eq!(r, 1);
        answer(&router, &mut pool, r, 5.9, Response::Success, None);
        assert_eq!(leased(Step::new().acquire(&router, &mut pool, 6.0, 0.0)), 0);
    }

    #[test]
    fn connection_errors_never_cool_and_a_401_cools_at_once() {
        let router = router(Routing::LeastBusy);
        let mut pool = pool(TWO_POOLS);
        for _ in 0..6 {
            let r = leased(Step::new().acquire(&router, &mut pool, 0.0, 0.0));
            assert_eq!(r, 0, "resets do not cool a");
            answer(
                &router,
                &mut pool,
                r,
                0.0,
                Response::Failed(ErrorClass::Connection),
                None,
            );
        }
        answer_401(&router, &mut pool);
        assert_eq!(leased(Step::new().acquire(&router, &mut pool, 0.1, 0.0)), 1);
    }

    #[test]
    fn a_400_never_cools_but_counts_among_the_failures() {
        let router = router(Routing::LeastBusy);
        let mut pool = pool(TWO_POOLS);
        for _ in 0..6 {
            let r = leased(Step::new().acquire(&router, &mut pool, 0.0, 0.0));
            assert_eq!(r, 0, "a request too large for a's limits says nothing of a");
            answer(&router, &mut pool, r, 0.0, Response::Invalid, None);
        }
        // Six failures of six answers: the next failure cools a by the failure-share rule.
        let r = leased(Step::new().acquire(&router, &mut pool, 0.0, 0.0));
        assert_eq!(r, 0);
        answer(
            &router,
            &mut pool,
            r,
            0.0,
            Response::Failed(ErrorClass::Upstream),
            None,
        );
        assert_eq!(leased(Step::new().acquire(&router, &mut pool, 0.1, 0.0)), 1);
    }

    fn answer_401(router: &Router, pool: &mut Pool) {
        let r = leased(Step::new().acquire(router, pool, 0.0, 0.0));
        answer(
            router,
            pool,
            r,
            0.0,
            Response::Failed(ErrorClass::Fatal),
            None,
        );
    }

    #[test]
    fn when_every_primary_deployment_cools_a_new_call_goes_straight_to_the_fallback() {
        let router = router(Routing::SimpleShuffle);
        let mut pool = pool(TWO_POOLS);
        for u in [0.1, 0.9] {
            let r = leased(Step::new().acquire(&router, &mut pool, 0.0, u));
            answer(&router, &mut pool, r, 0.0, Response::Refused, Some(30.0));
        }
        let mut step = Step::new();
        assert_eq!(leased(step.acquire(&router, &mut pool, 1.0, 0.5)), 2);
        assert_eq!(step.attempt.route, Route { pool: 1, tries: 1 });
    }

    #[test]
    fn alone_a_deployment_is_not_cooled_by_a_429_and_the_retry_sleeps_the_retry_after_and_jitter() {
        let router = router(Routing::SimpleShuffle);
        let mut pool = pool(ALONE);
        let mut step = Step::new();
        let r = leased(step.acquire(&router, &mut pool, 0.0, 0.0));
        answer(&router, &mut pool, r, 0.0, Response::Refused, Some(2.0));
        step.retry(Some(2.0));
        assert_eq!(
            step.acquire(&router, &mut pool, 0.0, 0.4),
            Acquire::Sleep(2.0 + 0.75 * 0.4)
        );
        assert_eq!(leased(step.acquire(&router, &mut pool, 2.3, 0.4)), 0);
    }

    #[test]
    fn the_backoff_is_litellms_schedule() {
        assert_eq!(backoff(0, None, 0.0), 0.5);
        assert_eq!(backoff(1, None, 0.0), 1.0);
        assert_eq!(backoff(4, None, 0.0), 8.0);
        assert_eq!(backoff(9, None, 1.0), 8.75);
        assert_eq!(backoff(0, Some(60.0), 0.0), 60.0);
        assert_eq!(backoff(0, Some(61.0), 0.0), 0.5, "over 60 s: the backoff");
        assert_eq!(backoff(2, Some(0.0), 0.0), 2.0, "0 is not a Retry-After");
    }

    #[test]
    fn usage_based_skips_a_deployment_whose_minute_would_pass_its_rpm() {
        let text = TWO_POOLS
            .replace(
                "id = \"a\"\npool = \"primary\"",
                "id = \"a\"\npool = \"primary\"\nlimits = [{ unit = \"requests\", limit = 3, per = \"minute\" }]",
            );
        let router = router(Routing::UsageBased);
        let mut pool = pool(&text);
        let mut to_a = 0;
        for _ in 0..6 {
            let r = leased(Step::new().acquire(&router, &mut pool, 1.0, 0.0));
            to_a += usize::from(r == 0);
            answer(&router, &mut pool, r, 1.0, Response::Success, None);
        }
        // rpm 3: a takes requests while its count + 1 < 3, so two of this minute's.
        assert_eq!(to_a, 2);
        assert_eq!(
            leased(Step::new().acquire(&router, &mut pool, 60.0, 0.0)),
            0,
            "a new minute"
        );
    }

    #[test]
    fn usage_based_counts_a_success_in_the_minute_it_arrives() {
        let router = router(Routing::UsageBased);
        let mut pool = pool(TWO_POOLS);
        // Sent at 59 s on a (least tokens, first among equals with u = 0), answered at 61 s.
        let r = leased(Step::new().acquire(&router, &mut pool, 59.0, 0.0));
        assert_eq!(r, 0);
        router.observe(&Feedback {
            resource: r,
            sent_at: 59.0,
            at: 61.0,
            response: Response::Success,
            in_flight: pool.active_total(),
            retry_after_s: None,
            input_tokens: 800.0,
            output_tokens: 200.0,
            headers: &[],
        });
        pool.release(r);
        // Minute 1 holds a's 1,000 tokens, so the next call goes to b.
        assert_eq!(
            leased(Step::new().acquire(&router, &mut pool, 62.0, 0.0)),
            1
        );
    }
}
