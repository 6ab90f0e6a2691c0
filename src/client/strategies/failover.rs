//! `failover`: try each pool in order at once, then wait on the primary (reference §5.5).
//!
//! Each pool is tried with its own selection rule, in the order the file declares the pools
//! (the primary first). If none has a free resource the call waits on the primary only, as the
//! reference's fallback does; once woken it keeps waiting there. With a single pool the
//! immediate try is the primary's own selection, so it gives the same numbers as `wait`.
//!
//! With `leave_refused = 1` it also leaves an endpoint that refused: after a 429 it keeps every
//! call off that endpoint until the Retry-After has passed, after an "overloaded" answer for
//! `overloaded_s`; the immediate tries pass such endpoints over, and a call with nothing free
//! waits on the first pool that has an endpoint it has not left (or, when it has left them all,
//! sleeps until the first comes back). The default, 0, is the reference's failover, which keeps
//! sending to the primary whatever it answered.

use std::cell::RefCell;

use crate::client::params::Params;
use crate::client::pool::{Filter, Pool, ResourceId, Scope, Score, State};
use crate::client::strategy::{
    Acquire, AttemptState, CallState, Dice, Feedback, Response, Strategy, select_or_wait,
};

/// Immediate tries over the pools in order, then a wait.
#[derive(Debug, Default)]
pub struct Failover {
    /// How it leaves endpoints that refused, if it does.
    leave: Option<Leave>,
}

#[derive(Debug)]
struct Leave {
    overloaded_s: f64,
    /// Endpoints to keep off, and until when, heard since the last acquire.
    notes: RefCell<Vec<(ResourceId, f64)>>,
}

impl Failover {
    /// From the registry's parameters.
    pub fn new(params: &Params) -> Failover {
        let leave = (params.get("leave_refused") != 0.0).then(|| Leave {
            overloaded_s: params.get("overloaded_s"),
            notes: RefCell::new(Vec::new()),
        });
        Failover { leave }
    }

    /// Where a call that found nothing free waits: the first pool with an endpoint it has not
    /// left (breaker permitting), else a sleep until the first left endpoint comes back.
    fn wait_elsewhere(pool: &mut Pool, now: f64, call: &mut CallState) -> Acquire {
        let mut back_at = f64::INFINITY;
        for g in 0..pool.pool_count() {
            for i in 0..pool.members_in(Scope::Pool(g)).len() {
                let r = pool.members_in(Scope::Pool(g))[i];
                if matches!(pool.state(r, now), State::Dead | State::Revoked) {
                    continue;
                }
                let until = pool.resources()[r].avoided_until;
                if until <= now {
                    call.waiting = true;
                    return Acquire::WaitFor(Scope::Pool(g));
                }
                back_at = back_at.min(until);
            }
        }
        if back_at.is_finite() {
            Acquire::Sleep(back_at - now)
        } else {
            select_or_wait(pool, now, call)
        }
    }
}

impl Strategy for Failover {
    fn acquire(
        &self,
        pool: &mut Pool,
        now: f64,
        _: &mut AttemptState,
        call: &mut CallState,
        _: &mut dyn Dice,
    ) -> Acquire {
        let Some(leave) = &self.leave else {
            if !call.waiting {
                for g in 0..pool.pool_count() {
                    if let Some(r) =
                        pool.select_in(Scope::Pool(g), None, Filter::All, Score::None, now)
                    {
                        return Acquire::Leased(r);
                    }
                }
            }
            return select_or_wait(pool, now, call);
        };
        for (r, until) in leave.notes.borrow_mut().drain(..) {
            pool.avoid(r, until);
        }
        for g in 0..pool.pool_count() {
            if let Some(r) =
                pool.select_in(Scope::Pool(g), None, Filter::NotAvoided, Score::None, now)
            {
                return Acquire::Leased(r);
            }
        }
        Failover::wait_elsewhere(pool, now, call)
    }

    fn uses_feedback(&self) -> bool {
        self.leave.is_some()
    }

    fn begin_run(&self) {
        if let Some(leave) = &self.leave {
            leave.notes.borrow_mut().clear();
        }
    }

    fn observe(&self, feedback: &Feedback) {
        let Some(leave) = &self.leave else {
            return;
        };
        if feedback.response == Response::Refused {
            let away = feedback.retry_after_s.unwrap_or(leave.overloaded_s);
            leave
                .notes
                .borrow_mut()
                .push((feedback.resource, feedback.at + away));
        }
    }
}
