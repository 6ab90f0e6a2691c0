//! `sdk_retry`: the built-in retry loop of the official OpenAI Python SDK (openai-python).
//!
//! Modelled on openai-python v3.3.1 (`src/openai/_base_client.py`, `SyncAPIClient.request`,
//! `_should_retry`, `_calculate_retry_timeout`; `src/openai/_constants.py`):
//!
//! - at most `max_retries` retries (`DEFAULT_MAX_RETRIES = 2`): 1 + `max_retries` attempts;
//! - retried: timeouts and connection errors, and the statuses 408, 409, 429 and ≥ 500 (here:
//!   429, 503, connection reset, read timeout, and a request rejected by client-side
//!   throttling, which never got an answer); never a 401 or anything else;
//! - a Retry-After `a` with `0 < a <= max_retry_after_s` (`MAX_RETRY_AFTER_DELAY = 2 * 60`) is
//!   slept exactly; one above it is not retried at all (`_should_retry` returns `False`, since
//!   v2.52.0) — `over_cap_gives_up = 0` restores the older behaviour (cap 60, then backoff);
//! - otherwise `min(initial_delay_s · 2^k, max_delay_s) · (1 − jitter · u)` after the k-th
//!   retry's failure, k = 0, 1, … (`INITIAL_RETRY_DELAY = 0.5`, `MAX_RETRY_DELAY = 8.0`,
//!   `jitter = 1 - 0.25 * random()`), u from the attempt's keyed retry stream.
//!
//! The SDK client talks to one base URL, so the strategy uses one endpoint: see
//! [`single_endpoint`].

use crate::client::params::Params;
use crate::client::pool::Pool;
use crate::client::retry::{Decision, ErrorClass, Failure, GiveUp, RetryLoop};
use crate::client::strategy::{Acquire, AttemptState, CallState, Dice, Strategy, single_endpoint};

/// The SDK's retry settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SdkRetry {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Backoff before the first retry, before jitter \[s\].
    pub initial_delay_s: f64,
    /// Largest backoff before jitter \[s\].
    pub max_delay_s: f64,
    /// The backoff is multiplied by `1 − jitter · u`, u uniform in \[0, 1).
    pub jitter: f64,
    /// Largest Retry-After slept as sent \[s\].
    pub max_retry_after_s: f64,
    /// A Retry-After above `max_retry_after_s` ends the retries (v2.52.0 and later); when
    /// false it is ignored and the backoff applies (earlier versions).
    pub over_cap_gives_up: bool,
}

impl SdkRetry {
    /// The settings of the registry's parameter values.
    pub fn new(params: &Params) -> SdkRetry {
        SdkRetry {
            max_retries: params.get("max_retries") as u32,
            initial_delay_s: params.get("initial_delay_s"),
            max_delay_s: params.get("max_delay_s"),
            jitter: params.get("jitter"),
            max_retry_after_s: params.get("max_retry_after_s"),
            over_cap_gives_up: params.get("over_cap_gives_up") != 0.0,
        }
    }

    /// The backoff after `retries_taken` retries (0 before the first retry), given the
    /// uniform draw `u`: `min(initial · 2^retries_taken, max) · (1 − jitter · u)`.
    pub fn backoff(&self, retries_taken: u32, u: f64) -> f64 {
        // The SDK caps the exponent at 1000 against overflow; powi saturates to infinity.
        let exponent = retries_taken.min(1000) as i32;
        let sleep = (self.initial_delay_s * 2f64.powi(exponent)).min(self.max_delay_s);
        (sleep * (1.0 - self.jitter * u)).max(0.0)
    }
}

impl RetryLoop for SdkRetry {
    fn decide(&self, failure: &Failure, draw: &mut dyn FnMut() -> f64) -> Decision {
        // `remaining_retries > 0` is checked first, whatever the error.
        if failure.attempts_used > self.max_retries {
            return Decision::GiveUp(GiveUp::AttemptsExhausted);
        }
        let retried = matches!(
            failure.class,
            ErrorClass::RateLimit
                | ErrorClass::Upstream
                | ErrorClass::Connection
                | ErrorClass::Timeout
                | ErrorClass::Throttled
        );
        if !retried {
            return Decision::GiveUp(GiveUp::PolicyDeclined);
        }
        if let Some(after) = failure.retry_after_s {
            if after > 0.0 && after <= self.max_retry_after_s {
                return Decision::Retry(after);
            }
            if after > self.max_retry_after_s && self.over_cap_gives_up {
                return Decision::GiveUp(GiveUp::PolicyDeclined);
            }
        }
        Decision::Retry(self.backoff(failure.attempts_used - 1, draw()))
    }
}

/// The SDK client: one endpoint, its own retry loop.
#[derive(Debug)]
pub struct SdkClient {
    retry: SdkRetry,
}

impl SdkClient {
    /// `sdk_retry` with the registry's parameter values.
    pub fn new(params: &Params) -> SdkClient {
        SdkClient {
            retry: SdkRetry::new(params),
        }
    }
}

impl Strategy for SdkClient {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        _: &mut AttemptState,
        call: &mut CallState,
        _: &mut dyn Dice,
    ) -> Acquire {
        single_endpoint(pool, now, call)
    }

    fn retry_loop(&self) -> Option<&dyn RetryLoop> {
        Some(&self.retry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::registry;

    fn defaults() -> SdkRetry {
        SdkRetry::new(&registry::find("sdk_retry").unwrap().values([]))
    }

    fn failure(class: ErrorClass, retry_after_s: Option<f64>, attempts_used: u32) -> Failure {
        Failure {
            class,
            retry_after_s,
            attempts_used,
            elapsed_s: 0.0,
        }
    }

    fn no_draw() -> f64 {
        panic!("no draw expected")
    }

    #[test]
    fn defaults_are_the_sdks_constants() {
        let d = defaults();
        assert_eq!(d.max_retries, 2);
        assert_eq!(d.initial_delay_s, 0.5);
        assert_eq!(d.max_delay_s, 8.0);
        assert_eq!(d.jitter, 0.25);
        assert_eq!(d.max_retry_after_s, 120.0);
        assert!(d.over_cap_gives_up);
    }

    #[test]
    fn backoff_doubles_from_half_a_second_caps_at_eight_and_jitters_down_by_a_quarter() {
        let d = defaults();
        let raw = [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0];
        for (k, raw) in raw.into_iter().enumerate() {
            assert_eq!(d.backoff(k as u32, 0.0), raw, "k = {k}");
            assert_eq!(d.backoff(k as u32, 0.5), raw * 0.875, "k = {k}");
            assert!((d.backoff(k as u32, 1.0 - 1e-12) - raw * 0.75).abs() < 1e-9);
        }
        // The SDK's own guard: the exponent stops at 1000, the cap still applies.
        assert_eq!(d.backoff(u32::MAX, 0.0), 8.0);
    }

    #[test]
    fn one_plus_max_retries_attempts_then_give_up() {
        let d = defaults();
        let mut u = || 0.0;
        assert_eq!(
            d.decide(&failure(ErrorClass::Upstream, None, 1), &mut u),
            Decision::Retry(0.5)
        );
        assert_eq!(
            d.decide(&failure(ErrorClass::Upstream, None, 2), &mut u),
            Decision::Retry(1.0)
        );
        assert_eq!(
            d.decide(&failure(ErrorClass::Upstream, None, 3), &mut no_draw),
            Decision::GiveUp(GiveUp::AttemptsExhausted)
        );
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap_then_ends_the_retries() {
        let d = defaults();
        for after in [0.001, 1.5, 60.0, 120.0] {
            assert_eq!(
                d.decide(
                    &failure(ErrorClass::RateLimit, Some(after), 1),
                    &mut no_draw
                ),
                Decision::Retry(after)
            );
        }
        assert_eq!(
            d.decide(
                &failure(ErrorClass::RateLimit, Some(120.5), 1),
                &mut no_draw
            ),
            Decision::GiveUp(GiveUp::PolicyDeclined)
        );
        // Zero is not "a reasonable amount": the backoff applies.
        assert_eq!(
            d.decide(&failure(ErrorClass::RateLimit, Some(0.0), 2), &mut || 0.0),
            Decision::Retry(1.0)
        );
        // Before v2.52.0: a cap of 60 s, and a longer Retry-After falls back to the backoff.
        let old = SdkRetry {
            max_retry_after_s: 60.0,
            over_cap_gives_up: false,
            ..d
        };
        assert_eq!(
            old.decide(&failure(ErrorClass::RateLimit, Some(90.0), 1), &mut || 0.0),
            Decision::Retry(0.5)
        );
    }

    #[test]
    fn which_errors_are_retried() {
        let d = defaults();
        for class in [
            ErrorClass::RateLimit,
            ErrorClass::Upstream,
            ErrorClass::Connection,
            ErrorClass::Timeout,
            ErrorClass::Throttled,
        ] {
            assert!(matches!(
                d.decide(&failure(class, None, 1), &mut || 0.3),
                Decision::Retry(_)
            ));
        }
        for class in [ErrorClass::Fatal, ErrorClass::Unknown] {
            assert_eq!(
                d.decide(&failure(class, None, 1), &mut no_draw),
                Decision::GiveUp(GiveUp::PolicyDeclined)
            );
        }
    }
}
