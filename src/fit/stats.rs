//! Small numerical helpers of the fitter: the normal distribution, quantiles, the
//! Kolmogorov–Smirnov distance, least squares.

/// The standard normal CDF, to about 1e-7 (the complementary error function of Numerical
/// Recipes, `erfcc`).
pub fn normal_cdf(z: f64) -> f64 {
    let x = -z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let poly = -x * x - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    0.5 * erfc
}

/// The standard normal density.
pub fn normal_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// The `q` quantile of sorted data (linear between order statistics); `NaN` when empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (i, frac) = (h.floor() as usize, h - h.floor());
    let next = sorted[(i + 1).min(sorted.len() - 1)];
    sorted[i] + frac * (next - sorted[i])
}

/// The Kolmogorov–Smirnov distance between sorted data and a CDF.
pub fn ks_distance(sorted: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let n = sorted.len() as f64;
    let mut worst: f64 = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        // Ties form one step of the empirical CDF.
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[i] {
            j += 1;
        }
        let f = cdf(sorted[i]);
        worst = worst
            .max((f - i as f64 / n).abs())
            .max(((j + 1) as f64 / n - f).abs());
        i = j + 1;
    }
    worst
}

/// The KS distance between `cdf` and the Kaplan–Meier estimate of the distribution of
/// `sorted` (observed values, rising) with `censored` values known only to be at least what
/// they are (a request cut short at its timeout). Without censored values it is
/// [`ks_distance`]. Served values alone are a sample of the law below the cuts, not of the law,
/// so comparing them with it measures the censored share, not the fit (a KS of 0.33 for a right
/// median with a third of the requests cut at 1 s).
pub fn ks_censored(sorted: &[f64], censored: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    if censored.is_empty() {
        return ks_distance(sorted, cdf);
    }
    let mut cuts = censored.to_vec();
    cuts.sort_by(f64::total_cmp);
    let mut at_risk = (sorted.len() + cuts.len()) as f64;
    let (mut survival, mut worst): (f64, f64) = (1.0, 0.0);
    let (mut i, mut c) = (0, 0);
    while i < sorted.len() {
        let t = sorted[i];
        // Cut before this value: no longer at risk (a cut at the value itself still is).
        while c < cuts.len() && cuts[c] < t {
            at_risk -= 1.0;
            c += 1;
        }
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == t {
            j += 1;
        }
        let events = (j - i + 1) as f64;
        let f = cdf(t);
        let before = 1.0 - survival;
        survival *= 1.0 - events / at_risk;
        worst = worst
            .max((f - before).abs())
            .max((1.0 - survival - f).abs());
        at_risk -= events;
        i = j + 1;
    }
    worst
}

/// Ordinary least squares of `y` on the columns of `x` (rows of equal length), by the normal
/// equations; `None` when they are singular.
pub fn least_squares(rows: &[(Vec<f64>, f64)]) -> Option<Vec<f64>> {
    let k = rows.first()?.0.len();
    let mut a = vec![vec![0.0; k + 1]; k];
    for (x, y) in rows {
        for i in 0..k {
            for j in 0..k {
                a[i][j] += x[i] * x[j];
            }
            a[i][k] += x[i] * y;
        }
    }
    solve(a)
}

/// Gaussian elimination with partial pivoting of an augmented `k × (k + 1)` system.
fn solve(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let k = a.len();
    let scale = a
        .iter()
        .map(|r| r[..k].iter().fold(0.0f64, |m, v| m.max(v.abs())))
        .fold(0.0f64, f64::max);
    for col in 0..k {
        let pivot = (col..k).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() <= 1e-12 * scale.max(f64::MIN_POSITIVE) {
            return None;
        }
        a.swap(col, pivot);
        let pivot_row = a[col].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (cell, p) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                    *cell -= f * p;
                }
            }
        }
    }
    Some((0..k).map(|i| a[i][k] / a[i][i]).collect())
}

/// Mean and sample standard deviation.
pub fn mean_sd(data: &[f64]) -> (f64, f64) {
    let n = data.len() as f64;
    if data.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mean = data.iter().sum::<f64>() / n;
    let var = data.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_normal_cdf_matches_known_values() {
        for (z, p) in [
            (0.0, 0.5),
            (1.0, 0.841_344_746),
            (-1.96, 0.024_997_895),
            (3.0, 0.998_650_102),
        ] {
            assert!((normal_cdf(z) - p).abs() < 2e-7, "{z}");
        }
    }

    #[test]
    fn least_squares_recovers_an_exact_plane() {
        let rows: Vec<_> = (0..20)
            .map(|i| {
                let (a, b) = (i as f64, (i * i % 7) as f64);
                (vec![1.0, a, b], 2.0 + 0.5 * a - 3.0 * b)
            })
            .collect();
        let beta = least_squares(&rows).expect("regular");
        for (got, want) in beta.iter().zip([2.0, 0.5, -3.0]) {
            assert!((got - want).abs() < 1e-9, "{beta:?}");
        }
    }

    #[test]
    fn the_censored_distance_reads_the_law_below_the_cuts() {
        // A uniform law on [0, 1) cut at 0.6: 600 served, 400 known to last at least 0.6.
        let served: Vec<f64> = (0..600).map(|i| (i as f64 + 0.5) / 1000.0).collect();
        let cuts = vec![0.6; 400];
        assert!(ks_censored(&served, &cuts, |x| x) <= 0.001 + 1e-12);
        assert!(
            ks_distance(&served, |x| x) > 0.39,
            "served alone read the cut"
        );
        assert_eq!(
            ks_censored(&served, &[], |x| x),
            ks_distance(&served, |x| x)
        );
        // A wrong law is still told apart.
        assert!(ks_censored(&served, &cuts, |x| x * x) > 0.2);
    }

    #[test]
    fn ks_distance_of_a_sample_against_its_own_uniform_law_is_small() {
        let data: Vec<f64> = (0..1000).map(|i| (i as f64 + 0.5) / 1000.0).collect();
        assert!(ks_distance(&data, |x| x) <= 0.001 + 1e-12);
        assert!((ks_distance(&data, |x| x * x) - 0.25).abs() < 0.01);
    }
}
