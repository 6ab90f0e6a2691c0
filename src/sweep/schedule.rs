//! The order a sweep's threads take its runs in: longest first, as far as it is known.
//!
//! Every run is independent and lands in its plan slot, so the order changes no result, only
//! when the threads finish: the last run a thread starts runs alone while the others idle.
//! Runs of one algorithm on one world cost about the same whatever the seed, and the
//! algorithms of a comparison do not (a client that never waits costs a thirtieth of one that
//! queues), so the first run of every group (a stretch of consecutive runs of one algorithm on
//! one world: plans put the seeds innermost) goes first, in plan order, and measures the group;
//! then the groups whose first run is still going (at least as long as that), then the others,
//! costliest first. The runs left at the end are the cheap ones, and the threads finish nearly
//! together (longest-processing-time-first list scheduling; Graham, 1969). A group is two
//! numbers, so a plan of a million single-seed cells costs 16 MB here, not a map of them.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::sync::Mutex;

/// Hands out the runs of a plan, each once, and learns each group's cost from its first run.
#[derive(Debug)]
pub(super) struct Schedule {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// The first run of each group, then the number of runs.
    starts: Vec<usize>,
    /// Each group's next run not yet taken.
    next: Vec<usize>,
    /// Groups from this one on have not had their first run taken.
    unstarted: usize,
    /// Groups with later runs left whose first run is taken and not finished.
    running: BTreeSet<usize>,
    /// Groups with later runs left and a measured first run: the costliest first, then the
    /// earliest in the plan (a cost is a non-negative double's bits, which order as it does).
    measured: BinaryHeap<(u64, Reverse<usize>)>,
}

impl State {
    fn groups(&self) -> usize {
        self.next.len()
    }

    /// Takes the next run of `group`, which has one left; whether it has more.
    fn take(&mut self, group: usize) -> (usize, bool) {
        let i = self.next[group];
        self.next[group] += 1;
        (i, self.next[group] < self.starts[group + 1])
    }
}

impl Schedule {
    /// A schedule of `runs` runs; `key(i)` names run `i`'s algorithm and world (runs with equal
    /// keys cost about the same).
    pub(super) fn new<K: PartialEq>(runs: usize, key: impl Fn(usize) -> K) -> Self {
        let mut starts: Vec<usize> = (0..runs)
            .filter(|&i| i == 0 || key(i) != key(i - 1))
            .collect();
        let next = starts.clone();
        starts.push(runs);
        Schedule {
            state: Mutex::new(State {
                starts,
                next,
                unstarted: 0,
                running: BTreeSet::new(),
                measured: BinaryHeap::new(),
            }),
        }
    }

    /// The next run to start, if any is left.
    pub(super) fn next(&self) -> Option<usize> {
        let mut s = self.lock();
        if s.unstarted < s.groups() {
            let group = s.unstarted;
            s.unstarted += 1;
            let (i, more) = s.take(group);
            if more {
                s.running.insert(group);
            }
            return Some(i);
        }
        if let Some(&group) = s.running.first() {
            let (i, more) = s.take(group);
            if !more {
                s.running.remove(&group);
            }
            return Some(i);
        }
        let &(_, Reverse(group)) = s.measured.peek()?;
        let (i, more) = s.take(group);
        if !more {
            s.measured.pop();
        }
        Some(i)
    }

    /// Run `i` took `cost` (seconds, or any measure that grows with the work); a group's first
    /// run prices the runs left in it.
    pub(super) fn finished(&self, i: usize, cost: f64) {
        let mut s = self.lock();
        let group = s.starts.partition_point(|&start| start <= i) - 1;
        if s.starts[group] == i && s.running.remove(&group) {
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
        let keys = *b"aabbb";
        let schedule = Schedule::new(5, |i| keys[i]);
        assert_eq!(schedule.next(), Some(0));
        assert_eq!(schedule.next(), Some(2));
        schedule.finished(2, 5.0);
        // `a`'s first run has not finished: it may be the longest.
        assert_eq!(schedule.next(), Some(1));
        assert_eq!(schedule.next(), Some(3));
        schedule.finished(3, 9.0);
        assert_eq!(schedule.next(), Some(4));
        assert_eq!(schedule.next(), None);
        schedule.finished(0, 1.0);
        assert_eq!(schedule.next(), None);
    }

    #[test]
    fn equal_costs_keep_plan_order_and_single_runs_stay_in_it() {
        assert_eq!(order(b"aabb", |_| 1.0), [0, 2, 1, 3]);
        assert_eq!(order(b"abcd", |_| 1.0), [0, 1, 2, 3]);
        // A key that comes back later starts another group.
        assert_eq!(order(b"abab", f64::from), [0, 1, 2, 3]);
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
