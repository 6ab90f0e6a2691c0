//! The event queue: a binary min-heap ordered by (time, sequence number).
//!
//! The order is total: events at the same simulated time pop in the order they were scheduled,
//! whatever they are. Times are non-negative finite `f64` seconds, whose IEEE bit patterns sort
//! like the numbers, so the key is `(time bits, seq)`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A scheduled cause of work. Every event of the simulation is one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Resume a worker: its timer elapsed.
    Resume(u32),
    /// Check whether a resource's cooldown has ended.
    Cooldown(u32),
    /// Resume the next batch of woken waiters (the harness keeps the batches in order).
    Wake,
    /// The next open-loop job arrives.
    Arrival,
    /// A worker's hedge timer elapsed: its request in flight may get a second copy.
    Hedge(u32),
    /// A worker's hedge request has taken its latency.
    HedgeAnswer(u32),
    /// A waiting worker's deadline ([`crate::client::strategy::Acquire::WaitUntil`]).
    WaitDeadline(u32),
}

/// A heap entry: the time's bit pattern in the high 64 bits, then `seq << 28 | event`.
/// Comparing the entries compares time, then sequence number; the low 28 bits never decide
/// since sequence numbers are unique. The event takes 3 bits of kind and 25 of index: an open
/// loop has a worker slot per job in flight, up to the 10,000,000 jobs a world may have, so 22
/// bits (4,194,303) were too few. One `u128` keeps the entry at 16 bytes, which the heap moves a
/// lot, and makes a comparison one wide compare instead of two derived ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry(u128);

impl Entry {
    fn new(time: u64, order: u64) -> Entry {
        Entry(u128::from(time) << 64 | u128::from(order))
    }
    fn time(self) -> u64 {
        (self.0 >> 64) as u64
    }
    fn order(self) -> u64 {
        self.0 as u64
    }
}

const EVENT_BITS: u32 = 28;
const KIND_SHIFT: u32 = EVENT_BITS - 3;
const INDEX_MASK: u64 = (1 << KIND_SHIFT) - 1;
/// Sequence numbers available before [`EventQueue::renumber`] restarts them.
const SEQ_LIMIT: u64 = 1 << (64 - EVENT_BITS);

fn pack(event: Event) -> u64 {
    let (index, kind) = match event {
        Event::Resume(w) => (u64::from(w), 0),
        Event::Cooldown(r) => (u64::from(r), 1),
        Event::Wake => (0, 2),
        Event::Arrival => (0, 3),
        Event::Hedge(w) => (u64::from(w), 4),
        Event::HedgeAnswer(w) => (u64::from(w), 5),
        Event::WaitDeadline(w) => (u64::from(w), 6),
    };
    assert!(index <= INDEX_MASK, "event index {index} out of range");
    kind << KIND_SHIFT | index
}

fn unpack(bits: u64) -> Event {
    let low = bits & ((1 << EVENT_BITS) - 1);
    let index = (low & INDEX_MASK) as u32;
    match low >> KIND_SHIFT {
        0 => Event::Resume(index),
        1 => Event::Cooldown(index),
        2 => Event::Wake,
        3 => Event::Arrival,
        4 => Event::Hedge(index),
        5 => Event::HedgeAnswer(index),
        _ => Event::WaitDeadline(index),
    }
}

/// Min-heap of events keyed by (time, insertion sequence).
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<Entry>>,
    next_seq: u64,
    /// The root was returned by [`EventQueue::pop`] and is no longer pending: the next push
    /// takes its place with one sift down (an event's handling usually schedules one event),
    /// or the next pop removes it first.
    taken: bool,
}

impl EventQueue {
    /// An empty queue with room for `capacity` events.
    pub fn with_capacity(capacity: usize) -> EventQueue {
        EventQueue {
            heap: BinaryHeap::with_capacity(capacity),
            next_seq: 0,
            taken: false,
        }
    }

    /// Schedules `event` at `at`, behind everything already scheduled for the same time.
    ///
    /// # Panics
    /// Panics if `at` is negative or not finite (the simulation never produces such a time).
    // On every request's path: inlined, as a profile-guided build inlines it (docs/performance.md).
    #[inline(always)]
    pub fn push(&mut self, at: f64, event: Event) {
        // -0.0 and 0.0 must share a key. The bits of a non-negative finite double lie below
        // infinity's; a negative number's (sign bit set) and a NaN's do not: one compare.
        let time = (at + 0.0).to_bits();
        assert!(
            time < f64::INFINITY.to_bits(),
            "event time {at} out of range"
        );
        if self.next_seq == SEQ_LIMIT {
            self.drop_taken();
            self.renumber();
        }
        let order = self.next_seq << EVENT_BITS | pack(event);
        self.next_seq += 1;
        let entry = Reverse(Entry::new(time, order));
        if self.taken {
            self.taken = false;
            if let Some(mut root) = self.heap.peek_mut() {
                // Sifted down into place when `root` drops.
                *root = entry;
                return;
            }
        }
        self.heap.push(entry);
    }

    /// Removes the root a pop returned, if it is still in the heap.
    fn drop_taken(&mut self) {
        if self.taken {
            self.taken = false;
            self.heap.pop();
        }
    }

    /// Gives the pending events the sequence numbers 0, 1, … in their order, so that a run past
    /// 2^36 (6.9 × 10^10) events — hours of simulation — keeps going with the same order
    /// instead of running out of numbers. Only the numbers change, never which event comes first.
    #[cold]
    fn renumber(&mut self) {
        let pending = std::mem::take(&mut self.heap).into_sorted_vec();
        // Sorted ascending by `Reverse`, so the latest event comes first.
        let n = pending.len() as u64;
        self.heap = pending
            .into_iter()
            .enumerate()
            .map(|(i, Reverse(entry))| {
                let seq = n - 1 - i as u64;
                Reverse(Entry::new(
                    entry.time(),
                    seq << EVENT_BITS | entry.order() & ((1 << EVENT_BITS) - 1),
                ))
            })
            .collect();
        self.next_seq = n;
    }

    /// Removes and returns the earliest event with its time.
    pub fn pop(&mut self) -> Option<(f64, Event)> {
        self.drop_taken();
        let Reverse(entry) = *self.heap.peek()?;
        self.taken = true;
        Some((f64::from_bits(entry.time()), unpack(entry.order())))
    }

    /// Bytes of the pending events.
    pub fn heap_bytes(&self) -> u64 {
        (self.len() * std::mem::size_of::<Entry>()) as u64
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len() - usize::from(self.taken)
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_non_negative_finite_times_are_scheduled() {
        for bad in [
            -1.0,
            -f64::MIN_POSITIVE,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            -f64::INFINITY,
        ] {
            let pushed = std::panic::catch_unwind(|| EventQueue::default().push(bad, Event::Wake));
            assert!(pushed.is_err(), "{bad} was scheduled");
        }
        let mut q = EventQueue::default();
        for good in [f64::MAX, 5e-324, -0.0, 0.0] {
            q.push(good, Event::Wake);
        }
        let popped: Vec<u64> = std::iter::from_fn(|| q.pop())
            .map(|(t, _)| t.to_bits())
            .collect();
        assert_eq!(
            popped,
            [0, 0, 1, f64::MAX.to_bits()],
            "-0.0 and 0.0 share a key"
        );
    }

    #[test]
    fn every_worker_slot_of_the_largest_world_fits_an_event() {
        // The schema's largest `jobs`: an open loop may hold that many workers at once.
        let last = 10_000_000 - 1;
        for event in [
            Event::Resume(last),
            Event::HedgeAnswer(last),
            Event::WaitDeadline(last),
        ] {
            assert_eq!(unpack(pack(event)), event);
        }
    }

    #[test]
    fn running_out_of_sequence_numbers_keeps_the_order() {
        let mut q = EventQueue {
            next_seq: SEQ_LIMIT - 3,
            ..EventQueue::default()
        };
        q.push(2.0, Event::Resume(1));
        q.push(1.0, Event::Resume(2));
        q.push(2.0, Event::Resume(3));
        // The next push renumbers: the pending events keep their order, the new one comes last
        // among equal times.
        q.push(2.0, Event::Resume(4));
        q.push(1.0, Event::Resume(5));
        assert_eq!(q.next_seq, 5);
        let order: Vec<Event> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        let expected = [2, 5, 1, 3, 4].map(Event::Resume);
        assert_eq!(order, expected);
    }

    /// Pops interleaved with pushes (the pushed event taking the popped root's place) give the
    /// order of a sorted list of (time, scheduling order), and the count of pending events.
    #[test]
    fn interleaved_pushes_and_pops_match_a_sorted_model() {
        let mut q = EventQueue::default();
        let mut model: Vec<(f64, u64, u32)> = Vec::new();
        let (mut seq, mut now) = (0u64, 0.0f64);
        let mut bits = crate::rng::xorshift(0x2545_f491_4f6c_dd1d);
        let mut draw = |n: u64| bits() % n;
        for step in 0..20_000u32 {
            // Mostly one push per pop, sometimes none or a few, sometimes at the same instant.
            for _ in 0..[0, 1, 1, 1, 2, 3][draw(6) as usize] {
                let at = now + [0.0, 0.5, 1.0, 2.5][draw(4) as usize] * draw(3) as f64;
                q.push(at, Event::Resume(step));
                model.push((at, seq, step));
                seq += 1;
            }
            assert_eq!(q.len(), model.len());
            model.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let expected = (!model.is_empty()).then(|| model.remove(0));
            let got = q.pop();
            assert_eq!(
                got,
                expected.map(|(at, _, w)| (at, Event::Resume(w))),
                "step {step}"
            );
            if let Some((at, _)) = got {
                now = at;
            }
            assert_eq!(q.is_empty(), model.is_empty());
        }
    }

    #[test]
    fn time_then_fifo() {
        let mut q = EventQueue::default();
        q.push(1.0, Event::Resume(1));
        q.push(0.5, Event::Cooldown(7));
        q.push(1.0, Event::Resume(0));
        q.push(0.0, Event::Resume(3));
        q.push(-0.0, Event::Resume(4));
        q.push(0.5, Event::Wake);
        q.push(0.5, Event::Arrival);
        q.push(0.5, Event::Hedge(9));
        q.push(0.25, Event::HedgeAnswer(5));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (0.0, Event::Resume(3)),
                (0.0, Event::Resume(4)),
                (0.25, Event::HedgeAnswer(5)),
                (0.5, Event::Cooldown(7)),
                (0.5, Event::Wake),
                (0.5, Event::Arrival),
                (0.5, Event::Hedge(9)),
                (1.0, Event::Resume(1)),
                (1.0, Event::Resume(0)),
            ]
        );
    }

    #[test]
    fn large_times_keep_their_order() {
        let mut q = EventQueue::default();
        for (i, t) in [1e9, 3.0, 1e-300, 700.25, 2.0f64.powi(60)]
            .iter()
            .enumerate()
        {
            q.push(*t, Event::Resume(i as u32));
        }
        let times: Vec<f64> = std::iter::from_fn(|| q.pop()).map(|(t, _)| t).collect();
        let mut sorted = times.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(times, sorted);
    }
}
