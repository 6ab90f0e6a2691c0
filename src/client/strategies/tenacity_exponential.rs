//! `tenacity_exponential`: the OpenAI cookbook's retry decorator,
//! `@retry(wait=wait_random_exponential(min=1, max=60), stop=stop_after_attempt(6))`.
//!
//! Modelled on tenacity 9.1.4 (`tenacity/wait.py`: `wait_exponential.__call__`,
//! `wait_random_exponential.__call__`; `tenacity/stop.py`: `stop_after_attempt`):
//!
//! - after attempt n fails (n ≥ 1): `high = max(max(0, min), min(multiplier · 2^(n−1), max))`,
//!   then the wait is `random.uniform(min, high)` = `min + (high − min) · u` (since tenacity
//!   9.0.0; earlier versions drew `uniform(0, high)`), u from the attempt's keyed retry stream;
//! - it stops once `attempts` attempts were made;
//! - with no `retry=` argument it retries every exception (`retry_if_exception_type()`, i.e.
//!   `Exception`): a 401 and "nothing available" too, and it never reads Retry-After.
//!
//! The decorated function calls the SDK, so the strategy uses one endpoint like `sdk_retry`
//! (see [`single_endpoint`]). The SDK's own retries inside each decorated call are not
//! modelled: this is the decorator alone, as if the client were built with `max_retries=0`.

use crate::client::params::Params;
use crate::client::pool::Pool;
use crate::client::retry::{Decision, Failure, GiveUp, RetryLoop};
use crate::client::strategy::{Acquire, AttemptState, CallState, Dice, Strategy, single_endpoint};

/// `wait_random_exponential` with `stop_after_attempt`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomExponential {
    /// `min` \[s\]: the shortest wait, and the floor of the window's top.
    pub min_s: f64,
    /// `max` \[s\]: the largest top of the window.
    pub max_s: f64,
    /// `multiplier` \[s\]: the top after the first failure (before `min` and `max`).
    pub multiplier: f64,
    /// `stop_after_attempt(attempts)`: attempts in all, the first included.
    pub attempts: u32,
}

impl RandomExponential {
    /// The settings of the registry's parameter values.
    pub fn new(params: &Params) -> RandomExponential {
        RandomExponential {
            min_s: params.get("min_s"),
            max_s: params.get("max_s"),
            multiplier: params.get("multiplier"),
            attempts: params.get("attempts") as u32,
        }
    }

    /// The top of the wait window after attempt `n` failed (n ≥ 1): `wait_exponential`'s
    /// value, `max(max(0, min), min(multiplier · 2^(n−1), max))`.
    pub fn high(&self, n: u32) -> f64 {
        let exponent = n.saturating_sub(1).min(i32::MAX as u32) as i32;
        // 2^exponent overflows to infinity, where tenacity's OverflowError returns `max`.
        let result = self.multiplier * 2f64.powi(exponent);
        let capped = if result.is_finite() {
            result.min(self.max_s)
        } else {
            self.max_s
        };
        self.min_s.max(0.0).max(capped)
    }

    /// The wait after attempt `n` failed, for the uniform draw `u`: `uniform(min, high)`.
    pub fn wait(&self, n: u32, u: f64) -> f64 {
        let high = self.high(n);
        self.min_s + (high - self.min_s) * u
    }
}

impl RetryLoop for RandomExponential {
    fn decide(&self, failure: &Failure, draw: &mut dyn FnMut() -> f64) -> Decision {
        if failure.attempts_used >= self.attempts {
            return Decision::GiveUp(GiveUp::AttemptsExhausted);
        }
        Decision::Retry(self.wait(failure.attempts_used, draw()))
    }
}

/// The decorated SDK call: one endpoint, tenacity's retry loop.
#[derive(Debug)]
pub struct TenacityExponential {
    retry: RandomExponential,
}

impl TenacityExponential {
    /// `tenacity_exponential` with the registry's parameter values.
    pub fn new(params: &Params) -> TenacityExponential {
        TenacityExponential {
            retry: RandomExponential::new(params),
        }
    }
}

impl Strategy for TenacityExponential {
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
    use crate::client::retry::ErrorClass;

    fn defaults() -> RandomExponential {
        RandomExponential::new(&registry::find("tenacity_exponential").unwrap().values([]))
    }

    #[test]
    fn defaults_are_the_cookbooks_decorator() {
        assert_eq!(
            defaults(),
            RandomExponential {
                min_s: 1.0,
                max_s: 60.0,
                multiplier: 1.0,
                attempts: 6
            }
        );
    }

    #[test]
    fn the_window_top_doubles_from_the_multiplier_between_min_and_max() {
        let d = defaults();
        let tops: Vec<f64> = (1..=9).map(|n| d.high(n)).collect();
        // 2^(n−1) = 1, 2, 4, …, 64 → capped at 60; never below min = 1.
        assert_eq!(tops, [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0]);
        assert_eq!(d.high(u32::MAX), 60.0);
        let half = RandomExponential {
            multiplier: 0.25,
            ..d
        };
        // 0.25 and 0.5 are below min: the top is min, so the wait is exactly min.
        assert_eq!(half.high(1), 1.0);
        assert_eq!(half.high(2), 1.0);
        assert_eq!(half.wait(2, 0.9), 1.0);
        assert_eq!(half.high(4), 2.0);
    }

    #[test]
    fn the_wait_is_uniform_between_min_and_the_top() {
        let d = defaults();
        assert_eq!(d.wait(1, 0.7), 1.0, "first window is [1, 1]");
        assert_eq!(d.wait(3, 0.0), 1.0);
        assert_eq!(d.wait(3, 0.5), 2.5);
        assert_eq!(d.wait(8, 0.5), 30.5);
        let zero_min = RandomExponential { min_s: 0.0, ..d };
        assert_eq!(zero_min.wait(3, 0.5), 2.0);
    }

    #[test]
    fn every_error_is_retried_until_the_sixth_attempt_and_retry_after_is_ignored() {
        let d = defaults();
        for class in ErrorClass::ALL {
            for n in 1..6 {
                let failure = Failure {
                    class,
                    retry_after_s: Some(30.0),
                    attempts_used: n,
                    elapsed_s: 0.0,
                };
                assert_eq!(
                    d.decide(&failure, &mut || 0.5),
                    Decision::Retry(d.wait(n, 0.5)),
                    "{class:?} after attempt {n}"
                );
            }
            let last = Failure {
                class,
                retry_after_s: None,
                attempts_used: 6,
                elapsed_s: 0.0,
            };
            assert_eq!(
                d.decide(&last, &mut || panic!("no draw after the last attempt")),
                Decision::GiveUp(GiveUp::AttemptsExhausted)
            );
        }
    }
}
