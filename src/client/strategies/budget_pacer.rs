//! `budget_pacer`: the OpenAI cookbook's parallel request processor
//! (`examples/api_request_parallel_processor.py`), which paces requests to a requests-per-minute
//! and a tokens-per-minute budget.
//!
//! - Two allowances, one per budget, start full and refill continuously at `budget / 60 s` up to
//!   the budget (`available_request_capacity`, `available_token_capacity`).
//! - A request goes out once the request allowance holds 1 and the token allowance holds its
//!   estimate — prompt tokens plus `max_tokens` (`num_tokens_consumed_from_request`, which
//!   counts the prompt with tiktoken and adds `max_tokens × n`); both are taken when it is sent.
//! - Requests go out in the order they were asked for: the script holds the next request until
//!   it fits, checking every millisecond (`seconds_to_sleep_each_loop = 0.001`). Here each call
//!   books its place when it first asks — the time the allowances, after every call booked
//!   ahead of it, will hold its charge — and sleeps until then, rounded up to whole
//!   milliseconds; a separate account of what was really sent has the last word, so a call held
//!   up by the pause or a full endpoint never sends beyond the budgets.
//! - After a rate-limit error every request waits until `pause_s` (15 s,
//!   `seconds_to_pause_after_rate_limit_error`) has passed since it; "overloaded" and other
//!   errors do not pause.
//! - A failed request is put back on the queue at once and tried again, whatever the error,
//!   until `max_attempts` (5) attempts were made: no backoff besides the pause.
//!
//! The budgets hold in the token-bucket sense: over any interval of `d` seconds the requests
//! sent ask at most `budget + budget · d / 60` (the allowance held at its start plus the refill).
//! The exceptions are where the script would wait for ever: a request whose estimate exceeds
//! the whole token budget waits for a full allowance and overdraws it, and a request budget
//! below one a minute lets the allowance fill to one request (so one goes out every
//! `60 / requests_per_minute` seconds).
//!
//! The script posts to one URL, so the strategy uses one endpoint like `sdk_retry` (see
//! [`single_endpoint`]). In a world without `[tokens]` every estimate is 0 and only the request
//! budget paces.

use std::cell::RefCell;

use crate::client::params::Params;
use crate::client::pool::Pool;
use crate::client::retry::{Decision, Failure, GiveUp, RetryLoop};
use crate::client::strategy::{
    Acquire, AttemptState, CallState, Dice, Feedback, Response, Strategy, single_endpoint,
};
use crate::rounding::ceil_ms;

/// A budget window: the script's budgets are per minute.
const MINUTE_S: f64 = 60.0;

/// The pacer; see the module documentation.
#[derive(Debug)]
pub struct BudgetPacer {
    requests_per_minute: f64,
    tokens_per_minute: f64,
    pause_s: f64,
    retries: Retries,
    state: RefCell<State>,
}

/// The script's retry rule: every error, at once, `max_attempts` attempts in all.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Retries {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
}

impl RetryLoop for Retries {
    fn decide(&self, failure: &Failure, _: &mut dyn FnMut() -> f64) -> Decision {
        if failure.attempts_used >= self.max_attempts {
            Decision::GiveUp(GiveUp::AttemptsExhausted)
        } else {
            Decision::Retry(0.0)
        }
    }
}

/// The two allowances at one time.
#[derive(Clone, Copy, Debug)]
struct Allowances {
    requests: f64,
    tokens: f64,
    /// When they were last refilled \[s\].
    at: f64,
}

#[derive(Debug)]
struct State {
    /// The queue's order: charged when a call first asks, so a call is given the send time the
    /// allowances reach its charge after every call ahead of it (the script's one request held
    /// at the head of its queue).
    booked: Allowances,
    /// What was really sent: charged when a request goes out, and never let below zero.
    sent: Allowances,
    /// No request goes out before this \[s\] (the pause after a rate-limit error).
    paused_until: f64,
}

impl BudgetPacer {
    /// From the registry's parameters.
    pub fn new(params: &Params) -> BudgetPacer {
        BudgetPacer {
            requests_per_minute: params.get("requests_per_minute"),
            tokens_per_minute: params.get("tokens_per_minute"),
            pause_s: params.get("pause_s"),
            retries: Retries {
                max_attempts: params.get("max_attempts") as u32,
            },
            state: RefCell::new(State {
                booked: Allowances::EMPTY,
                sent: Allowances::EMPTY,
                paused_until: f64::NEG_INFINITY,
            }),
        }
    }

    fn full(&self) -> Allowances {
        Allowances {
            requests: self.requests_per_minute,
            tokens: self.tokens_per_minute,
            at: 0.0,
        }
    }

    /// What the request allowance holds at most: the budget, or one request when the budget
    /// is below one a minute (an allowance capped below 1 could never send one; the script
    /// itself would wait for ever). The pace stays the budget's: one request every
    /// `60 / requests_per_minute` seconds.
    fn request_cap(&self) -> f64 {
        self.requests_per_minute.max(1.0)
    }

    /// A request's token charge: its estimate, or the whole budget if it asks more (it could
    /// never fit otherwise).
    fn charge(&self, call: &CallState) -> f64 {
        (call.demand.input + call.demand.max_tokens).min(self.tokens_per_minute)
    }
}

impl Allowances {
    const EMPTY: Allowances = Allowances {
        requests: 0.0,
        tokens: 0.0,
        at: 0.0,
    };

    fn refill(&mut self, pacer: &BudgetPacer, now: f64) {
        let elapsed = now - self.at;
        if elapsed > 0.0 {
            self.requests = (self.requests + elapsed * pacer.requests_per_minute / MINUTE_S)
                .min(pacer.request_cap());
            self.tokens = (self.tokens + elapsed * pacer.tokens_per_minute / MINUTE_S)
                .min(pacer.tokens_per_minute);
            self.at = now;
        }
    }

    /// Seconds until they hold one request of `tokens` (0 if they do).
    fn time_to(&self, pacer: &BudgetPacer, tokens: f64) -> f64 {
        let requests = (1.0 - self.requests).max(0.0) * MINUTE_S / pacer.requests_per_minute;
        let tokens = (tokens - self.tokens).max(0.0) * MINUTE_S / pacer.tokens_per_minute;
        requests.max(tokens)
    }

    /// Takes one request of `tokens`, and says how long until the allowances are back at zero
    /// (0 if they did not go below).
    fn book(&mut self, pacer: &BudgetPacer, tokens: f64) -> f64 {
        self.requests -= 1.0;
        self.tokens -= tokens;
        let requests = (-self.requests).max(0.0) * MINUTE_S / pacer.requests_per_minute;
        let tokens = (-self.tokens).max(0.0) * MINUTE_S / pacer.tokens_per_minute;
        requests.max(tokens)
    }
}

/// Float refill can land a hair short of what an exact sleep was meant to bring.
const HAIR_S: f64 = 1e-9;

impl Strategy for BudgetPacer {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        _: &mut AttemptState,
        call: &mut CallState,
        _: &mut dyn Dice,
    ) -> Acquire {
        let mut state = self.state.borrow_mut();
        if now < state.paused_until {
            return Acquire::Sleep(ceil_ms(state.paused_until - now));
        }
        let tokens = self.charge(call);
        let send_at = *call.not_before.get_or_insert_with(|| {
            state.booked.refill(self, now);
            now + state.booked.book(self, tokens)
        });
        if send_at - now > HAIR_S {
            return Acquire::Sleep(ceil_ms(send_at - now));
        }
        // A call held up (by the pause, or a full endpoint) may find the allowances spent by
        // calls behind it: what goes out never exceeds them.
        state.sent.refill(self, now);
        let wait_s = state.sent.time_to(self, tokens);
        if wait_s > HAIR_S {
            return Acquire::Sleep(ceil_ms(wait_s));
        }
        let acquired = single_endpoint(pool, now, call);
        if let Acquire::Leased(_) = acquired {
            state.sent.requests -= 1.0;
            state.sent.tokens -= tokens;
        }
        acquired
    }

    fn begin_run(&self) {
        let mut state = self.state.borrow_mut();
        state.booked = self.full();
        state.sent = self.full();
        state.paused_until = f64::NEG_INFINITY;
    }

    fn uses_feedback(&self) -> bool {
        true
    }

    fn observe(&self, feedback: &Feedback) {
        if feedback.response == Response::Refused && feedback.retry_after_s.is_some() {
            let mut state = self.state.borrow_mut();
            state.paused_until = state.paused_until.max(feedback.at + self.pause_s);
        }
    }

    fn retry_loop(&self) -> Option<&dyn RetryLoop> {
        Some(&self.retries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(attempts_used: u32) -> Failure {
        Failure {
            class: crate::client::retry::ErrorClass::Fatal,
            retry_after_s: Some(30.0),
            attempts_used,
            elapsed_s: 0.0,
        }
    }

    fn pacer_of(requests_per_minute: f64) -> BudgetPacer {
        BudgetPacer {
            requests_per_minute,
            tokens_per_minute: 1e9,
            pause_s: 15.0,
            retries: Retries { max_attempts: 5 },
            state: RefCell::new(State {
                booked: Allowances::EMPTY,
                sent: Allowances::EMPTY,
                paused_until: f64::NEG_INFINITY,
            }),
        }
    }

    #[test]
    fn a_request_budget_below_one_a_minute_still_sends_at_its_pace() {
        // Half a request a minute: the allowance starts at 0.5 and fills to one request (never
        // capped below it, where no request could ever go), one every 120 s.
        let pacer = pacer_of(0.5);
        let mut allowances = pacer.full();
        assert_eq!(allowances.time_to(&pacer, 0.0), 60.0);
        allowances.refill(&pacer, 60.0);
        assert_eq!(allowances.requests, 1.0);
        assert_eq!(allowances.book(&pacer, 0.0), 0.0);
        assert_eq!(allowances.time_to(&pacer, 0.0), 120.0);
        allowances.refill(&pacer, 10_000.0);
        assert_eq!(allowances.requests, 1.0);
        // A budget of one or more is capped at itself, as the script caps it.
        let whole = pacer_of(30.0);
        let mut allowances = whole.full();
        allowances.refill(&whole, 1_000.0);
        assert_eq!(allowances.requests, 30.0);
    }

    #[test]
    fn every_error_is_retried_at_once_until_the_attempts_run_out() {
        let retries = Retries { max_attempts: 5 };
        let mut draw = || panic!("no random delay");
        for n in 1..5 {
            assert_eq!(retries.decide(&failure(n), &mut draw), Decision::Retry(0.0));
        }
        assert_eq!(
            retries.decide(&failure(5), &mut draw),
            Decision::GiveUp(GiveUp::AttemptsExhausted)
        );
    }
}
