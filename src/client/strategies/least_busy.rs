//! `least_busy`: pick the least-loaded resource of the whole fleet; wait when none is free.
//!
//! It looks across every pool (every vendor) and takes the lowest active/capacity ratio, with a
//! round-robin among equals, whatever rule the pools declare. In a world of one pool with the
//! default rule that is the pool's own selection, so it gives the same numbers as `wait`
//! (reference §5.4); with several pools it spreads load over all of them.

use crate::client::pool::{Filter, Pool, Scope, Score};
use crate::client::strategy::{Acquire, AttemptState, CallState, Dice, Strategy};
use crate::world::Selection;

/// Least-busy selection over every resource of every pool, then a wait for any of them.
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
        let pick = Some(Selection::LeastBusy);
        match pool.select_in(Scope::Fleet, pick, Filter::All, Score::None, now) {
            Some(r) => Acquire::Leased(r),
            None => {
                call.waiting = true;
                Acquire::WaitFor(Scope::Fleet)
            }
        }
    }
}
