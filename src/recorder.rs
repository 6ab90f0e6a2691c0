//! The windowed recorder: what a run did, window by window of simulated time — requests,
//! refusals and errors by kind, jobs done and failed, queue waits — and what each endpoint
//! looked like at each window's start: requests in flight, its capacity (cycle and incidents),
//! its breaker state, and the strategy's adaptive limit.
//!
//! It is off unless asked (the engine keeps an `Option` of it and pays one branch per event
//! without it). Counts are exact and additive, so a window's sums equal the run's totals.
//! Snapshots are taken at the first event at or after a window's start, before it runs: the
//! state cannot change between events, so that is the state at the window's start. The
//! recorder adds no event, so recording never changes a run.
//!
//! A run longer than [`MAX_WINDOWS`] windows (fewer in a world of many endpoints: at most
//! [`MAX_SNAPSHOT_CELLS`] endpoint snapshots in all) has adjacent windows merged (counts added,
//! the earlier snapshot kept), doubling their width, as often as needed: memory stays bounded
//! and the result is still a function of the run alone.
//!
//! Breaker changes are counted in their window, and some are also kept one by one
//! ([`Changes`]): every change a trace shows, or the first [`MAX_KEPT_DEATHS`] deaths the
//! report draws. A run's changes are as many as its requests, so keeping all would let a
//! recorded run grow without bound.

use crate::client::pool::State;
use crate::provider::{Arrival, FailureKind, Refusal};

/// Most windows kept per run; beyond, windows are merged pairwise.
pub const MAX_WINDOWS: usize = 4096;

/// Most endpoint snapshots kept per run (windows × endpoints, some 16 MiB): a world of more than
/// 256 endpoints keeps fewer windows, down to [`MIN_WINDOWS`].
pub const MAX_SNAPSHOT_CELLS: usize = 1 << 20;

/// Most changes into `Dead` or `Revoked` a report's run keeps one by one ([`Changes::Deaths`]);
/// the rest are counted ([`Timeseries::deaths`]).
pub const MAX_KEPT_DEATHS: usize = 1024;

/// Which breaker changes a recorder keeps one by one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Changes {
    /// Every change up to a time the engine may lower as the run goes
    /// ([`Recorder::keep_changes_until`]): a trace's, which ends with its last request.
    Every,
    /// The first [`MAX_KEPT_DEATHS`] changes into `Dead` or `Revoked`: the report's rules.
    Deaths,
}

/// Fewest windows a run is merged down to, however many endpoints it has.
pub const MIN_WINDOWS: usize = 64;

/// The windows kept per run over `endpoints` endpoints.
pub fn max_windows(endpoints: usize) -> usize {
    (MAX_SNAPSHOT_CELLS / endpoints.max(1)).clamp(MIN_WINDOWS, MAX_WINDOWS)
}

/// What one window counted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Window {
    /// Requests sent (hedge copies included).
    pub requests: u64,
    /// Requests admitted by the provider.
    pub admitted: u64,
    /// Refused for concurrency (429).
    pub refused_capacity: u64,
    /// Refused by the token bucket (429).
    pub refused_quota: u64,
    /// Refused by a published limit (429).
    pub refused_limit: u64,
    /// Answered "overloaded".
    pub overloaded: u64,
    /// Turned away by an incident (outage, revoked key, too large).
    pub rejected: u64,
    /// Answered successfully.
    pub ok: u64,
    /// Failed after service: a 5xx, a reset, a server-side timeout.
    pub errors: u64,
    /// Ended by the client's own timeout.
    pub client_timeouts: u64,
    /// Cancelled (a hedge's losing copy).
    pub cancelled: u64,
    /// Jobs completed.
    pub jobs_done: u64,
    /// Jobs given up.
    pub jobs_failed: u64,
    /// Leases granted, and their queue waits: sum and most \[ms\].
    pub leases: u64,
    pub queue_wait_sum_ms: f64,
    pub queue_wait_max_ms: f64,
    /// Breaker state changes of any endpoint.
    pub breaker_changes: u64,
}

impl Window {
    /// Adds `o`'s counts to this window's (the larger of the two maxima).
    pub fn merge(&mut self, o: &Window) {
        self.requests += o.requests;
        self.admitted += o.admitted;
        self.refused_capacity += o.refused_capacity;
        self.refused_quota += o.refused_quota;
        self.refused_limit += o.refused_limit;
        self.overloaded += o.overloaded;
        self.rejected += o.rejected;
        self.ok += o.ok;
        self.errors += o.errors;
        self.client_timeouts += o.client_timeouts;
        self.cancelled += o.cancelled;
        self.jobs_done += o.jobs_done;
        self.jobs_failed += o.jobs_failed;
        self.leases += o.leases;
        self.queue_wait_sum_ms += o.queue_wait_sum_ms;
        self.queue_wait_max_ms = self.queue_wait_max_ms.max(o.queue_wait_max_ms);
        self.breaker_changes += o.breaker_changes;
    }

    /// Refusals of every kind (429s and "overloaded").
    pub fn refused(&self) -> u64 {
        self.refused_capacity + self.refused_quota + self.refused_limit + self.overloaded
    }
}

/// One endpoint at a window's start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Snapshot {
    /// Requests in flight.
    pub in_flight: u32,
    /// The provider's concurrency limit then (cycle and incidents applied).
    pub capacity: u32,
    /// The client's breaker state.
    pub state: State,
    /// Whether the strategy keeps the endpoint in a cooldown of its own (the router); `None`
    /// for a strategy without cooldowns.
    pub cooldown: Option<bool>,
}

/// A breaker state change.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Change {
    /// When \[s\].
    pub at_s: f64,
    /// Endpoint index.
    pub endpoint: usize,
    /// The state from then on.
    pub state: State,
}

/// The recorder of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorder {
    window_s: f64,
    /// The window the last count went to, and its bounds `[start, end)` (a count at the same
    /// instant or soon after, the usual case, finds it without a division).
    current: usize,
    current_start: f64,
    current_end: f64,
    windows: Vec<Window>,
    /// Per window, per endpoint: the snapshot at its start.
    snapshots: Vec<Vec<Snapshot>>,
    /// Per window: the strategy's adaptive limit at its start.
    limits: Vec<Option<f64>>,
    keep: Changes,
    /// Under [`Changes::Every`], changes after this instant are only counted.
    changes_until: f64,
    changes: Vec<Change>,
    /// Changes into `Dead` or `Revoked`, kept or not.
    deaths: u64,
    /// The breaker states last seen.
    states: Vec<State>,
    /// Windows kept before adjacent ones are merged ([`max_windows`]).
    max_windows: usize,
}

/// What the engine shows the recorder at a window's start.
pub trait Observed {
    /// Endpoints.
    fn endpoints(&self) -> usize;
    /// Endpoint `e` at time `t`.
    fn snapshot(&self, e: usize, t: f64) -> Snapshot;
    /// The client's breaker state of endpoint `e` (asked after every event, so cheaper than
    /// a snapshot).
    fn state(&self, e: usize) -> State;
    /// The strategy's adaptive limit, when it has one.
    fn limit(&self) -> Option<f64>;
}

impl Recorder {
    /// A recorder of windows `window_s` wide (> 0) over `endpoints` endpoints, all `Ready`,
    /// keeping the breaker changes `keep` says.
    pub fn new(window_s: f64, endpoints: usize, keep: Changes) -> Recorder {
        assert!(
            window_s > 0.0 && window_s.is_finite(),
            "a window has a width"
        );
        Recorder {
            window_s,
            current: 0,
            current_start: f64::INFINITY,
            current_end: f64::NEG_INFINITY,
            windows: Vec::new(),
            snapshots: Vec::new(),
            limits: Vec::new(),
            keep,
            changes_until: f64::INFINITY,
            changes: Vec::new(),
            deaths: 0,
            states: vec![State::Ready; endpoints],
            max_windows: max_windows(endpoints),
        }
    }

    /// Takes the snapshots of every window that starts at or before `at` and has none yet
    /// (called before the event at `at` runs), and notes breaker changes since the last call
    /// (made by events at `last`).
    pub fn advance(&mut self, at: f64, last: f64, seen: &impl Observed) {
        self.coarsen_for(at);
        for e in 0..seen.endpoints() {
            let state = seen.state(e);
            if state != self.states[e] {
                self.states[e] = state;
                self.changed(Change {
                    at_s: last,
                    endpoint: e,
                    state,
                });
            }
        }
        while (self.snapshots.len() as f64) * self.window_s <= at {
            let t = self.snapshots.len() as f64 * self.window_s;
            self.snapshots
                .push((0..seen.endpoints()).map(|e| seen.snapshot(e, t)).collect());
            self.limits.push(seen.limit());
        }
    }

    /// Counts `change` in its window and the deaths, and keeps it if [`Changes`] says so.
    fn changed(&mut self, change: Change) {
        self.window(change.at_s).breaker_changes += 1;
        let death = matches!(change.state, State::Dead | State::Revoked);
        self.deaths += u64::from(death);
        let keep = match self.keep {
            Changes::Every => change.at_s <= self.changes_until,
            Changes::Deaths => death && self.changes.len() < MAX_KEPT_DEATHS,
        };
        if keep {
            self.changes.push(change);
        }
    }

    /// Keeps no change after `t` from now on (under [`Changes::Every`]): a trace's requests all
    /// ended by `t`, and it writes no change after them.
    pub fn keep_changes_until(&mut self, t: f64) {
        self.changes_until = self.changes_until.min(t);
    }

    /// A request sent at `t` met `arrival`.
    pub fn sent(&mut self, t: f64, arrival: &Arrival) {
        let w = self.window(t);
        w.requests += 1;
        match arrival {
            Arrival::Admitted { .. } => w.admitted += 1,
            Arrival::Rejected(_) => w.rejected += 1,
            Arrival::Refused { refusal, .. } => match refusal {
                Refusal::Capacity => w.refused_capacity += 1,
                Refusal::Quota => w.refused_quota += 1,
                Refusal::Limit { .. } => w.refused_limit += 1,
                Refusal::Overloaded => w.overloaded += 1,
            },
        }
    }

    /// An admitted request ended at `t`: by the client's timeout (`gave_up`), else with
    /// `failure` or a success.
    pub fn answered(&mut self, t: f64, failure: Option<FailureKind>, gave_up: bool) {
        let w = self.window(t);
        match (gave_up, failure) {
            (true, _) => w.client_timeouts += 1,
            (false, Some(_)) => w.errors += 1,
            (false, None) => w.ok += 1,
        }
    }

    /// A lease was granted at `t` after waiting `wait_ms`.
    pub fn leased(&mut self, t: f64, wait_ms: f64) {
        let w = self.window(t);
        w.leases += 1;
        w.queue_wait_sum_ms += wait_ms;
        w.queue_wait_max_ms = w.queue_wait_max_ms.max(wait_ms);
    }

    /// The window holding time `t`.
    pub fn window(&mut self, t: f64) -> &mut Window {
        if !(t >= self.current_start && t < self.current_end) {
            self.move_to(t);
        }
        &mut self.windows[self.current]
    }

    /// Makes the window holding `t` (by the bounds `i·w <= t < (i+1)·w`, the same products
    /// the snapshots use) the current one.
    fn move_to(&mut self, t: f64) {
        self.coarsen_for(t);
        let w = self.window_s;
        let mut i = (t.max(0.0) / w) as usize;
        while i > 0 && i as f64 * w > t {
            i -= 1;
        }
        while ((i + 1) as f64) * w <= t {
            i += 1;
        }
        if i >= self.windows.len() {
            self.windows.resize(i + 1, Window::default());
        }
        self.current = i;
        self.current_start = if i == 0 {
            f64::NEG_INFINITY
        } else {
            i as f64 * w
        };
        self.current_end = (i + 1) as f64 * w;
    }

    /// Merges adjacent windows, doubling their width, until time `t` falls in one of the first
    /// [`max_windows`].
    fn coarsen_for(&mut self, t: f64) {
        while t >= self.window_s * self.max_windows as f64 {
            self.window_s *= 2.0;
            self.current_start = f64::INFINITY;
            self.current_end = f64::NEG_INFINITY;
            self.windows = self
                .windows
                .chunks(2)
                .map(|pair| {
                    let mut w = pair[0].clone();
                    if let Some(second) = pair.get(1) {
                        w.merge(second);
                    }
                    w
                })
                .collect();
            self.snapshots = self.snapshots.iter().step_by(2).cloned().collect();
            self.limits = self.limits.iter().step_by(2).copied().collect();
        }
    }

    /// The recorded run, up to `end_s` (its last event).
    pub fn finish(mut self, end_s: f64, seen: &impl Observed) -> Timeseries {
        self.advance(end_s, end_s, seen);
        let n = self.windows.len().max(self.snapshots.len());
        self.windows.resize(n, Window::default());
        Timeseries {
            end_s,
            window_s: self.window_s,
            windows: self.windows,
            snapshots: self.snapshots,
            limits: self.limits,
            changes: self.changes,
            deaths: self.deaths,
        }
    }
}

/// A run's windows.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeseries {
    /// The run's last event \[s\]: the last window ends after it, and counted only until it.
    pub end_s: f64,
    /// Width of each window \[s\] (window `i` is `[i·w, (i+1)·w)`).
    pub window_s: f64,
    /// What each window counted.
    pub windows: Vec<Window>,
    /// Per window (those that started by the run's end), per endpoint: its snapshot.
    pub snapshots: Vec<Vec<Snapshot>>,
    /// Per window: the adaptive limit at its start.
    pub limits: Vec<Option<f64>>,
    /// The breaker state changes kept ([`Changes`]), in time order.
    pub changes: Vec<Change>,
    /// Every change into `Dead` or `Revoked`, kept or not.
    pub deaths: u64,
}

impl Timeseries {
    /// The windows' sum.
    pub fn total(&self) -> Window {
        let mut sum = Window::default();
        for w in &self.windows {
            sum.merge(w);
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(u32);
    impl Observed for Fixed {
        fn endpoints(&self) -> usize {
            1
        }
        fn snapshot(&self, _: usize, t: f64) -> Snapshot {
            Snapshot {
                in_flight: self.0,
                capacity: t as u32,
                state: if self.0 > 1 {
                    State::Dead
                } else {
                    State::Ready
                },
                cooldown: None,
            }
        }
        fn state(&self, e: usize) -> State {
            self.snapshot(e, 0.0).state
        }
        fn limit(&self) -> Option<f64> {
            None
        }
    }

    #[test]
    fn counts_land_in_their_window_and_snapshots_at_window_starts() {
        let mut r = Recorder::new(1.0, 1, Changes::Every);
        r.advance(0.0, 0.0, &Fixed(0));
        r.window(0.5).requests += 1;
        r.advance(2.5, 0.5, &Fixed(1));
        r.window(2.5).requests += 2;
        let t = r.finish(2.5, &Fixed(2));
        assert_eq!(t.windows.len(), 3);
        assert_eq!(
            t.windows.iter().map(|w| w.requests).collect::<Vec<_>>(),
            [1, 0, 2]
        );
        let caps: Vec<u32> = t.snapshots.iter().map(|s| s[0].capacity).collect();
        assert_eq!(caps, [0, 1, 2]);
        assert_eq!(t.changes.len(), 1);
        assert_eq!(t.changes[0].state, State::Dead);
        assert_eq!(t.total().requests, 3);
    }

    #[test]
    fn a_long_run_merges_windows_and_keeps_every_count() {
        let mut r = Recorder::new(1.0, 1, Changes::Every);
        for i in 0..10_000 {
            let t = f64::from(i);
            r.advance(t, t, &Fixed(0));
            r.window(t).requests += 1;
        }
        let t = r.finish(9_999.0, &Fixed(0));
        assert!(t.windows.len() <= MAX_WINDOWS);
        assert_eq!(t.window_s, 4.0);
        assert_eq!(t.total().requests, 10_000);
        assert_eq!(t.windows[0].requests, 4);
        assert_eq!(t.snapshots.len(), t.windows.len());
    }

    /// Snapshots grow with windows × endpoints: a world of many endpoints keeps fewer windows.
    #[test]
    fn many_endpoints_keep_fewer_windows() {
        assert_eq!(max_windows(6), MAX_WINDOWS);
        assert_eq!(max_windows(1000), 1048);
        assert_eq!(max_windows(20_000), MIN_WINDOWS);
        let mut r = Recorder::new(1.0, 4096, Changes::Every);
        for i in 0..10_000 {
            let t = f64::from(i);
            r.advance(t, t, &Fixed(0));
            r.window(t).requests += 1;
        }
        let t = r.finish(9_999.0, &Fixed(0));
        assert_eq!(t.window_s, 64.0, "256 windows of 64 s cover 10,000 s");
        assert!(t.windows.len() <= 256);
        assert_eq!(t.total().requests, 10_000);
    }
}
