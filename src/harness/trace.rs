//! The per-request trace: what a client's request log would hold, recorded when
//! `RunConfig::trace` is set.
//!
//! A record is pushed when a request is sent (a primary or a hedge copy) and completed when it
//! ends: at once for a refusal or a rejection, at its answer for an admitted one, when the
//! other copy wins for a cancelled one. The recorder only reads the run's state (the limit
//! headers are peeked, never brought up to date), so a traced run is the same run as an
//! untraced one.

use super::{Pending, Sim};
use crate::client::pool::State;
use crate::provider::{Arrival, FailureKind, Refusal, Rejection};
use crate::rng::RandomSource;
use crate::tokens::{CallSize, LimitHeader};

/// The provider's answer to one call at arrival, as the trace records it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CallResult {
    /// Admitted (its success or failure shows in [`TraceRecord::answer`]).
    Admitted,
    /// Refused with a 429 (or "overloaded").
    Refused(Refusal),
    /// Turned away by a scripted incident.
    Rejected(Rejection),
}

/// How a traced request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Refused or rejected on arrival (see [`TraceRecord::result`]).
    AtOnce,
    /// Answered with success.
    Ok,
    /// Answered with a failure after its latency.
    Failed(FailureKind),
    /// The client's request timeout ended it before the provider answered.
    ClientTimeout,
    /// The other copy of a hedged call answered first; this one was cancelled.
    Cancelled,
    /// Still in flight when the run stopped (a stall).
    InFlight,
}

/// One request sent, as recorded when `RunConfig::trace` is set.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRecord {
    /// Simulated time of the request \[s\].
    pub at_s: f64,
    /// When it ended \[s\] (`at_s` for a refusal; the stop for one still in flight).
    pub end_s: f64,
    /// Job index (0-based).
    pub job: u32,
    /// Step index (0-based).
    pub step: u32,
    /// Attempt (1-based).
    pub attempt: u32,
    /// Call index within the attempt (0-based).
    pub call: u32,
    /// A hedge copy, not the call's first request.
    pub hedge: bool,
    /// Index of the leased resource.
    pub resource: usize,
    /// The resource's active leases right after leasing.
    pub active_after_lease: u32,
    /// The provider's answer on arrival.
    pub result: CallResult,
    /// How it ended.
    pub answer: Answer,
    /// The Retry-After a refusal carried \[s\].
    pub retry_after_s: Option<f64>,
    /// The endpoint's published limits as the answer's `x-ratelimit-*` headers carry them.
    pub headers: Vec<LimitHeader>,
    /// Time to first token \[s\], when a token was written before the request ended.
    pub ttft_s: Option<f64>,
    /// Output tokens the client received (on success, or streamed before its timeout or its cancellation).
    pub output_tokens: Option<f64>,
    /// For a refusal: the resource's consecutive failures and state after the report.
    pub after_report: Option<(u32, State)>,
    /// The pool's round-robin counter after the selection.
    pub round_robin: u64,
    /// The call's sizes (zero in a world without `[tokens]`).
    pub size: CallSize,
    /// Admitted and served from the endpoint's reuse cache.
    pub cached: bool,
    /// The worker (a closed loop's worker, an open loop's slot) that sent it.
    pub worker: u32,
    /// For a job's first request (first step, attempt and call; not a hedge copy), when the
    /// job arrived: earlier than `at_s` when the harness's own queue held it.
    pub arrived_s: Option<f64>,
}

/// Marks the records still in flight when the run stopped at `now`.
pub(super) fn close(trace: &mut [TraceRecord], now: f64) {
    for record in trace.iter_mut().filter(|r| r.answer == Answer::InFlight) {
        record.end_s = now;
    }
}

impl<R: RandomSource> Sim<'_, R> {
    /// Records the request `w` just sent on `r` (a hedge copy when `copy`) and what it met on
    /// arrival.
    #[inline(never)]
    pub(super) fn record(
        &mut self,
        w: usize,
        r: usize,
        active_after_lease: u32,
        arrival: Arrival,
        copy: bool,
    ) {
        if self.trace_slots.len() <= w {
            self.trace_slots.resize(w + 1, [usize::MAX; 2]);
        }
        if self
            .trace
            .as_ref()
            .is_some_and(|t| t.len() >= self.trace_limit)
        {
            self.trace_slots[w][usize::from(copy)] = usize::MAX;
            self.trace_omitted += 1;
            return;
        }
        let worker = &self.workers[w];
        let resource = &self.pool.resources()[r];
        let (result, after_report, answer, retry_after_s) = match arrival {
            Arrival::Refused {
                refusal,
                retry_after_s,
            } => (
                CallResult::Refused(refusal),
                Some((resource.consecutive_failures, resource.raw_state())),
                Answer::AtOnce,
                (refusal != Refusal::Overloaded).then_some(retry_after_s),
            ),
            Arrival::Rejected(rejection) => {
                (CallResult::Rejected(rejection), None, Answer::AtOnce, None)
            }
            Arrival::Admitted { .. } => (CallResult::Admitted, None, Answer::InFlight, None),
        };
        // The provider decided the hit from the same question, asked at the same instant.
        let cached = result == CallResult::Admitted && self.reuses(w, r);
        let mut headers = Vec::new();
        if answer == Answer::AtOnce {
            self.provider.peek_limit_headers(r, self.now, &mut headers);
        }
        let record = TraceRecord {
            at_s: self.now,
            end_s: self.now,
            job: worker.job,
            step: worker.step,
            attempt: worker.attempt,
            call: worker.call,
            hedge: copy,
            resource: r,
            active_after_lease,
            result,
            answer,
            retry_after_s,
            headers,
            ttft_s: None,
            output_tokens: None,
            after_report,
            round_robin: self.pool.round_robin(),
            size: worker.size,
            cached,
            worker: w as u32,
            arrived_s: (!copy
                && (worker.step, worker.attempt, worker.call) == (0, 1, 0)
                && worker.job_start < self.now)
                .then_some(worker.job_start),
        };
        let trace = self.trace.as_mut().expect("tracing");
        self.trace_slots[w][usize::from(copy)] = trace.len();
        trace.push(record);
    }

    /// The request of `w` in flight ends now with `pending` (its client timeout applied).
    #[inline(never)]
    pub(super) fn trace_answer(&mut self, w: usize, pending: &Pending) {
        let index = self.trace_slots[w][0];
        if index == usize::MAX {
            return; // Past the trace's limit.
        }
        let worker = &self.workers[w];
        let r = worker.lease;
        let output = worker.size.output;
        let mut headers = Vec::new();
        self.provider.peek_limit_headers(r, self.now, &mut headers);
        let record = &mut self.trace.as_mut().expect("tracing")[index];
        record.end_s = self.now;
        record.headers = headers;
        record.answer = match pending.failure {
            _ if pending.gave_up() => Answer::ClientTimeout,
            None => Answer::Ok,
            Some(kind) => Answer::Failed(kind),
        };
        let Some(usage) = pending.usage else {
            return;
        };
        let written = match record.answer {
            Answer::Ok => output,
            Answer::ClientTimeout => usage.written_by(output, pending.answer_s, pending.latency_s),
            _ => return,
        };
        record.output_tokens = Some(written);
        if pending.answer_s > usage.ttft_s || record.answer == Answer::Ok {
            record.ttft_s = Some(usage.ttft_s);
        }
    }

    /// The request of `w` in slot `slot` (0 the primary, 1 the copy) is cancelled now.
    /// It was sent at `sent_at` to do `pending`; in a world with `[tokens]` its record keeps
    /// the output streamed to the client until then, as a client timeout's does.
    pub(super) fn trace_cancelled(
        &mut self,
        w: usize,
        slot: usize,
        pending: &Pending,
        sent_at: f64,
    ) {
        let index = self.trace_slots[w][slot];
        if index == usize::MAX {
            return; // Past the trace's limit.
        }
        let now = self.now;
        let output = self.workers[w].size.output;
        let record = &mut self.trace.as_mut().expect("tracing")[index];
        record.end_s = now;
        record.answer = Answer::Cancelled;
        if let Some(usage) = pending.usage {
            let elapsed_s = now - sent_at;
            record.output_tokens = Some(usage.written_by(output, elapsed_s, pending.latency_s));
            if elapsed_s > usage.ttft_s {
                record.ttft_s = Some(usage.ttft_s);
            }
        }
    }

    /// The hedge copy of `w` answered first: the primary (sent at `sent_at` to do `pending`)
    /// is cancelled and the copy's record becomes the one the answer completes.
    pub(super) fn trace_copy_won(&mut self, w: usize, pending: &Pending, sent_at: f64) {
        self.trace_cancelled(w, 0, pending, sent_at);
        let slots = &mut self.trace_slots[w];
        slots[0] = slots[1];
    }
}
