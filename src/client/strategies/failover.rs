//! `failover`: try each pool in order at once, then wait on the primary.
//!
//! Worlds have a single pool today, so the ordered list is just the primary: an immediate try,
//! then `wait` on it — the same numbers as `wait` (reference §5.5).

use crate::client::pool::Pool;
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
        // The first selection of `select_or_wait` is this strategy's immediate try; a failed
        // selection changes nothing, so the reference's extra try is not repeated here.
        select_or_wait(pool, now, call)
    }
}
