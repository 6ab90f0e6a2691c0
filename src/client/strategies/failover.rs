//! `failover`: try each pool in order at once, then wait on the primary.
//!
//! Worlds have a single pool today, so the ordered list is just the primary: an immediate try,
//! then `wait` on it — the same numbers as `wait` (reference §5.5).

use crate::client::pool::{Filter, Pool, Score};
use crate::client::strategy::{Acquire, AttemptState, CallState, Dice, Strategy, select_or_wait};

/// Immediate tries over the pools in order, then a wait on the primary.
#[derive(Debug)]
pub struct Failover;

impl Strategy for Failover {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        _: &mut AttemptState,
        call: &mut CallState,
        _: &mut dyn Dice,
    ) -> Acquire {
        if !call.waiting
            && let Some(r) = pool.select(Filter::All, Score::None, now)
        {
            return Acquire::Leased(r);
        }
        select_or_wait(pool, now, call)
    }
}
