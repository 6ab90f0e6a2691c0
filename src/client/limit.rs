//! A client-side concurrency limit shared by every worker of one run: the gate the adaptive
//! strategies (`aimd`, `gradient`) put in front of the pool, and the record of how the limit
//! moved.
//!
//! The gate counts the run's leases in flight (the pool's total), not per resource: the limit
//! models what the client as a whole may have outstanding. A worker over the limit joins the
//! pool's waiter queue, so it is woken exactly when a lease is given back — the only moment the
//! in-flight count falls, and the moment the strategy hears the answer that may move the limit —
//! instead of polling.

use crate::client::pool::Pool;
use crate::client::strategy::{Acquire, CallState, select_or_wait};

/// Selects like `wait` while the run's leases in flight are below `floor(limit)`; otherwise
/// waits in the pool's queue for the next release.
pub fn acquire_within(limit: f64, pool: &mut Pool, now: f64, call: &mut CallState) -> Acquire {
    if f64::from(pool.active_total()) >= limit.floor() {
        return Acquire::Wait;
    }
    select_or_wait(pool, now, call)
}

/// How the limit moved during one run: every value it took, from when.
///
/// Kept so tests (and curious users) can check the controller itself — where it settles, that
/// it stays in bounds, how fast it reacts — not only its effect on the metrics. One entry per
/// change, so its size follows the requests answered: only a strategy built to record keeps one
/// (`Aimd::recording`, `Gradient::recording`), never the registry's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LimitLog {
    /// `(time [s], limit from that time on)`, in time order; the first entry is the initial limit
    /// at t = 0.
    pub points: Vec<(f64, f64)>,
}

impl LimitLog {
    /// A log starting at `initial` at t = 0.
    pub fn new(initial: f64) -> LimitLog {
        LimitLog {
            points: vec![(0.0, initial)],
        }
    }

    /// Records that the limit is `limit` from `at` on (nothing if it did not change). Several
    /// changes at one instant are all kept, in order.
    pub fn set(&mut self, at: f64, limit: f64) {
        if self.points.last().is_none_or(|last| last.1 != limit) {
            self.points.push((at, limit));
        }
    }

    /// The limit in force at time `t` (after every change at `t`).
    pub fn at(&self, t: f64) -> f64 {
        let i = self.points.partition_point(|p| p.0 <= t);
        self.points[i.saturating_sub(1)].1
    }

    /// The time-weighted mean of the limit over `[from, to]` (the value at `from` if the span is
    /// empty).
    pub fn time_average(&self, from: f64, to: f64) -> f64 {
        if to <= from {
            return self.at(from);
        }
        let mut area = 0.0;
        let mut t = from;
        let mut value = self.at(from);
        for &(at, limit) in self.points.iter().filter(|p| p.0 > from && p.0 < to) {
            area += value * (at - t);
            (t, value) = (at, limit);
        }
        area += value * (to - t);
        area / (to - from)
    }

    /// The smallest and largest values the limit took.
    pub fn range(&self) -> (f64, f64) {
        self.points
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
                (lo.min(p.1), hi.max(p.1))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::LimitLog;

    #[test]
    fn time_average_weights_each_value_by_how_long_it_held() {
        let mut log = LimitLog::new(10.0);
        log.set(1.0, 20.0);
        log.set(1.0, 30.0);
        log.set(3.0, 30.0);
        log.set(4.0, 5.0);
        assert_eq!(
            log.points,
            vec![(0.0, 10.0), (1.0, 20.0), (1.0, 30.0), (4.0, 5.0)]
        );
        assert_eq!(log.time_average(0.0, 4.0), (10.0 + 3.0 * 30.0) / 4.0);
        assert_eq!(log.time_average(2.0, 6.0), (2.0 * 30.0 + 2.0 * 5.0) / 4.0);
        assert_eq!(log.at(0.5), 10.0);
        assert_eq!(log.at(4.0), 5.0);
        assert_eq!(log.range(), (5.0, 30.0));
    }
}
