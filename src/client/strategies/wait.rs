//! `wait`: take a free resource or queue in the pool until one frees up.

use crate::client::pool::Pool;
use crate::client::strategy::{Acquire, AttemptState, CallState, Dice, Strategy, select_or_wait};

/// Selects; when nothing is free, waits (FIFO among waiters) without a timeout. Never gives up.
#[derive(Debug)]
pub struct Wait;

impl Strategy for Wait {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        _: &mut AttemptState,
        call: &mut CallState,
        _: &mut dyn Dice,
    ) -> Acquire {
        select_or_wait(pool, now, call)
    }
}
