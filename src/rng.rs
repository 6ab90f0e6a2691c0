//! Keyed random streams: the only place that builds generators.
//!
//! Every draw in a run comes from a stream keyed by the logical identity of what it decides —
//! a request (endpoint, ordinal), a storm window (endpoint, window), an attempt's acquire or retry
//! decision (job, step, attempt), a throttling decision (job, step, attempt, call) — never by
//! worker or by order of events. Two algorithms run on the same seed therefore meet the same
//! dice and the same weather (common random numbers).
//!
//! [`RandomSource`] is the seam: the simulator is generic over it. [`Native`] is the fast default
//! (SplitMix64-mixed keys seeding Xoshiro256++); a second scheme that replays the reference's
//! own generator can sit beside it without touching the engine.

pub mod reference;

use std::convert::Infallible;

use rand::{RngExt, TryRng};
use rand_distr::{Distribution, StandardNormal};

/// A stream of draws for one decision.
pub trait Stream {
    /// A uniform draw in `[0, 1)`.
    fn uniform(&mut self) -> f64;
    /// A standard normal draw.
    fn gauss(&mut self) -> f64;
}

/// What a run's streams are keyed by; one implementation per random-number scheme.
pub trait RandomSource {
    /// Whether this scheme replays the reference exactly, which needs every sample kept for
    /// exact percentiles; other schemes bound a run's samples (`metrics::Samples::bounded`).
    const REPLAYS_REFERENCE: bool = false;
    /// The stream type this scheme hands out.
    type Stream: Stream + Send + 'static;
    /// Stream of the `ordinal`-th request (1-based, refusals included) to `endpoint`.
    fn request(&self, endpoint: usize, ordinal: u64) -> Self::Stream;
    /// Stream deciding whether a storm starts at window `window` of `endpoint`.
    fn storm(&self, endpoint: usize, window: u64) -> Self::Stream;
    /// Stream of an attempt's acquire decisions (job and step 0-based, attempt 1-based).
    fn acquire(&self, job: u32, step: u32, attempt: u32) -> Self::Stream;
    /// Stream of the retry decision after attempt `attempt` fails.
    fn retry(&self, job: u32, step: u32, attempt: u32) -> Self::Stream;
    /// Stream of the gap before open-loop arrival `index` (0-based).
    fn arrival(&self, index: u64) -> Self::Stream;
    /// Stream of a closed-loop worker's pause after job `job` (0-based) ends.
    fn think(&self, job: u32) -> Self::Stream;
    /// Stream of client-side throttling's decision on call `call` (0-based) of an attempt.
    fn throttle(&self, job: u32, step: u32, attempt: u32, call: u32) -> Self::Stream;
    /// Stream of the token sizes of call `call` of step `step` of job `job` (the same for every
    /// attempt, so a retry resends the same request).
    fn sizes(&self, job: u32, step: u32, call: u32) -> Self::Stream;
}

/// The native scheme: keys mixed with SplitMix64, streams drawn from Xoshiro256++.
#[derive(Clone, Debug)]
pub struct Native {
    /// Each domain's key, the first step of every key in it, by domain number.
    domains: [u64; 9],
    /// Per endpoint, the keys of its request and storm streams up to the endpoint (the steps
    /// every one of its streams shares, taken once per run).
    request_keys: Vec<u64>,
    storm_keys: Vec<u64>,
}

const DOMAIN_REQUEST: u64 = 0x7265_7175_6573_7401;
const DOMAIN_STORM: u64 = 0x7374_6f72_6d00_0002;
const DOMAIN_ACQUIRE: u64 = 0x6163_7175_6972_6503;
const DOMAIN_RETRY: u64 = 0x7265_7472_7900_0004;
const DOMAIN_ARRIVAL: u64 = 0x6172_7269_7661_6c05;
const DOMAIN_THROTTLE: u64 = 0x7468_726f_7474_6c06;
const DOMAIN_SIZES: u64 = 0x7369_7a65_7300_0007;
const DOMAIN_THINK: u64 = 0x7468_696e_6b00_0008;
/// Every domain, at the index its low byte names.
const DOMAINS: [u64; 9] = [
    0,
    DOMAIN_REQUEST,
    DOMAIN_STORM,
    DOMAIN_ACQUIRE,
    DOMAIN_RETRY,
    DOMAIN_ARRIVAL,
    DOMAIN_THROTTLE,
    DOMAIN_SIZES,
    DOMAIN_THINK,
];

impl Native {
    /// A source for run seed `seed` over endpoints with these ids (in world order).
    pub fn new<'a>(seed: u64, endpoint_ids: impl IntoIterator<Item = &'a str>) -> Native {
        let domains = DOMAINS.map(|domain| mix64(seed ^ domain));
        let endpoint_keys: Vec<u64> = endpoint_ids.into_iter().map(fnv1a64).collect();
        let keyed = |domain: u64| -> Vec<u64> {
            let first = domains[(domain & 0xff) as usize];
            endpoint_keys.iter().map(|&k| mix64(first ^ k)).collect()
        };
        Native {
            domains,
            request_keys: keyed(DOMAIN_REQUEST),
            storm_keys: keyed(DOMAIN_STORM),
        }
    }

    /// The stream keyed `mix(mix(mix(mix(seed ^ domain) ^ a) ^ b) ^ c)`.
    fn stream(&self, domain: u64, parts: [u64; 3]) -> NativeStream {
        let mut key = self.domains[(domain & 0xff) as usize];
        for part in parts {
            key = mix64(key ^ part);
        }
        NativeStream::from_key(key)
    }

    /// [`Native::stream`] from a key that has taken its domain's and first part's steps.
    fn stream_from(key: u64, b: u64, c: u64) -> NativeStream {
        NativeStream::from_key(mix64(mix64(key ^ b) ^ c))
    }
}

impl RandomSource for Native {
    type Stream = NativeStream;
    // On every request's path: inlined, as a profile-guided build inlines it (docs/performance.md).
    #[inline(always)]
    fn request(&self, endpoint: usize, ordinal: u64) -> NativeStream {
        Native::stream_from(self.request_keys[endpoint], ordinal, 0)
    }
    fn storm(&self, endpoint: usize, window: u64) -> NativeStream {
        Native::stream_from(self.storm_keys[endpoint], window, 0)
    }
    fn acquire(&self, job: u32, step: u32, attempt: u32) -> NativeStream {
        self.stream(DOMAIN_ACQUIRE, [job.into(), step.into(), attempt.into()])
    }
    fn retry(&self, job: u32, step: u32, attempt: u32) -> NativeStream {
        self.stream(DOMAIN_RETRY, [job.into(), step.into(), attempt.into()])
    }
    fn arrival(&self, index: u64) -> NativeStream {
        self.stream(DOMAIN_ARRIVAL, [index, 0, 0])
    }
    fn think(&self, job: u32) -> NativeStream {
        self.stream(DOMAIN_THINK, [job.into(), 0, 0])
    }
    fn throttle(&self, job: u32, step: u32, attempt: u32, call: u32) -> NativeStream {
        let attempt_call = u64::from(attempt) << 32 | u64::from(call);
        self.stream(DOMAIN_THROTTLE, [job.into(), step.into(), attempt_call])
    }
    fn sizes(&self, job: u32, step: u32, call: u32) -> NativeStream {
        self.stream(DOMAIN_SIZES, [job.into(), step.into(), call.into()])
    }
}

/// A native stream: Xoshiro256++ (Blackman and Vigna), draw for draw the generator of
/// `rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(key)` (its state is SplitMix64's first four
/// outputs from `key`). Written out because a run seeds one per request and the library's
/// seeding goes through a byte buffer, a generic fill and an all-zero check, which cost more than
/// the draws of a typical request.
#[derive(Clone, Debug)]
pub struct NativeStream {
    s: [u64; 4],
}

impl NativeStream {
    #[inline]
    fn from_key(key: u64) -> NativeStream {
        let word = |i: u64| mix64(key.wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        NativeStream {
            s: [word(0), word(1), word(2), word(3)],
        }
    }

    #[inline]
    fn next(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }
}

impl TryRng for NativeStream {
    type Error = Infallible;
    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        // The upper bits: the lowest have linear dependencies.
        Ok((self.next() >> 32) as u32)
    }
    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.next())
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let bytes = self.next().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

impl Stream for NativeStream {
    fn uniform(&mut self) -> f64 {
        self.random::<f64>()
    }
    // On every request's path: inlined, as a profile-guided build inlines it (docs/performance.md).
    #[inline(always)]
    fn gauss(&mut self) -> f64 {
        StandardNormal.sample(self)
    }
}

/// The SplitMix64 finaliser: a stable, well-mixing 64-bit hash step.
pub fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a over the bytes of a string: a stable hash (std's hasher is not stable across releases).
pub fn fnv1a64(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Xorshift64 (Marsaglia, 2003) from `state` (not zero): a small generator for the random
/// operations of unit tests, never for a run's draws.
#[cfg(test)]
pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_keyed_not_ordered() {
        let source = Native::new(42, ["a", "b"]);
        let first = source.request(1, 7).uniform();
        let _ = source.request(0, 1).uniform();
        assert_eq!(source.request(1, 7).uniform(), first);
        assert_ne!(source.request(1, 8).uniform(), first);
        assert_ne!(source.request(0, 7).uniform(), first);
        assert_ne!(source.storm(1, 7).uniform(), first);
    }

    #[test]
    fn a_stream_is_seeded_as_the_library_seeds_it() {
        use rand::SeedableRng;
        use rand_xoshiro::Xoshiro256PlusPlus;
        for key in [0, 1, 42, u64::MAX, 0x9E37_79B9_7F4A_7C15, 1 << 63] {
            let mut ours = NativeStream::from_key(key);
            let mut theirs = Xoshiro256PlusPlus::seed_from_u64(key);
            for _ in 0..64 {
                assert_eq!(ours.random::<u64>(), theirs.random::<u64>(), "key {key}");
            }
            assert_eq!(ours.random::<u32>(), theirs.random::<u32>());
            assert_eq!(ours.random::<f64>(), theirs.random::<f64>());
            let (mut a, mut b) = ([0u8; 13], [0u8; 13]);
            rand::Rng::fill_bytes(&mut ours, &mut a);
            rand::Rng::fill_bytes(&mut theirs, &mut b);
            assert_eq!(a, b);
            let z: f64 = StandardNormal.sample(&mut ours);
            let y: f64 = StandardNormal.sample(&mut theirs);
            assert_eq!(z, y);
        }
    }

    #[test]
    fn pinned_values_guard_against_silent_changes() {
        assert_eq!(fnv1a64(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(mix64(0), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn uniform_is_in_unit_interval_and_gauss_is_standard() {
        let source = Native::new(1, ["x"]);
        let (mut sum, mut sum_sq, n) = (0.0, 0.0, 20_000);
        for ordinal in 0..n {
            let mut stream = source.request(0, ordinal);
            let u = stream.uniform();
            assert!((0.0..1.0).contains(&u));
            let z = stream.gauss();
            sum += z;
            sum_sq += z * z;
        }
        let mean = sum / n as f64;
        let var = sum_sq / n as f64 - mean * mean;
        assert!(mean.abs() < 0.03, "mean {mean}");
        assert!((var - 1.0).abs() < 0.05, "variance {var}");
    }
}
