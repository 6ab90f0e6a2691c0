//! Service-time models from served requests' durations.
//!
//! - Sampled latency: a lognormal body with a slow tail, `median · exp(σZ)` times
//!   `tail_factor` with probability `tail_rate` — a two-component mixture in log space with a
//!   shared σ, fitted by expectation–maximisation on a fine histogram (so a million samples cost
//!   no more than ten thousand). Requests the client cut short (its timeout, a hedge's loser)
//!   are right-censored at their duration, not dropped: dropping them would shorten the tail.
//!   The tail is kept only when it earns its two parameters (BIC); an exponential is preferred
//!   when its KS distance is smaller.
//! - Token latency: time to first token `(a + b·input/1000)(1 + c·u)` and decode time per
//!   token `(1 + d·u)/speed` at load `u`, both times the tail, by least squares on the requests
//!   outside the tail.

use super::stats::{self, least_squares, normal_cdf, normal_pdf};

/// Bins of the log-duration histogram.
const BINS: usize = 4096;

/// A fitted sampled latency.
#[derive(Clone, Debug, PartialEq)]
pub enum Sampled {
    /// `median · exp(σZ)`, with the tail.
    Lognormal {
        /// Median of the body \[s\].
        median_s: f64,
        /// σ of the body's logarithm.
        sigma: f64,
        /// Share of requests in the tail (0 when the data show none).
        tail_rate: f64,
        /// The tail's multiplier.
        tail_factor: f64,
    },
    /// Exponential with this mean \[s\].
    Exponential {
        /// Mean \[s\].
        mean_s: f64,
    },
    /// Every request took this long \[s\].
    Constant {
        /// The duration \[s\].
        mean_s: f64,
    },
    /// The served durations' own quantiles, `(quantile, seconds)` from 0 to 1, when no shape
    /// above fits them.
    Empirical {
        /// The points.
        points: Vec<(f64, f64)>,
    },
}

/// The largest KS distance a parametric shape may have before measured quantiles replace it.
pub const MAX_PARAMETRIC_KS: f64 = 0.05;
/// The fewest served durations that measured quantiles rest on (fewer would pin the tail
/// quantiles to a handful of requests).
const MIN_EMPIRICAL_N: usize = 200;
/// The largest share of requests cut short for which the served durations' own quantiles are
/// used: cut-short requests are the slow ones, so more would bias the quantiles low.
const MAX_EMPIRICAL_CENSORED: f64 = 0.01;

/// The quantiles measured points are written at: every 2 % and the far tail.
fn empirical_grid() -> impl Iterator<Item = f64> {
    (0..50)
        .map(|i| f64::from(i) / 50.0)
        .chain([0.99, 0.995, 0.999, 1.0])
}

/// The served durations' quantiles on [`empirical_grid`], and their KS distance to the
/// durations (the piecewise-linear CDF through the points).
fn empirical(sorted: &[f64]) -> (Vec<(f64, f64)>, f64) {
    let points: Vec<(f64, f64)> = empirical_grid()
        .map(|q| (q, stats::quantile(sorted, q)))
        .collect();
    let cdf = |x: f64| {
        let i = points.partition_point(|&(_, v)| v <= x);
        if i == 0 {
            return 0.0;
        }
        if i == points.len() {
            return 1.0;
        }
        let ((q0, v0), (q1, v1)) = (points[i - 1], points[i]);
        q0 + (q1 - q0) * (x - v0) / (v1 - v0)
    };
    let ks = stats::ks_distance(sorted, cdf);
    (points, ks)
}

/// A sampled latency with what it rests on.
#[derive(Clone, Debug, PartialEq)]
pub struct SampledFit {
    /// The model.
    pub model: Sampled,
    /// Served requests used.
    pub n: usize,
    /// Requests the client cut short, used as lower bounds.
    pub censored: usize,
    /// KS distance between the served durations and the model.
    pub ks: f64,
    /// Whether a tail was found (else `tail_rate` is 0).
    pub tail_found: bool,
}

/// Fits `served` durations (> 0; others are ignored) with `censored` lower bounds.
pub fn fit_sampled(served: &[f64], censored: &[f64]) -> Option<SampledFit> {
    let mut sorted: Vec<f64> = served.iter().copied().filter(|d| *d > 0.0).collect();
    if sorted.len() < 2 {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let censored: Vec<f64> = censored.iter().copied().filter(|d| *d > 0.0).collect();
    let n = sorted.len();
    let (lo, hi) = (sorted[0], sorted[n - 1]);
    if hi - lo <= 1e-12 * hi {
        return Some(SampledFit {
            model: Sampled::Constant { mean_s: lo },
            n,
            censored: censored.len(),
            ks: 0.0,
            tail_found: false,
        });
    }
    let hist = Histogram::new(&sorted, &censored);
    let single = hist.em(false);
    let mixed = hist.em(true);
    let bic_gain = 2.0 * (mixed.loglik - single.loglik) - 2.0 * (n as f64).ln();
    let tail_found = mixed.p > 0.0 && mixed.p < 0.5 && bic_gain > 10.0;
    let chosen = if tail_found { mixed } else { single };
    let lognormal = Sampled::Lognormal {
        median_s: chosen.mu0.exp(),
        sigma: chosen.sigma,
        tail_rate: if tail_found { chosen.p } else { 0.0 },
        tail_factor: if tail_found {
            (chosen.mu1 - chosen.mu0).exp()
        } else {
            6.0
        },
    };
    let ks_log = stats::ks_censored(&sorted, &censored, |x| chosen.cdf(x.ln()));
    let mean = (sorted.iter().sum::<f64>() + censored.iter().sum::<f64>()) / n as f64;
    let ks_exp = stats::ks_censored(&sorted, &censored, |x| 1.0 - (-x / mean).exp());
    let (mut model, mut ks, mut tail_found) = if ks_exp < ks_log {
        (Sampled::Exponential { mean_s: mean }, ks_exp, false)
    } else {
        (lognormal, ks_log, tail_found)
    };
    if ks > MAX_PARAMETRIC_KS
        && n >= MIN_EMPIRICAL_N
        && (censored.len() as f64) <= MAX_EMPIRICAL_CENSORED * n as f64
    {
        let (points, measured_ks) = empirical(&sorted);
        if measured_ks < ks {
            (model, ks, tail_found) = (Sampled::Empirical { points }, measured_ks, false);
        }
    }
    Some(SampledFit {
        model,
        n,
        censored: censored.len(),
        ks,
        tail_found,
    })
}

/// Log durations binned on one grid: served counts and censored counts per bin.
struct Histogram {
    lo: f64,
    width: f64,
    served: Vec<f64>,
    censored: Vec<f64>,
    n: f64,
    median: f64,
    mad: f64,
}

/// One EM solution in log space.
#[derive(Clone, Copy, Debug)]
struct Mixture {
    p: f64,
    mu0: f64,
    mu1: f64,
    sigma: f64,
    loglik: f64,
}

impl Mixture {
    fn cdf(&self, y: f64) -> f64 {
        (1.0 - self.p) * normal_cdf((y - self.mu0) / self.sigma)
            + self.p * normal_cdf((y - self.mu1) / self.sigma)
    }
}

impl Histogram {
    fn new(sorted: &[f64], censored: &[f64]) -> Histogram {
        let logs: Vec<f64> = sorted.iter().map(|d| d.ln()).collect();
        let lo = logs[0].min(censored.iter().fold(f64::INFINITY, |m, d| m.min(d.ln())));
        let hi = logs[logs.len() - 1].max(
            censored
                .iter()
                .fold(f64::NEG_INFINITY, |m, d| m.max(d.ln())),
        );
        let width = ((hi - lo) / BINS as f64).max(1e-12);
        let bin = |y: f64| (((y - lo) / width) as usize).min(BINS - 1);
        let mut served = vec![0.0; BINS];
        for y in &logs {
            served[bin(*y)] += 1.0;
        }
        let mut cut = vec![0.0; BINS];
        for d in censored {
            cut[bin(d.ln())] += 1.0;
        }
        let median = stats::quantile(&logs, 0.5);
        let mut dev: Vec<f64> = logs.iter().map(|y| (y - median).abs()).collect();
        dev.sort_by(f64::total_cmp);
        Histogram {
            lo,
            width,
            served,
            censored: cut,
            n: logs.len() as f64 + censored.len() as f64,
            median,
            mad: stats::quantile(&dev, 0.5),
        }
    }

    fn center(&self, b: usize) -> f64 {
        self.lo + (b as f64 + 0.5) * self.width
    }

    /// EM from a robust start; without `tail` the mixture weight stays 0.
    fn em(&self, tail: bool) -> Mixture {
        let sigma0 = (1.4826 * self.mad).max(self.width);
        let mut m = Mixture {
            p: if tail { 0.02 } else { 0.0 },
            mu0: self.median,
            mu1: self.median + (3.0 * sigma0).max(3f64.ln()),
            sigma: sigma0,
            loglik: f64::NEG_INFINITY,
        };
        for _ in 0..500 {
            let next = self.step(&m, tail);
            let converged = (next.loglik - m.loglik).abs() < 1e-10 * self.n;
            m = next;
            if converged || !m.sigma.is_finite() {
                break;
            }
        }
        if m.mu1 < m.mu0 {
            m = Mixture {
                p: 1.0 - m.p,
                mu0: m.mu1,
                mu1: m.mu0,
                ..m
            };
        }
        m
    }

    /// One expectation–maximisation step; the returned log-likelihood is that of `m`.
    fn step(&self, m: &Mixture, tail: bool) -> Mixture {
        let s = m.sigma;
        let (mut n1, mut s0, mut s1, mut q0, mut q1, mut n0) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        let mut loglik = 0.0;
        for b in 0..BINS {
            let (c, cut) = (self.served[b], self.censored[b]);
            if c == 0.0 && cut == 0.0 {
                continue;
            }
            let y = self.center(b);
            if c > 0.0 {
                let l0 = (1.0 - m.p) * normal_pdf((y - m.mu0) / s) / s;
                let l1 = m.p * normal_pdf((y - m.mu1) / s) / s;
                let total = (l0 + l1).max(f64::MIN_POSITIVE);
                let r1 = l1 / total;
                loglik += c * total.ln();
                n0 += c * (1.0 - r1);
                n1 += c * r1;
                s0 += c * (1.0 - r1) * y;
                s1 += c * r1 * y;
                q0 += c * (1.0 - r1) * y * y;
                q1 += c * r1 * y * y;
            }
            if cut > 0.0 {
                let moments = |mu: f64| {
                    let a = (y - mu) / s;
                    let surv = (1.0 - normal_cdf(a)).max(1e-300);
                    let lambda = normal_pdf(a) / surv;
                    (
                        surv,
                        mu + s * lambda,
                        mu * mu + s * s + s * lambda * (mu + y),
                    )
                };
                let (sv0, e0, e20) = moments(m.mu0);
                let (sv1, e1, e21) = moments(m.mu1);
                let (w0, w1) = ((1.0 - m.p) * sv0, m.p * sv1);
                let total = (w0 + w1).max(f64::MIN_POSITIVE);
                let r1 = w1 / total;
                loglik += cut * total.ln();
                n0 += cut * (1.0 - r1);
                n1 += cut * r1;
                s0 += cut * (1.0 - r1) * e0;
                s1 += cut * r1 * e1;
                q0 += cut * (1.0 - r1) * e20;
                q1 += cut * r1 * e21;
            }
        }
        let n = n0 + n1;
        let mu0 = s0 / n0.max(f64::MIN_POSITIVE);
        let (p, mu1) = if tail && n1 > 1e-9 {
            (n1 / n, s1 / n1)
        } else {
            (0.0, m.mu1)
        };
        let ss = q0 - 2.0 * mu0 * s0
            + mu0 * mu0 * n0
            + if p > 0.0 {
                q1 - 2.0 * mu1 * s1 + mu1 * mu1 * n1
            } else {
                0.0
            };
        // Sheppard's correction for the histogram's bin width.
        let var = (ss / n - self.width * self.width / 12.0).max(self.width * self.width);
        Mixture {
            p,
            mu0,
            mu1,
            sigma: var.sqrt(),
            loglik,
        }
    }
}

/// One served request of a token world, for [`fit_tokens`].
#[derive(Clone, Copy, Debug)]
pub struct TokenSample {
    /// Prompt tokens.
    pub input: f64,
    /// Output tokens written.
    pub output: f64,
    /// Time to first token \[s\].
    pub ttft: f64,
    /// Whole duration \[s\].
    pub latency: f64,
    /// The endpoint's load at admission: requests already in flight over its capacity.
    pub load: f64,
}

/// The fitted token latency.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenFit {
    /// Idle time to first token of an empty prompt \[s\].
    pub ttft_s: f64,
    /// Extra per 1,000 prompt tokens \[s\].
    pub ttft_per_1k_input_s: f64,
    /// Growth of the time to first token at full load.
    pub ttft_load: f64,
    /// Idle decode speed \[tokens/s\].
    pub decode_tokens_per_s: f64,
    /// Slowdown of a stream at full load.
    pub load_slowdown: f64,
    /// Share of requests in the tail.
    pub tail_rate: f64,
    /// The tail's multiplier.
    pub tail_factor: f64,
    /// Requests used.
    pub n: usize,
    /// Median relative error of the model's time to first token outside the tail.
    pub ttft_error: f64,
    /// Median relative error of the model's duration outside the tail.
    pub latency_error: f64,
}

impl TokenFit {
    /// The model's time to first token of `s` outside the tail \[s\].
    pub fn ttft_of(&self, s: &TokenSample) -> f64 {
        ((self.ttft_s + self.ttft_per_1k_input_s * s.input / 1000.0)
            * (1.0 + self.ttft_load * s.load))
            .max(1e-12)
    }
}

/// A request is in the tail when its time to first token is this many times the model's.
const TAIL_RATIO: f64 = 1.5;

/// Fits the token latency; `None` when the samples cannot pin it (too few, no decode time, or
/// a singular design such as a constant prompt and no load).
pub fn fit_tokens(samples: &[TokenSample]) -> Option<TokenFit> {
    let usable: Vec<&TokenSample> = samples
        .iter()
        .filter(|s| s.output > 0.0 && s.latency > s.ttft && s.ttft > 0.0)
        .collect();
    if usable.len() < 20 {
        return None;
    }
    let mut body: Vec<bool> = vec![true; usable.len()];
    let mut ttft_beta = vec![0.0; 4];
    for _ in 0..5 {
        let rows = ttft_rows(&usable, &body);
        ttft_beta = least_squares(&rows).or_else(|| {
            // A constant prompt or no load: drop the columns that cannot be told apart.
            let reduced: Vec<_> = rows.iter().map(|(x, y)| (vec![x[0], x[2]], *y)).collect();
            least_squares(&reduced).map(|b| vec![b[0], 0.0, b[1], 0.0])
        })?;
        let next: Vec<bool> = usable
            .iter()
            .map(|s| s.ttft < TAIL_RATIO * predict_ttft(&ttft_beta, s))
            .collect();
        if next == body {
            break;
        }
        body = next;
    }
    let decode_rows: Vec<(Vec<f64>, f64)> = usable
        .iter()
        .zip(&body)
        .filter(|(_, b)| **b)
        .map(|(s, _)| (vec![1.0, s.load], (s.latency - s.ttft) / s.output))
        .collect();
    let decode = least_squares(&decode_rows)
        .or_else(|| {
            let mean = decode_rows.iter().map(|r| r.1).sum::<f64>() / decode_rows.len() as f64;
            Some(vec![mean, 0.0])
        })
        .filter(|d| d[0] > 0.0)?;
    let a = ttft_beta[0].max(0.0);
    let b = ttft_beta[1].max(0.0);
    let c = if a > 1e-12 { ttft_beta[2] / a } else { 0.0 }.max(0.0);
    let speed = 1.0 / decode[0];
    let slowdown = (decode[1] / decode[0]).max(0.0);
    let ratios: Vec<f64> = usable
        .iter()
        .zip(&body)
        .filter(|(_, b)| !**b)
        .map(|(s, _)| s.ttft / predict_ttft(&ttft_beta, s))
        .collect();
    let tail_rate = ratios.len() as f64 / usable.len() as f64;
    let mut sorted = ratios.clone();
    sorted.sort_by(f64::total_cmp);
    let tail_factor = if sorted.is_empty() {
        6.0
    } else {
        stats::quantile(&sorted, 0.5)
    };
    let model = |s: &TokenSample| {
        let ttft = (a + b * s.input) * (1.0 + c * s.load);
        (ttft, ttft + s.output * (1.0 + slowdown * s.load) / speed)
    };
    let mut ttft_err = Vec::new();
    let mut lat_err = Vec::new();
    for (s, _) in usable.iter().zip(&body).filter(|(_, b)| **b) {
        let (t, l) = model(s);
        ttft_err.push((s.ttft / t - 1.0).abs());
        lat_err.push((s.latency / l - 1.0).abs());
    }
    ttft_err.sort_by(f64::total_cmp);
    lat_err.sort_by(f64::total_cmp);
    Some(TokenFit {
        ttft_s: a,
        ttft_per_1k_input_s: b * 1000.0,
        ttft_load: c,
        decode_tokens_per_s: speed,
        load_slowdown: slowdown,
        tail_rate,
        tail_factor: tail_factor.max(1.0),
        n: usable.len(),
        ttft_error: stats::quantile(&ttft_err, 0.5),
        latency_error: stats::quantile(&lat_err, 0.5),
    })
}

/// `ttft = a + b·x + (ac)·u + (bc)·x·u`: linear in four coefficients.
fn ttft_rows(samples: &[&TokenSample], body: &[bool]) -> Vec<(Vec<f64>, f64)> {
    samples
        .iter()
        .zip(body)
        .filter(|(_, b)| **b)
        .map(|(s, _)| (vec![1.0, s.input, s.load, s.input * s.load], s.ttft))
        .collect()
}

fn predict_ttft(beta: &[f64], s: &TokenSample) -> f64 {
    (beta[0] + beta[1] * s.input + beta[2] * s.load + beta[3] * s.input * s.load).max(1e-12)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Native, RandomSource, Stream};

    fn draws(n: u64, median: f64, sigma: f64, tail_rate: f64, factor: f64) -> Vec<f64> {
        let rng = Native::new(11, ["a"]);
        (0..n)
            .map(|i| {
                let mut s = rng.request(0, i);
                let tail = if s.uniform() < tail_rate { factor } else { 1.0 };
                median * (sigma * s.gauss()).exp() * tail
            })
            .collect()
    }

    #[test]
    fn a_lognormal_with_a_tail_is_recovered() {
        let data = draws(20_000, 0.25, 0.5, 0.02, 5.0);
        let fit = fit_sampled(&data, &[]).expect("fits");
        let Sampled::Lognormal {
            median_s,
            sigma,
            tail_rate,
            tail_factor,
        } = fit.model
        else {
            panic!("{fit:?}")
        };
        assert!((median_s / 0.25 - 1.0).abs() < 0.02, "{fit:?}");
        assert!((sigma / 0.5 - 1.0).abs() < 0.03, "{fit:?}");
        assert!((tail_rate - 0.02).abs() < 0.006, "{fit:?}");
        assert!((tail_factor / 5.0 - 1.0).abs() < 0.2, "{fit:?}");
        assert!(fit.tail_found && fit.ks < 0.02, "{fit:?}");
    }

    #[test]
    fn censoring_the_slowest_requests_does_not_shorten_the_fit() {
        let data = draws(20_000, 1.0, 0.4, 0.0, 1.0);
        let cut = 1.5;
        let (served, censored): (Vec<f64>, Vec<f64>) = data.iter().partition(|d| **d < cut);
        let censored = vec![cut; censored.len()];
        let fit = fit_sampled(&served, &censored).expect("fits");
        let Sampled::Lognormal {
            median_s, sigma, ..
        } = fit.model
        else {
            panic!("{fit:?}")
        };
        assert!(
            (median_s - 1.0).abs() < 0.02 && (sigma / 0.4 - 1.0).abs() < 0.04,
            "{fit:?}"
        );
        // Dropping them instead would bias the fit down: a narrower lognormal, or (as here,
        // where the cut makes no lognormal fit) quantiles that stop at the cut.
        let naive = fit_sampled(&served, &[]).unwrap();
        match &naive.model {
            Sampled::Lognormal { sigma: s2, .. } => assert!(*s2 < 0.37, "{naive:?}"),
            Sampled::Empirical { points } => {
                assert!(points.iter().all(|p| p.1 <= cut), "{naive:?}")
            }
            _ => panic!("{naive:?}"),
        }
    }

    #[test]
    fn exponential_service_is_told_from_lognormal() {
        let rng = Native::new(3, ["a"]);
        let data: Vec<f64> = (0..5000)
            .map(|i| -0.2 * (1.0 - rng.request(0, i).uniform()).ln())
            .collect();
        let fit = fit_sampled(&data, &[]).unwrap();
        let Sampled::Exponential { mean_s } = fit.model else {
            panic!("{fit:?}")
        };
        assert!((mean_s / 0.2 - 1.0).abs() < 0.05);
    }

    #[test]
    fn token_latency_is_recovered_from_exact_samples() {
        let rng = Native::new(5, ["a"]);
        let samples: Vec<TokenSample> = (0..2000)
            .map(|i| {
                let mut s = rng.request(0, i);
                let (input, output, load) = (
                    200.0 + 2000.0 * s.uniform(),
                    (50.0 + 500.0 * s.uniform()).round(),
                    s.uniform(),
                );
                let tail = if s.uniform() < 0.02 { 4.0 } else { 1.0 };
                let ttft = (0.4 + 0.15 * input / 1000.0) * (1.0 + 0.5 * load);
                let latency = (ttft + output * (1.0 + 0.3 * load) / 60.0) * tail;
                TokenSample {
                    input,
                    output,
                    ttft: ttft * tail,
                    latency,
                    load,
                }
            })
            .collect();
        let fit = fit_tokens(&samples).expect("fits");
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-6;
        assert!(
            close(fit.ttft_s, 0.4) && close(fit.ttft_per_1k_input_s, 0.15),
            "{fit:?}"
        );
        assert!(
            close(fit.ttft_load, 0.5) && close(fit.decode_tokens_per_s, 60.0),
            "{fit:?}"
        );
        assert!(
            close(fit.load_slowdown, 0.3) && close(fit.tail_factor, 4.0),
            "{fit:?}"
        );
        assert!((fit.tail_rate - 0.02).abs() < 0.01, "{fit:?}");
    }

    /// Two service paths (half fast, half slow) fit no lognormal: the fit keeps the
    /// durations' own quantiles, which find both modes; one lognormal stays a lognormal.
    #[test]
    fn a_bimodal_latency_is_kept_as_measured_quantiles() {
        let served: Vec<f64> = (0..4000)
            .map(|i| {
                let u = (f64::from(i) + 0.5) / 4000.0;
                if i % 2 == 0 {
                    0.1 + 0.05 * u
                } else {
                    1.0 + 0.3 * u
                }
            })
            .collect();
        let fit = fit_sampled(&served, &[]).expect("fits");
        let Sampled::Empirical { points } = &fit.model else {
            panic!("expected measured quantiles: {fit:?}");
        };
        assert!(fit.ks < MAX_PARAMETRIC_KS, "{fit:?}");
        let at = |q: f64| {
            points
                .iter()
                .find(|p| (p.0 - q).abs() < 1e-9)
                .expect("grid")
                .1
        };
        assert!(at(0.4) < 0.16 && at(0.6) > 1.0, "{points:?}");
        assert_eq!(points.first().map(|p| p.0), Some(0.0));
        assert_eq!(points.last().map(|p| p.0), Some(1.0));
        // Cut short often, the served durations are not the whole story: no quantiles.
        let censored = vec![2.0; 400];
        let fit = fit_sampled(&served, &censored).expect("fits");
        assert!(!matches!(fit.model, Sampled::Empirical { .. }), "{fit:?}");
    }
}
