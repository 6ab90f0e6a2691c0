//! `failover`: try each pool in order at once, then wait on the primary (reference §5.5).
//!
//! Each pool is tried with its own selection rule, in the order the file declares the pools
//! (the primary first). If none has a free resource the call waits on the primary only, as the
//! reference's fallback does; once woken it keeps waiting there. With a single pool the
//! immediate try is the primary's own selection, so it gives the same numbers as `wait`.

use crate::client::pool::{Filter, Pool, Scope, Score};
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
        if !call.waiting {
            for g in 0..pool.pool_count() {
                if let Some(r) = pool.select_in(Scope::Pool(g), None, Filter::All, Score::None, now)
                {
                    return Acquire::Leased(r);
                }
            }
        }
        select_or_wait(pool, now, call)
    }
}
