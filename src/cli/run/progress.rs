//! The progress bar on standard error.
//!
//! Owns the only animation simbench has: a one-line bar redrawn every 100 ms, shown only when
//! standard error is a terminal (and `--quiet` is off) and only once the comparison has taken
//! more than a second, so quick comparisons and redirected output stay clean. It is erased when
//! the sweep ends. Never touches standard output.

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::report::Run;

/// Nothing is drawn before this much real time has passed.
const SHOW_AFTER: Duration = Duration::from_secs(1);
/// Time between redraws.
const TICK: Duration = Duration::from_millis(100);
/// Width of the bar in characters.
const BAR: usize = 30;

/// Progress of a sweep of `total` runs.
pub struct Progress {
    total: usize,
    enabled: bool,
    done: AtomicUsize,
    unfinished: AtomicUsize,
    stop: AtomicBool,
    drawn: Mutex<bool>,
}

impl Progress {
    /// A bar for `total` runs; `enabled` false makes every method a no-op.
    pub fn new(total: usize, enabled: bool) -> Progress {
        Progress {
            total,
            enabled,
            done: AtomicUsize::new(0),
            unfinished: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            drawn: Mutex::new(false),
        }
    }

    /// Runs `sweep` with a per-run callback while a helper thread redraws the bar.
    pub fn around<T>(&self, sweep: impl FnOnce(&(dyn Fn(&Run) + Sync)) -> T) -> T {
        let on_run = |run: &Run| {
            self.done.fetch_add(1, Ordering::Relaxed);
            if run.metrics().is_none() {
                self.unfinished.fetch_add(1, Ordering::Relaxed);
            }
        };
        if !self.enabled {
            return sweep(&on_run);
        }
        std::thread::scope(|scope| {
            scope.spawn(|| self.animate());
            let result = sweep(&on_run);
            self.stop.store(true, Ordering::Relaxed);
            result
        })
    }

    #[allow(clippy::disallowed_methods)] // The progress bar is wall-clock by nature.
    fn animate(&self) {
        let started = Instant::now();
        while !self.stop.load(Ordering::Relaxed) {
            std::thread::sleep(TICK);
            let elapsed = started.elapsed();
            if elapsed >= SHOW_AFTER && !self.stop.load(Ordering::Relaxed) {
                self.draw(elapsed.as_secs_f64());
            }
        }
        self.erase();
    }

    fn draw(&self, elapsed_s: f64) {
        let done = self.done.load(Ordering::Relaxed);
        let filled = (done * BAR).checked_div(self.total).unwrap_or(BAR);
        let mut line = format!(
            "\r[{}{}] {done}/{} runs · {elapsed_s:.0} s",
            "█".repeat(filled),
            "░".repeat(BAR - filled),
            self.total
        );
        if done > 0 && done < self.total {
            let left = elapsed_s / done as f64 * (self.total - done) as f64;
            line.push_str(&format!(" · ~{left:.0} s left"));
        }
        let unfinished = self.unfinished.load(Ordering::Relaxed);
        if unfinished > 0 {
            line.push_str(&format!(" · {unfinished} unfinished"));
        }
        line.push_str("\x1b[K");
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(line.as_bytes());
        let _ = err.flush();
        *self.drawn.lock().expect("not poisoned") = true;
    }

    fn erase(&self) {
        if *self.drawn.lock().expect("not poisoned") {
            let _ = std::io::stderr().lock().write_all(b"\r\x1b[K");
        }
    }
}
