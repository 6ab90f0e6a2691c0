//! `least_busy`: pick the least-loaded resource; wait when none is free.
//!
//! The pool's default selection is already least-busy with round-robin among equals, so in a
//! single pool this is the `wait` code path and gives identical numbers (reference §5.4).

use crate::client::pool::Pool;
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
        // The first selection of `select_or_wait` is this strategy's immediate try; a failed
        // selection changes nothing, so the reference's extra try is not repeated here.
        select_or_wait(pool, now, call)
    }
}
