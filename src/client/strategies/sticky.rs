//! `sticky`: reuse the resource of the attempt's previous call while it is free.
//!
//! The affinity lives for one step attempt (a retry starts without one). When the preferred
//! resource is busy the reference falls back at once to `wait` on any resource;
//! `fallback_after_s` makes the call wait that long for the preferred one first, unless it is
//! DEAD or REVOKED.
//!
//! In the harness that wait is never reached, so `fallback_after_s` has no effect on a run: an
//! attempt only carries an affinity past a success (any failure ends the attempt), and the next
//! call acquires at the instant that success was reported and its lease released, synchronously.
//! The success made the resource READY (a REVOKED one stays REVOKED and is left at once) and
//! freed a slot nobody else could take in between, so the preferred select always leases. The
//! unit test below reaches the wait by building a DEGRADED preferred resource by hand;
//! `tests/it/algorithms.rs` pins the inertness in a run.

use crate::client::params::Params;
use crate::client::pool::{Filter, Pool, Scope, Score, State};
use crate::client::strategy::{Acquire, AttemptState, CallState, Dice, Strategy, select_or_wait};

/// Prefers the resource the attempt last used; otherwise `wait`s and remembers what it got.
#[derive(Debug)]
pub struct Sticky {
    /// How long to wait for the preferred resource; 0 = fall back at once.
    fallback_after_s: f64,
}

impl Sticky {
    /// `sticky` with the registry's parameter values.
    pub fn new(params: &Params) -> Sticky {
        Sticky {
            fallback_after_s: params.get("fallback_after_s"),
        }
    }
}

impl Strategy for Sticky {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        attempt: &mut AttemptState,
        call: &mut CallState,
        _: &mut dyn Dice,
    ) -> Acquire {
        if !call.waiting
            && let Some(preferred) = attempt.affinity
        {
            if let Some(r) = pool.select(Filter::Only(preferred), Score::None, now) {
                return Acquire::Leased(r);
            }
            let deadline = call.started_at + self.fallback_after_s;
            let alive = matches!(pool.state(preferred, now), State::Ready | State::Degraded);
            if !call.timed_out && alive && deadline > now {
                return Acquire::WaitUntil {
                    scope: Scope::Resource(preferred),
                    deadline,
                };
            }
        }
        let next = select_or_wait(pool, now, call);
        if let Acquire::Leased(r) = next {
            attempt.affinity = Some(r);
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::registry;
    use crate::compile;

    struct NoDice;
    impl Dice for NoDice {
        fn uniform(&mut self) -> f64 {
            unreachable!("sticky draws nothing")
        }
    }

    /// A pool of two resources whose first is DEGRADED (three failures at t = 0, 30 s cooldown).
    fn pool_with_degraded_first() -> Pool {
        let text = "name = \"two\"\nsummary = \"two endpoints\"\n\
                    [[endpoints]]\nid = \"a\"\ncapacity = 2\nlatency = { median_s = 0.1 }\n\
                    [[endpoints]]\nid = \"b\"\ncapacity = 2\nlatency = { median_s = 0.1 }\n";
        let world = compile::load("two.toml", text.as_bytes()).expect("valid");
        let mut pool = Pool::new(&world);
        for _ in 0..3 {
            let r = pool
                .select(Filter::Only(0), Score::None, 0.0)
                .expect("free");
            pool.report_failure(r, 0.0);
            pool.release(r);
        }
        assert_eq!(pool.state(0, 1.0), State::Degraded);
        pool
    }

    fn sticky(fallback_after_s: f64) -> Sticky {
        let info = registry::find("sticky").unwrap();
        Sticky::new(&info.values([("fallback_after_s", fallback_after_s)]))
    }

    #[test]
    fn falls_back_at_once_by_default_and_after_the_wait_when_asked() {
        let mut attempt = AttemptState {
            affinity: Some(0),
            ..AttemptState::default()
        };
        let fresh = || CallState {
            started_at: 1.0,
            ..CallState::default()
        };
        // The reference: the preferred resource is benched, so take another one now.
        let mut pool = pool_with_degraded_first();
        let got = sticky(0.0).acquire(
            &mut pool,
            1.0,
            &mut attempt.clone(),
            &mut fresh(),
            &mut NoDice,
        );
        assert_eq!(got, Acquire::Leased(1));
        // With a fallback delay the call waits for its own resource, until the deadline.
        let mut pool = pool_with_degraded_first();
        let mut call = fresh();
        let patient = sticky(2.0);
        let got = patient.acquire(&mut pool, 1.0, &mut attempt, &mut call, &mut NoDice);
        assert_eq!(
            got,
            Acquire::WaitUntil {
                scope: Scope::Resource(0),
                deadline: 3.0
            }
        );
        // At the deadline the harness sets `timed_out`: the call takes any free resource.
        call.timed_out = true;
        let got = patient.acquire(&mut pool, 3.0, &mut attempt, &mut call, &mut NoDice);
        assert_eq!(got, Acquire::Leased(1));
        assert_eq!(attempt.affinity, Some(1));
    }
}
