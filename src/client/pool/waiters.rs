//! The pool's waiter list: who waits for a lease, in the order they registered, and which of
//! them a wake-up reaches.
//!
//! The rules are those of a plain list: a waiter joins at the end; a wake-up wakes, as one batch
//! in list order, every waiter not already woken; a woken waiter that finds nothing goes back to
//! sleep keeping its place. Walking a plain list costs O(waiters) per release, which makes a
//! herd of n waiters (an open loop whose jobs all arrive at once, a closed loop with far more
//! workers than leases) cost O(n²). Here the sleeping waiters are one ordered set; a wake-up
//! turns that set into the batch in O(1), and when every member left in a batch waits for a
//! scope already found full, the batch goes back to sleep by merging sets, the smaller into the
//! larger, in O(small · log n). The harness sees the same wake-ups in the same order.

use std::collections::{BTreeMap, VecDeque};

use super::{Scope, WorkerId};

/// Bytes a waiter takes in a set: its key and value, and a B-tree node's share (nodes hold up
/// to 11 entries and are at least half full).
pub const MEMBER_BYTES: u64 = 64;

/// Index of a set of waiters: the sleeping set or a pending batch.
pub type BatchId = u32;

/// A worker's registration.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    waiting: bool,
    scope: Option<Scope>,
    /// Its place in the list (registration order).
    place: u64,
    /// The set holding its current registration: the sleeping set, or the pending batch it
    /// was woken in (`None` once that batch handed it out).
    set: Option<BatchId>,
}

/// Members a set keeps in a sorted deque before it moves them to a B-tree: most sets hold a few
/// waiters and empty and refill all run long, which a deque does without allocating (a B-tree
/// allocates a node whenever it stops being empty and frees it when it empties again; the
/// deque took the default comparison from 246.6 to 239.8 M instructions). Sets are recycled
/// with their deques.
const SMALL_SET: usize = 32;

/// Waiters by place: a sorted deque while few, a B-tree once more than [`SMALL_SET`] (so a
/// herd's operations stay logarithmic).
#[derive(Clone, Debug, Default)]
struct Members {
    /// The members while `large` is empty, ascending by place.
    small: VecDeque<(u64, (WorkerId, Scope))>,
    large: BTreeMap<u64, (WorkerId, Scope)>,
}

impl Members {
    fn len(&self) -> usize {
        self.small.len() + self.large.len()
    }

    fn is_empty(&self) -> bool {
        self.small.is_empty() && self.large.is_empty()
    }

    fn insert(&mut self, place: u64, member: (WorkerId, Scope)) {
        if self.large.is_empty() && self.small.len() < SMALL_SET {
            // Usually the last place (a newcomer, or a batch put back in order).
            if self.small.back().is_none_or(|&(last, _)| last < place) {
                self.small.push_back((place, member));
                return;
            }
            let at = self.small.partition_point(|&(p, _)| p < place);
            match self.small.get_mut(at) {
                Some(same) if same.0 == place => same.1 = member,
                _ => self.small.insert(at, (place, member)),
            }
            return;
        }
        self.large.extend(self.small.drain(..));
        self.large.insert(place, member);
    }

    fn remove(&mut self, place: u64) {
        if !self.large.is_empty() {
            self.large.remove(&place);
        } else if let Ok(at) = self.small.binary_search_by_key(&place, |&(p, _)| p) {
            self.small.remove(at);
        }
    }

    fn pop_first(&mut self) -> Option<(u64, (WorkerId, Scope))> {
        match self.small.pop_front() {
            Some(first) => Some(first),
            None => self.large.pop_first(),
        }
    }

    /// Removes every member, in order, keeping the deque's room.
    fn drain(&mut self, mut each: impl FnMut(u64, (WorkerId, Scope))) {
        while let Some((place, member)) = self.small.pop_front() {
            each(place, member);
        }
        if !self.large.is_empty() {
            std::mem::take(&mut self.large)
                .into_iter()
                .for_each(|(place, member)| each(place, member));
        }
    }

    fn clear(&mut self) {
        self.small.clear();
        if !self.large.is_empty() {
            self.large.clear();
        }
    }
}

/// Waiters ordered by place, with how many wait for each scope.
#[derive(Clone, Debug, Default)]
struct Set {
    members: Members,
    scopes: Vec<(Scope, u32)>,
    /// A member left, or was put back to sleep by an earlier batch, after this batch was
    /// made: its members must be looked at one by one.
    irregular: bool,
}

impl Set {
    fn insert(&mut self, place: u64, worker: WorkerId, scope: Scope) {
        self.members.insert(place, (worker, scope));
        match self.scopes.iter_mut().find(|(s, _)| *s == scope) {
            Some((_, n)) => *n += 1,
            None => self.scopes.push((scope, 1)),
        }
    }

    fn forget_scope(&mut self, scope: Scope) {
        if let Some(i) = self.scopes.iter().position(|(s, _)| *s == scope) {
            self.scopes[i].1 -= 1;
            if self.scopes[i].1 == 0 {
                self.scopes.swap_remove(i);
            }
        }
    }
}

/// The waiter list of one pool.
#[derive(Clone, Debug)]
pub struct Waiters {
    slots: Vec<Slot>,
    sets: Vec<Set>,
    free: Vec<BatchId>,
    asleep: BatchId,
    next_place: u64,
    waiting: usize,
}

impl Default for Waiters {
    fn default() -> Self {
        Waiters {
            slots: Vec::new(),
            sets: vec![Set::default()],
            free: Vec::new(),
            asleep: 0,
            next_place: 0,
            waiting: 0,
        }
    }
}

impl Waiters {
    /// Workers waiting now.
    pub fn count(&self) -> usize {
        self.waiting
    }

    /// Bytes held: one slot per worker that ever waited, and about [`MEMBER_BYTES`] per waiter
    /// in a set.
    pub fn heap_bytes(&self) -> u64 {
        let members: usize = self.sets.iter().map(|s| s.members.len()).sum();
        (self.slots.len() * std::mem::size_of::<Slot>()) as u64 + members as u64 * MEMBER_BYTES
    }

    /// The scope `worker` waits for, if it waits.
    pub fn scope(&self, worker: WorkerId) -> Option<Scope> {
        self.slots.get(worker as usize).and_then(|s| s.scope)
    }

    /// Registers `worker` at the end of the list, asleep.
    pub fn add(&mut self, worker: WorkerId, scope: Scope) {
        let w = worker as usize;
        if w >= self.slots.len() {
            self.slots.resize(w + 1, Slot::default());
        }
        debug_assert!(!self.slots[w].waiting, "worker {worker} is already waiting");
        let place = self.next_place;
        self.next_place += 1;
        self.slots[w] = Slot {
            waiting: true,
            scope: Some(scope),
            place,
            set: Some(self.asleep),
        };
        self.sets[self.asleep as usize].insert(place, worker, scope);
        self.waiting += 1;
    }

    /// `worker` leaves the list.
    pub fn remove(&mut self, worker: WorkerId) {
        let slot = &mut self.slots[worker as usize];
        slot.waiting = false;
        self.waiting -= 1;
        let (place, scope) = (slot.place, slot.scope.expect("a waiter has a scope"));
        match slot.set.take() {
            Some(set) if set == self.asleep => {
                let set = &mut self.sets[set as usize];
                set.members.remove(place);
                set.forget_scope(scope);
            }
            Some(batch) => self.sets[batch as usize].irregular = true,
            None => {}
        }
    }

    /// A woken `worker` found nothing: it sleeps again, keeping its place.
    pub fn rewait(&mut self, worker: WorkerId) {
        let slot = self.slots[worker as usize];
        match slot.set {
            Some(set) if set == self.asleep => return,
            Some(batch) => self.sets[batch as usize].irregular = true,
            None => {}
        }
        let scope = slot.scope.expect("a waiter has a scope");
        self.slots[worker as usize].set = Some(self.asleep);
        self.sets[self.asleep as usize].insert(slot.place, worker, scope);
    }

    /// Wakes every sleeping waiter: the batch to hand to the harness, if anyone slept.
    #[inline]
    pub fn wake_all(&mut self) -> Option<BatchId> {
        if self.sets[self.asleep as usize].members.is_empty() {
            return None;
        }
        Some(self.wake_sleepers())
    }

    /// [`Waiters::wake_all`] when someone sleeps (out of line: most releases find no sleeper).
    #[inline(never)]
    fn wake_sleepers(&mut self) -> BatchId {
        let batch = self.asleep;
        self.asleep = self.new_set();
        batch
    }

    /// The next member of `batch` in list order (it may have stopped waiting since the batch
    /// was made); `None` once the batch is empty, which also retires it.
    pub fn next_woken(&mut self, batch: BatchId) -> Option<WorkerId> {
        let set = &mut self.sets[batch as usize];
        let Some((_, (worker, scope))) = set.members.pop_first() else {
            self.retire(batch);
            return None;
        };
        set.forget_scope(scope);
        let slot = &mut self.slots[worker as usize];
        if slot.set == Some(batch) {
            slot.set = None;
        }
        Some(worker)
    }

    /// If every member left in `batch` still waits and waits for one of the scopes in `full`,
    /// puts them all back to sleep at once (as many `rewait`s in list order would) and retires
    /// the batch; returns whether it did.
    pub fn rewait_rest(&mut self, batch: BatchId, full: &[Scope]) -> bool {
        let set = &self.sets[batch as usize];
        if set.irregular || !set.scopes.iter().all(|(s, _)| full.contains(s)) {
            return false;
        }
        let (small, large) = if set.members.len() > self.sets[self.asleep as usize].members.len() {
            (self.asleep, batch)
        } else {
            (batch, self.asleep)
        };
        let mut moved = std::mem::take(&mut self.sets[small as usize].members);
        moved.drain(|place, (worker, scope)| {
            self.slots[worker as usize].set = Some(large);
            self.sets[large as usize].insert(place, worker, scope);
        });
        self.sets[small as usize].members = moved;
        self.sets[large as usize].irregular = false;
        self.asleep = large;
        self.retire(small);
        true
    }

    fn new_set(&mut self) -> BatchId {
        match self.free.pop() {
            Some(id) => id,
            None => {
                self.sets.push(Set::default());
                (self.sets.len() - 1) as BatchId
            }
        }
    }

    fn retire(&mut self, id: BatchId) {
        let set = &mut self.sets[id as usize];
        set.members.clear();
        set.scopes.clear();
        set.irregular = false;
        self.free.push(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drains `batch` the way the harness does when nothing is free: every member rewaits.
    fn drain(w: &mut Waiters, batch: BatchId) -> Vec<WorkerId> {
        let mut out = Vec::new();
        while let Some(worker) = w.next_woken(batch) {
            out.push(worker);
            w.rewait(worker);
        }
        out
    }

    /// Random inserts (new and old places), removes, pops and drains, across the small set's
    /// limit both ways, against a B-tree.
    #[test]
    fn members_behave_as_an_ordered_map() {
        let mut members = Members::default();
        let mut model = BTreeMap::new();
        let mut bits = crate::rng::xorshift(0x9E37_79B9_7F4A_7C15);
        let mut next = |n: u64| bits() % n;
        let mut spilled = false;
        for step in 0..40_000u64 {
            let phase = (step / 2_000) % 2; // grow past the limit, then shrink below it
            match next(10) {
                0..=4 if phase == 0 || next(3) == 0 => {
                    let place = if next(2) == 0 { step } else { next(step + 1) };
                    let member = (next(100) as WorkerId, Scope::Resource(next(3) as usize));
                    members.insert(place, member);
                    model.insert(place, member);
                }
                0..=6 => {
                    let place = model
                        .keys()
                        .nth(next(model.len() as u64 + 1) as usize)
                        .copied();
                    let place = place.unwrap_or(step);
                    members.remove(place);
                    model.remove(&place);
                }
                7 | 8 => assert_eq!(members.pop_first(), model.pop_first()),
                _ if next(50) == 0 => {
                    let mut drained = Vec::new();
                    members.drain(|p, m| drained.push((p, m)));
                    assert_eq!(
                        drained,
                        std::mem::take(&mut model).into_iter().collect::<Vec<_>>()
                    );
                }
                _ => {}
            }
            spilled |= !members.large.is_empty();
            assert_eq!(members.len(), model.len());
            assert_eq!(members.is_empty(), model.is_empty());
            assert!(members.small.is_empty() || members.large.is_empty());
            assert!(
                members
                    .small
                    .iter()
                    .zip(members.small.iter().skip(1))
                    .all(|(a, b)| a.0 < b.0)
            );
        }
        assert!(spilled, "the test reached the B-tree");
        let mut rest = Vec::new();
        members.drain(|p, m| rest.push((p, m)));
        assert_eq!(rest, model.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn a_wake_reaches_the_sleepers_in_list_order() {
        let mut w = Waiters::default();
        for worker in [3, 1, 2] {
            w.add(worker, Scope::Primary);
        }
        let batch = w.wake_all().expect("three sleepers");
        assert_eq!(w.wake_all(), None, "everyone is already woken");
        w.add(7, Scope::Fleet);
        let second = w.wake_all().expect("the newcomer");
        assert_eq!(drain(&mut w, batch), vec![3, 1, 2]);
        assert_eq!(drain(&mut w, second), vec![7]);
        let third = w.wake_all().expect("all asleep again");
        assert_eq!(drain(&mut w, third), vec![3, 1, 2, 7], "places are kept");
    }

    #[test]
    fn a_bulk_rewait_equals_one_by_one() {
        let mut w = Waiters::default();
        for worker in 0..100 {
            w.add(worker, Scope::Primary);
        }
        let batch = w.wake_all().expect("sleepers");
        let first = w.next_woken(batch).expect("a member");
        w.remove(first);
        w.add(200, Scope::Primary);
        assert!(
            !w.rewait_rest(batch, &[Scope::Fleet]),
            "another scope is not full"
        );
        assert!(w.rewait_rest(batch, &[Scope::Primary]));
        let again = w.wake_all().expect("sleepers");
        let expected: Vec<WorkerId> = (1..100).chain([200]).collect();
        assert_eq!(drain(&mut w, again), expected);
        assert_eq!(w.count(), 100);
    }

    #[test]
    fn a_member_that_left_makes_its_batch_irregular() {
        let mut w = Waiters::default();
        w.add(0, Scope::Primary);
        w.add(1, Scope::Primary);
        let batch = w.wake_all().expect("sleepers");
        w.remove(1);
        assert!(!w.rewait_rest(batch, &[Scope::Primary]));
        assert_eq!(w.next_woken(batch), Some(0));
        assert_eq!(
            w.next_woken(batch),
            Some(1),
            "the caller checks who still waits"
        );
        assert_eq!(w.next_woken(batch), None);
    }
}
