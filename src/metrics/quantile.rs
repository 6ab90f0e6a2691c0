//! A log-bucketed histogram for the percentiles of samples too large to keep: the idea of
//! DDSketch (Masson, Rim and Lee, VLDB 2019). Bucket `i` holds the values in
//! `(γ^(i−1), γ^i]` with `γ = (1 + α)/(1 − α)`, and its estimate `2γ^i/(γ + 1)` is within
//! relative error `α` of every value in it, so the value at any rank is known to `α` whatever
//! the distribution, in memory that grows with the logarithm of the sample's range, not with
//! its size. Each bucket also keeps the least and greatest value it holds, and an estimate is
//! kept between them: still within `α`, and exact for a bucket of equal values (a constant
//! latency, a fixed Retry-After). Counting is deterministic: the same values in the same order
//! give the same buckets on every machine.

/// The relative error `α` of every value read back: 2^−10, about 0.1 %.
pub const RELATIVE_ERROR: f64 = 1.0 / 1024.0;

/// One bucket: how many values, and the least and greatest of them (magnitudes).
#[derive(Clone, Copy, Debug)]
struct Bucket {
    count: u64,
    least: f64,
    greatest: f64,
}

impl Bucket {
    const EMPTY: Bucket = Bucket {
        count: 0,
        least: f64::INFINITY,
        greatest: 0.0,
    };
}

/// The magnitudes of the non-zero values of one sign, by bucket: dense from the lowest bucket
/// seen.
#[derive(Clone, Debug, Default)]
struct Buckets {
    /// Index of `buckets[0]`.
    first: i32,
    buckets: Vec<Bucket>,
    total: u64,
}

impl Buckets {
    fn add(&mut self, index: i32, magnitude: f64) {
        if self.buckets.is_empty() {
            self.first = index;
        } else if index < self.first {
            let grow = (self.first - index) as usize;
            self.buckets
                .splice(0..0, std::iter::repeat_n(Bucket::EMPTY, grow));
            self.first = index;
        }
        let at = (index - self.first) as usize;
        if at >= self.buckets.len() {
            self.buckets.resize(at + 1, Bucket::EMPTY);
        }
        let b = &mut self.buckets[at];
        b.count += 1;
        b.least = b.least.min(magnitude);
        b.greatest = b.greatest.max(magnitude);
        self.total += 1;
    }

    /// The index and bucket of the `rank`-th smallest magnitude (0-based, `rank < total`).
    fn bucket_of(&self, rank: u64) -> (i32, Bucket) {
        let mut seen = 0;
        for (at, b) in self.buckets.iter().enumerate() {
            seen += b.count;
            if seen > rank {
                return (self.first + at as i32, *b);
            }
        }
        let last = self.buckets.len() - 1;
        (self.first + last as i32, self.buckets[last])
    }
}

/// The non-zero values of a sample, binned by magnitude; zeros are counted by the caller.
#[derive(Clone, Debug)]
pub struct LogHistogram {
    ln_gamma: f64,
    positive: Buckets,
    negative: Buckets,
}

impl Default for LogHistogram {
    fn default() -> Self {
        let gamma = (1.0 + RELATIVE_ERROR) / (1.0 - RELATIVE_ERROR);
        LogHistogram {
            ln_gamma: gamma.ln(),
            positive: Buckets::default(),
            negative: Buckets::default(),
        }
    }
}

impl LogHistogram {
    /// Counts `value`, which must be finite and non-zero.
    pub fn add(&mut self, value: f64) {
        debug_assert!(value.is_finite() && value != 0.0, "{value}");
        let magnitude = value.abs();
        let index = self.index(magnitude);
        if value > 0.0 {
            self.positive.add(index, magnitude);
        } else {
            self.negative.add(index, magnitude);
        }
    }

    /// Values counted.
    pub fn len(&self) -> u64 {
        self.positive.total + self.negative.total
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Negative values counted (they sort first).
    pub fn negatives(&self) -> u64 {
        self.negative.total
    }

    /// The `rank`-th smallest value's estimate among the counted ones (0-based, below
    /// [`Self::len`]): within relative [`RELATIVE_ERROR`] of the exact value.
    pub fn value_at(&self, rank: u64) -> f64 {
        let n = self.negative.total;
        if rank < n {
            -self.estimate(self.negative.bucket_of(n - 1 - rank))
        } else {
            self.estimate(self.positive.bucket_of(rank - n))
        }
    }

    /// Bytes of the buckets.
    pub fn heap_bytes(&self) -> u64 {
        ((self.positive.buckets.len() + self.negative.buckets.len())
            * std::mem::size_of::<Bucket>()) as u64
    }

    /// `⌈log_γ x⌉`, the bucket of a positive `x`; finite for every positive double (subnormals
    /// included: about ±3.6 × 10^5).
    fn index(&self, x: f64) -> i32 {
        (x.ln() / self.ln_gamma).ceil() as i32
    }

    /// `2γ^i/(γ + 1)` (computed in logarithms, so that the top buckets do not overflow), kept
    /// within the bucket's least and greatest value: no farther from the value at the rank,
    /// which lies between them, and exact when they are equal.
    fn estimate(&self, (index, bucket): (i32, Bucket)) -> f64 {
        let scale = (2.0 / (self.ln_gamma.exp() + 1.0)).ln();
        (f64::from(index) * self.ln_gamma + scale)
            .exp()
            .clamp(bucket.least, bucket.greatest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rank of a sample reads back within the bound, across magnitudes and signs.
    #[test]
    fn every_rank_is_within_the_relative_error() {
        let mut values: Vec<f64> = (1..=20_000u32)
            .map(|i| {
                let x = f64::from(i);
                let v = (x * 0.618_034).fract() * 10f64.powi((i % 13) as i32 - 4);
                if i % 7 == 0 { -v } else { v }
            })
            .filter(|v| *v != 0.0)
            .collect();
        let mut h = LogHistogram::default();
        for &v in &values {
            h.add(v);
        }
        values.sort_by(f64::total_cmp);
        assert_eq!(h.len(), values.len() as u64);
        assert_eq!(
            h.negatives(),
            values.iter().filter(|v| **v < 0.0).count() as u64
        );
        let bound = RELATIVE_ERROR * (1.0 + 1e-9);
        for (rank, exact) in values.iter().enumerate() {
            let got = h.value_at(rank as u64);
            assert!(
                ((got - exact) / exact).abs() <= bound,
                "rank {rank}: {got} for {exact}"
            );
        }
    }

    #[test]
    fn a_bucket_of_equal_values_reads_back_exactly() {
        let mut h = LogHistogram::default();
        for i in 0..1000 {
            h.add(if i % 3 == 0 { 1500.0 } else { 500.0 });
        }
        assert_eq!(h.value_at(0), 500.0);
        assert_eq!(h.value_at(999), 1500.0);
    }

    #[test]
    fn extreme_magnitudes_have_buckets() {
        let mut h = LogHistogram::default();
        for v in [f64::MIN_POSITIVE, 5e-324, 1.0, 1e300, f64::MAX] {
            h.add(v);
        }
        assert_eq!(h.len(), 5);
        let top = h.value_at(4);
        assert!(top.is_finite() && ((top - f64::MAX) / f64::MAX).abs() <= RELATIVE_ERROR * 1.01);
    }
}
