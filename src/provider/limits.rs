//! An endpoint's published limits at run time: one allowance per limit, charged at admission
//! and settled when the request ends (see [`crate::tokens::Charge`]).

use crate::rounding::ceil_ms;
use crate::tokens::{CallSize, Charge, Limit, LimitHeader, Reset, Unit};

/// How far short of a need, as a share of the limit, a level may be and still hold it (see
/// `Allowance::has`).
const ROOM_TOLERANCE: f64 = 1e-9;

/// The state of one limit.
#[derive(Clone, Copy, Debug)]
struct Allowance {
    /// What is left now (may be negative after a completion charge).
    level: f64,
    /// When `level` was last brought up to date \[s\].
    at: f64,
}

/// Why a request cannot be admitted under the limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Blocked {
    /// Limit `index` has no room now; it will after `retry_after_s`.
    Wait {
        /// Which limit (in the endpoint's order).
        index: usize,
        /// Seconds until it has room, as a Retry-After says.
        retry_after_s: f64,
    },
    /// Limit `index` could never admit the request: it asks more than the whole limit.
    TooLarge {
        /// Which limit.
        index: usize,
    },
}

/// The limits of one endpoint.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    allowances: Vec<Allowance>,
}

impl Limits {
    /// Full allowances at t = 0.
    pub fn new(limits: &[Limit]) -> Limits {
        Limits {
            allowances: limits
                .iter()
                .map(|l| Allowance {
                    level: l.limit,
                    at: 0.0,
                })
                .collect(),
        }
    }

    /// Admits a request of `size` at `now` if every limit has room, charging each; otherwise
    /// charges nothing and says which limit refused: one the request could never fit, else the
    /// one whose room comes last (so its Retry-After is when every limit has room, whatever
    /// the order the endpoint lists them in; the first of those on a tie).
    pub fn admit(
        &mut self,
        limits: &[Limit],
        charge: Charge,
        size: &CallSize,
        now: f64,
    ) -> Result<(), Blocked> {
        let mut blocked: Option<Blocked> = None;
        for (index, (limit, allowance)) in limits.iter().zip(&mut self.allowances).enumerate() {
            allowance.catch_up(limit, now);
            let take = charge.at_admission(limit.unit, size);
            // A completion charge takes nothing now but needs some allowance left.
            let need = if take == 0.0 && limit.unit != Unit::Requests {
                1.0
            } else {
                take
            };
            if need > limit.limit {
                return Err(Blocked::TooLarge { index });
            }
            if !allowance.has(limit, need) {
                let retry_after_s = allowance.time_to(limit, need, now);
                let later = match blocked {
                    Some(Blocked::Wait {
                        retry_after_s: before,
                        ..
                    }) => retry_after_s > before,
                    _ => true,
                };
                if later {
                    blocked = Some(Blocked::Wait {
                        index,
                        retry_after_s,
                    });
                }
            }
        }
        if let Some(blocked) = blocked {
            return Err(blocked);
        }
        for (limit, allowance) in limits.iter().zip(&mut self.allowances) {
            allowance.level -= charge.at_admission(limit.unit, size);
        }
        Ok(())
    }

    /// Settles a request of `size` admitted at `admitted_at` that ended at `now` having
    /// written `written` output tokens. Unused `max_tokens` go back only to the window that
    /// was charged for them: a fixed window that has since reset starts full and owes nothing.
    pub fn settle(
        &mut self,
        limits: &[Limit],
        charge: Charge,
        size: &CallSize,
        written: f64,
        admitted_at: f64,
        now: f64,
    ) {
        for (limit, allowance) in limits.iter().zip(&mut self.allowances) {
            let delta = charge.at_end(limit.unit, size, written);
            if delta == 0.0 || (delta < 0.0 && !limit.same_window(admitted_at, now)) {
                continue;
            }
            allowance.catch_up(limit, now);
            allowance.level = (allowance.level - delta).min(limit.limit);
        }
    }

    /// Appends the state of every limit at `now` to `out`, as the `x-ratelimit-limit-*`,
    /// `-remaining-*` and `-reset-*` headers say.
    pub fn headers(&mut self, limits: &[Limit], now: f64, out: &mut Vec<LimitHeader>) {
        for (limit, allowance) in limits.iter().zip(&mut self.allowances) {
            allowance.catch_up(limit, now);
            out.push(allowance.header(limit, now));
        }
    }

    /// [`Limits::headers`] without bringing the state up to date: a recorder that looks must
    /// not change the run (a level caught up in two steps may differ in its last bit).
    pub fn peek_headers(&self, limits: &[Limit], now: f64, out: &mut Vec<LimitHeader>) {
        for (limit, allowance) in limits.iter().zip(&self.allowances) {
            let mut copy = *allowance;
            copy.catch_up(limit, now);
            out.push(copy.header(limit, now));
        }
    }
}

impl Allowance {
    /// Brings the level up to `now`: a rolling limit refills continuously, a fixed one is full
    /// again once a window boundary has passed.
    fn catch_up(&mut self, limit: &Limit, now: f64) {
        if now <= self.at {
            return;
        }
        match limit.reset {
            Reset::Rolling => {
                let refill = (now - self.at) * limit.limit / limit.window_s;
                self.level = (self.level + refill).min(limit.limit);
            }
            Reset::Fixed => {
                if !limit.same_window(self.at, now) {
                    self.level = limit.limit;
                }
            }
        }
        self.at = now;
    }

    /// The limit's `x-ratelimit-*` headers at `now`, the level being up to date.
    fn header(&self, limit: &Limit, now: f64) -> LimitHeader {
        LimitHeader {
            unit: limit.unit,
            limit: limit.limit,
            remaining: self.level.max(0.0),
            reset_s: self.time_to(limit, limit.limit, now),
        }
    }

    /// Whether the level holds `need`. Levels are sums of refills computed in floating point,
    /// so a level a billionth of the limit short of `need` holds it: a client that waits out
    /// the Retry-After exactly must find the room the header promised.
    fn has(&self, limit: &Limit, need: f64) -> bool {
        self.level >= need - ROOM_TOLERANCE * limit.limit
    }

    /// Seconds from `now` until the level reaches `need` (0 if it has), rounded up to whole
    /// milliseconds as a `retry-after-ms` header carries it: a client that waits that long
    /// finds the room, never a rounding error short of it. The exact time is first taken to
    /// the nanosecond, so that 4.000000000001 s says 4.000, not 4.001.
    fn time_to(&self, limit: &Limit, need: f64, now: f64) -> f64 {
        if self.has(limit, need) {
            return 0.0;
        }
        let exact = match limit.reset {
            Reset::Rolling => (need - self.level) * limit.window_s / limit.limit,
            Reset::Fixed => ((now / limit.window_s).floor() + 1.0) * limit.window_s - now,
        };
        let wait = ceil_ms((exact * 1e9).round() / 1e9);
        // What a client finds when it comes back after `wait`, computed as the run will.
        let mut then = *self;
        then.catch_up(limit, now + wait);
        if then.has(limit, need) {
            wait
        } else {
            wait + 0.001
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(unit: Unit, limit: f64, window_s: f64, reset: Reset) -> Limit {
        Limit {
            unit,
            limit,
            window_s,
            reset,
        }
    }

    const SIZE: CallSize = CallSize {
        input: 600.0,
        output: 100.0,
        max_tokens: 400.0,
    };

    #[test]
    fn a_rolling_token_limit_refuses_until_it_refills_and_gives_back_unused_max_tokens() {
        let limits = [limit(Unit::Tokens, 2000.0, 60.0, Reset::Rolling)];
        let mut state = Limits::new(&limits);
        let charge = Charge::Admission;
        assert_eq!(state.admit(&limits, charge, &SIZE, 0.0), Ok(()));
        assert_eq!(state.admit(&limits, charge, &SIZE, 0.0), Ok(()));
        // 2000 - 2·1000 = 0 left; 1000 more come back at 2000/60 per second: 30 s.
        let Err(Blocked::Wait {
            index: 0,
            retry_after_s,
        }) = state.admit(&limits, charge, &SIZE, 0.0)
        else {
            panic!("refused")
        };
        assert!((retry_after_s - 30.0).abs() < 1e-9);
        // The first request ends having written 100 of its 400: 300 come back at once.
        state.settle(&limits, charge, &SIZE, 100.0, 0.0, 0.0);
        let mut headers = Vec::new();
        state.headers(&limits, 0.0, &mut headers);
        let [header] = headers[..] else {
            panic!("one limit")
        };
        assert_eq!((header.limit, header.remaining), (2000.0, 300.0));
        assert!((header.reset_s - 51.0).abs() < 1e-9);
        assert!(state.admit(&limits, charge, &SIZE, 21.0).is_ok());
    }

    #[test]
    fn unused_max_tokens_go_back_only_to_the_fixed_window_charged_for_them() {
        let limits = [limit(Unit::Tokens, 2000.0, 60.0, Reset::Fixed)];
        let mut state = Limits::new(&limits);
        let charge = Charge::Admission;
        let remaining = |state: &mut Limits, now| {
            let mut headers = Vec::new();
            state.headers(&limits, now, &mut headers);
            headers[0].remaining
        };
        // Admitted at 59 s (1000 charged to the first window), ended at 61 s in the second.
        assert!(state.admit(&limits, charge, &SIZE, 59.0).is_ok());
        assert!(state.admit(&limits, charge, &SIZE, 60.5).is_ok());
        assert_eq!(remaining(&mut state, 60.5), 1000.0);
        state.settle(&limits, charge, &SIZE, 100.0, 59.0, 61.0);
        assert_eq!(
            remaining(&mut state, 61.0),
            1000.0,
            "nothing owed to the new window"
        );
        // The request admitted in this window gives its unused 300 back to it.
        state.settle(&limits, charge, &SIZE, 100.0, 60.5, 62.0);
        assert_eq!(remaining(&mut state, 62.0), 1300.0);
        // A completion charge counts in the window it is taken in, whenever admitted.
        let mut state = Limits::new(&limits);
        state.settle(&limits, Charge::Completion, &SIZE, 100.0, 59.0, 61.0);
        assert_eq!(remaining(&mut state, 61.0), 1300.0);
    }

    #[test]
    fn a_fixed_daily_quota_comes_back_at_the_boundary_and_the_tighter_limit_refuses() {
        let limits = [
            limit(Unit::Requests, 100.0, 60.0, Reset::Rolling),
            limit(Unit::InputTokens, 1000.0, 86_400.0, Reset::Fixed),
        ];
        let mut state = Limits::new(&limits);
        assert!(state.admit(&limits, Charge::Input, &SIZE, 10.0).is_ok());
        let blocked = state.admit(&limits, Charge::Input, &SIZE, 20.0);
        assert_eq!(
            blocked,
            Err(Blocked::Wait {
                index: 1,
                retry_after_s: 86_380.0
            })
        );
        assert!(state.admit(&limits, Charge::Input, &SIZE, 86_400.0).is_ok());
    }

    /// A client that comes back exactly when Retry-After said is admitted, whatever the
    /// floating-point sums of the refill make of the level (the QA case: a deficit of 1149
    /// at 14.02 s, back at 14.02 + 23.0 = 37.019999999999996).
    #[test]
    fn a_client_that_waits_out_the_retry_after_finds_the_room() {
        let mut next = crate::rng::xorshift(0x5eed);
        let mut draw = |n: u64| next() % n;
        for case in 0..20_000 {
            let window_s = [1.0, 60.0, 0.37, 86_400.0][case % 4];
            let reset = [Reset::Rolling, Reset::Fixed][case / 4 % 2];
            let cap = 1.0 + draw(100_000) as f64;
            let limits = [limit(Unit::Tokens, cap, window_s, reset)];
            let mut state = Limits::new(&limits);
            let size = CallSize {
                input: 1.0 + draw(cap as u64) as f64,
                output: 0.0,
                max_tokens: 0.0,
            };
            let mut now = draw(100_000) as f64 / 100.0;
            // Spend the limit down (a completion charge may overdraw it), then retry after.
            state.settle(&limits, Charge::Completion, &size, 0.0, now, now);
            state.settle(
                &limits,
                Charge::Completion,
                &size,
                draw(1000) as f64,
                now,
                now,
            );
            for _ in 0..3 {
                match state.admit(&limits, Charge::Input, &size, now) {
                    Ok(()) => {}
                    Err(Blocked::Wait { retry_after_s, .. }) => {
                        now += retry_after_s;
                        assert_eq!(
                            state.admit(&limits, Charge::Input, &size, now),
                            Ok(()),
                            "case {case}: {limits:?} {size:?} back at {now}"
                        );
                    }
                    Err(blocked) => panic!("case {case}: {blocked:?}"),
                }
            }
        }
    }

    /// Of several limits without room, the one whose room comes last answers, in whichever
    /// order the endpoint lists them; times a rounding error past a millisecond are not
    /// rounded up to the next.
    #[test]
    fn the_limit_that_refuses_is_the_last_to_have_room_in_any_order() {
        let requests = limit(Unit::Requests, 2.0, 10.0, Reset::Fixed);
        let tokens = limit(Unit::Tokens, 3000.0, 60.0, Reset::Rolling);
        let size = CallSize {
            input: 1000.0,
            output: 200.0,
            max_tokens: 500.0,
        };
        for (limits, tokens_index) in [([requests, tokens], 1), ([tokens, requests], 0)] {
            let mut state = Limits::new(&limits);
            for t in [0.0, 1.0] {
                assert_eq!(state.admit(&limits, Charge::Admission, &size, t), Ok(()));
            }
            // Requests come back at 10 s, tokens (3000 − 3000 + 2 s × 50/s = 100; 1500 needed)
            // at 2 + 1400/50 = 30 s.
            assert_eq!(
                state.admit(&limits, Charge::Admission, &size, 2.0),
                Err(Blocked::Wait {
                    index: tokens_index,
                    retry_after_s: 28.0
                })
            );
        }
        let limits = [limit(Unit::Requests, 6.0, 60.0, Reset::Rolling)];
        let mut state = Limits::new(&limits);
        for _ in 0..6 {
            assert!(state.admit(&limits, Charge::Admission, &size, 0.0).is_ok());
        }
        // 10 s a request, less the 0.6 s since: 9.4, not 9.401.
        let Err(Blocked::Wait { retry_after_s, .. }) =
            state.admit(&limits, Charge::Admission, &size, 0.6)
        else {
            panic!("refused")
        };
        assert_eq!(retry_after_s, 9.4);
    }

    #[test]
    fn a_request_larger_than_the_limit_is_never_admitted() {
        let limits = [limit(Unit::Tokens, 500.0, 60.0, Reset::Rolling)];
        let mut state = Limits::new(&limits);
        assert_eq!(
            state.admit(&limits, Charge::Admission, &SIZE, 0.0),
            Err(Blocked::TooLarge { index: 0 })
        );
    }

    #[test]
    fn a_completion_charge_is_taken_at_the_end_and_may_overdraw() {
        let limits = [limit(Unit::Tokens, 1000.0, 60.0, Reset::Rolling)];
        let mut state = Limits::new(&limits);
        assert!(state.admit(&limits, Charge::Completion, &SIZE, 0.0).is_ok());
        assert!(state.admit(&limits, Charge::Completion, &SIZE, 0.0).is_ok());
        state.settle(&limits, Charge::Completion, &SIZE, 100.0, 0.0, 0.0);
        state.settle(&limits, Charge::Completion, &SIZE, 100.0, 0.0, 0.0);
        // 1000 - 2·700 = -400: the next needs a positive allowance, 401 tokens away.
        let Err(Blocked::Wait { retry_after_s, .. }) =
            state.admit(&limits, Charge::Completion, &SIZE, 0.0)
        else {
            panic!("refused")
        };
        assert!((retry_after_s - 401.0 * 60.0 / 1000.0).abs() < 1e-9);
    }
}
