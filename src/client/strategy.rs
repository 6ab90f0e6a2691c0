//! The contract between the harness and an acquire strategy.
//!
//! A strategy decides how one call obtains a lease from the pool: take one now, wait in the
//! pool's queue, sleep and poll again, or give up. It sees the pool and its own per-attempt and
//! per-call scratch state, never the provider. The harness drives it: after a wake-up or a poll
//! timer it calls [`Strategy::acquire`] again with the same call state.

use crate::client::pool::{Filter, Pool, ResourceId, Scope, Score};

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
    /// Sleep this long \[s\], then call again.
    Sleep(f64),
    /// Nothing is available and the strategy will not wait: the attempt fails ("unavailable").
    Unavailable,
}

/// Scratch state that lives for one step attempt (a retry starts afresh).
#[derive(Clone, Debug, Default)]
pub struct AttemptState {
    /// `sticky`'s preferred resource for the rest of the attempt.
    pub affinity: Option<ResourceId>,
}

/// Scratch state that lives for one call's acquire.
#[derive(Clone, Debug, Default)]
pub struct CallState {
    /// Polls that found nothing so far.
    pub polls: u32,
    /// The strategy has fallen back to waiting with the default selection.
    pub waiting: bool,
}

/// The attempt's acquire stream, created on first use.
pub trait Dice {
    /// A uniform draw in `[0, 1)`.
    fn uniform(&mut self) -> f64;
}

/// One acquire strategy.
pub trait Strategy: std::fmt::Debug + Send + Sync {
    /// Advances the acquire of one call at time `now`.
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        attempt: &mut AttemptState,
        call: &mut CallState,
        dice: &mut dyn Dice,
    ) -> Acquire;
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
