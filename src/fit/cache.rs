//! The reuse cache of an endpoint, from the answers that say whether they hit it.
//!
//! A world's cache holds a job's context for `ttl_s` after the last call of that job it served
//! (the simulator's rule, and a prompt cache's: each hit renews it). So a hit's gap — from the
//! job's last success on this endpoint to the request — is at most the time to live, and a
//! miss that had such a success is further than it: the longest hit and the shortest miss
//! above it bracket the time to live. That needs job ids; without them the cache's presence
//! and speed are seen, its time to live is not.

use std::collections::BTreeMap;

use super::input::{Log, Request};
use super::stats;

/// Fewer hits than this are not a cache (a stray flag).
pub const MIN_HITS: usize = 5;

/// The cache seen in the log of one endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheFit {
    /// Served requests the log marks as hits.
    pub hits: usize,
    /// Served requests the log marks as misses.
    pub misses: usize,
    /// The longest gap of a hit since its job's last success here \[s\] (the time to live is
    /// at least this), `NaN` without job ids.
    pub ttl_low_s: f64,
    /// The shortest gap above `ttl_low_s` of a miss that had such a success (the time to live
    /// is below it), infinite when none.
    pub ttl_high_s: f64,
    /// Hits whose job had no success here within `ttl_low_s`, or misses within it: requests
    /// the rule does not explain.
    pub unexplained: usize,
}

impl CacheFit {
    /// The time to live the world gets: the middle of the bracket, or its lower end when
    /// nothing bounds it from above; `None` without job ids.
    pub fn ttl_s(&self) -> Option<f64> {
        if !self.ttl_low_s.is_finite() {
            return None;
        }
        Some(if self.ttl_high_s.is_finite() {
            0.5 * (self.ttl_low_s + self.ttl_high_s)
        } else {
            self.ttl_low_s
        })
    }

    /// Whether a request `gap` seconds after its job's last success here finds its context.
    pub fn reuses(&self, gap: f64) -> bool {
        self.ttl_s().is_some_and(|ttl| gap <= ttl)
    }
}

/// Per segment, per request of `e` in order: seconds since the last success of its job on `e`
/// answered by then (`INFINITY` when none, `NaN` without a job id).
pub fn gaps(log: &Log, e: u32) -> Vec<Vec<f64>> {
    log.segments
        .iter()
        .map(|s| segment_gaps(&s.requests, e))
        .collect()
}

fn segment_gaps(requests: &[Request], e: u32) -> Vec<f64> {
    let mine: Vec<&Request> = requests.iter().filter(|r| r.endpoint == e).collect();
    let mut answered: Vec<(f64, u64)> = mine
        .iter()
        .filter(|r| r.outcome == crate::request_log::EntryOutcome::Ok && r.job != u64::MAX)
        .map(|r| (r.end, r.job))
        .collect();
    answered.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut last: BTreeMap<u64, f64> = BTreeMap::new();
    let mut next = 0;
    mine.iter()
        .map(|r| {
            // An answer at the instant of a send comes first, as a worker's next call follows
            // its answer.
            while next < answered.len() && answered[next].0 <= r.start {
                last.insert(answered[next].1, answered[next].0);
                next += 1;
            }
            if r.job == u64::MAX {
                return f64::NAN;
            }
            last.get(&r.job).map_or(f64::INFINITY, |&at| r.start - at)
        })
        .collect()
}

/// The cache of `e`, when its served requests mark at least [`MIN_HITS`] hits.
pub fn fit(log: &Log, e: u32, gaps: &[Vec<f64>]) -> Option<CacheFit> {
    let mut hit_gaps = Vec::new();
    let mut miss_gaps = Vec::new();
    let (mut hits, mut misses) = (0, 0);
    for (segment, gaps) in log.segments.iter().zip(gaps) {
        let mine = segment.requests.iter().filter(|r| r.endpoint == e);
        for (r, &gap) in mine.zip(gaps) {
            if !r.admitted() {
                continue;
            }
            match r.cache_hit {
                Some(true) => {
                    hits += 1;
                    hit_gaps.push(gap);
                }
                Some(false) => {
                    misses += 1;
                    miss_gaps.push(gap);
                }
                None => {}
            }
        }
    }
    if hits < MIN_HITS {
        return None;
    }
    // A hit with no earlier success of its job here is one the rule cannot place (a job id
    // reused, a success the log lost); the bracket rests on the others.
    let placed: Vec<f64> = hit_gaps.iter().copied().filter(|g| g.is_finite()).collect();
    let low = if placed.is_empty() {
        f64::NAN
    } else {
        placed.iter().copied().fold(0.0, f64::max)
    };
    let high = miss_gaps
        .iter()
        .copied()
        .filter(|&g| g.is_finite() && g > low)
        .fold(f64::INFINITY, f64::min);
    let unexplained = (hits - placed.len()) + miss_gaps.iter().filter(|&&g| g <= low).count();
    Some(CacheFit {
        hits,
        misses,
        ttl_low_s: low,
        ttl_high_s: high,
        unexplained,
    })
}

/// The factor of a hit's figure against the model's (`predicted`) over the hits, by median:
/// robust to the slow tail, which hits and misses share.
pub fn factor(observed_over_predicted: &mut [f64]) -> Option<f64> {
    if observed_over_predicted.len() < MIN_HITS {
        return None;
    }
    observed_over_predicted.sort_by(f64::total_cmp);
    Some(stats::quantile(observed_over_predicted, 0.5)).filter(|f| f.is_finite() && *f > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::input::log_of;

    fn line(start: f64, end: f64, job: u64, hit: Option<bool>) -> String {
        let hit = hit.map_or(String::new(), |h| format!(",\"cache_hit\":{h}"));
        format!(
            "{{\"start_s\":{start},\"end_s\":{end},\"endpoint\":\"a\",\"outcome\":\"ok\",\"job\":{job}{hit}}}\n"
        )
    }

    fn log(lines: &[String]) -> Log {
        log_of(&lines.concat())
    }

    #[test]
    fn the_time_to_live_is_bracketed_by_the_longest_hit_and_the_nearest_miss_beyond_it() {
        // Job 0 ends at 1, 2, 3, ...; its calls come 2, 4, 6 and 12 s after its last answer.
        let mut lines = vec![line(0.0, 1.0, 0, Some(false))];
        let mut t = 1.0;
        for (gap, hit) in [
            (2.0, true),
            (4.0, true),
            (6.0, true),
            (12.0, false),
            (1.0, true),
        ] {
            lines.push(line(t + gap, t + gap + 1.0, 0, Some(hit)));
            t += gap + 1.0;
        }
        lines.push(line(t + 3.0, t + 4.0, 0, Some(true)));
        let log = log(&lines);
        let fit = fit(&log, 0, &gaps(&log, 0)).expect("five hits");
        assert_eq!((fit.hits, fit.misses), (5, 2));
        assert_eq!((fit.ttl_low_s, fit.ttl_high_s), (6.0, 12.0));
        assert_eq!(fit.ttl_s(), Some(9.0));
        assert_eq!(fit.unexplained, 0);
        assert!(fit.reuses(9.0) && !fit.reuses(9.5));
    }

    #[test]
    fn an_answer_still_in_flight_is_not_yet_cached_and_unknown_flags_are_no_cache() {
        // The second call starts before the first is answered: no gap.
        let lines = [
            line(0.0, 5.0, 7, Some(false)),
            line(1.0, 2.0, 7, Some(false)),
        ];
        let log = log(&lines);
        assert_eq!(gaps(&log, 0), vec![vec![f64::INFINITY, f64::INFINITY]]);
        let unknown: Vec<String> = (0..10)
            .map(|i| line(f64::from(i), 0.5 + f64::from(i), 1, None))
            .collect();
        let log = super::tests::log(&unknown);
        assert_eq!(fit(&log, 0, &gaps(&log, 0)), None);
    }

    #[test]
    fn without_job_ids_the_cache_is_seen_but_not_its_time_to_live() {
        let lines: Vec<String> = (0..8)
            .map(|i| {
                let t = f64::from(i);
                format!("{{\"start_s\":{t},\"end_s\":{},\"endpoint\":\"a\",\"outcome\":\"ok\",\"cache_hit\":true}}\n", t + 0.5)
            })
            .collect();
        let log = log(&lines);
        let fit = fit(&log, 0, &gaps(&log, 0)).expect("eight hits");
        assert_eq!(fit.hits, 8);
        assert_eq!(fit.ttl_s(), None);
        assert_eq!(factor(&mut [0.5, 0.4, 0.6, 0.5, 9.0]), Some(0.5));
    }
}
