//! The order a sweep's threads take its runs in: longest first, as far as it is known.
//!
//! Every run is independent and lands in its plan slot, so the order changes no result, only
//! when the threads finish: the last run a thread starts runs alone while the others idle.
//! Runs of one algorithm on one world cost about the same whatever the seed, and the
//! algorithms of a comparison do not (a client that never waits costs a thirtieth of one that
//! queues), so the first run of every (world, algorithm) group goes first, in plan order, and
//! measures the group; then the groups whose first run is still going (at least as long as
//! that), then the others, costliest first. The runs left at the end are the cheap ones, and
//! the threads finish nearly together (longest-processing-time-first list scheduling; Graham,
//! 1969).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use std::sync::Mutex;

/// Hands out the runs of a plan, each once, and learns each group's cost from its first run.
#[derive(Debug)]
pub(super) struct Schedule {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// The group of each run.
    group_of: Vec<usize>,
    /// Whether each run is its group's first.
    first: Vec<bool>,
    /// Each group's first run, in plan order, until taken.
    firsts: VecDeque<usize>,
    /// Each group's later runs, in plan order, until taken.
    rest: Vec<VecDeque<usize>>,
    /// Groups with later runs left whose first run is taken and not finished.
    running: BTreeSet<usize>,
    /// Groups with later runs left and a measured first run: the costliest first, then the
    /// earliest in the plan (a cost is a non-negative double's bits, which order as it does).
    measured: BinaryHeap<(u64, Reverse<usize>)>,
}

impl Schedule {
    /// A schedule of `runs` runs; `key(i)` names run `i`'s group (runs with equal keys cost about
    /// the same).
    pub(super) fn new<K: Ord>(runs: usize, key: impl Fn(usize) -> K) -> Self {
        let mut groups = BTreeMap::new();
        let mut state = State {
            group_of: Vec::with_capacity(runs),
            first: Vec::with_capacity(runs),
            firsts: VecDeque::new(),
            rest: Vec::new(),
            running: BTreeSet::new(),
            measured: BinaryHeap::new(),
        };
        for i in 0..runs {
            let next = groups.len();
            let group = *groups.entry(key(i)).or_insert(next);
            let first = group == next;
            if first {
                state.firsts.push_back(i);
                state.rest.push(VecDeque::new());
            } else {
                state.rest[group].push_back(i);
            }
            state.group_of.push(group);
            state.first.push(first);
        }
        Schedule {
            state: Mutex::new(state),
        }
    }

    /// The next run to start, if any is left.
    pub(super) fn next(&self) -> Option<usize> {
        let mut s = self.lock();
        if let Some(i) = s.firsts.pop_front() {
            let group = s.group_of[i];
            if !s.rest[group].is_empty() {
                s.running.insert(group);
            }
            return Some(i);
        }
        if let Some(&group) = s.running.first() {
            let i = s.rest[group].pop_front();
            if s.rest[group].is_empty() {
                s.running.remove(&group);
            }
            return i;
        }
        let &(_, Reverse(group)) = s.measured.peek()?;
        let i = s.rest[group].pop_front();
        if s.rest[group].is_empty() {
            s.measured.pop();
        }
        i
    }

    /// Run `i` took `cost` (seconds, or any measure that grows with the work); a group's first
    /// run prices the runs left in it.
    pub(super) fn finished(&self, i: usize, cost: f64) {
        let mut s = self.lock();
        if !s.first[i] {
            return;
        }
        let group = s.group_of[i];
        if s.running.remove(&group) {
            let cost = if cost.is_finite() { cost.max(0.0) } else { 0.0 };
            s.measured.push(((cost + 0.0).to_bits(), Reverse(group)));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .expect("no thread panics holding the schedule")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes every run, finishing each as soon as it is taken at the given group costs.
    fn order(keys: &[u8], cost: impl Fn(u8) -> f64) -> Vec<usize> {
        let schedule = Schedule::new(keys.len(), |i| keys[i]);
        std::iter::from_fn(|| {
            let i = schedule.next()?;
            schedule.finished(i, cost(keys[i]));
            Some(i)
        })
        .collect()
    }

    #[test]
    fn first_runs_go_first_then_the_costliest_groups() {
        // Groups a, b, c at 3 seeds, algorithm-major as a plan is; b costs most, a least.
        let keys = *b"aaabbbccc";
        let got = order(&keys, |k| match k {
            b'a' => 0.1,
            b'b' => 2.0,
            _ => 1.0,
        });
        assert_eq!(got, [0, 3, 6, 4, 5, 7, 8, 1, 2]);
    }

    #[test]
    fn groups_still_running_go_before_measured_ones_and_every_run_is_handed_out_once() {
        let keys = *b"abab";
        let schedule = Schedule::new(4, |i| keys[i]);
        assert_eq!(schedule.next(), Some(0));
        assert_eq!(schedule.next(), Some(1));
        schedule.finished(1, 5.0);
        // `a`'s first run has not finished: it may be the longest.
        assert_eq!(schedule.next(), Some(2));
        assert_eq!(schedule.next(), Some(3));
        assert_eq!(schedule.next(), None);
        schedule.finished(0, 1.0);
        assert_eq!(schedule.next(), None);
    }

    #[test]
    fn equal_costs_keep_plan_order_and_single_runs_stay_in_it() {
        assert_eq!(order(b"aabb", |_| 1.0), [0, 2, 1, 3]);
        assert_eq!(order(b"abcd", |_| 1.0), [0, 1, 2, 3]);
        assert_eq!(order(b"", |_| 1.0), Vec::<usize>::new());
    }

    #[test]
    fn a_cost_that_is_not_a_number_is_taken_as_zero() {
        assert_eq!(
            order(b"aabb", |k| if k == b'a' { f64::NAN } else { 1.0 }),
            [0, 2, 3, 1]
        );
    }
}
