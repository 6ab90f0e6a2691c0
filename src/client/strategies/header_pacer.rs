//! `header_pacer`: a client that paces from the rate-limit headers of the answers it gets
//! (`x-ratelimit-limit-*`, `-remaining-*`, `-reset-*`, one set per published limit), as the
//! vendors' rate-limit guides suggest.
//!
//! - For every limit the client keeps an estimate of what is left. Each answer sets it to the
//!   header's `remaining`, and sets the refill rate to what brings it back to the whole limit by
//!   `reset` (`(limit − remaining) / reset`): exactly a rolling limit's rate; for a calendar
//!   quota, which comes back all at once, it spreads the rest of the window evenly.
//! - Before sending, the estimate is brought up to now and the request's expected charge
//!   (prompt plus `max_tokens` for a token limit, 1 for a request limit) taken from it; a call
//!   whose charge does not fit (less `reserve` of the limit) sleeps until the estimate says it
//!   will, rounded up to whole milliseconds.
//! - A 429 keeps every call off the endpoint until its Retry-After has passed.
//! - Until an answer has shown a limit's refill rate (an answer from a full limit shows none),
//!   that limit does not pace: the first requests go out at once. An answer whose limit is
//!   less than one unit (request or token) short of whole shows none either: the headers count
//!   whole units and round the reset to whole milliseconds, so such a deficit gives no rate.
//!
//! Retries follow the world's `[retry]`. The client talks to one endpoint, like `sdk_retry`
//! (see [`single_endpoint`]); on an endpoint without published limits it is `single_endpoint`
//! with Retry-After honoured.

use std::cell::RefCell;

use crate::client::params::Params;
use crate::client::pool::Pool;
use crate::client::strategy::{
    Acquire, AttemptState, CallState, Dice, Feedback, Response, Strategy, single_endpoint,
};
use crate::rounding::ceil_ms;
use crate::tokens::{LimitHeader, Unit};

/// The pacer; see the module documentation.
#[derive(Debug)]
pub struct HeaderPacer {
    reserve: f64,
    state: RefCell<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The estimate of each limit of the endpoint, in its order.
    limits: Vec<Estimate>,
    /// No request goes out before this \[s\] (the last 429's Retry-After).
    blocked_until: f64,
}

/// What the client believes of one limit.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Estimate {
    unit: Unit,
    limit: f64,
    /// Left at `at`, less the charges of requests sent since.
    level: f64,
    /// Per second, from the last header that showed one (`None`: not seen yet).
    rate: Option<f64>,
    at: f64,
}

impl Estimate {
    fn catch_up(&mut self, now: f64) {
        if let Some(rate) = self.rate
            && now > self.at
        {
            self.level = (self.level + rate * (now - self.at)).min(self.limit);
        }
        self.at = self.at.max(now);
    }

    /// Seconds until `need` fits under the reserve (0 if it does, or if it cannot be known).
    fn time_to(&self, need: f64, reserve: f64) -> f64 {
        let floor = reserve * self.limit;
        let need = need.min(self.limit - floor);
        let deficit = need + floor - self.level;
        match self.rate {
            Some(rate) if deficit > 0.0 && rate > 0.0 => deficit / rate,
            _ => 0.0,
        }
    }
}

impl HeaderPacer {
    /// From the registry's parameters.
    pub fn new(params: &Params) -> HeaderPacer {
        HeaderPacer {
            reserve: params.get("reserve"),
            state: RefCell::new(State::default()),
        }
    }
}

impl State {
    fn read(&mut self, headers: &[LimitHeader], at: f64) {
        if self.limits.len() != headers.len() {
            self.limits = headers
                .iter()
                .map(|h| Estimate {
                    unit: h.unit,
                    limit: h.limit,
                    level: h.limit,
                    rate: None,
                    at,
                })
                .collect();
        }
        for (estimate, header) in self.limits.iter_mut().zip(headers) {
            estimate.level = header.remaining;
            estimate.at = at;
            // A header counts whole units (requests, tokens) and whole milliseconds: a deficit
            // below one unit says nothing of the rate (0.00001 of a request back in the 1 ms a
            // reset rounds up to would read as one request in 27 hours).
            if header.reset_s > 0.0 && header.limit - header.remaining >= 1.0 {
                estimate.rate = Some((header.limit - header.remaining) / header.reset_s);
            }
        }
    }
}

impl Strategy for HeaderPacer {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        _: &mut AttemptState,
        call: &mut CallState,
        _: &mut dyn Dice,
    ) -> Acquire {
        let mut state = self.state.borrow_mut();
        let mut wait_s = state.blocked_until - now;
        for estimate in &mut state.limits {
            estimate.catch_up(now);
            wait_s = wait_s.max(estimate.time_to(call.demand.of(estimate.unit), self.reserve));
        }
        // Float refill can land a hair short of what an exact sleep was meant to bring.
        if wait_s > 1e-9 {
            return Acquire::Sleep(ceil_ms(wait_s));
        }
        let acquired = single_endpoint(pool, now, call);
        if let Acquire::Leased(_) = acquired {
            for estimate in &mut state.limits {
                estimate.level -= call.demand.of(estimate.unit);
            }
        }
        acquired
    }

    fn begin_run(&self) {
        *self.state.borrow_mut() = State::default();
    }

    fn uses_feedback(&self) -> bool {
        true
    }

    fn wants_headers(&self) -> bool {
        true
    }

    fn observe(&self, feedback: &Feedback) {
        let mut state = self.state.borrow_mut();
        if !feedback.headers.is_empty() {
            state.read(feedback.headers, feedback.at);
        }
        if let (Response::Refused, Some(after)) = (feedback.response, feedback.retry_after_s) {
            state.blocked_until = state.blocked_until.max(feedback.at + after);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(remaining: f64, reset_s: f64) -> LimitHeader {
        LimitHeader {
            unit: Unit::Tokens,
            limit: 60_000.0,
            remaining,
            reset_s,
        }
    }

    #[test]
    fn a_header_sets_the_level_and_the_refill_that_makes_the_limit_whole_by_its_reset() {
        let mut state = State::default();
        state.read(&[header(0.0, 60.0)], 10.0);
        let estimate = &mut state.limits[0];
        assert_eq!(estimate.rate, Some(1000.0));
        // 3,000 tokens are 3 s of refill away.
        assert_eq!(estimate.time_to(3000.0, 0.0), 3.0);
        estimate.catch_up(12.0);
        assert_eq!(estimate.level, 2000.0);
        // A 5 % reserve keeps 3,000 back.
        assert_eq!(estimate.time_to(3000.0, 0.05), 4.0);
    }

    #[test]
    fn a_full_limit_shows_no_rate_and_does_not_pace_until_one_is_seen() {
        let mut state = State::default();
        state.read(&[header(60_000.0, 0.0)], 0.0);
        let estimate = &mut state.limits[0];
        estimate.level -= 70_000.0;
        assert_eq!(estimate.rate, None);
        assert_eq!(estimate.time_to(1000.0, 0.0), 0.0);
    }

    #[test]
    fn a_deficit_below_one_unit_shows_no_rate() {
        let mut state = State::default();
        state.read(&[header(0.0, 60.0)], 0.0);
        // A 429 while the limit is a hair short of whole, its reset rounded up to 1 ms: no rate
        // of 2e-11 tokens a second (which would sleep for centuries), the last one kept.
        state.read(&[header(59_999.999_999_99, 0.001)], 1.0);
        assert_eq!(state.limits[0].rate, Some(1000.0));
        state.read(&[header(59_999.0, 0.001)], 2.0);
        assert_eq!(state.limits[0].rate, Some(1000.0));
    }
}
