//! `least_busy`: pick the least-loaded resource; wait when none is free.
//!
//! The pool's default selection is already least-busy with round-robin among equals, so in a
//! single pool this is the `wait` code path and gives identical numbers (reference §5.4).

use crate::client::pool::{Filter, Pool, Score};
use crate::client::strategy::{Acquire, AttemptState, CallState, Dice, Strategy, select_or_wait};

/// Least-busy selection over every resource, then `wait`.
#[derive(Debug)]
pub struct LeastBusy;

impl Strategy for LeastBusy {
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
