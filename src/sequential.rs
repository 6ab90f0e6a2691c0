//! Sequential seeds (`--seeds auto[:MAX]`): run seeds in batches until the verdict is decided,
//! with an error rate that stays at the stated level however many times it looks.
//!
//! Looking at a t-interval after every batch and stopping at the first one that excludes zero
//! ("peeking") raises the chance of a false pick well past 1 − confidence. This is a
//! group-sequential design instead: the looks are planned before the first run (10 seeds, then
//! doubling, up to MAX, which is always the last look), and the error allowed, 1 − confidence,
//! is split evenly over them (Bonferroni spending). A false pick needs some look's interval to
//! exclude zero, and each look's chance of that is at most its share, so all looks together stay
//! within the stated level, whatever the correlation between looks. The price is a wider
//! interval at each look than one fixed-size comparison would use; the gain is stopping at the
//! first look that separates the leader, often long before MAX.
//!
//! Pure: the caller supplies the runs of each batch and the analysis, so the same driver serves
//! the CLI and the tests, and the seeds a decision needed depend on nothing but the world.

use crate::objective::Objective;
use crate::report::Report;
use crate::report::decision::Outcome;

/// Seeds at the first look (or MAX, if smaller).
pub const FIRST_LOOK: u32 = 10;

/// The most seeds `--seeds auto` runs when no maximum is given.
pub const DEFAULT_MAX: u32 = 200;

/// The planned looks and how the error is spent over them.
#[derive(Clone, Debug, PartialEq)]
pub struct Design {
    /// Seeds run by each look, increasing; the last is the maximum.
    pub looks: Vec<u32>,
    /// The confidence the verdict holds at over all looks together.
    pub confidence: f64,
}

impl Design {
    /// Looks at [`FIRST_LOOK`] seeds, doubling, then `max` (at least 1).
    pub fn new(max: u32, confidence: f64) -> Design {
        let max = max.max(1);
        let mut looks = vec![FIRST_LOOK.min(max)];
        while let Some(&last) = looks.last().filter(|&&n| n < max) {
            looks.push(last.saturating_mul(2).min(max));
        }
        Design { looks, confidence }
    }

    /// The most seeds it runs.
    pub fn max(&self) -> u32 {
        *self.looks.last().expect("at least one look")
    }

    /// The confidence of each look's intervals: 1 − (1 − confidence) / looks.
    pub fn per_look(&self) -> f64 {
        1.0 - (1.0 - self.confidence) / self.looks.len() as f64
    }

    /// `objective` with its confidence raised to [`Design::per_look`].
    pub fn per_look_objective(&self, objective: &Objective) -> Objective {
        Objective {
            confidence: self.per_look(),
            ..objective.clone()
        }
    }
}

/// Where a sequential comparison stopped, for the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Stop {
    /// The design it followed.
    pub design: Design,
    /// Looks taken (1-based index of the last one).
    pub looks_taken: usize,
    /// Seeds run.
    pub seeds: u32,
    /// Whether the verdict picked a strategy.
    pub decided: bool,
    /// Whether it stopped with nothing to decide, more seeds being no help: no strategy meets
    /// every constraint, or none could be judged.
    pub nothing_to_decide: bool,
}

impl Stop {
    /// One sentence for the report, e.g. `seeds auto: decided at look 2 of 6 (20 seeds of at
    /// most 200); each look's intervals at 99.2 %, so that all looks together hold 95 %`.
    pub fn describe(&self) -> String {
        let d = &self.design;
        let outcome = if self.decided {
            "decided"
        } else if self.nothing_to_decide {
            "nothing to decide"
        } else {
            "undecided"
        };
        format!(
            "seeds auto: {outcome} at look {} of {} ({} seeds of at most {}); each look's \
             intervals at {}, so that all looks together hold {} (planned looks at {} seeds, \
             the error split evenly)",
            self.looks_taken,
            d.looks.len(),
            self.seeds,
            d.max(),
            crate::report::decision::pct(d.per_look()),
            crate::report::decision::pct(d.confidence),
            d.looks
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// Whether a verdict needs no more seeds: anything but "cannot be separated".
pub fn settled(report: &Report) -> bool {
    !matches!(report.decision.outcome, Outcome::Undecided { .. })
}

/// Runs the design: `analyse(n)` runs (or reuses) the first `n` seeds and returns their report
/// judged at [`Design::per_look`]; it is called once per look until a verdict is settled or
/// the last look is taken. Returns the last report and where it stopped.
pub fn run(design: &Design, mut analyse: impl FnMut(u32) -> Report) -> (Report, Stop) {
    let mut looks_taken = 0;
    loop {
        let seeds = design.looks[looks_taken];
        looks_taken += 1;
        let report = analyse(seeds);
        if settled(&report) || looks_taken == design.looks.len() {
            let outcome = &report.decision.outcome;
            let stop = Stop {
                design: design.clone(),
                looks_taken,
                seeds,
                decided: matches!(outcome, Outcome::Decided { .. } | Outcome::Alone { .. }),
                nothing_to_decide: matches!(outcome, Outcome::Nothing),
            };
            return (report, stop);
        }
    }
}

/// Parses `auto` or `auto:MAX` (MAX ≥ 2); `None` for anything else.
///
/// # Errors
/// A message when it starts with `auto` but the maximum is not a whole number ≥ 2.
pub fn parse_auto(text: &str) -> Option<Result<u32, String>> {
    let rest = text.strip_prefix("auto")?;
    if rest.is_empty() {
        return Some(Ok(DEFAULT_MAX));
    }
    let max = rest.strip_prefix(':')?;
    Some(match whole(max) {
        // Too many for a u32 is too many for any limit: the caller's says so.
        Some(n) if n >= 2 => Ok(u32::try_from(n).unwrap_or(u32::MAX)),
        _ => Err(format!(
            "`{text}`: the most seeds after `auto:` must be a whole number of at least 2, \
             e.g. auto:500"
        )),
    })
}

/// A whole number written in digits, as large as it is written: digits beyond `u64` give
/// `u64::MAX`, so "too many" is told apart from "not a number".
pub fn whole(text: &str) -> Option<u64> {
    let digits = text.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse::<u64>().unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_too_large_for_any_integer_is_too_many_not_a_word() {
        assert_eq!(whole("18446744073709551616"), Some(u64::MAX));
        assert_eq!(whole(" 12 "), Some(12));
        assert_eq!(whole("1e3"), None);
        assert_eq!(whole(""), None);
        assert_eq!(parse_auto("auto:5000000000"), Some(Ok(u32::MAX)));
        assert!(matches!(parse_auto("auto:1"), Some(Err(_))));
    }

    #[test]
    fn looks_start_at_ten_and_double_up_to_the_maximum() {
        assert_eq!(Design::new(200, 0.95).looks, [10, 20, 40, 80, 160, 200]);
        assert_eq!(
            Design::new(500, 0.95).looks,
            [10, 20, 40, 80, 160, 320, 500]
        );
        assert_eq!(Design::new(40, 0.95).looks, [10, 20, 40]);
        assert_eq!(Design::new(6, 0.95).looks, [6]);
        assert_eq!(Design::new(11, 0.95).looks, [10, 11]);
    }

    #[test]
    fn the_error_is_split_evenly_over_the_looks() {
        let design = Design::new(200, 0.95);
        assert!((design.per_look() - (1.0 - 0.05 / 6.0)).abs() < 1e-15);
        assert_eq!(Design::new(5, 0.9).per_look(), 0.9);
    }

    #[test]
    fn auto_parses_with_and_without_a_maximum() {
        assert_eq!(parse_auto("auto"), Some(Ok(DEFAULT_MAX)));
        assert_eq!(parse_auto("auto:500"), Some(Ok(500)));
        assert!(matches!(parse_auto("auto:1"), Some(Err(_))));
        assert!(matches!(parse_auto("auto:x"), Some(Err(_))));
        assert_eq!(parse_auto("12"), None);
        assert_eq!(parse_auto("automatic"), None);
    }
}
