//! `backoff`: poll for a free resource, sleeping a jittered exponential delay between polls.

use crate::client::params::Params;
use crate::client::pool::{Filter, Pool, Score};
use crate::client::retry::jittered;
use crate::client::strategy::{Acquire, AttemptState, CallState, Dice, Strategy};
use crate::world::{Backoff as BackoffParams, Jitter};

/// Polls with delays `U(0, min(cap, base·factor^(k−1)))` after the k-th empty poll of this call;
/// never registers as a waiter, so it learns of releases only by polling. Never gives up.
#[derive(Debug)]
pub struct Backoff {
    params: BackoffParams,
}

impl Backoff {
    /// From the registry's parameters (the reference's: base 0.2 s, factor 2, cap 10 s); the
    /// jitter is always full.
    pub fn new(params: &Params) -> Backoff {
        Backoff {
            params: BackoffParams {
                base: params.get("base"),
                factor: params.get("factor"),
                cap: params.get("cap"),
                jitter: Jitter::Full,
            },
        }
    }
}

impl Strategy for Backoff {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        _: &mut AttemptState,
        call: &mut CallState,
        dice: &mut dyn Dice,
    ) -> Acquire {
        if let Some(r) = pool.select(Filter::All, Score::None, now) {
            return Acquire::Leased(r);
        }
        call.polls += 1;
        Acquire::Sleep(jittered(&self.params, call.polls, || dice.uniform()))
    }
}
