//! `quota_aware`: prefer the resource with the largest share of its declared quota left.

use crate::client::params::Params;
use crate::client::pool::{Filter, Pool, Score};
use crate::client::strategy::{Acquire, AttemptState, CallState, Dice, Strategy, select_or_wait};

/// Scores each resource by (share of quota left, quota left), pushing shares at or below the
/// reserve down by a penalty; ties go to the least busy. Usage counts successes only and never
/// refills. When nothing is free it waits with the default (unscored) selection.
///
/// The penalty is the same for every share inside the reserve, and those shares are already
/// below every share outside it, so `reserve` and `penalty` never reorder resources that declare
/// a quota. They only move such a resource against those without one, which score −100: it
/// ranks below them once its share less the penalty falls under −100 (a penalty above 100 plus
/// the share, or at the reference's 10 a share under −90: usage past 91 times the quota).
#[derive(Debug)]
pub struct QuotaAware {
    reserve: f64,
    penalty: f64,
}

impl QuotaAware {
    /// From the registry's parameters (the reference's: reserve 5 %, penalty 10).
    pub fn new(params: &Params) -> QuotaAware {
        QuotaAware {
            reserve: params.get("reserve"),
            penalty: params.get("penalty"),
        }
    }
}

impl Strategy for QuotaAware {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        _: &mut AttemptState,
        call: &mut CallState,
        _: &mut dyn Dice,
    ) -> Acquire {
        let score = Score::Quota {
            reserve: self.reserve,
            penalty: self.penalty,
        };
        if !call.waiting
            && let Some(r) = pool.select(Filter::All, score, now)
        {
            return Acquire::Leased(r);
        }
        select_or_wait(pool, now, call)
    }
}
