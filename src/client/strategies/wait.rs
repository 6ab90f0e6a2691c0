//! `wait`: take a free resource or queue in the pool until one frees up.
//!
//! The reference waits for ever; `timeout_s` bounds the wait, after which the call fails as
//! "resource unavailable" (class `unknown`, retried only with `retry_unknown`), as an acquire
//! timeout does in the reference's framework.

use crate::client::params::Params;
use crate::client::pool::{Filter, Pool, Scope, Score};
use crate::client::strategy::{Acquire, AttemptState, CallState, Dice, Strategy};

/// Selects; when nothing is free, waits (FIFO among waiters), for at most `timeout_s` if set.
#[derive(Debug)]
pub struct Wait {
    /// 0 = no timeout.
    timeout_s: f64,
}

impl Wait {
    /// `wait` with the registry's parameter values.
    pub fn new(params: &Params) -> Wait {
        Wait {
            timeout_s: params.get("timeout_s"),
        }
    }
}

impl Strategy for Wait {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        _: &mut AttemptState,
        call: &mut CallState,
        _: &mut dyn Dice,
    ) -> Acquire {
        if call.timed_out {
            return Acquire::Unavailable;
        }
        if let Some(r) = pool.select(Filter::All, Score::None, now) {
            return Acquire::Leased(r);
        }
        call.waiting = true;
        if self.timeout_s == 0.0 {
            return Acquire::Wait;
        }
        let deadline = call.started_at + self.timeout_s;
        if deadline > now {
            Acquire::WaitUntil {
                scope: Scope::Primary,
                deadline,
            }
        } else {
            Acquire::Unavailable
        }
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
            unreachable!("wait draws nothing")
        }
    }

    #[test]
    fn a_timeout_turns_the_wait_into_a_deadline_then_gives_up() {
        let text = "name = \"one\"\nsummary = \"one endpoint\"\n\
                    [[endpoints]]\nid = \"a\"\ncapacity = 1\nlatency = { median_s = 0.1 }\n";
        let world = compile::load("one.toml", text.as_bytes()).expect("valid");
        let mut pool = Pool::new(&world);
        assert_eq!(pool.select(Filter::All, Score::None, 0.0), Some(0));
        let info = registry::find("wait").unwrap();
        let make = |t: f64| Wait::new(&info.values([("timeout_s", t)]));
        let mut call = CallState {
            started_at: 5.0,
            ..CallState::default()
        };
        let mut attempt = AttemptState::default();
        assert_eq!(
            make(0.0).acquire(&mut pool, 5.0, &mut attempt, &mut call.clone(), &mut NoDice),
            Acquire::Wait
        );
        let timed = make(1.5);
        assert_eq!(
            timed.acquire(&mut pool, 5.0, &mut attempt, &mut call, &mut NoDice),
            Acquire::WaitUntil {
                scope: Scope::Primary,
                deadline: 6.5
            }
        );
        call.timed_out = true;
        assert_eq!(
            timed.acquire(&mut pool, 6.5, &mut attempt, &mut call, &mut NoDice),
            Acquire::Unavailable
        );
    }
}
