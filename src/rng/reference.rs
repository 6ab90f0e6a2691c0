//! The reference's random-number scheme, for exact replay.
//!
//! Every stream is a fresh Mersenne Twister seeded the way CPython seeds `random.Random(key)`
//! from a string key: the big-endian integer of `utf8(key) ‖ SHA-512(utf8(key))`, split into
//! 32-bit words least significant first, fed to MT19937's `init_by_array`. Draws follow CPython:
//! `random()` takes 53 bits from two outputs, and `gauss` uses its Box–Muller form (cosine half).
//! Keys are the reference's strings, e.g. `"20260917:fast-flaky:3"` (Appendix A).

use super::{RandomSource, Stream};

/// The reference scheme for one run seed.
#[derive(Clone, Debug)]
pub struct Reference {
    seed: u64,
    endpoint_ids: Vec<String>,
}

impl Reference {
    /// A source for run seed `seed` over endpoints with these ids (in world order).
    pub fn new<'a>(seed: u64, endpoint_ids: impl IntoIterator<Item = &'a str>) -> Reference {
        Reference {
            seed,
            endpoint_ids: endpoint_ids.into_iter().map(str::to_string).collect(),
        }
    }
}

impl RandomSource for Reference {
    const REPLAYS_REFERENCE: bool = true;
    type Stream = PyRandom;
    fn request(&self, endpoint: usize, ordinal: u64) -> PyRandom {
        let id = &self.endpoint_ids[endpoint];
        PyRandom::from_key(&format!("{}:{id}:{ordinal}", self.seed))
    }
    fn storm(&self, endpoint: usize, window: u64) -> PyRandom {
        let id = &self.endpoint_ids[endpoint];
        PyRandom::from_key(&format!("{}:{id}:storm:{window}", self.seed))
    }
    fn acquire(&self, job: u32, step: u32, attempt: u32) -> PyRandom {
        PyRandom::from_key(&format!("{}:acquire:{job}:{step}:{attempt}", self.seed))
    }
    fn retry(&self, job: u32, step: u32, attempt: u32) -> PyRandom {
        PyRandom::from_key(&format!("{}:retry:{job}:{step}:{attempt}", self.seed))
    }
    /// The reference has no open loop; arrivals get a key in the same style.
    fn arrival(&self, index: u64) -> PyRandom {
        PyRandom::from_key(&format!("{}:arrival:{index}", self.seed))
    }
    /// The reference has no pause between jobs; it gets a key in the same style.
    fn think(&self, job: u32) -> PyRandom {
        PyRandom::from_key(&format!("{}:think:{job}", self.seed))
    }
    /// The reference has no throttling; its decisions get a key in the same style.
    fn throttle(&self, job: u32, step: u32, attempt: u32, call: u32) -> PyRandom {
        PyRandom::from_key(&format!(
            "{}:throttle:{job}:{step}:{attempt}:{call}",
            self.seed
        ))
    }
    /// The reference has no token sizes; they get a key in the same style.
    fn sizes(&self, job: u32, step: u32, call: u32) -> PyRandom {
        PyRandom::from_key(&format!("{}:sizes:{job}:{step}:{call}", self.seed))
    }
}

/// CPython's `random.Random`: MT19937 with its seeding and float conversions.
#[derive(Clone)]
pub struct PyRandom {
    mt: Box<[u32; N]>,
    index: usize,
}

impl std::fmt::Debug for PyRandom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PyRandom")
            .field("index", &self.index)
            .finish()
    }
}

const N: usize = 624;
const M: usize = 397;

impl PyRandom {
    /// Seeds as `random.Random(key)` does for a `str` key.
    pub fn from_key(key: &str) -> PyRandom {
        let mut bytes = key.as_bytes().to_vec();
        bytes.extend_from_slice(&sha512(key.as_bytes()));
        PyRandom::from_big_endian(&bytes)
    }

    /// Seeds with the non-negative integer whose big-endian bytes are `bytes`.
    fn from_big_endian(bytes: &[u8]) -> PyRandom {
        let mut words: Vec<u32> = bytes
            .rchunks(4)
            .map(|chunk| chunk.iter().fold(0u32, |w, &b| w << 8 | u32::from(b)))
            .collect();
        while words.len() > 1 && words.last() == Some(&0) {
            words.pop();
        }
        if words.is_empty() {
            words.push(0);
        }
        let mut rng = PyRandom::init_genrand(19_650_218);
        rng.init_by_array(&words);
        rng
    }

    fn init_genrand(seed: u32) -> PyRandom {
        let mut mt = Box::new([0u32; N]);
        mt[0] = seed;
        for i in 1..N {
            mt[i] = 1_812_433_253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        PyRandom { mt, index: N }
    }

    fn init_by_array(&mut self, key: &[u32]) {
        let mt = &mut self.mt;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        self.index = N;
    }

    fn twist(&mut self) {
        let mt = &mut self.mt;
        for k in 0..N {
            let y = (mt[k] & 0x8000_0000) | (mt[(k + 1) % N] & 0x7fff_ffff);
            let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
            mt[k] = mt[(k + M) % N] ^ (y >> 1) ^ mag;
        }
        self.index = 0;
    }

    /// The next 32-bit output (`genrand_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random.random()`: 53 random bits as a float in `[0, 1)`.
    pub fn random(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }
}

impl Stream for PyRandom {
    fn uniform(&mut self) -> f64 {
        self.random()
    }
    /// `random.gauss(0, 1)` on a fresh stream: the cosine half of Box–Muller.
    fn gauss(&mut self) -> f64 {
        let x2pi = self.random() * std::f64::consts::TAU;
        let g2rad = (-2.0 * (1.0 - self.random()).ln()).sqrt();
        x2pi.cos() * g2rad
    }
}

/// SHA-512 (FIPS 180-4) of `message`; only used to seed streams, so simplicity beats speed.
pub fn sha512(message: &[u8]) -> [u8; 64] {
    let mut h: [u64; 8] = [
        0x6a09e667f3bcc908,
        0xbb67ae8584caa73b,
        0x3c6ef372fe94f82b,
        0xa54ff53a5f1d36f1,
        0x510e527fade682d1,
        0x9b05688c2b3e6c1f,
        0x1f83d9abfb41bd6b,
        0x5be0cd19137e2179,
    ];
    let mut padded = message.to_vec();
    padded.push(0x80);
    while padded.len() % 128 != 112 {
        padded.push(0);
    }
    padded.extend_from_slice(&((message.len() as u128) * 8).to_be_bytes());
    for block in padded.chunks_exact(128) {
        compress(&mut h, block);
    }
    let mut out = [0u8; 64];
    for (chunk, word) in out.chunks_exact_mut(8).zip(h) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

fn compress(h: &mut [u64; 8], block: &[u8]) {
    let mut w = [0u64; 80];
    for (t, chunk) in block.chunks_exact(8).enumerate() {
        w[t] = u64::from_be_bytes(chunk.try_into().expect("8 bytes"));
    }
    for t in 16..80 {
        let s0 = w[t - 15].rotate_right(1) ^ w[t - 15].rotate_right(8) ^ (w[t - 15] >> 7);
        let s1 = w[t - 2].rotate_right(19) ^ w[t - 2].rotate_right(61) ^ (w[t - 2] >> 6);
        w[t] = w[t - 16]
            .wrapping_add(s0)
            .wrapping_add(w[t - 7])
            .wrapping_add(s1);
    }
    let mut v = *h;
    for t in 0..80 {
        let [a, b, c, d, e, f, g, hh] = v;
        let s1 = e.rotate_right(14) ^ e.rotate_right(18) ^ e.rotate_right(41);
        let ch = (e & f) ^ (!e & g);
        let t1 = hh
            .wrapping_add(s1)
            .wrapping_add(ch)
            .wrapping_add(K[t])
            .wrapping_add(w[t]);
        let s0 = a.rotate_right(28) ^ a.rotate_right(34) ^ a.rotate_right(39);
        let maj = (a & b) ^ (a & c) ^ (b & c);
        let t2 = s0.wrapping_add(maj);
        v = [t1.wrapping_add(t2), a, b, c, d.wrapping_add(t1), e, f, g];
    }
    for (x, y) in h.iter_mut().zip(v) {
        *x = x.wrapping_add(y);
    }
}

const K: [u64; 80] = [
    0x428a2f98d728ae22,
    0x7137449123ef65cd,
    0xb5c0fbcfec4d3b2f,
    0xe9b5dba58189dbbc,
    0x3956c25bf348b538,
    0x59f111f1b605d019,
    0x923f82a4af194f9b,
    0xab1c5ed5da6d8118,
    0xd807aa98a3030242,
    0x12835b0145706fbe,
    0x243185be4ee4b28c,
    0x550c7dc3d5ffb4e2,
    0x72be5d74f27b896f,
    0x80deb1fe3b1696b1,
    0x9bdc06a725c71235,
    0xc19bf174cf692694,
    0xe49b69c19ef14ad2,
    0xefbe4786384f25e3,
    0x0fc19dc68b8cd5b5,
    0x240ca1cc77ac9c65,
    0x2de92c6f592b0275,
    0x4a7484aa6ea6e483,
    0x5cb0a9dcbd41fbd4,
    0x76f988da831153b5,
    0x983e5152ee66dfab,
    0xa831c66d2db43210,
    0xb00327c898fb213f,
    0xbf597fc7beef0ee4,
    0xc6e00bf33da88fc2,
    0xd5a79147930aa725,
    0x06ca6351e003826f,
    0x142929670a0e6e70,
    0x27b70a8546d22ffc,
    0x2e1b21385c26c926,
    0x4d2c6dfc5ac42aed,
    0x53380d139d95b3df,
    0x650a73548baf63de,
    0x766a0abb3c77b2a8,
    0x81c2c92e47edaee6,
    0x92722c851482353b,
    0xa2bfe8a14cf10364,
    0xa81a664bbc423001,
    0xc24b8b70d0f89791,
    0xc76c51a30654be30,
    0xd192e819d6ef5218,
    0xd69906245565a910,
    0xf40e35855771202a,
    0x106aa07032bbd1b8,
    0x19a4c116b8d2d0c8,
    0x1e376c085141ab53,
    0x2748774cdf8eeb99,
    0x34b0bcb5e19b48a8,
    0x391c0cb3c5c95a63,
    0x4ed8aa4ae3418acb,
    0x5b9cca4f7763e373,
    0x682e6ff3d6b2b8a3,
    0x748f82ee5defb2fc,
    0x78a5636f43172f60,
    0x84c87814a1f0ab72,
    0x8cc702081a6439ec,
    0x90befffa23631e28,
    0xa4506cebde82bde9,
    0xbef9a3f7b2c67915,
    0xc67178f2e372532b,
    0xca273eceea26619c,
    0xd186b8c721c0c207,
    0xeada7dd6cde0eb1e,
    0xf57d4f7fee6ed178,
    0x06f067aa72176fba,
    0x0a637dc5a2c898a6,
    0x113f9804bef90dae,
    0x1b710b35131c471b,
    0x28db77f523047d84,
    0x32caab7b40c72493,
    0x3c9ebe0a15c9bebc,
    0x431d67c49c100d4c,
    0x4cc5d4becb3e42b6,
    0x597f299cfc657e2a,
    0x5fcb6fab3ad6faec,
    0x6c44198c4a475817,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn sha512_known_answers() {
        // FIPS 180-4 example and values printed by Python's hashlib.
        assert_eq!(
            hex(&sha512(b"abc")),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a\
             2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
        );
        assert_eq!(&hex(&sha512(b""))[..32], "cf83e1357eefb8bdf1542850d66d8007");
        assert_eq!(
            &hex(&sha512(&[b'a'; 200]))[..32],
            "4b11459c33f52a22ee8236782714c150"
        );
    }

    #[test]
    fn seeding_matches_cpython() {
        // random.Random(key).random() in CPython 3.11.
        assert_eq!(PyRandom::from_key("x").random(), 0.6307877176639078);
        assert_eq!(PyRandom::from_key("").random(), 0.9602256525641875);
        let mut r = PyRandom::from_key("20260917:fast-flaky:1");
        assert_eq!(r.gauss(), 0.12929121439017338);
        assert_eq!(r.random(), 0.7853817887923188);
    }

    #[test]
    fn appendix_a_check_values() {
        let source = Reference::new(20260917, ["fast-flaky", "slow-steady", "metered"]);
        // Latencies of fast-flaky's first three requests: 0.25·exp(0.5·Z), no tail hit.
        let latencies: Vec<f64> = (1..=3)
            .map(|ordinal| {
                let mut s = source.request(0, ordinal);
                let v = 0.25 * (0.5 * s.gauss()).exp();
                assert!(s.uniform() >= 0.02);
                v
            })
            .collect();
        assert_eq!(
            latencies,
            [0.2666952244777152, 0.24487793723761872, 0.29032740642935323]
        );
        assert_eq!(source.retry(0, 0, 1).uniform() * 0.5, 0.41053004205581467);
        assert_eq!(source.acquire(0, 0, 1).uniform(), 0.3200576249200515);
        // Storm windows of fast-flaky below 60 start at 0, 19, 42, 52, 57 (§2.6).
        let storms: Vec<u64> = (0..60)
            .filter(|&k| source.storm(0, k).uniform() < 0.08)
            .collect();
        assert_eq!(storms, [0, 19, 42, 52, 57]);
    }
}
