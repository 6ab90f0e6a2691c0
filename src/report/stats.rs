//! Descriptive statistics of one algorithm's values for one metric.
//!
//! Owns the arithmetic of the aggregates (mean, min, max, sample stdev, median). It never decides
//! who wins; [`super::rank`] does, from the per-seed values rather than from these summaries.

use crate::metrics::sample_stdev;

/// Summary of a non-empty sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Sample standard deviation (n − 1); 0 for a single value.
    pub stdev: f64,
    /// Median (linear interpolation between the two middle values when n is even).
    pub median: f64,
}

impl Summary {
    /// Summarises `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Some(Summary {
            n,
            mean: mean(values),
            min: sorted[0],
            max: sorted[n - 1],
            stdev: sample_stdev(values),
            median,
        })
    }
}

/// Arithmetic mean; 0 for an empty slice (the reference's "missing reads as 0.0").
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_a_few_values() {
        assert_eq!(Summary::of(&[]), None);
        let one = Summary::of(&[3.5]).unwrap();
        assert_eq!((one.mean, one.stdev, one.median), (3.5, 0.0, 3.5));
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(
            (s.n, s.mean, s.min, s.max, s.median),
            (4, 2.5, 1.0, 4.0, 2.5)
        );
        assert!((s.stdev - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
    }
}
