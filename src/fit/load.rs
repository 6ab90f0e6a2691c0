//! The load and the client's retry policy, from job, step and attempt ids.
//!
//! A job runs from its first request to its last answer. In a closed loop the most jobs at
//! once is the worker count, and a worker's next job starts as its last one ends (a real
//! client some milliseconds later); in an open loop jobs arrive on their own schedule. Which
//! limit ended a run — its job count or its horizon — shows only across several logs: equal
//! job counts mean the jobs ran out, different ones that the horizon came first.

use std::collections::BTreeMap;

use super::doc::{Doc, float};
use super::input::{Log, NONE_ID, Request};
use super::stats;
use crate::request_log::EntryOutcome;

/// The fitted load.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadFit {
    /// Whether requests carry job ids.
    pub has_jobs: bool,
    /// Jobs per log (first to last).
    pub jobs_per_log: Vec<u64>,
    /// The most jobs at once in any log.
    pub most_jobs: u32,
    /// Steps per job and calls per step.
    pub steps_per_job: u32,
    /// Calls per step.
    pub calls_per_step: u32,
    /// The last job start \[s\] after its log's first request, the latest over logs.
    pub last_start_s: f64,
    /// Closed or open loop, with the evidence.
    pub model: LoadModel,
    /// The retry policy.
    pub retry: Option<RetryFit>,
}

/// Closed or open.
#[derive(Clone, Debug, PartialEq)]
pub enum LoadModel {
    /// Workers, each a job at a time: share of job starts soon after the end they replace.
    Closed {
        /// That share ([`HANDOFF_LAG`]).
        handoff_share: f64,
        /// Job starts that replaced an end (the share's count): none when every job started in
        /// the first wave, and then nothing tells the loop.
        handoffs: usize,
        /// The workers' pause between jobs (none when jobs follow at the same instant, as in a
        /// simulated log, and without job ids, where the gaps between requests hold retry waits
        /// too).
        pause: Pause,
    },
    /// Arrivals at a rate.
    Open {
        /// Jobs per second.
        rate_per_s: f64,
        /// Coefficient of variation of the gaps (1 Poisson, 0 uniform).
        gap_cv: f64,
    },
}

/// The workers' pause between jobs, from the time from each end to the start that replaces it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pause {
    /// \[s\]: for exponential pauses the mean whose gaps through the log's pairing have the
    /// log's median gap, for a fixed one the median gap (both robust to a worker's odd stall or
    /// wait); 0 for none.
    pub think_s: f64,
    /// Whether the gaps spread as exponential pauses would.
    pub exponential: bool,
    /// The gaps' quartile dispersion, (Q3 − Q1) / (Q3 + Q1): 0 for a fixed pause.
    pub spread: f64,
    /// The dispersion exponential pauses of that mean show through the same pairing (0.66 when
    /// the pauses are short against the time between ends, less when they shuffle the starts).
    pub exponential_spread: f64,
}

impl Pause {
    const NONE: Pause = Pause {
        think_s: 0.0,
        exponential: false,
        spread: 0.0,
        exponential_spread: 0.0,
    };
}

/// The fewest gaps whose quartiles tell a fixed pause from an exponential one.
const SHAPE_GAPS: usize = 20;

/// The retry policy seen.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryFit {
    /// The most attempts at a step.
    pub max_attempts: u32,
    /// Attempts that failed in a way clients retry (the evidence for `max_attempts`: a client
    /// that never retried shows 1 only if some attempt failed).
    pub failed: usize,
    /// The backoff between attempts, when enough delays look like a jittered one.
    pub backoff: Option<Backoff>,
}

/// The backoff between attempts.
#[derive(Clone, Debug, PartialEq)]
pub struct Backoff {
    /// Backoff base \[s\] (the first retry's longest delay).
    pub base: f64,
    /// Growth per attempt.
    pub factor: f64,
    /// Longest delay \[s\].
    pub cap: f64,
    /// `"full"`, `"equal"` or `"none"`.
    pub jitter: &'static str,
    /// Retries whose delay was measured (after a failure without Retry-After).
    pub n: usize,
}

/// The fewest failed attempts from which the most attempts at a step is read as the client's
/// limit rather than as the luck of a log with few failures.
const ATTEMPT_EVIDENCE: usize = 5;

impl LoadFit {
    /// The most requests the load can have in flight at once (for a capacity that never
    /// binds).
    pub fn most_in_flight(&self) -> u32 {
        self.most_jobs.max(1)
    }
}

/// Fits the load from every log.
pub fn fit(log: &Log) -> LoadFit {
    let has_jobs = log
        .segments
        .iter()
        .flat_map(|s| &s.requests)
        .all(|r| r.job != u64::MAX);
    let mut jobs_per_log = Vec::new();
    let (mut most_jobs, mut steps, mut calls) = (0u32, 1u32, 1u32);
    let mut last_start_s = 0.0f64;
    let mut lags = Vec::new();
    let mut durations = (0.0f64, 0usize);
    let mut starts_all: Vec<Vec<f64>> = Vec::new();
    let mut paired_ends: Vec<Vec<f64>> = Vec::new();
    for segment in &log.segments {
        let spans = job_spans(&segment.requests, has_jobs);
        jobs_per_log.push(spans.len() as u64);
        let all: Vec<(f64, f64)> = spans.iter().map(|s| (s.start, s.end)).collect();
        most_jobs = most_jobs.max(most_at_once(&all));
        // Jobs turned away unserved held no slot: they neither end a worker's job nor start
        // one in its place. Counted, they would pair every refusal of a full provider (an
        // arrival at its most jobs at once) with itself as a hand-off.
        let held: Vec<(f64, f64)> = spans
            .iter()
            .filter(|s| !s.turned_away)
            .map(|s| (s.start, s.end))
            .collect();
        durations.0 += held.iter().map(|s| s.1 - s.0).sum::<f64>();
        durations.1 += held.len();
        let mut starts: Vec<f64> = all.iter().map(|s| s.0).collect();
        starts.sort_by(f64::total_cmp);
        let origin = starts.first().copied().unwrap_or(0.0);
        let mut held_starts: Vec<f64> = held.iter().map(|s| s.0).collect();
        held_starts.sort_by(f64::total_cmp);
        let mut ends: Vec<f64> = held.iter().map(|s| s.1).collect();
        ends.sort_by(f64::total_cmp);
        let before = lags.len();
        let most_held = most_at_once(&held) as usize;
        lags.extend(replacement_lags(&held_starts, &ends, most_held));
        paired_ends.push(ends[..lags.len() - before].to_vec());
        for s in &mut starts {
            *s -= origin;
        }
        last_start_s = last_start_s.max(starts.last().copied().unwrap_or(0.0));
        starts_all.push(starts);
        for r in &segment.requests {
            if r.step != NONE_ID {
                steps = steps.max(r.step + 1);
            }
            if r.call != NONE_ID {
                calls = calls.max(r.call + 1);
            }
        }
    }
    let mean_duration = durations.0 / durations.1.max(1) as f64;
    let handoff_share = handoff_share(&lags, mean_duration);
    lags.sort_by(f64::total_cmp);
    let closed = LoadModel::Closed {
        handoff_share,
        handoffs: lags.len(),
        pause: if lags.is_empty() || !has_jobs {
            Pause::NONE
        } else {
            pause(&lags, &paired_ends)
        },
    };
    // Without job ids each request is a job: an open loop's arrivals then include any
    // retries, which only job ids tell apart, but its rate is the log's request rate, where a
    // closed loop without pauses would send as fast as the provider answers.
    let model = if handoff_share < 0.3 {
        open_model(&starts_all).unwrap_or(closed)
    } else {
        closed
    };
    LoadFit {
        has_jobs,
        jobs_per_log,
        most_jobs,
        steps_per_job: if has_jobs { steps } else { 1 },
        calls_per_step: if has_jobs { calls } else { 1 },
        last_start_s,
        model,
        retry: has_jobs.then(|| fit_retry(log)).flatten(),
    }
}

/// How soon after the end it replaces a closed loop's job start comes, as a share of the mean
/// job's time. A worker's next job starts some milliseconds after its last one ends (the
/// client's own work, a thread's turn); an open loop's starts wait for no end, so the k-th end
/// is followed by the start that brings the jobs at once back to their most only when the load
/// happens to be near its peak: by about z·√L / L of a job's time with L jobs at once on
/// average (Little's law), a tenth only for loads of some 900 jobs at once, where the two
/// loops load a provider alike.
pub const HANDOFF_LAG: f64 = 0.1;

/// Per end after the first wave, the time from the k-th end to the (most + k)-th start: the
/// start that replaces it. With at most `most` jobs at once that start never comes before the
/// end (sorted in time, an end at an instant counts before a start), so each lag is at least 0.
fn replacement_lags<'a>(
    starts: &'a [f64],
    ends: &'a [f64],
    most: usize,
) -> impl Iterator<Item = f64> + 'a {
    starts
        .iter()
        .skip(most)
        .zip(ends)
        .map(|(s, e)| (s - e).max(0.0))
}

/// The share of `lags` within [`HANDOFF_LAG`] of a mean job's time; 1 without any (every job
/// started in the first wave: nothing contradicts a closed loop).
fn handoff_share(lags: &[f64], mean_duration: f64) -> f64 {
    if lags.is_empty() {
        return 1.0;
    }
    let soon = lags.iter().filter(|l| **l <= HANDOFF_LAG * mean_duration);
    soon.count() as f64 / lags.len() as f64
}

/// The pause from the sorted `lags` and the ends they were paired with (per log): exponential
/// when the lags' spread is nearer what exponential pauses would show through the same pairing
/// than the 0 of a fixed pause.
fn pause(lags: &[f64], paired_ends: &[Vec<f64>]) -> Pause {
    let median = stats::quantile(lags, 0.5);
    let fixed = Pause {
        think_s: median,
        ..Pause::NONE
    };
    if lags.len() < SHAPE_GAPS || median <= 0.0 {
        return fixed;
    }
    let mean = exponential_mean(median, paired_ends);
    let spread = quartile_dispersion(lags);
    let exponential_spread = quartile_dispersion(&exponential_lags(paired_ends, mean));
    let exponential = spread > exponential_spread / 2.0;
    Pause {
        think_s: if exponential { mean } else { median },
        exponential,
        spread,
        exponential_spread,
    }
}

/// The mean of exponential pauses whose lags, paired with `paired_ends`, have the median
/// `median`. The median, not the mean: the lags of a log without `arrived_s` also hold what
/// the client waited for before a job's first request (a slot, a limit, a breaker), which the
/// fitted world simulates again, and those waits lift the lags' upper tail and so their mean. The lags' median rises
/// with the pauses' mean (each lag is an order statistic of ends plus pauses), so halving finds it.
fn exponential_mean(median: f64, paired_ends: &[Vec<f64>]) -> f64 {
    let lag_median = |mean: f64| stats::quantile(&exponential_lags(paired_ends, mean), 0.5);
    let (mut lo, mut hi) = (0.0, median);
    for _ in 0..64 {
        if lag_median(hi) >= median {
            break;
        }
        (lo, hi) = (hi, hi * 2.0);
    }
    for _ in 0..40 {
        let mid = 0.5 * (lo + hi);
        if lag_median(mid) < median {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// (Q3 − Q1) / (Q3 + Q1) of sorted values; 0 when both quartiles are 0.
fn quartile_dispersion(sorted: &[f64]) -> f64 {
    let (q1, q3) = (stats::quantile(sorted, 0.25), stats::quantile(sorted, 0.75));
    if q1 + q3 > 0.0 {
        (q3 - q1) / (q3 + q1)
    } else {
        0.0
    }
}

/// The lags a closed loop would show if each end were followed by an exponential pause of
/// `mean` before its replacement start, paired as [`replacement_lags`] pairs the log's (the
/// k-th end with the k-th replacement start in time), sorted. Repeated to some 10,000 lags;
/// the draws are keyed by position, so the same ends give the same lags.
fn exponential_lags(paired_ends: &[Vec<f64>], mean: f64) -> Vec<f64> {
    let n: usize = paired_ends.iter().map(Vec::len).sum();
    let rounds = 10_000usize.div_ceil(n.max(1)).min(64);
    let mut out = Vec::with_capacity(n * rounds);
    let mut key = 0u64;
    for _ in 0..rounds {
        for ends in paired_ends {
            let mut starts: Vec<f64> = ends
                .iter()
                .map(|e| {
                    key += 1;
                    let u = (crate::rng::mix64(key) >> 11) as f64 / (1u64 << 53) as f64;
                    e - mean * (1.0 - u).ln()
                })
                .collect();
            starts.sort_by(f64::total_cmp);
            out.extend(starts.iter().zip(ends).map(|(s, e)| (s - e).max(0.0)));
        }
    }
    out.sort_by(f64::total_cmp);
    out
}

/// One job as the log shows it.
#[derive(Clone, Copy, Debug)]
struct JobSpan {
    /// Its arrival \[s\].
    start: f64,
    /// Its last answer \[s\].
    end: f64,
    /// Every request of it was turned away unserved (a 429, an overload, a rejection).
    turned_away: bool,
}

/// A job per job id (per request without ids). A job arrives at its first request, or earlier
/// at its `arrived_s` when the client's own queue held it: that wait is the client's, which the
/// fitted world simulates again, not a pause between jobs nor a gap in the arrivals.
fn job_spans(requests: &[Request], has_jobs: bool) -> Vec<JobSpan> {
    let span = |r: &Request| JobSpan {
        start: r.start.min(r.arrived),
        end: r.end,
        turned_away: matches!(
            r.outcome,
            EntryOutcome::RateLimited | EntryOutcome::Overloaded | EntryOutcome::Rejected
        ),
    };
    if !has_jobs {
        return requests.iter().map(span).collect();
    }
    let mut spans: BTreeMap<u64, JobSpan> = BTreeMap::new();
    for r in requests {
        let new = span(r);
        spans
            .entry(r.job)
            .and_modify(|s| {
                s.start = s.start.min(new.start);
                s.end = s.end.max(new.end);
                s.turned_away &= new.turned_away;
            })
            .or_insert(new);
    }
    spans.into_values().collect()
}

/// The most spans open at once. At an instant, the spans that end close first, then a span of
/// no length is open for that instant alone (a refusal answered at once still arrived while
/// the others ran), then the spans that start open.
fn most_at_once(spans: &[(f64, f64)]) -> u32 {
    const END: u8 = 0;
    const INSTANT: u8 = 1;
    const START: u8 = 2;
    let mut events: Vec<(f64, u8)> = Vec::with_capacity(spans.len() * 2);
    for &(start, end) in spans {
        if end > start {
            events.extend([(start, START), (end, END)]);
        } else {
            events.push((start, INSTANT));
        }
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut open, mut most) = (0u32, 0u32);
    for (_, kind) in events {
        match kind {
            END => open -= 1,
            INSTANT => most = most.max(open + 1),
            _ => {
                open += 1;
                most = most.max(open);
            }
        }
    }
    most
}

fn open_model(starts: &[Vec<f64>]) -> Option<LoadModel> {
    let mut gaps = Vec::new();
    let (mut count, mut span) = (0usize, 0.0);
    for s in starts.iter().filter(|s| s.len() >= 2) {
        gaps.extend(s.windows(2).map(|w| w[1] - w[0]));
        count += s.len() - 1;
        span += s[s.len() - 1] - s[0];
    }
    if count < 10 || span <= 0.0 {
        return None;
    }
    let (mean, sd) = stats::mean_sd(&gaps);
    Some(LoadModel::Open {
        rate_per_s: count as f64 / span,
        gap_cv: sd / mean,
    })
}

/// The largest KS distance between the first retries' delays and a full-jitter uniform for
/// which they are read as one.
const MAX_DELAY_KS: f64 = 0.25;

/// The retry policy from attempts: the most attempts at a step, and the delays between a
/// failure without Retry-After and the next attempt of its step.
fn fit_retry(log: &Log) -> Option<RetryFit> {
    let (mut max_attempts, mut failed) = (1, 0);
    let mut delays: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for segment in &log.segments {
        // Per (job, step): the end of the attempt's last request and whether it had a
        // Retry-After, then the next attempt's first start.
        let mut last: BTreeMap<(u64, u32), (u32, f64, bool)> = BTreeMap::new();
        for r in segment
            .requests
            .iter()
            .filter(|r| !r.hedge && r.attempt != NONE_ID)
        {
            max_attempts = max_attempts.max(r.attempt);
            let key = (r.job, r.step);
            if let Some(&(attempt, end, after)) = last.get(&key)
                && r.attempt == attempt + 1
                && !after
            {
                delays
                    .entry(attempt)
                    .or_default()
                    .push((r.start - end).max(0.0));
            }
            // Failures any client retries by default; a rejection (a 400, a 401) or a
            // cancelled hedge copy would be given up by one that does retry.
            if matches!(
                r.outcome,
                EntryOutcome::RateLimited
                    | EntryOutcome::Error
                    | EntryOutcome::Overloaded
                    | EntryOutcome::ClientTimeout
            ) {
                failed += 1;
            }
            if !matches!(r.outcome, EntryOutcome::Ok) {
                last.insert(key, (r.attempt, r.end, r.retry_after.is_finite()));
            }
        }
    }
    if failed < ATTEMPT_EVIDENCE {
        return None;
    }
    Some(RetryFit {
        max_attempts,
        failed,
        backoff: fit_backoff(&mut delays),
    })
}

/// The backoff from the delays before each retry, by the attempt that failed.
fn fit_backoff(delays: &mut BTreeMap<u32, Vec<f64>>) -> Option<Backoff> {
    let n = delays.values().map(Vec::len).sum();
    // Under full jitter the delay of retry k is uniform up to its longest, twice its median;
    // a wait for a lease after the delay adds to it, so this is an upper bound.
    let raw: Vec<(u32, f64)> = delays
        .iter_mut()
        .filter(|(_, d)| d.len() >= 5)
        .map(|(k, d)| {
            d.sort_by(f64::total_cmp);
            (*k, 2.0 * stats::quantile(d, 0.5))
        })
        .collect();
    let first = raw.first()?;
    // Delays that do not look like a jittered backoff (a client that queued for a lease long
    // after its delay) identify nothing.
    // (A median of 0 is a client that retries at once: no law to test.)
    let d = &delays[&first.0];
    if first.1 > 0.0 && stats::ks_distance(d, |x| (x / first.1).clamp(0.0, 1.0)) > MAX_DELAY_KS {
        return None;
    }
    let base = first.1.max(1e-4);
    // Retries at once (a median delay of 0) give no growth to measure: the usual doubling.
    let growth = |second: &(u32, f64)| {
        let ratio = second.1 / first.1;
        (ratio.is_finite() && ratio > 0.0).then(|| ratio.powf(1.0 / f64::from(second.0 - first.0)))
    };
    let factor = raw.get(1).and_then(growth).unwrap_or(2.0).clamp(1.0, 100.0);
    let cap = raw.iter().map(|r| r.1).fold(base, f64::max);
    Some(Backoff {
        base,
        factor,
        cap,
        jitter: "full",
        n,
    })
}

/// `seed`, `jobs`, `concurrency` (a closed loop's only), `horizon_s`, `steps_per_job`,
/// `calls_per_step`.
pub fn write_top(doc: &mut Doc, load: &LoadFit) {
    doc.fitted("seed", "1".into(), "");
    let counts = &load.jobs_per_log;
    let most = counts.iter().copied().max().unwrap_or(0);
    let all_equal = counts.len() >= 2 && counts.iter().all(|c| *c == most);
    let horizon = (load.last_start_s * 1.001).ceil().max(1.0);
    if all_equal {
        doc.fitted(
            "jobs",
            most.to_string(),
            format!("every one of {} logs ran {most} jobs", counts.len()),
        );
        doc.assumed(
            "horizon_s",
            float((horizon * 2.0).max(60.0), 6),
            "the jobs ran out before any horizon; set to twice the last job start",
        );
    } else {
        let why = if counts.len() >= 2 {
            format!(
                "the logs ran {} jobs: the horizon ended them, not a job count",
                join(counts)
            )
        } else {
            "one log cannot tell a job count from a horizon; several logs can".into()
        };
        doc.assumed(
            "jobs",
            (most * 4).max(1).to_string(),
            format!("{why}; four times the most jobs seen"),
        );
        doc.fitted(
            "horizon_s",
            float(horizon, 6),
            "just past the last job start (a thousandth more, rounded up to a second)",
        );
    }
    // Only a closed loop has workers: an open loop's or a trace's cap is `load.max_in_flight`.
    let closed = match &doc.client {
        Some(client) => client.closed_loop(),
        None => matches!(load.model, LoadModel::Closed { .. }),
    };
    if closed {
        write_workers(doc, load);
    }
    let ids = if load.has_jobs {
        "the largest step and call ids"
    } else {
        "the log has no job ids"
    };
    doc.fitted("steps_per_job", load.steps_per_job.to_string(), ids);
    doc.fitted("calls_per_step", load.calls_per_step.to_string(), ids);
}

/// `concurrency`: a closed loop's workers, the most jobs the logs ran at once.
fn write_workers(doc: &mut Doc, load: &LoadFit) {
    match load.model {
        // Without job ids a retry's wait looks like an open loop's gap: the loop is assumed.
        LoadModel::Closed { handoff_share, .. } if !load.has_jobs && handoff_share < 0.3 => doc
            .assumed(
                "concurrency",
                load.most_jobs.max(1).to_string(),
                format!(
                    "the most requests at once, as a closed loop's workers; only {}% of \
                     requests start within a tenth of a mean request's time after an end, which \
                     reads as an open loop, but without job ids a retry's wait looks the same: \
                     add `job` ids to the log to tell",
                    float(handoff_share * 100.0, 3)
                ),
            ),
        LoadModel::Closed { handoffs: 0, .. } => doc.assumed(
            "concurrency",
            load.most_jobs.max(1).to_string(),
            "the most jobs at once, as a closed loop's workers: no job started after another \
             ended, so the logs cannot tell a closed loop from an open one",
        ),
        LoadModel::Closed { handoff_share, .. } => doc.fitted(
            "concurrency",
            load.most_jobs.max(1).to_string(),
            format!(
                "the most jobs at once; {}% of job starts come within a tenth of a mean job's \
                 time after the end they replace (a closed loop)",
                float(handoff_share * 100.0, 3)
            ),
        ),
        // The client's closed loop over logs of an open one: its worker count is the client's.
        LoadModel::Open { .. } => doc.fitted(
            "concurrency",
            load.most_jobs.max(1).to_string(),
            "the most jobs at once",
        ),
    }
}

/// `[load]`, for an open loop or a closed one whose workers pause between jobs.
pub fn write_load(doc: &mut Doc, load: &LoadFit) {
    if let LoadModel::Closed { pause, .. } = load.model
        && pause.think_s > 0.0
    {
        doc.table("[load]", "load", &[]);
        let (how, shape) = if pause.exponential {
            (
                "the mean of exponential pauses whose times from a job's end to the start that \
                 replaces it have the log's median",
                "exponential",
            )
        } else {
            (
                "the median time from a job's end to the start that replaces it",
                "fixed",
            )
        };
        doc.fitted(
            "think_s",
            float(pause.think_s, 4),
            format!("{how}: the client's own work between jobs"),
        );
        if pause.exponential_spread > 0.0 {
            doc.fitted(
                "think",
                format!("\"{shape}\""),
                format!(
                    "those gaps' quartile dispersion is {:.3}; exponential pauses of that mean \
                     would show {:.3} through the same pairing, a fixed pause 0",
                    pause.spread, pause.exponential_spread
                ),
            );
        }
    }
    if let LoadModel::Open { rate_per_s, gap_cv } = load.model {
        doc.table("[load]", "load", &[]);
        let (model_why, rate_why) = if load.has_jobs {
            ("job starts do not follow job ends", "job starts per second")
        } else {
            (
                "request starts do not follow request ends; the log has no job ids, so each \
                 request counts as a job, a retry too: add `job` ids to the log to tell",
                "requests per second",
            )
        };
        doc.fitted("model", "\"open\"".into(), model_why);
        doc.fitted("rate_per_s", float(rate_per_s, 5), rate_why);
        let poisson = gap_cv > 0.5;
        doc.fitted(
            "arrivals",
            if poisson {
                "\"poisson\""
            } else {
                "\"uniform\""
            }
            .into(),
            format!("the gaps' coefficient of variation is {}", float(gap_cv, 3)),
        );
        doc.fitted(
            "max_in_flight",
            load.most_jobs.max(1).to_string(),
            "the most jobs at once",
        );
    }
}

/// `[retry]`.
pub fn write_retry(doc: &mut Doc, load: &LoadFit) {
    doc.table("[retry]", "retry", &[]);
    let Some(r) = &load.retry else {
        let why = if load.has_jobs {
            "too few failed attempts to tell the client's limit; the default"
        } else {
            "the log has no job, step and attempt ids"
        };
        doc.assumed("max_attempts", "5".into(), why);
        return;
    };
    let never = if r.max_attempts == 1 {
        ": the client never retried"
    } else {
        ""
    };
    doc.fitted(
        "max_attempts",
        r.max_attempts.to_string(),
        format!(
            "the most attempts at a step, with {} failed attempts of a retried kind (429, \
             5xx, reset, timeout){never}",
            r.failed
        ),
    );
    if r.max_attempts == 1 {
        return;
    }
    let Some(b) = &r.backoff else {
        doc.assumed(
            "base",
            float(crate::scenario::Retry::default().base, 4),
            "too few retries after a failure without Retry-After, or delays that are not a \
             jittered backoff (the client waited for a lease after them); the backoff's \
             defaults",
        );
        return;
    };
    let basis = format!(
        "from {} retry delays after failures without Retry-After (full jitter assumed: twice the median; an upper bound, as it includes any wait for a lease)",
        b.n
    );
    doc.fitted("base", float(b.base, 4), basis);
    doc.fitted("factor", float(b.factor, 3), "");
    doc.fitted("cap", float(b.cap.max(b.base), 4), "the longest delay seen");
    doc.fitted("jitter", format!("\"{}\"", b.jitter), "");
}

fn join(counts: &[u64]) -> String {
    counts
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator of uniforms in [0, 1).
    fn uniforms(seed: u64) -> impl FnMut() -> f64 {
        let mut x = seed;
        move || {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// Jobs of exponential length (mean 1 s) from one queue, run by `workers`: the first free
    /// one takes the next job `jitter` times a uniform draw of a job's mean after its last one
    /// ended.
    fn closed(workers: usize, jobs: usize, jitter: f64, seed: u64) -> Vec<(f64, f64)> {
        let mut u = uniforms(seed);
        let mut free = vec![0.0f64; workers];
        (0..jobs)
            .map(|j| {
                let w = (0..workers)
                    .min_by(|a, b| free[*a].total_cmp(&free[*b]))
                    .unwrap();
                let start = free[w] + if j < workers { 0.0 } else { jitter * u() };
                let end = start - (1.0 - u()).ln();
                free[w] = end;
                (start, end)
            })
            .collect()
    }

    /// Poisson arrivals at `rate` of jobs of exponential length (mean 1 s).
    fn open(rate: f64, jobs: usize, seed: u64) -> Vec<(f64, f64)> {
        let mut u = uniforms(seed);
        let mut t = 0.0;
        (0..jobs)
            .map(|_| {
                t -= (1.0 - u()).ln() / rate;
                (t, t - (1.0 - u()).ln())
            })
            .collect()
    }

    fn share(spans: &[(f64, f64)]) -> f64 {
        let mut starts: Vec<f64> = spans.iter().map(|s| s.0).collect();
        let mut ends: Vec<f64> = spans.iter().map(|s| s.1).collect();
        starts.sort_by(f64::total_cmp);
        ends.sort_by(f64::total_cmp);
        let lags: Vec<f64> =
            replacement_lags(&starts, &ends, most_at_once(spans) as usize).collect();
        let mean = spans.iter().map(|s| s.1 - s.0).sum::<f64>() / spans.len() as f64;
        handoff_share(&lags, mean)
    }

    #[test]
    fn a_closed_loop_hands_off_at_once_or_some_milliseconds_late() {
        assert_eq!(share(&closed(8, 2_000, 0.0, 1)), 1.0);
        // A client a few percent of a job late, as a real one at a served world's time scale.
        for workers in [1, 8, 64] {
            let s = share(&closed(workers, 4_000, 0.05, 2));
            assert!(s > 0.9, "{workers} workers: {s}");
        }
    }

    /// A closed loop (jobs of exponential length, mean 1 s) whose workers pause `think(u)`
    /// after each job, `u` a uniform draw; the fitted pause.
    fn fitted_pause(workers: usize, seed: u64, think: impl Fn(f64) -> f64) -> Pause {
        let mut u = uniforms(seed);
        let mut free = vec![0.0f64; workers];
        let spans: Vec<(f64, f64)> = (0..4_000)
            .map(|j| {
                let w = (0..workers)
                    .min_by(|a, b| free[*a].total_cmp(&free[*b]))
                    .unwrap();
                let start = free[w] + if j < workers { 0.0 } else { think(u()) };
                let end = start - (1.0 - u()).ln();
                free[w] = end;
                (start, end)
            })
            .collect();
        let mut starts: Vec<f64> = spans.iter().map(|s| s.0).collect();
        let mut ends: Vec<f64> = spans.iter().map(|s| s.1).collect();
        starts.sort_by(f64::total_cmp);
        ends.sort_by(f64::total_cmp);
        let mut lags: Vec<f64> =
            replacement_lags(&starts, &ends, most_at_once(&spans) as usize).collect();
        let paired = vec![ends[..lags.len()].to_vec()];
        lags.sort_by(f64::total_cmp);
        pause(&lags, &paired)
    }

    #[test]
    fn a_pause_is_told_fixed_or_exponential_and_its_mean_kept() {
        for workers in [1, 8, 64] {
            for mean in [0.01, 0.1, 0.5] {
                let at = format!("{workers} workers, mean {mean}");
                let exp = fitted_pause(workers, 5, |u| -mean * (1.0 - u).ln());
                assert!(exp.exponential, "{at}: {exp:?}");
                assert!((exp.think_s / mean - 1.0).abs() < 0.1, "{at}: {exp:?}");
                let fixed = fitted_pause(workers, 6, |_| mean);
                assert!(!fixed.exponential, "{at}: {fixed:?}");
                assert!((fixed.think_s / mean - 1.0).abs() < 1e-9, "{at}: {fixed:?}");
                // A fixed pause give or take a fifth (a thread's turn) is still fixed.
                let jittered = fitted_pause(workers, 7, |u| mean * (0.8 + 0.4 * u));
                assert!(!jittered.exponential, "{at}: {jittered:?}");
            }
        }
    }

    #[test]
    fn an_open_loop_does_not_hand_off() {
        for rate in [0.5, 4.0, 16.0, 100.0] {
            let s = share(&open(rate, 4_000, 3));
            assert!(s < 0.3, "rate {rate}: {s}");
        }
    }

    #[test]
    fn a_start_never_comes_before_the_end_it_replaces() {
        let spans = open(8.0, 1_000, 4);
        let mut starts: Vec<f64> = spans.iter().map(|s| s.0).collect();
        let mut ends: Vec<f64> = spans.iter().map(|s| s.1).collect();
        starts.sort_by(f64::total_cmp);
        ends.sort_by(f64::total_cmp);
        let most = most_at_once(&spans) as usize;
        for (k, (s, e)) in starts.iter().skip(most).zip(&ends).enumerate() {
            assert!(s >= e, "start {} at {s} before end {k} at {e}", most + k);
        }
        assert_eq!(replacement_lags(&starts, &ends, most).count(), 1_000 - most);
    }

    /// A client that retries at once (each attempt starts as the failed one ends) has a
    /// backoff of (nearly) nothing, and the usual doubling, not `0 / 0`.
    #[test]
    fn retries_at_once_fit_a_finite_backoff() {
        let mut text = String::new();
        let mut t = 0.0;
        for job in 0..40 {
            let attempts = if job % 4 == 0 { 3 } else { 1 };
            for attempt in 1..=attempts {
                let outcome = if attempt < attempts {
                    r#""error","status":503"#
                } else {
                    r#""ok","status":200"#
                };
                text.push_str(&format!(
                    r#"{{"start_s":{t},"end_s":{},"endpoint":"a","outcome":{outcome},"job":{job},"step":0,"attempt":{attempt},"call":0}}"#,
                    t + 0.25
                ));
                text.push('\n');
                t += 0.25;
            }
            t += 1.0;
        }
        let retry = fit_retry(&crate::fit::input::log_of(&text)).expect("a retry policy");
        assert_eq!(retry.max_attempts, 3);
        let b = retry.backoff.expect("a backoff");
        assert_eq!((b.base, b.factor, b.cap), (1e-4, 2.0, 1e-4));
    }

    #[test]
    fn without_a_replacement_nothing_contradicts_a_closed_loop() {
        assert_eq!(handoff_share(&[], 1.0), 1.0);
        assert_eq!(handoff_share(&[0.0, 0.05, 0.2, 0.3], 1.0), 0.5);
    }
}
