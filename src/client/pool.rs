//! The client's pool of resources: leases, the circuit breaker, selection and waiters.
//!
//! The pool is what a strategy is handed. It knows the nominal capacity of each resource and
//! what the client has seen (successes, failures, usage), never the provider's real limits,
//! buckets or storms. It does not schedule anything itself: wake-ups and cooldown checks it wants
//! are queued in [`Pool::take_signals`] for the harness to put on the event heap, in order.

pub mod waiters;

pub use waiters::BatchId;
use waiters::Waiters;

use crate::tokens::{Limit, Unit};
use crate::world::{Breaker, Selection, World};

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
    /// A cooldown check is on the event queue.
    cooldown_armed: bool,
    capacity: u32,
    active: u32,
    /// `active / capacity`, kept as `active` changes: selection compares it for every
    /// candidate at every lease, and waiting on a division there was a quarter of selection's
    /// time; the same quotient, set once per change instead (from `loads`, or divided).
    load: f64,
    /// `a / capacity` for every `a` from 0 to the capacity, divided once when the pool is made
    /// (empty above [`LOAD_TABLE_MAX`]): a lease and a release then look the load up instead
    /// of waiting on a division, the quotient bit for bit the same.
    loads: Box<[f64]>,
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
    /// The end of the latest Retry-After a refusal from this resource carried \[s\].
    pub retry_after_until: f64,
    /// The requests per minute the client was told the endpoint allows (its published request
    /// limit under a day, per minute), as a router's deployment list declares `rpm`.
    pub declared_rpm: Option<f64>,
    /// Likewise the tokens per minute (`tpm`), from its published token limit.
    pub declared_tpm: Option<f64>,
    /// The strategy keeps off this resource until then \[s\] (a router's cooldown).
    pub avoided_until: f64,
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
        self.load
    }
    /// Sets the leases held, and the load with them.
    fn set_active(&mut self, active: u32) {
        self.active = active;
        self.load = match self.loads.get(active as usize) {
            Some(&load) => load,
            None => load_of(active, self.capacity),
        };
    }
    /// The state at `now`, applying the lazy cooldown expiry.
    fn state_at(&mut self, now: f64) -> State {
        if self.state == State::Degraded && now >= self.blocked_until {
            self.state = State::Ready;
        }
        self.state
    }
}

/// The largest capacity whose loads are tabulated: a table of at most 512 bytes a resource, so
/// a world of many endpoints does not hold kilobytes per endpoint in every run (a larger
/// capacity divides, as before).
const LOAD_TABLE_MAX: u32 = 63;

/// The load of `active` leases on a resource of `capacity`.
fn load_of(active: u32, capacity: u32) -> f64 {
    f64::from(active) / f64::from(capacity.max(1))
}

/// Every load a resource of `capacity` can have, by leases held, if the capacity is small
/// enough to tabulate.
fn load_table(capacity: u32) -> Box<[f64]> {
    if capacity > LOAD_TABLE_MAX {
        return Box::default();
    }
    (0..=capacity).map(|a| load_of(a, capacity)).collect()
}

/// The first published limit under a day whose unit passes `unit`, per minute.
fn per_minute(limits: &[Limit], unit: impl Fn(Unit) -> bool) -> Option<f64> {
    limits
        .iter()
        .find(|l| unit(l.unit) && !l.is_daily())
        .map(|l| l.limit * 60.0 / l.window_s)
}

/// Whether resource `r` passes `filter` and can take a lease at `now`.
fn is_candidate(resource: &mut Resource, r: ResourceId, filter: Filter, now: f64) -> bool {
    if resource.state == State::Revoked {
        return false;
    }
    match filter {
        Filter::Only(only) if only != r => return false,
        Filter::NotRetryAfter if resource.retry_after_until > now => return false,
        Filter::NotAvoided if resource.avoided_until > now => return false,
        _ => {}
    }
    resource.state_at(now) == State::Ready && resource.active < resource.capacity
}

/// Which resources a selection may consider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    /// Every resource.
    All,
    /// Only this one.
    Only(ResourceId),
    /// Every resource whose last 429's Retry-After has passed.
    NotRetryAfter,
    /// Every resource the strategy is not keeping off ([`Pool::avoid`]).
    NotAvoided,
}

/// How candidates are ranked before the least-busy rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Score {
    /// No score: least-busy with round-robin among equals.
    None,
    /// `quota_aware`: largest remaining quota share, then largest remaining; shares at or below
    /// `reserve` are pushed down by `penalty` (which reorders them only against resources
    /// without a quota, scored −100: see `QuotaAware`).
    Quota {
        /// Share of the quota kept in reserve.
        reserve: f64,
        /// Amount subtracted from the share of a resource inside its reserve.
        penalty: f64,
    },
}

/// Which resources an acquire looks at: the primary pool (what every strategy uses unless it
/// says otherwise), one pool by index, or every resource of every pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The primary pool (the first declared).
    Primary,
    /// The pool with this index in the world's pool list.
    Pool(usize),
    /// Every resource, whatever its pool.
    Fleet,
    /// This one resource (a call that waits for a particular endpoint).
    Resource(ResourceId),
}

/// One pool of the fleet: its members and rule.
#[derive(Clone, Debug)]
struct Group {
    members: Vec<ResourceId>,
    selection: Selection,
}

/// Something the pool wants the harness to schedule at the current instant, in this order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Signal {
    /// Wake a batch of waiting workers (each re-checks for candidates): take them in order
    /// with [`Pool::next_woken`].
    Wake(BatchId),
    /// Check resource's cooldown at this time.
    Cooldown(ResourceId, f64),
}

/// The pool of one run.
#[derive(Clone, Debug)]
pub struct Pool {
    resources: Vec<Resource>,
    breaker: Breaker,
    groups: Vec<Group>,
    /// Every resource index, in order (the fleet's members).
    fleet: Vec<ResourceId>,
    /// Round-robin counters: one per pool, then one for the fleet (see [`Pool::counter`]).
    rr: Vec<u64>,
    waiters: Waiters,
    signals: Vec<Signal>,
    down: usize,
    active_total: u32,
    /// The candidates of the selection in progress, kept between selections for its memory.
    scratch: Vec<Candidate>,
}

/// A resource that passed a selection's filter.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    resource: ResourceId,
    load: f64,
    score: (f64, f64),
}

impl Pool {
    /// A fresh pool with one resource per endpoint, in world order.
    pub fn new(world: &World) -> Pool {
        let resources: Vec<Resource> = world
            .endpoints()
            .iter()
            .map(|endpoint| Resource {
                state: State::Ready,
                blocked_until: 0.0,
                cooldown_armed: false,
                capacity: endpoint.pool_capacity(),
                active: 0,
                load: 0.0,
                loads: load_table(endpoint.pool_capacity()),
                quota: endpoint.quota_units,
                leases: 0,
                ok: 0,
                failed: 0,
                consecutive_failures: 0,
                degraded_count: 0,
                dead_count: 0,
                recovered_count: 0,
                usage_tokens: 0.0,
                retry_after_until: 0.0,
                declared_rpm: per_minute(&endpoint.limits, |u| u == Unit::Requests),
                declared_tpm: per_minute(&endpoint.limits, |u| u != Unit::Requests),
                avoided_until: 0.0,
            })
            .collect();
        let groups: Vec<Group> = world
            .pools()
            .iter()
            .map(|p| Group {
                members: p.members.clone(),
                selection: p.selection,
            })
            .collect();
        Pool {
            fleet: (0..resources.len()).collect(),
            rr: vec![0; groups.len() + 1],
            groups,
            resources,
            breaker: world.breaker().clone(),
            waiters: Waiters::default(),
            signals: Vec::new(),
            down: 0,
            active_total: 0,
            scratch: Vec::new(),
        }
    }

    /// The resources in pool order.
    pub fn resources(&self) -> &[Resource] {
        &self.resources
    }

    /// The primary pool's round-robin counter.
    pub fn round_robin(&self) -> u64 {
        self.rr[0]
    }

    /// Number of pools (at least 1).
    pub fn pool_count(&self) -> usize {
        self.groups.len()
    }

    /// Index of the round-robin counter a scope uses. A single-pool fleet is its primary pool,
    /// so they share one counter: fleet-wide strategies then match the reference's pool-wide
    /// counter exactly.
    fn counter(&self, scope: Scope) -> usize {
        match scope {
            Scope::Primary => 0,
            Scope::Pool(g) => g,
            Scope::Fleet if self.groups.len() == 1 => 0,
            Scope::Fleet => self.groups.len(),
            Scope::Resource(_) => 0,
        }
    }

    fn members(&self, scope: Scope) -> &[ResourceId] {
        match scope {
            Scope::Primary => &self.groups[0].members,
            Scope::Pool(g) => &self.groups[g].members,
            Scope::Fleet => &self.fleet,
            Scope::Resource(r) => &self.fleet[r..=r],
        }
    }

    /// The scope's own selection rule: a pool's declared one; the fleet is least-busy.
    fn rule(&self, scope: Scope) -> Selection {
        match scope {
            Scope::Primary => self.groups[0].selection,
            Scope::Pool(g) => self.groups[g].selection,
            Scope::Fleet | Scope::Resource(_) => Selection::LeastBusy,
        }
    }

    /// The first endpoint of the primary pool (in file order).
    pub fn primary_head(&self) -> ResourceId {
        self.groups[0].members[0]
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
        self.resources[r].state_at(now)
    }

    fn is_candidate(&mut self, r: ResourceId, filter: Filter, now: f64) -> bool {
        is_candidate(&mut self.resources[r], r, filter, now)
    }

    /// Records a refusal's Retry-After: the resource asked every client to stay away until
    /// `until`. Only strategies that filter on it (`retry_after_aware`) are affected.
    pub fn note_retry_after(&mut self, r: ResourceId, until: f64) {
        let resource = &mut self.resources[r];
        resource.retry_after_until = resource.retry_after_until.max(until);
    }

    /// The resources of the primary pool passing `filter` that are available now, in pool
    /// order (the `k`-th of them is [`Pool::nth_candidate`]).
    pub fn count_candidates(&mut self, filter: Filter, now: f64) -> usize {
        (0..self.members(Scope::Primary).len())
            .filter(|&i| self.is_candidate(self.members(Scope::Primary)[i], filter, now))
            .count()
    }

    /// The `k`-th available resource of the primary pool passing `filter`, in pool order.
    pub fn nth_candidate(&mut self, filter: Filter, now: f64, k: usize) -> Option<ResourceId> {
        let mut seen = 0;
        for i in 0..self.members(Scope::Primary).len() {
            let r = self.members(Scope::Primary)[i];
            if self.is_candidate(r, filter, now) {
                if seen == k {
                    return Some(r);
                }
                seen += 1;
            }
        }
        None
    }

    /// The earliest end of a Retry-After still running among primary resources that would
    /// otherwise be available, if any.
    pub fn next_retry_after_end(&mut self, now: f64) -> Option<f64> {
        let mut earliest: Option<f64> = None;
        for i in 0..self.members(Scope::Primary).len() {
            let r = self.members(Scope::Primary)[i];
            let until = self.resources[r].retry_after_until;
            if until > now && self.is_candidate(r, Filter::All, now) {
                earliest = Some(earliest.map_or(until, |e| e.min(until)));
            }
        }
        earliest
    }

    /// The strategy keeps off `r` until `until` (never earlier than it already did): selections
    /// with [`Filter::NotAvoided`] pass it over until then.
    pub fn avoid(&mut self, r: ResourceId, until: f64) {
        let resource = &mut self.resources[r];
        resource.avoided_until = resource.avoided_until.max(until);
    }

    /// The resources of `scope`, in pool order.
    pub fn members_in(&self, scope: Scope) -> &[ResourceId] {
        self.members(scope)
    }

    /// Whether `r` can take a lease at `now` (its breaker lets it, and it is below capacity).
    pub fn available(&mut self, r: ResourceId, now: f64) -> bool {
        self.is_candidate(r, Filter::All, now)
    }

    /// Whether any resource of the primary pool passing `filter` is available now.
    pub fn any_candidate(&mut self, filter: Filter, now: f64) -> bool {
        self.any_candidate_in(Scope::Primary, filter, now)
    }

    /// Whether any resource of `scope` passing `filter` is available now.
    pub fn any_candidate_in(&mut self, scope: Scope, filter: Filter, now: f64) -> bool {
        (0..self.members(scope).len())
            .any(|i| self.is_candidate(self.members(scope)[i], filter, now))
    }

    /// The least loaded available resource of `scope` other than `except` (the first in pool
    /// order among equals), without leasing it.
    pub fn least_loaded(
        &mut self,
        scope: Scope,
        except: ResourceId,
        now: f64,
    ) -> Option<ResourceId> {
        let mut best: Option<(f64, ResourceId)> = None;
        for i in 0..self.members(scope).len() {
            let r = self.members(scope)[i];
            if r == except || !self.is_candidate(r, Filter::All, now) {
                continue;
            }
            let load = self.resources[r].load_ratio();
            if best.is_none_or(|(b, _)| load < b) {
                best = Some((load, r));
            }
        }
        best.map(|(_, r)| r)
    }

    /// Whether every resource of `scope` is DEAD or REVOKED with no lease held on it: nothing
    /// but time-independent events could revive it, and none is coming.
    pub fn scope_down(&self, scope: Scope) -> bool {
        self.members(scope).iter().all(|&r| {
            let resource = &self.resources[r];
            matches!(resource.state, State::Dead | State::Revoked) && resource.active == 0
        })
    }

    /// Selects and leases one candidate of the primary pool with its rule (§4.4), or returns
    /// `None` without blocking.
    ///
    /// The common case — a primary pool of every resource, any filter but one resource —
    /// goes straight to [`Pool::select_whole`] or [`Pool::select_scored`] (the same pick as
    /// [`Pool::select_in`]), without the general path's list of candidates at every lease.
    #[inline]
    pub fn select(&mut self, filter: Filter, score: Score, now: f64) -> Option<ResourceId> {
        let primary = &self.groups[0];
        if !matches!(filter, Filter::Only(_)) && primary.members.len() == self.resources.len() {
            let (rule, counter) = (primary.selection, self.counter(Scope::Primary));
            return match score {
                Score::None => self.select_whole(rule, filter, counter, now),
                Score::Quota { reserve, penalty } => {
                    self.select_scored(rule, filter, counter, now, (reserve, penalty))
                }
            };
        }
        self.select_in(Scope::Primary, None, filter, score, now)
    }

    /// Selects and leases one candidate of `scope` with `rule` (the scope's own rule when
    /// `None`), or returns `None` without blocking. Candidates with a lower `score` are
    /// dropped first; the rule picks among the rest.
    pub fn select_in(
        &mut self,
        scope: Scope,
        rule: Option<Selection>,
        filter: Filter,
        score: Score,
        now: f64,
    ) -> Option<ResourceId> {
        let counter = self.counter(scope);
        if let Filter::Only(r) = filter {
            // A single possible candidate is its own head.
            if !self.is_candidate(r, filter, now) {
                return None;
            }
            return Some(self.take(r, counter));
        }
        let rule = rule.unwrap_or_else(|| self.rule(scope));
        let n = self.members(scope).len();
        if n == self.resources.len() && score == Score::None {
            return self.select_whole(rule, filter, counter, now);
        }
        let mut candidates = std::mem::take(&mut self.scratch);
        candidates.clear();
        let members = match scope {
            Scope::Primary => &self.groups[0].members,
            Scope::Pool(g) => &self.groups[g].members,
            Scope::Fleet => &self.fleet,
            Scope::Resource(r) => &self.fleet[r..=r],
        };
        for &r in members {
            let resource = &mut self.resources[r];
            if is_candidate(resource, r, filter, now) {
                let score = match score {
                    Score::Quota { reserve, penalty } => quota_score(resource, reserve, penalty),
                    Score::None => (0.0, 0.0),
                };
                candidates.push(Candidate {
                    resource: r,
                    load: resource.load_ratio(),
                    score,
                });
            }
        }
        let chosen = pick(&mut candidates, rule, self.rr[counter]);
        self.scratch = candidates;
        Some(self.take(chosen?, counter))
    }

    /// [`Pool::select_in`] over every resource without a score, the common case: one pass over
    /// the resources themselves finds the candidates, the least load and the first resource
    /// with it, which is the pick unless the round-robin counter points further (then a second
    /// pass counts to it); no list of ratios. The same pick as the general path.
    #[inline(never)]
    fn select_whole(
        &mut self,
        rule: Selection,
        filter: Filter,
        counter: usize,
        now: f64,
    ) -> Option<ResourceId> {
        // A copy of the scan for the unfiltered case, the most common, without the filter's
        // test for every resource.
        match filter {
            Filter::All => self.select_whole_with(rule, Filter::All, counter, now),
            _ => self.select_whole_with(rule, filter, counter, now),
        }
    }

    #[inline(always)]
    fn select_whole_with(
        &mut self,
        rule: Selection,
        filter: Filter,
        counter: usize,
        now: f64,
    ) -> Option<ResourceId> {
        // `first` is the first candidate the rule ranks best: the pick whenever it is the 0th.
        let (mut best, mut count, mut first) = (f64::INFINITY, 0u64, 0);
        for (r, resource) in self.resources.iter_mut().enumerate() {
            if is_candidate(resource, r, filter, now) {
                let ratio = resource.load_ratio();
                match rule {
                    Selection::LeastBusy if ratio < best => (best, count, first) = (ratio, 1, r),
                    Selection::LeastBusy if ratio > best => {}
                    _ if count == 0 => (count, first) = (1, r),
                    _ => count += 1,
                }
            }
        }
        if count == 0 {
            return None;
        }
        let mut pick = match rule {
            // One candidate is the common case: no division for it.
            Selection::LeastBusy | Selection::RoundRobin if count == 1 => 0,
            Selection::LeastBusy | Selection::RoundRobin => self.rr[counter] % count,
            Selection::InOrder => 0,
        };
        if pick == 0 {
            return Some(self.take(first, counter));
        }
        let least = rule == Selection::LeastBusy;
        for (r, resource) in self.resources.iter_mut().enumerate() {
            if is_candidate(resource, r, filter, now) && (!least || resource.load_ratio() == best) {
                if pick == 0 {
                    return Some(self.take(r, counter));
                }
                pick -= 1;
            }
        }
        unreachable!("the pick is within the candidates")
    }

    /// [`Pool::select_whole`] ranked by `quota_aware`'s score first, as [`pick`] ranks: one pass
    /// keeps the best score so far and, among the resources with it, the rule's least load,
    /// how many share it and the first of them (a better score starts them afresh, as the
    /// candidates below it would be dropped). Scores are finite (quotas and usage are), so they
    /// are totally ordered. A second pass counts to a later pick, as in `select_whole`.
    #[inline(never)]
    fn select_scored(
        &mut self,
        rule: Selection,
        filter: Filter,
        counter: usize,
        now: f64,
        (reserve, penalty): (f64, f64),
    ) -> Option<ResourceId> {
        let mut best: Option<(f64, f64)> = None;
        let (mut least, mut count, mut first) = (f64::INFINITY, 0u64, 0);
        for (r, resource) in self.resources.iter_mut().enumerate() {
            if !is_candidate(resource, r, filter, now) {
                continue;
            }
            let score = quota_score(resource, reserve, penalty);
            let load = resource.load_ratio();
            if best.is_none_or(|b| lexi_greater(score, b)) {
                best = Some(score);
                (least, count, first) = (load, 1, r);
            } else if best == Some(score) {
                match rule {
                    Selection::LeastBusy if load < least => (least, count, first) = (load, 1, r),
                    Selection::LeastBusy if load > least => {}
                    _ => count += 1,
                }
            }
        }
        let best = best?;
        let mut pick = match rule {
            Selection::LeastBusy | Selection::RoundRobin if count == 1 => 0,
            Selection::LeastBusy | Selection::RoundRobin => self.rr[counter] % count,
            Selection::InOrder => 0,
        };
        if pick == 0 {
            return Some(self.take(first, counter));
        }
        let least_busy = rule == Selection::LeastBusy;
        for (r, resource) in self.resources.iter_mut().enumerate() {
            if is_candidate(resource, r, filter, now)
                && quota_score(resource, reserve, penalty) == best
                && (!least_busy || resource.load_ratio() == least)
            {
                if pick == 0 {
                    return Some(self.take(r, counter));
                }
                pick -= 1;
            }
        }
        unreachable!("the pick is within the candidates")
    }

    /// Leases the selected resource and advances the scope's round-robin counter.
    // On every request's path: inlined, as a profile-guided build inlines it (docs/performance.md).
    #[inline(always)]
    fn take(&mut self, r: ResourceId, counter: usize) -> ResourceId {
        self.rr[counter] += 1;
        self.lease(r);
        r
    }

    fn lease(&mut self, r: ResourceId) {
        let resource = &mut self.resources[r];
        resource.set_active(resource.active + 1);
        resource.leases += 1;
        self.active_total += 1;
        assert!(
            resource.active <= resource.capacity,
            "lease beyond capacity"
        );
    }

    /// A lease on `r` succeeded, with `tokens` of usage (§4.3).
    // On every request's path: inlined, as a profile-guided build inlines it (docs/performance.md).
    #[inline(always)]
    pub fn report_ok(&mut self, r: ResourceId, tokens: f64) {
        let resource = &mut self.resources[r];
        resource.usage_tokens += tokens;
        resource.ok += 1;
        resource.consecutive_failures = 0;
        // A revoked key stays revoked, whatever a request sent before the revocation returns.
        if !matches!(resource.state, State::Ready | State::Revoked) {
            if resource.state == State::Dead {
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
        if resource.state == State::Revoked {
            return;
        }
        if resource.consecutive_failures >= breaker.dead_after {
            if resource.state != State::Dead {
                self.down += 1;
                resource.state = State::Dead;
                resource.dead_count += 1;
                self.wake_all();
            }
        } else if resource.consecutive_failures >= breaker.degrade_after {
            let until = now + breaker.cooldown_s;
            resource.state = State::Degraded;
            resource.blocked_until = until;
            resource.degraded_count += 1;
            let arm = !resource.cooldown_armed;
            resource.cooldown_armed = true;
            self.wake_all();
            if arm {
                self.signals.push(Signal::Cooldown(r, until));
            }
        }
    }

    /// The client learned that `r`'s key is revoked (a fatal answer): it is never a candidate
    /// again.
    pub fn revoke(&mut self, r: ResourceId) {
        let resource = &mut self.resources[r];
        if resource.state == State::Revoked {
            return;
        }
        if resource.state != State::Dead {
            self.down += 1;
        }
        resource.state = State::Revoked;
        self.wake_all();
    }

    /// Gives a lease back and wakes the waiters that could use `r` (all, today).
    // On every request's path: inlined, as a profile-guided build inlines it (docs/performance.md).
    #[inline(always)]
    pub fn release(&mut self, r: ResourceId) {
        let resource = &mut self.resources[r];
        if resource.active > 0 {
            resource.set_active(resource.active - 1);
            self.active_total -= 1;
        }
        self.wake_all();
    }

    /// A scheduled cooldown check of `r` fired at `now`: if the cooldown really ended, the
    /// resource becomes READY and every waiter re-checks.
    ///
    /// One check is pending per resource at most: a check that finds the cooldown extended
    /// re-arms itself at the new deadline.
    pub fn cooldown_check(&mut self, r: ResourceId, now: f64) {
        let resource = &mut self.resources[r];
        resource.cooldown_armed = false;
        if resource.state != State::Degraded {
            return;
        }
        if resource.blocked_until <= now {
            resource.state = State::Ready;
            self.wake_all();
        } else {
            resource.cooldown_armed = true;
            let until = resource.blocked_until;
            self.signals.push(Signal::Cooldown(r, until));
        }
    }

    /// Registers `worker` at the end of the waiter list, waiting for the primary pool.
    pub fn add_waiter(&mut self, worker: WorkerId) {
        self.add_waiter_in(worker, Scope::Primary);
    }

    /// The scope waiter `worker` waits for.
    ///
    /// # Panics
    /// Panics if the worker never waited.
    pub fn waiter_scope(&self, worker: WorkerId) -> Scope {
        self.waiters.scope(worker).expect("the worker is waiting")
    }

    /// Registers `worker` at the end of the waiter list, waiting for a candidate in `scope`.
    pub fn add_waiter_in(&mut self, worker: WorkerId, scope: Scope) {
        self.waiters.add(worker, scope);
    }

    /// A woken waiter found nothing: it sleeps again, keeping its place in the list.
    pub fn rewait(&mut self, worker: WorkerId) {
        self.waiters.rewait(worker);
    }

    /// A waiter found a candidate (or gave up waiting) and leaves the list.
    pub fn remove_waiter(&mut self, worker: WorkerId) {
        self.waiters.remove(worker);
    }

    /// Bytes the waiter list holds (it grows with the workers that ever waited).
    pub fn waiter_bytes(&self) -> u64 {
        self.waiters.heap_bytes()
    }

    /// Empties the waiter list and hands it over, for a finished run to free elsewhere (a
    /// list of millions of waiters takes a while to free).
    pub fn take_waiters(&mut self) -> impl Send + 'static {
        std::mem::take(&mut self.waiters)
    }

    /// Workers waiting now.
    pub fn waiting(&self) -> usize {
        self.waiters.count()
    }

    /// The next worker of a woken `batch`, in list order; `None` once the batch is done. The
    /// worker may have stopped waiting since it was woken (the caller checks).
    pub fn next_woken(&mut self, batch: BatchId) -> Option<WorkerId> {
        self.waiters.next_woken(batch)
    }

    /// If every worker left in `batch` waits for one of the scopes in `full`, sends them all
    /// back to sleep (as `rewait` one by one would) and ends the batch; returns whether it did.
    pub fn rewait_rest(&mut self, batch: BatchId, full: &[Scope]) -> bool {
        self.waiters.rewait_rest(batch, full)
    }

    fn wake_all(&mut self) {
        if let Some(batch) = self.waiters.wake_all() {
            self.signals.push(Signal::Wake(batch));
        }
    }

    /// Whether the pool asked for something to be scheduled since the last
    /// [`Pool::take_signals`] (most releases wake nobody: the harness then skips the drain).
    #[inline]
    pub fn has_signals(&self) -> bool {
        !self.signals.is_empty()
    }

    /// Drains what the pool asked to schedule, in the order it asked.
    pub fn take_signals(&mut self, out: &mut Vec<Signal>) {
        out.append(&mut self.signals);
    }
}

/// The candidate `rule` picks, with `rr` the scope's round-robin count: only those with the best
/// score are kept (the first of the best under [`lexi_greater`]), then least-busy takes the
/// `rr`-th (modulo) of the least loaded, round-robin the `rr`-th of all, in-order the first.
fn pick(candidates: &mut Vec<Candidate>, rule: Selection, rr: u64) -> Option<ResourceId> {
    let first = candidates.first()?;
    let best = candidates[1..].iter().fold(first.score, |best, c| {
        if lexi_greater(c.score, best) {
            c.score
        } else {
            best
        }
    });
    candidates.retain(|c| c.score == best);
    let (least, count) = match rule {
        Selection::LeastBusy => {
            let least = candidates
                .iter()
                .fold(f64::INFINITY, |l, c| if c.load < l { c.load } else { l });
            (
                Some(least),
                candidates.iter().filter(|c| c.load == least).count(),
            )
        }
        Selection::RoundRobin => (None, candidates.len()),
        Selection::InOrder => return candidates.first().map(|c| c.resource),
    };
    let nth = (rr % count as u64) as usize;
    candidates
        .iter()
        .filter(|c| least.is_none_or(|l| c.load == l))
        .nth(nth)
        .map(|c| c.resource)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile;

    #[test]
    fn a_tabulated_load_is_the_quotient() {
        for capacity in (0..=64).chain([LOAD_TABLE_MAX, LOAD_TABLE_MAX + 1, 100_000]) {
            let table = load_table(capacity);
            assert_eq!(
                table.len(),
                if capacity > LOAD_TABLE_MAX {
                    0
                } else {
                    capacity as usize + 1
                }
            );
            for (active, load) in table.iter().enumerate() {
                let quotient = active as f64 / f64::from(capacity.max(1));
                assert_eq!(load.to_bits(), quotient.to_bits(), "{active} of {capacity}");
            }
        }
    }

    /// A pool of four endpoints in one declared pool with `selection`: capacities 1 to 3, two
    /// equal quotas (so scores tie), one smaller and one endpoint without a quota.
    fn scored_pool(selection: &str) -> Pool {
        let endpoint = |id: &str, capacity: u32, quota: &str| {
            format!(
                "[[endpoints]]\nid = \"{id}\"\npool = \"p\"\ncapacity = {capacity}\n\
                 latency = {{ median_s = 0.1 }}\n{quota}\n"
            )
        };
        let text = format!(
            "name = \"scored\"\nsummary = \"four endpoints\"\n\
             [[pools]]\nname = \"p\"\nselection = \"{selection}\"\n{}{}{}{}",
            endpoint("a", 2, "quota_units = 40"),
            endpoint("b", 3, "quota_units = 40"),
            endpoint("c", 1, "quota_units = 12"),
            endpoint("d", 2, ""),
        );
        Pool::new(&compile::load("scored.toml", text.as_bytes()).expect("valid"))
    }

    /// The one-pass scored selection picks what the general path's list of candidates picks,
    /// whatever the leases, usage, Retry-Afters, avoidances and rule.
    #[test]
    fn the_scored_pass_picks_as_the_candidate_list_does() {
        let mut bits = crate::rng::xorshift(0x853c_49e6_748f_ea9b);
        let mut draw = |n: u64| bits() % n;
        let score = Score::Quota {
            reserve: 0.25,
            penalty: 10.0,
        };
        for selection in ["least_busy", "round_robin", "in_order"] {
            let (mut fast, mut general) = (scored_pool(selection), scored_pool(selection));
            let mut held: Vec<ResourceId> = Vec::new();
            for step in 0..4_000u32 {
                let now = f64::from(step) * 0.1;
                let filter =
                    [Filter::All, Filter::NotRetryAfter, Filter::NotAvoided][draw(3) as usize];
                let picked = fast.select(filter, score, now);
                let expected = general.select_in(Scope::Primary, None, filter, score, now);
                assert_eq!(picked, expected, "{selection}, step {step}");
                held.extend(picked);
                if !held.is_empty() && draw(3) > 0 {
                    let r = held.swap_remove(draw(held.len() as u64) as usize);
                    let (op, tokens) = (draw(4), draw(3) as f64);
                    for pool in [&mut fast, &mut general] {
                        match op {
                            0 => pool.note_retry_after(r, now + 1.0),
                            1 => pool.resources[r].avoided_until = now + 0.5,
                            _ => pool.report_ok(r, tokens),
                        }
                        pool.release(r);
                    }
                }
            }
        }
    }
}
