//! The per-request trace: what a client's request log would hold, recorded when
//! `RunConfig::trace` is set.
//!
//! A record is pushed when a request is sent (a primary or a hedge copy) and completed when it
//! ends: at once for a refusal or a rejection, at its answer for an admitted one, when the
//! other copy wins for a cancelled one. The recorder only reads the run's state (the limit
//! headers are peeked, never brought up to date), so a traced run is the same run as an
//! untraced one.

use std::collections::VecDeque;

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

/// Where a traced run's records go as they end: a request log written while the run goes,
/// so it holds only the requests still in flight, not every request of the run.
pub type Sink<'s> = &'s dyn Fn(TraceRecord);

/// The records of a traced run, by the index of their sending. Without a sink all are kept
/// for the result; with one, each is handed over as soon as it and every earlier one have
/// ended, so the sink sees them in the order they were sent, as the kept trace lists them.
pub(super) struct Book<'s> {
    records: VecDeque<TraceRecord>,
    /// The index of `records[0]`: the records before it went to the sink.
    first: usize,
    /// Requests the book records; past them a request is only counted.
    limit: usize,
    /// Requests sent past `limit`.
    pub(super) omitted: u64,
    /// Records still in flight.
    open: usize,
    /// The latest end of a record that ended.
    latest_end: f64,
    sink: Option<Sink<'s>>,
}

impl<'s> Book<'s> {
    pub(super) fn new(limit: usize, sink: Option<Sink<'s>>) -> Self {
        Book {
            records: VecDeque::new(),
            first: 0,
            limit,
            omitted: 0,
            open: 0,
            latest_end: f64::NEG_INFINITY,
            sink,
        }
    }

    /// Records held now.
    pub(super) fn held(&self) -> usize {
        self.records.len()
    }

    fn full(&self) -> bool {
        self.first + self.records.len() >= self.limit
    }

    /// When every request the book keeps has ended and some were left out: the end of the
    /// last (nothing after it goes into the trace).
    pub(super) fn settled(&self) -> Option<f64> {
        (self.omitted > 0 && self.open == 0).then_some(self.latest_end)
    }

    /// Notes that a record in flight ends at `t`.
    fn ended(&mut self, t: f64) {
        self.open -= 1;
        self.latest_end = self.latest_end.max(t);
    }

    /// Adds a record; its index.
    fn push(&mut self, record: TraceRecord) -> usize {
        let index = self.first + self.records.len();
        if record.answer == Answer::InFlight {
            self.open += 1;
        } else {
            self.latest_end = self.latest_end.max(record.end_s);
        }
        self.records.push_back(record);
        self.hand_over();
        index
    }

    /// The record of `index`, unless it was handed over (it had ended: nothing changes it).
    fn get_mut(&mut self, index: usize) -> Option<&mut TraceRecord> {
        let at = index.checked_sub(self.first);
        debug_assert!(
            at.is_some(),
            "record {index} changed after it was handed over"
        );
        self.records.get_mut(at?)
    }

    /// Hands the sink every leading record that has ended.
    fn hand_over(&mut self) {
        let Some(sink) = self.sink else {
            return;
        };
        while self
            .records
            .front()
            .is_some_and(|r| r.answer != Answer::InFlight)
        {
            let record = self.records.pop_front().expect("a front record");
            self.first += 1;
            sink(record);
        }
    }

    /// Marks the records still in flight when the run stopped at `now` and hands every record
    /// left to the sink; the records kept for the result.
    pub(super) fn close(mut self, now: f64) -> Vec<TraceRecord> {
        for record in self
            .records
            .iter_mut()
            .filter(|r| r.answer == Answer::InFlight)
        {
            record.end_s = now;
        }
        if let Some(sink) = self.sink {
            self.records.drain(..).for_each(sink);
        }
        self.records.into()
    }
}

/// Completes the record of a request answered (or given up on) with `pending`, which was to
/// write `output` tokens.
fn answered(record: &mut TraceRecord, pending: &Pending, output: f64) {
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
        let book = self.trace.as_mut().expect("tracing");
        if book.full() {
            self.trace_slots[w][usize::from(copy)] = usize::MAX;
            book.omitted += 1;
            self.trace_settled();
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
        let index = self.trace.as_mut().expect("tracing").push(record);
        self.trace_slots[w][usize::from(copy)] = index;
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
        let book = self.trace.as_mut().expect("tracing");
        if let Some(record) = book.get_mut(index) {
            let was_open = record.answer == Answer::InFlight;
            record.end_s = self.now;
            record.headers = headers;
            answered(record, pending, output);
            if was_open {
                book.ended(self.now);
            }
        }
        book.hand_over();
        self.trace_settled();
    }

    /// Once every request the trace keeps has ended, tells the recorder to keep no breaker
    /// change after them: a trace writes none, and a long run would keep them all.
    fn trace_settled(&mut self) {
        let settled = self.trace.as_ref().and_then(Book::settled);
        if let (Some(t), Some(recorder)) = (settled, self.recorder.as_deref_mut()) {
            recorder.keep_changes_until(t);
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
        let book = self.trace.as_mut().expect("tracing");
        if let Some(record) = book.get_mut(index) {
            let was_open = record.answer == Answer::InFlight;
            record.end_s = now;
            record.answer = Answer::Cancelled;
            if let Some(usage) = pending.usage {
                let elapsed_s = now - sent_at;
                record.output_tokens = Some(usage.written_by(output, elapsed_s, pending.latency_s));
                if elapsed_s > usage.ttft_s {
                    record.ttft_s = Some(usage.ttft_s);
                }
            }
            if was_open {
                book.ended(now);
            }
        }
        book.hand_over();
        self.trace_settled();
    }

    /// The hedge copy of `w` answered first: the primary (sent at `sent_at` to do `pending`)
    /// is cancelled and the copy's record becomes the one the answer completes.
    pub(super) fn trace_copy_won(&mut self, w: usize, pending: &Pending, sent_at: f64) {
        self.trace_cancelled(w, 0, pending, sent_at);
        let slots = &mut self.trace_slots[w];
        slots[0] = slots[1];
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::tokens::CallSize;

    fn record(job: u32, answer: Answer) -> TraceRecord {
        TraceRecord {
            at_s: 0.0,
            end_s: 0.0,
            job,
            step: 0,
            attempt: 1,
            call: 0,
            hedge: false,
            resource: 0,
            active_after_lease: 1,
            result: CallResult::Admitted,
            answer,
            retry_after_s: None,
            headers: Vec::new(),
            ttft_s: None,
            output_tokens: None,
            after_report: None,
            round_robin: 0,
            size: CallSize::default(),
            cached: false,
            worker: 0,
            arrived_s: None,
        }
    }

    #[test]
    fn a_sink_gets_records_in_sending_order_once_every_earlier_one_ended() {
        let seen = RefCell::new(Vec::new());
        let sink = |r: TraceRecord| seen.borrow_mut().push((r.job, r.end_s));
        let mut book = Book::new(usize::MAX, Some(&sink));
        let slow = book.push(record(0, Answer::InFlight));
        let fast = book.push(record(1, Answer::InFlight));
        book.push(record(2, Answer::AtOnce));
        assert_eq!(book.held(), 3, "nothing ends before the first");
        let done = book.get_mut(fast).unwrap();
        (done.answer, done.end_s) = (Answer::Ok, 1.0);
        book.hand_over();
        assert!(seen.borrow().is_empty(), "the first is still in flight");
        let done = book.get_mut(slow).unwrap();
        (done.answer, done.end_s) = (Answer::Ok, 2.0);
        book.hand_over();
        assert_eq!(*seen.borrow(), [(0, 2.0), (1, 1.0), (2, 0.0)]);
        assert_eq!(book.held(), 0);
        book.push(record(3, Answer::InFlight));
        assert!(book.close(5.0).is_empty(), "the sink took the last one");
        assert_eq!(seen.borrow().last(), Some(&(3, 5.0)), "closed at the stop");
    }

    #[test]
    fn without_a_sink_the_book_keeps_every_record_up_to_its_limit() {
        let mut book = Book::new(2, None);
        for job in 0..2 {
            assert!(!book.full());
            book.push(record(job, Answer::AtOnce));
        }
        assert!(book.full());
        let kept = book.close(1.0);
        assert_eq!(kept.iter().map(|r| r.job).collect::<Vec<_>>(), [0, 1]);
    }
}
