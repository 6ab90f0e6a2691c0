//! The client's pool of resources: leases, the circuit breaker, selection and waiters.
//!
//! The pool is what a strategy is handed. It knows the nominal capacity of each resource and
//! what the client has seen (successes, failures, usage), never the provider's real limits,
//! buckets or storms. It does not schedule anything itself: wake-ups and cooldown checks it wants
//! are queued in [`Pool::take_signals`] for the harness to put on the event heap, in order.

use crate::world::{Breaker, World};

/// Index of a resource (same as its endpoint's index in the world).
pub type ResourceId = usize;
/// Index of a worker.
pub type WorkerId = u32;

/// The circuit-breaker state of a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Usable.
    Ready,
    /// Tripped: unusable until `blocked_until` or a success.
    Degraded,
    /// Too many consecutive failures: unusable until an in-flight lease succeeds.
    Dead,
    /// Revoked by the operator: never a candidate.
    Revoked,
}

/// One resource as the client sees it.
#[derive(Clone, Debug)]
pub struct Resource {
    state: State,
    blocked_until: f64,
    capacity: u32,
    active: u32,
    quota: Option<f64>,
    /// Leases ever taken.
    pub leases: u64,
    /// Successful reports.
    pub ok: u64,
    /// Failed reports.
    pub failed: u64,
    /// Failures since the last success.
    pub consecutive_failures: u32,
    /// Times the breaker tripped (extensions included).
    pub degraded_count: u64,
    /// Times it went DEAD.
    pub dead_count: u64,
    /// Times a success brought it back from DEGRADED or DEAD.
    pub recovered_count: u64,
    /// Tokens reported as used by successful calls.
    pub usage_tokens: f64,
}

impl Resource {
    /// Leases held now.
    pub fn active(&self) -> u32 {
        self.active
    }
    /// Client-side capacity (nominal, at least 1).
    pub fn capacity(&self) -> u32 {
        self.capacity
    }
    /// Declared quota, if any.
    pub fn quota(&self) -> Option<f64> {
        self.quota
    }
    /// The state as last written (without the lazy cooldown check).
    pub fn raw_state(&self) -> State {
        self.state
    }
    fn load_ratio(&self) -> f64 {
        f64::from(self.active) / f64::from(self.capacity.max(1))
    }
}

/// Which resources a selection may consider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    /// Every resource.
    All,
    /// Only this one.
    Only(ResourceId),
}

/// How candidates are ranked before the least-busy rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Score {
    /// No score: least-busy with round-robin among equals.
    None,
    /// `quota_aware`: largest remaining quota share, then largest remaining; shares at or below
    /// `reserve` are pushed down by `penalty`.
    Quota {
        /// Share of the quota kept in reserve.
        reserve: f64,
        /// Amount subtracted from the share of a resource inside its reserve.
        penalty: f64,
    },
}

/// Something the pool wants the harness to schedule at the current instant, in this order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Signal {
    /// Wake a waiting worker (it re-checks for candidates).
    Wake(WorkerId),
    /// Check resource's cooldown at this time.
    Cooldown(ResourceId, f64),
}

#[derive(Clone, Copy, Debug)]
struct Waiter {
    worker: WorkerId,
    woken: bool,
}

/// The pool of one run.
#[derive(Clone, Debug)]
pub struct Pool {
    resources: Vec<Resource>,
    breaker: Breaker,
    rr: u64,
    waiters: Vec<Waiter>,
    signals: Vec<Signal>,
    down: usize,
    active_total: u32,
}

impl Pool {
    /// A fresh pool with one resource per endpoint, in world order.
    pub fn new(world: &World) -> Pool {
        let resources = world
            .endpoints()
            .iter()
            .map(|endpoint| Resource {
                state: State::Ready,
                blocked_until: 0.0,
                capacity: endpoint.pool_capacity(),
                active: 0,
                quota: endpoint.quota_units,
                leases: 0,
                ok: 0,
                failed: 0,
                consecutive_failures: 0,
                degraded_count: 0,
                dead_count: 0,
                recovered_count: 0,
                usage_tokens: 0.0,
            })
            .collect();
        Pool {
            resources,
            breaker: world.breaker().clone(),
            rr: 0,
            waiters: Vec::new(),
            signals: Vec::new(),
            down: 0,
            active_total: 0,
        }
    }

    /// The resources in pool order.
    pub fn resources(&self) -> &[Resource] {
        &self.resources
    }

    /// The pool-wide round-robin counter.
    pub fn round_robin(&self) -> u64 {
        self.rr
    }

    /// Leases held now, over all resources.
    pub fn active_total(&self) -> u32 {
        self.active_total
    }

    /// Whether every resource is DEAD or REVOKED.
    pub fn all_down(&self) -> bool {
        self.down == self.resources.len()
    }

    /// The state of `r` at `now`, applying the lazy cooldown expiry.
    pub fn state(&mut self, r: ResourceId, now: f64) -> State {
        let resource = &mut self.resources[r];
        if resource.state == State::Degraded && now >= resource.blocked_until {
            resource.state = State::Ready;
        }
        resource.state
    }

    fn is_candidate(&mut self, r: ResourceId, filter: Filter, now: f64) -> bool {
        if self.resources[r].state == State::Revoked {
            return false;
        }
        if let Filter::Only(only) = filter
            && only != r
        {
            return false;
        }
        let ready = self.state(r, now) == State::Ready;
        let resource = &self.resources[r];
        ready && resource.active < resource.capacity
    }

    /// Whether any resource passing `filter` is available now.
    pub fn any_candidate(&mut self, filter: Filter, now: f64) -> bool {
        (0..self.resources.len()).any(|r| self.is_candidate(r, filter, now))
    }

    /// Selects and leases one candidate (§4.4), or returns `None` without blocking.
    pub fn select(&mut self, filter: Filter, score: Score, now: f64) -> Option<ResourceId> {
        let n = self.resources.len();
        let mut candidate = [false; 64];
        let mut candidates_heap;
        let mask: &mut [bool] = if n <= 64 {
            &mut candidate[..n]
        } else {
            candidates_heap = vec![false; n];
            &mut candidates_heap
        };
        let mut any = false;
        for (r, slot) in mask.iter_mut().enumerate() {
            *slot = self.is_candidate(r, filter, now);
            any |= *slot;
        }
        if !any {
            return None;
        }
        if let Score::Quota { reserve, penalty } = score {
            let best = (0..n)
                .filter(|&r| mask[r])
                .map(|r| quota_score(&self.resources[r], reserve, penalty))
                .fold(None, |best: Option<(f64, f64)>, s| match best {
                    Some(b) if !lexi_greater(s, b) => Some(b),
                    _ => Some(s),
                })
                .expect("at least one candidate");
            for (slot, resource) in mask.iter_mut().zip(&self.resources) {
                if *slot && quota_score(resource, reserve, penalty) != best {
                    *slot = false;
                }
            }
        }
        let best_ratio = (0..n)
            .filter(|&r| mask[r])
            .map(|r| self.resources[r].load_ratio())
            .fold(f64::INFINITY, f64::min);
        let head = (0..n)
            .filter(|&r| mask[r] && self.resources[r].load_ratio() == best_ratio)
            .count() as u64;
        let pick = (self.rr % head) as usize;
        let chosen = (0..n)
            .filter(|&r| mask[r] && self.resources[r].load_ratio() == best_ratio)
            .nth(pick)
            .expect("pick is within the head");
        self.rr += 1;
        self.lease(chosen);
        Some(chosen)
    }

    fn lease(&mut self, r: ResourceId) {
        let resource = &mut self.resources[r];
        resource.active += 1;
        resource.leases += 1;
        self.active_total += 1;
        assert!(
            resource.active <= resource.capacity,
            "lease beyond capacity"
        );
    }

    /// A lease on `r` succeeded, with `tokens` of usage (§4.3).
    pub fn report_ok(&mut self, r: ResourceId, tokens: f64) {
        let resource = &mut self.resources[r];
        resource.usage_tokens += tokens;
        resource.ok += 1;
        resource.consecutive_failures = 0;
        if resource.state != State::Ready {
            if matches!(resource.state, State::Dead | State::Revoked) {
                self.down -= 1;
            }
            let resource = &mut self.resources[r];
            resource.state = State::Ready;
            resource.blocked_until = 0.0;
            resource.recovered_count += 1;
            self.wake_all();
        }
    }

    /// A lease on `r` failed at `now` (§4.3): every failure counts, refusals included.
    pub fn report_failure(&mut self, r: ResourceId, now: f64) {
        let breaker = &self.breaker;
        let resource = &mut self.resources[r];
        resource.failed += 1;
        resource.consecutive_failures += 1;
        if resource.consecutive_failures >= breaker.dead_after {
            if resource.state != State::Dead {
                if resource.state != State::Revoked {
                    self.down += 1;
                }
                resource.state = State::Dead;
                resource.dead_count += 1;
                self.wake_all();
            }
        } else if resource.consecutive_failures >= breaker.degrade_after {
            let until = now + breaker.cooldown_s;
            resource.state = State::Degraded;
            resource.blocked_until = until;
            resource.degraded_count += 1;
            self.wake_all();
            self.signals.push(Signal::Cooldown(r, until));
        }
    }

    /// Gives a lease back and wakes the waiters that could use `r` (all, today).
    pub fn release(&mut self, r: ResourceId) {
        let resource = &mut self.resources[r];
        if resource.active > 0 {
            resource.active -= 1;
            self.active_total -= 1;
        }
        self.wake_all();
    }

    /// A scheduled cooldown check of `r` fired at `now`: if the cooldown really ended, the
    /// resource becomes READY and every waiter re-checks.
    pub fn cooldown_check(&mut self, r: ResourceId, now: f64) {
        let resource = &self.resources[r];
        if resource.state == State::Degraded && resource.blocked_until <= now {
            self.resources[r].state = State::Ready;
            self.wake_all();
        }
    }

    /// Registers `worker` at the end of the waiter list.
    pub fn add_waiter(&mut self, worker: WorkerId) {
        self.waiters.push(Waiter {
            worker,
            woken: false,
        });
    }

    /// A woken waiter found nothing: it sleeps again, keeping its place in the list.
    pub fn rewait(&mut self, worker: WorkerId) {
        if let Some(waiter) = self.waiters.iter_mut().find(|w| w.worker == worker) {
            waiter.woken = false;
        }
    }

    /// A waiter found a candidate and leaves the list.
    pub fn remove_waiter(&mut self, worker: WorkerId) {
        if let Some(pos) = self.waiters.iter().position(|w| w.worker == worker) {
            self.waiters.remove(pos);
        }
    }

    /// Workers waiting now.
    pub fn waiting(&self) -> usize {
        self.waiters.len()
    }

    fn wake_all(&mut self) {
        for waiter in &mut self.waiters {
            if !waiter.woken {
                waiter.woken = true;
                self.signals.push(Signal::Wake(waiter.worker));
            }
        }
    }

    /// Drains what the pool asked to schedule, in the order it asked.
    pub fn take_signals(&mut self, out: &mut Vec<Signal>) {
        out.append(&mut self.signals);
    }
}

/// `quota_aware`'s score of a resource: (share left, amount left), compared lexicographically.
fn quota_score(resource: &Resource, reserve: f64, penalty: f64) -> (f64, f64) {
    match resource.quota {
        Some(quota) if quota != 0.0 => {
            let remaining = quota - resource.usage_tokens;
            let mut ratio = remaining / quota;
            if ratio <= reserve {
                ratio -= penalty;
            }
            (ratio, remaining)
        }
        _ => (-100.0, 0.0),
    }
}

fn lexi_greater(a: (f64, f64), b: (f64, f64)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 > b.1)
}
