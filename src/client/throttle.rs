//! Adaptive client-side throttling (Google's SRE book, ch. 21 "Handling Overload").
//!
//! For each endpoint the client counts, over a sliding window of `window_s`, the requests it
//! wanted to send (locally rejected ones included) and those the endpoint accepted (anything
//! not refused with a 429). Before sending, it rejects the request itself with probability
//! `max(0, (requests − k·accepts) / (requests + 1))`: nothing while the endpoint accepts more
//! than `1/k` of what it is asked, and more and more of the excess beyond that. A refused
//! request costs the provider work and the client a round trip; a local rejection costs
//! neither, and the few requests still sent keep measuring whether the endpoint recovered.
//! The draw that decides comes from the caller (a keyed stream), so throttling is
//! deterministic.

use std::collections::VecDeque;

use crate::client::pool::ResourceId;
use crate::world::Throttle as ThrottlePolicy;

/// Sliding-window counts of one endpoint: request and accept times, oldest first.
#[derive(Clone, Debug, Default)]
struct Window {
    requests: VecDeque<f64>,
    accepts: VecDeque<f64>,
}

/// The throttle of one run: a window per resource.
#[derive(Clone, Debug)]
pub struct Throttle {
    policy: ThrottlePolicy,
    windows: Vec<Window>,
}

impl Throttle {
    /// A throttle with `policy`'s terms over `resources` resources, all windows empty.
    pub fn new(policy: ThrottlePolicy, resources: usize) -> Throttle {
        Throttle {
            policy,
            windows: vec![Window::default(); resources],
        }
    }

    /// The probability that a request to `r` at `now` is rejected locally, before counting it.
    pub fn reject_probability(&mut self, r: ResourceId, now: f64) -> f64 {
        let start = now - self.policy.window_s;
        let window = &mut self.windows[r];
        for times in [&mut window.requests, &mut window.accepts] {
            while times.front().is_some_and(|&t| t <= start) {
                times.pop_front();
            }
        }
        let requests = window.requests.len() as f64;
        let accepts = window.accepts.len() as f64;
        ((requests - self.policy.k * accepts) / (requests + 1.0)).max(0.0)
    }

    /// Counts a request to `r` at `now` (sent or rejected locally).
    pub fn note_request(&mut self, r: ResourceId, now: f64) {
        self.windows[r].requests.push_back(now);
    }

    /// Counts a request to `r` the endpoint accepted at `now`.
    pub fn note_accept(&mut self, r: ResourceId, now: f64) {
        self.windows[r].accepts.push_back(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_only_beyond_k_times_the_accepts_and_forgets_old_counts() {
        let mut throttle = Throttle::new(
            ThrottlePolicy {
                k: 2.0,
                window_s: 10.0,
            },
            1,
        );
        for _ in 0..10 {
            throttle.note_request(0, 0.0);
        }
        for _ in 0..5 {
            throttle.note_accept(0, 0.0);
        }
        // 10 requests, 5 accepted: exactly 1/k accepted, nothing throttled.
        assert_eq!(throttle.reject_probability(0, 1.0), 0.0);
        for _ in 0..10 {
            throttle.note_request(0, 2.0);
        }
        // 20 requests, 5 accepted: (20 − 10) / 21.
        assert_eq!(throttle.reject_probability(0, 3.0), 10.0 / 21.0);
        // At t = 10 the t = 0 counts have left the window: 10 requests, no accepts.
        assert_eq!(throttle.reject_probability(0, 10.0), 10.0 / 11.0);
        assert_eq!(throttle.reject_probability(0, 12.0), 0.0);
    }
}
