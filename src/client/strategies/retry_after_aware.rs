//! `retry_after_aware`: a 429's Retry-After keeps every worker away from that endpoint, not
//! just the one that received it.
//!
//! The reference honours Retry-After only in the retry delay of the worker that was refused;
//! the other workers keep sending to the same endpoint and collect their own refusals (which
//! also trip the breaker and tighten the bucket). Here the pool remembers each endpoint's latest
//! Retry-After and the strategy selects only among endpoints whose Retry-After has passed,
//! least busy first as usual. HTTP's own semantics (RFC 9110 §10.2.3) are per server, not per
//! request, so this is the client a provider hopes for.

use crate::client::pool::{Filter, Pool, Score};
use crate::client::strategy::{Acquire, AttemptState, CallState, Dice, Strategy, select_or_wait};

/// Least-busy selection among endpoints not under a Retry-After. When the only available
/// endpoints are under one, it sleeps until the earliest ends; when nothing is available at all,
/// it waits like `wait`.
#[derive(Debug)]
pub struct RetryAfterAware;

impl Strategy for RetryAfterAware {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        _: &mut AttemptState,
        call: &mut CallState,
        _: &mut dyn Dice,
    ) -> Acquire {
        call.waiting = false;
        if let Some(r) = pool.select(Filter::NotRetryAfter, Score::None, now) {
            return Acquire::Leased(r);
        }
        match pool.next_retry_after_end(now) {
            Some(until) => Acquire::Sleep(until - now),
            None => select_or_wait(pool, now, call),
        }
    }
}
