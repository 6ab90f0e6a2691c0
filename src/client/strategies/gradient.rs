//! `gradient`: a latency-gradient concurrency limit after Netflix concurrency-limits'
//! `Gradient2Limit` (2018), whose ancestor is TCP Vegas (Brakmo & Peterson 1995).
//!
//! The limit is shared by every worker of a run and bounds the run's leases in flight (see
//! [`crate::client::limit`]). Answers are grouped into windows of `window` answers; at the end
//! of each window, with `short` the mean latency of the window's successes and `long` an
//! exponential average of past windows' `short` over `long_window` windows:
//!
//! ```text
//! gradient = clamp(tolerance · long / short, 0.5, 1.0)     (0.5 if the window saw a 429 or timeout)
//! target   = limit · gradient + queue_size
//! limit    = clamp(limit · (1 − smoothing) + target · smoothing, min, max)
//! ```
//!
//! As in Gradient2, `long` is pulled down (×0.95) when it exceeds twice `short`, so it follows
//! a lasting improvement, and a window whose peak in-flight count stayed under half the limit
//! leaves the limit alone (the client was not using it). The one departure: Gradient2 protects
//! servers that queue, so it reads only latency; this provider refuses instead of queueing and
//! its latency does not grow with load, so latency alone would never see overload. A window
//! that met a 429 or a read timeout therefore takes the gradient's floor, 0.5 — the same place
//! Vegas puts a drop. Without that, `queue_size` would push the limit up by
//! `smoothing · queue_size` every window for ever.

use std::cell::RefCell;

use crate::client::limit::{LimitLog, acquire_within};
use crate::client::params::Params;
use crate::client::pool::Pool;
use crate::client::retry::ErrorClass;
use crate::client::strategy::{
    Acquire, AttemptState, CallState, Dice, Feedback, Response, Strategy,
};

/// Windows averaged plainly before the long average becomes exponential (Gradient2's warm-up).
const WARMUP_WINDOWS: u32 = 10;

/// The gradient limiter; see the module documentation for its rules.
#[derive(Debug)]
pub struct Gradient {
    initial: f64,
    min: f64,
    max: f64,
    queue_size: f64,
    smoothing: f64,
    tolerance: f64,
    window: u32,
    long_window: f64,
    record: bool,
    state: RefCell<State>,
}

#[derive(Debug)]
struct State {
    limit: f64,
    /// Exponential average of windows' mean latency \[s\].
    long_s: f64,
    windows: u32,
    /// The current window: answers, successes, their latency sum, drops, peak in flight.
    answers: u32,
    successes: u32,
    latency_sum_s: f64,
    drops: u32,
    peak_in_flight: u32,
    /// The trajectory, when recording (see [`Gradient::recording`]).
    log: Option<LimitLog>,
}

impl State {
    fn new(initial: f64, record: bool) -> State {
        State {
            limit: initial,
            long_s: 0.0,
            windows: 0,
            answers: 0,
            successes: 0,
            latency_sum_s: 0.0,
            drops: 0,
            peak_in_flight: 0,
            log: record.then(|| LimitLog::new(initial)),
        }
    }
}

impl Gradient {
    /// From the registry's parameters (Gradient2's defaults where it has them: queue size 4,
    /// smoothing 0.2, tolerance 1.5, a long window of 600). `min <= initial <= max` is checked
    /// by the compiler and clamped here too.
    pub fn new(params: &Params) -> Gradient {
        let min = params.get("min");
        let max = params.get("max").max(min);
        let initial = params.get("initial").clamp(min, max);
        Gradient {
            initial,
            min,
            max,
            queue_size: params.get("queue_size"),
            smoothing: params.get("smoothing"),
            tolerance: params.get("tolerance"),
            window: params.get("window") as u32,
            long_window: params.get("long_window"),
            record: false,
            state: RefCell::new(State::new(initial, false)),
        }
    }

    /// Like [`Gradient::new`], but keeping the limit's trajectory (one entry per change, so memory
    /// grows with the run; the registry's strategies do not record).
    pub fn recording(params: &Params) -> Gradient {
        let strategy = Gradient {
            record: true,
            ..Gradient::new(params)
        };
        strategy.begin_run();
        strategy
    }

    /// The limit's trajectory in the current (or last) run, if recording.
    pub fn log(&self) -> Option<LimitLog> {
        self.state.borrow().log.clone()
    }

    /// Closes the window: updates the long average and the limit.
    fn update(&self, state: &mut State, at: f64) {
        let short_s =
            (state.successes > 0).then(|| state.latency_sum_s / f64::from(state.successes));
        if let Some(short_s) = short_s {
            state.windows += 1;
            let n = f64::from(state.windows);
            state.long_s += if state.windows <= WARMUP_WINDOWS {
                (short_s - state.long_s) / n
            } else {
                (short_s - state.long_s) * 2.0 / (self.long_window + 1.0)
            };
            if state.long_s > 2.0 * short_s {
                state.long_s *= 0.95;
            }
        }
        let drops = state.drops > 0;
        let app_limited = 2.0 * f64::from(state.peak_in_flight) < state.limit;
        (state.answers, state.successes, state.latency_sum_s) = (0, 0, 0.0);
        (state.drops, state.peak_in_flight) = (0, 0);
        if app_limited && !drops {
            return;
        }
        let gradient = match short_s {
            _ if drops => 0.5,
            Some(short_s) if short_s > 0.0 => {
                (self.tolerance * state.long_s / short_s).clamp(0.5, 1.0)
            }
            _ => 1.0,
        };
        let target = state.limit * gradient + self.queue_size;
        let limit = state.limit * (1.0 - self.smoothing) + target * self.smoothing;
        state.limit = limit.clamp(self.min, self.max);
        let limit = state.limit;
        if let Some(log) = &mut state.log {
            log.set(at, limit);
        }
    }
}

impl Strategy for Gradient {
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
        state.answers += 1;
        state.peak_in_flight = state.peak_in_flight.max(feedback.in_flight);
        match feedback.response {
            Response::Success => {
                state.successes += 1;
                state.latency_sum_s += feedback.latency_s();
            }
            Response::Refused | Response::Failed(ErrorClass::Timeout) => state.drops += 1,
            Response::Failed(_) | Response::Invalid => {}
        }
        if state.answers >= self.window {
            self.update(&mut state, feedback.at);
        }
    }
}
