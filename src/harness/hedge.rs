//! Hedged requests: a second copy of a slow request on another resource; the first answer wins.
//!
//! The strategy decides when (`Strategy::hedge_after`, asked as each request is sent) and where
//! (`Strategy::hedge`, asked when the timer fires, never waiting). This module does the rest:
//! the timer, the copy's own flight, and the cancellation of the loser. A cancelled request
//! gives its lease back and leaves the provider's in-flight count at once; its cost stays
//! counted — the tokens it consumed and its busy time up to the cancellation — and it never
//! answers, so neither the pool's breaker nor the strategy hears of it. Copies are not subject
//! to client-side throttling or the retry budget: they are part of the call, not new attempts.
//!
//! Events cannot be taken off the queue, so a loser's answer and a timer that is no longer
//! needed stay scheduled and are recognised as stale when they fire: a timer or a copy's answer
//! by its time no longer matching the worker's state, a primary's answer by its time in the
//! worker's list of cancelled answers. Two events of one worker at one instant are
//! interchangeable, and the stale one was scheduled first, so skipping it keeps the order of
//! everything else.

use super::{Pending, Phase, Sim};
use crate::client::strategy::Response;
use crate::provider::{Arrival, Refusal};
use crate::rng::RandomSource;

use super::queue::Event;

/// A worker's hedging state for its call in flight.
#[derive(Clone, Debug, Default)]
pub(super) struct Hedging {
    /// When the armed timer fires \[s\], if one is armed and still wanted.
    timer: Option<f64>,
    /// The copy in flight, if one was sent and admitted.
    copy: Option<Duplicate>,
    /// Answer times of this worker's cancelled primary requests, still on the queue.
    stale_answers: Vec<f64>,
}

/// The hedge copy of a request in flight.
#[derive(Clone, Copy, Debug)]
struct Duplicate {
    lease: usize,
    pending: Pending,
    dispatched_at: f64,
}

impl Duplicate {
    fn answers_at(&self) -> f64 {
        self.dispatched_at + self.pending.answer_s
    }
}

impl<R: RandomSource> Sim<'_, R> {
    /// The primary request of `w` was admitted with `latency_s`: arm the hedge timer if the
    /// strategy hedges and the timer could fire before the answer (a later timer would only
    /// find the request answered).
    pub(super) fn arm_hedge(&mut self, w: usize, latency_s: f64) {
        if !self.feedback {
            return;
        }
        let Some(delay_s) = self.strategy.hedge_after() else {
            return;
        };
        let worker = &mut self.workers[w];
        worker.hedging.timer = None;
        if delay_s < latency_s {
            let at = self.now + delay_s;
            worker.hedging.timer = Some(at);
            self.queue.push(at, Event::Hedge(w as u32));
        }
    }

    /// The hedge timer of `w` fired: send a copy where the strategy says, if it still matters.
    pub(super) fn hedge_timer(&mut self, w: usize) {
        let now = self.now;
        let worker = &mut self.workers[w];
        if worker.phase != Phase::InFlight || worker.hedging.timer != Some(now) {
            return;
        }
        worker.hedging.timer = None;
        let primary = worker.lease;
        let Some(r) = self.strategy.hedge(&mut self.pool, now, primary) else {
            return;
        };
        assert_ne!(r, primary, "a hedge goes to another resource");
        let active_after_lease = self.pool.resources()[r].active();
        let size = self.call_size(w);
        let arrival = self
            .provider
            .arrive(r, now, self.rng, self.reuses(w, r), size.as_ref());
        match arrival {
            Arrival::Rejected(rejection) => {
                // The copy failed at once; the primary keeps racing alone.
                self.rejected(r, rejection);
            }
            Arrival::Refused {
                refusal,
                retry_after_s,
            } => {
                // "Overloaded" carries no Retry-After.
                let retry_after = (refusal != Refusal::Overloaded).then_some(retry_after_s);
                if let Some(after) = retry_after {
                    self.pool.note_retry_after(r, now + after);
                }
                self.observe(r, now, Response::Refused, retry_after);
                self.pool.report_failure(r, now);
                self.pool.release(r);
                self.flush_signals();
            }
            Arrival::Admitted {
                latency_s,
                failure,
                tokens,
                usage,
            } => {
                let pending = self.pending(latency_s, failure, tokens, usage);
                self.workers[w].hedging.copy = Some(Duplicate {
                    lease: r,
                    pending,
                    dispatched_at: now,
                });
                self.queue
                    .push(now + pending.answer_s, Event::HedgeAnswer(w as u32));
            }
        }
        if let Some(rec) = self.recorder.as_deref_mut() {
            rec.sent(now, &arrival);
        }
        if self.trace.is_some() {
            self.record(w, r, active_after_lease, arrival, true);
        }
    }

    /// The copy of `w` answered. If it is still racing, it wins: the primary is cancelled and
    /// the copy's answer completes the call.
    pub(super) fn hedge_answer(&mut self, w: usize) {
        let now = self.now;
        let worker = &mut self.workers[w];
        let Some(copy) = worker.hedging.copy.filter(|c| c.answers_at() == now) else {
            return;
        };
        debug_assert_eq!(worker.phase, Phase::InFlight);
        worker.hedging.copy = None;
        let (lease, dispatched_at, primary) = (worker.lease, worker.dispatched_at, worker.pending);
        worker
            .hedging
            .stale_answers
            .push(dispatched_at + primary.answer_s);
        worker.lease = copy.lease;
        worker.pending = copy.pending;
        worker.dispatched_at = copy.dispatched_at;
        if self.trace.is_some() {
            self.trace_copy_won(w, &primary, dispatched_at);
        }
        self.cancel(w, lease, dispatched_at, &primary);
        let next = self.complete_request(w);
        self.drive(w, next);
    }

    /// The primary of `w` answered first: the timer is no longer wanted and a copy in flight
    /// loses.
    pub(super) fn primary_answered(&mut self, w: usize) {
        let hedging = &mut self.workers[w].hedging;
        hedging.timer = None;
        if let Some(copy) = hedging.copy.take() {
            if self.trace.is_some() {
                self.trace_cancelled(w, 1, &copy.pending, copy.dispatched_at);
            }
            self.cancel(w, copy.lease, copy.dispatched_at, &copy.pending);
        }
    }

    /// Whether the `Resume` of `w` firing now is the answer of a cancelled primary.
    pub(super) fn is_stale_answer(&mut self, w: usize) -> bool {
        let stale = &mut self.workers[w].hedging.stale_answers;
        match stale.iter().position(|&t| t == self.now) {
            Some(i) => {
                stale.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// Cancels the request of `w` on `r`, sent at `dispatched_at` to do `pending`: the provider
    /// stops serving it, the lease is given back, the busy time it will not use is remembered,
    /// and in a world with `[tokens]` what it consumed stays spent (the prompt and the output
    /// written by now: billed, wasted, and settled against the limits as a hang-up is).
    fn cancel(&mut self, w: usize, r: usize, dispatched_at: f64, pending: &Pending) {
        if let Some(rec) = self.recorder.as_deref_mut() {
            rec.window(self.now).cancelled += 1;
        }
        let answers_at = dispatched_at + pending.answer_s;
        self.account_cancelled(w, r, pending, dispatched_at);
        self.provider.finish(r, false);
        self.unused_busy_s[r] += answers_at - self.now;
        self.pool.release(r);
        self.flush_signals();
    }
}
