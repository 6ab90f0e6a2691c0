//! Descriptive statistics of one algorithm's values for one metric.
//!
//! Owns the arithmetic of the aggregates (mean, min, max, sample stdev, median). It never decides
//! who wins; [`super::rank`] does, from the per-seed values rather than from these summaries.

use std::cell::Cell;

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

/// A paired comparison of two algorithms over the seeds both finished: the mean difference
/// and its Student-t confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paired {
    /// Seeds compared.
    pub n: usize,
    /// Mean of the per-seed differences.
    pub mean: f64,
    /// Sample standard deviation of the differences (0 for one seed).
    pub stdev: f64,
    /// Interval `(low, high)` at the requested confidence; `None` for fewer than two seeds.
    pub interval: Option<(f64, f64)>,
}

impl Paired {
    /// The paired comparison of `differences` at `confidence` (e.g. 0.95).
    pub fn of(differences: &[f64], confidence: f64) -> Paired {
        let n = differences.len();
        let mean = mean(differences);
        let stdev = sample_stdev(differences);
        let interval = (n >= 2).then(|| {
            let half =
                t_quantile(0.5 + confidence / 2.0, (n - 1) as f64) * stdev / (n as f64).sqrt();
            (mean - half, mean + half)
        });
        Paired {
            n,
            mean,
            stdev,
            interval,
        }
    }

    /// Whether the interval lies wholly above zero.
    pub fn above_zero(&self) -> bool {
        self.interval.is_some_and(|(low, _)| low > 0.0)
    }
}

/// The `p`-quantile of Student's t distribution with `df` degrees of freedom (`0 < p < 1`).
///
/// A report asks for the same quantile for every comparison and every summary (one confidence,
/// one number of seeds), and each costs a few hundred CDF evaluations on the report's serial
/// path: the last answer is kept per thread and given again for the same arguments.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    thread_local! {
        static LAST: Cell<Option<(u64, u64, f64)>> = const { Cell::new(None) };
    }
    let key = (p.to_bits(), df.to_bits());
    if let Some((kp, kd, q)) = LAST.get()
        && (kp, kd) == key
    {
        return q;
    }
    let q = t_quantile_uncached(p, df);
    LAST.set(Some((key.0, key.1, q)));
    q
}

fn t_quantile_uncached(p: f64, df: f64) -> f64 {
    if p == 0.5 {
        return 0.0;
    }
    if p < 0.5 {
        return -t_quantile_uncached(1.0 - p, df);
    }
    // Bracket, then bisect on the CDF: monotone, and 200 halvings reach the f64 resolution.
    let mut high = 1.0;
    while t_cdf(high, df) < p {
        high *= 2.0;
        if high > 1e12 {
            return f64::INFINITY;
        }
    }
    let mut low = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (low + high);
        if t_cdf(mid, df) < p {
            low = mid;
        } else {
            high = mid;
        }
        if high - low <= f64::EPSILON * high {
            break;
        }
    }
    0.5 * (low + high)
}

/// `P(T ≤ t)` for Student's t with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 { 1.0 - tail } else { tail }
}

/// The two-sided confidence of "within `k` standard errors" at `df` degrees of freedom:
/// `P(|T| ≤ k)`.
pub fn t_coverage(k: f64, df: f64) -> f64 {
    2.0 * t_cdf(k, df) - 1.0
}

/// The regularised incomplete beta function `I_x(a, b)`, by its continued fraction (modified
/// Lentz), using the symmetry `I_x(a, b) = 1 − I_{1−x}(b, a)` where the fraction converges slowly.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_fraction(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    d = 1.0 / if d.abs() < TINY { TINY } else { d };
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        for aa in [
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ] {
            d = 1.0 + aa * d;
            d = 1.0 / if d.abs() < TINY { TINY } else { d };
            c = 1.0 + aa / c;
            if c.abs() < TINY {
                c = TINY;
            }
            h *= d * c;
            if aa == 0.0 {
                break;
            }
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, nine terms: about 15 significant digits).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let sum = G[1..]
        .iter()
        .enumerate()
        .fold(G[0], |acc, (i, g)| acc + g / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_published_table() {
        // Two-sided 95 % critical values (e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.2).
        for (df, expected) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (4.0, 2.776),
            (9.0, 2.262),
            (29.0, 2.045),
            (100.0, 1.984),
            (1e7, 1.960),
        ] {
            let got = t_quantile(0.975, df);
            assert!((got - expected).abs() < 5e-4, "df {df}: {got}");
        }
        assert!((t_quantile(0.995, 4.0) - 4.604).abs() < 5e-4);
        assert!((t_quantile(0.025, 9.0) + 2.262).abs() < 5e-4);
        assert_eq!(t_quantile(0.5, 3.0), 0.0);
    }

    #[test]
    fn a_kept_quantile_is_the_one_computed_for_its_arguments() {
        let args = [
            (0.975, 2.0),
            (0.975, 2.0),
            (0.9, 2.0),
            (0.975, 4.0),
            (0.975, 2.0),
            (0.1, 4.0),
        ];
        for _ in 0..2 {
            for (p, df) in args {
                assert_eq!(
                    t_quantile(p, df).to_bits(),
                    t_quantile_uncached(p, df).to_bits(),
                    "p {p}, df {df}"
                );
            }
        }
    }

    #[test]
    fn the_cdf_is_the_known_closed_form_at_one_and_two_degrees() {
        // df = 1 is Cauchy: 1/2 + atan(t)/π; df = 2: 1/2 + t / (2 sqrt(2 + t²)).
        for t in [-3.0, -0.5, 0.0, 0.7, 2.0, 10.0] {
            let cauchy = 0.5 + f64::atan(t) / std::f64::consts::PI;
            assert!((t_cdf(t, 1.0) - cauchy).abs() < 1e-12, "t {t}");
            let two = 0.5 + t / (2.0 * (2.0 + t * t).sqrt());
            assert!((t_cdf(t, 2.0) - two).abs() < 1e-12, "t {t}");
        }
        // The reference's "2 standard errors" is an 81.6 % interval at 3 seeds.
        assert!((t_coverage(2.0, 2.0) - 0.8165).abs() < 1e-4);
    }

    #[test]
    fn a_paired_interval_is_mean_plus_minus_t_times_the_standard_error() {
        let p = Paired::of(&[1.0, 2.0, 3.0], 0.95);
        let half = 4.302_652_7 * 1.0 / 3f64.sqrt();
        let (low, high) = p.interval.unwrap();
        assert!((low - (2.0 - half)).abs() < 1e-6 && (high - (2.0 + half)).abs() < 1e-6);
        assert!(p.above_zero() == (2.0 - half > 0.0));
        assert_eq!(Paired::of(&[5.0], 0.95).interval, None);
        let same = Paired::of(&[0.0, 0.0, 0.0], 0.95);
        assert_eq!(same.interval, Some((0.0, 0.0)));
        assert!(!same.above_zero());
        assert!(Paired::of(&[2.0, 2.0], 0.95).above_zero());
    }

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
