//! The metric catalogue and the arithmetic that turns a run's tally into metric values.
//!
//! [`CATALOGUE`] is the single source of truth: run output, report rows, JSON keys and
//! `simbench list` all read it. A metric is identified by its [`Metric`] variant; values live in
//! a [`MetricValues`] array indexed by it. No formatting happens here.

pub mod quantile;
pub mod recovery;
mod spare;

use quantile::LogHistogram;

use recovery::RecoveryRule;

use crate::world::{Feature, World};

/// Whether a larger or a smaller value is better, or neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Larger is better.
    Higher,
    /// Smaller is better.
    Lower,
    /// Context only: never ranked.
    Neutral,
}

impl Direction {
    /// The word used in listings.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Higher => "higher",
            Direction::Lower => "lower",
            Direction::Neutral => "neutral",
        }
    }
}

/// One row of the catalogue.
#[derive(Clone, Copy, Debug)]
pub struct MetricInfo {
    /// Which metric.
    pub metric: Metric,
    /// Key in JSON and CSV output.
    pub name: &'static str,
    /// Unit shown beside the value.
    pub unit: &'static str,
    /// Which way is better.
    pub direction: Direction,
    /// Only comparable between algorithms that completed a similar number of jobs.
    pub gated: bool,
    /// A latency row: ranked only among algorithms whose runs pass the validity gate (a
    /// latency dominated by the harness's own queue describes the harness).
    pub latency: bool,
    /// What it measures, in one paragraph.
    pub meaning: &'static str,
    /// The part of a world it describes, when only some worlds have it; in a world without it
    /// the metric does not apply (see [`Feature`]).
    pub needs: Option<Feature>,
    /// The least and greatest values it can take (infinite where unbounded): a limit written
    /// outside them is a slip ([`crate::threshold::vain`]).
    pub range: (f64, f64),
}

macro_rules! catalogue {
    ($( $variant:ident => $name:literal, $unit:literal, $dir:ident, $gated:literal, $latency:literal, $meaning:literal; )*) => {
        /// Every metric a run reports, in catalogue order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Metric { $( #[doc = $meaning] $variant, )* }

        /// The catalogue, in report order.
        pub const CATALOGUE: &[MetricInfo] = &[
            $( MetricInfo {
                metric: Metric::$variant,
                name: $name,
                unit: $unit,
                direction: Direction::$dir,
                gated: $gated,
                latency: $latency,
                meaning: $meaning,
                needs: needs(Metric::$variant),
                range: range(Metric::$variant),
            }, )*
        ];
    };
}

catalogue! {
    JobsDone => "jobs_done", "jobs", Higher, false, false,
        "Jobs whose every step succeeded, including those that finished after the horizon.";
    JobsFailed => "jobs_failed", "jobs", Neutral, false, false,
        "Jobs in which some step gave up after its retries.";
    JobsUnstarted => "jobs_unstarted", "jobs", Neutral, false, false,
        "Jobs never claimed before the horizon; done + failed + stalled + unstarted = jobs.";
    MakespanS => "makespan_s", "s", Neutral, false, false,
        "Simulated time when the run's work ended: its last job's end, or, with jobs left at the horizon (a closed loop's workers still claiming, an open loop's arrivals still due), the horizon plus the tail of running jobs.";
    ThroughputRps => "throughput_rps", "jobs/s", Higher, true, false,
        "Completed jobs per simulated second of the run's own makespan.";
    Requests => "requests", "requests", Neutral, false, false,
        "Requests that reached the provider, refusals included.";
    AttemptsPerCompletedJob => "attempts_per_completed_job", "attempts", Lower, true, false,
        "All step attempts (failed jobs' included) per completed job; the no-retry floor is steps_per_job.";
    AttemptInflation => "attempt_inflation", "ratio", Lower, true, false,
        "Attempts per attempted step; 1.0 means no step was ever retried.";
    FailedAttemptRate => "failed_attempt_rate", "ratio", Lower, true, false,
        "Share of attempts that failed (refused, errored or found nothing to lease).";
    RetryRate => "retry_rate", "ratio", Lower, true, false,
        "Share of attempts followed by a scheduled retry.";
    RefusalRate => "refusal_rate", "ratio", Lower, true, false,
        "Share of requests the provider refused with a 429 (capacity or quota).";
    ErrorRate => "error_rate", "ratio", Lower, true, false,
        "Share of requests admitted and then failed (503, connection reset, read timeout), or answered \"overloaded\". A request turned away unserved (an outage, a revoked key, a prompt too large for a limit) counts in neither this nor refusal_rate (its error class is `connection` or `fatal`).";
    SuccessfulJobLatencyP50Ms => "successful_job_latency_p50_ms", "ms", Lower, true, true,
        "Median time from claiming a job to the end of its last call, over completed jobs.";
    SuccessfulJobLatencyP95Ms => "successful_job_latency_p95_ms", "ms", Lower, true, true,
        "95th percentile of completed jobs' latency.";
    SuccessfulJobLatencyP99Ms => "successful_job_latency_p99_ms", "ms", Lower, true, true,
        "99th percentile of completed jobs' latency.";
    AcquireWaitP50Ms => "acquire_wait_p50_ms", "ms", Lower, true, true,
        "Median time a call spent obtaining a lease (successful acquires only).";
    AcquireWaitP99Ms => "acquire_wait_p99_ms", "ms", Lower, true, true,
        "99th percentile of the time a call spent obtaining a lease.";
    RequestLatencyP50Ms => "request_latency_p50_ms", "ms", Neutral, false, false,
        "Median provider latency of successful requests.";
    Utilization => "utilization", "ratio", Higher, true, false,
        "Busy endpoint-seconds (failed requests included) over the capacity the provider offered, counted as the reference counts it: capacity × weight × cycle before rounding, so a capacity that rounds up (never below 1) can put it above 1.";
    EndpointSpread => "endpoint_spread", "ratio", Neutral, false, false,
        "Coefficient of variation (sample) of admitted requests across endpoints.";
    LeasesActiveAtEnd => "leases_active_at_end", "leases", Lower, false, false,
        "Leases still held when the run ended; anything but 0 is a client bug.";
    JobsStalled => "jobs_stalled", "jobs", Neutral, false, false,
        "Jobs still running when the run stalled, which never end; 0 in a run that did not stall.";
    StallRate => "stall_rate", "ratio", Lower, false, false,
        "1 if the run stalled (no event could ever move a waiting job on) and 0 otherwise, so its mean is the share of seeds that stalled; a stalled run's other metrics are what it did until the stall.";
    ServiceP50Ms => "service_p50_ms", "ms", Lower, true, true,
        "Median service time (sent to answered) of first-attempt requests the provider served.";
    ServiceP95Ms => "service_p95_ms", "ms", Lower, true, true,
        "95th percentile service time of served first-attempt requests.";
    ServiceP99Ms => "service_p99_ms", "ms", Lower, true, true,
        "99th percentile service time of served first-attempt requests: the provider's tail.";
    ObservedP50Ms => "observed_p50_ms", "ms", Lower, true, true,
        "Median observed latency (intended to answered) of served first-attempt requests: service plus the harness's own queue.";
    ObservedP95Ms => "observed_p95_ms", "ms", Lower, true, true,
        "95th percentile observed latency of served first-attempt requests.";
    ObservedP99Ms => "observed_p99_ms", "ms", Lower, true, true,
        "99th percentile observed latency of served first-attempt requests: what a published p99 would say.";
    QueueWaitP50Ms => "queue_wait_p50_ms", "ms", Lower, true, true,
        "Median time a served first-attempt request waited in the harness before it was sent (arrival queue, lease wait).";
    QueueWaitP99Ms => "queue_wait_p99_ms", "ms", Lower, true, true,
        "99th percentile harness wait of served first-attempt requests.";
    QueueWaitMeanMs => "queue_wait_mean_ms", "ms", Lower, true, true,
        "Mean harness wait of served first-attempt requests (comparable with queueing theory's Wq).";
    QueueShare => "queue_share", "ratio", Lower, true, true,
        "queue_wait_p99 / observed_p99: how much of the tail the harness put there itself; the validity gate's test.";
    RefusalTimeoutRatio => "refusal_timeout_ratio", "ratio", Lower, true, false,
        "429 refusals plus read timeouts per request: the denominator a latency figure must be read beside.";
    RetryRequests => "retry_requests", "requests", Neutral, false, false,
        "Requests sent by retry attempts, counted apart from first attempts.";
    RetryObservedP99Ms => "retry_observed_p99_ms", "ms", Neutral, false, false,
        "99th percentile observed latency of served retry requests, from the failure that caused the retry (backoff included).";
    RetryQueueWaitP99Ms => "retry_queue_wait_p99_ms", "ms", Neutral, false, false,
        "99th percentile harness wait of served retry requests (backoff and lease wait).";
    RetriesDenied => "retries_denied", "attempts", Neutral, false, false,
        "Retries the retry budget ([retry.budget]) refused; each gave up its step. Not applicable without a budget.";
    ThrottledRequests => "throttled_requests", "requests", Neutral, false, false,
        "Requests client-side throttling ([retry.throttle]) rejected locally, never sent. Not applicable without throttling.";
    ConcurrencyUsed => "concurrency_used", "jobs", Neutral, false, false,
        "Jobs in flight at most: the closed loop's workers (no more than its jobs), or the open loop's peak.";
    RecoveryS => "recovery_s", "s", Lower, true, false,
        "Time from the end of the world's incidents until goodput over the recovery window is back to the threshold share of its pre-incident rate (the time to the run's end if it never is). Not applicable unless some incident ends.";
    GoodputLostJobs => "goodput_lost_jobs", "jobs", Lower, true, false,
        "Jobs the pre-incident goodput would have completed from the first incident's start until recovery, minus those completed. Not applicable unless some incident ends.";
    CacheHitRate => "cache_hit_rate", "ratio", Higher, true, false,
        "Share of admitted requests served from an endpoint's reuse cache. Not applicable without a cache.";
    InputGoodputTps => "input_goodput_tps", "tokens/s", Higher, true, false,
        "Prompt tokens of successful requests per simulated second of the makespan. Not applicable without [tokens].";
    OutputGoodputTps => "output_goodput_tps", "tokens/s", Higher, true, false,
        "Output tokens of successful requests per simulated second of the makespan. Not applicable without [tokens].";
    TtftP50Ms => "ttft_p50_ms", "ms", Lower, true, false,
        "Median time to first token of successful requests (from sending). Not applicable without [tokens].";
    TtftP99Ms => "ttft_p99_ms", "ms", Lower, true, false,
        "99th percentile time to first token of successful requests. Not applicable without [tokens].";
    TimePerOutputTokenMs => "time_per_output_token_p50_ms", "ms", Lower, true, false,
        "Median over successful requests of decode time per output token (streaming speed). Not applicable without [tokens].";
    TokensWasted => "tokens_wasted", "tokens", Lower, true, false,
        "Prompt and output tokens the provider processed for requests that did not succeed (errors, client timeouts, and a hedge's copies cancelled when another answered first). Not applicable without [tokens].";
    Cost => "cost", "cost", Lower, true, false,
        "What the run was billed: successful requests, and client timeouts for the tokens written by then, at each endpoint's price. Not applicable unless some endpoint has a price.";
    CostPerCompletedJob => "cost_per_completed_job", "cost", Lower, true, false,
        "cost / jobs_done. Not applicable unless some endpoint has a price.";
    RefusalsByRequestLimit => "refusals_by_request_limit", "requests", Neutral, false, false,
        "429s from a published limit counting requests (windows under a day). Not applicable without limits.";
    RefusalsByTokenLimit => "refusals_by_token_limit", "requests", Neutral, false, false,
        "429s from a published limit counting tokens (windows under a day). Not applicable without limits.";
    RefusalsByDailyLimit => "refusals_by_daily_limit", "requests", Neutral, false, false,
        "429s from a published limit with a window of a day or more. Not applicable without limits.";
    WallS => "wall_s", "s", Neutral, false, false,
        "Real seconds spent simulating the run (cost only).";
}

/// The feature a metric needs in order to apply to a world; `None` for most metrics.
const fn needs(metric: Metric) -> Option<Feature> {
    match metric {
        Metric::RecoveryS | Metric::GoodputLostJobs => Some(Feature::EndingIncident),
        Metric::CacheHitRate => Some(Feature::Cache),
        Metric::RetriesDenied => Some(Feature::RetryBudget),
        Metric::ThrottledRequests => Some(Feature::RetryThrottle),
        Metric::InputGoodputTps
        | Metric::OutputGoodputTps
        | Metric::TtftP50Ms
        | Metric::TtftP99Ms
        | Metric::TimePerOutputTokenMs
        | Metric::TokensWasted => Some(Feature::Tokens),
        Metric::Cost | Metric::CostPerCompletedJob => Some(Feature::Price),
        Metric::RefusalsByRequestLimit
        | Metric::RefusalsByTokenLimit
        | Metric::RefusalsByDailyLimit => Some(Feature::Limits),
        _ => None,
    }
}

/// The values `metric` can take. Shares are of a count within a count; `attempt_inflation` and
/// `attempts_per_completed_job` count at least one attempt for each step or job they divide by;
/// `queue_share` divides a queue wait by the observed latency that contains it; utilization can
/// pass 1 (see its meaning) and goodput lost can be negative (more jobs completed than before).
const fn range(metric: Metric) -> (f64, f64) {
    use Metric::*;
    match metric {
        FailedAttemptRate | RetryRate | RefusalRate | ErrorRate | StallRate | QueueShare
        | CacheHitRate => (0.0, 1.0),
        AttemptInflation | AttemptsPerCompletedJob => (1.0, f64::INFINITY),
        GoodputLostJobs => (f64::NEG_INFINITY, f64::INFINITY),
        _ => (0.0, f64::INFINITY),
    }
}

/// Number of metrics in the catalogue.
pub const N_METRICS: usize = CATALOGUE.len();

impl MetricInfo {
    /// Its range in words: "a share from 0 to 1", "never negative", "at least 1".
    pub fn describe_range(&self) -> String {
        match self.range {
            (0.0, 1.0) => "a share from 0 to 1".into(),
            (0.0, hi) if hi.is_infinite() => "never negative".into(),
            (lo, hi) if hi.is_infinite() => format!("at least {lo}"),
            (lo, hi) => format!("from {lo} to {hi}"),
        }
    }

    /// Whether the metric means anything in `world` (see [`Feature`]).
    pub fn applies_to(&self, world: &World) -> bool {
        self.needs.is_none_or(|feature| world.has(feature))
    }
}

impl Metric {
    /// The catalogue row of this metric.
    pub fn info(self) -> &'static MetricInfo {
        &CATALOGUE[self as usize]
    }
    /// Looks a metric up by its name.
    pub fn from_name(name: &str) -> Option<Metric> {
        CATALOGUE.iter().find(|m| m.name == name).map(|m| m.metric)
    }
}

/// Why `metric` has no value in a run where what it divides by, or takes a percentile of, is
/// empty (each metric has one such condition).
pub const fn undefined_reason(metric: Metric) -> &'static str {
    use Metric::*;
    match metric {
        ThroughputRps => "no simulated time passed",
        AttemptsPerCompletedJob
        | SuccessfulJobLatencyP50Ms
        | SuccessfulJobLatencyP95Ms
        | SuccessfulJobLatencyP99Ms => "no job completed",
        AttemptInflation => "no step was attempted",
        FailedAttemptRate | RetryRate => "no attempt was made",
        RefusalRate | ErrorRate | RefusalTimeoutRatio => "no request reached the provider",
        AcquireWaitP50Ms | AcquireWaitP99Ms => "no lease was acquired",
        RequestLatencyP50Ms => "no request succeeded",
        Utilization => "the provider offered no capacity",
        EndpointSpread | CacheHitRate => "no request was admitted",
        ServiceP50Ms | ServiceP95Ms | ServiceP99Ms | ObservedP50Ms | ObservedP95Ms
        | ObservedP99Ms | QueueWaitP50Ms | QueueWaitP99Ms | QueueWaitMeanMs | QueueShare => {
            "no first-attempt request was served"
        }
        RetryObservedP99Ms | RetryQueueWaitP99Ms => "no retry request was served",
        InputGoodputTps | OutputGoodputTps => "no simulated time passed",
        TtftP50Ms | TtftP99Ms => "no request succeeded",
        TimePerOutputTokenMs => "no successful request wrote a token",
        CostPerCompletedJob => "no job completed",
        RecoveryS | GoodputLostJobs => "no incident ended",
        _ => "nothing was measured",
    }
}

/// One run's metric values, indexed by [`Metric`]. A metric whose denominator or sample is
/// empty in this run is *undefined*: it reads as 0 (the reference's 0/0), and the report shows
/// it as not applicable with [`undefined_reason`] instead of a number.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricValues {
    values: [f64; N_METRICS],
    /// Bit `m` set: metric `m` is undefined in this run.
    undefined: u64,
}

const _: () = assert!(N_METRICS <= u64::BITS as usize, "one bit per metric");

impl MetricValues {
    /// Every metric undefined (reading as 0): the start of a vector filled with [`Self::set`].
    pub fn all_undefined() -> MetricValues {
        MetricValues {
            values: [0.0; N_METRICS],
            undefined: u64::MAX >> (u64::BITS as usize - N_METRICS),
        }
    }

    /// The value of `metric` (0 when it is undefined).
    pub fn get(&self, metric: Metric) -> f64 {
        self.values[metric as usize]
    }
    /// The value of `metric`, or `None` when this run has nothing to compute it from.
    pub fn value(&self, metric: Metric) -> Option<f64> {
        self.is_defined(metric).then(|| self.get(metric))
    }
    /// Whether this run has a value for `metric`.
    pub fn is_defined(&self, metric: Metric) -> bool {
        self.undefined & (1 << metric as u32) == 0
    }
    /// Sets the value of `metric`, which is then defined (used for the wall time, measured
    /// outside the core).
    pub fn set(&mut self, metric: Metric, value: f64) {
        self.values[metric as usize] = value;
        self.undefined &= !(1 << metric as u32);
    }
    /// Marks `metric` undefined in this run; it reads as 0.
    pub(crate) fn undefine(&mut self, metric: Metric) {
        self.values[metric as usize] = 0.0;
        self.undefined |= 1 << metric as u32;
    }
    /// Whether two runs simulated the same thing: every metric but the wall time equal, bit for
    /// bit, and the same ones undefined.
    pub fn same_outcome(&self, other: &MetricValues) -> bool {
        let wall = 1u64 << Metric::WallS as u32;
        (self.undefined | wall) == (other.undefined | wall)
            && CATALOGUE.iter().all(|info| {
                info.metric == Metric::WallS
                    || self.get(info.metric).to_bits() == other.get(info.metric).to_bits()
            })
    }
    /// Feeds `state` what [`MetricValues::same_outcome`] compares, so that runs with the same
    /// outcome hash alike (a grid finds its identical contestants by hash, then compares).
    pub fn hash_outcome<H: std::hash::Hasher>(&self, state: &mut H) {
        let wall = 1u64 << Metric::WallS as u32;
        state.write_u64(self.undefined | wall);
        for info in CATALOGUE {
            if info.metric != Metric::WallS {
                state.write_u64(self.get(info.metric).to_bits());
            }
        }
    }
    /// `(info, value)` pairs in catalogue order, undefined values reading as 0.
    pub fn iter(&self) -> impl Iterator<Item = (&'static MetricInfo, f64)> + '_ {
        CATALOGUE.iter().zip(self.values.iter().copied())
    }
    /// `(info, value)` pairs in catalogue order, `None` where undefined.
    pub fn iter_defined(&self) -> impl Iterator<Item = (&'static MetricInfo, Option<f64>)> + '_ {
        CATALOGUE.iter().map(|info| (info, self.value(info.metric)))
    }
}

/// What a run counted, before any ratio or percentile is taken.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Jobs in the world.
    pub jobs: u64,
    /// Steps per job.
    pub steps_per_job: u64,
    /// Jobs claimed (the next job index).
    pub next_job: u64,
    /// The run stalled: the jobs claimed but neither done nor failed never end.
    pub stalled: bool,
    /// Jobs completed.
    pub jobs_done: u64,
    /// Jobs failed.
    pub jobs_failed: u64,
    /// Step attempts made.
    pub attempts: u64,
    /// Step attempts that failed.
    pub failed_attempts: u64,
    /// Retries scheduled.
    pub retries_scheduled: u64,
    /// Steps started.
    pub attempted_steps: u64,
    /// Simulated end time \[s\].
    pub makespan_s: f64,
    /// Latencies of completed jobs \[ms\].
    pub job_latencies_ms: Samples,
    /// Acquire waits of successful acquires \[ms\].
    pub acquire_waits_ms: Samples,
    /// Latencies of successful requests \[ms\].
    pub request_latencies_ms: Samples,
    /// Leases held at the end.
    pub leases_active_at_end: u64,
    /// Service times of served first-attempt requests \[ms\].
    pub service_ms: Samples,
    /// Observed latencies (intended to answered) of served first-attempt requests \[ms\].
    pub observed_ms: Samples,
    /// Harness waits (intended to sent) of served first-attempt requests \[ms\].
    pub queue_wait_ms: Samples,
    /// Requests sent by retry attempts.
    pub retry_requests: u64,
    /// Observed latencies of served retry requests \[ms\].
    pub retry_observed_ms: Samples,
    /// Harness waits of served retry requests \[ms\].
    pub retry_queue_wait_ms: Samples,
    /// Prompt tokens of successful requests.
    pub input_tokens_ok: f64,
    /// Output tokens of successful requests.
    pub output_tokens_ok: f64,
    /// Tokens processed for requests that did not succeed.
    pub tokens_wasted: f64,
    /// What the run was billed.
    pub cost: f64,
    /// Time to first token of successful requests \[ms\].
    pub ttft_ms: Samples,
    /// Decode time per output token of successful requests \[ms\].
    pub tpot_ms: Samples,
    /// Admitted requests that failed with a read timeout.
    pub timeouts: u64,
    /// Retries the retry budget refused.
    pub retries_denied: u64,
    /// Requests rejected locally by client-side throttling.
    pub throttled_requests: u64,
    /// Most jobs in flight at once.
    pub concurrency_used: u64,
    /// Completion times of jobs, in order \[s\]; kept only when a world's incidents end (for
    /// the recovery metrics).
    pub completions_s: Option<Vec<f64>>,
    /// The recovery rule, when some incident ends.
    pub recovery: Option<RecoveryRule>,
    /// Admitted requests served from a reuse cache.
    pub cache_hits: u64,
}

impl Tally {
    /// Makes every sample bounded ([`Samples::bounded`]): its memory stops growing past
    /// [`EXACT_CAP`] values, its percentiles then within [`quantile::RELATIVE_ERROR`].
    pub fn bound_samples(&mut self) {
        for s in self.samples_mut() {
            *s = Samples::bounded();
        }
    }

    /// Reserves room for the values a run of `jobs` jobs of `calls` calls each will certainly
    /// push, so the samples do not grow by doubling (and copying) through the run: its job
    /// latencies, and the latency, service time and observed time of every first attempt.
    pub fn reserve_samples(&mut self, jobs: u64, calls: u64) {
        self.job_latencies_ms.reserve(jobs);
        for s in [
            &mut self.request_latencies_ms,
            &mut self.service_ms,
            &mut self.observed_ms,
        ] {
            s.reserve(calls);
        }
    }

    fn samples_mut(&mut self) -> [&mut Samples; 10] {
        [
            &mut self.job_latencies_ms,
            &mut self.acquire_waits_ms,
            &mut self.request_latencies_ms,
            &mut self.service_ms,
            &mut self.observed_ms,
            &mut self.queue_wait_ms,
            &mut self.retry_observed_ms,
            &mut self.retry_queue_wait_ms,
            &mut self.ttft_ms,
            &mut self.tpot_ms,
        ]
    }

    /// Bytes of the samples and completion times, which grow with the jobs.
    pub fn heap_bytes(&self) -> u64 {
        let samples = [
            &self.job_latencies_ms,
            &self.acquire_waits_ms,
            &self.request_latencies_ms,
            &self.service_ms,
            &self.observed_ms,
            &self.queue_wait_ms,
            &self.retry_observed_ms,
            &self.retry_queue_wait_ms,
            &self.ttft_ms,
            &self.tpot_ms,
        ];
        let completions = self
            .completions_s
            .as_ref()
            .map_or(0, |c| (c.len() * std::mem::size_of::<f64>()) as u64);
        samples.iter().map(|s| s.heap_bytes()).sum::<u64>() + completions
    }
}

/// Per-endpoint counters the metrics need.
#[derive(Clone, Copy, Debug, Default)]
pub struct EndpointTally {
    /// Requests, refusals included.
    pub requests: u64,
    /// Admitted requests.
    pub admitted: u64,
    /// 429 refusals of any kind (capacity, bucket, published limits).
    pub refused: u64,
    /// Admitted requests that failed, and "overloaded" answers.
    pub failed: u64,
    /// 429s from a published request limit (windows under a day).
    pub refused_request_limit: u64,
    /// 429s from a published token limit (windows under a day).
    pub refused_token_limit: u64,
    /// 429s from a published limit of a day or more.
    pub refused_daily_limit: u64,
    /// Busy time \[s\].
    pub busy_s: f64,
    /// Offered capacity \[capacity·s\].
    pub offered_capacity_s: f64,
}

/// Non-zero values a bounded sample keeps exactly before it bins them (512 KiB of them): runs
/// of up to some ten thousand jobs keep every percentile exact.
pub const EXACT_CAP: usize = 1 << 16;

/// A sample for percentiles. Exact zeros are only counted, since most acquire waits are zero.
///
/// A *bounded* sample (every sample of a run on the native random-number scheme) keeps its
/// first [`EXACT_CAP`] non-zero values; the next one moves them all into a
/// [`LogHistogram`], which counts every later value in memory that does not grow with the run.
/// From then on its percentiles are within relative [`quantile::RELATIVE_ERROR`] (about 0.1 %)
/// of the exact ones and its mean is the exact mean up to the order of summation. An unbounded
/// sample (the reference scheme, whose exact replay needs every value) keeps every value.
#[derive(Clone, Debug)]
pub struct Samples {
    zeros: u64,
    /// The non-zero values as [`order_key`]s, in the order they came until a percentile
    /// reorders them: integers select faster than doubles under `total_cmp`, in the same order.
    values: Vec<u64>,
    /// How many non-zero values are kept before the next one bins them all: [`EXACT_CAP`] for a
    /// bounded sample, `usize::MAX` for an unbounded one, 0 once binned (one compare a push).
    exact_until: usize,
    /// The non-zero values once a bounded sample has binned them, and their sum.
    binned: Option<Box<(LogHistogram, f64)>>,
}

/// A finished sample's buffer goes to the next run's samples on this thread ([`spare`]).
impl Drop for Samples {
    fn drop(&mut self) {
        spare::give(std::mem::take(&mut self.values));
    }
}

/// An empty unbounded sample.
impl Default for Samples {
    fn default() -> Self {
        Samples {
            zeros: 0,
            values: Vec::new(),
            exact_until: usize::MAX,
            binned: None,
        }
    }
}

impl Samples {
    /// An empty sample that bins its values past [`EXACT_CAP`].
    pub fn bounded() -> Samples {
        Samples {
            zeros: 0,
            values: Vec::new(),
            exact_until: EXACT_CAP,
            binned: None,
        }
    }
    /// Makes room for `n` values in all, at most [`EXACT_CAP`] (what a bounded sample keeps
    /// exactly; an unbounded one grows on from there as it must).
    pub fn reserve(&mut self, n: u64) {
        let n = usize::try_from(n).unwrap_or(usize::MAX).min(EXACT_CAP);
        if self.values.capacity() == 0 {
            self.values = spare::take(n);
        }
        self.values.reserve(n.saturating_sub(self.values.len()));
    }
    /// Adds one observation.
    #[inline]
    pub fn push(&mut self, value: f64) {
        if value == 0.0 {
            self.zeros += 1;
        } else if self.values.len() < self.exact_until {
            if self.values.len() == self.values.capacity() {
                self.grow();
            }
            self.values.push(order_key(value));
        } else {
            self.push_binned(value);
        }
    }
    /// Makes room for one more value: a kept buffer ([`spare`]) for a sample that has none,
    /// else the vector's own doubling.
    #[cold]
    fn grow(&mut self) {
        if self.values.capacity() == 0 {
            self.values = spare::take(1);
        }
        self.values.reserve(1);
    }
    /// Adds a non-zero observation to the histogram, binning the kept values first.
    #[inline(never)]
    fn push_binned(&mut self, value: f64) {
        let binned = match &mut self.binned {
            Some(binned) => &mut **binned,
            None => self.bin(),
        };
        binned.0.add(value);
        binned.1 += value;
    }
    /// Moves the kept values into a histogram and frees them.
    #[cold]
    fn bin(&mut self) -> &mut (LogHistogram, f64) {
        let mut histogram = LogHistogram::default();
        let mut sum = 0.0;
        for &k in &self.values {
            let v = from_order_key(k);
            histogram.add(v);
            sum += v;
        }
        // Freed, not kept (`spare`): a run this long gains nothing from the next one's reuse,
        // and would hold the buffers of all its binned samples to its end.
        self.values = Vec::new();
        self.exact_until = 0;
        self.binned.insert(Box::new((histogram, sum)))
    }
    /// Whether the values are binned: percentiles are then within
    /// [`quantile::RELATIVE_ERROR`] of the exact ones.
    pub fn is_approximate(&self) -> bool {
        self.binned.is_some()
    }
    /// Bytes of the stored values (written ones: what a growing vector reserved beyond them
    /// is not resident), or of the histogram's counts.
    pub fn heap_bytes(&self) -> u64 {
        let binned = self.binned.as_ref().map_or(0, |b| b.0.heap_bytes());
        (self.values.len() * std::mem::size_of::<u64>()) as u64 + binned
    }
    /// Number of observations.
    pub fn len(&self) -> u64 {
        let binned = self.binned.as_ref().map_or(0, |b| b.0.len());
        self.zeros + self.values.len() as u64 + binned
    }
    /// Whether nothing was observed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Arithmetic mean; 0 if empty.
    pub fn mean(&self) -> f64 {
        let n = self.len();
        if n == 0 {
            return 0.0;
        }
        let sum = match &self.binned {
            Some(binned) => binned.1,
            None => self.values.iter().map(|&k| from_order_key(k)).sum::<f64>(),
        };
        sum / n as f64
    }

    /// Linear-interpolated percentile (type 7), `q` in `[0, 1]`; 0 if empty.
    pub fn percentile(&mut self, q: f64) -> f64 {
        self.percentiles([q])[0]
    }

    /// Several percentiles at once, `qs` ascending: each selection runs on the part of the
    /// sample above the previous one, so three percentiles cost about one pass, not six.
    /// Linear time; it reorders the stored values.
    pub fn percentiles<const N: usize>(&mut self, qs: [f64; N]) -> [f64; N] {
        let n = self.len();
        if n == 0 {
            return [0.0; N];
        }
        let negatives = match &self.binned {
            Some(binned) => binned.0.negatives(),
            None => self.values.iter().filter(|&&k| is_negative_key(k)).count() as u64,
        };
        let mut from = None;
        let mut out = [0.0; N];
        for (slot, q) in out.iter_mut().zip(qs) {
            let pos = (n - 1) as f64 * q.clamp(0.0, 1.0);
            let lo = pos.floor() as u64;
            let hi = (lo + 1).min(n - 1);
            let w = pos - lo as f64;
            let x_lo = self.nth(lo, negatives, &mut from);
            let x_hi = self.nth(hi, negatives, &mut from);
            *slot = x_lo * (1.0 - w) + x_hi * w;
        }
        out
    }

    /// The `i`-th smallest observation (negative values sort before the zeros), selecting
    /// within `values[from..]`, `from` being the rank the last selection put in place: every
    /// value before it is no larger than any after it, which each selection keeps true. Ranks
    /// must come in ascending order. The rank just after the last selected one is the least of
    /// the values after it, a scan instead of a selection (a percentile interpolates between two
    /// neighbouring ranks).
    fn nth(&mut self, i: u64, negatives: u64, from: &mut Option<usize>) -> f64 {
        let k = if i < negatives {
            i
        } else if i < negatives + self.zeros {
            return 0.0;
        } else {
            i - self.zeros
        };
        if let Some(binned) = &self.binned {
            return binned.0.value_at(k);
        }
        let k = k as usize;
        let key = match *from {
            Some(last) if last + 1 == k => {
                let tail = &mut self.values[k..];
                let least = (0..tail.len())
                    .min_by_key(|&j| tail[j])
                    .expect("a rank within the values");
                tail.swap(0, least);
                tail[0]
            }
            last => {
                let start = last.unwrap_or(0).min(k);
                *self.values[start..].select_nth_unstable(k - start).1
            }
        };
        *from = Some(k);
        from_order_key(key)
    }
}

/// A key whose unsigned order is `f64::total_cmp`'s: a negative value has every bit flipped,
/// any other only its sign bit.
fn order_key(v: f64) -> u64 {
    let bits = v.to_bits();
    bits ^ ((((bits as i64) >> 63) as u64) | (1 << 63))
}

/// Whether an [`order_key`] is a negative number's (`from_order_key(k) < 0.0`): the keys from
/// negative infinity's to the least negative subnormal's, a range, so counting them is two
/// operations a value (negative NaNs lie below it, positive values above).
fn is_negative_key(k: u64) -> bool {
    const LOWEST: u64 = !f64::NEG_INFINITY.to_bits();
    const HIGHEST: u64 = !(-f64::from_bits(1)).to_bits();
    k.wrapping_sub(LOWEST) <= HIGHEST - LOWEST
}

/// The value of an [`order_key`].
fn from_order_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k ^ (1 << 63) } else { !k })
}

/// `num / den`, or 0 when that is not a number: a zero denominator (nothing to divide by, as
/// the reference reads 0/0), or one so small next to `num` that the quotient overflows (an
/// offered capacity that underflowed, in a world whose capacity factors are near the smallest
/// doubles). Every metric is finite.
fn ratio(num: f64, den: f64) -> f64 {
    let q = num / den;
    if den == 0.0 || !q.is_finite() { 0.0 } else { q }
}

/// Computes every metric but `wall_s` (left at 0) from a run's tally, marking undefined those
/// with nothing to compute them from.
pub fn compute(tally: &mut Tally, endpoints: &[EndpointTally]) -> MetricValues {
    use Metric::*;
    let [job_p50, job_p95, job_p99] = tally.job_latencies_ms.percentiles([0.50, 0.95, 0.99]);
    let [wait_p50, wait_p99] = tally.acquire_waits_ms.percentiles([0.50, 0.99]);
    let request_p50 = tally.request_latencies_ms.percentile(0.50);
    let service = tally.service_ms.percentiles([0.50, 0.95, 0.99]);
    let observed = tally.observed_ms.percentiles([0.50, 0.95, 0.99]);
    let queue_wait = tally.queue_wait_ms.percentiles([0.50, 0.99]);
    let retry_observed_p99 = tally.retry_observed_ms.percentile(0.99);
    let retry_queue_wait_p99 = tally.retry_queue_wait_ms.percentile(0.99);
    let t = &*tally;
    let sum = |f: fn(&EndpointTally) -> f64| endpoints.iter().map(f).sum::<f64>();
    let requests = sum(|e| e.requests as f64);
    let done = t.jobs_done as f64;
    let attempts = t.attempts as f64;
    let mut v = MetricValues {
        values: [0.0; N_METRICS],
        undefined: 0,
    };
    let mut put = |m: Metric, x: f64| v.set(m, x);
    put(Metric::JobsDone, done);
    put(Metric::JobsFailed, t.jobs_failed as f64);
    put(
        Metric::JobsUnstarted,
        t.jobs.saturating_sub(t.next_job) as f64,
    );
    put(
        Metric::JobsStalled,
        (t.next_job - t.jobs_done - t.jobs_failed) as f64,
    );
    put(Metric::StallRate, f64::from(u8::from(t.stalled)));
    put(Metric::MakespanS, t.makespan_s);
    put(Metric::ThroughputRps, ratio(done, t.makespan_s));
    put(Metric::Requests, requests);
    put(Metric::AttemptsPerCompletedJob, ratio(attempts, done));
    put(
        Metric::AttemptInflation,
        ratio(attempts, t.attempted_steps as f64),
    );
    put(
        Metric::FailedAttemptRate,
        ratio(t.failed_attempts as f64, attempts),
    );
    put(
        Metric::RetryRate,
        ratio(t.retries_scheduled as f64, attempts),
    );
    put(
        Metric::RefusalRate,
        ratio(sum(|e| e.refused as f64), requests),
    );
    put(Metric::ErrorRate, ratio(sum(|e| e.failed as f64), requests));
    put(Metric::SuccessfulJobLatencyP50Ms, job_p50);
    put(Metric::SuccessfulJobLatencyP95Ms, job_p95);
    put(Metric::SuccessfulJobLatencyP99Ms, job_p99);
    put(Metric::AcquireWaitP50Ms, wait_p50);
    put(Metric::AcquireWaitP99Ms, wait_p99);
    put(Metric::RequestLatencyP50Ms, request_p50);
    put(
        Metric::Utilization,
        ratio(sum(|e| e.busy_s), sum(|e| e.offered_capacity_s)),
    );
    put(Metric::EndpointSpread, spread(endpoints));
    put(Metric::LeasesActiveAtEnd, t.leases_active_at_end as f64);
    put(Metric::ServiceP50Ms, service[0]);
    put(Metric::ServiceP95Ms, service[1]);
    put(Metric::ServiceP99Ms, service[2]);
    put(Metric::ObservedP50Ms, observed[0]);
    put(Metric::ObservedP95Ms, observed[1]);
    put(Metric::ObservedP99Ms, observed[2]);
    put(Metric::QueueWaitP50Ms, queue_wait[0]);
    put(Metric::QueueWaitP99Ms, queue_wait[1]);
    put(Metric::QueueWaitMeanMs, t.queue_wait_ms.mean());
    put(Metric::QueueShare, ratio(queue_wait[1], observed[2]));
    put(
        Metric::RefusalTimeoutRatio,
        ratio(sum(|e| e.refused as f64) + t.timeouts as f64, requests),
    );
    put(Metric::RetryRequests, t.retry_requests as f64);
    put(Metric::RetryObservedP99Ms, retry_observed_p99);
    put(Metric::RetryQueueWaitP99Ms, retry_queue_wait_p99);
    put(Metric::RetriesDenied, t.retries_denied as f64);
    put(Metric::ThrottledRequests, t.throttled_requests as f64);
    put(Metric::ConcurrencyUsed, t.concurrency_used as f64);
    if let (Some(rule), Some(completions)) = (&t.recovery, &t.completions_s) {
        let (recovery_s, lost) = recovery::measure(rule, completions, t.makespan_s);
        put(Metric::RecoveryS, recovery_s);
        put(Metric::GoodputLostJobs, lost);
    }
    put(
        Metric::CacheHitRate,
        ratio(t.cache_hits as f64, sum(|e| e.admitted as f64)),
    );
    let [ttft_p50, ttft_p99] = tally.ttft_ms.percentiles([0.50, 0.99]);
    let tpot_p50 = tally.tpot_ms.percentile(0.50);
    let t = &*tally;
    put(
        Metric::InputGoodputTps,
        ratio(t.input_tokens_ok, t.makespan_s),
    );
    put(
        Metric::OutputGoodputTps,
        ratio(t.output_tokens_ok, t.makespan_s),
    );
    put(Metric::TtftP50Ms, ttft_p50);
    put(Metric::TtftP99Ms, ttft_p99);
    put(Metric::TimePerOutputTokenMs, tpot_p50);
    put(Metric::TokensWasted, t.tokens_wasted);
    put(Metric::Cost, t.cost);
    put(Metric::CostPerCompletedJob, ratio(t.cost, done));
    put(
        Metric::RefusalsByRequestLimit,
        sum(|e| e.refused_request_limit as f64),
    );
    put(
        Metric::RefusalsByTokenLimit,
        sum(|e| e.refused_token_limit as f64),
    );
    put(
        Metric::RefusalsByDailyLimit,
        sum(|e| e.refused_daily_limit as f64),
    );
    let served_first = !t.service_ms.is_empty();
    let empty = [
        (ThroughputRps, t.makespan_s <= 0.0),
        (AttemptsPerCompletedJob, t.jobs_done == 0),
        (SuccessfulJobLatencyP50Ms, t.job_latencies_ms.is_empty()),
        (SuccessfulJobLatencyP95Ms, t.job_latencies_ms.is_empty()),
        (SuccessfulJobLatencyP99Ms, t.job_latencies_ms.is_empty()),
        (AttemptInflation, t.attempted_steps == 0),
        (FailedAttemptRate, t.attempts == 0),
        (RetryRate, t.attempts == 0),
        (RefusalRate, requests == 0.0),
        (ErrorRate, requests == 0.0),
        (RefusalTimeoutRatio, requests == 0.0),
        (AcquireWaitP50Ms, t.acquire_waits_ms.is_empty()),
        (AcquireWaitP99Ms, t.acquire_waits_ms.is_empty()),
        (RequestLatencyP50Ms, t.request_latencies_ms.is_empty()),
        (Utilization, sum(|e| e.offered_capacity_s) <= 0.0),
        (EndpointSpread, sum(|e| e.admitted as f64) == 0.0),
        (CacheHitRate, sum(|e| e.admitted as f64) == 0.0),
        (ServiceP50Ms, !served_first),
        (ServiceP95Ms, !served_first),
        (ServiceP99Ms, !served_first),
        (ObservedP50Ms, t.observed_ms.is_empty()),
        (ObservedP95Ms, t.observed_ms.is_empty()),
        (ObservedP99Ms, t.observed_ms.is_empty()),
        (QueueWaitP50Ms, t.queue_wait_ms.is_empty()),
        (QueueWaitP99Ms, t.queue_wait_ms.is_empty()),
        (QueueWaitMeanMs, t.queue_wait_ms.is_empty()),
        (QueueShare, t.observed_ms.is_empty()),
        (RetryObservedP99Ms, t.retry_observed_ms.is_empty()),
        (RetryQueueWaitP99Ms, t.retry_queue_wait_ms.is_empty()),
        (InputGoodputTps, t.makespan_s <= 0.0),
        (OutputGoodputTps, t.makespan_s <= 0.0),
        (TtftP50Ms, t.ttft_ms.is_empty()),
        (TtftP99Ms, t.ttft_ms.is_empty()),
        (TimePerOutputTokenMs, t.tpot_ms.is_empty()),
        (CostPerCompletedJob, t.jobs_done == 0),
    ];
    for (metric, nothing) in empty {
        if nothing {
            v.undefine(metric);
        }
    }
    v
}

/// Sample coefficient of variation of admitted counts; 0 with fewer than 2 endpoints or no load.
fn spread(endpoints: &[EndpointTally]) -> f64 {
    let n = endpoints.len();
    if n < 2 {
        return 0.0;
    }
    let admitted: Vec<f64> = endpoints.iter().map(|e| e.admitted as f64).collect();
    let mean = admitted.iter().sum::<f64>() / n as f64;
    if mean == 0.0 {
        return 0.0;
    }
    sample_stdev(&admitted) / mean
}

/// Sample standard deviation (n − 1); 0 for fewer than two values.
pub fn sample_stdev(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n < 2 {
        return 0.0;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    (ss / (n - 1) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_outcome_hash_sees_what_same_outcome_compares() {
        use std::hash::Hasher;
        let hash = |m: &MetricValues| {
            let mut state = std::hash::DefaultHasher::new();
            m.hash_outcome(&mut state);
            state.finish()
        };
        let mut a = MetricValues::all_undefined();
        a.set(Metric::JobsDone, 10.0);
        a.set(Metric::WallS, 0.5);
        let mut b = a.clone();
        b.set(Metric::WallS, 0.7);
        assert!(a.same_outcome(&b));
        assert_eq!(hash(&a), hash(&b), "the wall time is not the outcome");
        let mut c = a.clone();
        c.set(Metric::JobsDone, 11.0);
        assert!(!a.same_outcome(&c));
        assert_ne!(hash(&a), hash(&c));
        let mut d = a.clone();
        d.set(Metric::ErrorRate, 0.0);
        assert!(
            !a.same_outcome(&d),
            "a defined zero is not an undefined value"
        );
        assert_ne!(hash(&a), hash(&d));
    }

    use super::*;

    fn samples(xs: &[f64]) -> Samples {
        let mut s = Samples::default();
        xs.iter().for_each(|&x| s.push(x));
        s
    }

    /// Reserving room is capped at what a bounded sample keeps exactly, counts as nothing held,
    /// and changes no value read back.
    #[test]
    fn reserving_room_is_capped_and_changes_nothing() {
        let xs: Vec<f64> = (0..5000)
            .map(|i| f64::from((i * 7919) % 5000) - 50.0)
            .collect();
        let mut reserved = Samples::bounded();
        reserved.reserve(u64::MAX);
        assert_eq!(reserved.values.capacity(), EXACT_CAP);
        assert_eq!(reserved.heap_bytes(), 0);
        xs.iter().for_each(|&x| reserved.push(x));
        let qs = [0.0, 0.5, 0.95, 0.99, 1.0];
        assert_eq!(reserved.percentiles(qs), samples(&xs).percentiles(qs));
        assert_eq!(reserved.len(), xs.len() as u64);
    }

    /// A bounded sample past its cap: every percentile within the relative error of the exact
    /// one (a lognormal-like latency sample with zeros and a slow tail), the mean and count
    /// exact, the memory that of the histogram.
    #[test]
    fn a_bounded_sample_past_its_cap_is_within_its_error_bound() {
        let n = 3 * EXACT_CAP + 17;
        let xs: Vec<f64> = (0..n)
            .map(|i| {
                let u = ((i as f64 + 0.5) * 0.754_877_666).fract();
                if i % 11 == 0 {
                    0.0
                } else if i % 97 == 0 {
                    30_000.0 * (1.0 + u) // the tail
                } else {
                    (6.0 + 1.2 * (u - 0.5) * 3.0).exp()
                }
            })
            .collect();
        let mut exact = samples(&xs);
        let mut bounded = Samples::bounded();
        xs.iter().for_each(|&x| bounded.push(x));
        assert!(bounded.is_approximate() && !exact.is_approximate());
        assert_eq!(bounded.len(), exact.len());
        assert!(bounded.heap_bytes() < (EXACT_CAP as u64) * 8 / 2);
        let rel = |a: f64, b: f64| ((a - b) / b).abs();
        assert!(rel(bounded.mean(), exact.mean()) < 1e-12);
        let qs = [0.0, 0.05, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0];
        let e = exact.percentiles(qs);
        let b = bounded.percentiles(qs);
        for ((q, e), b) in qs.iter().zip(e).zip(b) {
            if e == 0.0 {
                assert_eq!(b, 0.0, "q {q}");
            } else {
                assert!(
                    rel(b, e) <= quantile::RELATIVE_ERROR * (1.0 + 1e-9),
                    "q {q}: {b} for {e}"
                );
            }
        }
        // Up to the cap a bounded sample is exact.
        let mut small = Samples::bounded();
        xs[..EXACT_CAP].iter().for_each(|&x| small.push(x));
        assert!(!small.is_approximate());
        assert_eq!(
            small.percentiles([0.5, 0.99]),
            samples(&xs[..EXACT_CAP]).percentiles([0.5, 0.99])
        );
    }

    /// Order keys sort as `total_cmp` does and give back every value, signed zeros, extremes
    /// and NaN included.
    #[test]
    fn order_keys_keep_the_order_and_the_value() {
        let mut values = vec![
            -f64::INFINITY,
            -1e300,
            -2.5,
            -f64::MIN_POSITIVE,
            -5e-324,
            -0.0,
            0.0,
            5e-324,
            1.0,
            1.5,
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
        ];
        values.sort_by(f64::total_cmp);
        let keys: Vec<u64> = values.iter().map(|&v| order_key(v)).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        for (&v, &k) in values.iter().zip(&keys) {
            assert_eq!(from_order_key(k).to_bits(), v.to_bits());
        }
    }

    #[test]
    fn percentile_is_linear_interpolation() {
        assert_eq!(samples(&[]).percentile(0.5), 0.0);
        assert_eq!(samples(&[7.0]).percentile(0.99), 7.0);
        let mut s = samples(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!(s.percentile(0.5), 2.5);
        assert!((s.percentile(0.95) - 3.85).abs() < 1e-12);
        let mut z = samples(&[0.0, 0.0, 0.0, 10.0, -2.0]);
        assert_eq!(z.percentile(0.0), -2.0);
        assert_eq!(z.percentile(0.5), 0.0);
        assert!((z.percentile(0.99) - 9.6).abs() < 1e-12);
        // Several at once agree with one at a time, whatever the order of the data.
        let xs: Vec<f64> = (0..1000)
            .map(|i| ((i * 7919) % 1000) as f64 - 100.0)
            .collect();
        let qs = [0.0, 0.05, 0.5, 0.95, 0.99, 1.0];
        let together = samples(&xs).percentiles(qs);
        for (q, got) in qs.iter().zip(together) {
            assert_eq!(got, samples(&xs).percentile(*q), "q = {q}");
        }
    }

    /// Percentiles taken together (each rank selected after the last, the next rank scanned)
    /// equal linear interpolation in a sorted copy, with duplicates, zeros and negatives.
    #[test]
    fn negative_keys_are_the_negative_numbers() {
        let specials = [
            f64::NEG_INFINITY,
            f64::MIN,
            -1.0,
            -f64::MIN_POSITIVE,
            -f64::from_bits(1),
            -0.0,
            0.0,
            f64::from_bits(1),
            1.0,
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0xFFF0_0000_0000_0001),
            f64::from_bits(0xFFFF_FFFF_FFFF_FFFF),
        ];
        let mut bits = crate::rng::xorshift(0x2545_F491_4F6C_DD1D);
        let random = std::iter::repeat_with(|| f64::from_bits(bits()));
        for v in specials.into_iter().chain(random.take(100_000)) {
            let k = order_key(v);
            assert_eq!(is_negative_key(k), from_order_key(k) < 0.0, "{v:e}");
        }
    }

    #[test]
    fn percentiles_match_a_sorted_copy() {
        let qs = [0.0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for n in [1usize, 2, 3, 5, 8, 13, 100, 101, 1000, 4097] {
            let xs: Vec<f64> = (0..n)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    ((state >> 40) % 61) as f64 - 20.0
                })
                .collect();
            let mut sorted = xs.clone();
            sorted.sort_by(f64::total_cmp);
            let got = samples(&xs).percentiles(qs);
            for (q, got) in qs.iter().zip(got) {
                let pos = (n - 1) as f64 * q;
                let lo = pos.floor() as usize;
                let hi = (lo + 1).min(n - 1);
                let w = pos - lo as f64;
                let want = sorted[lo] * (1.0 - w) + sorted[hi] * w;
                assert_eq!(got.to_bits(), want.to_bits(), "n = {n}, q = {q}");
            }
        }
    }

    #[test]
    fn catalogue_is_consistent() {
        assert_eq!(N_METRICS, 55);
        // The reference's 22 come first, in its order, then simbench's own, then wall_s.
        assert_eq!(CATALOGUE[20].name, "leases_active_at_end");
        assert_eq!(CATALOGUE[N_METRICS - 1].name, "wall_s");
        for (i, info) in CATALOGUE.iter().enumerate() {
            assert_eq!(info.metric as usize, i);
            assert_eq!(Metric::from_name(info.name), Some(info.metric));
        }
        let gated = CATALOGUE.iter().filter(|m| m.gated).count();
        assert_eq!(gated, 35);
        // A metric that needs a feature says so in its meaning, and only such a metric does.
        for info in CATALOGUE {
            let says = info.meaning.contains("Not applicable");
            assert_eq!(says, info.needs.is_some(), "{}", info.name);
        }
    }

    #[test]
    fn a_ratio_with_nothing_to_divide_by_is_undefined_not_zero() {
        let v = compute(&mut Tally::default(), &[]);
        // Counts are defined whatever happened; ratios and percentiles of nothing are not.
        assert_eq!(v.value(Metric::JobsDone), Some(0.0));
        assert_eq!(v.value(Metric::Requests), Some(0.0));
        for m in [
            Metric::ThroughputRps,
            Metric::AttemptsPerCompletedJob,
            Metric::RefusalRate,
            Metric::SuccessfulJobLatencyP99Ms,
            Metric::ServiceP99Ms,
            Metric::QueueShare,
            Metric::Utilization,
        ] {
            assert_eq!(v.value(m), None, "{m:?}");
            assert_eq!(v.get(m), 0.0, "{m:?} reads as the reference's 0/0");
        }
        assert_eq!(
            undefined_reason(Metric::AttemptsPerCompletedJob),
            "no job completed"
        );
        // One completed job and a request define them again.
        let mut tally = Tally {
            jobs: 1,
            next_job: 1,
            jobs_done: 1,
            attempts: 2,
            attempted_steps: 1,
            makespan_s: 4.0,
            ..Tally::default()
        };
        tally.job_latencies_ms.push(10.0);
        let endpoint = EndpointTally {
            requests: 2,
            admitted: 1,
            refused: 1,
            ..EndpointTally::default()
        };
        let v = compute(&mut tally, &[endpoint]);
        assert_eq!(v.value(Metric::AttemptsPerCompletedJob), Some(2.0));
        assert_eq!(v.value(Metric::RefusalRate), Some(0.5));
        assert_eq!(v.value(Metric::SuccessfulJobLatencyP99Ms), Some(10.0));
        assert_eq!(v.value(Metric::ServiceP99Ms), None);
        let mut w = v.clone();
        w.set(Metric::ServiceP99Ms, 3.0);
        assert_eq!(w.value(Metric::ServiceP99Ms), Some(3.0));
    }

    #[test]
    fn spread_uses_sample_stdev() {
        let e = |admitted| EndpointTally {
            admitted,
            ..EndpointTally::default()
        };
        assert_eq!(spread(&[e(5)]), 0.0);
        assert!((spread(&[e(1), e(3)]) - (2f64.sqrt() / 2.0)).abs() < 1e-12);
    }
}
