//! A log-linear histogram for the percentiles of samples too large to keep: the bucket layout
//! of HdrHistogram with the relative-error guarantee of DDSketch (Masson, Rim and Lee, VLDB
//! 2019). A magnitude's bucket is its binary exponent and the top [`SUB_BITS`] bits of its
//! mantissa — the top bits of the double itself, so binning a value is a shift, not a
//! logarithm. A bucket spans at most 1/512 of its lower bound, and its estimate (the harmonic
//! mean of its bounds) is within 1/1025 of every value in it, so the value at any rank is known
//! to 2^−10 whatever the distribution, in memory that grows with the logarithm of the sample's
//! range, not with its size. Each bucket also keeps the least and greatest value it holds, and
//! an estimate is kept between them: no farther from the value at the rank, which lies between
//! them, and exact for a bucket of equal values (a constant latency, a fixed Retry-After).
//! Binning is integer arithmetic: the same values give the same buckets on every machine.

/// Mantissa bits in a bucket's index: 512 buckets per octave.
const SUB_BITS: u32 = 9;

/// Bits of a double below its bucket's index.
const SHIFT: u32 = 52 - SUB_BITS;

/// The relative error of every value read back, at most: 2^−10, about 0.1 % (the bound is
/// 1/(2 × 512 + 1) for normal doubles; subnormals, below 2.2 × 10^−308, are binned linearly).
pub const RELATIVE_ERROR: f64 = 1.0 / 1024.0;

/// One bucket: how many values, and the least and greatest of them (magnitudes), as bit
/// patterns: a non-negative double's bits order as the number does, so keeping the extremes
/// is two integer compares instead of two NaN-aware float ones.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    count: u64,
    least: u64,
    greatest: u64,
}

impl Bucket {
    const EMPTY: Bucket = Bucket {
        count: 0,
        least: f64::INFINITY.to_bits(),
        greatest: 0,
    };
}

/// The magnitudes of the non-zero values of one sign, by bucket: dense from the lowest bucket
/// seen.
#[derive(Clone, Debug, Default)]
struct Buckets {
    /// Index of `buckets[0]`.
    first: u32,
    buckets: Vec<Bucket>,
    total: u64,
}

impl Buckets {
    #[inline]
    fn add(&mut self, magnitude: f64) {
        let bits = magnitude.to_bits();
        let index = (bits >> SHIFT) as u32;
        // Below the first bucket wraps to past the last: one compare for both.
        let mut at = index.wrapping_sub(self.first) as usize;
        if at >= self.buckets.len() {
            at = self.grow_to(index);
        }
        if let Some(b) = self.buckets.get_mut(at) {
            b.count += 1;
            b.least = b.least.min(bits);
            b.greatest = b.greatest.max(bits);
            self.total += 1;
        }
    }

    /// Adds the buckets up to `index` (the first value, or one below or above every earlier
    /// one) and returns its position.
    #[cold]
    fn grow_to(&mut self, index: u32) -> usize {
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
        at
    }

    /// The index and bucket of the `rank`-th smallest magnitude (0-based, `rank < total`).
    fn bucket_of(&self, rank: u64) -> (u32, Bucket) {
        let mut seen = 0;
        for (at, b) in self.buckets.iter().enumerate() {
            seen += b.count;
            if seen > rank {
                return (self.first + at as u32, *b);
            }
        }
        let last = self.buckets.len() - 1;
        (self.first + last as u32, self.buckets[last])
    }
}

/// The non-zero values of a sample, binned by magnitude; zeros are counted by the caller.
#[derive(Clone, Debug, Default)]
pub struct LogHistogram {
    positive: Buckets,
    negative: Buckets,
}

impl LogHistogram {
    /// Counts `value`, which must be finite and non-zero.
    #[inline]
    pub fn add(&mut self, value: f64) {
        debug_assert!(value.is_finite() && value != 0.0, "{value}");
        if value > 0.0 {
            self.positive.add(value);
        } else {
            self.negative.add(-value);
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
            -estimate(self.negative.bucket_of(n - 1 - rank))
        } else {
            estimate(self.positive.bucket_of(rank - n))
        }
    }

    /// Bytes of the buckets.
    pub fn heap_bytes(&self) -> u64 {
        ((self.positive.buckets.len() + self.negative.buckets.len())
            * std::mem::size_of::<Bucket>()) as u64
    }
}

/// The harmonic mean of a bucket's bounds (within 1/1025 of both), kept within its least and
/// greatest value.
fn estimate((index, bucket): (u32, Bucket)) -> f64 {
    let low = f64::from_bits(u64::from(index) << SHIFT);
    let high = f64::from_bits(u64::from(index + 1) << SHIFT);
    let middle = if high.is_finite() {
        2.0 * low * (high / (low + high))
    } else {
        low
    };
    middle.clamp(
        f64::from_bits(bucket.least),
        f64::from_bits(bucket.greatest),
    )
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
