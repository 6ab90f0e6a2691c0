//! `hedged`: hedged requests (Dean & Barroso, "The Tail at Scale", CACM 2013): when a request
//! has not answered by a high percentile of recent latencies, send a copy to another endpoint;
//! the first answer wins and the other is cancelled.
//!
//! The threshold is the `percentile` of the last `window` successful latencies the run saw, a
//! ring shared by every worker; until the ring is full it does not hedge. At most one copy per
//! request, only to a different endpoint that has a free lease at that moment (a hedge never
//! waits), chosen least busy first in any pool (another vendor is the best place for a copy).
//! Selection of the first request is `wait`'s. Hedging at p95
//! sends about 5 % more requests and cuts the tail a slow endpoint adds, but the copy occupies a
//! second lease and the provider's capacity until it is cancelled, and its tokens are spent
//! either way — against a rate-limited provider the copies can cost more than they save.

use std::cell::RefCell;

use crate::client::params::Params;
use crate::client::pool::{Filter, Pool, ResourceId, Scope, Score};
use crate::client::strategy::{
    Acquire, AttemptState, CallState, Dice, Feedback, Response, Strategy, select_or_wait,
};

/// The hedging strategy; see the module documentation.
#[derive(Debug)]
pub struct Hedged {
    percentile: f64,
    window: usize,
    ring: RefCell<Ring>,
}

/// The last `window` successful latencies and their percentile, recomputed when they change.
#[derive(Debug, Default)]
struct Ring {
    latencies_s: Vec<f64>,
    next: usize,
    threshold_s: Option<f64>,
    stale: bool,
}

impl Hedged {
    /// From the registry's parameters (defaults: the 95th percentile of the last 100).
    pub fn new(params: &Params) -> Hedged {
        Hedged {
            percentile: params.get("percentile"),
            window: params.get("window") as usize,
            ring: RefCell::new(Ring::default()),
        }
    }
}

impl Strategy for Hedged {
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

    fn uses_feedback(&self) -> bool {
        true
    }

    fn begin_run(&self) {
        *self.ring.borrow_mut() = Ring::default();
    }

    fn observe(&self, feedback: &Feedback) {
        if feedback.response != Response::Success {
            return;
        }
        let mut ring = self.ring.borrow_mut();
        if ring.latencies_s.len() < self.window {
            ring.latencies_s.push(feedback.latency_s());
        } else {
            let i = ring.next;
            ring.latencies_s[i] = feedback.latency_s();
        }
        ring.next = (ring.next + 1) % self.window;
        ring.stale = true;
    }

    fn hedge_after(&self) -> Option<f64> {
        let mut ring = self.ring.borrow_mut();
        if ring.latencies_s.len() < self.window {
            return None;
        }
        if ring.stale {
            // Nearest rank: the smallest latency at or above `percentile` of the ring (a
            // selection, linear in the window, not a sort).
            let mut latencies = ring.latencies_s.clone();
            let rank = (self.percentile * latencies.len() as f64).ceil() as usize;
            let index = rank.clamp(1, latencies.len()) - 1;
            let (_, nth, _) = latencies.select_nth_unstable_by(index, f64::total_cmp);
            ring.threshold_s = Some(*nth);
            ring.stale = false;
        }
        ring.threshold_s
    }

    fn hedge(&self, pool: &mut Pool, now: f64, primary: ResourceId) -> Option<ResourceId> {
        // Any other endpoint of any pool will do: a copy is most useful on another vendor.
        let best = pool.least_loaded(Scope::Fleet, primary, now)?;
        pool.select_in(Scope::Fleet, None, Filter::Only(best), Score::None, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::registry;

    fn success(latency_s: f64) -> Feedback<'static> {
        Feedback {
            resource: 0,
            sent_at: 0.0,
            at: latency_s,
            response: Response::Success,
            in_flight: 1,
            retry_after_s: None,
            input_tokens: 0.0,
            output_tokens: 0.0,
            headers: &[],
        }
    }

    #[test]
    fn threshold_is_the_nearest_rank_percentile_of_the_last_window() {
        let info = registry::find("hedged").unwrap();
        let hedged = Hedged::new(&info.values([("window", 100.0)]));
        for ms in 1..=99 {
            hedged.observe(&success(f64::from(ms) / 1000.0));
        }
        assert_eq!(
            hedged.hedge_after(),
            None,
            "no hedging before the ring is full"
        );
        hedged.observe(&success(0.1));
        assert_eq!(hedged.hedge_after(), Some(0.095));
        // The 1 ms sample leaves the ring for a 1 s one: the 95th of 2..=100 ms and 1 s.
        hedged.observe(&success(1.0));
        assert_eq!(hedged.hedge_after(), Some(0.096));
        hedged.begin_run();
        assert_eq!(hedged.hedge_after(), None, "a new run starts empty");
    }
}
