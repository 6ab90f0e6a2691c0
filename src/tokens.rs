//! The token model of LLM worlds, compiled: request sizes, limits counted in tokens, latency
//! from tokens and load, and price.
//!
//! A world without `[tokens]` has none of it and behaves exactly as before. Sizes are drawn per
//! (job, step, call) from a keyed stream, so every strategy sends the same requests for the same
//! job (common random numbers), and a retry resends the same request.

use crate::rng::{RandomSource, Stream};

/// The world's request sizes (`[tokens]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Tokens {
    /// Prompt tokens of one call (before any grown context).
    pub input: Size,
    /// Output tokens the model would write, capped at `max_tokens`.
    pub output: Size,
    /// The `max_tokens` the client asks for; an admission charge counts it in full.
    pub max_tokens: f64,
    /// Whether step k of a job sends the outputs of its earlier steps again (an agent loop).
    pub context_grows: bool,
    /// The client gives up on a request after this long \[s\]; the tokens the provider spent on
    /// it are wasted.
    pub request_timeout_s: Option<f64>,
}

/// A distribution of token counts. Draws are rounded to whole tokens, at least 1.
#[derive(Clone, Debug, PartialEq)]
pub enum Size {
    /// Always this many.
    Constant(f64),
    /// Each whole number from `min` to `max` (both whole, inclusive; compiled from the written
    /// bounds rounded inwards) equally likely.
    Uniform {
        /// Smallest.
        min: f64,
        /// Largest.
        max: f64,
    },
    /// `median · exp(sigma · Z)`.
    Lognormal {
        /// Median.
        median: f64,
        /// Standard deviation of the logarithm.
        sigma: f64,
    },
    /// Piecewise-linear inverse CDF through `(quantile, tokens)` points, quantiles from 0 to 1.
    Empirical(Vec<(f64, f64)>),
}

impl Size {
    /// One draw from `stream` (one uniform, or one normal for a lognormal; none for a constant).
    pub fn sample(&self, stream: &mut impl Stream) -> f64 {
        let raw = match self {
            Size::Constant(n) => *n,
            // Not a continuous draw rounded: that would give the two ends half a share each.
            Size::Uniform { min, max } => (min + (max - min + 1.0) * stream.uniform())
                .floor()
                .min(*max),
            Size::Lognormal { median, sigma } => median * (sigma * stream.gauss()).exp(),
            Size::Empirical(points) => inverse_cdf(points, stream.uniform()),
        };
        raw.round().max(1.0)
    }

    /// The mean of the distribution before rounding (for documentation and checks).
    pub fn mean(&self) -> f64 {
        match self {
            Size::Constant(n) => *n,
            Size::Uniform { min, max } => (min + max) / 2.0,
            Size::Lognormal { median, sigma } => median * (sigma * sigma / 2.0).exp(),
            Size::Empirical(points) => points_mean(points),
        }
    }
}

/// The mean of the piecewise-linear inverse CDF through `points` (quantiles from 0 to 1).
pub fn points_mean(points: &[(f64, f64)]) -> f64 {
    points
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
        .sum()
}

/// Linear interpolation of `points` (sorted by quantile, from 0 to 1) at `u`.
pub(crate) fn inverse_cdf(points: &[(f64, f64)], u: f64) -> f64 {
    let i = points
        .partition_point(|&(q, _)| q <= u)
        .clamp(1, points.len() - 1);
    let ((q0, v0), (q1, v1)) = (points[i - 1], points[i]);
    if q1 <= q0 {
        v1
    } else {
        v0 + (v1 - v0) * ((u - q0) / (q1 - q0)).clamp(0.0, 1.0)
    }
}

/// The sizes of one call.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CallSize {
    /// Prompt tokens sent, grown context included.
    pub input: f64,
    /// Output tokens the provider writes if the request runs to the end.
    pub output: f64,
    /// The `max_tokens` asked for.
    pub max_tokens: f64,
}

impl Tokens {
    /// The sizes of call `call` of step `step` of job `job`: its own draw, plus, when the
    /// context grows, the outputs of the same call at every earlier step.
    #[inline(never)]
    pub fn call_size<R: RandomSource>(&self, rng: &R, job: u32, step: u32, call: u32) -> CallSize {
        let (input, output) = self.draw(rng, job, step, call);
        let grown: f64 = if self.context_grows {
            (0..step).map(|k| self.draw(rng, job, k, call).1).sum()
        } else {
            0.0
        };
        CallSize {
            input: input + grown,
            output,
            max_tokens: self.max_tokens,
        }
    }

    fn draw<R: RandomSource>(&self, rng: &R, job: u32, step: u32, call: u32) -> (f64, f64) {
        let mut stream = rng.sizes(job, step, call);
        let input = self.input.sample(&mut stream);
        let output = self.output.sample(&mut stream).min(self.max_tokens);
        (input, output)
    }
}

/// Latency of an LLM endpoint from tokens and load.
///
/// With `n` streams in flight on the endpoint (this one included) and an effective capacity `C`,
/// the load is `u = (n − 1) / C`, and
///
/// - time to first token: `ttft = (ttft_s + ttft_per_1k_input_s · input / 1000) · (1 + ttft_load · u)`;
/// - decode speed per stream: `speed = decode_tokens_per_s / (1 + load_slowdown · u)`;
/// - service time: `ttft + output / speed`.
///
/// The load is read once, when the request is admitted. The slow tail multiplies the whole.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenLatency {
    /// Time to first token of an empty prompt on an idle endpoint \[s\].
    pub ttft_s: f64,
    /// Extra time to first token per 1,000 prompt tokens \[s\].
    pub ttft_per_1k_input_s: f64,
    /// How much the time to first token grows at full load (`u = 1`).
    pub ttft_load: f64,
    /// Output tokens per second of one stream on an idle endpoint.
    pub decode_tokens_per_s: f64,
    /// How much each stream slows at full load (`u = 1`).
    pub load_slowdown: f64,
}

impl TokenLatency {
    /// `(time to first token, seconds per output token)` for `input` tokens at load `u`.
    pub fn timing(&self, input: f64, u: f64) -> (f64, f64) {
        let ttft =
            (self.ttft_s + self.ttft_per_1k_input_s * input / 1000.0) * (1.0 + self.ttft_load * u);
        let per_token = (1.0 + self.load_slowdown * u) / self.decode_tokens_per_s;
        (ttft, per_token)
    }
}

/// What a limit counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Requests.
    Requests,
    /// Prompt tokens.
    InputTokens,
    /// Output tokens.
    OutputTokens,
    /// Prompt plus output tokens.
    Tokens,
}

impl Unit {
    /// The name used in scenario files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Requests => "requests",
            Unit::InputTokens => "input_tokens",
            Unit::OutputTokens => "output_tokens",
            Unit::Tokens => "tokens",
        }
    }

    /// The suffix of its `x-ratelimit-*-SUFFIX` headers (OpenAI's names).
    pub fn header_suffix(self) -> &'static str {
        match self {
            Unit::Requests => "requests",
            Unit::InputTokens => "input-tokens",
            Unit::OutputTokens => "output-tokens",
            Unit::Tokens => "tokens",
        }
    }
}

/// How a limit's allowance comes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reset {
    /// Continuously, `limit / window_s` per second up to `limit` (a token bucket; how the
    /// large vendors describe their per-minute limits).
    Rolling,
    /// All at once at every multiple of `window_s` (a calendar quota, such as a daily one).
    Fixed,
}

/// One published limit of an endpoint.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limit {
    /// What it counts.
    pub unit: Unit,
    /// How much per window.
    pub limit: f64,
    /// The window \[s\].
    pub window_s: f64,
    /// How the allowance returns.
    pub reset: Reset,
}

impl Limit {
    /// A day or longer: reported as a daily quota.
    pub fn is_daily(&self) -> bool {
        self.window_s >= 86_400.0
    }

    /// Whether instants `a` and `b` fall in one window of a fixed limit. Always for a rolling
    /// one: its charges fade out as it refills rather than vanish at a boundary.
    pub fn same_window(&self, a: f64, b: f64) -> bool {
        self.reset == Reset::Rolling || (a / self.window_s).floor() == (b / self.window_s).floor()
    }
}

/// One limit's state as a response's `x-ratelimit-*` headers carry it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LimitHeader {
    /// What the limit counts.
    pub unit: Unit,
    /// `x-ratelimit-limit-*`: the whole allowance per window.
    pub limit: f64,
    /// `x-ratelimit-remaining-*`: what is left now.
    pub remaining: f64,
    /// `x-ratelimit-reset-*`: seconds until the allowance is whole again \[s\].
    pub reset_s: f64,
}

impl Unit {
    /// What a client expects a request of `input` prompt tokens asking `max_tokens` to take
    /// from a limit counting this unit, before it knows the output: the vendors' admission
    /// charge (prompt plus `max_tokens`), the most any charge takes.
    pub fn demand(self, input: f64, max_tokens: f64) -> f64 {
        match self {
            Unit::Requests => 1.0,
            Unit::InputTokens => input,
            Unit::OutputTokens => max_tokens,
            Unit::Tokens => input + max_tokens,
        }
    }
}

/// When an endpoint charges tokens against its token limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charge {
    /// At admission, prompt plus `max_tokens`; the unused part of `max_tokens` comes back when
    /// the request completes.
    Admission,
    /// At admission, the prompt only; output tokens never count.
    Input,
    /// When the request ends, prompt plus the output written; admission needs only a positive
    /// allowance.
    Completion,
}

impl Charge {
    /// What admission takes from a limit counting `unit`.
    pub fn at_admission(self, unit: Unit, size: &CallSize) -> f64 {
        match (unit, self) {
            (Unit::Requests, _) => 1.0,
            (_, Charge::Completion) => 0.0,
            (Unit::InputTokens, _) | (Unit::Tokens, Charge::Input) => size.input,
            (Unit::OutputTokens, Charge::Input) => 0.0,
            (Unit::OutputTokens, Charge::Admission) => size.max_tokens,
            (Unit::Tokens, Charge::Admission) => size.input + size.max_tokens,
        }
    }

    /// What the end of a request that wrote `written` output tokens adds to a limit counting
    /// `unit` (negative: given back).
    pub fn at_end(self, unit: Unit, size: &CallSize, written: f64) -> f64 {
        match (unit, self) {
            (Unit::Requests, _) | (_, Charge::Input) => 0.0,
            (Unit::InputTokens, Charge::Admission) => 0.0,
            (Unit::OutputTokens, Charge::Admission) | (Unit::Tokens, Charge::Admission) => {
                written - size.max_tokens
            }
            (Unit::InputTokens, Charge::Completion) => size.input,
            (Unit::OutputTokens, Charge::Completion) => written,
            (Unit::Tokens, Charge::Completion) => size.input + written,
        }
    }
}

/// An endpoint's price, in currency units per million tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    /// Per million prompt tokens.
    pub input_per_mtok: f64,
    /// Per million output tokens.
    pub output_per_mtok: f64,
    /// Per million prompt tokens served from the reuse cache.
    pub cached_input_per_mtok: f64,
}

impl Price {
    /// The cost of `input` prompt tokens (cached or not) and `output` output tokens.
    pub fn cost(&self, input: f64, cached: bool, output: f64) -> f64 {
        let per_input = if cached {
            self.cached_input_per_mtok
        } else {
            self.input_per_mtok
        };
        (input * per_input + output * self.output_per_mtok) / 1e6
    }
}

/// What a saturated endpoint answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Saturation {
    /// HTTP 429 with the provider's capacity Retry-After (the reference's behaviour).
    #[default]
    RateLimit,
    /// "Overloaded" (HTTP 529 or 503), an error without Retry-After.
    Overloaded,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Native;

    #[test]
    fn empirical_sizes_interpolate_their_quantiles() {
        let points = vec![(0.0, 100.0), (0.5, 200.0), (1.0, 1000.0)];
        assert_eq!(inverse_cdf(&points, 0.0), 100.0);
        assert_eq!(inverse_cdf(&points, 0.25), 150.0);
        assert_eq!(inverse_cdf(&points, 0.5), 200.0);
        assert_eq!(inverse_cdf(&points, 0.75), 600.0);
        assert!((inverse_cdf(&points, 0.999_999) - 999.9984).abs() < 1e-9);
        assert_eq!(Size::Empirical(points).mean(), 0.5 * 150.0 + 0.5 * 600.0);
    }

    #[test]
    fn sizes_are_keyed_by_the_call_and_context_grows_by_earlier_outputs() {
        let rng = Native::new(7, ["a"]);
        let tokens = Tokens {
            input: Size::Uniform {
                min: 100.0,
                max: 200.0,
            },
            output: Size::Lognormal {
                median: 50.0,
                sigma: 0.5,
            },
            max_tokens: 80.0,
            context_grows: true,
            request_timeout_s: None,
        };
        let a = tokens.call_size(&rng, 3, 2, 0);
        assert_eq!(a, tokens.call_size(&rng, 3, 2, 0), "same call, same sizes");
        let flat = Tokens {
            context_grows: false,
            ..tokens.clone()
        };
        let own = flat.call_size(&rng, 3, 2, 0);
        let earlier: f64 = (0..2).map(|k| flat.call_size(&rng, 3, k, 0).output).sum();
        assert_eq!(a.input, own.input + earlier);
        assert!(
            (1.0..=80.0).contains(&a.output),
            "output capped at max_tokens"
        );
        assert!((100.0..=200.0).contains(&own.input));
    }

    #[test]
    fn a_uniform_size_draws_every_whole_number_equally_often() {
        let rng = Native::new(11, ["a"]);
        let size = Size::Uniform { min: 1.0, max: 3.0 };
        let mut counts = [0u32; 4];
        let n = 30_000;
        for job in 0..n {
            let draw = size.sample(&mut rng.sizes(job, 0, 0));
            assert!(draw.fract() == 0.0 && (1.0..=3.0).contains(&draw), "{draw}");
            counts[draw as usize] += 1;
        }
        // A continuous draw rounded would give 1, 2 and 3 in proportions 1 : 2 : 1.
        for (k, &count) in counts.iter().enumerate().skip(1) {
            let share = f64::from(count) / f64::from(n);
            assert!((share - 1.0 / 3.0).abs() < 0.01, "{k}: {share}");
        }
        let one = Size::Uniform { min: 5.0, max: 5.0 };
        assert_eq!(one.sample(&mut rng.sizes(0, 0, 0)), 5.0);
    }

    #[test]
    fn charges_follow_the_mode() {
        let size = CallSize {
            input: 1000.0,
            output: 200.0,
            max_tokens: 500.0,
        };
        let admission = Charge::Admission;
        assert_eq!(admission.at_admission(Unit::Tokens, &size), 1500.0);
        assert_eq!(admission.at_end(Unit::Tokens, &size, 200.0), -300.0);
        assert_eq!(admission.at_admission(Unit::Requests, &size), 1.0);
        assert_eq!(Charge::Input.at_admission(Unit::Tokens, &size), 1000.0);
        assert_eq!(Charge::Input.at_admission(Unit::OutputTokens, &size), 0.0);
        assert_eq!(Charge::Completion.at_admission(Unit::Tokens, &size), 0.0);
        assert_eq!(
            Charge::Completion.at_end(Unit::Tokens, &size, 120.0),
            1120.0
        );
    }

    #[test]
    fn latency_grows_with_prompt_and_load() {
        let model = TokenLatency {
            ttft_s: 0.2,
            ttft_per_1k_input_s: 0.1,
            ttft_load: 1.0,
            decode_tokens_per_s: 50.0,
            load_slowdown: 0.5,
        };
        let (ttft, per) = model.timing(2000.0, 0.0);
        assert!((ttft - 0.4).abs() < 1e-12 && (per - 0.02).abs() < 1e-12);
        let (ttft, per) = model.timing(2000.0, 1.0);
        assert!((ttft - 0.8).abs() < 1e-12 && (per - 0.03).abs() < 1e-12);
    }
}
