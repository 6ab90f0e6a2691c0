//! `aimd`: an adaptive client-side concurrency limit, additive increase and multiplicative
//! decrease (TCP Reno's congestion window, as Netflix concurrency-limits' `AIMDLimit` applies it
//! to request concurrency).
//!
//! The limit is shared by every worker of a run and bounds the run's leases in flight (see
//! [`crate::client::limit`]). It moves on the answers the harness reports:
//!
//! - **Increase**: each success adds `step / limit`, so a limit's worth of successes — about one
//!   round trip when the limit is in use — adds `step` (TCP's congestion avoidance). A success
//!   while fewer than half the limit were in flight adds nothing: the client was not using the
//!   limit, so the success says nothing about it (Netflix's app-limited rule).
//! - **Decrease**: a 429 or a read timeout multiplies the limit by `factor`, at once — the first
//!   refusal after a capacity drop cuts it. Only answers to requests sent *after* the previous
//!   cut count: the others were sent under the old limit and report the same overload again
//!   (TCP's one cut per window). Refusals at the same instant as a cut therefore cut once.
//! - 503s and connection resets leave it alone: they are the provider's errors, not its load.
//!
//! Two departures from Netflix's `AIMDLimit`, both TCP's: it adds 1 per success (doubling the
//! limit every round trip, which overshoots a provider that refuses at once), and it cuts on
//! every drop (so one burst of refusals at the same instant would cut the limit many times).
//!
//! The limit stays within `[min, max]`; a worker waits in the pool's queue while the run's
//! leases in flight are at or above `floor(limit)`, and otherwise selects like `wait`.

use std::cell::RefCell;

use crate::client::limit::{LimitLog, acquire_within};
use crate::client::params::Params;
use crate::client::pool::Pool;
use crate::client::retry::ErrorClass;
use crate::client::strategy::{
    Acquire, AttemptState, CallState, Dice, Feedback, Response, Strategy,
};

/// The AIMD limiter; see the module documentation for its rules.
#[derive(Debug)]
pub struct Aimd {
    initial: f64,
    min: f64,
    max: f64,
    step: f64,
    factor: f64,
    record: bool,
    state: RefCell<State>,
}

#[derive(Debug)]
struct State {
    limit: f64,
    /// When the limit was last cut \[s\].
    last_cut_at: f64,
    /// The trajectory, when recording (see [`Aimd::recording`]).
    log: Option<LimitLog>,
}

impl State {
    fn new(initial: f64, record: bool) -> State {
        State {
            limit: initial,
            last_cut_at: f64::NEG_INFINITY,
            log: record.then(|| LimitLog::new(initial)),
        }
    }
}

impl Aimd {
    /// From the registry's parameters (defaults: initial 10, min 1, max 1000, step 1, factor
    /// 0.5). The compiler checks `min <= initial <= max`; they are clamped here too, so a
    /// hand-built parameter set cannot leave the bounds.
    pub fn new(params: &Params) -> Aimd {
        let min = params.get("min");
        let max = params.get("max").max(min);
        let initial = params.get("initial").clamp(min, max);
        Aimd {
            initial,
            min,
            max,
            step: params.get("step"),
            factor: params.get("factor"),
            record: false,
            state: RefCell::new(State::new(initial, false)),
        }
    }

    /// Like [`Aimd::new`], but keeping the limit's trajectory (one entry per change, so memory
    /// grows with the run; the registry's strategies do not record).
    pub fn recording(params: &Params) -> Aimd {
        let strategy = Aimd {
            record: true,
            ..Aimd::new(params)
        };
        strategy.begin_run();
        strategy
    }

    /// The limit's trajectory in the current (or last) run, if recording.
    pub fn log(&self) -> Option<LimitLog> {
        self.state.borrow().log.clone()
    }
}

impl Strategy for Aimd {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        _: &mut AttemptState,
        call: &mut CallState,
        _: &mut dyn Dice,
    ) -> Acquire {
        acquire_within(self.state.borrow().limit, pool, now, call)
    }

    fn uses_feedback(&self) -> bool {
        true
    }

    fn begin_run(&self) {
        *self.state.borrow_mut() = State::new(self.initial, self.record);
    }

    fn adaptive_limit(&self) -> Option<f64> {
        Some(self.state.borrow().limit)
    }

    fn observe(&self, feedback: &Feedback) {
        let mut state = self.state.borrow_mut();
        let limit = match feedback.response {
            Response::Success if 2.0 * f64::from(feedback.in_flight) >= state.limit => {
                (state.limit + self.step / state.limit).min(self.max)
            }
            Response::Refused | Response::Failed(ErrorClass::Timeout)
                if feedback.sent_at > state.last_cut_at =>
            {
                state.last_cut_at = feedback.at;
                (state.limit * self.factor).max(self.min)
            }
            _ => return,
        };
        state.limit = limit;
        if let Some(log) = &mut state.log {
            log.set(feedback.at, limit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::registry;

    fn answer(sent_at: f64, at: f64, response: Response, in_flight: u32) -> Feedback<'static> {
        Feedback {
            resource: 0,
            sent_at,
            at,
            response,
            in_flight,
            retry_after_s: None,
            input_tokens: 0.0,
            output_tokens: 0.0,
            headers: &[],
        }
    }

    fn limit(aimd: &Aimd) -> f64 {
        aimd.state.borrow().limit
    }

    #[test]
    fn increase_decrease_and_the_rules_that_skip_them() {
        let info = registry::find("aimd").unwrap();
        let aimd = Aimd::new(&info.values([("initial", 10.0), ("factor", 0.5)]));
        aimd.observe(&answer(0.0, 1.0, Response::Success, 5));
        assert_eq!(
            limit(&aimd),
            10.1,
            "+step/limit with half the limit in flight"
        );
        aimd.observe(&answer(0.0, 1.0, Response::Success, 4));
        assert_eq!(limit(&aimd), 10.1, "app-limited: fewer than half in flight");
        aimd.observe(&answer(2.0, 2.0, Response::Refused, 10));
        assert_eq!(limit(&aimd), 5.05, "a 429 cuts at once");
        aimd.observe(&answer(2.0, 2.0, Response::Refused, 10));
        aimd.observe(&answer(1.5, 2.5, Response::Failed(ErrorClass::Timeout), 10));
        assert_eq!(
            limit(&aimd),
            5.05,
            "sent no later than the cut: the same overload"
        );
        aimd.observe(&answer(
            2.5,
            3.0,
            Response::Failed(ErrorClass::Upstream),
            10,
        ));
        assert_eq!(limit(&aimd), 5.05, "a 503 is not a load signal");
        aimd.observe(&answer(2.5, 3.5, Response::Failed(ErrorClass::Timeout), 10));
        assert_eq!(
            limit(&aimd),
            2.525,
            "a timeout sent after the cut cuts again"
        );
        for t in 0..10 {
            aimd.observe(&answer(4.0, 4.0 + f64::from(t), Response::Refused, 1));
            aimd.observe(&answer(
                5.0 + f64::from(t),
                5.0 + f64::from(t),
                Response::Refused,
                1,
            ));
        }
        assert_eq!(limit(&aimd), 1.0, "never below min");
    }
}
