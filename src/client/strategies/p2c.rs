//! `p2c`: the power of two random choices (Mitzenmacher 2001; the balancer of Finagle, Envoy
//! and gRPC): pick two available resources at random and take the one with fewer leases.

use crate::client::pool::{Filter, Pool, Score};
use crate::client::strategy::{Acquire, AttemptState, CallState, Dice, Strategy, select_or_wait};

/// Two candidates drawn from the attempt's acquire stream; the less busy one (fewer active
/// leases, then lower load ratio, then the first drawn) is leased. With one candidate it is
/// taken; with none the call waits like `wait`. Random picks spread load without the herd a
/// shared least-busy choice can cause, while the comparison avoids the worst of pure random.
#[derive(Debug)]
pub struct PowerOfTwo;

impl Strategy for PowerOfTwo {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        _: &mut AttemptState,
        call: &mut CallState,
        dice: &mut dyn Dice,
    ) -> Acquire {
        if call.waiting {
            return select_or_wait(pool, now, call);
        }
        let n = pool.count_candidates(Filter::All, now);
        if n < 2 {
            return select_or_wait(pool, now, call);
        }
        let first = pick(dice.uniform(), n);
        let mut second = pick(dice.uniform(), n - 1);
        if second >= first {
            second += 1;
        }
        let a = pool
            .nth_candidate(Filter::All, now, first)
            .expect("first < n");
        let b = pool
            .nth_candidate(Filter::All, now, second)
            .expect("second < n");
        let load = |r: usize| {
            let resource = &pool.resources()[r];
            let ratio = f64::from(resource.active()) / f64::from(resource.capacity().max(1));
            (resource.active(), ratio)
        };
        let (la, lb) = (load(a), load(b));
        let chosen = if lb.0 < la.0 || (lb.0 == la.0 && lb.1 < la.1) {
            b
        } else {
            a
        };
        match pool.select(Filter::Only(chosen), Score::None, now) {
            Some(r) => Acquire::Leased(r),
            None => select_or_wait(pool, now, call),
        }
    }
}

/// A uniform index in `0..n` from a uniform draw in `[0, 1)`.
fn pick(u: f64, n: usize) -> usize {
    ((u * n as f64) as usize).min(n - 1)
}

#[cfg(test)]
mod tests {
    use super::pick;

    #[test]
    fn picks_cover_the_range_and_stay_inside_it() {
        assert_eq!(pick(0.0, 3), 0);
        assert_eq!(pick(0.999_999, 3), 2);
        assert_eq!(pick(0.5, 2), 1);
        assert_eq!(pick(1.0 - f64::EPSILON, 1), 0);
    }
}
