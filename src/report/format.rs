//! Number and list formatting shared by the renderers.
//!
//! Owns how a value is spelled (precision per unit, thousands separators, percentages, seed
//! ranges) so the terminal, markdown and CSV outputs agree. Never decides what to show.

use crate::text::plural;

/// Decimals for a unit (reference §8.7): 2 for times, 1 for counts, 4 for rates and ratios.
pub fn decimals(unit: &str) -> usize {
    match unit {
        "s" | "ms" => 2,
        "jobs" | "requests" | "attempts" | "leases" | "tokens" => 1,
        _ => 4,
    }
}

/// Decimals for a unit's values whose largest magnitude is `scale`: as [`decimals`], but money
/// below 1 keeps four significant digits (at most 12 decimals), since a job's cost is often a
/// small fraction of a cent and four decimals would print it as `0.0000`.
pub fn decimals_at(unit: &str, scale: f64) -> usize {
    let d = decimals(unit);
    if unit != "cost" || !scale.is_finite() || scale <= 0.0 || scale >= 1.0 {
        return d;
    }
    let leading_zeros = -scale.log10().floor() - 1.0;
    (3 + leading_zeros as usize + 1).clamp(d, 12)
}

/// The largest finite magnitude among `values` (0 for none): the scale [`decimals_at`] takes.
pub fn scale_of(values: impl IntoIterator<Item = f64>) -> f64 {
    values
        .into_iter()
        .filter(|x| x.is_finite())
        .fold(0.0, |m, x| m.max(x.abs()))
}

/// `x` with `decimals` digits; never prints `-0.00`.
pub fn fixed(x: f64, decimals: usize) -> String {
    let text = format!("{x:.decimals$}");
    if text.starts_with('-') && text[1..].chars().all(|c| c == '0' || c == '.') {
        text[1..].to_string()
    } else {
        text
    }
}

/// A duration as a world gives it: whole seconds without decimals (`600`), a fraction as
/// written to 6 decimals (`0.5`, not a rounded `0`).
pub fn seconds(x: f64) -> String {
    if x.fract() == 0.0 {
        fixed(x, 0)
    } else {
        round6(x).to_string()
    }
}

/// `x` with `decimals` digits and `,` between thousands: `12,184.3`.
pub fn thousands(x: f64, decimals: usize) -> String {
    let text = fixed(x, decimals);
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.as_str()),
    };
    let (int, frac) = digits.split_once('.').map_or((digits, ""), |(i, f)| (i, f));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    if frac.is_empty() {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped}.{frac}")
    }
}

/// A ratio as a percentage with one decimal: `0.6012` → `60.1 %`.
pub fn percent(ratio: f64) -> String {
    format!("{} %", fixed(ratio * 100.0, 1))
}

/// A rule's constant as a percentage without decimals: `0.9` → `90 %`.
pub fn whole_percent(ratio: f64) -> String {
    format!("{} %", fixed(ratio * 100.0, 0))
}

/// Rounds to 6 decimals for machine output, as the reference's JSON does (Python's
/// `round(x, 6)`; a negative zero becomes 0); computations keep full precision.
pub fn round6(x: f64) -> f64 {
    let r = crate::rounding::round(x, 6);
    if r == 0.0 { 0.0 } else { r }
}

/// Rounds a metric's value for machine output: [`round6`], but money below 0.1 to six
/// significant digits, since six decimals of a job's cost can leave one digit of it, or none.
pub fn round_value(unit: &str, x: f64) -> f64 {
    if unit != "cost" || !x.is_finite() || x.abs() >= 0.1 {
        return round6(x);
    }
    let r: f64 = format!("{x:.5e}")
        .parse()
        .expect("a formatted finite float parses");
    if r == 0.0 { 0.0 } else { r }
}

/// The seed list, shortened when it is a run of consecutive seeds: `20260917…20260919`.
pub fn seeds(seeds: &[u64]) -> String {
    let consecutive = seeds.windows(2).all(|w| w[1] == w[0].wrapping_add(1));
    match seeds {
        [] => String::new(),
        [one] => one.to_string(),
        [first, .., last] if consecutive => format!("{first}…{last}"),
        _ => seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// `3000 jobs × 3 steps × 2 calls, 12 workers`: a world's size, each count with its noun, and
/// its load ([`load`]).
pub fn world_size(jobs: u32, steps: u32, calls: u32, load: &str) -> String {
    format!(
        "{} × {} × {}, {load}",
        plural(jobs as usize, "job"),
        plural(steps as usize, "step"),
        plural(calls as usize, "call"),
    )
}

/// How the jobs come: `12 workers` (a closed loop), `open loop at 4.5 jobs/s, at most 50 in
/// flight`, or `trace replay`: an open loop's `concurrency` is not used, so it is not shown.
pub fn load(world: &crate::world::World) -> String {
    use crate::world::Load;
    let cap = |m: Option<u32>| m.map_or(String::new(), |m| format!(", at most {m} in flight"));
    match world.load() {
        Load::Closed { .. } => plural(world.concurrency() as usize, "worker"),
        Load::Open {
            rate_per_s,
            max_in_flight,
            ..
        } => format!("open loop at {rate_per_s} jobs/s{}", cap(*max_in_flight)),
        Load::Trace { max_in_flight, .. } => format!("trace replay{}", cap(*max_in_flight)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_spelled_consistently() {
        assert_eq!(fixed(-0.0001, 2), "0.00");
        assert_eq!(fixed(-1.5, 1), "-1.5");
        assert_eq!(thousands(1234567.891, 2), "1,234,567.89");
        assert_eq!(thousands(-999.0, 1), "-999.0");
        assert_eq!(thousands(1000.0, 0), "1,000");
        assert_eq!(percent(0.60123), "60.1 %");
        assert_eq!(seeds(&[5, 6, 7]), "5…7");
        assert_eq!(seeds(&[5, 7]), "5, 7");
        assert_eq!(seeds(&[5]), "5");
        assert_eq!(decimals("ms"), 2);
        assert_eq!(decimals("requests"), 1);
        assert_eq!(decimals("tokens"), 1);
        assert_eq!(decimals("jobs/s"), 4);
        // Money below 1 keeps four significant digits; elsewhere the unit decides.
        assert_eq!(
            thousands(0.000461937, decimals_at("cost", 0.000461937)),
            "0.0004619"
        );
        assert_eq!(decimals_at("cost", 0.5), 4);
        assert_eq!(decimals_at("cost", 0.05), 5);
        assert_eq!(decimals_at("cost", 1234.5), 4);
        assert_eq!(decimals_at("cost", 0.0), 4);
        assert_eq!(decimals_at("cost", 1e-30), 12);
        assert_eq!(decimals_at("ms", 0.0001), 2);
        assert_eq!(scale_of([-0.3, f64::NAN, 0.2]), 0.3);
        assert_eq!(round_value("cost", 0.000461937412), 0.000461937);
        assert_eq!(round_value("cost", -7.289871e-8), -7.28987e-8);
        assert_eq!(round_value("cost", 1234.56789123), 1234.567891);
        assert_eq!(round_value("cost", 0.0), 0.0);
        assert_eq!(round_value("ratio", 0.000461937412), 0.000462);
    }

    /// An open loop's `concurrency` (its default) is not reported as its workers.
    #[test]
    fn the_load_says_how_jobs_come() {
        let base = "name = \"w\"\nsummary = \"s\"\n\
                    [[endpoints]]\nid = \"a\"\ncapacity = 2\nlatency = { median_s = 0.1 }\n";
        let world = |load: &str| {
            crate::compile::load("w.toml", format!("{base}{load}").as_bytes()).expect("valid")
        };
        let closed = format!("concurrency = 12\n{base}");
        let closed = crate::compile::load("w.toml", closed.as_bytes()).expect("valid");
        assert_eq!(load(&closed), "12 workers");
        assert_eq!(
            load(&world("[load]\nmodel = \"open\"\nrate_per_s = 4.5\n")),
            "open loop at 4.5 jobs/s"
        );
        assert_eq!(
            load(&world(
                "[load]\nmodel = \"open\"\nrate_per_s = 1000\nmax_in_flight = 50\n"
            )),
            "open loop at 1000 jobs/s, at most 50 in flight"
        );
    }
}
