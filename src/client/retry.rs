//! The client retry policy: classify a failed attempt, decide whether and when to try again.
//!
//! A Retry-After replaces the backoff entirely (stretched by `retry_after_spread` when set);
//! otherwise the delay is the exponential backoff with its jitter, drawn from the attempt's own
//! retry stream. Delays are rounded to 4 decimals,
//! as the reference sleeps the rounded value.

use crate::world::{Backoff, Jitter, RetryPolicy};

/// The class of a failed attempt's error, as the reference's classifier names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ErrorClass {
    /// HTTP 429 (capacity or quota refusal).
    RateLimit,
    /// HTTP 503.
    Upstream,
    /// Connection reset.
    Connection,
    /// Read timeout.
    Timeout,
    /// Rejected locally by client-side throttling (`[retry.throttle]`); never sent.
    Throttled,
    /// Anything unclassified, such as "no resource available" from `immediate`.
    Unknown,
    /// A fatal error such as HTTP 401 from a revoked key: never retried.
    Fatal,
}

impl ErrorClass {
    /// Every class, in report order.
    pub const ALL: [ErrorClass; 7] = [
        ErrorClass::RateLimit,
        ErrorClass::Upstream,
        ErrorClass::Connection,
        ErrorClass::Timeout,
        ErrorClass::Throttled,
        ErrorClass::Unknown,
        ErrorClass::Fatal,
    ];

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::RateLimit => "rate_limit",
            ErrorClass::Upstream => "upstream",
            ErrorClass::Connection => "connection",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Throttled => "throttled",
            ErrorClass::Unknown => "unknown",
            ErrorClass::Fatal => "fatal",
        }
    }

    /// Whether `retry_classified` covers this class.
    pub fn is_retryable(self) -> bool {
        !matches!(self, ErrorClass::Unknown | ErrorClass::Fatal)
    }
}

/// What the policy decided after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decision {
    /// Try again after this many seconds (already rounded to 4 decimals).
    Retry(f64),
    /// The step gives up.
    GiveUp(GiveUp),
}

/// Why a step gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GiveUp {
    /// The attempt budget is spent.
    AttemptsExhausted,
    /// The error's class is not retried by this policy.
    PolicyDeclined,
    /// The delay would overrun `max_total_s`.
    TotalBudget,
    /// The retry budget (`[retry.budget]`) had no retry left in its window.
    RetryBudget,
}

/// A failed attempt, as a retry loop sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Failure {
    /// The error's class.
    pub class: ErrorClass,
    /// The Retry-After the answer carried \[s\] (only a 429 carries one).
    pub retry_after_s: Option<f64>,
    /// Attempts of the step made so far, the failed one included (1-based).
    pub attempts_used: u32,
    /// Time since the step started \[s\].
    pub elapsed_s: f64,
}

/// A retry loop a strategy carries itself (a client library's own retries), used instead of
/// the world's `[retry]` decision for that strategy (see [`crate::client::strategy::Strategy::retry_loop`]).
///
/// The world's retry budget and client-side throttle (`[retry.budget]`, `[retry.throttle]`)
/// still apply around it: the harness asks the budget after a `Retry` decision, as it does for
/// `[retry]`.
pub trait RetryLoop: std::fmt::Debug + Send + Sync {
    /// Decides after `failure`. `draw` yields the attempt's keyed retry stream's uniform draw
    /// in `[0, 1)` (the same stream `[retry]` jitter draws from, so strategies share their
    /// random numbers); call it only when the delay is random.
    fn decide(&self, failure: &Failure, draw: &mut dyn FnMut() -> f64) -> Decision;
}

/// Decides after attempt `attempts_used` (1-based) failed with `class`, `elapsed_s` after the
/// step started. `draw` yields the retry stream's uniform draw, only called for a jittered
/// backoff or a spread Retry-After (so a policy without either draws nothing, as the reference).
#[inline]
pub fn decide(
    policy: &RetryPolicy,
    class: ErrorClass,
    retry_after_s: Option<f64>,
    attempts_used: u32,
    elapsed_s: f64,
    draw: impl FnOnce() -> f64,
) -> Decision {
    if attempts_used >= policy.max_attempts {
        return Decision::GiveUp(GiveUp::AttemptsExhausted);
    }
    let retry = (policy.retry_classified && class.is_retryable())
        || (policy.retry_unknown && class == ErrorClass::Unknown);
    if !retry {
        return Decision::GiveUp(GiveUp::PolicyDeclined);
    }
    let delay = match retry_after_s {
        Some(after) => spread(after.max(0.0), policy.retry_after_spread, draw),
        None => jittered(&policy.backoff, attempts_used, draw),
    };
    if let Some(max_total_s) = policy.max_total_s
        && elapsed_s + delay > max_total_s
    {
        return Decision::GiveUp(GiveUp::TotalBudget);
    }
    Decision::Retry(round_4(delay))
}

/// A Retry-After stretched by up to `spread` of itself; exactly `after` (no draw) at 0.
fn spread(after: f64, spread: f64, draw: impl FnOnce() -> f64) -> f64 {
    if spread == 0.0 {
        after
    } else {
        after * (1.0 + spread * draw())
    }
}

/// The backoff delay after `k` failures (k ≥ 1), with jitter drawn by `draw` when needed.
pub fn jittered(backoff: &Backoff, k: u32, draw: impl FnOnce() -> f64) -> f64 {
    let raw = backoff.raw(k);
    match backoff.jitter {
        Jitter::Full => raw * draw(),
        Jitter::Equal => raw / 2.0 + (raw / 2.0) * draw(),
        Jitter::None => raw,
    }
}

/// Rounds a delay to 4 decimals exactly as the reference's `round(x, 4)` does.
pub fn round_4(x: f64) -> f64 {
    crate::rounding::round(x, 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(jitter: Jitter) -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            backoff: Backoff {
                base: 0.5,
                factor: 2.0,
                cap: 8.0,
                jitter,
            },
            retry_classified: true,
            retry_unknown: false,
            retry_after_spread: 0.0,
            max_total_s: None,
            budget: None,
            throttle: None,
        }
    }

    #[test]
    fn retry_after_replaces_backoff_and_is_not_jittered() {
        let p = policy(Jitter::Full);
        let d = decide(&p, ErrorClass::RateLimit, Some(0.25), 3, 0.0, || {
            panic!("no draw for a Retry-After")
        });
        assert_eq!(d, Decision::Retry(0.25));
    }

    #[test]
    fn a_spread_stretches_retry_after_by_its_draw() {
        let mut p = policy(Jitter::None);
        p.retry_after_spread = 0.5;
        let d = decide(&p, ErrorClass::RateLimit, Some(2.0), 1, 0.0, || 0.5);
        assert_eq!(d, Decision::Retry(2.5));
        let at_least = decide(&p, ErrorClass::RateLimit, Some(2.0), 1, 0.0, || 0.0);
        assert_eq!(
            at_least,
            Decision::Retry(2.0),
            "never earlier than Retry-After"
        );
        // Without a Retry-After the backoff is unchanged by the spread.
        let backoff = decide(&p, ErrorClass::Timeout, None, 1, 0.0, || {
            panic!("no jitter")
        });
        assert_eq!(backoff, Decision::Retry(0.5));
    }

    #[test]
    fn jitter_modes_and_growth() {
        assert_eq!(
            decide(
                &policy(Jitter::None),
                ErrorClass::Upstream,
                None,
                3,
                0.0,
                || 0.5
            ),
            Decision::Retry(2.0)
        );
        assert_eq!(
            decide(
                &policy(Jitter::Full),
                ErrorClass::Upstream,
                None,
                2,
                0.0,
                || 0.5
            ),
            Decision::Retry(0.5)
        );
        assert_eq!(
            decide(
                &policy(Jitter::Equal),
                ErrorClass::Upstream,
                None,
                1,
                0.0,
                || 0.5
            ),
            Decision::Retry(0.375)
        );
        // The cap applies before jitter: base 0.5 · 2^9 is capped at 8.
        assert_eq!(policy(Jitter::None).backoff.raw(10), 8.0);
    }

    #[test]
    fn give_up_reasons() {
        let mut p = policy(Jitter::Full);
        assert_eq!(
            decide(&p, ErrorClass::Timeout, None, 5, 0.0, || 0.1),
            Decision::GiveUp(GiveUp::AttemptsExhausted)
        );
        assert_eq!(
            decide(&p, ErrorClass::Unknown, None, 1, 0.0, || 0.1),
            Decision::GiveUp(GiveUp::PolicyDeclined)
        );
        p.retry_unknown = true;
        assert!(matches!(
            decide(&p, ErrorClass::Unknown, None, 1, 0.0, || 0.1),
            Decision::Retry(_)
        ));
        p.max_total_s = Some(1.0);
        assert_eq!(
            decide(&p, ErrorClass::RateLimit, Some(0.25), 1, 0.8, || 0.1),
            Decision::GiveUp(GiveUp::TotalBudget)
        );
    }
}
