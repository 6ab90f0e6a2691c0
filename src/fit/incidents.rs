//! Outages: spans in which an endpoint turned every request away (connection refused) or
//! failed every request it served (a hung backend answering 503). Scripted incidents happen at
//! the same time in every run, so an outage seen in most of the logs at about the same time is
//! one incident of the world; the rest is weather (storms) or chance.

use super::input::{Log, Request};
use crate::request_log::{EntryOutcome, ErrorKind};

/// Consecutive failures that make an outage, and the least time they must span \[s\].
const MIN_RUN: usize = 8;
const MIN_SPAN_S: f64 = 3.0;
/// Refusals that make an outage lasting until the log ends. Only an outage refuses
/// connections, and a client's breaker soon stops calling an endpoint that does, so a
/// refused endpoint often shows only a few attempts and never a working one again.
const MIN_FINAL_REFUSALS: usize = 2;

/// An outage of one endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct Outage {
    /// The endpoint's index.
    pub endpoint: u32,
    /// When it starts \[s\] (median over the logs that show it).
    pub start_s: f64,
    /// When it ends \[s\]; `None` for good.
    pub end_s: Option<f64>,
    /// Refused at once (else served, then failed).
    pub refuse: bool,
    /// Logs that show it, of all.
    pub seen_in: usize,
    /// Requests it turned away or failed, over those logs.
    pub requests: usize,
}

impl Outage {
    /// Whether the outage covers time `t`.
    pub fn covers(&self, t: f64) -> bool {
        t >= self.start_s && self.end_s.is_none_or(|end| t < end)
    }
}

/// The outages most logs agree on.
pub fn fit(log: &Log) -> Vec<Outage> {
    let mut found = Vec::new();
    for e in 0..log.endpoints.len() as u32 {
        for refuse in [true, false] {
            let runs: Vec<Vec<Outage>> = log
                .segments
                .iter()
                .map(|s| runs(&s.requests, e, refuse))
                .collect();
            found.extend(agree(&runs, log.segments.len()));
        }
    }
    found
}

/// Whether a request is part of an outage of that kind.
fn hit(r: &Request, refuse: bool) -> bool {
    if refuse {
        r.outcome == EntryOutcome::Rejected && r.error == Some(ErrorKind::ConnectionRefused)
    } else {
        r.outcome == EntryOutcome::Error && r.error == Some(ErrorKind::Upstream)
    }
}

/// Whether a request shows the endpoint working (breaks a run).
fn working(r: &Request, refuse: bool) -> bool {
    if refuse {
        r.outcome != EntryOutcome::Rejected
    } else {
        r.outcome == EntryOutcome::Ok
    }
}

/// One log's runs of consecutive outage answers at endpoint `e`.
fn runs(requests: &[Request], e: u32, refuse: bool) -> Vec<Outage> {
    let mut out = Vec::new();
    let mut run: Option<(f64, f64, usize)> = None;
    let mine = requests.iter().filter(|r| r.endpoint == e);
    for r in mine {
        if hit(r, refuse) {
            let (start, _, n) = run.unwrap_or((r.start, r.start, 0));
            run = Some((start, r.start, n + 1));
        } else if working(r, refuse)
            && let Some((start, last, n)) = run.take()
            && n >= MIN_RUN
            && last - start >= MIN_SPAN_S
        {
            out.push(outage(e, start, Some(r.start), refuse, n));
        }
    }
    if let Some((start, last, n)) = run
        && ((n >= MIN_RUN && last - start >= MIN_SPAN_S) || (refuse && n >= MIN_FINAL_REFUSALS))
    {
        out.push(outage(e, start, None, refuse, n));
    }
    out
}

fn outage(endpoint: u32, start_s: f64, end_s: Option<f64>, refuse: bool, n: usize) -> Outage {
    Outage {
        endpoint,
        start_s,
        end_s,
        refuse,
        seen_in: 1,
        requests: n,
    }
}

/// The outages of the first log that show up, overlapping, in at least half of the logs.
fn agree(runs: &[Vec<Outage>], logs: usize) -> Vec<Outage> {
    let mut out = Vec::new();
    let Some(first) = runs.iter().find(|r| !r.is_empty()) else {
        return out;
    };
    for candidate in first {
        let matches: Vec<&Outage> = runs
            .iter()
            .filter_map(|rs| rs.iter().find(|o| overlaps(o, candidate)))
            .collect();
        if matches.len() * 2 < logs {
            continue;
        }
        let mut starts: Vec<f64> = matches.iter().map(|o| o.start_s).collect();
        starts.sort_by(f64::total_cmp);
        let ends: Vec<f64> = matches.iter().filter_map(|o| o.end_s).collect();
        let end_s = (ends.len() * 2 > matches.len()).then(|| {
            let mut ends = ends.clone();
            ends.sort_by(f64::total_cmp);
            super::stats::quantile(&ends, 0.5)
        });
        out.push(Outage {
            start_s: super::stats::quantile(&starts, 0.5),
            end_s,
            seen_in: matches.len(),
            requests: matches.iter().map(|o| o.requests).sum(),
            ..candidate.clone()
        });
    }
    out
}

fn overlaps(a: &Outage, b: &Outage) -> bool {
    let end = |o: &Outage| o.end_s.unwrap_or(f64::INFINITY);
    a.start_s < end(b) && b.start_s < end(a)
}

/// A stretch of time, the same in most logs, over which a figure of one endpoint's requests
/// (the log of its latency, whether it failed) stood apart from the rest of the time: a
/// scripted incident. Weather (storms) comes at other times in other runs and averages out.
#[derive(Clone, Debug, PartialEq)]
pub struct Shift {
    /// The first request inside \[s\].
    pub start_s: f64,
    /// The first request after it \[s\]; infinite when it lasts until the logs end.
    pub end_s: f64,
    /// The figure's mean inside and outside.
    pub inside: f64,
    pub outside: f64,
    /// Requests inside, over all the logs.
    pub n_inside: usize,
    /// How far the inside mean stands from the rest, in standard errors.
    pub z: f64,
    /// Logs that show it (inside and outside differing the same way, by half as much at
    /// least), of those with requests on both sides.
    pub seen_in: usize,
    pub logs: usize,
}

impl Shift {
    /// Whether the shift covers time `t`.
    pub fn covers(&self, t: f64) -> bool {
        self.start_s <= t && t < self.end_s
    }
}

/// Standard errors a shift must stand out by: the search tries about half a million
/// stretches, whose largest chance deviation stays near five.
const MIN_Z: f64 = 8.0;
/// Requests a shift must hold.
const MIN_INSIDE: usize = 20;
/// Slices the coarse search cuts the time into.
const SLICES: usize = 1000;

/// The shifts of one endpoint's figure, given per log as `(time, value)`; `big_enough`
/// judges the effect `(inside, outside)` worth an incident, `shown(seen_in, logs)` whether
/// enough logs show it. At most `max` shifts, strongest first; each later one is sought with
/// the earlier ones' requests set to the outside mean.
pub fn shifts(
    segments: &[Vec<(f64, f64)>],
    big_enough: impl Fn(f64, f64) -> bool,
    shown: impl Fn(usize, usize) -> bool,
    max: usize,
) -> Vec<Shift> {
    let mut samples: Vec<(f64, f64, usize)> = segments
        .iter()
        .enumerate()
        .flat_map(|(s, xs)| xs.iter().map(move |&(t, x)| (t, x, s)))
        .filter(|(t, x, _)| t.is_finite() && x.is_finite())
        .collect();
    samples.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut found: Vec<Shift> = Vec::new();
    while found.len() < max {
        let Some(shift) = strongest(&samples, segments.len()) else {
            break;
        };
        let seen = shown(shift.seen_in, shift.logs);
        let strong = shift.z >= MIN_Z && shift.n_inside >= MIN_INSIDE;
        if !(strong && seen && big_enough(shift.inside, shift.outside)) {
            break;
        }
        for s in samples.iter_mut().filter(|s| shift.covers(s.0)) {
            s.1 = shift.outside;
        }
        found.push(shift);
    }
    found.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    found
}

/// The stretch whose mean stands farthest from the rest (`z² = (S_w − n_w·μ)² /
/// (σ²·n_w·(1 − n_w/n))`), sought over slices of time, then to the request at both ends.
fn strongest(samples: &[(f64, f64, usize)], logs: usize) -> Option<Shift> {
    let n = samples.len();
    if n < 2 * MIN_INSIDE {
        return None;
    }
    let mut prefix = vec![0.0; n + 1];
    for (i, s) in samples.iter().enumerate() {
        prefix[i + 1] = prefix[i] + s.1;
    }
    let mean = prefix[n] / n as f64;
    let var = samples.iter().map(|s| (s.1 - mean).powi(2)).sum::<f64>() / n as f64;
    if var <= 0.0 {
        return None;
    }
    let z2 = |a: usize, b: usize| {
        if b <= a || b - a == n {
            return 0.0;
        }
        let k = (b - a) as f64;
        let d = prefix[b] - prefix[a] - k * mean;
        d * d / (var * k * (1.0 - k / n as f64))
    };
    // Cut points: the first sample of each slice of time.
    let (t0, t1) = (samples[0].0, samples[n - 1].0);
    let width = ((t1 - t0) / SLICES as f64).max(1e-9);
    let mut cuts: Vec<usize> = (0..=SLICES)
        .map(|k| samples.partition_point(|s| s.0 < t0 + k as f64 * width))
        .collect();
    cuts.push(n);
    cuts.dedup();
    let (mut best, mut best_ab) = (0.0, (0, 0));
    for (i, &a) in cuts.iter().enumerate() {
        for &b in &cuts[i + 1..] {
            let z = z2(a, b);
            if z > best {
                (best, best_ab) = (z, (a, b));
            }
        }
    }
    // Refine each end to the request, within the slices beside it.
    let near = |at: usize| {
        let k = cuts.partition_point(|&c| c < at);
        let lo = cuts[k.saturating_sub(1)];
        let hi = cuts[(k + 1).min(cuts.len() - 1)];
        let step = ((hi - lo) / 200).max(1);
        (lo..=hi).step_by(step).collect::<Vec<usize>>()
    };
    let (starts, ends) = (near(best_ab.0), near(best_ab.1));
    for &a in &starts {
        for &b in &ends {
            let z = z2(a, b);
            if z > best {
                (best, best_ab) = (z, (a, b));
            }
        }
    }
    let (a, b) = best_ab;
    if b <= a {
        return None;
    }
    let k = (b - a) as f64;
    let inside = (prefix[b] - prefix[a]) / k;
    let outside = (prefix[n] - prefix[b] + prefix[a]) / (n as f64 - k);
    let start_s = samples[a].0;
    let end_s = samples.get(b).map_or(f64::INFINITY, |s| s.0);
    let (seen_in, with_both) = per_log(samples, logs, start_s, end_s, inside - outside);
    Some(Shift {
        start_s,
        end_s,
        inside,
        outside,
        n_inside: b - a,
        z: best.sqrt(),
        seen_in,
        logs: with_both,
    })
}

/// Of the logs with requests both inside and outside `[start, end)`: how many show the
/// difference `delta` the same way, by half as much at least; and how many there are.
fn per_log(
    samples: &[(f64, f64, usize)],
    logs: usize,
    start: f64,
    end: f64,
    delta: f64,
) -> (usize, usize) {
    let mut sums = vec![[(0.0, 0usize); 2]; logs];
    for &(t, x, s) in samples {
        let side = usize::from(start <= t && t < end);
        sums[s][side].0 += x;
        sums[s][side].1 += 1;
    }
    let with_both: Vec<f64> = sums
        .iter()
        .filter(|[o, i]| o.1 >= 5 && i.1 >= 5)
        .map(|[o, i]| i.0 / i.1 as f64 - o.0 / o.1 as f64)
        .collect();
    let shown = with_both
        .iter()
        .filter(|d| d.signum() == delta.signum() && d.abs() >= delta.abs() / 2.0)
        .count();
    (shown, with_both.len())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Per log, a sample every 0.5 s for 400 s: noise of spread 0.3 around 0, plus `lift` over
    /// `[100, 200)`.
    fn logs(lifts: &[f64]) -> Vec<Vec<(f64, f64)>> {
        let mut x: u64 = 99;
        lifts
            .iter()
            .map(|&lift| {
                (0..800)
                    .map(|i| {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                        let t = f64::from(i) * 0.5;
                        let inside = (100.0..200.0).contains(&t);
                        (t, 0.3 * (u - 0.5) * 3.46 + if inside { lift } else { 0.0 })
                    })
                    .collect()
            })
            .collect()
    }

    pub(in crate::fit) fn request(
        start: f64,
        outcome: EntryOutcome,
        error: Option<ErrorKind>,
    ) -> Request {
        Request {
            start,
            arrived: f64::NAN,
            end: start,
            endpoint: 0,
            outcome,
            error,
            status: 0,
            retry_after: f64::NAN,
            input: f64::NAN,
            output: f64::NAN,
            max_tokens: f64::NAN,
            ttft: f64::NAN,
            job: u64::MAX,
            step: 0,
            attempt: 1,
            call: 0,
            hedge: false,
            cache_hit: None,
            limit_refused: false,
        }
    }

    fn refused(start: f64) -> Request {
        request(
            start,
            EntryOutcome::Rejected,
            Some(ErrorKind::ConnectionRefused),
        )
    }

    #[test]
    fn a_few_refusals_the_endpoint_never_recovers_from_are_an_outage() {
        let ok = request(0.0, EntryOutcome::Ok, None);
        let found = runs(&[ok, refused(1.0), refused(1.2)], 0, true);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].start_s, found[0].end_s), (1.0, None));
        // Served again afterwards: a blip, not an outage.
        let again = request(2.0, EntryOutcome::Ok, None);
        assert!(runs(&[refused(1.0), refused(1.2), again], 0, true).is_empty());
        // One refusal is not enough, and a few 503s at the end are weather.
        assert!(runs(&[refused(1.0)], 0, true).is_empty());
        let failed = |t| request(t, EntryOutcome::Error, Some(ErrorKind::Upstream));
        assert!(runs(&[failed(1.0), failed(1.2)], 0, false).is_empty());
    }

    fn any(_: f64, _: f64) -> bool {
        true
    }

    fn most(seen: usize, logs: usize) -> bool {
        seen * 2 > logs
    }

    #[test]
    fn a_shift_in_every_log_is_found_where_it_is() {
        let found = shifts(&logs(&[1.1, 1.1, 1.1]), any, most, 3);
        assert_eq!(found.len(), 1, "{found:?}");
        let s = &found[0];
        assert_eq!((s.start_s, s.end_s), (100.0, 200.0));
        assert!((s.inside - s.outside - 1.1).abs() < 0.05, "{s:?}");
        assert_eq!((s.seen_in, s.logs), (3, 3));
    }

    #[test]
    fn noise_has_no_shift() {
        assert!(shifts(&logs(&[0.0, 0.0, 0.0]), any, most, 3).is_empty());
    }

    #[test]
    fn a_shift_in_one_log_of_three_is_weather() {
        assert!(shifts(&logs(&[3.0, 0.0, 0.0]), any, most, 3).is_empty());
    }

    #[test]
    fn a_small_effect_is_left_out() {
        let big = |inside: f64, outside: f64| (inside - outside).abs() >= 0.5;
        assert!(shifts(&logs(&[0.2, 0.2, 0.2]), big, most, 3).is_empty());
    }
}
