//! Recovery after scripted incidents: how long goodput took to come back, and how many jobs
//! the incident cost.
//!
//! The baseline is the goodput (completed jobs per second) from t = 0 to the first incident's
//! start. After the last incident with an end has ended, the run has recovered at the first
//! instant `t` from which a window of `window_s` holds at least `threshold` times the baseline's
//! completions; `recovery_s = t − end`. Goodput lost is what the baseline would have completed
//! from the first start to `t`, minus what was completed. A run that never gets back before it
//! ends reports the time to its end (a lower bound) and the loss up to it.

/// The incident span and the recovery rule of a world.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecoveryRule {
    /// Earliest incident start \[s\].
    pub start_s: f64,
    /// Latest end among incidents that end \[s\].
    pub end_s: f64,
    /// Goodput window \[s\].
    pub window_s: f64,
    /// Share of the baseline that counts as recovered.
    pub threshold: f64,
}

/// `(recovery_s, goodput_lost_jobs)` from completion times in ascending order.
pub fn measure(rule: &RecoveryRule, completions: &[f64], makespan_s: f64) -> (f64, f64) {
    let count_before = |t: f64| completions.partition_point(|&c| c < t);
    if rule.start_s <= 0.0 {
        return (0.0, 0.0);
    }
    let baseline = count_before(rule.start_s) as f64 / rule.start_s;
    // No completion before the first incident, or a pre-incident stretch so short (jobs done
    // within 1e-300 s, say) that the jobs its rate predicts over the run overflow: there is no
    // baseline to recover to.
    let span = makespan_s.max(rule.start_s) - rule.start_s;
    if baseline == 0.0 || !(baseline * span).is_finite() {
        return (0.0, 0.0);
    }
    let needed = (rule.threshold * baseline * rule.window_s).ceil().max(1.0) as usize;
    let recovered_at = if rule.end_s >= makespan_s {
        makespan_s
    } else {
        first_good_window(completions, rule.end_s, rule.window_s, needed).unwrap_or(makespan_s)
    };
    // A run that ended before the incident began (its last completion at its end) did
    // nothing after it: none, not a count below zero.
    let done = count_before(recovered_at).saturating_sub(count_before(rule.start_s)) as f64;
    let lost = (baseline * (recovered_at - rule.start_s) - done).max(0.0);
    ((recovered_at - rule.end_s).max(0.0), lost)
}

/// The smallest `t >= from` such that `[t, t + window)` holds at least `needed` completions.
///
/// For the run of `needed` completions starting at index `i`, the earliest window holding them
/// all starts at `max(from, c[i + needed − 1] − window)` and must start no later than `c[i]`.
/// These candidates grow with `i`, so the first feasible run gives the answer.
fn first_good_window(c: &[f64], from: f64, window: f64, needed: usize) -> Option<f64> {
    let first = c.partition_point(|&x| x < from);
    (first..c.len().saturating_sub(needed - 1)).find_map(|i| {
        let t = from.max(c[i + needed - 1] - window);
        (t <= c[i]).then_some(t)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> RecoveryRule {
        RecoveryRule {
            start_s: 10.0,
            end_s: 20.0,
            window_s: 5.0,
            threshold: 0.8,
        }
    }

    /// One completion per second except in `[gap_from, gap_to)`.
    fn steady(until: u32, gap_from: f64, gap_to: f64) -> Vec<f64> {
        (0..until)
            .map(|i| f64::from(i) + 0.5)
            .filter(|&t| !(gap_from <= t && t < gap_to))
            .collect()
    }

    #[test]
    fn no_dip_means_no_recovery_time_and_no_loss() {
        let c = steady(60, 0.0, 0.0);
        assert_eq!(measure(&rule(), &c, 60.0), (0.0, 0.0));
    }

    #[test]
    fn a_gap_that_outlasts_the_incident_is_measured() {
        // Nothing completes from 10 s to 30 s: at 1 job/s and a 5 s window needing 4 jobs, the
        // first good window starts when the fourth completion after the gap (33.5 s) fits.
        let c = steady(60, 10.0, 30.0);
        let (recovery, lost) = measure(&rule(), &c, 60.0);
        assert!((recovery - 8.5).abs() < 1e-9, "{recovery}");
        // The baseline (1 job/s) would have done 18.5 jobs in [10, 28.5); none were.
        assert!((lost - 18.5).abs() < 1e-9, "{lost}");
    }

    #[test]
    fn a_run_that_never_recovers_reports_its_end() {
        let c = steady(60, 10.0, 1000.0);
        let (recovery, lost) = measure(&rule(), &c, 60.0);
        assert_eq!(recovery, 40.0);
        assert_eq!(lost, 50.0);
    }

    #[test]
    fn a_run_that_ends_before_the_incident_has_nothing_to_recover() {
        // The last completion is the run's end: none is counted before it, all before 30 s.
        let c = vec![1.0, 2.0, 3.0];
        let late = RecoveryRule {
            start_s: 30.0,
            end_s: 40.0,
            ..rule()
        };
        assert_eq!(measure(&late, &c, 3.0), (0.0, 0.0));
    }

    #[test]
    fn a_run_that_ends_inside_the_incident_reports_only_the_loss() {
        let c = steady(15, 10.0, 1000.0);
        assert_eq!(measure(&rule(), &c, 15.0), (0.0, 5.0));
    }

    #[test]
    fn no_baseline_means_nothing_to_measure() {
        let c = steady(60, 0.0, 12.0);
        assert_eq!(measure(&rule(), &c, 60.0), (0.0, 0.0));
    }

    #[test]
    fn a_baseline_too_steep_to_count_means_nothing_to_measure() {
        let rule = RecoveryRule {
            start_s: 1e-308,
            end_s: 1e12,
            window_s: 1e-300,
            threshold: 1e-300,
        };
        // One job done before 1e-308 s "predicts" 1e320 jobs over a second: not a number.
        assert_eq!(measure(&rule, &[1e-309, 0.5], 2.0), (0.0, 0.0));
    }
}
