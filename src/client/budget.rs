//! The retry budget (Finagle's `RetryBudget`): retries may not outgrow a share of the traffic.
//!
//! Over any sliding window of `window_s` that ends at a granted retry, the retries granted in it
//! are at most `ratio` × the first attempts started in it plus `min_per_s` × `window_s`. A
//! per-step attempt limit alone lets every step retry: when a provider refuses most requests,
//! retries multiply the load it already cannot take. A budget caps the multiplication at
//! `1 + ratio` in steady state, whatever `max_attempts` says; the reserve keeps a quiet client
//! able to retry its rare failures. One budget serves every worker of a run. "First attempts"
//! are step attempts numbered 1 — the units the retry policy retries — not individual calls.

use std::collections::VecDeque;

use crate::world::RetryBudget;

/// The budget's sliding-window counts for one run.
#[derive(Clone, Debug)]
pub struct Budget {
    policy: RetryBudget,
    /// Start times of first attempts still inside the window, oldest first.
    firsts: VecDeque<f64>,
    /// Grant times of retries still inside the window, oldest first.
    retries: VecDeque<f64>,
}

impl Budget {
    /// An empty budget with `policy`'s terms.
    pub fn new(policy: RetryBudget) -> Budget {
        Budget {
            policy,
            firsts: VecDeque::new(),
            retries: VecDeque::new(),
        }
    }

    /// A step's first attempt started at `now` (times never decrease).
    pub fn deposit(&mut self, now: f64) {
        self.firsts.push_back(now);
    }

    /// Asks for one retry at `now`: granted (and counted) if the window has room for it.
    pub fn try_withdraw(&mut self, now: f64) -> bool {
        let start = now - self.policy.window_s;
        for times in [&mut self.firsts, &mut self.retries] {
            while times.front().is_some_and(|&t| t <= start) {
                times.pop_front();
            }
        }
        let allowed = self.policy.ratio * self.firsts.len() as f64
            + self.policy.min_per_s * self.policy.window_s;
        if (self.retries.len() + 1) as f64 > allowed {
            return false;
        }
        self.retries.push_back(now);
        true
    }
}
