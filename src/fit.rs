//! `simbench fit`: a world learnt from request logs.
//!
//! The logs are read into a compact [`input::Log`] (numbers only: prompts and bodies never
//! reach it); each endpoint's admission is replayed to find its capacity, cycle, bucket and
//! published limits ([`admission`]); served durations give the latency ([`latency`]); failures
//! over time give the error rate and storms ([`failures`]); job, step and attempt ids give the
//! load and the retry policy ([`load`]). The result is a commented world file ([`doc`]) whose
//! every value says what it rests on, and a report of what could not be identified. Pure: no
//! I/O, no clock.

pub mod admission;
pub mod breaker;
pub mod cache;
pub mod client;
pub mod context;
pub mod doc;
pub mod failures;
pub mod har;
pub mod incidents;
pub mod input;
pub mod latency;
pub mod load;
pub mod otlp;
pub mod stats;
pub mod time;

use admission::{Arrival, Met};
use doc::{Doc, float, string};
use input::{Log, Request};
use latency::{Sampled, TokenSample};

use crate::request_log::{EntryOutcome, ErrorKind, HeaderUnit};
use crate::text::plural;

/// A fitted world.
#[derive(Clone, Debug)]
pub struct Fitted {
    /// The world file.
    pub toml: String,
    /// Every value written, with its basis or why it is a default.
    pub report: Vec<doc::ReportLine>,
}

/// Why no world can be fitted.
#[derive(Clone, Debug, PartialEq)]
pub enum FitError {
    /// The logs hold no request.
    Empty,
    /// No request was served, so there is no latency to fit.
    NothingServed,
}

impl std::fmt::Display for FitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FitError::Empty => write!(f, "the logs hold no request"),
            FitError::NothingServed => write!(
                f,
                "no request in the logs was served (every one was refused, rejected or cut \
                 short), so there is no latency to fit"
            ),
        }
    }
}

/// Fits a world named `name` to `log`; the client's side comes from `client` when given.
pub fn fit(log: &Log, name: &str, client: Option<client::Client>) -> Result<Fitted, FitError> {
    if log.is_empty() {
        return Err(FitError::Empty);
    }
    if !log
        .segments
        .iter()
        .flat_map(|s| &s.requests)
        .any(|r| r.outcome.served())
    {
        return Err(FitError::NothingServed);
    }
    let outages = incidents::fit(log);
    let mut endpoints = fit_endpoints(log, &outages, client.as_ref().filter(|c| c.prior));
    // The client's order, when given: strategies that walk the endpoints in order (round
    // robin, sticky) depend on it.
    if let Some(c) = &client {
        endpoints.sort_by_key(|e| c.order_of(&e.id));
    }
    let load = load::fit(log);
    let choice = choose_cycle(&mut endpoints, client.as_ref().filter(|c| c.prior));
    let mut doc = Doc::default();
    doc.client = client;
    preamble(&mut doc, log, name);
    top_level(&mut doc, log, name, &load);
    cycle(&mut doc, &endpoints, &choice);
    match doc.client_table("retry") {
        Some(Some((text, from))) => doc.raw("retry", text, &from),
        Some(None) => {}
        None => load::write_retry(&mut doc, &load),
    }
    provider(&mut doc, log, &endpoints);
    match doc.client_table("load") {
        Some(Some((text, from))) => doc.raw("load", text, &from),
        Some(None) => {}
        None => load::write_load(&mut doc, &load),
    }
    let has_tokens = tokens(&mut doc, log);
    for table in client::TABLES
        .iter()
        .filter(|t| !["load", "retry"].contains(t))
    {
        match doc.client_table(table) {
            Some(Some((text, from))) => doc.raw(table, text, &from),
            None if *table == "breaker" => breaker::write(&mut doc),
            _ => {}
        }
    }
    write_incidents(&mut doc, log, &outages);
    write_endpoint_incidents(&mut doc, &endpoints, outages.len());
    // The client's endpoints no log shows (a backup vendor never used) are kept as its world
    // describes them, in its order: dropping them would change what the strategies can do.
    let unseen: Vec<String> = doc.client.as_ref().map_or_else(Vec::new, |c| {
        c.endpoint_ids()
            .into_iter()
            .filter(|id| !endpoints.iter().any(|e| e.id == *id))
            .map(str::to_owned)
            .collect()
    });
    let mut ids: Vec<&str> = endpoints.iter().map(|e| e.id.as_str()).collect();
    ids.extend(unseen.iter().map(String::as_str));
    if let Some(c) = &doc.client
        && let Some(text) = c.pools_text(&ids)
    {
        let from = c.name.clone();
        doc.raw("pools", text, &from);
    }
    let order = |id: &str| doc.client.as_ref().map_or(usize::MAX, |c| c.order_of(id));
    let mut blocks: Vec<(usize, Result<&EndpointFit, &str>)> = endpoints
        .iter()
        .map(|e| (order(&e.id), Ok(e)))
        .chain(unseen.iter().map(|id| (order(id), Err(id.as_str()))))
        .collect();
    blocks.sort_by_key(|(at, _)| *at);
    for (_, block) in blocks {
        match block {
            Ok(fit) => write_endpoint(&mut doc, fit, choice.peak(), has_tokens),
            Err(id) => {
                let client = doc
                    .client
                    .as_ref()
                    .expect("unseen endpoints come from --client");
                let (text, from) = (client.endpoint_text(id), client.name.clone());
                if let Some(text) = text {
                    doc.unseen_endpoint(id, text, &from);
                }
            }
        }
    }
    Ok(Fitted {
        toml: doc.render(),
        report: doc.report,
    })
}

fn preamble(doc: &mut Doc, log: &Log, name: &str) {
    doc.preamble(format!(
        "Fitted by `simbench fit` {} from {} in {} ({}).",
        env!("CARGO_PKG_VERSION"),
        plural(log.len(), "request"),
        plural(log.segments.len(), "log"),
        log.segments
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    doc.preamble(format!(
        "`{name}`: each value says what it rests on; \"not identified\" marks a default."
    ));
    if let Some(c) = doc.client.clone() {
        doc.preamble(format!(
            "The client's side (load, retry, breaker, variants, objective, pools, prices) is \
             copied from {}.",
            c.name
        ));
        let missing = c.missing(&log.endpoints);
        if !missing.is_empty() {
            let line = format!(
                "Copied whole, not fitted: {} of {} never appear in the logs, so they are kept \
                 as that world describes them.",
                missing.join(", "),
                c.name
            );
            doc.preamble(line);
        }
    }
}

fn top_level(doc: &mut Doc, log: &Log, name: &str, load: &load::LoadFit) {
    doc.table("", "", &[]);
    doc.fitted("name", string(name), "");
    doc.fitted(
        "summary",
        string(&format!(
            "Fitted from {} to {}.",
            plural(log.len(), "request"),
            plural(log.endpoints.len(), "endpoint")
        )),
        "",
    );
    load::write_top(doc, load);
}

/// Everything fitted about one endpoint.
struct EndpointFit {
    id: String,
    served: u64,
    latency: LatencyChoice,
    failures: failures::FailureFit,
    capacity: admission::CapacityFit,
    bucket: Option<admission::BucketFit>,
    published: Vec<admission::PublishedFit>,
    overloaded: u64,
    /// Scripted latency changes (the log of the latency moved), each with its factor.
    slow: Vec<incidents::Shift>,
    /// Scripted storms (the failure rate moved).
    storms: Vec<incidents::Shift>,
    /// The last request sent to it \[s\].
    last_s: f64,
    /// Its reuse cache, when the log marks hits.
    cache: Option<CacheChoice>,
}

/// A fitted reuse cache: who hit it, and how much faster a hit was.
struct CacheChoice {
    fit: cache::CacheFit,
    /// A hit's duration (a sampled latency) or time to first token (a token latency) over a
    /// miss's, and the hits it rests on; `None` when too few hits were comparable.
    factor: Option<(f64, usize)>,
}

enum LatencyChoice {
    Sampled(latency::SampledFit),
    Tokens(latency::TokenFit),
}

/// `prior`: the client's world, whose provider side stands where the logs cannot tell.
fn fit_endpoints(
    log: &Log,
    outages: &[incidents::Outage],
    prior: Option<&client::Client>,
) -> Vec<EndpointFit> {
    let published: Vec<Vec<admission::PublishedFit>> = (0..log.endpoints.len() as u32)
        .map(|e| admission::fit_published(log, e))
        .collect();
    let limit_refusal = |s: usize, i: usize| log.segments[s].requests[i].limit_refused;
    let mut arrivals = admission::arrivals(log, &limit_refusal);
    (0..log.endpoints.len())
        .map(|e| {
            let mut mine: Vec<Vec<Arrival>> = arrivals
                .iter_mut()
                .map(|s| std::mem::take(&mut s[e]))
                .collect();
            let capacity = admission::fit_capacity(&mut mine);
            let bucket = admission::fit_bucket(&mine);
            let requests: Vec<&Request> = log.of(e as u32).collect();
            let slow = latency_shifts(log, e as u32);
            let marked = requests.iter().any(|r| r.cache_hit == Some(true));
            let cache_fit = marked
                .then(|| cache::fit(log, e as u32, &cache::gaps(log, e as u32)))
                .flatten();
            let (latency, factor) =
                fit_latency(log, e as u32, &mine, &capacity, &slow, cache_fit.is_some());
            let storms = storm_shifts(log, e as u32, outages);
            let prior =
                prior
                    .and_then(|c| c.failures(&log.endpoints[e]))
                    .map(|f| failures::StormPrior {
                        storm_rate: f.storm_rate,
                        check_s: f.storm_check_s,
                        duration_s: f.storm_duration_s,
                    });
            let failures = fit_failures(log, e as u32, outages, &storms, prior);
            EndpointFit {
                id: log.endpoints[e].clone(),
                served: requests.iter().filter(|r| r.outcome.served()).count() as u64,
                latency,
                failures,
                capacity,
                bucket,
                published: published[e].clone(),
                overloaded: requests
                    .iter()
                    .filter(|r| r.outcome == EntryOutcome::Overloaded)
                    .count() as u64,
                slow,
                storms,
                last_s: requests.iter().map(|r| r.start).fold(0.0, f64::max),
                cache: cache_fit.map(|fit| CacheChoice { fit, factor }),
            }
        })
        .collect()
}

/// Per log, `(sent, figure)` of the requests of `e` that `keep` selects.
fn figures(
    log: &Log,
    e: u32,
    keep: impl Fn(&Request) -> bool,
    figure: impl Fn(&Request) -> f64,
) -> Vec<Vec<(f64, f64)>> {
    log.segments
        .iter()
        .map(|s| {
            s.requests
                .iter()
                .filter(|r| r.endpoint == e && keep(r))
                .map(|r| (r.start, figure(r)))
                .collect()
        })
        .collect()
}

/// Latency changes shared by the logs: stretches where the log of the served latency moved by
/// a quarter or more (a factor of 1.25 either way).
fn latency_shifts(log: &Log, e: u32) -> Vec<incidents::Shift> {
    let segments = figures(
        log,
        e,
        |r| r.outcome.served() && r.end > r.start,
        |r| (r.end - r.start).ln(),
    );
    let big = |inside: f64, outside: f64| (inside - outside).abs() >= 1.25f64.ln();
    // Nothing but an incident moves a served latency in time, so most logs suffice.
    let shown = |seen: usize, logs: usize| seen * 2 > logs;
    incidents::shifts(&segments, big, shown, 3)
}

/// The factor latency shift `shifts` puts on a request sent at `t` (1 outside them).
fn slowed(shifts: &[incidents::Shift], t: f64) -> f64 {
    shifts
        .iter()
        .filter(|s| s.covers(t))
        .map(|s| (s.inside - s.outside).exp())
        .product()
}

/// Scripted storms: stretches shown by every log, two at least (one log cannot tell a script
/// from weather, and logs of one seed share their weather), where the failure rate of served
/// requests doubled and rose by two points.
fn storm_shifts(log: &Log, e: u32, outages: &[incidents::Outage]) -> Vec<incidents::Shift> {
    let out = |t: f64| outages.iter().any(|o| o.endpoint == e && o.covers(t));
    let segments = figures(
        log,
        e,
        |r| r.outcome.served() && !out(r.start),
        |r| f64::from(u8::from(r.outcome == EntryOutcome::Error)),
    );
    let big = |inside: f64, outside: f64| inside >= 2.0 * outside + 0.02;
    let shown = |seen: usize, logs: usize| logs >= 2 && seen == logs;
    incidents::shifts(&segments, big, shown, 3)
}

/// The latency of `e`, and with a cache (`cached`) how much faster a hit was: the model rests
/// on the misses, the hits are measured against it.
fn fit_latency(
    log: &Log,
    e: u32,
    arrivals: &[Vec<Arrival>],
    capacity: &admission::CapacityFit,
    slow: &[incidents::Shift],
    cached: bool,
) -> (LatencyChoice, Option<(f64, usize)>) {
    let duration = |r: &Request| (r.end - r.start) / slowed(slow, r.start);
    // With a cache, a request the log does not mark is neither: it is left out.
    let kind = |hit: Option<bool>| if cached { hit } else { Some(false) };
    let samples = token_samples(log, e, arrivals, capacity, slow);
    let (hit_samples, miss_samples): (Vec<_>, Vec<_>) = samples
        .into_iter()
        .filter(|s| kind(s.1).is_some())
        .partition(|s| kind(s.1) == Some(true));
    let miss_samples: Vec<TokenSample> = miss_samples.into_iter().map(|s| s.0).collect();
    if let Some(fit) = latency::fit_tokens(&miss_samples)
        && fit.latency_error < 0.05
    {
        // The model rests on the misses alone: the hits come at later steps, with larger
        // prompts and more load, so a refit on hits with their prefill restored trades the
        // hit factor against the prompt and load terms.
        let mut ratios: Vec<f64> = hit_samples
            .iter()
            .map(|s| s.0.ttft / fit.ttft_of(&s.0))
            .collect();
        let factor = cache::factor(&mut ratios).map(|f| (f, ratios.len()));
        return (LatencyChoice::Tokens(fit), factor);
    }
    let served_of = |hits: bool| -> Vec<f64> {
        log.of(e)
            .filter(|r| r.outcome.served() && kind(r.cache_hit) == Some(hits))
            .map(duration)
            .collect()
    };
    let mut hit_durations = served_of(true);
    let mut served = served_of(false);
    // A hit takes `factor` of a miss's time: the median hit over the median miss.
    let factor = (hit_durations.len() >= cache::MIN_HITS && served.len() >= 20).then(|| {
        let mut sorted = served.clone();
        sorted.sort_by(f64::total_cmp);
        let median = stats::quantile(&sorted, 0.5);
        let mut ratios: Vec<f64> = hit_durations.iter().map(|d| d / median).collect();
        cache::factor(&mut ratios).map(|f| (f, ratios.len()))
    });
    let factor = factor.flatten();
    let undo = factor.map_or(1.0, |f| f.0);
    served.extend(hit_durations.drain(..).map(|d| d / undo));
    let censored: Vec<f64> = log
        .of(e)
        .filter(|r| {
            matches!(
                r.outcome,
                EntryOutcome::ClientTimeout | EntryOutcome::Cancelled
            )
        })
        .filter(|r| kind(r.cache_hit).is_some())
        .map(|r| {
            duration(r)
                / if kind(r.cache_hit) == Some(true) {
                    undo
                } else {
                    1.0
                }
        })
        .collect();
    let choice = LatencyChoice::Sampled(latency::fit_sampled(&served, &censored).unwrap_or(
        latency::SampledFit {
            model: Sampled::Constant {
                mean_s: served.first().copied().unwrap_or(0.4).max(1e-6),
            },
            n: served.len(),
            censored: censored.len(),
            ks: 0.0,
            tail_found: false,
        },
    ));
    (choice, factor)
}

/// The served successes of `e` with tokens and a time to first token, with the load each met
/// and whether the log marks it a cache hit.
fn token_samples(
    log: &Log,
    e: u32,
    arrivals: &[Vec<Arrival>],
    capacity: &admission::CapacityFit,
    slow: &[incidents::Shift],
) -> Vec<(TokenSample, Option<bool>)> {
    let cap = |t: f64| {
        capacity
            .model
            .map_or(f64::from(capacity.peak_in_flight.max(1)), |m| {
                f64::from(m.at(t))
            })
    };
    let mut out = Vec::new();
    for (segment, mine) in log.segments.iter().zip(arrivals) {
        let requests = segment.requests.iter().filter(|r| r.endpoint == e);
        for (r, a) in requests.zip(mine) {
            if r.outcome == EntryOutcome::Ok
                && a.met == Met::Admitted
                && r.ttft.is_finite()
                && r.output.is_finite()
                && r.input.is_finite()
            {
                let factor = slowed(slow, r.start);
                let sample = TokenSample {
                    input: r.input,
                    output: r.output,
                    ttft: r.ttft / factor,
                    latency: (r.end - r.start) / factor,
                    load: f64::from(a.in_flight) / cap(r.start),
                };
                out.push((sample, r.cache_hit));
            }
        }
    }
    out
}

/// The failures of `e` outside its outages and scripted storms (which are incidents, not
/// weather).
fn fit_failures(
    log: &Log,
    e: u32,
    outages: &[incidents::Outage],
    storms: &[incidents::Shift],
    prior: Option<failures::StormPrior>,
) -> failures::FailureFit {
    let out = |t: f64| {
        outages.iter().any(|o| o.endpoint == e && o.covers(t)) || storms.iter().any(|s| s.covers(t))
    };
    let segments: Vec<Vec<(f64, bool)>> = log
        .segments
        .iter()
        .map(|s| {
            s.requests
                .iter()
                .filter(|r| r.endpoint == e && r.outcome.served() && !out(r.start))
                .map(|r| (r.start, r.outcome == EntryOutcome::Error))
                .collect()
        })
        .collect();
    let fitted = failures::fit(&segments);
    prior
        .and_then(|p| failures::with_prior(&segments, &fitted, p))
        .unwrap_or(fitted)
}

/// Where the world's cycle comes from.
enum CycleChoice {
    /// The logs: the best endpoint's cycle, or none.
    Fitted,
    /// The client's world, which the logs do not contradict.
    Client {
        cycle: crate::scenario::Cycle,
        /// Whether the client's file sets it (else it is the format's default).
        set: bool,
        from: String,
        /// Arrivals decided otherwise than the log with it, and with the logs' own fit.
        prior: u64,
        fitted: u64,
        refused: usize,
        /// The logs' own cycle, when they saw more than one period of it.
        identified: Option<admission::CapacityModel>,
    },
}

impl CycleChoice {
    /// The cycle's peak factor.
    fn peak(&self) -> f64 {
        match self {
            CycleChoice::Fitted => 1.0,
            CycleChoice::Client { cycle, .. } => cycle.peak,
        }
    }
}

/// The client's world's cycle stands unless the limits fitted from the logs decide their
/// arrivals clearly better — the rule any richer model must meet, and the logs' cycle costs
/// three parameters where the client's costs none. A cycle seen for less than one period (or
/// not at all) is not identified by the logs, so a team's own world is the better guess; the
/// refused endpoints' limits are then refitted under it.
fn choose_cycle(endpoints: &mut [EndpointFit], client: Option<&client::Client>) -> CycleChoice {
    let Some(c) = client else {
        return CycleChoice::Fitted;
    };
    let (cycle, set) = c.cycle();
    let rhythm = if cycle.period_s > 0.0 {
        admission::Rhythm {
            period_s: cycle.period_s,
            trough: cycle.trough / cycle.peak,
            phase_s: cycle.phase_s,
        }
    } else {
        admission::Rhythm {
            period_s: 0.0,
            trough: 1.0,
            phase_s: 0.0,
        }
    };
    let mut refits = Vec::new();
    let (mut prior, mut fitted) = (0, 0);
    for f in endpoints.iter() {
        let preferred = c.endpoint(&f.id).and_then(|e| {
            let capacity = e.get("capacity")?.as_integer()? as f64;
            let weight = e
                .get("weight")
                .and_then(toml::Value::as_float)
                .unwrap_or(1.0);
            Some((capacity * weight * cycle.peak).round() as u32)
        });
        let refit = admission::at_rhythm(&f.capacity, rhythm, preferred);
        if let Some(m) = &refit {
            prior += f.capacity.violations_of(m);
            fitted += f.capacity.violations;
        }
        refits.push(refit);
    }
    if admission::accept(fitted, prior) {
        return CycleChoice::Fitted;
    }
    let identified = best_cycle(endpoints)
        .filter(|(f, m)| f.capacity.refusal_spread_s >= m.period_s)
        .map(|(_, m)| m);
    let mut refused = 0;
    for (f, refit) in endpoints.iter_mut().zip(refits) {
        if let Some(m) = refit {
            f.capacity.violations = f.capacity.violations_of(&m);
            f.capacity.model = Some(m);
            refused += 1;
        }
    }
    CycleChoice::Client {
        cycle,
        set,
        from: c.name.clone(),
        prior,
        fitted,
        refused,
        identified,
    }
}

/// The cycle with the most evidence among the endpoints' (the format has one for all).
fn best_cycle(endpoints: &[EndpointFit]) -> Option<(&EndpointFit, admission::CapacityModel)> {
    endpoints
        .iter()
        .filter_map(|f| {
            let m = f.capacity.model?;
            (m.period_s > 0.0).then_some((f, m))
        })
        .max_by_key(|(f, _)| f.capacity.flat_violations - f.capacity.violations)
}

fn cycle(doc: &mut Doc, endpoints: &[EndpointFit], choice: &CycleChoice) {
    doc.table("[cycle]", "cycle", &[]);
    if let CycleChoice::Client {
        cycle,
        set,
        from,
        prior,
        fitted,
        refused,
        identified,
    } = choice
    {
        let source = if *set {
            format!("the cycle of {from}")
        } else {
            format!("the format's default ({from} sets no [cycle])")
        };
        let basis = if *refused == 0 {
            "no endpoint was refused for concurrency".to_owned()
        } else {
            format!(
                "under it the limits of {} decide {prior} arrivals otherwise than the log, the \
                 logs' own fit {fitted}",
                plural(*refused, "refused endpoint")
            )
        };
        match identified {
            Some(m) => doc.fitted(
                "period_s",
                float(cycle.period_s, 4),
                format!(
                    "the logs agree with {source} ({basis}; their own best: {} s, trough {})",
                    float(m.period_s, 4),
                    float(m.trough, 3)
                ),
            ),
            None => doc.assumed(
                "period_s",
                float(cycle.period_s, 4),
                format!("{source}, which the logs do not contradict ({basis})"),
            ),
        }
        // A flat cycle takes neither a trough nor a phase.
        if cycle.period_s > 0.0 {
            doc.fitted("trough", float(cycle.trough, 4), "");
        }
        doc.fitted(
            "peak",
            float(cycle.peak, 4),
            "capacities are written at the peak",
        );
        if cycle.period_s > 0.0 {
            doc.fitted(
                "phase_s",
                float(cycle.phase_s, 4),
                "the trough is at phase_s",
            );
        }
        return;
    }
    match best_cycle(endpoints) {
        Some((f, m)) => {
            let basis = format!(
                "from {} admissions and {} capacity refusals at `{}`: the cycle decides {} of \
                 them otherwise than the log, a flat capacity {}",
                f.capacity.admissions,
                f.capacity.refusals,
                f.id,
                f.capacity.violations,
                f.capacity.flat_violations
            );
            if f.capacity.refusal_spread_s < m.period_s {
                doc.assumed(
                    "period_s",
                    float(m.period_s, 4),
                    format!(
                        "the middle 80 % of the capacity refusals span {:.1} s, less than one \
                         period, so any cycle with that trough fits; this one fits best ({basis})",
                        f.capacity.refusal_spread_s
                    ),
                );
            } else {
                doc.fitted("period_s", float(m.period_s, 4), basis);
            }
            doc.fitted("trough", float(m.trough, 3), "lowest capacity factor");
            doc.fitted("peak", "1.0".into(), "capacities are written at the peak");
            doc.fitted("phase_s", float(m.phase_s, 4), "the trough is at phase_s");
        }
        None => {
            doc.assumed(
                "period_s",
                "0.0".into(),
                "no endpoint's refusals follow a cycle (a flat capacity explains them, or none \
                 was refused)",
            );
            doc.fitted("trough", "1.0".into(), "");
            doc.fitted("peak", "1.0".into(), "");
        }
    }
}

fn provider(doc: &mut Doc, log: &Log, endpoints: &[EndpointFit]) {
    doc.table("[provider]", "provider", &[]);
    let mut afters: Vec<f64> = endpoints
        .iter()
        .filter_map(|f| f.capacity.retry_after_s)
        .collect();
    afters.sort_by(f64::total_cmp);
    if afters.is_empty() {
        doc.assumed(
            "capacity_retry_after_s",
            "0.25".into(),
            "no capacity refusal carried a Retry-After",
        );
    } else {
        let refusals: u64 = endpoints.iter().map(|f| f.capacity.refusals).sum();
        doc.fitted(
            "capacity_retry_after_s",
            float(stats::quantile(&afters, 0.5), 4),
            format!("median Retry-After of {refusals} capacity refusals"),
        );
    }
    let mut kinds = [0u64; 3];
    for r in log.segments.iter().flat_map(|s| &s.requests) {
        if r.outcome == EntryOutcome::Error {
            kinds[match r.error {
                Some(ErrorKind::Connection) => 1,
                Some(ErrorKind::Timeout) => 2,
                _ => 0,
            }] += 1;
        }
    }
    let total: u64 = kinds.iter().sum();
    doc.table("[provider.failure_kinds]", "provider.failure_kinds", &[]);
    if total == 0 {
        for (key, share) in [
            ("http_503", "0.5"),
            ("connection", "0.3"),
            ("timeout", "0.2"),
        ] {
            doc.assumed(key, share.into(), "no failed request in the logs");
        }
        return;
    }
    let share = |k: u64| k as f64 / total as f64;
    let (a, b) = (share(kinds[0]), share(kinds[1]));
    let (a4, b4) = ((a * 1e4).round() / 1e4, (b * 1e4).round() / 1e4);
    let c4 = ((1.0 - a4 - b4) * 1e4).round() / 1e4;
    let basis = |k: u64| format!("{k} of {total} failures");
    doc.fitted("http_503", float(a4, 4), basis(kinds[0]));
    doc.fitted("connection", float(b4, 4), basis(kinds[1]));
    doc.fitted("timeout", float(c4.max(0.0), 4), basis(kinds[2]));
}

/// `[tokens]` from the prompt and output sizes, when the logs have them (else the client's,
/// when it has one); whether a `[tokens]` table was written.
fn tokens(doc: &mut Doc, log: &Log) -> bool {
    let requests = || log.segments.iter().flat_map(|s| &s.requests);
    let prompts = context::prompts(log);
    // The client's world knows how its prompts are built; else the log may show it.
    let told = doc
        .client
        .as_ref()
        .and_then(|c| c.value("tokens.context")?.as_str().map(|v| v == "grows"));
    let seen = prompts.grows();
    let grows = told.or(seen).unwrap_or(false);
    let mut input = if grows {
        prompts.own.clone()
    } else {
        prompts.whole.clone()
    };
    let mut output: Vec<f64> = requests()
        .filter(|r| r.outcome == EntryOutcome::Ok && r.output.is_finite() && r.output >= 1.0)
        .map(|r| r.output)
        .collect();
    if input.is_empty() || output.is_empty() {
        // No sizes in the logs: the client's world says what its requests hold, and its
        // token limits and prices need them.
        if let Some(Some((text, from))) = doc.client_table("tokens") {
            doc.raw("tokens", text, &from);
            return true;
        }
        return false;
    }
    input.sort_by(f64::total_cmp);
    output.sort_by(f64::total_cmp);
    let max_tokens = requests()
        .map(|r| r.max_tokens)
        .filter(|m| m.is_finite())
        .fold(output[output.len() - 1], f64::max);
    doc.table("[tokens]", "tokens", &[]);
    let what = if grows {
        "prompts less the earlier answers they resend"
    } else {
        "prompts"
    };
    doc.fitted("input", size(&input), size_note(&input, what));
    doc.fitted(
        "output",
        size(&output),
        size_note(&output, "successful answers"),
    );
    doc.fitted(
        "max_tokens",
        format!("{}", max_tokens.ceil() as u64),
        "the largest max_tokens asked (or output seen)",
    );
    let mut timeouts: Vec<f64> = requests()
        .filter(|r| r.outcome == EntryOutcome::ClientTimeout)
        .map(|r| r.end - r.start)
        .collect();
    if !timeouts.is_empty() {
        timeouts.sort_by(f64::total_cmp);
        doc.fitted(
            "request_timeout_s",
            float(stats::quantile(&timeouts, 0.5), 4),
            format!("median duration of {} client timeouts", timeouts.len()),
        );
    }
    if let (None, Some(grows), Some((first, later, left))) = (told, seen, prompts.medians) {
        doc.fitted(
            "context",
            string(if grows { "grows" } else { "fixed" }),
            format!(
                "median prompt {} tokens at a first step, {} later, {} less the earlier \
                 answers",
                float(first, 1),
                float(later, 1),
                float(left, 1)
            ),
        );
    }
    let copies: Vec<(&str, String, String)> = doc
        .client
        .as_ref()
        .map(|c| {
            client::TOKEN_KEYS
                .iter()
                .filter_map(|k| {
                    Some((
                        *k,
                        c.value(&format!("tokens.{k}"))?.to_string(),
                        c.name.clone(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    for (key, value, from) in copies {
        if !doc.has(key) {
            doc.copied(key, value, &from);
        }
    }
    true
}

/// A lognormal size when it fits (KS ≤ 0.05), else 21 empirical quantiles.
fn size(sorted: &[f64]) -> String {
    let (median, sigma, ks) = lognormal_size(sorted);
    if sorted[0] == sorted[sorted.len() - 1] {
        return format!(
            "{{ distribution = \"constant\", value = {} }}",
            float(sorted[0].max(1.0), 6)
        );
    }
    if ks <= 0.05 || sorted.len() < 50 {
        return format!(
            "{{ distribution = \"lognormal\", median = {}, sigma = {} }}",
            float(median.max(1.0), 4),
            float(sigma.clamp(0.0, 5.0), 3)
        );
    }
    let points: Vec<String> = (0..=20)
        .map(|i| {
            let q = i as f64 / 20.0;
            format!(
                "[{}, {}]",
                float(q, 2),
                float(stats::quantile(sorted, q).max(1.0), 5)
            )
        })
        .collect();
    format!(
        "{{ distribution = \"empirical\", quantiles = [{}] }}",
        points.join(", ")
    )
}

fn size_note(sorted: &[f64], what: &str) -> String {
    if sorted[0] == sorted[sorted.len() - 1] {
        return format!("{} {what}, all of one size", sorted.len());
    }
    let (_, _, ks) = lognormal_size(sorted);
    format!(
        "{} {what}; lognormal KS {}{}",
        sorted.len(),
        float(ks, 2),
        if ks <= 0.05 || sorted.len() < 50 {
            ""
        } else {
            ", so empirical quantiles"
        }
    )
}

fn lognormal_size(sorted: &[f64]) -> (f64, f64, f64) {
    let logs: Vec<f64> = sorted.iter().map(|x| x.ln()).collect();
    let (mu, sigma) = stats::mean_sd(&logs);
    let ks = stats::ks_distance(sorted, |x| {
        if sigma > 0.0 {
            stats::normal_cdf(((x + 0.5).ln() - mu) / sigma)
        } else if x >= mu.exp() {
            1.0
        } else {
            0.0
        }
    });
    (mu.exp(), sigma, ks)
}

/// `peak`: the world's cycle's peak factor, at which the fitted limits are found.
/// `has_tokens`: the world has `[tokens]`, which a limit counted in tokens needs.
fn write_endpoint(doc: &mut Doc, f: &EndpointFit, peak: f64, has_tokens: bool) {
    let prefix = format!("endpoints.{}", f.id);
    doc.table("[[endpoints]]", &prefix, &[]);
    let served = crate::text::plural(f.served as usize, "served request");
    doc.fitted("id", string(&f.id), served);
    // The client's pool is sized by `capacity`, the provider admits `capacity · weight`: a
    // client that kept more requests out than the provider admits needs both. The pool is
    // the client's own setting, so its world's value stands when it is not below what the
    // logs show it kept out.
    let leased = f.capacity.most_leased.max(1);
    let client_pool = doc
        .client
        .as_ref()
        .and_then(|c| {
            Some((
                c.endpoint(&f.id)?.get("capacity")?.as_integer()?,
                c.name.clone(),
            ))
        })
        .and_then(|(p, from)| Some((u32::try_from(p).ok()?, from)))
        .filter(|(p, _)| *p >= leased);
    let pool = client_pool.as_ref().map_or(leased, |(p, _)| *p);
    let pool_note = match &client_pool {
        Some((p, from)) => format!(
            "the client's pool, {p} in {from} (the most requests it had out at once was {leased})"
        ),
        None => format!("the client's pool: the most requests it had out at once was {leased}"),
    };
    match f.capacity.model {
        Some(m) => {
            // The client's own pool stands even below what the provider admits.
            let capacity = if client_pool.is_some() {
                pool
            } else {
                m.capacity.max(pool)
            };
            let why = if capacity > pool {
                // Sized to the provider's limit: the pool note would name a smaller number.
                format!(
                    "the provider's limit, {} at the cycle's peak, above the most requests the \
                     client had out at once ({leased})",
                    m.capacity
                )
            } else {
                pool_note
            };
            doc.fitted(
                "capacity",
                capacity.to_string(),
                format!(
                    "{why}; {} capacity refusals, most in flight at an admission {}",
                    f.capacity.refusals, f.capacity.peak_in_flight
                ),
            );
            let weight = f64::from(m.capacity) / (f64::from(capacity) * peak);
            if weight != 1.0 {
                doc.fitted(
                    "weight",
                    float(weight, 6),
                    format!("the provider admits {} at the cycle's peak", m.capacity),
                );
            }
        }
        None if client_pool.is_some() => doc.assumed(
            "capacity",
            pool.max(f.capacity.peak_in_flight).to_string(),
            format!(
                "not refused for concurrency (fewer than five such 429s), so the provider's limit is \
                 at least {}: taken as {pool_note}",
                f.capacity.peak_in_flight.max(leased)
            ),
        ),
        None => doc.assumed(
            "capacity",
            pool.max(f.capacity.peak_in_flight).to_string(),
            "not refused for concurrency (fewer than five such 429s): the most requests the \
             client had out at once, a \
             lower bound (a client's pool is sized by it, so a larger guess would change the \
             client)",
        ),
    }
    let client_keys: Vec<(&str, String, String)> = doc
        .client
        .as_ref()
        .map(|c| {
            client::ENDPOINT_KEYS
                .iter()
                .filter_map(|k| Some((*k, c.endpoint(&f.id)?.get(*k)?.to_string(), c.name.clone())))
                .collect()
        })
        .unwrap_or_default();
    for (key, value, from) in client_keys {
        doc.copied(key, value, &from);
    }
    if f.overloaded > 0 {
        doc.fitted(
            "saturated",
            string("overloaded"),
            format!("{} \"overloaded\" answers when full", f.overloaded),
        );
    }
    // A token limit needs token counts, which a capture of headers without bodies (a HAR
    // file) lacks: it is left out and said so, rather than written into a world that cannot
    // load.
    let (nothing, published): (Vec<&admission::PublishedFit>, Vec<&admission::PublishedFit>) =
        f.published.iter().partition(|p| p.limit <= 0.0);
    for p in nothing {
        let what = format!(
            "the headers publish a {} limit of {}, left out",
            unit_name(p.unit),
            p.limit
        );
        let why = "a limit must allow something (a vendor may send 0 for a limit it does not \
                   apply)";
        doc.comment(format!("{what}:"));
        doc.comment(why);
        doc.report.push(doc::ReportLine {
            key: format!("{prefix}.limits"),
            value: format!("({} limit left out)", unit_name(p.unit)),
            note: format!("{what}: {why}"),
            identified: false,
        });
    }
    let (published, untold): (Vec<&admission::PublishedFit>, Vec<&admission::PublishedFit>) =
        published
            .into_iter()
            .partition(|p| has_tokens || p.unit.unit() == crate::tokens::Unit::Requests);
    if !untold.is_empty() {
        let names: Vec<&str> = untold.iter().map(|p| unit_name(p.unit)).collect();
        let what = format!(
            "the headers publish a {} limit, left out",
            names.join(" and ")
        );
        let why = "the logs hold no token counts (prompt and output sizes) for the [tokens] \
                   table it needs; `--client` with a world that has one keeps it";
        doc.comment(format!("{what}:"));
        doc.comment(why);
        let note = format!("{what}: {why}");
        doc.report.push(doc::ReportLine {
            key: format!("{prefix}.limits"),
            value: "(token limits left out)".into(),
            note,
            identified: false,
        });
    }
    for p in &published {
        if let admission::WindowEvidence::Assumed(why) = p.evidence {
            let what = format!(
                "the {} limit's window is not identified ({why}); a minute, the commonest, is \
                 assumed",
                unit_name(p.unit)
            );
            doc.comment(format!("{what}:"));
            doc.comment("set its `per` or `window_s` if you know it");
            doc.report.push(doc::ReportLine {
                key: format!("{prefix}.limits"),
                value: format!("(the {} limit per minute)", unit_name(p.unit)),
                note: what,
                identified: false,
            });
        }
    }
    if !published.is_empty() {
        let items: Vec<String> = published.iter().map(|p| published_item(p)).collect();
        let basis: Vec<String> = published
            .iter()
            .map(|p| {
                format!(
                    "{}: {} headers, {}",
                    unit_name(p.unit),
                    p.n,
                    window_basis(p)
                )
            })
            .collect();
        doc.fitted(
            "limits",
            format!("[{}]", items.join(", ")),
            format!("from x-ratelimit headers ({})", basis.join("; ")),
        );
    }
    let bucket = f.bucket.as_ref().filter(|b| explains(doc, b, &prefix));
    write_latency(doc, f, &prefix);
    write_failures(doc, f, &prefix);
    if let Some(b) = bucket {
        write_bucket(doc, b, &prefix);
    }
    if let Some(c) = &f.cache {
        write_cache(doc, c, f, &prefix);
    }
}

fn write_incidents(doc: &mut Doc, log: &Log, outages: &[incidents::Outage]) {
    for (i, o) in outages.iter().enumerate() {
        doc.table("[[incidents]]", &format!("incidents.{i}"), &[]);
        let what = if o.refuse {
            "every request refused"
        } else {
            "every request served failed with a 503"
        };
        doc.fitted(
            "kind",
            string("outage"),
            format!(
                "{what}{}: {} requests in {} of {} logs",
                if o.end_s.is_none() {
                    " until the logs end"
                } else {
                    ""
                },
                o.requests,
                o.seen_in,
                log.segments.len()
            ),
        );
        doc.fitted(
            "endpoints",
            format!("[{}]", string(&log.endpoints[o.endpoint as usize])),
            "",
        );
        doc.fitted(
            "start_s",
            float(o.start_s, 5),
            "the first request it met (median over the logs)",
        );
        if let Some(end) = o.end_s {
            doc.fitted("end_s", float(end, 5), "the first request served again");
        }
        doc.fitted(
            "effect",
            string(if o.refuse { "refuse" } else { "error" }),
            "",
        );
    }
}

/// The incidents the endpoints' own requests show — capacity from the admissions, latency
/// and storms from stretches of time that stand apart in most logs — numbered after the
/// `first` incidents already written.
fn write_endpoint_incidents(doc: &mut Doc, endpoints: &[EndpointFit], first: usize) {
    let mut next = first;
    let mut open = |doc: &mut Doc| {
        doc.table("[[incidents]]", &format!("incidents.{next}"), &[]);
        next += 1;
    };
    for f in endpoints {
        if let Some(m) = f.capacity.model
            && let Some(step) = m.step
        {
            open(doc);
            capacity_incident(doc, f, m, step);
        }
        for shift in &f.slow {
            open(doc);
            let factor = (shift.inside - shift.outside).exp();
            let basis = format!(
                "the served latency {} by {factor:.3}× (geometric mean) over {}",
                if factor > 1.0 { "rose" } else { "fell" },
                shift_basis(shift)
            );
            doc.fitted("kind", string("latency"), basis);
            shift_span(doc, f, shift);
            doc.fitted("factor", float(factor, 4), "");
        }
        for shift in &f.storms {
            open(doc);
            let basis = format!(
                "{:.1} % of the served requests failed against {:.1} % the rest of the time, \
                 over {}",
                shift.inside * 100.0,
                shift.outside * 100.0,
                shift_basis(shift)
            );
            doc.fitted("kind", string("storm"), basis);
            shift_span(doc, f, shift);
            doc.fitted("error_rate", float(shift.inside, 4), "");
        }
    }
}

fn shift_basis(shift: &incidents::Shift) -> String {
    format!(
        "{} requests, shown by {} of {} logs (z = {:.1})",
        shift.n_inside, shift.seen_in, shift.logs, shift.z
    )
}

fn shift_span(doc: &mut Doc, f: &EndpointFit, shift: &incidents::Shift) {
    doc.fitted("endpoints", format!("[{}]", string(&f.id)), "");
    doc.fitted(
        "start_s",
        float(shift.start_s, 5),
        "the first request inside",
    );
    lasting_end(doc, f, shift.end_s, "the first request after it");
}

/// `end_s`: `end` when the logs show it, else just past the last arrival.
fn lasting_end(doc: &mut Doc, f: &EndpointFit, end: f64, what: &str) {
    if end.is_finite() {
        doc.fitted("end_s", float(end, 5), what);
    } else {
        doc.assumed(
            "end_s",
            float(f.last_s + 1.0, 5),
            "it lasted until the logs end",
        );
    }
}

fn capacity_incident(
    doc: &mut Doc,
    f: &EndpointFit,
    m: admission::CapacityModel,
    step: admission::Step,
) {
    doc.fitted(
        "kind",
        string("capacity"),
        format!(
            "the limit fell from {} to {}: {} arrivals it decides as the logs did that a \
             steady limit would not",
            m.capacity,
            (f64::from(m.capacity) * step.factor).round(),
            step.explains
        ),
    );
    doc.fitted("endpoints", format!("[{}]", string(&f.id)), "");
    doc.fitted(
        "start_s",
        float(step.start_s, 5),
        "the first arrival that met the lower limit",
    );
    lasting_end(
        doc,
        f,
        step.end_s,
        "the first arrival after it that met the full limit",
    );
    doc.fitted(
        "factor",
        float(step.factor, 6),
        "the lower limit over the full one (any factor that rounds to it acts the same)",
    );
}

fn unit_name(unit: HeaderUnit) -> &'static str {
    unit.unit().name()
}

/// What a published limit's window rests on, for its report line.
fn window_basis(p: &admission::PublishedFit) -> String {
    match p.evidence {
        admission::WindowEvidence::Rolling { spread } => {
            format!("window spread {}", float(spread, 2))
        }
        admission::WindowEvidence::Fixed => "fixed reset".into(),
        admission::WindowEvidence::Whole { lo, hi, agree, of } => {
            let range = if hi.is_finite() {
                format!("{} s to {} s", float(lo, 4), float(hi, 4))
            } else {
                format!("{} s or longer", float(lo, 4))
            };
            let named = admission::NAMED_WINDOWS;
            let in_range = named.iter().filter(|w| (lo..=hi).contains(*w)).count();
            let pick = if hi <= 1.02 * lo {
                "pinned"
            } else if in_range == 1 {
                "the named window in that range"
            } else if named.contains(&p.window_s) {
                "the shortest named window in that range"
            } else {
                "the range's geometric middle"
            };
            format!("whole-number remaining: windows of {range} agree with {agree} of {of}; {pick}")
        }
        admission::WindowEvidence::Assumed(_) => "window assumed (a minute)".into(),
    }
}

fn published_item(p: &admission::PublishedFit) -> String {
    let window = match p.window_s {
        1.0 => "per = \"second\"".to_owned(),
        60.0 => "per = \"minute\"".to_owned(),
        3600.0 => "per = \"hour\"".to_owned(),
        86_400.0 => "per = \"day\"".to_owned(),
        w => format!("window_s = {}", float(w, 5)),
    };
    let reset = match (p.rolling, p.window_s >= 86_400.0) {
        (true, true) => ", reset = \"rolling\"",
        (false, false) => ", reset = \"fixed\"",
        _ => "",
    };
    format!(
        "{{ unit = \"{}\", limit = {}, {window}{reset} }}",
        unit_name(p.unit),
        float(p.limit.round(), 8)
    )
}

fn write_latency(doc: &mut Doc, f: &EndpointFit, prefix: &str) {
    doc.table("[endpoints.latency]", &format!("{prefix}.latency"), &[]);
    match &f.latency {
        LatencyChoice::Tokens(t) => {
            let basis = format!(
                "{} successes with tokens and ttft; median error {} (ttft), {} (duration)",
                t.n,
                float(t.ttft_error, 2),
                float(t.latency_error, 2)
            );
            doc.fitted("distribution", string("tokens"), basis);
            doc.fitted("ttft_s", float(t.ttft_s, 4), "idle time to first token");
            doc.fitted("ttft_per_1k_input_s", float(t.ttft_per_1k_input_s, 4), "");
            doc.fitted("ttft_load", float(t.ttft_load, 4), "");
            doc.fitted("decode_tokens_per_s", float(t.decode_tokens_per_s, 5), "");
            doc.fitted("load_slowdown", float(t.load_slowdown, 4), "");
            tail(doc, t.tail_rate, t.tail_factor, t.tail_rate > 0.0);
        }
        LatencyChoice::Sampled(s) => {
            let basis = format!(
                "{} served{}; KS {}",
                s.n,
                if s.censored > 0 {
                    format!(", {} cut short (as lower bounds)", s.censored)
                } else {
                    String::new()
                },
                float(s.ks, 2)
            );
            match &s.model {
                &Sampled::Lognormal {
                    median_s,
                    sigma,
                    tail_rate,
                    tail_factor,
                } => {
                    doc.fitted("median_s", float(median_s, 4), basis);
                    doc.fitted("sigma", float(sigma, 4), "");
                    tail(doc, tail_rate, tail_factor, s.tail_found);
                }
                &Sampled::Exponential { mean_s } => {
                    doc.fitted("distribution", string("exponential"), basis);
                    doc.fitted("mean_s", float(mean_s, 4), "");
                    doc.fitted("tail_rate", "0.0".into(), "");
                }
                &Sampled::Constant { mean_s } => {
                    doc.fitted("distribution", string("constant"), basis);
                    doc.fitted("mean_s", float(mean_s, 6), "");
                    doc.fitted("tail_rate", "0.0".into(), "");
                }
                Sampled::Empirical { points } => {
                    let points: Vec<String> = points
                        .iter()
                        .map(|&(q, v)| format!("[{}, {}]", float(q, 3), float(v, 5)))
                        .collect();
                    doc.fitted(
                        "distribution",
                        string("empirical"),
                        format!(
                            "{basis} (no lognormal or exponential fits within KS {})",
                            latency::MAX_PARAMETRIC_KS
                        ),
                    );
                    doc.fitted(
                        "quantiles",
                        format!("[{}]", points.join(", ")),
                        "the served durations' own quantiles",
                    );
                }
            }
        }
    }
}

fn tail(doc: &mut Doc, rate: f64, factor: f64, found: bool) {
    if found {
        doc.fitted(
            "tail_rate",
            float(rate, 3),
            "share of requests in the slow tail",
        );
        doc.fitted("tail_factor", float(factor, 3), "the tail's multiplier");
    } else {
        doc.assumed(
            "tail_rate",
            "0.0".into(),
            "no slow tail stands out (BIC), so none",
        );
    }
}

fn write_failures(doc: &mut Doc, f: &EndpointFit, prefix: &str) {
    doc.table("[endpoints.failures]", &format!("{prefix}.failures"), &[]);
    let fit = &f.failures;
    let basis = format!("{} failed of {} served", fit.failed, fit.n);
    match &fit.storms {
        Some(s) => {
            doc.fitted(
                "error_rate",
                float(fit.error_rate, 3),
                format!("{basis}; outside storms (two-state hidden Markov model)"),
            );
            let timing = format!(
                "{}% of the time in storm, storms chained {} s on average; log-likelihood +{} \
                 over no storms",
                float(s.share * 100.0, 3),
                float(s.mean_chain_s, 3),
                float(s.loglik_gain, 3)
            );
            if s.from_prior {
                let from = doc
                    .client
                    .as_ref()
                    .map_or_else(String::new, |c| c.name.clone());
                let own = s.logs_own.map_or_else(
                    || "they find no storms of their own".to_owned(),
                    |(share, chain)| {
                        format!(
                            "their own, {}% in storm chained {} s, is not two parameters' \
                             worth more likely",
                            float(share * 100.0, 3),
                            float(chain, 3)
                        )
                    },
                );
                doc.assumed(
                    "storm_rate",
                    float(s.storm_rate, 4),
                    format!(
                        "the storm timing of {from}, which the logs do not contradict ({own}): \
                         {timing}"
                    ),
                );
                let same = format!("the storm timing of {from}, as `storm_rate`");
                doc.assumed("storm_check_s", float(s.check_s, 4), same.clone());
                doc.assumed("storm_duration_s", float(s.duration_s, 4), same);
            } else {
                doc.fitted("storm_rate", float(s.storm_rate, 3), timing);
                doc.fitted(
                    "storm_check_s",
                    float(s.check_s, 3),
                    "any interval gives the same share and length",
                );
                doc.fitted(
                    "storm_duration_s",
                    float(s.duration_s, 3),
                    "the mean length of the storms, fitted with `storm_rate`",
                );
            }
            doc.fitted(
                "storm_error_rate",
                float(s.error_rate, 3),
                "error rate inside a storm",
            );
        }
        None => {
            doc.fitted("error_rate", float(fit.error_rate, 3), basis);
            doc.assumed(
                "storm_rate",
                "0.0".into(),
                "errors do not cluster in time beyond chance, so no storms",
            );
        }
    }
}

fn write_cache(doc: &mut Doc, c: &CacheChoice, f: &EndpointFit, prefix: &str) {
    let fit = &c.fit;
    let default_ttl = crate::scenario::Cache::default().ttl_s;
    doc.table(
        "[endpoints.cache]",
        &format!("{prefix}.cache"),
        &[format!(
            "{} of {} served requests the log marks hit a reuse cache",
            fit.hits,
            fit.hits + fit.misses
        )],
    );
    let unexplained = if fit.unexplained > 0 {
        format!("; {} requests this rule does not explain", fit.unexplained)
    } else {
        String::new()
    };
    match fit.ttl_s() {
        Some(ttl) if fit.ttl_high_s.is_finite() => doc.fitted(
            "ttl_s",
            float(ttl, 4),
            format!(
                "hits came up to {} s after their job's last answer here, a miss {} s \
                 after{unexplained}",
                float(fit.ttl_low_s, 3),
                float(fit.ttl_high_s, 3)
            ),
        ),
        Some(_) => doc.assumed(
            "ttl_s",
            float(fit.ttl_low_s.max(default_ttl), 4),
            format!(
                "hits came up to {} s after their job's last answer here and no miss came \
                 later, so it is at least that: the default {default_ttl} s, or that bound \
                 if above{unexplained}",
                float(fit.ttl_low_s, 3)
            ),
        ),
        None => doc.assumed(
            "ttl_s",
            float(default_ttl, 1),
            "no job ids, so how long a context stays cannot be seen: the default",
        ),
    }
    let what = match f.latency {
        LatencyChoice::Tokens(_) => "time to first token",
        LatencyChoice::Sampled(_) => "duration",
    };
    match c.factor {
        Some((factor, n)) => doc.fitted(
            "latency_factor",
            float(factor, 4),
            format!("a hit's {what} over the model's, median of {n} hits"),
        ),
        None => doc.assumed(
            "latency_factor",
            "1.0".into(),
            format!("too few hits to compare their {what}: none assumed"),
        ),
    }
    let cost_note = if f.bucket.as_ref().is_some_and(|b| b.beats_none()) {
        "what a hit takes from the bucket is not fitted (the bucket charged every request one): \
         none assumed"
    } else {
        "no bucket here, so what a hit takes from one never shows"
    };
    doc.assumed("token_cost", "1.0".into(), cost_note);
}

/// `burst` as written: four significant digits, rounded up where rounding to nearest would
/// leave the bucket (`per_window * burst`) below the one request it holds at least, which a
/// scenario refuses.
fn burst_text(burst_size: f64, per_window: f64) -> String {
    let burst = burst_size / per_window;
    let text = float(burst, 4);
    if text
        .parse::<f64>()
        .is_ok_and(|written| written * per_window >= 1.0)
    {
        return text;
    }
    let decimals = (3 - burst.log10().floor() as i32).max(1);
    let scale = 10f64.powi(decimals);
    float((burst * scale).ceil() / scale, 4)
}

/// Whether the fitted bucket is written: one no better than none is left out and said so
/// (above the endpoint's table), as it would describe a limit the log does not show.
fn explains(doc: &mut Doc, b: &admission::BucketFit, prefix: &str) -> bool {
    if b.beats_none() {
        return true;
    }
    let what = format!(
        "{} quota refusals that no published limit explains are not fitted: the best request \
         bucket found decides {} of {} arrivals otherwise than the log, no fewer than the {} \
         that no bucket gets wrong",
        b.refusals, b.mismatches, b.checked, b.refusals
    );
    let why = "a limit counted in tokens, or one whose x-ratelimit headers the log lacks, may \
               explain them: add its `limits` if you know it";
    doc.comment(format!("{what};"));
    doc.comment(why);
    doc.report.push(doc::ReportLine {
        key: format!("{prefix}.rate_limit"),
        value: "(left out)".into(),
        note: format!("{what}; {why}"),
        identified: false,
    });
    false
}

fn write_bucket(doc: &mut Doc, b: &admission::BucketFit, prefix: &str) {
    doc.table(
        "[endpoints.rate_limit]",
        &format!("{prefix}.rate_limit"),
        &[],
    );
    let per_window = (b.bucket.refill_per_s * 60.0).round().max(1.0);
    doc.fitted(
        "per_window",
        format!("{}", per_window as u64),
        format!(
            "replaying {} checked arrivals ({} quota refusals) decides {} otherwise than the log",
            b.checked, b.refusals, b.mismatches
        ),
    );
    doc.fitted("window_s", "60.0".into(), "per_window is per minute");
    doc.fitted(
        "burst",
        burst_text(b.bucket.burst_size, per_window),
        "bucket size / per_window",
    );
    if b.retry_after_s.is_nan() {
        doc.assumed(
            "retry_after_s",
            "1.0".into(),
            "no refusal carried a Retry-After; the default",
        );
    } else {
        doc.fitted(
            "retry_after_s",
            float(b.retry_after_s, 4),
            "median Retry-After of its refusals",
        );
    }
    doc.fitted(
        "tightening",
        float(b.bucket.tightening, 3),
        "allowance factor per refusal",
    );
    doc.fitted("tightening_floor", float(b.bucket.floor.min(1.0), 3), "");
    doc.fitted(
        "recovery_per_window",
        float(b.bucket.recovery_per_s * 60.0, 4),
        "",
    );
}

#[cfg(test)]
mod tests {
    use super::burst_text;

    #[test]
    fn a_fitted_burst_never_describes_a_bucket_below_one_request() {
        for per_window in 1..5000u32 {
            let per_window = f64::from(per_window);
            let text = burst_text(1.0, per_window);
            let burst: f64 = text.parse().expect("a number");
            assert!(burst * per_window >= 1.0, "{per_window}: {text}");
        }
        assert_eq!(burst_text(1.0, 3.0), "0.3334");
        assert_eq!(burst_text(90.0, 60.0), "1.5");
        assert_eq!(burst_text(2.0, 3.0), "0.6667");
    }
}
