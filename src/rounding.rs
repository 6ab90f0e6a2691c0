//! Decimal rounding exactly as Python's `round(x, digits)` does it.
//!
//! The reference rounds retry delays to 4 decimals and its JSON values to 6, and exact replay
//! must reproduce both digit for digit. Python rounds the exact binary value to the nearest
//! decimal with `digits` places, ties to even; plain `(x·10ⁿ).round()/10ⁿ` differs on exact
//! ties (0.4453125 → 0.445313, where Python says 0.445312) and wherever the product itself
//! rounds across a half.

/// `round(x, digits)` as CPython computes it; `digits` ≤ 15. Zero, NaN and infinities pass
/// through unchanged.
pub fn round(x: f64, digits: u8) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = POWERS_OF_TEN[usize::from(digits)];
    let scaled = x * scale;
    // Far from a half, the product's rounding error (under 0.5 ulp, at most 6e-8 below 1e9)
    // cannot change the answer: the common case, without allocating. Below 1e9 the whole part
    // and the nearest integer are found without a library call (x86-64's baseline has no
    // rounding instruction): a cast truncates, and adding and taking away 2^52 rounds to the
    // nearest, ties to even, as `round_ties_even` does (its sign kept for a zero).
    if scaled.abs() < 1e9 {
        let whole = scaled as i64 as f64;
        let distance_from_half = ((scaled - whole).abs() - 0.5).abs();
        if distance_from_half > 1e-6 {
            const TWO_52: f64 = 4_503_599_627_370_496.0;
            let nearest = if scaled >= 0.0 {
                (scaled + TWO_52) - TWO_52
            } else {
                (scaled - TWO_52) + TWO_52
            };
            return nearest.copysign(scaled) / scale;
        }
    }
    round_exactly(x, digits)
}

/// [`round`] near a half, decided on the exact value: Rust's fixed-precision formatting is
/// correctly rounded with ties to even, and parsing gives the nearest double, as Python does.
/// Out of line, so that the common case above stays a few instructions.
#[cold]
#[inline(never)]
fn round_exactly(x: f64, digits: u8) -> f64 {
    format!("{x:.prec$}", prec = usize::from(digits))
        .parse()
        .expect("a formatted finite float parses")
}

/// 10^0 to 10^15, each exact (as `10f64.powi(k)` computes them: every product on the way is an
/// integer below 2^53).
const POWERS_OF_TEN: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// `seconds` rounded up to whole milliseconds, at least one: the resolution of a
/// `retry-after-ms` header, and the shortest sleep of a pacing client. Waiting that long never
/// falls a rounding error short of what was meant.
pub fn ceil_ms(seconds: f64) -> f64 {
    ((seconds * 1000.0).ceil() / 1000.0).max(0.001)
}

#[cfg(test)]
mod tests {
    use super::round;

    #[test]
    fn four_decimals_match_python() {
        // Values checked with CPython 3.11: round(x, 4).
        assert_eq!(round(0.41053004205581467, 4), 0.4105);
        assert_eq!(round(0.03125, 4), 0.0312);
        assert_eq!(round(0.00005, 4), 0.0001);
        assert_eq!(round(1.00005, 4), 1.0001);
        assert_eq!(round(2.675, 4), 2.675);
        assert_eq!(round(0.123456, 4), 0.1235);
        assert_eq!(round(0.00004999, 4), 0.0);
    }

    #[test]
    fn six_decimals_match_python() {
        // CPython 3.11: round(x, 6). The first two are exact binary ties (57/128, 1/128).
        assert_eq!(round(0.4453125, 6), 0.445312);
        assert_eq!(round(0.0078125, 6), 0.007812);
        assert_eq!(round(-0.4453125, 6), -0.445312);
        assert_eq!(round(2.5e-6, 6), 3e-6);
        assert_eq!(round(0.0000005, 6), 0.0);
        assert_eq!(round(1.0000005, 6), 1.000001);
        assert_eq!(round(1234.5678915, 6), 1234.567892);
        assert_eq!(round(1e12 + 0.1234565, 6), 1e12 + 0.123457);
    }

    /// The fast path gives what the library's rounding gives, across signs, magnitudes and
    /// digits (the previous implementation, kept here as the oracle).
    #[test]
    fn the_fast_path_agrees_with_the_library() {
        fn oracle(x: f64, digits: u8) -> f64 {
            if x == 0.0 || !x.is_finite() {
                return x;
            }
            let scaled = x * 10f64.powi(i32::from(digits));
            let distance_from_half = ((scaled - scaled.trunc()).abs() - 0.5).abs();
            if distance_from_half > 1e-6 && scaled.abs() < 1e9 {
                return scaled.round_ties_even() / 10f64.powi(i32::from(digits));
            }
            format!("{x:.prec$}", prec = usize::from(digits))
                .parse()
                .expect("a formatted finite float parses")
        }
        for k in 0..16u8 {
            assert_eq!(
                super::POWERS_OF_TEN[usize::from(k)],
                10f64.powi(i32::from(k))
            );
        }
        let mut state = 3u64;
        for i in 0..200_000u64 {
            state = crate::rng::mix64(state ^ i);
            let mantissa = (state >> 11) as f64 / (1u64 << 53) as f64;
            let magnitude = 10f64.powi((state % 24) as i32 - 12);
            let x = if state & 1 == 0 {
                mantissa * magnitude
            } else {
                -mantissa * magnitude
            };
            let digits = ((state >> 5) % 16) as u8;
            assert_eq!(
                round(x, digits).to_bits(),
                oracle(x, digits).to_bits(),
                "{x} {digits}"
            );
        }
    }

    #[test]
    fn specials_pass_through() {
        assert_eq!(round(0.0, 6), 0.0);
        assert!(round(f64::NAN, 6).is_nan());
        assert_eq!(round(f64::INFINITY, 4), f64::INFINITY);
    }

    #[test]
    fn ceil_ms_rounds_up_to_whole_milliseconds_at_least_one() {
        assert_eq!(super::ceil_ms(0.0), 0.001);
        assert_eq!(super::ceil_ms(0.0101), 0.011);
        assert_eq!(super::ceil_ms(2.0), 2.0);
    }
}
