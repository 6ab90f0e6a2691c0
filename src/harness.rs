//! The harness: the closed-loop client driven against the provider on an event heap.
//!
//! This is the only module that sees both sides: it owns the [`Provider`], the client's
//! [`Pool`] and one strategy, and moves workers through job → step → attempt → call. A worker
//! runs synchronously until it blocks (on a request's latency, a retry delay, a poll timer or the
//! pool's waiter queue); blocking means an event on the [`queue::EventQueue`]. Events at the same
//! time run in scheduling order, so a worker that releases a lease keeps running and may take the
//! next lease before the waiters it woke (reference §3.11). Nothing here reads a real clock: the
//! wall-clock budget is a callback supplied by the caller.

mod hedge;
pub mod queue;
mod trace;

pub use trace::{Answer, CallResult, Sink, TraceRecord};

use std::collections::{BTreeMap, VecDeque};

use crate::client::budget::Budget;
use crate::client::pool::{Filter, Pool, Scope, Signal, State};
use crate::client::retry::{self, Decision, ErrorClass, Failure, GiveUp, RetryLoop};
use crate::client::strategy::{
    Acquire, AttemptState, CallState, Demand, Dice, Feedback, Response, Strategy,
};
use crate::client::throttle::Throttle;
use crate::metrics::recovery::RecoveryRule;
use crate::metrics::{self, EndpointTally, MetricValues, Tally};
use crate::provider::{Arrival, EndpointStats, FailureKind, Provider, Refusal, Rejection, Usage};
use crate::recorder::{Changes, Observed, Recorder, Snapshot, Timeseries};
use crate::rng::reference::Reference;
use crate::rng::{Native, RandomSource, Stream};
use crate::text::plural;
use crate::tokens::{CallSize, LimitHeader};
use crate::world::{Load, Think, World};
use queue::{Event, EventQueue};

/// How to run one (world, strategy, seed).
pub struct RunConfig<'a> {
    /// The run seed (scenario seed + k).
    pub seed: u64,
    /// Which random-number scheme the keyed streams use.
    pub rng: RngScheme,
    /// Record a per-call trace in the result (for tests and debugging).
    pub trace: bool,
    /// Record windows this wide \[s\] ([`crate::recorder`]); `None` records none.
    pub window_s: Option<f64>,
    /// Polled every few thousand events; `true` stops the run as timed out.
    pub out_of_time: &'a dyn Fn() -> bool,
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Every worker exited; the metrics are complete.
    Ok,
    /// The run cannot make progress. Its metrics are what it did until the stall (the
    /// strategy's own behaviour, deterministic like a finished run); the jobs it held are
    /// `jobs_stalled`.
    Stalled {
        /// Simulated time of the stall \[s\].
        at_s: f64,
        /// Jobs completed before it.
        jobs_done: u64,
        /// Why nothing can move.
        cause: String,
    },
    /// The wall-clock budget ran out; no metrics are reported.
    Timeout {
        /// Simulated time reached \[s\].
        at_s: f64,
        /// Jobs completed so far.
        jobs_done: u64,
    },
    /// The run's memory grew past its share of the memory budget; no metrics are reported.
    OutOfMemory {
        /// Simulated time reached \[s\].
        at_s: f64,
        /// Jobs completed so far.
        jobs_done: u64,
        /// What the run held when stopped \[bytes\] (its samples, workers, queues and waiters).
        held: u64,
        /// The most it could hold \[bytes\].
        limit: u64,
    },
    /// Simulated time stopped: [`LIVELOCK_EVENTS`] events in a row at one instant started no
    /// attempt, took no lease and ended no job, so the clock can never move again. A stall of
    /// another kind: its metrics are what it did until then.
    Livelock {
        /// The instant the clock is stuck at \[s\].
        at_s: f64,
        /// Jobs completed before it.
        jobs_done: u64,
    },
}

impl Outcome {
    /// Whether the strategy itself stopped the run (a stall or a livelock), as opposed to the
    /// harness's wall-clock or memory budget: such a run has metrics up to the stall.
    pub fn is_stall(&self) -> bool {
        matches!(self, Outcome::Stalled { .. } | Outcome::Livelock { .. })
    }

    /// `ok`, `stalled`, `timeout`, `livelock` or `out_of_memory`.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Stalled { .. } => "stalled",
            Outcome::Timeout { .. } => "timeout",
            Outcome::OutOfMemory { .. } => "out_of_memory",
            Outcome::Livelock { .. } => "livelock",
        }
    }
    /// A sentence explaining a run that did not finish; `None` when it did.
    pub fn reason(&self) -> Option<String> {
        match self {
            Outcome::Ok => None,
            Outcome::Stalled {
                at_s,
                jobs_done,
                cause,
            } => Some(format!(
                "stalled at t = {at_s:.3} s after {} done: {cause}",
                plural(*jobs_done as usize, "job")
            )),
            Outcome::Timeout { at_s, jobs_done } => Some(format!(
                "wall-clock budget exhausted at t = {at_s:.3} s after {} done",
                plural(*jobs_done as usize, "job")
            )),
            Outcome::OutOfMemory {
                at_s,
                jobs_done,
                held,
                limit,
            } => Some(format!(
                "memory budget exhausted at t = {at_s:.3} s after {} done: the run \
                 held {} MB, its share of the budget is {} MB",
                plural(*jobs_done as usize, "job"),
                held.div_ceil(1 << 20),
                limit / (1 << 20)
            )),
            Outcome::Livelock { at_s, jobs_done } => Some(format!(
                "livelock at t = {at_s:.3} s after {} done: {LIVELOCK_EVENTS} \
                 events at this instant started no attempt, took no lease and ended no job, so \
                 simulated time cannot advance (a client polling at zero delay)",
                plural(*jobs_done as usize, "job")
            )),
        }
    }
}

/// What the client's pool saw of one resource.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceReport {
    /// Leases taken.
    pub leases: u64,
    /// Successful reports.
    pub ok: u64,
    /// Failed reports (refusals included).
    pub failed: u64,
    /// Breaker trips and extensions.
    pub degraded: u64,
    /// Times it went DEAD.
    pub dead: u64,
    /// Times a success brought it back.
    pub recovered: u64,
    /// State at the end of the run.
    pub final_state: State,
}

/// One endpoint's counters, provider side and client side.
#[derive(Clone, Debug, PartialEq)]
pub struct EndpointReport {
    /// Endpoint id.
    pub id: String,
    /// What the provider counted.
    pub provider: EndpointStats,
    /// What the pool counted.
    pub pool: ResourceReport,
}

/// Everything one run produced.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// How it ended.
    pub outcome: Outcome,
    /// The metric vector; `None` when a budget stopped the run (see [`Outcome::is_stall`]).
    pub metrics: Option<MetricValues>,
    /// Failed attempts per error class (classes that occurred), sorted by name.
    pub error_classes: BTreeMap<&'static str, u64>,
    /// Per-endpoint counters in world order.
    pub endpoints: Vec<EndpointReport>,
    /// Per-call trace, when asked for.
    pub trace: Vec<TraceRecord>,
    /// Requests sent after the trace's limit ([`run_traced`]): counted, not recorded.
    pub trace_omitted: u64,
    /// The windowed recorder's series, when asked for.
    pub timeseries: Option<Timeseries>,
    /// Events processed.
    pub events: u64,
    /// The longest run of consecutive events at one instant that made no progress (the
    /// livelock detector's measure; see [`LIVELOCK_EVENTS`]).
    pub longest_still_events: u64,
    /// The most consecutive events at one instant, progress or not (for comparison).
    pub longest_instant_events: u64,
}

/// Events in a row at one simulated instant that start no attempt, fail none, take no lease,
/// and start or end no job, after which a run is ended as a [`Outcome::Livelock`].
///
/// Such events are polls, wake-ups, deadlines, cooldown checks and hedge timers. A legitimate
/// instant has a few per worker and endpoint at most (a worker blocked at one instant is woken,
/// times out or polls a bounded number of times before it leases or fails something), so even a
/// world at the largest sizes (100 000 workers) stays below a third of this; the shipped worlds'
/// longest stretch (138 events) is measured in `tests/it/livelock.rs`. Only a client that polls
/// faster than the clock can tick repeats such events for ever. At the engine's speed (millions
/// of events per second) the threshold is reached well within a second of wall time.
pub const LIVELOCK_EVENTS: u64 = 1 << 20;

/// The livelock detector's state: the progress count last seen and the events since.
#[derive(Clone, Copy, Debug, Default)]
struct Stillness {
    progress: u64,
    events: u64,
}

/// The random-number scheme of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RngScheme {
    /// Fast keyed Xoshiro256++ streams (the default).
    Native,
    /// CPython's Mersenne Twister seeded from the reference's key strings, for exact replay.
    Reference,
}

/// Runs `strategy` on `world` with the random-number scheme named in `config`.
pub fn run(world: &World, strategy: &dyn Strategy, config: &RunConfig<'_>) -> RunResult {
    run_within(world, strategy, config, u64::MAX)
}

/// [`run`], stopped as [`Outcome::OutOfMemory`] once what the run holds (its samples,
/// workers, queues and waiters, counted when the wall-clock budget is polled) passes `max_bytes`. The count is a function of
/// the run alone, so the same limit stops the same run at the same event on any machine.
pub fn run_within(
    world: &World,
    strategy: &dyn Strategy,
    config: &RunConfig<'_>,
    max_bytes: u64,
) -> RunResult {
    let limits = Limits {
        max_bytes,
        trace_requests: usize::MAX,
        sink: None,
    };
    dispatch(world, strategy, config, limits)
}

/// [`run`] with a trace that records the first `requests` requests sent and counts the rest
/// ([`RunResult::trace_omitted`]): what `simbench trace --max-requests` writes, in memory
/// bounded by it however long the run.
pub fn run_traced(
    world: &World,
    strategy: &dyn Strategy,
    config: &RunConfig<'_>,
    requests: usize,
) -> RunResult {
    let limits = Limits {
        max_bytes: u64::MAX,
        trace_requests: requests,
        sink: None,
    };
    dispatch(world, strategy, config, limits)
}

/// [`run`] with its trace handed to `sink` request by request, in the order they were sent, as
/// each ends (and every earlier one has): a request log written while the run goes holds only
/// the requests in flight. The result's trace is empty.
pub fn run_streamed(
    world: &World,
    strategy: &dyn Strategy,
    config: &RunConfig<'_>,
    sink: Sink<'_>,
) -> RunResult {
    let limits = Limits {
        max_bytes: u64::MAX,
        trace_requests: usize::MAX,
        sink: Some(sink),
    };
    dispatch(world, strategy, config, limits)
}

/// What a run may hold, and where its trace goes.
#[derive(Clone, Copy)]
struct Limits<'s> {
    /// Bytes, past which the run stops as out of memory.
    max_bytes: u64,
    /// Requests the trace records.
    trace_requests: usize,
    /// Takes each traced request as it ends, instead of the result.
    sink: Option<Sink<'s>>,
}

fn dispatch(
    world: &World,
    strategy: &dyn Strategy,
    config: &RunConfig<'_>,
    limits: Limits,
) -> RunResult {
    let ids = world.endpoints().iter().map(|e| e.id.as_str());
    match config.rng {
        RngScheme::Native => {
            let rng = Native::new(config.seed, ids);
            run_limited(world, strategy, &rng, config, limits)
        }
        RngScheme::Reference => {
            let rng = Reference::new(config.seed, ids);
            run_limited(world, strategy, &rng, config, limits)
        }
    }
}

/// Bytes one worker slot takes (a closed-loop worker, or an open-loop job in flight).
pub fn worker_bytes() -> u64 {
    std::mem::size_of::<Worker<<Native as RandomSource>::Stream>>() as u64
}

/// Runs `strategy` on `world` drawing from `rng` (the seam for other random-number schemes).
pub fn run_with<R: RandomSource>(
    world: &World,
    strategy: &dyn Strategy,
    rng: &R,
    config: &RunConfig<'_>,
) -> RunResult {
    let limits = Limits {
        max_bytes: u64::MAX,
        trace_requests: usize::MAX,
        sink: None,
    };
    run_limited(world, strategy, rng, config, limits)
}

fn run_limited<R: RandomSource>(
    world: &World,
    strategy: &dyn Strategy,
    rng: &R,
    config: &RunConfig<'_>,
    limits: Limits,
) -> RunResult {
    strategy.begin_run();
    let book = (config.trace || limits.sink.is_some())
        .then(|| trace::Book::new(limits.trace_requests, limits.sink));
    let mut sim = Sim::new(world, strategy, rng, book);
    sim.max_bytes = limits.max_bytes;
    // A trace shows every breaker change among its requests; a report draws the deaths.
    let keep = if config.trace {
        Changes::Every
    } else {
        Changes::Deaths
    };
    sim.recorder = config
        .window_s
        .map(|w| Box::new(Recorder::new(w, world.endpoints().len(), keep)));
    let outcome = sim.run(config.out_of_time);
    sim.finish(outcome)
}

/// Where a worker is parked, or what it does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Between jobs, or not started.
    Idle,
    /// In the pool's waiter queue.
    Waiting,
    /// Sleeping before its next poll.
    Polling,
    /// A request is in flight on `lease`.
    InFlight,
    /// Sleeping before its next attempt.
    RetrySleep,
    /// A closed loop's pause between jobs (`[load] think_s`); `job_start` holds when the
    /// last job ended.
    Thinking,
    /// Exited: no job left or the horizon passed.
    Done,
}

/// What the worker's synchronous run does next.
#[derive(Clone, Copy, Debug)]
enum Next {
    /// A job is over: pause, if the load says so, then claim.
    Rest,
    Claim,
    StartStep,
    StartAttempt,
    StartCall,
    Acquire,
    Block,
}

/// The outcome of the request in flight.
#[derive(Clone, Copy, Debug)]
struct Pending {
    latency_s: f64,
    failure: Option<FailureKind>,
    tokens: f64,
    /// The call's tokens and timing, in a world with `[tokens]`.
    usage: Option<Usage>,
    /// When the client hears back, after sending \[s\]: `latency_s`, or sooner when its
    /// request timeout ends the request first.
    answer_s: f64,
}

impl Pending {
    /// The client's request timeout ended the request before the provider did.
    fn gave_up(&self) -> bool {
        self.answer_s < self.latency_s
    }
}

struct Worker<S> {
    phase: Phase,
    job: u32,
    step: u32,
    attempt: u32,
    call: u32,
    /// When the job was meant to start: its arrival (open loop) or its claim (closed loop).
    job_start: f64,
    /// When the harness wanted the current call's request sent (the intended clock).
    ready_at: f64,
    /// When the current attempt failed (a retry's intended clock starts there).
    failed_at: f64,
    /// The Retry-After that failure carried \[s\].
    failed_retry_after_s: Option<f64>,
    /// When the request in flight was sent (a winning hedge copy's send time once it wins).
    dispatched_at: f64,
    /// When the call's first request was sent: the call is in service from then on, whichever
    /// copy answers (so a hedge's delay never counts as the harness's queue).
    first_sent_at: f64,
    step_start: f64,
    acquire_start: f64,
    lease: usize,
    pending: Pending,
    attempt_state: AttemptState,
    call_state: CallState,
    /// The current call's sizes, drawn when it starts (zero in a world without `[tokens]`).
    size: CallSize,
    /// The deadline of the wait the worker is in, if it has one.
    wait_deadline: Option<f64>,
    dice: Option<S>,
    hedging: hedge::Hedging,
    /// Endpoints that served a call of the current job, with when (for reuse caches).
    served: Vec<(usize, f64)>,
}

impl<S> Worker<S> {
    fn idle() -> Self {
        Worker {
            phase: Phase::Idle,
            job: 0,
            step: 0,
            attempt: 0,
            call: 0,
            job_start: 0.0,
            ready_at: 0.0,
            failed_at: 0.0,
            failed_retry_after_s: None,
            dispatched_at: 0.0,
            first_sent_at: 0.0,
            step_start: 0.0,
            acquire_start: 0.0,
            lease: 0,
            pending: Pending {
                latency_s: 0.0,
                failure: None,
                tokens: 0.0,
                usage: None,
                answer_s: 0.0,
            },
            attempt_state: AttemptState::default(),
            call_state: CallState::default(),
            size: CallSize::default(),
            wait_deadline: None,
            dice: None,
            hedging: hedge::Hedging::default(),
            served: Vec::new(),
        }
    }

    /// Whether endpoint `r` served a call of this job at most `ttl_s` before `now`.
    fn reuses(&self, r: usize, now: f64, ttl_s: f64) -> bool {
        self.served
            .iter()
            .any(|&(e, at)| e == r && now - at <= ttl_s)
    }

    fn note_served(&mut self, r: usize, now: f64) {
        match self.served.iter_mut().find(|(e, _)| *e == r) {
            Some(entry) => entry.1 = now,
            None => self.served.push((r, now)),
        }
    }
}

/// The open loop: one pending arrival at a time, a FIFO of arrived jobs waiting for a slot, and
/// worker slots reused as jobs finish (so memory follows the jobs in flight, not the run).
struct OpenLoop {
    rate_per_s: f64,
    poisson: bool,
    /// A trace's arrival times, replayed instead of drawn.
    schedule: Option<crate::trace_load::SharedReplay>,
    max_in_flight: u32,
    /// Arrived jobs not yet started: (job index, arrival time).
    waiting: VecDeque<(u32, f64)>,
    free_slots: Vec<usize>,
    in_flight: u32,
    arrivals_done: bool,
}

impl OpenLoop {
    fn new(load: &Load) -> Option<OpenLoop> {
        match *load {
            Load::Closed { .. } => None,
            Load::Open {
                rate_per_s,
                poisson,
                max_in_flight,
            } => Some(OpenLoop {
                rate_per_s,
                poisson,
                schedule: None,
                max_in_flight: max_in_flight.unwrap_or(u32::MAX),
                waiting: VecDeque::new(),
                free_slots: Vec::new(),
                in_flight: 0,
                arrivals_done: false,
            }),
            Load::Trace {
                ref replay,
                max_in_flight,
            } => Some(OpenLoop {
                rate_per_s: 0.0,
                poisson: false,
                schedule: Some(replay.clone()),
                max_in_flight: max_in_flight.unwrap_or(u32::MAX),
                waiting: VecDeque::new(),
                free_slots: Vec::new(),
                in_flight: 0,
                arrivals_done: false,
            }),
        }
    }

    /// When arrival `index` comes, `now` being the one before it (0 for the first) \[s\].
    /// Poisson arrivals start with a gap of their own, as a Poisson process does, so an offered
    /// rate is the rate over the horizon however short it is (the first arrival at 0 added a job
    /// to every run); a fixed-rate generator sends its first at once, as load generators do.
    fn arrival_at<R: RandomSource>(&self, index: u64, now: f64, rng: &R) -> f64 {
        if let Some(replay) = &self.schedule {
            // Past the trace's last job, no arrival: the job count ends the arrivals.
            replay
                .arrivals_s
                .get(index as usize)
                .copied()
                .unwrap_or(f64::INFINITY)
        } else if self.poisson {
            now - (1.0 - rng.arrival(index).uniform()).ln() / self.rate_per_s
        } else {
            index as f64 / self.rate_per_s
        }
    }

    fn finished(&self) -> bool {
        self.arrivals_done && self.waiting.is_empty() && self.in_flight == 0
    }
}

/// A call's sizes as the trace logged them: its prompt as sent (grown context included), and
/// its output where the log has one (else the world's draw), never beyond `max_tokens`.
fn replayed_size(drawn: CallSize, (input, output): (f64, f64)) -> CallSize {
    CallSize {
        input: input.round().max(1.0),
        output: if output.is_finite() {
            output.round().max(1.0).min(drawn.max_tokens)
        } else {
            drawn.output
        },
        max_tokens: drawn.max_tokens,
    }
}

/// The attempt's acquire stream, opened lazily (most attempts never draw from it).
struct LazyDice<'a, R: RandomSource> {
    stream: &'a mut Option<R::Stream>,
    rng: &'a R,
    key: (u32, u32, u32),
}

impl<R: RandomSource> Dice for LazyDice<'_, R> {
    fn uniform(&mut self) -> f64 {
        let (job, step, attempt) = self.key;
        self.stream
            .get_or_insert_with(|| self.rng.acquire(job, step, attempt))
            .uniform()
    }
}

struct Sim<'w, R: RandomSource> {
    world: &'w World,
    strategy: &'w dyn Strategy,
    rng: &'w R,
    provider: Provider<'w>,
    pool: Pool,
    queue: EventQueue,
    workers: Vec<Worker<R::Stream>>,
    signals: Vec<Signal>,
    /// Woken waiters, one batch per `Event::Wake`; batches are created and consumed in order
    /// because each is created at the current instant, behind everything already due.
    wake_batches: VecDeque<Vec<u32>>,
    spare_batches: Vec<Vec<u32>>,
    /// Scratch for [`Sim::wake_batch`], kept to avoid an allocation per batch.
    empty_scopes: Vec<Scope>,
    now: f64,
    /// Closed loop: workers that have not exited.
    live: u32,
    /// Closed loop: the pause between a worker's jobs.
    think: Option<Think>,
    /// Open loop: the arrival process and the harness's queue.
    open: Option<OpenLoop>,
    blocked_in_acquire: u32,
    /// Waiting workers with a deadline pending.
    timed_waiters: u32,
    /// The strategy wants answers reported and may hedge ([`Strategy::uses_feedback`]).
    feedback: bool,
    /// The strategy reads the rate-limit headers ([`Strategy::wants_headers`]).
    wants_headers: bool,
    /// Scratch for the headers of one answer, kept to avoid an allocation per answer.
    headers: Vec<LimitHeader>,
    /// Some endpoint has a reuse cache, so workers remember where their job was served.
    caches: bool,
    /// The strategy's own retry loop, used instead of `[retry]`'s decision when it has one.
    own_retry: Option<&'w dyn RetryLoop>,
    /// The retry policy's budget and client-side throttle, when the world has them.
    budget: Option<Budget>,
    throttle: Option<Throttle>,
    tally: Tally,
    error_classes: [u64; ErrorClass::ALL.len()],
    trace: Option<trace::Book<'w>>,
    /// When tracing: per worker, the trace indices of its primary request and hedge copy in
    /// flight; `usize::MAX` for a request past the trace's limit.
    trace_slots: Vec<[usize; 2]>,
    /// The windowed recorder, when asked for.
    recorder: Option<Box<Recorder>>,
    events: u64,
    /// Per endpoint: service time cancelled hedged requests did not use \[s\].
    unused_busy_s: Vec<f64>,
    /// The most the run may hold ([`Sim::heap_bytes`]) before it stops as out of memory.
    max_bytes: u64,
    /// Events without progress at the current instant (the livelock detector).
    still: Stillness,
    longest_still: u64,
    /// Events at the current instant, progress or not, and the most seen at one instant.
    instant_events: u64,
    longest_instant: u64,
}

impl<'w, R: RandomSource> Sim<'w, R> {
    fn new(
        world: &'w World,
        strategy: &'w dyn Strategy,
        rng: &'w R,
        trace: Option<trace::Book<'w>>,
    ) -> Self {
        let closed_workers = match world.load() {
            Load::Closed { .. } => world.concurrency(),
            Load::Open { .. } | Load::Trace { .. } => 0,
        };
        let workers = (0..closed_workers).map(|_| Worker::idle()).collect();
        let mut tally = Tally {
            jobs: world.jobs().into(),
            steps_per_job: world.steps_per_job().into(),
            ..Tally::default()
        };
        if !R::REPLAYS_REFERENCE {
            tally.bound_samples();
        }
        let calls = u64::from(world.steps_per_job()) * u64::from(world.calls_per_step());
        tally.reserve_samples(world.jobs().into(), u64::from(world.jobs()) * calls);
        // A worker with no job to take never has one in flight.
        tally.concurrency_used = closed_workers.min(world.jobs()).into();
        tally.recovery = recovery_rule(world);
        if tally.recovery.is_some() {
            tally.completions_s = Some(Vec::new());
        }
        Sim {
            world,
            strategy,
            rng,
            provider: Provider::new(world),
            pool: Pool::new(world),
            queue: EventQueue::with_capacity(world.concurrency() as usize * 2 + 16),
            workers,
            signals: Vec::new(),
            wake_batches: VecDeque::new(),
            spare_batches: Vec::new(),
            empty_scopes: Vec::new(),
            now: 0.0,
            live: closed_workers,
            think: match *world.load() {
                Load::Closed { think } => think,
                Load::Open { .. } | Load::Trace { .. } => None,
            },
            open: OpenLoop::new(world.load()),
            blocked_in_acquire: 0,
            timed_waiters: 0,
            feedback: strategy.uses_feedback(),
            wants_headers: strategy.uses_feedback() && strategy.wants_headers(),
            headers: Vec::new(),
            caches: world.has_cache(),
            own_retry: strategy.retry_loop(),
            budget: world.retry().budget.map(Budget::new),
            throttle: world
                .retry()
                .throttle
                .map(|t| Throttle::new(t, world.endpoints().len())),
            tally,
            error_classes: [0; ErrorClass::ALL.len()],
            trace,
            trace_slots: Vec::new(),
            recorder: None,
            events: 0,
            unused_busy_s: vec![0.0; world.endpoints().len()],
            max_bytes: u64::MAX,
            still: Stillness::default(),
            longest_still: 0,
            instant_events: 0,
            longest_instant: 0,
        }
    }

    /// Starts the workers in index order, then processes events until every worker exits.
    fn run(&mut self, out_of_time: &dyn Fn() -> bool) -> Outcome {
        if let Some(open) = &self.open {
            let first = open.arrival_at(0, 0.0, self.rng);
            self.schedule_arrival(first);
        }
        self.record_windows(0.0);
        for w in 0..self.workers.len() {
            if w % POLL_EVERY == POLL_EVERY - 1
                && let Some(stop) = self.over_budget(out_of_time)
            {
                return stop;
            }
            self.drive(w, Next::Claim);
        }
        while !self.finished() {
            if let Some(stall) = self.stall() {
                return stall;
            }
            let Some((at, event)) = self.queue.pop() else {
                return self.stalled("the event queue is empty while workers are still running");
            };
            debug_assert!(at >= self.now, "time went backwards");
            if self.livelocked(at) {
                return Outcome::Livelock {
                    at_s: self.now,
                    jobs_done: self.tally.jobs_done,
                };
            }
            if self.recorder.is_some() {
                self.record_windows(at);
            }
            self.now = at;
            self.events += 1;
            if self.events % POLL_EVERY as u64 == 1
                && let Some(stop) = self.over_budget(out_of_time)
            {
                return stop;
            }
            match event {
                Event::Resume(w) => self.resume(w as usize),
                Event::Wake => {
                    if let Some(stop) = self.wake_batch(out_of_time) {
                        return stop;
                    }
                }
                Event::Arrival => self.arrive(),
                Event::Cooldown(r) => {
                    self.pool.cooldown_check(r as usize, self.now);
                    self.flush_signals();
                }
                Event::Hedge(w) => self.hedge_timer(w as usize),
                Event::HedgeAnswer(w) => self.hedge_answer(w as usize),
                Event::WaitDeadline(w) => self.wait_deadline(w as usize),
            }
        }
        Outcome::Ok
    }

    /// Whether the wall-clock or the memory budget is spent (polled every [`POLL_EVERY`]
    /// events, and as often while the workers start).
    fn over_budget(&self, out_of_time: &dyn Fn() -> bool) -> Option<Outcome> {
        if out_of_time() {
            return Some(Outcome::Timeout {
                at_s: self.now,
                jobs_done: self.tally.jobs_done,
            });
        }
        let held = self.heap_bytes();
        (held > self.max_bytes).then_some(Outcome::OutOfMemory {
            at_s: self.now,
            jobs_done: self.tally.jobs_done,
            held,
            limit: self.max_bytes,
        })
    }

    /// What the run holds on the heap that grows with its jobs \[bytes\]: the samples kept for
    /// percentiles, the worker slots, the open loop's queue of arrived jobs, the waiters, the
    /// pending events and the trace. Lengths, not capacities: what a growing vector reserved
    /// beyond what it wrote is not resident.
    fn heap_bytes(&self) -> u64 {
        let open = self.open.as_ref().map_or(0, |o| {
            o.waiting.len() * std::mem::size_of::<(u32, f64)>()
                + o.free_slots.len() * std::mem::size_of::<usize>()
        });
        let trace = self
            .trace
            .as_ref()
            .map_or(0, |t| t.held() * std::mem::size_of::<TraceRecord>());
        let workers = self.workers.len() * std::mem::size_of::<Worker<R::Stream>>();
        self.tally.heap_bytes()
            + (open + trace + workers) as u64
            + self.queue.heap_bytes()
            + self.pool.waiter_bytes()
    }

    /// Counts the events that made no progress at the current instant (see [`LIVELOCK_EVENTS`])
    /// before the event at `at` runs; `true` once there are that many in a row.
    fn livelocked(&mut self, at: f64) -> bool {
        let t = &self.tally;
        let progress = t.attempts
            + t.failed_attempts
            + t.acquire_waits_ms.len()
            + t.jobs_done
            + t.jobs_failed
            + t.next_job;
        if at > self.now {
            self.instant_events = 0;
        } else {
            self.instant_events += 1;
            self.longest_instant = self.longest_instant.max(self.instant_events);
        }
        if at > self.now || progress != self.still.progress {
            self.still = Stillness {
                progress,
                events: 0,
            };
            return false;
        }
        self.still.events += 1;
        self.longest_still = self.longest_still.max(self.still.events);
        self.still.events >= LIVELOCK_EVENTS
    }

    fn finished(&self) -> bool {
        match &self.open {
            None => self.live == 0,
            Some(open) => open.finished(),
        }
    }

    /// An open-loop job arrives: it joins the harness's queue, the next arrival is scheduled if
    /// it comes before the horizon and a job is left for it, and queued jobs start while slots
    /// are free. An arrival that would come at or after the horizon is never scheduled: the
    /// load was offered until the horizon, so the run lasts at least that long (as a closed
    /// loop's workers claim jobs until it), and its throughput is jobs over the time the load
    /// was offered, not over the span of a few early jobs.
    fn arrive(&mut self) {
        let now = self.now;
        let open = self.open.as_mut().expect("arrivals only in an open loop");
        let index = self.tally.next_job;
        open.waiting.push_back((index as u32, now));
        self.tally.next_job += 1;
        let next_at = open.arrival_at(index + 1, now, self.rng);
        self.schedule_arrival(next_at);
        self.start_waiting_jobs();
    }

    /// Puts the next arrival on the queue, or ends the arrivals: every job has arrived, or the
    /// next would come at or past the horizon. An infinite gap (a rate near the smallest double)
    /// is past the horizon too; past a trace's last job, the trace ended the arrivals, not the
    /// horizon.
    fn schedule_arrival(&mut self, at: f64) {
        let open = self.open.as_mut().expect("arrivals only in an open loop");
        let horizon = self.world.horizon_s();
        if self.tally.next_job >= self.tally.jobs || at >= horizon {
            open.arrivals_done = true;
            let cut = self.tally.next_job < self.tally.jobs
                && (open.schedule.is_none() || at.is_finite());
            if cut {
                self.tally.makespan_s = self.tally.makespan_s.max(horizon);
            }
        } else {
            self.queue.push(at, Event::Arrival);
        }
    }

    /// Starts queued open-loop jobs while fewer than `max_in_flight` are running.
    fn start_waiting_jobs(&mut self) {
        loop {
            let open = self.open.as_mut().expect("open loop");
            if open.in_flight >= open.max_in_flight {
                return;
            }
            let Some((job, arrived)) = open.waiting.pop_front() else {
                return;
            };
            open.in_flight += 1;
            let in_flight = u64::from(open.in_flight);
            let slot = open.free_slots.pop().unwrap_or_else(|| {
                self.workers.push(Worker::idle());
                self.workers.len() - 1
            });
            self.tally.concurrency_used = self.tally.concurrency_used.max(in_flight);
            self.begin_job(slot, job, arrived);
            self.drive(slot, Next::StartStep);
        }
    }

    fn begin_job(&mut self, w: usize, job: u32, start: f64) {
        let worker = &mut self.workers[w];
        worker.phase = Phase::Idle;
        worker.job = job;
        worker.job_start = start;
        worker.step = 0;
        worker.served.clear();
    }

    /// Every resource DEAD or REVOKED, nothing in flight that could revive one, and a worker
    /// blocked trying to acquire: no event can ever give it a lease. In a world of several
    /// pools, also: every running job blocked in an acquire, nothing in flight anywhere, and
    /// the primary pool (which every strategy falls back to) down.
    fn stall(&self) -> Option<Outcome> {
        // A wait with a deadline always ends: its strategy then gives up or waits elsewhere.
        if self.blocked_in_acquire == 0 || self.pool.active_total() > 0 || self.timed_waiters > 0 {
            return None;
        }
        if self.pool.all_down() {
            return Some(self.stalled(
                "every endpoint is DEAD or REVOKED on the client side and no request is in flight \
                 to revive one",
            ));
        }
        if self.blocked_in_acquire == self.running() && self.pool.scope_down(Scope::Primary) {
            return Some(self.stalled(
                "every endpoint of the primary pool is DEAD or REVOKED on the client side, no \
                 request is in flight to revive one, and every running job is waiting for it",
            ));
        }
        None
    }

    /// Jobs running now (closed loop: workers that have not exited).
    fn running(&self) -> u32 {
        match &self.open {
            None => self.live,
            Some(open) => open.in_flight,
        }
    }

    fn stalled(&self, cause: &str) -> Outcome {
        Outcome::Stalled {
            at_s: self.now,
            jobs_done: self.tally.jobs_done,
            cause: cause.to_string(),
        }
    }

    fn resume(&mut self, w: usize) {
        if self.is_stale_answer(w) {
            return;
        }
        let next = match self.workers[w].phase {
            Phase::InFlight => self.complete_request(w),
            Phase::RetrySleep => Next::StartAttempt,
            Phase::Thinking => Next::Claim,
            Phase::Polling => {
                self.blocked_in_acquire -= 1;
                Next::Acquire
            }
            Phase::Waiting => unreachable!("waiters are resumed by wake batches"),
            Phase::Idle | Phase::Done => unreachable!("resumed a worker that is not parked"),
        };
        self.drive(w, next);
    }

    /// Resumes the waiters of the oldest wake batch, in waiter-list order.
    ///
    /// The waiters of one batch were woken by one notification and hold consecutive sequence
    /// numbers at this instant, so running them back to back is the same as one event each.
    /// Once one of them finds nothing to lease, nothing changes until the batch ends, so the
    /// rest go back to sleep without looking: a release that wakes a thousand waiters costs one
    /// check, not a thousand events, and the pool sends them back to sleep at once. Returns
    /// the stop when a budget runs out inside the batch.
    fn wake_batch(&mut self, out_of_time: &dyn Fn() -> bool) -> Option<Outcome> {
        let mut batch = self
            .wake_batches
            .pop_front()
            .expect("a batch per wake event");
        // Scopes found empty since the last worker ran; any run may change them, so it clears
        // the set (with one scope this is the single "nothing free" flag).
        let mut empty = std::mem::take(&mut self.empty_scopes);
        empty.clear();
        // A batch can hold every worker, and a strategy may refuse each one in turn: the
        // budgets are polled inside it too.
        let mut looked_at = 0usize;
        for &woken in &batch {
            while !self.pool.rewait_rest(woken, &empty) {
                let Some(w) = self.pool.next_woken(woken) else {
                    break;
                };
                looked_at += 1;
                if looked_at % POLL_EVERY == 0
                    && let Some(stop) = self.over_budget(out_of_time)
                {
                    return Some(stop);
                }
                if self.workers[w as usize].phase != Phase::Waiting {
                    // Its wait reached a deadline after this batch was made.
                    continue;
                }
                let scope = self.pool.waiter_scope(w);
                if !empty.contains(&scope)
                    && self.pool.any_candidate_in(scope, Filter::All, self.now)
                {
                    self.pool.remove_waiter(w);
                    self.blocked_in_acquire -= 1;
                    self.clear_deadline(w as usize);
                    self.drive(w as usize, Next::Acquire);
                    empty.clear();
                } else {
                    self.pool.rewait(w);
                    if !empty.contains(&scope) {
                        empty.push(scope);
                    }
                }
            }
        }
        batch.clear();
        self.spare_batches.push(batch);
        self.empty_scopes = empty;
        None
    }

    /// A waiting worker's deadline came: it leaves the waiter list and its strategy decides
    /// what now (give up, or fall back to a wider wait). A deadline the worker no longer has
    /// (it was served, or waits under a later one) is stale and ignored.
    fn wait_deadline(&mut self, w: usize) {
        let worker = &self.workers[w];
        if worker.phase != Phase::Waiting || worker.wait_deadline != Some(self.now) {
            return;
        }
        self.pool.remove_waiter(w as u32);
        self.blocked_in_acquire -= 1;
        self.clear_deadline(w);
        self.workers[w].call_state.timed_out = true;
        self.drive(w, Next::Acquire);
    }

    fn clear_deadline(&mut self, w: usize) {
        if self.workers[w].wait_deadline.take().is_some() {
            self.timed_waiters -= 1;
        }
    }

    /// Runs worker `w` synchronously until it blocks or exits.
    fn drive(&mut self, w: usize, mut next: Next) {
        loop {
            next = match next {
                Next::Rest => self.rest(w),
                Next::Claim => self.claim(w),
                Next::StartStep => self.start_step(w),
                Next::StartAttempt => self.start_attempt(w),
                Next::StartCall => self.start_call(w),
                Next::Acquire => self.acquire(w),
                Next::Block => return,
            };
        }
    }

    /// A closed loop's worker whose job is over pauses for the world's think time before it
    /// claims the next, unless no job is left or none could start before the horizon: then it
    /// exits at once.
    fn rest(&mut self, w: usize) -> Next {
        let Some(think) = self.think else {
            return Next::Claim;
        };
        let horizon = self.world.horizon_s();
        if self.tally.next_job >= self.tally.jobs || self.now >= horizon {
            return Next::Claim;
        }
        let worker = &mut self.workers[w];
        let pause = if think.exponential {
            -(1.0 - self.rng.think(worker.job).uniform()).ln() * think.mean_s
        } else {
            think.mean_s
        };
        let until = self.now + pause;
        if until >= horizon {
            return self.retire(w, self.now);
        }
        // The job's end, for the run's makespan should the worker find nothing to claim.
        worker.job_start = self.now;
        worker.phase = Phase::Thinking;
        self.queue.push(until, Event::Resume(w as u32));
        Next::Block
    }

    /// A closed loop's worker exits; the run's work ended no earlier than `last` (its last
    /// job's end, or now).
    fn retire(&mut self, w: usize, last: f64) -> Next {
        self.workers[w].phase = Phase::Done;
        self.live -= 1;
        self.tally.makespan_s = self.tally.makespan_s.max(last);
        Next::Block
    }

    fn claim(&mut self, w: usize) -> Next {
        let now = self.now;
        if let Some(open) = &mut self.open {
            // The slot's job is over: it takes the next queued job, or frees up.
            if let Some((job, arrived)) = open.waiting.pop_front() {
                self.begin_job(w, job, arrived);
                return Next::StartStep;
            }
            open.in_flight -= 1;
            open.free_slots.push(w);
            self.workers[w].phase = Phase::Done;
            self.tally.makespan_s = self.tally.makespan_s.max(now);
            return Next::Block;
        }
        if self.tally.next_job >= self.tally.jobs || now >= self.world.horizon_s() {
            // After a pause (other workers took the last jobs), the worker's work ended with
            // its last job.
            let worker = &self.workers[w];
            let last = if worker.phase == Phase::Thinking {
                worker.job_start
            } else {
                now
            };
            return self.retire(w, last);
        }
        self.begin_job(w, self.tally.next_job as u32, now);
        self.tally.next_job += 1;
        Next::StartStep
    }

    fn start_step(&mut self, w: usize) -> Next {
        let worker = &mut self.workers[w];
        if worker.step == self.world.steps_per_job() {
            self.tally.jobs_done += 1;
            if let Some(rec) = self.recorder.as_deref_mut() {
                rec.window(self.now).jobs_done += 1;
            }
            let latency_ms = (self.now - worker.job_start) * 1000.0;
            self.tally.job_latencies_ms.push(latency_ms);
            if let Some(completions) = &mut self.tally.completions_s {
                completions.push(self.now);
            }
            return Next::Rest;
        }
        self.tally.attempted_steps += 1;
        worker.attempt = 0;
        worker.step_start = self.now;
        Next::StartAttempt
    }

    fn start_attempt(&mut self, w: usize) -> Next {
        let worker = &mut self.workers[w];
        worker.phase = Phase::Idle;
        worker.attempt += 1;
        worker.call = 0;
        let carried = if worker.attempt > 1 {
            (worker.attempt_state.route, worker.failed_retry_after_s)
        } else {
            Default::default()
        };
        worker.attempt_state = AttemptState {
            attempt: worker.attempt,
            route: carried.0,
            previous_retry_after_s: carried.1,
            ..AttemptState::default()
        };
        worker.dice = None;
        self.tally.attempts += 1;
        if worker.attempt == 1
            && let Some(budget) = &mut self.budget
        {
            budget.deposit(self.now);
        }
        Next::StartCall
    }

    fn start_call(&mut self, w: usize) -> Next {
        let worker = &mut self.workers[w];
        if worker.call == self.world.calls_per_step() {
            worker.step += 1;
            return Next::StartStep;
        }
        worker.ready_at = match (worker.call, worker.attempt, worker.step) {
            (0, 1, 0) => worker.job_start,
            (0, 1, _) => self.now,
            (0, _, _) => worker.failed_at,
            _ => self.now,
        };
        worker.acquire_start = self.now;
        let mut demand = Demand::default();
        if let Some(tokens) = self.world.tokens() {
            worker.size = tokens.call_size(self.rng, worker.job, worker.step, worker.call);
            if let Some(replay) = self.open.as_ref().and_then(|o| o.schedule.as_deref())
                && let Some(logged) = replay.size(worker.job, worker.step, worker.call)
            {
                worker.size = replayed_size(worker.size, logged);
            }
            demand = Demand {
                input: worker.size.input,
                max_tokens: worker.size.max_tokens,
            };
        }
        worker.call_state = CallState {
            started_at: self.now,
            demand,
            ..CallState::default()
        };
        Next::Acquire
    }

    fn acquire(&mut self, w: usize) -> Next {
        let now = self.now;
        let worker = &mut self.workers[w];
        let mut dice = LazyDice {
            stream: &mut worker.dice,
            rng: self.rng,
            key: (worker.job, worker.step, worker.attempt),
        };
        let decision = self.strategy.acquire(
            &mut self.pool,
            now,
            &mut worker.attempt_state,
            &mut worker.call_state,
            &mut dice,
        );
        match decision {
            Acquire::Leased(r) => {
                let wait_ms = (now - worker.acquire_start) * 1000.0;
                self.tally.acquire_waits_ms.push(wait_ms);
                if let Some(rec) = self.recorder.as_deref_mut() {
                    rec.leased(now, wait_ms);
                }
                self.send(w, r)
            }
            Acquire::Wait | Acquire::WaitFor(_) | Acquire::WaitUntil { .. } => {
                let scope = match decision {
                    Acquire::WaitFor(scope) | Acquire::WaitUntil { scope, .. } => scope,
                    _ => Scope::Primary,
                };
                worker.phase = Phase::Waiting;
                if let Acquire::WaitUntil { deadline, .. } = decision {
                    assert!(deadline > now, "a wait's deadline is in the future");
                    if worker.wait_deadline.replace(deadline).is_none() {
                        self.timed_waiters += 1;
                    }
                    self.queue.push(deadline, Event::WaitDeadline(w as u32));
                }
                self.pool.add_waiter_in(w as u32, scope);
                self.blocked_in_acquire += 1;
                Next::Block
            }
            Acquire::Sleep(delay_s) => {
                worker.phase = Phase::Polling;
                self.blocked_in_acquire += 1;
                self.queue.push(now + delay_s, Event::Resume(w as u32));
                Next::Block
            }
            Acquire::Unavailable => self.attempt_failed(w, ErrorClass::Unknown, None),
        }
    }

    /// Sends the call's request on the leased resource `r`, unless client-side throttling
    /// rejects it first.
    fn send(&mut self, w: usize, r: usize) -> Next {
        let now = self.now;
        if self.throttled(w, r) {
            self.tally.throttled_requests += 1;
            self.pool.release(r);
            self.flush_signals();
            return self.attempt_failed(w, ErrorClass::Throttled, None);
        }
        let reuse = self.caches && self.reuses(w, r);
        let size = self.world.tokens().map(|_| &self.workers[w].size);
        let arrival = self.provider.arrive(r, now, self.rng, reuse, size);
        if let (Some(throttle), Arrival::Admitted { .. }) = (&mut self.throttle, arrival) {
            throttle.note_accept(r, now);
        }
        let worker = &mut self.workers[w];
        worker.lease = r;
        worker.dispatched_at = now;
        worker.first_sent_at = now;
        if worker.attempt > 1 {
            self.tally.retry_requests += 1;
        }
        // Read before the answer may give the lease back; only a trace records it.
        let active_after_lease = self
            .trace
            .is_some()
            .then(|| self.pool.resources()[r].active());
        let next = match arrival {
            Arrival::Refused {
                refusal: Refusal::Overloaded,
                ..
            } => {
                // "Overloaded": an error without Retry-After, not a rate limit.
                self.observe(r, now, Response::Refused, None);
                self.pool.report_failure(r, now);
                self.pool.release(r);
                self.flush_signals();
                self.attempt_failed(w, ErrorClass::Upstream, None)
            }
            Arrival::Refused {
                refusal: _,
                retry_after_s,
            } => {
                self.pool.note_retry_after(r, now + retry_after_s);
                self.observe(r, now, Response::Refused, Some(retry_after_s));
                self.pool.report_failure(r, now);
                self.pool.release(r);
                self.flush_signals();
                self.attempt_failed(w, ErrorClass::RateLimit, Some(retry_after_s))
            }
            Arrival::Rejected(rejection) => {
                let class = self.rejected(r, rejection);
                self.attempt_failed(w, class, None)
            }
            Arrival::Admitted {
                latency_s,
                failure,
                tokens,
                usage,
            } => {
                worker.phase = Phase::InFlight;
                let pending = self.pending(latency_s, failure, tokens, usage);
                self.workers[w].pending = pending;
                self.queue
                    .push(now + pending.answer_s, Event::Resume(w as u32));
                self.arm_hedge(w, pending.answer_s);
                Next::Block
            }
        };
        if let Some(rec) = self.recorder.as_deref_mut() {
            rec.sent(now, &arrival);
        }
        if let Some(active_after_lease) = active_after_lease {
            self.record(w, r, active_after_lease, arrival, false);
        }
        next
    }

    /// Whether client-side throttling rejects the request `w` is about to send on `r` (the
    /// request is counted either way; the draw comes from the call's own keyed stream, taken
    /// only when the probability is positive).
    fn throttled(&mut self, w: usize, r: usize) -> bool {
        let Some(throttle) = &mut self.throttle else {
            return false;
        };
        let p = throttle.reject_probability(r, self.now);
        throttle.note_request(r, self.now);
        let worker = &self.workers[w];
        p > 0.0
            && self
                .rng
                .throttle(worker.job, worker.step, worker.attempt, worker.call)
                .uniform()
                < p
    }

    /// The in-flight request of `w` has taken its latency: report, release, go on.
    fn complete_request(&mut self, w: usize) -> Next {
        self.primary_answered(w);
        let worker = &mut self.workers[w];
        let r = worker.lease;
        let mut pending = worker.pending;
        if pending.gave_up() {
            // The client hung up: a read timeout, and the endpoint stops working on it.
            pending.failure = Some(FailureKind::Timeout);
            self.unused_busy_s[r] += pending.latency_s - pending.answer_s;
        }
        if let Some(rec) = self.recorder.as_deref_mut() {
            rec.answered(self.now, pending.failure, pending.gave_up());
        }
        self.provider.finish(r, pending.failure.is_some());
        self.account_tokens(w, r, &pending);
        if self.trace.is_some() {
            // After the request's own settlement: its headers are the limits as it leaves them.
            self.trace_answer(w, &pending);
        }
        self.record_clocks(w);
        let response = match pending.failure {
            None => Response::Success,
            Some(kind) => Response::Failed(error_class(kind)),
        };
        let usage = match (pending.failure, pending.usage) {
            (None, Some(_)) => (self.workers[w].size.input, self.workers[w].size.output),
            _ => (0.0, 0.0),
        };
        self.observe_with_usage(r, self.workers[w].dispatched_at, response, None, usage);
        match pending.failure {
            None => {
                if self.caches {
                    self.workers[w].note_served(r, self.now);
                }
                self.pool.report_ok(r, pending.tokens);
                self.tally
                    .request_latencies_ms
                    .push(pending.latency_s * 1000.0);
                self.pool.release(r);
                self.flush_signals();
                let worker = &mut self.workers[w];
                worker.phase = Phase::Idle;
                worker.call += 1;
                Next::StartCall
            }
            Some(kind) => {
                self.pool.report_failure(r, self.now);
                self.pool.release(r);
                self.flush_signals();
                self.attempt_failed(w, error_class(kind), None)
            }
        }
    }

    /// What an admitted request will do; the client's request timeout (in a world with
    /// `[tokens]`) may end it before its latency.
    fn pending(
        &self,
        latency_s: f64,
        failure: Option<FailureKind>,
        tokens: f64,
        usage: Option<Usage>,
    ) -> Pending {
        let timeout_s = usage
            .and_then(|_| self.world.tokens())
            .and_then(|t| t.request_timeout_s);
        Pending {
            latency_s,
            failure,
            tokens,
            usage,
            answer_s: timeout_s.map_or(latency_s, |t| t.min(latency_s)),
        }
    }

    /// The tokens of the call `w` is sending, in a world with `[tokens]`.
    fn call_size(&self, w: usize) -> Option<CallSize> {
        self.world.tokens().map(|_| self.workers[w].size)
    }

    /// Settles the token limits of `r` for the request of `w` that just ended, and counts its tokens, time to first token and cost: goodput and the bill on success,
    /// waste on anything else (a client timeout is billed for what was written by then).
    fn account_tokens(&mut self, w: usize, r: usize, pending: &Pending) {
        let (Some(usage), Some(size)) = (pending.usage, self.call_size(w)) else {
            return;
        };
        let sent_at = self.workers[w].dispatched_at;
        self.settle_tokens(r, pending, usage, size, sent_at);
    }

    /// A hedged request of `w` on `r`, sent at `sent_at`, cancelled now: it is settled, billed
    /// and wasted as one the client hung up on now.
    pub(super) fn account_cancelled(
        &mut self,
        w: usize,
        r: usize,
        pending: &Pending,
        sent_at: f64,
    ) {
        let (Some(usage), Some(size)) = (pending.usage, self.call_size(w)) else {
            return;
        };
        let written = usage.written_by(size.output, self.now - sent_at, pending.latency_s);
        self.provider.settle(r, &size, written, sent_at, self.now);
        self.bill_tokens(r, usage, size, written, None);
    }

    /// [`Sim::account_tokens`] of a token request; out of line so that worlds without
    /// `[tokens]` keep a small loop.
    #[inline(never)]
    fn settle_tokens(
        &mut self,
        r: usize,
        pending: &Pending,
        usage: Usage,
        size: CallSize,
        sent_at: f64,
    ) {
        let written = if pending.gave_up() {
            usage.written_by(size.output, pending.answer_s, pending.latency_s)
        } else {
            size.output
        };
        self.provider.settle(r, &size, written, sent_at, self.now);
        let ok = pending.failure.is_none().then_some(pending.latency_s);
        if ok.is_none() && !pending.gave_up() {
            // A provider's error: wasted, not billed.
            self.tally.tokens_wasted += size.input + written;
            return;
        }
        self.bill_tokens(r, usage, size, written, ok);
    }

    /// Bills a settled request on `r` of `size` that wrote `written` output tokens; `ok` is the
    /// latency of a success (goodput, time to first token and per output token), `None` for a
    /// request the client hung up on (waste).
    fn bill_tokens(
        &mut self,
        r: usize,
        usage: Usage,
        size: CallSize,
        written: f64,
        ok: Option<f64>,
    ) {
        let price = self.world.endpoints()[r].price;
        let cost = |input, output| price.map_or(0.0, |p| p.cost(input, usage.cached, output));
        let t = &mut self.tally;
        let input = size.input;
        if let Some(latency_s) = ok {
            t.input_tokens_ok += input;
            t.output_tokens_ok += written;
            t.cost += cost(input, written);
            t.ttft_ms.push(usage.ttft_s * 1000.0);
            if written > 0.0 {
                t.tpot_ms
                    .push((latency_s - usage.ttft_s) / written * 1000.0);
            }
        } else {
            t.tokens_wasted += input + written;
            t.cost += cost(input, written);
        }
    }

    /// Whether a request of `w` on `r` now finds its job's context in `r`'s reuse cache.
    pub(super) fn reuses(&self, w: usize, r: usize) -> bool {
        self.world.endpoints()[r]
            .cache
            .as_ref()
            .is_some_and(|cache| self.workers[w].reuses(r, self.now, cache.ttl_s))
    }

    /// A request on `r` was turned away: by an incident the pool hears of as a failure (and of
    /// a revoked key, which it stops using), or as too large for `r`'s limits, the client's
    /// own fault that says nothing of `r`'s health (a breaker counting it would eject an
    /// endpoint for requests no endpoint of its size could take). The lease goes back.
    /// Returns the error's class.
    fn rejected(&mut self, r: usize, rejection: Rejection) -> ErrorClass {
        let now = self.now;
        if rejection != Rejection::TooLarge {
            self.pool.report_failure(r, now);
        }
        let class = match rejection {
            Rejection::Outage => ErrorClass::Connection,
            Rejection::Revoked => {
                // A 401 tells the client the key is gone: it stops using it.
                self.pool.revoke(r);
                ErrorClass::Fatal
            }
            // A 400: no endpoint of this size limit would take it; resending cannot help.
            Rejection::TooLarge => ErrorClass::Fatal,
        };
        let response = match rejection {
            Rejection::TooLarge => Response::Invalid,
            _ => Response::Failed(class),
        };
        self.observe(r, now, response, None);
        self.pool.release(r);
        self.flush_signals();
        class
    }

    /// Tells the strategy what the request sent on `r` at `sent_at` met (before its lease is
    /// given back, so a woken waiter already sees what the strategy learnt).
    fn observe(&mut self, r: usize, sent_at: f64, response: Response, retry_after_s: Option<f64>) {
        self.observe_with_usage(r, sent_at, response, retry_after_s, (0.0, 0.0));
    }

    /// [`Sim::observe`] of an answer that reports `(input, output)` tokens of usage. Most
    /// strategies want no feedback: the check is inlined, the report is not.
    #[inline]
    fn observe_with_usage(
        &mut self,
        r: usize,
        sent_at: f64,
        response: Response,
        retry_after_s: Option<f64>,
        usage: (f64, f64),
    ) {
        if self.feedback {
            self.report_answer(r, sent_at, response, retry_after_s, usage);
        }
    }

    #[inline(never)]
    fn report_answer(
        &mut self,
        r: usize,
        sent_at: f64,
        response: Response,
        retry_after_s: Option<f64>,
        (input_tokens, output_tokens): (f64, f64),
    ) {
        self.headers.clear();
        if self.wants_headers {
            self.provider.limit_headers(r, self.now, &mut self.headers);
        }
        self.strategy.observe(&Feedback {
            resource: r,
            sent_at,
            at: self.now,
            response,
            in_flight: self.pool.active_total(),
            retry_after_s,
            input_tokens,
            output_tokens,
            headers: &self.headers,
        });
    }

    /// Records the two clocks of a served request: service (sent to answered) and the harness's
    /// own wait (intended to sent); first attempts and retries are kept apart.
    fn record_clocks(&mut self, w: usize) {
        let worker = &self.workers[w];
        let queue_wait_ms = (worker.first_sent_at - worker.ready_at) * 1000.0;
        let service_ms = (self.now - worker.first_sent_at) * 1000.0;
        let observed_ms = (self.now - worker.ready_at) * 1000.0;
        let t = &mut self.tally;
        if worker.attempt == 1 {
            t.service_ms.push(service_ms);
            t.observed_ms.push(observed_ms);
            t.queue_wait_ms.push(queue_wait_ms);
        } else {
            t.retry_observed_ms.push(observed_ms);
            t.retry_queue_wait_ms.push(queue_wait_ms);
        }
    }

    /// Applies the retry policy to a failed attempt (§3.5).
    fn attempt_failed(&mut self, w: usize, class: ErrorClass, retry_after_s: Option<f64>) -> Next {
        self.tally.failed_attempts += 1;
        self.error_classes[class as usize] += 1;
        if class == ErrorClass::Timeout {
            self.tally.timeouts += 1;
        }
        let now = self.now;
        let worker = &mut self.workers[w];
        worker.failed_at = now;
        worker.failed_retry_after_s = retry_after_s;
        let (job, step, attempt) = (worker.job, worker.step, worker.attempt);
        let rng = self.rng;
        let elapsed_s = now - worker.step_start;
        let decision = match self.own_retry {
            None => retry::decide(
                self.world.retry(),
                class,
                retry_after_s,
                attempt,
                elapsed_s,
                || rng.retry(job, step, attempt).uniform(),
            ),
            Some(own) => own.decide(
                &Failure {
                    class,
                    retry_after_s,
                    attempts_used: attempt,
                    elapsed_s,
                },
                &mut || rng.retry(job, step, attempt).uniform(),
            ),
        };
        let denied = matches!(decision, Decision::Retry(_))
            && self.budget.as_mut().is_some_and(|b| !b.try_withdraw(now));
        let decision = if denied {
            self.tally.retries_denied += 1;
            Decision::GiveUp(GiveUp::RetryBudget)
        } else {
            decision
        };
        let worker = &mut self.workers[w];
        match decision {
            Decision::GiveUp(_) => {
                worker.phase = Phase::Idle;
                self.tally.jobs_failed += 1;
                if let Some(rec) = self.recorder.as_deref_mut() {
                    rec.window(now).jobs_failed += 1;
                }
                Next::Rest
            }
            Decision::Retry(delay_s) => {
                worker.phase = Phase::RetrySleep;
                self.tally.retries_scheduled += 1;
                self.queue.push(now + delay_s, Event::Resume(w as u32));
                Next::Block
            }
        }
    }

    /// Puts the pool's requested wake-ups and cooldown checks on the queue, in order; each run
    /// of consecutive wake-ups becomes one batch event. Most releases wake nobody, so the
    /// check is inlined and the drain is not.
    #[inline]
    fn flush_signals(&mut self) {
        if self.pool.has_signals() {
            self.schedule_signals();
        }
    }

    #[inline(never)]
    fn schedule_signals(&mut self) {
        self.pool.take_signals(&mut self.signals);
        let mut batch: Option<Vec<u32>> = None;
        for i in 0..self.signals.len() {
            match self.signals[i] {
                Signal::Wake(w) => batch
                    .get_or_insert_with(|| self.spare_batches.pop().unwrap_or_default())
                    .push(w),
                Signal::Cooldown(r, at) => {
                    if let Some(batch) = batch.take() {
                        self.push_batch(batch);
                    }
                    self.queue.push(at, Event::Cooldown(r as u32));
                }
            }
        }
        if let Some(batch) = batch {
            self.push_batch(batch);
        }
        self.signals.clear();
    }

    /// Lets the recorder take the snapshots of the windows that start by `at` and note the
    /// breaker changes the events at the current instant made.
    fn record_windows(&mut self, at: f64) {
        if let Some(rec) = self.recorder.as_deref_mut() {
            let seen = Seen {
                provider: &self.provider,
                pool: &self.pool,
                strategy: self.strategy,
            };
            rec.advance(at, self.now, &seen);
        }
    }

    fn push_batch(&mut self, batch: Vec<u32>) {
        self.wake_batches.push_back(batch);
        self.queue.push(self.now, Event::Wake);
    }

    fn finish(mut self, outcome: Outcome) -> RunResult {
        let timeseries = self.recorder.take().map(|r| {
            r.finish(
                self.now,
                &Seen {
                    provider: &self.provider,
                    pool: &self.pool,
                    strategy: self.strategy,
                },
            )
        });
        let large = self.heap_bytes() >= RELEASE_OFF_PATH_BYTES;
        if outcome.is_stall() {
            // The run's clock reached the stall; its jobs still running never end, and the
            // load an open loop would have offered until the horizon never came.
            self.tally.stalled = true;
            self.tally.makespan_s = self.now;
        }
        let makespan_s = self.tally.makespan_s;
        self.tally.leases_active_at_end = self.pool.active_total().into();
        let in_flight: u32 = (0..self.unused_busy_s.len())
            .map(|e| self.provider.in_flight(e))
            .sum();
        let mut stats = self.provider.into_stats(makespan_s);
        for (stats, unused_s) in stats.iter_mut().zip(&self.unused_busy_s) {
            stats.busy_s -= unused_s;
        }
        let endpoints: Vec<EndpointReport> = self
            .world
            .endpoints()
            .iter()
            .zip(stats)
            .zip(self.pool.resources())
            .map(|((endpoint, provider), resource)| EndpointReport {
                id: endpoint.id.clone(),
                provider,
                pool: ResourceReport {
                    leases: resource.leases,
                    ok: resource.ok,
                    failed: resource.failed,
                    degraded: resource.degraded_count,
                    dead: resource.dead_count,
                    recovered: resource.recovered_count,
                    final_state: resource.raw_state(),
                },
            })
            .collect();
        self.tally.cache_hits = endpoints.iter().map(|e| e.provider.cache_hits).sum();
        let metrics = (outcome == Outcome::Ok || outcome.is_stall()).then(|| {
            // A livelocked client spins at one instant: its requests in flight never answer.
            if !matches!(outcome, Outcome::Livelock { .. }) {
                assert_eq!(in_flight, 0, "requests left in flight at the end");
                assert_eq!(self.tally.leases_active_at_end, 0, "leases left at the end");
            }
            check_invariants(&self.tally, &endpoints);
            let tallies: Vec<EndpointTally> = endpoints
                .iter()
                .map(|e| EndpointTally {
                    requests: e.provider.requests,
                    admitted: e.provider.admitted,
                    refused: e.provider.refused_capacity
                        + e.provider.refused_quota
                        + e.provider.refused_request_limit
                        + e.provider.refused_token_limit
                        + e.provider.refused_daily_limit,
                    failed: e.provider.failed + e.provider.overloaded,
                    refused_request_limit: e.provider.refused_request_limit,
                    refused_token_limit: e.provider.refused_token_limit,
                    refused_daily_limit: e.provider.refused_daily_limit,
                    busy_s: e.provider.busy_s,
                    offered_capacity_s: e.provider.offered_capacity_s,
                })
                .collect();
            metrics::compute(&mut self.tally, &tallies)
        });
        let error_classes = ErrorClass::ALL
            .iter()
            .filter(|c| self.error_classes[**c as usize] > 0)
            .map(|c| (c.name(), self.error_classes[*c as usize]))
            .collect();
        if large {
            let open = self.open.take();
            release_off_path((
                std::mem::take(&mut self.workers),
                std::mem::take(&mut self.queue),
                std::mem::take(&mut self.tally),
                open,
                self.pool.take_waiters(),
                std::mem::take(&mut self.wake_batches),
            ));
        }
        let (trace_omitted, trace) = match self.trace.take() {
            Some(book) => (book.omitted, book.close(self.now)),
            None => (0, Vec::new()),
        };
        RunResult {
            outcome,
            metrics,
            error_classes,
            endpoints,
            trace,
            trace_omitted,
            timeseries,
            events: self.events,
            longest_still_events: self.longest_still,
            longest_instant_events: self.longest_instant,
        }
    }
}

/// What the recorder sees of a run at a window's start.
struct Seen<'a> {
    provider: &'a Provider<'a>,
    pool: &'a Pool,
    strategy: &'a dyn Strategy,
}

impl Observed for Seen<'_> {
    fn endpoints(&self) -> usize {
        self.pool.resources().len()
    }
    fn snapshot(&self, e: usize, t: f64) -> Snapshot {
        Snapshot {
            in_flight: self.provider.in_flight(e),
            capacity: self.provider.effective_capacity(e, t),
            state: self.state(e),
            cooldown: self.strategy.in_cooldown(e, t),
        }
    }
    fn state(&self, e: usize) -> State {
        self.pool.resources()[e].raw_state()
    }
    fn limit(&self) -> Option<f64> {
        self.strategy.adaptive_limit()
    }
}

/// Events (and starting workers) between two polls of the budgets.
const POLL_EVERY: usize = 1_024;

/// A run holding more than this frees its workers and queues on a thread of its own: freeing
/// gigabytes takes about half a second per gigabyte, time the caller's wall budget would
/// otherwise overrun by after the run has stopped.
const RELEASE_OFF_PATH_BYTES: u64 = 64 << 20;

/// Frees the state a large run no longer needs (its workers, queues and tally) on a detached
/// thread; the process may exit before it is done.
fn release_off_path<T: Send + 'static>(state: T) {
    // Without a thread to spare, `spawn` frees the state here, as a small run does.
    let _ = std::thread::Builder::new()
        .name("simbench-free".into())
        .spawn(move || drop(state));
}

/// The span of the world's incidents and its recovery rule, if some incident ends.
fn recovery_rule(world: &World) -> Option<RecoveryRule> {
    let incidents = world.incidents();
    let end_s = incidents
        .iter()
        .map(|i| i.end_s)
        .filter(|e| e.is_finite())
        .reduce(f64::max)?;
    let start_s = incidents.iter().map(|i| i.start_s).reduce(f64::min)?;
    let rule = world.recovery();
    Some(RecoveryRule {
        start_s,
        end_s,
        window_s: rule.window_s,
        threshold: rule.threshold,
    })
}

/// The retry policy's class of an admitted request's failure.
fn error_class(kind: FailureKind) -> ErrorClass {
    match kind {
        FailureKind::Upstream => ErrorClass::Upstream,
        FailureKind::Connection => ErrorClass::Connection,
        FailureKind::Timeout => ErrorClass::Timeout,
    }
}

/// The accounting identities every finished run satisfies (reference Appendix B).
fn check_invariants(t: &Tally, endpoints: &[EndpointReport]) {
    {
        let stalled = t.next_job - t.jobs_done - t.jobs_failed;
        assert!(
            t.stalled || stalled == 0,
            "a finished run left jobs running"
        );
        assert_eq!(
            t.jobs_done + t.jobs_failed + stalled + t.jobs.saturating_sub(t.next_job),
            t.jobs,
            "done + failed + stalled + unstarted != jobs"
        );
        assert!(t.attempts >= t.attempted_steps);
        assert!(t.attempted_steps >= t.jobs_done * t.steps_per_job);
        assert!(t.retries_scheduled <= t.failed_attempts);
        for e in endpoints {
            let p = &e.provider;
            assert_eq!(
                p.admitted
                    + p.refused_capacity
                    + p.refused_quota
                    + p.refused_request_limit
                    + p.refused_token_limit
                    + p.refused_daily_limit
                    + p.overloaded
                    + p.rejected,
                p.requests
            );
            assert!(p.failed <= p.admitted);
        }
    }
}
