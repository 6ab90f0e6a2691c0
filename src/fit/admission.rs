//! What the provider admits: concurrency capacity and its cycle, the 429 refusals and which
//! limit sent them, the token bucket, the published limits.
//!
//! The log holds every arrival at an endpoint in order, with what it met, so the provider's
//! admission can be replayed exactly: the requests in flight at each arrival are counted from
//! the log itself, and a candidate capacity (or bucket) is scored by how many of the log's
//! admissions and refusals it would have decided otherwise. The true parameters score zero;
//! the fit searches for the lowest score, from estimates read off the data.

use std::collections::{BTreeMap, BinaryHeap};

use super::input::{HeaderSample, Log, Request, key_unit};
use crate::request_log::{EntryOutcome, HeaderUnit};

/// What an arrival met, for the replay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Met {
    /// Admitted.
    Admitted,
    /// A 429 from the concurrency limit.
    Capacity,
    /// A 429 from the token bucket (no published limit explains it).
    Quota,
    /// A 429 that a published limit's headers explain.
    Limit,
    /// "Overloaded".
    Overloaded,
    /// Turned away (outage, key, too large): no limit saw it.
    Other,
}

/// One arrival at an endpoint.
#[derive(Clone, Copy, Debug)]
pub struct Arrival {
    /// When \[s\].
    pub at: f64,
    /// Admitted requests surely in flight at the endpoint when it arrived: what an admission
    /// says about the limit (`cap > in_flight`). Equal to `in_flight_most` in a log timed
    /// at the server.
    pub in_flight: u32,
    /// Admitted requests that may have been in flight when it arrived, given the log's
    /// [`timing_slack`]: what a refusal says (`cap <= in_flight_most`).
    pub in_flight_most: u32,
    /// Admitted requests the client had out when it sent this one, by its own clock, an
    /// answer up to the slack after the send taken to come first (a worker's next call
    /// follows its answer, which the client's clock puts up to a round trip late).
    pub out: u32,
    /// What it met.
    pub met: Met,
    /// The Retry-After it carried \[s\] or `NaN`.
    pub retry_after: f64,
}

/// Per segment, per endpoint: the arrivals in order.
pub fn arrivals(log: &Log, limit_refusal: &dyn Fn(usize, usize) -> bool) -> Vec<Vec<Vec<Arrival>>> {
    log.segments
        .iter()
        .enumerate()
        .map(|(s, segment)| {
            let slack = timing_slack(&segment.requests);
            (0..log.endpoints.len() as u32)
                .map(|e| endpoint_arrivals(&segment.requests, e, slack, |i| limit_refusal(s, i)))
                .collect()
        })
        .collect()
}

/// How much later than the server a log may record an answer, relative to a send it
/// records early \[s\]: a client-side log (a HAR capture, OpenTelemetry spans, a harness's
/// own) times each request from before it left to after its answer came back, so a slot the
/// server freed looks busy for up to a round trip more. A refusal the server answers at once
/// takes exactly that round trip in such a log, so the longest one measures it (0 in a
/// server's or simulator's log, whose refusals take no time). At most a tenth of the median
/// served request, so a few slow refusals cannot blur every count.
pub fn timing_slack(requests: &[Request]) -> f64 {
    let refused = requests
        .iter()
        .filter(|r| {
            matches!(
                r.outcome,
                EntryOutcome::RateLimited | EntryOutcome::Overloaded
            )
        })
        .map(|r| r.end - r.start)
        .fold(0.0_f64, f64::max);
    let mut served: Vec<f64> = requests
        .iter()
        .filter(|r| r.admitted())
        .map(|r| r.end - r.start)
        .collect();
    if served.is_empty() {
        return 0.0;
    }
    let middle = served.len() / 2;
    let (_, median, _) = served.select_nth_unstable_by(middle, f64::total_cmp);
    refused.min(*median / 10.0)
}

/// Ends of requests still open, the earliest on top.
#[derive(Default)]
struct Open(BinaryHeap<std::cmp::Reverse<OrdF64>>);

impl Open {
    fn add(&mut self, end: f64) {
        self.0.push(std::cmp::Reverse(OrdF64(end)));
    }
    /// Drops the ends at or before `t`; returns how many are left.
    fn after(&mut self, t: f64) -> u32 {
        while self.0.peek().is_some_and(|end| end.0.0 <= t) {
            self.0.pop();
        }
        self.0.len() as u32
    }
}

/// Counts the requests in flight at each arrival at `e`, in the order the log sent them (an
/// answer at the instant of a send is taken to come first, as a worker's next call follows
/// its answer). A client's log times each request up to a round trip `slack` early at its
/// start and late at its end ([`timing_slack`]), so a count is only known between the
/// requests surely in flight at the server when this one arrived (sent `slack` before it,
/// answered `2·slack` after) and those that may have been (sent before it or less than
/// `slack` after, answered after it). With no slack both are the log's own count.
fn endpoint_arrivals(
    requests: &[Request],
    e: u32,
    slack: f64,
    is_limit: impl Fn(usize) -> bool,
) -> Vec<Arrival> {
    let mine: Vec<(usize, &Request)> = requests
        .iter()
        .enumerate()
        .filter(|(_, r)| r.endpoint == e)
        .collect();
    // Each set is only ever asked about later and later instants, so each drops what ended.
    let (mut sure, mut sent, mut held) = (Open::default(), Open::default(), Open::default());
    let mut next_sure = 0;
    let mut out = Vec::with_capacity(mine.len());
    for (j, &(i, r)) in mine.iter().enumerate() {
        // Admitted requests sent at least `slack` before this one count as surely started.
        while next_sure < j && mine[next_sure].1.start + slack <= r.start {
            let earlier = mine[next_sure].1;
            if earlier.admitted() {
                sure.add(earlier.end);
            }
            next_sure += 1;
        }
        // Those sent before it, or less than `slack` after, may have reached the server first.
        let overtaking = mine[j + 1..]
            .iter()
            .take_while(|(_, o)| o.start < r.start + slack)
            .filter(|(_, o)| o.admitted() && o.end > r.start)
            .count() as u32;
        let met = match r.outcome {
            _ if r.admitted() => Met::Admitted,
            EntryOutcome::RateLimited if is_limit(i) => Met::Limit,
            // Capacity or quota: classified once the capacity is known.
            EntryOutcome::RateLimited => Met::Quota,
            EntryOutcome::Overloaded => Met::Overloaded,
            _ => Met::Other,
        };
        let in_flight = sure.after(r.start + 2.0 * slack);
        let out_then = sent.after(r.start);
        out.push(Arrival {
            at: r.start,
            in_flight,
            in_flight_most: out_then + overtaking,
            out: held.after(r.start + slack),
            met,
            retry_after: r.retry_after,
        });
        if r.admitted() {
            sent.add(r.end);
            held.add(r.end);
        }
    }
    out
}

/// A totally ordered `f64` for the heap.
#[derive(Clone, Copy, Debug, PartialEq)]
struct OrdF64(f64);
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A capacity with its cycle: `max(1, round(capacity · factor(t)))`, the factor swinging from
/// `trough` to 1 over `period_s` (0 = flat).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CapacityModel {
    /// Peak concurrency.
    pub capacity: u32,
    /// Cycle period \[s\]; 0 for none.
    pub period_s: f64,
    /// Lowest factor.
    pub trough: f64,
    /// Shift \[s\]: the trough is at `phase_s`.
    pub phase_s: f64,
    /// A capacity incident, when the logs show one.
    pub step: Option<Step>,
}

/// A capacity incident: the limit multiplied by `factor` over `[start_s, end_s)`, at the
/// same time in every log (scripted incidents are; weather is not).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// The first arrival that met the lower limit \[s\].
    pub start_s: f64,
    /// The first arrival after it that met the full limit again \[s\]; infinite when none.
    pub end_s: f64,
    /// The multiplier: the lower limit over the full one, exactly.
    pub factor: f64,
    /// Arrivals the step decides as the log did and the model without it did not.
    pub explains: u64,
}

impl CapacityModel {
    /// The limit at `t`, as the provider rounds it.
    pub fn at(&self, t: f64) -> u32 {
        let (cycle, step) = self.factors(t);
        let raw = (f64::from(self.capacity) * cycle * step).round_ties_even();
        if raw < 1.0 { 1 } else { raw as u32 }
    }

    /// The cycle's and the incident's multipliers at `t`.
    fn factors(&self, t: f64) -> (f64, f64) {
        let cycle = if self.period_s > 0.0 {
            let mid = (1.0 + self.trough) / 2.0;
            let amp = (1.0 - self.trough) / 2.0;
            mid - amp * (2.0 * std::f64::consts::PI / self.period_s * (t - self.phase_s)).cos()
        } else {
            1.0
        };
        let step = self
            .step
            .filter(|s| s.start_s <= t && t < s.end_s)
            .map_or(1.0, |s| s.factor);
        (cycle, step)
    }

    /// Arrivals the model decides otherwise than the log: an admission above the limit, a
    /// capacity refusal or "overloaded" below it.
    fn violations(&self, bounds: &[Bound]) -> u64 {
        bounds
            .iter()
            .map(|b| {
                let cap = self.at(b.at);
                u64::from(if b.upper { b.k < cap } else { b.k >= cap })
            })
            .sum()
    }
}

/// One constraint on the capacity: an admission at `k` in flight (`cap > k`) or a refusal at
/// `k` (`cap <= k`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Bound {
    at: f64,
    k: u32,
    upper: bool,
}

/// The capacity fit of one endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct CapacityFit {
    /// The model; `None` when the limit was not reached (fewer than [`MIN_REFUSALS`] capacity
    /// refusals).
    pub model: Option<CapacityModel>,
    /// The most requests ever in flight at an admission, plus one.
    pub peak_in_flight: u32,
    /// The most requests the client ever had out at once (in flight at any arrival, plus that
    /// one): its pool's size, at least.
    pub most_leased: u32,
    /// Capacity refusals and "overloaded" answers seen.
    pub refusals: u64,
    /// Admissions seen.
    pub admissions: u64,
    /// Arrivals the model decides otherwise than the log.
    pub violations: u64,
    /// The same for the best flat capacity.
    pub flat_violations: u64,
    /// The Retry-After of its refusals (median) \[s\].
    pub retry_after_s: Option<f64>,
    /// How long the middle 80 % of its capacity refusals span \[s\]: a cycle whose period is
    /// longer was seen for one trough at most.
    pub refusal_spread_s: f64,
    /// What each admission and capacity refusal says about the limit, kept to weigh another
    /// cycle (the client's own) against the log.
    bounds: Vec<Bound>,
}

/// Capacity refusals a limit rests on: fewer are as likely a quota's 429 that came when the
/// endpoint happened to be at its busiest.
const MIN_REFUSALS: u64 = 5;

/// Splits the 429s of one endpoint's arrivals into capacity and quota refusals, then fits the
/// capacity and its cycle. A group of 429s sharing one Retry-After is the concurrency limit's
/// when most of them came with the endpoint as full as it ever was around then.
pub fn fit_capacity(arrivals: &mut [Vec<Arrival>]) -> CapacityFit {
    classify_429s(arrivals);
    let mut bounds = Vec::new();
    let (mut peak, mut refusals, mut admissions) = (0u32, 0u64, 0u64);
    let mut most_leased = 0u32;
    let mut after = Vec::new();
    for segment in arrivals.iter() {
        for a in segment {
            if a.met != Met::Other {
                most_leased = most_leased.max(a.out + 1);
            }
            match a.met {
                Met::Admitted => {
                    peak = peak.max(a.in_flight + 1);
                    admissions += 1;
                    bounds.push(Bound {
                        at: a.at,
                        k: a.in_flight,
                        upper: false,
                    });
                }
                Met::Capacity | Met::Overloaded => {
                    refusals += 1;
                    if a.retry_after.is_finite() {
                        after.push(a.retry_after);
                    }
                    bounds.push(Bound {
                        at: a.at,
                        k: a.in_flight_most,
                        upper: true,
                    });
                }
                _ => {}
            }
        }
    }
    after.sort_by(f64::total_cmp);
    let retry_after_s = (!after.is_empty()).then(|| super::stats::quantile(&after, 0.5));
    if refusals < MIN_REFUSALS {
        return CapacityFit {
            model: None,
            peak_in_flight: peak,
            most_leased,
            refusals,
            admissions,
            violations: 0,
            flat_violations: 0,
            retry_after_s,
            refusal_spread_s: 0.0,
            bounds,
        };
    }
    let span = bounds.iter().fold(0.0f64, |m, b| m.max(b.at));
    let flat = (1..=peak.max(1) + 1)
        .map(|c| CapacityModel {
            capacity: c,
            period_s: 0.0,
            trough: 1.0,
            phase_s: 0.0,
            step: None,
        })
        .min_by_key(|m| (m.violations(&bounds), m.capacity))
        .expect("a candidate");
    let flat_violations = flat.violations(&bounds);
    let model = choose_model(&bounds, flat, peak, span);
    let mut refused: Vec<f64> = bounds.iter().filter(|b| b.upper).map(|b| b.at).collect();
    refused.sort_by(f64::total_cmp);
    let q = |p: f64| super::stats::quantile(&refused, p);
    CapacityFit {
        violations: model.violations(&bounds),
        model: Some(model),
        peak_in_flight: peak,
        most_leased,
        refusals,
        admissions,
        flat_violations,
        retry_after_s,
        refusal_spread_s: q(0.9) - q(0.1),
        bounds,
    }
}

impl CapacityFit {
    /// Arrivals `m` decides otherwise than the log.
    pub fn violations_of(&self, m: &CapacityModel) -> u64 {
        m.violations(&self.bounds)
    }
}

/// A cycle given from outside the logs: its period, trough over peak, and phase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rhythm {
    pub period_s: f64,
    pub trough: f64,
    pub phase_s: f64,
}

/// The endpoint's limit with the cycle fixed at `rhythm`: the peak capacity that decides the
/// fewest arrivals otherwise than the log (ties to `preferred`, else the smallest), with a
/// capacity incident where one earns its place. `None` when the limit was never reached.
pub fn at_rhythm(
    fit: &CapacityFit,
    rhythm: Rhythm,
    preferred: Option<u32>,
) -> Option<CapacityModel> {
    fit.model?;
    let base = CapacityModel {
        capacity: 1,
        period_s: rhythm.period_s,
        trough: rhythm.trough,
        phase_s: rhythm.phase_s,
        step: None,
    };
    let mut candidates = threshold_best(&fit.bounds, base);
    candidates.extend(preferred);
    candidates.sort_unstable();
    candidates.dedup();
    let score = |c: u32| {
        CapacityModel {
            capacity: c,
            ..base
        }
        .violations(&fit.bounds)
    };
    let best = candidates
        .into_iter()
        .map(|c| (score(c), Some(c) != preferred, c))
        .min()?;
    let model = CapacityModel {
        capacity: best.2,
        ..base
    };
    let stepped = search_step(&fit.bounds, model, fit.peak_in_flight)
        .filter(|m| accept(m.violations(&fit.bounds), best.0));
    Some(stepped.unwrap_or(model))
}

/// The peak capacities (and their neighbours) that the rounding-free thresholds of `bounds`
/// score best under `base`'s cycle: an admission at `k` asks `c·f(t) ≥ k + ½`, a refusal
/// `c·f(t) < k + ½`, so each bound is a threshold on `c` and one sweep scores them all.
fn threshold_best(bounds: &[Bound], base: CapacityModel) -> Vec<u32> {
    let mut lower = Vec::new();
    let mut upper = Vec::new();
    for b in bounds {
        let (cycle, step) = base.factors(b.at);
        let threshold = (f64::from(b.k) + 0.5) / (cycle * step).max(1e-9);
        if b.upper {
            upper.push(if b.k == 0 { 0.0 } else { threshold });
        } else if b.k > 0 {
            lower.push(threshold);
        }
    }
    lower.sort_by(f64::total_cmp);
    upper.sort_by(f64::total_cmp);
    // Violations at c: admissions whose threshold is above c, refusals whose is at or below.
    let at = |c: u32| {
        let c = f64::from(c);
        (lower.len() - lower.partition_point(|x| *x <= c)) + upper.partition_point(|x| *x <= c)
    };
    // The count changes only at a threshold, so the best is at 1 or next to one.
    let limit = f64::from(u32::MAX / 2);
    let best_c = lower
        .iter()
        .chain(&upper)
        .map(|x| x.min(limit).ceil() as u32)
        .flat_map(|c| [c.saturating_sub(1), c])
        .chain([1])
        .filter(|c| *c >= 1)
        .min_by_key(|c| (at(*c), *c))
        .unwrap_or(1);
    vec![best_c.saturating_sub(1).max(1), best_c, best_c + 1]
}

/// A cycle or an incident earns its three parameters when it explains at least half of the
/// simpler model's violations and at least ten arrivals.
pub fn accept(richer: u64, simpler: u64) -> bool {
    richer * 2 <= simpler && simpler - richer >= 10
}

/// The simplest of flat, flat with an incident, cycle and cycle with an incident that
/// explains the log: each part must earn its parameters over the model without it.
fn choose_model(bounds: &[Bound], flat: CapacityModel, peak: u32, span: f64) -> CapacityModel {
    let score = |m: &CapacityModel| m.violations(bounds);
    let stepped = search_step(bounds, flat, peak).filter(|m| accept(score(m), score(&flat)));
    let simple = stepped.unwrap_or(flat);
    let Some(cycled) = search_cycle(bounds, peak, span) else {
        return simple;
    };
    let both = search_step(bounds, cycled, peak)
        .filter(|m| accept(score(m), score(&cycled)))
        .unwrap_or(cycled);
    if accept(score(&both), score(&simple)) {
        both
    } else {
        simple
    }
}

/// The capacity incident that explains the most of `base`'s violations: per full limit
/// (the base's, or one above the most seen in flight) and lower limit below it, the stretch of
/// time whose arrivals the lower limit decides better, by a maximum-sum run over the bounds
/// in time order (thinned for the search, then exact on all of them).
fn search_step(bounds: &[Bound], base: CapacityModel, peak: u32) -> Option<CapacityModel> {
    let mut sorted = bounds.to_vec();
    sorted.sort_by(|a, b| a.at.total_cmp(&b.at));
    let span = sorted.last()?.at - sorted.first()?.at;
    let thin = thin_bounds(&sorted, (span / 4000.0).max(0.5));
    // Scored by the violations left: the full limit's own, less what the step removes.
    let mut best: Option<(i64, CapacityModel)> = None;
    let mut caps = vec![base.capacity, peak, peak + 1];
    caps.sort_unstable();
    caps.dedup();
    for capacity in caps.into_iter().filter(|c| *c >= 2) {
        let full = CapacityModel { capacity, ..base };
        let own = full.violations(&thin) as i64;
        // A drop by a quarter at least: one less than a misfit cycle gives is rounding.
        for lower in (1..capacity).filter(|l| 4 * l <= 3 * capacity) {
            let factor = f64::from(lower) / f64::from(capacity);
            let (gain, _, _) = best_run(&thin, full, factor);
            if best.as_ref().is_none_or(|(left, _)| own - gain < *left) {
                best = Some((own - gain, with_step(full, factor, 0.0, f64::INFINITY, 0)));
            }
        }
    }
    let (_, candidate) = best?;
    let factor = candidate.step?.factor;
    let (gain, from, to) = best_run(&sorted, candidate, factor);
    if gain <= 0 {
        return None;
    }
    let start_s = sorted[from].at;
    let end_s = sorted.get(to + 1).map_or(f64::INFINITY, |b| b.at);
    Some(with_step(candidate, factor, start_s, end_s, gain as u64))
}

fn with_step(
    m: CapacityModel,
    factor: f64,
    start_s: f64,
    end_s: f64,
    explains: u64,
) -> CapacityModel {
    CapacityModel {
        step: Some(Step {
            start_s,
            end_s,
            factor,
            explains,
        }),
        ..m
    }
}

/// The run of consecutive bounds (in time order) over which multiplying `m`'s limit by
/// `factor` removes the most violations: (violations removed, first index, last index).
fn best_run(bounds: &[Bound], m: CapacityModel, factor: f64) -> (i64, usize, usize) {
    let stepped = with_step(m, factor, f64::NEG_INFINITY, f64::INFINITY, 0);
    let plain = CapacityModel { step: None, ..m };
    let wrong = |model: &CapacityModel, b: &Bound| {
        let cap = model.at(b.at);
        i64::from(if b.upper { b.k < cap } else { b.k >= cap })
    };
    let (mut best, mut best_from, mut best_to) = (0i64, 0usize, 0usize);
    let (mut run, mut from) = (0i64, 0usize);
    for (i, b) in bounds.iter().enumerate() {
        if run <= 0 {
            run = 0;
            from = i;
        }
        run += wrong(&plain, b) - wrong(&stepped, b);
        if run > best {
            (best, best_from, best_to) = (run, from, i);
        }
    }
    (best, best_from, best_to)
}

/// Grid search over period, phase, trough and peak capacity (from the most seen in flight to
/// four times it), then a finer grid around the best.
fn search_cycle(bounds: &[Bound], peak: u32, span: f64) -> Option<CapacityModel> {
    if span < 20.0 || bounds.len() < 50 {
        return None;
    }
    // Thin the bounds to the tightest per slice of time (at most a few thousand): the search
    // evaluates each many times. The coarse grid sees every fifth of them.
    let thin = thin_bounds(bounds, (span / 4000.0).max(1.0));
    let sparse: Vec<Bound> = thin
        .iter()
        .step_by((thin.len() / 2000).max(1))
        .copied()
        .collect();
    let mut best: Option<(u64, CapacityModel)> = None;
    // The peak may lie above anything the client had in flight: then only the troughs bind,
    // and their depth and width tell the peak.
    let mut caps: Vec<u32> = [1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0]
        .iter()
        .map(|r| (f64::from(peak) * r).round() as u32)
        .chain([peak + 1])
        .collect();
    caps.sort_unstable();
    caps.dedup();
    let troughs: Vec<f64> = (1..10).map(|t| t as f64 / 10.0).collect();
    for i in 0..48 {
        let period_s = 10.0 * (span / 10.0).powf(i as f64 / 47.0);
        let phases: Vec<f64> = (0..24).map(|p| period_s * p as f64 / 24.0).collect();
        score_period(&sparse, period_s, &phases, &troughs, &caps, &mut best);
    }
    best = best.map(|(_, m)| (m.violations(&thin), m));
    // Refine around the best, shrinking the steps while they help.
    let mut scale = 1.0;
    while scale > 0.01 {
        let (score, centre) = best?;
        let c = centre.capacity;
        let caps: Vec<u32> = if c > peak + 1 {
            vec![c - 1, c, c + 1]
        } else {
            vec![peak, peak + 1]
        };
        let troughs: Vec<f64> = (-5..=5)
            .map(|dt| (centre.trough + dt as f64 * 0.02 * scale).clamp(0.01, 1.0))
            .collect();
        for dp in -5..=5 {
            let period_s = centre.period_s * (1.0 + dp as f64 * 0.01 * scale);
            let phases: Vec<f64> = (-5..=5)
                .map(|d| centre.phase_s + d as f64 * period_s / 96.0 * scale)
                .collect();
            score_period(&thin, period_s, &phases, &troughs, &caps, &mut best);
        }
        if best.as_ref().is_some_and(|(s, _)| *s == score) {
            scale /= 3.0;
        }
    }
    best.map(|(_, m)| CapacityModel {
        phase_s: m.phase_s.rem_euclid(m.period_s),
        ..m
    })
}

/// Scores every (phase, trough, capacity) at one period, keeping the best in `best`. The
/// cosine of each bound's time is taken once per period: `cos(ω(t − φ))` is
/// `cos ωt · cos ωφ + sin ωt · sin ωφ`.
fn score_period(
    bounds: &[Bound],
    period_s: f64,
    phases: &[f64],
    troughs: &[f64],
    caps: &[u32],
    best: &mut Option<(u64, CapacityModel)>,
) {
    let omega = 2.0 * std::f64::consts::PI / period_s;
    let trig: Vec<(f64, f64)> = bounds
        .iter()
        .map(|b| ((omega * b.at).cos(), (omega * b.at).sin()))
        .collect();
    for &phase_s in phases {
        let (cp, sp) = ((omega * phase_s).cos(), (omega * phase_s).sin());
        for &trough in troughs {
            let (mid, amp) = ((1.0 + trough) / 2.0, (1.0 - trough) / 2.0);
            for &capacity in caps {
                let c = f64::from(capacity);
                let violations: u64 = bounds
                    .iter()
                    .zip(&trig)
                    .map(|(b, (ct, st))| {
                        let factor = mid - amp * (ct * cp + st * sp);
                        // `+ 0.5` and truncation: the provider's ties-to-even differs only
                        // at exact halves, and `round_ties_even` is a library call here.
                        let cap = ((c * factor + 0.5) as u32).max(1);
                        u64::from(if b.upper { b.k < cap } else { b.k >= cap })
                    })
                    .sum();
                if best.as_ref().is_none_or(|(v, _)| violations < *v) {
                    *best = Some((
                        violations,
                        CapacityModel {
                            capacity,
                            period_s,
                            trough,
                            phase_s,
                            step: None,
                        },
                    ));
                }
            }
        }
    }
}

/// Per slice of `width_s` and kind, the tightest bound: the highest admission, the lowest
/// refusal (each keeps its own time, so no constraint is loosened, only some dropped).
fn thin_bounds(bounds: &[Bound], width_s: f64) -> Vec<Bound> {
    let mut by_second: BTreeMap<(i64, bool), Bound> = BTreeMap::new();
    for b in bounds {
        let key = ((b.at / width_s).floor() as i64, b.upper);
        by_second
            .entry(key)
            .and_modify(|kept| {
                if (b.upper && b.k < kept.k) || (!b.upper && b.k > kept.k) {
                    *kept = *b;
                }
            })
            .or_insert(*b);
    }
    by_second.into_values().collect()
}

/// Marks each 429 not explained by a published limit as capacity or quota. 429s sharing a
/// Retry-After (to the millisecond) are one limit's; the group is the concurrency limit's
/// when most of its refusals came at the most in flight seen within two seconds.
fn classify_429s(arrivals: &mut [Vec<Arrival>]) {
    let mut groups: BTreeMap<i64, (u64, u64)> = BTreeMap::new();
    let mut full: Vec<Vec<bool>> = Vec::new();
    for segment in arrivals.iter() {
        let local = local_peaks(segment);
        let flags: Vec<bool> = segment
            .iter()
            .zip(&local)
            .map(|(a, peak)| a.in_flight_most >= *peak)
            .collect();
        for (a, f) in segment.iter().zip(&flags) {
            if a.met == Met::Quota {
                let g = groups.entry(group_key(a.retry_after)).or_default();
                g.0 += u64::from(*f);
                g.1 += 1;
            }
        }
        full.push(flags);
    }
    for (segment, flags) in arrivals.iter_mut().zip(&full) {
        for (a, f) in segment.iter_mut().zip(flags) {
            if a.met != Met::Quota {
                continue;
            }
            let capacity = if a.retry_after.is_nan() {
                *f
            } else {
                let (at_full, n) = groups[&group_key(a.retry_after)];
                at_full * 2 > n
            };
            if capacity {
                a.met = Met::Capacity;
            }
        }
    }
}

fn group_key(retry_after: f64) -> i64 {
    if retry_after.is_nan() {
        i64::MIN
    } else {
        (retry_after * 1000.0).round() as i64
    }
}

/// For each arrival, the most in flight at any admission within two seconds, plus one (at
/// least 1): the capacity as the admissions around it show it.
fn local_peaks(segment: &[Arrival]) -> Vec<u32> {
    const WINDOW_S: f64 = 2.0;
    let admitted: Vec<(f64, u32)> = segment
        .iter()
        .filter(|a| a.met == Met::Admitted)
        .map(|a| (a.at, a.in_flight + 1))
        .collect();
    let global = admitted.iter().map(|a| a.1).max().unwrap_or(1);
    segment
        .iter()
        .map(|a| {
            let from = admitted.partition_point(|x| x.0 < a.at - WINDOW_S);
            let to = admitted.partition_point(|x| x.0 <= a.at + WINDOW_S);
            admitted[from..to]
                .iter()
                .map(|x| x.1)
                .max()
                .unwrap_or(global)
                .max(1)
        })
        .collect()
}

/// A token bucket: `refill_per_s`, `burst_size`, and tightening on refusals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bucket {
    /// Tokens per second at full allowance.
    pub refill_per_s: f64,
    /// Most tokens held.
    pub burst_size: f64,
    /// Factor per refusal.
    pub tightening: f64,
    /// Lowest allowance.
    pub floor: f64,
    /// Allowance regained per second.
    pub recovery_per_s: f64,
}

impl Bucket {
    /// Replays the arrivals (capacity refusals tighten, quota checks refill and charge one)
    /// and counts those it decides otherwise than the log. The bucket follows what the log
    /// says happened, not what it would have decided (teacher forcing): one wrong decision
    /// does not send the rest of the replay astray. Also returns a loss that a search can
    /// follow: how far the bucket's level was on the wrong side of one token, summed — zero for
    /// the true parameters, and continuous in them where the count jumps.
    fn replay(&self, segments: &[Vec<Arrival>]) -> (u64, f64) {
        let mut wrong = 0;
        let mut loss = 0.0;
        for segment in segments {
            let (mut tokens, mut allowance, mut at) = (self.burst_size, 1.0f64, 0.0f64);
            for a in segment {
                match a.met {
                    Met::Capacity => allowance = (allowance * self.tightening).max(self.floor),
                    Met::Admitted | Met::Quota => {
                        let elapsed = (a.at - at).max(0.0);
                        if elapsed > 0.0 {
                            allowance = (allowance + self.recovery_per_s * elapsed).min(1.0);
                            tokens = (tokens + elapsed * self.refill_per_s * allowance)
                                .min(self.burst_size);
                            at = a.at;
                        }
                        let admit = tokens >= 1.0;
                        let admitted = a.met == Met::Admitted;
                        wrong += u64::from(admit != admitted);
                        loss += if admitted {
                            (1.0 - tokens).max(0.0)
                        } else {
                            (tokens - 1.0 + 1e-9).max(0.0)
                        };
                        if admitted {
                            tokens = (tokens - 1.0).max(0.0);
                        } else {
                            allowance = (allowance * self.tightening).max(self.floor);
                        }
                    }
                    _ => {}
                }
            }
        }
        (wrong, loss)
    }

    fn mismatches(&self, segments: &[Vec<Arrival>]) -> u64 {
        self.replay(segments).0
    }

    fn loss(&self, segments: &[Vec<Arrival>]) -> f64 {
        self.replay(segments).1
    }
}

/// The bucket fit of one endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketFit {
    /// The bucket.
    pub bucket: Bucket,
    /// Quota refusals seen.
    pub refusals: u64,
    /// Arrivals checked by the bucket (admissions and quota refusals).
    pub checked: u64,
    /// Arrivals the fitted bucket decides otherwise than the log.
    pub mismatches: u64,
    /// The Retry-After of its refusals (median) \[s\].
    pub retry_after_s: f64,
}

impl BucketFit {
    /// Whether it decides the log better than no bucket at all, which gets only the refusals
    /// wrong (a limit in tokens, say, can leave a request bucket no better).
    pub fn beats_none(&self) -> bool {
        self.mismatches < self.refusals
    }
}

/// Fits a token bucket to the quota refusals of one endpoint; `None` when there are none.
pub fn fit_bucket(segments: &[Vec<Arrival>]) -> Option<BucketFit> {
    let mut after = Vec::new();
    let (mut refusals, mut checked, mut admitted) = (0u64, 0u64, 0u64);
    let mut span = 0.0f64;
    for segment in segments {
        for a in segment {
            match a.met {
                Met::Quota => {
                    refusals += 1;
                    checked += 1;
                    if a.retry_after.is_finite() {
                        after.push(a.retry_after);
                    }
                }
                Met::Admitted => {
                    admitted += 1;
                    checked += 1;
                }
                _ => {}
            }
        }
        span += segment.last().map_or(0.0, |a| a.at) - segment.first().map_or(0.0, |a| a.at);
    }
    if refusals == 0 || span <= 0.0 {
        return None;
    }
    after.sort_by(f64::total_cmp);
    let rate = admitted as f64 / span;
    // A coarse grid (on a bounded prefix of the arrivals, so a long log costs no more), then
    // coordinate descent from its best few on every arrival.
    let prefix = prefix_of(segments, GRID_ARRIVALS);
    let mut starts: Vec<(f64, Bucket)> = Vec::new();
    for r in (0..20).map(|i| 0.5 * 1.15f64.powi(i)) {
        for burst_windows in [0.02, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0] {
            for tightening in [1.0, 0.8, 0.65, 0.5, 0.4, 0.3, 0.2, 0.1] {
                // Without tightening the floor does nothing: one of them will do.
                let floors: &[f64] = if tightening == 1.0 {
                    &[1.0]
                } else {
                    &[1.0, 0.5, 0.35, 0.25, 0.1]
                };
                for &floor in floors {
                    let b = Bucket {
                        refill_per_s: rate * r,
                        burst_size: (rate * r * 60.0 * burst_windows).max(1.0),
                        tightening,
                        floor,
                        recovery_per_s: 1.0 / 60.0,
                    };
                    starts.push((b.loss(&prefix), b));
                }
            }
        }
    }
    starts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut best = starts[0].1;
    let mut score = best.loss(segments);
    for &(_, start) in starts.iter().take(12) {
        let (b, s) = descend(start, segments);
        if s < score {
            (best, score) = (b, s);
        }
    }
    Some(BucketFit {
        bucket: best,
        refusals,
        checked,
        mismatches: best.mismatches(segments),
        retry_after_s: super::stats::quantile(&after, 0.5),
    })
}

/// Arrivals the bucket's grid search replays at most.
const GRID_ARRIVALS: usize = 50_000;

/// The first `n` arrivals, segment by segment.
fn prefix_of(segments: &[Vec<Arrival>], n: usize) -> Vec<Vec<Arrival>> {
    let mut left = n;
    segments
        .iter()
        .map(|s| {
            let take = s.len().min(left);
            left -= take;
            s[..take].to_vec()
        })
        .collect()
}

/// Coordinate descent on log scales from `start`, the step halving when no move helps.
fn descend(start: Bucket, segments: &[Vec<Arrival>]) -> (Bucket, f64) {
    let mut best = start;
    let mut score = best.loss(segments);
    let mut step = 0.5f64;
    while step > 0.002 {
        let mut improved = false;
        for axis in 0..5 {
            for dir in [-1.0, 1.0] {
                let candidate = nudge(best, axis, dir * step);
                let s = candidate.loss(segments);
                if s < score {
                    (best, score, improved) = (candidate, s, true);
                }
            }
        }
        if !improved {
            step /= 2.0;
        }
    }
    (best, score)
}

/// Moves one parameter of `b` by `log_step` on a log scale (the tightening and floor within
/// (0, 1]).
fn nudge(b: Bucket, axis: usize, log_step: f64) -> Bucket {
    let scale = log_step.exp();
    let mut out = b;
    match axis {
        0 => out.refill_per_s *= scale,
        1 => out.burst_size = (b.burst_size * scale).max(1.0),
        2 => out.tightening = (b.tightening * scale).clamp(0.01, 1.0),
        3 => out.floor = (b.floor * scale).clamp(0.01, 1.0),
        _ => out.recovery_per_s *= scale,
    }
    out
}

/// A published limit read from the headers.
#[derive(Clone, Debug, PartialEq)]
pub struct PublishedFit {
    /// What it counts.
    pub unit: HeaderUnit,
    /// The allowance per window.
    pub limit: f64,
    /// The window \[s\].
    pub window_s: f64,
    /// Whether it refills continuously (else at window boundaries).
    pub rolling: bool,
    /// Header samples it rests on.
    pub n: usize,
    /// What the window rests on.
    pub evidence: WindowEvidence,
}

/// What a published limit's window rests on.
#[derive(Clone, Debug, PartialEq)]
pub enum WindowEvidence {
    /// Rolling, from `reset = (limit − remaining) · window / limit`: the relative spread
    /// (interquartile range over median) of the estimates.
    Rolling { spread: f64 },
    /// Fixed: every reset points at boundaries a window apart.
    Fixed,
    /// Rolling, from whole-number `remaining` values (as vendors send them), each leaving the
    /// window within a range (the count used known within one): the windows `lo..hi` \[s\]
    /// agree with `agree` of `of` headers; within 2 % of each other the window is pinned,
    /// otherwise the window written is a named one in the range (the shortest) or the range's
    /// geometric middle.
    Whole {
        lo: f64,
        hi: f64,
        agree: usize,
        of: usize,
    },
    /// Not told by the headers (why); the window written is a minute, the commonest.
    Assumed(&'static str),
}

/// The share of whole-number headers whose window range must hold the window.
const WHOLE_AGREE: f64 = 0.9;

/// The published limits of endpoint `e`, from every segment's headers.
pub fn fit_published(log: &Log, e: u32) -> Vec<PublishedFit> {
    let mut by_limit: BTreeMap<(u8, u64), Vec<HeaderSample>> = BTreeMap::new();
    for segment in &log.segments {
        for ((endpoint, unit, limit), samples) in &segment.headers {
            if *endpoint == e {
                by_limit.entry((*unit, *limit)).or_default().extend(samples);
            }
        }
    }
    let mut out: Vec<PublishedFit> = by_limit
        .into_iter()
        .filter_map(|((unit, _), samples)| published(key_unit(unit), &samples))
        .collect();
    // Requests first, then by window: the order vendors document them in.
    out.sort_by(|a, b| {
        (a.unit != HeaderUnit::Requests)
            .cmp(&(b.unit != HeaderUnit::Requests))
            .then(a.window_s.total_cmp(&b.window_s))
    });
    out
}

fn published(unit: HeaderUnit, samples: &[HeaderSample]) -> Option<PublishedFit> {
    let mut limits: Vec<f64> = samples.iter().map(|s| s.limit).collect();
    limits.sort_by(f64::total_cmp);
    let limit = super::stats::quantile(&limits, 0.5);
    if limit.is_nan() {
        return None;
    }
    let fit = |window_s: f64, rolling: bool, evidence: WindowEvidence| PublishedFit {
        unit,
        limit,
        window_s,
        rolling,
        n: samples.len(),
        evidence,
    };
    if limit <= 0.0 {
        // Kept for the writer to say why it leaves it out.
        return Some(fit(60.0, true, WindowEvidence::Assumed("a limit of 0")));
    }
    // Rolling: reset = (limit - remaining) · window / limit. Whole-number values (as vendors
    // send them) bias that estimate when little is used, and go through ranges instead.
    let whole = samples
        .iter()
        .all(|s| s.remaining == s.remaining.round() && s.limit == s.limit.round());
    let rolling = rolling_window(limit, samples);
    if !whole && let Some((window_s, spread)) = rolling {
        return Some(fit(window_s, true, WindowEvidence::Rolling { spread }));
    }
    // Fixed: every reset points at the same boundaries, a multiple of the window.
    // A full allowance says reset 0, which points at no boundary.
    let boundaries: Vec<f64> = samples
        .iter()
        .filter(|s| s.reset_s > 0.0)
        .map(|s| s.at + s.reset_s)
        .collect();
    if boundaries.len() >= 3
        && let Some(window_s) = fixed_window(&boundaries, samples)
    {
        return Some(fit(window_s, false, WindowEvidence::Fixed));
    }
    if whole {
        if let Some((window_s, evidence)) = whole_number_window(limit, samples) {
            return Some(fit(window_s, true, evidence));
        }
        if let Some((window_s, spread)) = rolling {
            return Some(fit(window_s, true, WindowEvidence::Rolling { spread }));
        }
    }
    // The limit itself is the header's value: kept, its window assumed and said so.
    let why = if boundaries.is_empty() {
        "no header showed any of it used"
    } else {
        "the resets fit neither a rolling nor a fixed window"
    };
    Some(fit(60.0, true, WindowEvidence::Assumed(why)))
}

/// A rolling window from `reset = (limit − remaining) · window / limit`: the median estimate
/// and the estimates' relative spread, when at least five agree within 5 %.
fn rolling_window(limit: f64, samples: &[HeaderSample]) -> Option<(f64, f64)> {
    let mut windows: Vec<f64> = samples
        .iter()
        .filter(|s| s.remaining < 0.999 * limit && s.reset_s > 0.0)
        .map(|s| s.reset_s * limit / (limit - s.remaining))
        .collect();
    windows.sort_by(f64::total_cmp);
    let median = super::stats::quantile(&windows, 0.5);
    let spread =
        (super::stats::quantile(&windows, 0.75) - super::stats::quantile(&windows, 0.25)) / median;
    (windows.len() >= 5 && spread < 0.05).then(|| (snap_window(median), spread))
}

/// A rolling window from whole-number `remaining` values. Rounded from the count really left
/// (down, up or to the nearest: vendors do not say which), each leaves the count used known
/// within one, and so the window within a range, `reset · limit / used`, with the reset known
/// to a millisecond (rounded either way). Per rounding, the window is where the most ranges overlap; the
/// roundings whose ranges agree best (at least [`WHOLE_AGREE`] of them) leave the window
/// between their lowest and highest ends.
fn whole_number_window(limit: f64, samples: &[HeaderSample]) -> Option<(f64, WindowEvidence)> {
    let counted: Vec<&HeaderSample> = samples
        .iter()
        .filter(|s| s.remaining <= limit && s.reset_s > 0.0)
        .collect();
    if counted.len() < 5 {
        return None;
    }
    // The count really used, from the whole one: after rounding down, up, to the nearest.
    let roundings = [(-1.0, 0.0), (0.0, 1.0), (-0.5, 0.5)];
    let fits: Vec<(f64, f64, usize)> = roundings
        .iter()
        .map(|(below, above)| {
            let ranges: Vec<(f64, f64)> = counted
                .iter()
                .filter_map(|s| {
                    let used = limit - s.remaining;
                    let (least, most) = (used + below, used + above);
                    (most > 0.0).then(|| {
                        let lo = (s.reset_s - 0.001).max(0.0) * limit / most;
                        let hi = if least > 0.0 {
                            (s.reset_s + 0.001) * limit / least
                        } else {
                            f64::INFINITY
                        };
                        (lo, hi)
                    })
                })
                .collect();
            most_overlapping(&ranges)
        })
        .collect();
    let best = fits.iter().map(|f| f.2).max().unwrap_or(0);
    let of = counted.len();
    if (best as f64) < WHOLE_AGREE * of as f64 {
        return None;
    }
    let agreeing = fits.iter().filter(|f| f.2 as f64 >= 0.99 * best as f64);
    let (lo, hi) = agreeing.fold((f64::INFINITY, 0.0f64), |(lo, hi), f| {
        (lo.min(f.0), hi.max(f.1))
    });
    if lo <= 0.0 {
        return None;
    }
    let named = NAMED_WINDOWS.into_iter().find(|w| (lo..=hi).contains(w));
    let window_s = if hi <= 1.02 * lo {
        snap_window(0.5 * (lo + hi))
    } else if let Some(w) = named {
        w
    } else if hi.is_finite() {
        (lo * hi).sqrt()
    } else {
        return None;
    };
    let agree = best;
    Some((window_s, WindowEvidence::Whole { lo, hi, agree, of }))
}

/// The stretch where the most `ranges` (closed) overlap: `(lo, hi, how many)`.
fn most_overlapping(ranges: &[(f64, f64)]) -> (f64, f64, usize) {
    // Opens before closes at one point: closed ranges that touch overlap.
    let mut events: Vec<(f64, i32)> = ranges.iter().flat_map(|r| [(r.0, 1), (r.1, -1)]).collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
    let (mut open, mut best) = (0i64, (0.0, 0.0, 0usize));
    for (i, (x, d)) in events.iter().enumerate() {
        open += i64::from(*d);
        if open > best.2 as i64 {
            let next = events.get(i + 1).map_or(*x, |e| e.0);
            best = (*x, next, open as usize);
        }
    }
    best
}

/// A fixed window's length from the boundaries its resets point at: the boundaries lie a
/// whole number of windows apart, and the window is no shorter than the longest reset.
/// Boundaries a window apart give it (snapped to a named window within 1 %); a log within one
/// window leaves the shortest named window that fits. Only the spacing counts, not where the
/// boundaries fall: the log's times start at its first request, not at the vendor's epoch.
fn fixed_window(boundaries: &[f64], samples: &[HeaderSample]) -> Option<f64> {
    let mut distinct: Vec<f64> = boundaries.to_vec();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup_by(|a, b| (*a - *b).abs() < 0.01);
    let first = distinct[0];
    let longest = samples.iter().map(|s| s.reset_s).fold(0.0, f64::max);
    let fits = |w: f64| {
        w >= longest - 0.01
            && distinct.iter().all(|b| {
                let d = b - first;
                ((d / w).round() * w - d).abs() < 0.01
            })
    };
    let gap = distinct
        .windows(2)
        .map(|p| p[1] - p[0])
        .fold(f64::INFINITY, f64::min);
    if gap.is_finite() {
        // The span over all windows seen pins the length better than one gap; resets are
        // given in milliseconds.
        let span = distinct[distinct.len() - 1] - first;
        let w = snap_window((span / (span / gap).round() * 1000.0).round() / 1000.0);
        if fits(w) {
            return Some(w);
        }
    }
    NAMED_WINDOWS.into_iter().find(|&w| fits(w))
}

/// The windows vendors name: a second, a minute, an hour, a day \[s\].
pub const NAMED_WINDOWS: [f64; 4] = [1.0, 60.0, 3600.0, 86_400.0];

/// A window within 1 % of a named one is that one.
fn snap_window(w: f64) -> f64 {
    NAMED_WINDOWS
        .into_iter()
        .find(|named| (w / named - 1.0).abs() < 0.01)
        .unwrap_or(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at: f64, reset_s: f64) -> HeaderSample {
        HeaderSample {
            at,
            limit: 20.0,
            remaining: 3.0,
            reset_s,
        }
    }

    /// Headers of a rolling `limit` per `window` s, refilled continuously, after bursts of
    /// `burst` requests 1 ms apart every `every` s (a little uneven), with `remaining` given
    /// as `round` makes it and the reset to the millisecond, as vendors send them.
    fn rolling(
        (limit, window): (f64, f64),
        (burst, every): (u32, f64),
        round: fn(f64) -> f64,
    ) -> Vec<HeaderSample> {
        let (mut used, mut at) = (0.0f64, 0.0f64);
        (0..600u32)
            .map(|i| {
                let gap = if i % burst == 0 {
                    every * (1.0 + 0.3 * f64::from(i / burst % 5) / 4.0)
                } else {
                    0.001
                };
                at += gap;
                used = (used - gap * limit / window).max(0.0) + 1.0;
                HeaderSample {
                    at,
                    limit,
                    remaining: round(limit - used),
                    reset_s: (used * window / limit * 1000.0).ceil() / 1000.0,
                }
            })
            .collect()
    }

    #[test]
    fn whole_number_remaining_values_still_tell_a_rolling_window() {
        for round in [f64::floor, f64::round, f64::ceil] {
            // Hardly used (a few of 500 at a time), yet the minute within the range they leave.
            let fit = published(
                HeaderUnit::Requests,
                &rolling((500.0, 60.0), (2, 0.2), round),
            );
            let fit = fit.unwrap();
            assert_eq!((fit.window_s, fit.rolling), (60.0, true), "{fit:?}");
            let WindowEvidence::Whole { lo, hi, agree, of } = fit.evidence else {
                panic!("{fit:?}")
            };
            let holds = |w: f64| lo <= w * (1.0 + 1e-9) && w * (1.0 - 1e-9) <= hi;
            assert!(holds(60.0) && agree == of, "{fit:?}");
            // Used deeper (up to some 20 of 60): a range narrow enough to pin 10 s.
            let fit = published(
                HeaderUnit::Requests,
                &rolling((60.0, 10.0), (12, 2.4), round),
            );
            let fit = fit.unwrap();
            assert!((fit.window_s / 10.0 - 1.0).abs() < 0.03, "{fit:?}");
        }
        // Exact values keep the estimate they always had.
        let exact = published(
            HeaderUnit::Requests,
            &rolling((500.0, 60.0), (2, 0.2), |v| v),
        );
        let exact = exact.unwrap();
        assert!(
            matches!(exact.evidence, WindowEvidence::Rolling { .. }),
            "{exact:?}"
        );
    }

    #[test]
    fn a_limit_whose_window_no_reset_tells_is_kept_with_a_minute_assumed() {
        // Resets that follow no window: the limit is the header's value all the same.
        let samples: Vec<HeaderSample> = (0..50)
            .map(|i| sample(f64::from(i), 0.5 + f64::from(i * 7919 % 13)))
            .collect();
        let fit = published(HeaderUnit::Requests, &samples).unwrap();
        assert_eq!((fit.limit, fit.window_s), (20.0, 60.0));
        assert!(
            matches!(fit.evidence, WindowEvidence::Assumed(_)),
            "{fit:?}"
        );
    }

    #[test]
    fn a_fixed_window_is_the_spacing_of_its_resets_not_the_first_named_divisor() {
        // A 10 s window seen over 30 windows, resets to the millisecond and answers a little
        // late: 10, not 1 (every boundary is a whole second too) nor 9.9995.
        let samples: Vec<HeaderSample> = (0..300)
            .map(|i| {
                let at = 33.0 + f64::from(i) * 1.0 + 0.0004 * f64::from(i % 3);
                let boundary = (at / 10.0).ceil() * 10.0;
                sample(at, ((boundary - at) * 1000.0).ceil() / 1000.0)
            })
            .collect();
        let fit = published(HeaderUnit::Requests, &samples).expect("a limit");
        assert!(!fit.rolling);
        assert_eq!(fit.window_s, 10.0);
        // The same log with its times counted from another origin.
        let shifted: Vec<HeaderSample> = samples
            .iter()
            .map(|s| HeaderSample {
                at: s.at - 33.3,
                ..*s
            })
            .collect();
        assert_eq!(
            published(HeaderUnit::Requests, &shifted).unwrap().window_s,
            10.0
        );
        // Within one day's window only: the day, the shortest named window the resets fit.
        let day: Vec<HeaderSample> = (0..5)
            .map(|i| {
                let at = 1000.0 * f64::from(i + 1);
                HeaderSample {
                    remaining: 20.0 - 3.0 * f64::from(i + 1),
                    ..sample(at, 86_400.0 - at)
                }
            })
            .collect();
        assert_eq!(
            published(HeaderUnit::Requests, &day).unwrap().window_s,
            86_400.0
        );
    }

    /// Arrivals every 0.1 s for 100 s with 0 to 5 in flight, decided by `cap(t)`.
    /// A log timed at the client, each request sent up to `rtt/2` before the server saw it and
    /// answered up to `rtt/2` after: the counts bracket what the server had in flight.
    #[test]
    fn a_client_side_log_brackets_the_servers_count() {
        let mut x: u64 = 99;
        let mut unit = || {
            x = crate::rng::mix64(x);
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let rtt = 0.004;
        let (cap, mut t) = (3usize, 0.0);
        let mut ends: Vec<f64> = Vec::new();
        let mut log: Vec<(Request, u32)> = Vec::new();
        for _ in 0..3_000 {
            t += unit() * 0.01;
            ends.retain(|&e| e > t);
            let truth = ends.len() as u32;
            let (out, back) = (unit() * rtt / 2.0, unit() * rtt / 2.0);
            let mut r = super::super::incidents::tests::request(t - out, EntryOutcome::Ok, None);
            if ends.len() < cap {
                let end = t + 0.005 + unit() * 0.05;
                ends.push(end);
                r.end = end + back;
            } else {
                r.outcome = EntryOutcome::RateLimited;
                r.end = t + back;
            }
            log.push((r, truth));
        }
        log.sort_by(|a, b| a.0.start.total_cmp(&b.0.start));
        let requests: Vec<Request> = log.iter().map(|(r, _)| *r).collect();
        let arrivals = endpoint_arrivals(&requests, 0, rtt, |_| false);
        let (mut exact, mut refused) = (0, 0);
        for (a, (r, truth)) in arrivals.iter().zip(&log) {
            assert!(
                a.in_flight <= *truth && *truth <= a.in_flight_most,
                "{a:?} against {truth} in flight at the server"
            );
            exact += usize::from(a.in_flight == a.in_flight_most);
            if !r.admitted() {
                // The limit's own evidence: every refusal may have met `cap` in flight.
                assert!(a.in_flight_most >= cap as u32, "{a:?}");
                refused += 1;
            } else {
                assert!(a.in_flight < cap as u32, "{a:?}");
            }
        }
        // The bracket is narrow: most arrivals' counts are within one.
        let width: u32 = arrivals
            .iter()
            .map(|a| a.in_flight_most - a.in_flight)
            .sum();
        assert!(
            refused > 100 && exact * 4 > log.len() && (width as usize) < log.len(),
            "{refused} refused, {exact} exact, total width {width}"
        );
        // With no slack, the three counts are the log's own.
        for a in endpoint_arrivals(&requests, 0, 0.0, |_| false) {
            assert!(
                a.in_flight == a.in_flight_most && a.in_flight == a.out,
                "{a:?}"
            );
        }
    }

    fn decided(cap: impl Fn(f64) -> u32) -> Vec<Vec<Arrival>> {
        let mut x: u64 = 12345;
        let one = (0..1000)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let at = f64::from(i) * 0.1;
                let in_flight = ((x >> 33) % 6) as u32;
                let met = if in_flight < cap(at) {
                    Met::Admitted
                } else {
                    Met::Capacity
                };
                Arrival {
                    at,
                    in_flight,
                    in_flight_most: in_flight,
                    out: in_flight,
                    met,
                    retry_after: 0.25,
                }
            })
            .collect();
        vec![one]
    }

    #[test]
    fn a_capacity_drop_is_fitted_as_an_incident() {
        let mut arrivals = decided(|t| if (20.0..50.0).contains(&t) { 1 } else { 4 });
        let fit = fit_capacity(&mut arrivals);
        let model = fit.model.expect("refused");
        assert_eq!(model.capacity, 4);
        assert_eq!(model.period_s, 0.0);
        let step = model.step.unwrap_or_else(|| panic!("{model:?}"));
        assert!((step.start_s - 20.0).abs() <= 0.5, "{step:?}");
        assert!((step.end_s - 50.0).abs() <= 0.5, "{step:?}");
        assert_eq!((4.0 * step.factor).round(), 1.0);
        assert_eq!(fit.violations, 0);
    }

    #[test]
    fn a_steady_capacity_has_no_incident() {
        let mut arrivals = decided(|_| 3);
        let fit = fit_capacity(&mut arrivals);
        let model = fit.model.expect("refused");
        assert_eq!((model.capacity, model.step), (3, None));
        // Refused all along: the middle 80 % of 100 s.
        assert!((fit.refusal_spread_s - 80.0).abs() < 2.0, "{fit:?}");
    }

    /// Under a given cycle the limit is refitted exactly, ties go to the preferred capacity,
    /// and a cycle the log contradicts decides many arrivals wrongly.
    #[test]
    fn a_limit_is_refitted_under_a_given_cycle() {
        let truth = CapacityModel {
            capacity: 5,
            period_s: 40.0,
            trough: 0.4,
            phase_s: 0.0,
            step: None,
        };
        let mut arrivals = decided(|t| truth.at(t));
        let fit = fit_capacity(&mut arrivals);
        let rhythm = Rhythm {
            period_s: 40.0,
            trough: 0.4,
            phase_s: 0.0,
        };
        let refit = at_rhythm(&fit, rhythm, None).expect("refused");
        assert_eq!((refit.capacity, refit.step), (5, None));
        assert_eq!(fit.violations_of(&refit), 0);
        // A preference wins ties only: 9 decides the troughs' refusals wrongly.
        let preferred = at_rhythm(&fit, rhythm, Some(9)).expect("refused");
        assert_eq!(preferred.capacity, 5);
        let flat = Rhythm {
            period_s: 0.0,
            trough: 1.0,
            phase_s: 0.0,
        };
        let wrong = at_rhythm(&fit, flat, None).expect("refused");
        assert!(fit.violations_of(&wrong) >= 50, "{wrong:?}");
    }

    #[test]
    fn a_few_refusals_do_not_make_a_limit() {
        let mut arrivals = decided(|_| 9);
        let a = &mut arrivals[0];
        for i in [10, 500, 900] {
            a[i].met = Met::Capacity;
        }
        assert_eq!(fit_capacity(&mut arrivals).model, None);
    }
}
