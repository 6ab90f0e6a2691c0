//! Value buffers of finished samples, kept on their thread for the next run's samples.
//!
//! A run fills a few hundred kilobytes of samples and frees them at its end; the allocator
//! hands that memory back to the system (it is above its trimming and mapping thresholds), so
//! the next run on the thread touches fresh pages and pays a page fault for every 4 KiB of
//! them. Kept here, the next run writes into pages it already has. Only buffers a bounded
//! sample could hold ([`EXACT_CAP`] values, 512 KiB) are kept, and at most [`KEPT`] of them:
//! a thread holds at most 8 MiB between runs.

use std::cell::RefCell;

use super::EXACT_CAP;

/// Buffers kept per thread: more than a run's samples (ten), so a run's return all fit.
const KEPT: usize = 16;

thread_local! {
    static SPARE: RefCell<Vec<Vec<u64>>> = const { RefCell::new(Vec::new()) };
}

/// A kept empty buffer, the smallest holding `want` values if one does, else the largest;
/// a new empty one when none is kept.
pub fn take(want: usize) -> Vec<u64> {
    SPARE
        .try_with(|spare| {
            let mut spare = spare.try_borrow_mut().ok()?;
            let best = (0..spare.len()).min_by_key(|&i| {
                let capacity = spare[i].capacity();
                // Ones that fit first, the smallest of them; then the largest that does not.
                if capacity >= want {
                    (0, capacity)
                } else {
                    (1, usize::MAX - capacity)
                }
            })?;
            Some(spare.swap_remove(best))
        })
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Keeps `buffer` (emptied) for a later [`take`] on this thread, if it is one a bounded
/// sample could hold and there is room; otherwise frees it.
pub fn give(mut buffer: Vec<u64>) {
    if buffer.capacity() == 0 || buffer.capacity() > EXACT_CAP {
        return;
    }
    buffer.clear();
    // At thread exit the kept buffers may be gone already: the buffer is then freed.
    let _ = SPARE.try_with(|spare| {
        if let Ok(mut spare) = spare.try_borrow_mut() {
            if spare.len() < KEPT {
                spare.push(buffer);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept() -> Vec<usize> {
        SPARE.with(|s| s.borrow().iter().map(Vec::capacity).collect())
    }

    #[test]
    fn a_buffer_given_back_is_taken_again_empty_and_the_best_fit_first() {
        // Each test runs on a thread of its own: its kept buffers start empty.
        assert!(kept().is_empty());
        assert_eq!(take(10).capacity(), 0, "nothing kept: a new empty buffer");
        for n in [100, 1_000, 10_000] {
            let mut b = Vec::with_capacity(n);
            b.extend(0..7);
            give(b);
        }
        let fit = take(500);
        assert!(fit.is_empty());
        assert!(
            fit.capacity() >= 1_000 && fit.capacity() < 10_000,
            "the smallest that fits"
        );
        let largest = take(50_000);
        assert!(largest.capacity() >= 10_000, "none fits: the largest");
        assert_eq!(kept().len(), 1);
    }

    #[test]
    fn only_a_bounded_samples_buffers_are_kept_and_only_so_many() {
        give(Vec::with_capacity(EXACT_CAP + 1));
        give(Vec::new());
        assert!(kept().is_empty(), "too large and empty buffers are freed");
        for _ in 0..KEPT + 3 {
            give(Vec::with_capacity(8));
        }
        assert_eq!(kept().len(), KEPT);
    }
}
