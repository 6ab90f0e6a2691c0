//! The keys of LLM worlds, as written: `[tokens]` (request sizes), and per endpoint `limits`,
//! `token_charge`, `price`, `saturated` and `client_cap` (see [`super::Endpoint`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Request sizes in tokens: every call sends `input` prompt tokens and asks for `max_tokens`;
/// the model writes `output` tokens (at most `max_tokens`). Draws are per (job, step, call), the
/// same for every strategy and every retry. Default: absent (a world without tokens).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tokens {
    /// Prompt tokens of one call. Required.
    pub input: Size,

    /// Output tokens the model writes for one call (capped at `max_tokens`). Required.
    pub output: Size,

    /// The `max_tokens` the client asks for. An admission charge counts it in full until the
    /// request ends. Required; an integer from 1 to 10000000.
    #[schemars(range(min = 1, max = 10_000_000))]
    pub max_tokens: u32,

    /// `"fixed"` (default): every step sends its own prompt. `"grows"`: an agent loop, where
    /// step k of a job also sends the outputs of its steps 0 to k − 1 again.
    #[serde(default)]
    pub context: Context,

    /// The client gives up on a request after this many seconds (a read timeout); the tokens
    /// the provider spent on it are wasted. Default: absent (no client timeout); must be > 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    #[schemars(range(max = 1e9))]
    pub request_timeout_s: Option<f64>,
}

/// Whether a job's later steps send its earlier outputs again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Context {
    /// Each step's prompt stands alone.
    #[default]
    Fixed,
    /// Step k also sends the outputs of steps 0..k (an agent loop).
    Grows,
}

/// A distribution of token counts, rounded to whole tokens (at least 1). `distribution` picks
/// the shape and the keys it needs: `"constant"` (`value`), `"uniform"` (`min`, `max`),
/// `"lognormal"` (`median`, `sigma`) or `"empirical"` (`quantiles`).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Size {
    /// The shape: `"constant"`, `"uniform"`, `"lognormal"` or `"empirical"`. Required.
    pub distribution: SizeShape,

    /// Tokens of the `"constant"` shape. Must be >= 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1e8))]
    pub value: Option<f64>,

    /// Smallest draw of the `"uniform"` shape (rounded up to a whole number). Must be >= 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1e8))]
    pub min: Option<f64>,

    /// Largest draw of the `"uniform"` shape (rounded down to a whole number); must be >= `min`.
    /// Each whole number from `min` to `max` is drawn equally often.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1e8))]
    pub max: Option<f64>,

    /// Median of the `"lognormal"` shape. Must be >= 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1e8))]
    pub median: Option<f64>,

    /// Spread of the `"lognormal"` shape: the standard deviation of the logarithm. Range 0 to 5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 5))]
    pub sigma: Option<f64>,

    /// Points `[quantile, tokens]` of the `"empirical"` shape, read as a piecewise-linear
    /// inverse CDF: quantiles rise from 0 to 1 (first 0, last 1), tokens never fall. At least 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 100_000))]
    pub quantiles: Option<Vec<[f64; 2]>>,

    /// The `"empirical"` shape's points as a CSV file of `quantile,tokens` rows (an optional
    /// header line, `#` comments), its path relative to the file that names it, like
    /// `extends`. Read when the world is loaded, as if its rows were written as `quantiles`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub quantiles_csv: Option<String>,
}

/// The shape of a size distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SizeShape {
    /// Always `value`.
    Constant,
    /// Uniform between `min` and `max`.
    Uniform,
    /// `median · exp(sigma · Z)`.
    Lognormal,
    /// Through the written `quantiles`.
    Empirical,
}

impl SizeShape {
    /// The keys the shape needs, then every size key, in the order they are documented.
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            SizeShape::Constant => &["value"],
            SizeShape::Uniform => &["min", "max"],
            SizeShape::Lognormal => &["median", "sigma"],
            SizeShape::Empirical => &["quantiles"],
        }
    }
    /// Every shape-specific key.
    pub const ALL_KEYS: [&'static str; 6] = ["value", "min", "max", "median", "sigma", "quantiles"];
    /// The name written in files.
    pub fn name(self) -> &'static str {
        match self {
            SizeShape::Constant => "constant",
            SizeShape::Uniform => "uniform",
            SizeShape::Lognormal => "lognormal",
            SizeShape::Empirical => "empirical",
        }
    }
}

/// One published limit, e.g. `{ unit = "tokens", limit = 400000, per = "minute" }`. Give the
/// window as `per` or as `window_s`, not both.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limit {
    /// What it counts: `"requests"`, `"input_tokens"`, `"output_tokens"` or `"tokens"` (input
    /// plus output). Token units need `[tokens]`. Required.
    pub unit: LimitUnit,

    /// How much per window. Required; must be >= 1.
    #[schemars(range(min = 1, max = 1e15))]
    pub limit: f64,

    /// The window by name: `"second"`, `"minute"`, `"hour"` or `"day"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per: Option<Per>,

    /// The window in seconds, for any other length. Range 0.001 to 1000000000 (Retry-After is
    /// given in whole milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.001, max = 1e9))]
    pub window_s: Option<f64>,

    /// How the allowance comes back: `"rolling"` (continuously, limit / window per second, up
    /// to limit; how the large vendors describe per-minute limits) or `"fixed"` (all at once at
    /// every multiple of the window, like a daily quota). Default: `"rolling"` for windows under
    /// a day, `"fixed"` for a day or longer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset: Option<ResetKind>,
}

/// What a limit counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LimitUnit {
    /// Requests.
    Requests,
    /// Prompt tokens.
    InputTokens,
    /// Output tokens.
    OutputTokens,
    /// Prompt plus output tokens.
    Tokens,
}

/// A named window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// 1 s.
    Second,
    /// 60 s.
    Minute,
    /// 3,600 s.
    Hour,
    /// 86,400 s.
    Day,
}

impl Per {
    /// The window in seconds.
    pub fn seconds(self) -> f64 {
        match self {
            Per::Second => 1.0,
            Per::Minute => 60.0,
            Per::Hour => 3600.0,
            Per::Day => 86_400.0,
        }
    }
}

/// How a limit's allowance returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResetKind {
    /// Continuously.
    Rolling,
    /// At every multiple of the window.
    Fixed,
}

/// When tokens are charged against the token limits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TokenCharge {
    /// At admission, prompt plus `max_tokens`; the unused part of `max_tokens` is given back
    /// when the request ends.
    #[default]
    Admission,
    /// At admission, the prompt only; output tokens never count.
    Input,
    /// When the request ends, prompt plus the output written; admission needs a positive
    /// allowance.
    Completion,
}

/// Price per million tokens, in any currency (reports say "cost" without a unit).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million prompt tokens. Required; must be >= 0.
    #[schemars(range(min = 0, max = 1e6))]
    pub input_per_mtok: f64,

    /// Per million output tokens. Required; must be >= 0.
    #[schemars(range(min = 0, max = 1e6))]
    pub output_per_mtok: f64,

    /// Per million prompt tokens served from the endpoint's reuse cache. Default: the same as
    /// `input_per_mtok`; must be >= 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1e6))]
    pub cached_input_per_mtok: Option<f64>,
}

/// What a saturated endpoint answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Saturated {
    /// HTTP 429 with `provider.capacity_retry_after_s` (the default).
    #[default]
    RateLimit,
    /// "Overloaded" (HTTP 529/503): an error without Retry-After.
    Overloaded,
}
