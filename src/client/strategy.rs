//! The contract between the harness and an acquire strategy.
//!
//! A strategy decides how one call obtains a lease from the pool: take one now, wait in the
//! pool's queue, sleep and poll again, or give up. It sees the pool and its own per-attempt and
//! per-call scratch state, never the provider. The harness drives it: after a wake-up or a poll
//! timer it calls [`Strategy::acquire`] again with the same call state.
//!
//! Adaptive strategies also learn from what their requests met: the harness reports every
//! answer through [`Strategy::observe`]. The hook defaults to doing nothing, so a strategy that
//! does not adapt behaves exactly as if it did not exist.

use crate::client::pool::{Filter, Pool, ResourceId, Scope, Score, State};
use crate::client::retry::{ErrorClass, RetryLoop};
use crate::tokens::{LimitHeader, Unit};

/// What a strategy asks the harness to do next for this call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Acquire {
    /// A lease on this resource was taken.
    Leased(ResourceId),
    /// Register as a waiter on the primary pool; the harness calls again once a candidate
    /// exists.
    Wait,
    /// Register as a waiter on `scope`; the harness calls again once a candidate exists there.
    WaitFor(Scope),
    /// Register as a waiter on `scope` until `deadline` \[s\]; the harness calls again when a
    /// candidate exists there, or at the deadline with [`CallState::timed_out`] set.
    WaitUntil {
        /// What the call waits for.
        scope: Scope,
        /// When it stops waiting \[s\].
        deadline: f64,
    },
    /// Sleep this long \[s\], then call again.
    Sleep(f64),
    /// Nothing is available and the strategy will not wait: the attempt fails ("unavailable").
    Unavailable,
}

/// Scratch state that lives for one step attempt (a retry starts afresh, but for what the
/// harness tells it of the attempts before and the [`Route`] it carries over).
#[derive(Clone, Debug, Default)]
pub struct AttemptState {
    /// `sticky`'s preferred resource for the rest of the attempt.
    pub affinity: Option<ResourceId>,
    /// Which attempt of the step this is, from 1 (set by the harness).
    pub attempt: u32,
    /// The Retry-After the previous attempt's failure carried \[s\] (set by the harness).
    pub previous_retry_after_s: Option<f64>,
    /// The strategy has begun this attempt (its first acquire has run).
    pub begun: bool,
    /// Where the step's attempts have gone so far: carried from each attempt to the next,
    /// fresh at each step.
    pub route: Route,
}

/// Where a step's attempts have gone: the pool they are in and how many were made there (a
/// router's position in its fallback list).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Route {
    /// Index of the pool in the world's pool list.
    pub pool: usize,
    /// Attempts made in that pool.
    pub tries: u32,
}

/// Scratch state that lives for one call's acquire.
#[derive(Clone, Debug, Default)]
pub struct CallState {
    /// When the call started to acquire \[s\] (set by the harness).
    pub started_at: f64,
    /// Polls that found nothing so far.
    pub polls: u32,
    /// The strategy has fallen back to waiting with the default selection.
    pub waiting: bool,
    /// A [`Acquire::WaitUntil`] reached its deadline (set by the harness).
    pub timed_out: bool,
    /// What the call's request asks, as the client knows it before sending (set by the
    /// harness; zero in a world without `[tokens]`).
    pub demand: Demand,
    /// The send time a pacing strategy reserved for the call \[s\], once it has.
    pub not_before: Option<f64>,
}

/// A request's size as its client knows it before sending: the prompt and the `max_tokens`
/// it asks for, not the output the model will write.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Demand {
    /// Prompt tokens.
    pub input: f64,
    /// The `max_tokens` asked for.
    pub max_tokens: f64,
}

impl Demand {
    /// What the request takes from a limit counting `unit`, at most (see [`Unit::demand`]).
    pub fn of(&self, unit: Unit) -> f64 {
        unit.demand(self.input, self.max_tokens)
    }
}

/// The attempt's acquire stream, created on first use.
pub trait Dice {
    /// A uniform draw in `[0, 1)`.
    fn uniform(&mut self) -> f64;
}

/// What one request met, as the client sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Response {
    /// Answered successfully.
    Success,
    /// Admitted, then failed (503, connection reset or read timeout).
    Failed(ErrorClass),
    /// Refused at once with a 429.
    Refused,
    /// Turned away at once as too large for the endpoint's limits (HTTP 400): the request's own
    /// fault, which says nothing of the endpoint's health or load. Not retried (class `fatal`).
    Invalid,
}

/// The answer to one request, reported to the strategy when it arrives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Feedback<'a> {
    /// The resource the request was sent on.
    pub resource: ResourceId,
    /// When it was sent \[s\].
    pub sent_at: f64,
    /// When the answer arrived \[s\] (equal to `sent_at` for a refusal).
    pub at: f64,
    /// What it met.
    pub response: Response,
    /// Leases held over the whole pool just before this request's lease is given back.
    pub in_flight: u32,
    /// The Retry-After of a 429 \[s\] (`None` for any other answer, "overloaded" included).
    pub retry_after_s: Option<f64>,
    /// The usage a success reports: prompt and output tokens (0 without `[tokens]`, and for
    /// any answer but a success).
    pub input_tokens: f64,
    /// See `input_tokens`.
    pub output_tokens: f64,
    /// The `x-ratelimit-*` headers of the answer, one per published limit of the endpoint in
    /// its order; empty unless [`Strategy::wants_headers`] (and for an endpoint without
    /// published limits, or an answer that never reached it).
    pub headers: &'a [LimitHeader],
}

impl Feedback<'_> {
    /// Time from sending to the answer \[s\].
    pub fn latency_s(&self) -> f64 {
        self.at - self.sent_at
    }
}

/// One acquire strategy.
///
/// A strategy value serves one run at a time: the harness calls [`Strategy::begin_run`] first,
/// so an adaptive strategy keeps its per-run state behind `&self` (interior mutability) and is
/// therefore not `Sync`; each run builds or owns its own.
pub trait Strategy: std::fmt::Debug + Send {
    /// Advances the acquire of one call at time `now`.
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        attempt: &mut AttemptState,
        call: &mut CallState,
        dice: &mut dyn Dice,
    ) -> Acquire;

    /// A run starts: forget whatever an earlier run taught.
    fn begin_run(&self) {}

    /// The client-side concurrency limit an adaptive strategy has reached, for the windowed
    /// recorder; `None` (the default) for a strategy without one.
    fn adaptive_limit(&self) -> Option<f64> {
        None
    }

    /// Whether the strategy keeps endpoint `endpoint` out of use at `now` by a rule of its own
    /// (the router's cooldowns), for the windowed recorder; `None` (the default) for a strategy
    /// without such a rule.
    fn in_cooldown(&self, endpoint: usize, now: f64) -> Option<bool> {
        let _ = (endpoint, now);
        None
    }

    /// Whether the strategy implements [`Strategy::observe`] or hedges. The harness asks once
    /// per run and skips both hooks for strategies that do neither (most), which saves two
    /// dynamic calls per request.
    fn uses_feedback(&self) -> bool {
        false
    }

    /// A request's answer arrived (a refusal arrives when it is sent). A hedged request that
    /// lost the race is cancelled and never answers.
    fn observe(&self, _feedback: &Feedback) {}

    /// Whether [`Feedback::headers`] should carry the rate-limit headers (asked once per run;
    /// reading them costs a little per answer, so only pacers that use them ask).
    fn wants_headers(&self) -> bool {
        false
    }

    /// How long after a request was sent to send a second copy on another resource if it has
    /// not answered \[s\]; `None` (the default) never hedges. Asked once per request sent.
    fn hedge_after(&self) -> Option<f64> {
        None
    }

    /// The retry loop this strategy carries itself (a client library's built-in retries), or
    /// `None` (the default) to leave retries to the world's `[retry]` policy. Asked once per
    /// run; a strategy that returns `None` runs exactly as if this hook did not exist.
    fn retry_loop(&self) -> Option<&dyn RetryLoop> {
        None
    }

    /// Leases a resource other than `primary` for the hedge of a request in flight there,
    /// without waiting; `None` sends no hedge.
    fn hedge(&self, _pool: &mut Pool, _now: f64, _primary: ResourceId) -> Option<ResourceId> {
        None
    }
}

/// The default selection, or else a wait in the pool's queue (the `wait` strategy's loop body).
pub fn select_or_wait(pool: &mut Pool, now: f64, call: &mut CallState) -> Acquire {
    match pool.select(Filter::All, Score::None, now) {
        Some(r) => Acquire::Leased(r),
        None => {
            call.waiting = true;
            Acquire::Wait
        }
    }
}

/// A client bound to one endpoint (an SDK client built with one base URL): the first endpoint
/// of the primary pool, leased when free, else waited for. When the client's breaker has it
/// DEAD or REVOKED the call fails at once as unavailable (class `unknown`): there is no other
/// endpoint to go to.
///
/// The wait is on the primary pool, not on the endpoint alone: the pool wakes its waiters when
/// the endpoint goes DEAD, and a waiter of the one resource would only re-check that resource
/// and sleep on, for ever once nothing is in flight. Waiting on the pool, it is driven again
/// while another endpoint of the pool is free, sees the endpoint DEAD and fails; in a pool of
/// that one endpoint the harness reports the stall, as for `wait`.
pub fn single_endpoint(pool: &mut Pool, now: f64, call: &mut CallState) -> Acquire {
    let r = pool.primary_head();
    if let Some(leased) = pool.select(Filter::Only(r), Score::None, now) {
        return Acquire::Leased(leased);
    }
    match pool.state(r, now) {
        State::Dead | State::Revoked => Acquire::Unavailable,
        State::Ready | State::Degraded => {
            call.waiting = true;
            Acquire::Wait
        }
    }
}
