//! The metric catalogue and the arithmetic that turns a run's tally into metric values.
//!
//! [`CATALOGUE`] is the single source of truth: run output, report rows, JSON keys and
//! `simbench list` all read it. A metric is identified by its [`Metric`] variant; values live in
//! a [`MetricValues`] array indexed by it. No formatting happens here.

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
    /// What it measures, in one paragraph.
    pub meaning: &'static str,
}

macro_rules! catalogue {
    ($( $variant:ident => $name:literal, $unit:literal, $dir:ident, $gated:literal, $meaning:literal; )*) => {
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
                meaning: $meaning,
            }, )*
        ];
    };
}

catalogue! {
    JobsDone => "jobs_done", "jobs", Higher, false,
        "Jobs whose every step succeeded, including those that finished after the horizon.";
    JobsFailed => "jobs_failed", "jobs", Neutral, false,
        "Jobs in which some step gave up after its retries.";
    JobsUnstarted => "jobs_unstarted", "jobs", Neutral, false,
        "Jobs never claimed before the horizon; done + failed + unstarted = jobs.";
    MakespanS => "makespan_s", "s", Neutral, false,
        "Simulated time when the last worker exited (the horizon plus the tail of running jobs).";
    ThroughputRps => "throughput_rps", "jobs/s", Higher, true,
        "Completed jobs per simulated second of the run's own makespan.";
    Requests => "requests", "requests", Neutral, false,
        "Requests that reached the provider, refusals included.";
    AttemptsPerCompletedJob => "attempts_per_completed_job", "attempts", Lower, true,
        "All step attempts (failed jobs' included) per completed job; the no-retry floor is steps_per_job.";
    AttemptInflation => "attempt_inflation", "ratio", Lower, true,
        "Attempts per attempted step; 1.0 means no step was ever retried.";
    FailedAttemptRate => "failed_attempt_rate", "ratio", Lower, true,
        "Share of attempts that failed (refused, errored or found nothing to lease).";
    RetryRate => "retry_rate", "ratio", Lower, true,
        "Share of attempts followed by a scheduled retry.";
    RefusalRate => "refusal_rate", "ratio", Lower, true,
        "Share of requests the provider refused with a 429 (capacity or quota).";
    ErrorRate => "error_rate", "ratio", Lower, true,
        "Share of requests admitted and then failed (503, connection reset, read timeout).";
    SuccessfulJobLatencyP50Ms => "successful_job_latency_p50_ms", "ms", Lower, true,
        "Median time from claiming a job to the end of its last call, over completed jobs.";
    SuccessfulJobLatencyP95Ms => "successful_job_latency_p95_ms", "ms", Lower, true,
        "95th percentile of completed jobs' latency.";
    SuccessfulJobLatencyP99Ms => "successful_job_latency_p99_ms", "ms", Lower, true,
        "99th percentile of completed jobs' latency.";
    AcquireWaitP50Ms => "acquire_wait_p50_ms", "ms", Lower, true,
        "Median time a call spent obtaining a lease (successful acquires only).";
    AcquireWaitP99Ms => "acquire_wait_p99_ms", "ms", Lower, true,
        "99th percentile of the time a call spent obtaining a lease.";
    RequestLatencyP50Ms => "request_latency_p50_ms", "ms", Neutral, false,
        "Median provider latency of successful requests.";
    Utilization => "utilization", "ratio", Higher, true,
        "Busy endpoint-seconds (failed requests included) over the capacity the provider offered.";
    EndpointSpread => "endpoint_spread", "ratio", Neutral, false,
        "Coefficient of variation (sample) of admitted requests across endpoints.";
    LeasesActiveAtEnd => "leases_active_at_end", "leases", Lower, false,
        "Leases still held when the run ended; anything but 0 is a client bug.";
    WallS => "wall_s", "s", Neutral, false,
        "Real seconds spent simulating the run (cost only).";
}

/// Number of metrics in the catalogue.
pub const N_METRICS: usize = CATALOGUE.len();

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

/// One run's metric values, indexed by [`Metric`].
#[derive(Clone, Debug, PartialEq)]
pub struct MetricValues([f64; N_METRICS]);

impl MetricValues {
    /// The value of `metric`.
    pub fn get(&self, metric: Metric) -> f64 {
        self.0[metric as usize]
    }
    /// Replaces the value of `metric` (used for the wall time, measured outside the core).
    pub fn set(&mut self, metric: Metric, value: f64) {
        self.0[metric as usize] = value;
    }
    /// `(info, value)` pairs in catalogue order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static MetricInfo, f64)> + '_ {
        CATALOGUE.iter().zip(self.0.iter().copied())
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
}

/// Per-endpoint counters the metrics need.
#[derive(Clone, Copy, Debug, Default)]
pub struct EndpointTally {
    /// Requests, refusals included.
    pub requests: u64,
    /// Admitted requests.
    pub admitted: u64,
    /// Refusals of either kind.
    pub refused: u64,
    /// Admitted requests that failed.
    pub failed: u64,
    /// Busy time \[s\].
    pub busy_s: f64,
    /// Offered capacity \[capacity·s\].
    pub offered_capacity_s: f64,
}

/// A sample for percentiles. Exact zeros are only counted, since most acquire waits are zero.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    zeros: u64,
    values: Vec<f64>,
}

impl Samples {
    /// Adds one observation.
    pub fn push(&mut self, value: f64) {
        if value == 0.0 {
            self.zeros += 1;
        } else {
            self.values.push(value);
        }
    }
    /// Number of observations.
    pub fn len(&self) -> u64 {
        self.zeros + self.values.len() as u64
    }
    /// Whether nothing was observed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Linear-interpolated percentile (type 7), `q` in `[0, 1]`; 0 if empty.
    ///
    /// Uses selection rather than a full sort (linear time); it reorders the stored values.
    pub fn percentile(&mut self, q: f64) -> f64 {
        let n = self.len();
        if n == 0 {
            return 0.0;
        }
        let pos = (n - 1) as f64 * q.clamp(0.0, 1.0);
        let lo = pos.floor() as u64;
        let hi = (lo + 1).min(n - 1);
        let w = pos - lo as f64;
        let x_lo = self.nth(lo);
        let x_hi = self.nth(hi);
        x_lo * (1.0 - w) + x_hi * w
    }

    /// The `i`-th smallest observation; negative values sort before the zeros.
    fn nth(&mut self, i: u64) -> f64 {
        let negatives = self.values.iter().filter(|v| **v < 0.0).count() as u64;
        let k = if i < negatives {
            i
        } else if i < negatives + self.zeros {
            return 0.0;
        } else {
            i - self.zeros
        };
        *self
            .values
            .select_nth_unstable_by(k as usize, f64::total_cmp)
            .1
    }
}

fn ratio(num: f64, den: f64) -> f64 {
    if den == 0.0 { 0.0 } else { num / den }
}

/// Computes every metric but `wall_s` (left at 0) from a run's tally.
pub fn compute(tally: &mut Tally, endpoints: &[EndpointTally]) -> MetricValues {
    let job_p50 = tally.job_latencies_ms.percentile(0.50);
    let job_p95 = tally.job_latencies_ms.percentile(0.95);
    let job_p99 = tally.job_latencies_ms.percentile(0.99);
    let wait_p50 = tally.acquire_waits_ms.percentile(0.50);
    let wait_p99 = tally.acquire_waits_ms.percentile(0.99);
    let request_p50 = tally.request_latencies_ms.percentile(0.50);
    let t = &*tally;
    let sum = |f: fn(&EndpointTally) -> f64| endpoints.iter().map(f).sum::<f64>();
    let requests = sum(|e| e.requests as f64);
    let done = t.jobs_done as f64;
    let attempts = t.attempts as f64;
    let mut v = MetricValues([0.0; N_METRICS]);
    let mut put = |m: Metric, x: f64| v.set(m, x);
    put(Metric::JobsDone, done);
    put(Metric::JobsFailed, t.jobs_failed as f64);
    put(
        Metric::JobsUnstarted,
        t.jobs.saturating_sub(t.next_job) as f64,
    );
    put(Metric::MakespanS, t.makespan_s);
    put(
        Metric::ThroughputRps,
        if t.makespan_s > 0.0 {
            done / t.makespan_s
        } else {
            0.0
        },
    );
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
    use super::*;

    fn samples(xs: &[f64]) -> Samples {
        let mut s = Samples::default();
        xs.iter().for_each(|&x| s.push(x));
        s
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
    }

    #[test]
    fn catalogue_is_consistent() {
        assert_eq!(N_METRICS, 22);
        for (i, info) in CATALOGUE.iter().enumerate() {
            assert_eq!(info.metric as usize, i);
            assert_eq!(Metric::from_name(info.name), Some(info.metric));
        }
        let gated = CATALOGUE.iter().filter(|m| m.gated).count();
        assert_eq!(gated, 13);
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
