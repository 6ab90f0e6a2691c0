//! `immediate`: take a free resource or fail the attempt at once ("fail fast").

use crate::client::pool::{Filter, Pool, Score};
use crate::client::strategy::{Acquire, AttemptState, CallState, Dice, Strategy};

/// Selects once; if nothing is free the attempt fails with class `unknown`, which the default
/// policy does not retry, so the job fails in zero simulated time.
#[derive(Debug)]
pub struct Immediate;

impl Strategy for Immediate {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        _: &mut AttemptState,
        _: &mut CallState,
        _: &mut dyn Dice,
    ) -> Acquire {
        pool.select(Filter::All, Score::None, now)
            .map_or(Acquire::Unavailable, Acquire::Leased)
    }
}
