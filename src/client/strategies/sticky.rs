//! `sticky`: reuse the resource of the attempt's previous call while it is free.

use crate::client::pool::{Filter, Pool, Score};
use crate::client::strategy::{Acquire, AttemptState, CallState, Dice, Strategy, select_or_wait};

/// Prefers the resource the attempt last used; otherwise `wait`s and remembers what it got.
/// The affinity lives for one step attempt: a retry starts without one.
#[derive(Debug)]
pub struct Sticky;

impl Strategy for Sticky {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        attempt: &mut AttemptState,
        call: &mut CallState,
        _: &mut dyn Dice,
    ) -> Acquire {
        if !call.waiting
            && let Some(preferred) = attempt.affinity
            && let Some(r) = pool.select(Filter::Only(preferred), Score::None, now)
        {
            return Acquire::Leased(r);
        }
        let next = select_or_wait(pool, now, call);
        if let Acquire::Leased(r) = next {
            attempt.affinity = Some(r);
        }
        next
    }
}
