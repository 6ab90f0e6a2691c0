//! Outages: spans in which an endpoint turned every request away (connection refused) or
//! failed every request it served (a hung backend answering 503). Scripted incidents happen at
//! the same time in every run, so an outage seen in most of the logs at about the same time is
//! one incident of the world; the rest is weather (storms) or chance.

use super::input::{Log, Request};
use crate::request_log::{EntryOutcome, ErrorKind};

/// Consecutive failures that make an outage, and the least time they must span \[s\].
const MIN_RUN: usize = 8;
const MIN_SPAN_S: f64 = 3.0;

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
        && n >= MIN_RUN
        && last - start >= MIN_SPAN_S
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
