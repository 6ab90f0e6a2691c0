//! The validity gate: whether a run measured the provider or the harness's own queue.
//!
//! A run is valid only when its p99 queue wait is a small share of its p99 observed latency
//! (below `max_queue_share`) and it used no more concurrency than a known knee. An invalid run
//! is labelled with its reason in every output, and latency rows rank only algorithms whose runs
//! are all valid: a latency dominated by the measuring device is not a property of the provider.
//! The refusal + timeout ratio is always reported beside latency (it is a catalogue row).

use crate::metrics::{Metric, MetricValues};
use crate::world::Validity;

/// Why a finished run is invalid; `None` when it is valid.
pub fn judge(metrics: &MetricValues, thresholds: &Validity) -> Option<String> {
    let share = metrics.get(Metric::QueueShare);
    let harness_bound = (share >= thresholds.max_queue_share).then(|| {
        format!(
            "harness-bound: p99 queue wait {} s of {} s observed (queue share {:.2} ≥ {})",
            seconds(metrics.get(Metric::QueueWaitP99Ms)),
            seconds(metrics.get(Metric::ObservedP99Ms)),
            share,
            thresholds.max_queue_share
        )
    });
    let used = metrics.get(Metric::ConcurrencyUsed);
    let above_knee = thresholds
        .knee_concurrency
        .filter(|&knee| used > f64::from(knee))
        .map(|knee| format!("above the knee: {used:.0} jobs in flight > knee {knee}"));
    match (harness_bound, above_knee) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
}

/// Milliseconds as seconds with one decimal, or two below a second.
fn seconds(ms: f64) -> String {
    let s = ms / 1000.0;
    if s >= 1.0 {
        format!("{s:.1}")
    } else {
        format!("{s:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{self, Tally};

    fn run(queue_p99_ms: f64, observed_p99_ms: f64, used: f64) -> MetricValues {
        let mut v = metrics::compute(&mut Tally::default(), &[]);
        v.set(Metric::QueueWaitP99Ms, queue_p99_ms);
        v.set(Metric::ObservedP99Ms, observed_p99_ms);
        v.set(Metric::QueueShare, queue_p99_ms / observed_p99_ms);
        v.set(Metric::ConcurrencyUsed, used);
        v
    }

    fn gate(max_queue_share: f64, knee_concurrency: Option<u32>) -> Validity {
        Validity {
            max_queue_share,
            knee_concurrency,
        }
    }

    #[test]
    fn the_document_s_run_is_harness_bound() {
        let reason = judge(&run(6100.0, 8400.0, 200.0), &gate(0.05, None)).unwrap();
        assert_eq!(
            reason,
            "harness-bound: p99 queue wait 6.1 s of 8.4 s observed (queue share 0.73 ≥ 0.05)"
        );
    }

    #[test]
    fn a_small_queue_share_is_valid_and_the_threshold_is_strict() {
        assert_eq!(judge(&run(10.0, 1000.0, 8.0), &gate(0.05, None)), None);
        assert!(judge(&run(50.0, 1000.0, 8.0), &gate(0.05, None)).is_some());
        assert_eq!(judge(&run(50.0, 1000.0, 8.0), &gate(0.06, None)), None);
    }

    #[test]
    fn concurrency_above_the_knee_is_invalid_at_the_knee_is_not() {
        assert_eq!(judge(&run(0.0, 900.0, 16.0), &gate(0.05, Some(16))), None);
        assert_eq!(
            judge(&run(0.0, 900.0, 17.0), &gate(0.05, Some(16))).unwrap(),
            "above the knee: 17 jobs in flight > knee 16"
        );
        let both = judge(&run(900.0, 1000.0, 32.0), &gate(0.05, Some(16))).unwrap();
        assert!(
            both.starts_with("harness-bound") && both.ends_with("knee 16"),
            "{both}"
        );
    }
}
