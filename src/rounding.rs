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
    let scaled = x * 10f64.powi(i32::from(digits));
    // Far from a half, the product's rounding error (under 0.5 ulp, at most 6e-8 below 1e9)
    // cannot change the answer: the common case, without allocating.
    let distance_from_half = ((scaled - scaled.trunc()).abs() - 0.5).abs();
    if distance_from_half > 1e-6 && scaled.abs() < 1e9 {
        return scaled.round_ties_even() / 10f64.powi(i32::from(digits));
    }
    // Near a half, decide on the exact value: Rust's fixed-precision formatting is correctly
    // rounded with ties to even, and parsing gives the nearest double, as Python does.
    format!("{x:.prec$}", prec = usize::from(digits))
        .parse()
        .expect("a formatted finite float parses")
}

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
