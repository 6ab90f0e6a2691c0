//! The world's provider answering real requests: the same [`Provider`] a simulation drives
//! from its event heap, driven here by whoever says what time it is. Pure like the provider:
//! every call takes the current simulated time, so the server feeds it a (scaled) real clock
//! and the tests a made-up one.

use crate::provider::{Arrival, FailureKind, Provider, Refusal, Rejection};
use crate::rng::{Native, RandomSource};
use crate::tokens::{CallSize, LimitHeader};
use crate::world::World;

/// Output tokens of an answer in a world without `[tokens]` when the request sets no
/// `max_tokens`.
pub const DEFAULT_OUTPUT: u32 = 16;

/// An admitted request: how long it takes, how it ends, what it writes.
#[derive(Clone, Debug, PartialEq)]
pub struct Admission {
    /// Endpoint index.
    pub endpoint: usize,
    /// Service time \[s, simulated\].
    pub latency_s: f64,
    /// Time to first token \[s, simulated\]; the whole latency in a world without `[tokens]`.
    pub ttft_s: f64,
    /// How it fails once served, if it does.
    pub failure: Option<FailureKind>,
    /// Output tokens written by the end.
    pub output: u32,
    /// The sizes the limits were charged for, in a world with `[tokens]`.
    pub size: Option<CallSize>,
}

impl Admission {
    /// Output tokens written `elapsed_s` after admission (all at the end without `[tokens]`).
    pub fn written_by(&self, elapsed_s: f64) -> u32 {
        if elapsed_s >= self.latency_s {
            return self.output;
        }
        let decode_s = self.latency_s - self.ttft_s;
        if elapsed_s <= self.ttft_s || decode_s <= 0.0 {
            return 0;
        }
        (f64::from(self.output) * (elapsed_s - self.ttft_s) / decode_s).floor() as u32
    }
}

/// The provider's answer at arrival.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// A 429 (or "overloaded"), with its Retry-After \[s, simulated\].
    Refused {
        /// Which limit.
        refusal: Refusal,
        /// Retry-After.
        retry_after_s: f64,
    },
    /// Turned away by an incident.
    Rejected(Rejection),
    /// Admitted.
    Admitted(Admission),
}

/// The served world.
pub struct Emulator<'w> {
    world: &'w World,
    provider: Provider<'w>,
    rng: Native,
    requests: u64,
}

impl<'w> Emulator<'w> {
    /// The provider of `world`, its dice keyed by `seed`.
    pub fn new(world: &'w World, seed: u64) -> Emulator<'w> {
        Emulator {
            world,
            provider: Provider::new(world),
            rng: Native::new(seed, world.endpoints().iter().map(|e| e.id.as_str())),
            requests: 0,
        }
    }

    /// The world served.
    pub fn world(&self) -> &'w World {
        self.world
    }

    /// The index of the endpoint with id `id`.
    pub fn endpoint(&self, id: &str) -> Option<usize> {
        self.world.endpoints().iter().position(|e| e.id == id)
    }

    /// A request of `prompt` tokens asking at most `max_tokens` arrives at endpoint `e` at
    /// `now`; returns the verdict and the endpoint's rate-limit headers after it.
    pub fn arrive(
        &mut self,
        e: usize,
        now: f64,
        prompt: u32,
        max_tokens: Option<u32>,
    ) -> (Verdict, Vec<LimitHeader>) {
        self.requests += 1;
        let size = self.world.tokens().map(|t| {
            // A request's own stream: the n-th request served draws as job n would.
            let job = (self.requests % u64::from(u32::MAX)) as u32;
            let mut stream = self.rng.sizes(job, 0, 0);
            let cap = max_tokens.map_or(t.max_tokens, f64::from);
            CallSize {
                input: f64::from(prompt.max(1)),
                output: t.output.sample(&mut stream).min(cap),
                max_tokens: cap,
            }
        });
        let arrival = self
            .provider
            .arrive(e, now, &self.rng, false, size.as_ref());
        let verdict = match arrival {
            Arrival::Refused {
                refusal,
                retry_after_s,
            } => Verdict::Refused {
                refusal,
                retry_after_s,
            },
            Arrival::Rejected(r) => Verdict::Rejected(r),
            Arrival::Admitted {
                latency_s,
                failure,
                usage,
                ..
            } => Verdict::Admitted(Admission {
                endpoint: e,
                latency_s,
                ttft_s: usage.map_or(latency_s, |u| u.ttft_s.min(latency_s)),
                failure,
                output: size.map_or(max_tokens.unwrap_or(DEFAULT_OUTPUT), |s| s.output as u32),
                size,
            }),
        };
        (verdict, self.headers(e, now))
    }

    /// An admitted request, admitted at `admitted_s`, ended at `now` having written `written`
    /// tokens (fewer than its output when the client went away first); `failed` when it ended
    /// in a failure.
    pub fn finish(
        &mut self,
        admission: &Admission,
        admitted_s: f64,
        now: f64,
        written: u32,
        failed: bool,
    ) {
        self.provider.finish(admission.endpoint, failed);
        if let Some(size) = &admission.size {
            let written = f64::from(written);
            let e = admission.endpoint;
            self.provider.settle(e, size, written, admitted_s, now);
        }
    }

    /// Endpoint `e`'s rate-limit headers at `now` (an answer sent later than the admission
    /// carries the state it is sent in).
    pub fn headers(&mut self, e: usize, now: f64) -> Vec<LimitHeader> {
        let mut out = Vec::new();
        self.provider.limit_headers(e, now, &mut out);
        out
    }

    /// Requests in flight at endpoint `e`.
    pub fn in_flight(&self, e: usize) -> u32 {
        self.provider.in_flight(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile;

    #[test]
    fn the_served_provider_refuses_beyond_capacity_and_frees_on_finish() {
        let world = compile::builtin_bursty();
        let mut emulator = Emulator::new(&world, 1);
        let capacity = world.endpoints()[0].capacity;
        let mut admitted = Vec::new();
        let mut refused = 0;
        for _ in 0..capacity * 3 {
            match emulator.arrive(0, 0.0, 10, None).0 {
                Verdict::Admitted(a) => admitted.push(a),
                Verdict::Refused { retry_after_s, .. } => {
                    assert!(retry_after_s >= 0.0);
                    refused += 1;
                }
                Verdict::Rejected(_) => panic!("no incident at t = 0"),
            }
        }
        assert!(refused > 0 && !admitted.is_empty());
        assert_eq!(emulator.in_flight(0) as usize, admitted.len());
        for a in &admitted {
            assert_eq!(a.output, DEFAULT_OUTPUT);
            assert!(a.latency_s > 0.0);
            emulator.finish(a, 0.0, a.latency_s, a.output, a.failure.is_some());
        }
        assert_eq!(emulator.in_flight(0), 0);
    }

    #[test]
    fn tokens_are_written_after_the_first_and_all_by_the_end() {
        let a = Admission {
            endpoint: 0,
            latency_s: 3.0,
            ttft_s: 1.0,
            failure: None,
            output: 100,
            size: None,
        };
        assert_eq!(a.written_by(0.5), 0);
        assert_eq!(a.written_by(2.0), 50);
        assert_eq!(a.written_by(3.0), 100);
    }
}
