//! Error rates and storms from the served requests' failures over time.
//!
//! Storms cluster errors in time, so the failures of one endpoint are binned and fitted with a
//! two-state hidden Markov model (calm and storm, each with its own error rate; Baum–Welch).
//! The storm share of time and the mean storm length then give the world's storm parameters:
//! with checks every `c` seconds, a storm starting at each with probability `q` and lasting
//! `d = m·c`, the share in storm is `1 − (1 − q)^m` and a chain of overlapping storms lasts
//! `c·((1 − q)^−m − 1)/q` on average (the wait for `m` checks in a row without a start).

/// Width of a bin \[s\].
pub const BIN_S: f64 = 2.0;

/// The storm check interval written to fitted worlds \[s\] (the format's default; only the
/// share in storm and the storms' length can be identified, and any interval reproduces both).
pub const CHECK_S: f64 = 10.0;

/// The failures of one endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct FailureFit {
    /// Served requests.
    pub n: u64,
    /// Failed among them.
    pub failed: u64,
    /// Error rate outside storms (all of them when no storm was found).
    pub error_rate: f64,
    /// Storms, when the data show them.
    pub storms: Option<Storms>,
    /// The log-likelihood of the binned failures under this fit.
    pub loglik: f64,
}

/// Fitted storm parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Storms {
    /// Probability of a storm starting at each check.
    pub storm_rate: f64,
    /// Length of one storm \[s\].
    pub duration_s: f64,
    /// Error rate inside a storm.
    pub error_rate: f64,
    /// Share of time in storm.
    pub share: f64,
    /// Mean length of a storm chain \[s\].
    pub mean_chain_s: f64,
    /// Log-likelihood gain over a constant error rate.
    pub loglik_gain: f64,
    /// The check interval \[s\]: [`CHECK_S`] when fitted.
    pub check_s: f64,
    /// Whether the timing (rate, interval, length) is a prior's that the logs do not
    /// contradict, not the logs' own.
    pub from_prior: bool,
    /// With a prior: the logs' own share in storm and mean chain \[s\], when they found storms.
    pub logs_own: Option<(f64, f64)>,
}

/// Storm timing from outside the logs: the team's own world.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StormPrior {
    pub storm_rate: f64,
    pub check_s: f64,
    pub duration_s: f64,
}

/// Fits one endpoint from its served requests per segment: `(start time, failed)`.
pub fn fit(segments: &[Vec<(f64, bool)>]) -> FailureFit {
    let n: u64 = segments.iter().map(|s| s.len() as u64).sum();
    let failed: u64 = segments.iter().flatten().filter(|x| x.1).count() as u64;
    let overall = if n > 0 { failed as f64 / n as f64 } else { 0.0 };
    let bins: Vec<Vec<(f64, f64)>> = segments.iter().map(|s| bin(s)).collect();
    let flat: f64 = bins
        .iter()
        .flatten()
        .map(|(k, x)| binomial_ll(*k, *x, overall))
        .sum();
    let calm = FailureFit {
        n,
        failed,
        error_rate: overall,
        storms: None,
        loglik: flat,
    };
    if failed < 10 {
        return calm;
    }
    let model = baum_welch(&bins, overall);
    let gain = model.loglik - flat;
    let (p0, p1) = (model.p[0], model.p[1]);
    let share = model.stationary_storm();
    // A storm must stand out: a clearly higher rate, some time in it, and a likelihood gain
    // worth its three parameters.
    let found =
        p1 > 1.5 * p0 + 0.01 && share > 0.002 && share < 0.9 && gain > 3.0 * (n as f64).ln();
    if !found {
        return calm;
    }
    let chain_s = BIN_S / model.a[1][0].max(1e-12);
    let storms = storm_parameters(share, chain_s, p1, gain);
    FailureFit {
        n,
        failed,
        error_rate: p0,
        storms: Some(storms),
        loglik: model.loglik,
    }
}

/// The fit with the storms' timing held at `prior` and only the two error rates estimated,
/// when the logs do not contradict it: the fit's own timing must gain two parameters' worth
/// (`2 ln n`) of log-likelihood over it. A client that stops calling an endpoint in a storm
/// (a breaker, a backoff) never sees how long the storm lasts, so its logs cannot tell the
/// length, and the team's world is then the better guess. `None` when the logs contradict it.
pub fn with_prior(
    segments: &[Vec<(f64, bool)>],
    fitted: &FailureFit,
    prior: StormPrior,
) -> Option<FailureFit> {
    let m = prior.duration_s / prior.check_s;
    if fitted.failed < 10 || prior.storm_rate <= 0.0 || m <= 0.0 {
        return None;
    }
    let q = prior.storm_rate.min(1.0);
    let share = 1.0 - (1.0 - q).powf(m);
    let chain_s = if q < 1.0 {
        prior.check_s * ((1.0 - q).powf(-m) - 1.0) / q
    } else {
        f64::INFINITY
    };
    if !(share > 0.0 && share < 1.0 && chain_s.is_finite()) {
        return None;
    }
    let down = (BIN_S / chain_s).min(1.0);
    let up = (share * down / (1.0 - share)).min(1.0);
    let bins: Vec<Vec<(f64, f64)>> = segments.iter().map(|s| bin(s)).collect();
    let overall = fitted.failed as f64 / fitted.n as f64;
    let mut hmm = Hmm {
        p: [overall * 0.5, (overall * 4.0).clamp(0.05, 0.9)],
        a: [[1.0 - up, up], [down, 1.0 - down]],
        start: [1.0 - share, share],
        loglik: f64::NEG_INFINITY,
    };
    for _ in 0..200 {
        let next = em_step(&hmm, &bins);
        let done = (next.loglik - hmm.loglik).abs() < 1e-7;
        hmm = Hmm {
            p: next.p,
            loglik: next.loglik,
            ..hmm
        };
        if done {
            break;
        }
    }
    // The last step's likelihood is of the rates before it; score the rates kept.
    hmm.loglik = em_step(&hmm, &bins).loglik;
    let n = fitted.n as f64;
    if fitted.loglik - hmm.loglik >= 2.0 * n.ln() || hmm.p[1] <= hmm.p[0] {
        return None;
    }
    let flat: f64 = bins
        .iter()
        .flatten()
        .map(|(k, x)| binomial_ll(*k, *x, overall))
        .sum();
    Some(FailureFit {
        error_rate: hmm.p[0],
        storms: Some(Storms {
            storm_rate: q,
            duration_s: prior.duration_s,
            error_rate: hmm.p[1],
            share,
            mean_chain_s: chain_s,
            loglik_gain: hmm.loglik - flat,
            check_s: prior.check_s,
            from_prior: true,
            logs_own: fitted.storms.as_ref().map(|s| (s.share, s.mean_chain_s)),
        }),
        loglik: hmm.loglik,
        ..fitted.clone()
    })
}

/// `(q, d)` from the share in storm and the mean chain length, with checks every [`CHECK_S`].
fn storm_parameters(share: f64, chain_s: f64, error_rate: f64, gain: f64) -> Storms {
    let c = CHECK_S;
    // (1 − q)^−m = 1/(1 − share), so chain = c · share / ((1 − share) q).
    let q = (c * share / ((1.0 - share) * chain_s)).clamp(1e-6, 1.0);
    let m = if q < 1.0 {
        ((1.0 - share).ln() / (1.0 - q).ln()).max(0.1)
    } else {
        chain_s / c
    };
    Storms {
        storm_rate: q,
        duration_s: m * c,
        error_rate,
        share,
        mean_chain_s: chain_s,
        loglik_gain: gain,
        check_s: CHECK_S,
        from_prior: false,
        logs_own: None,
    }
}

/// `(requests, failures)` per bin, from the segment's first request.
fn bin(requests: &[(f64, bool)]) -> Vec<(f64, f64)> {
    let Some(first) = requests.iter().map(|r| r.0).reduce(f64::min) else {
        return Vec::new();
    };
    let last = requests.iter().map(|r| r.0).fold(first, f64::max);
    let count = ((last - first) / BIN_S) as usize + 1;
    let mut bins = vec![(0.0, 0.0); count];
    for (t, failed) in requests {
        let b = (((t - first) / BIN_S) as usize).min(count - 1);
        bins[b].0 += 1.0;
        bins[b].1 += f64::from(u8::from(*failed));
    }
    bins
}

fn binomial_ll(k: f64, x: f64, p: f64) -> f64 {
    let p = p.clamp(1e-12, 1.0 - 1e-12);
    x * p.ln() + (k - x) * (1.0 - p).ln()
}

/// A two-state hidden Markov model: state 0 calm, 1 storm.
#[derive(Clone, Debug)]
struct Hmm {
    p: [f64; 2],
    a: [[f64; 2]; 2],
    start: [f64; 2],
    loglik: f64,
}

impl Hmm {
    fn stationary_storm(&self) -> f64 {
        let (up, down) = (self.a[0][1], self.a[1][0]);
        if up + down <= 0.0 {
            0.0
        } else {
            up / (up + down)
        }
    }
}

fn baum_welch(sequences: &[Vec<(f64, f64)>], overall: f64) -> Hmm {
    let mut m = Hmm {
        p: [overall * 0.5, (overall * 4.0).clamp(0.05, 0.9)],
        a: [[0.98, 0.02], [0.1, 0.9]],
        start: [0.9, 0.1],
        loglik: f64::NEG_INFINITY,
    };
    for _ in 0..200 {
        let next = em_step(&m, sequences);
        let done = (next.loglik - m.loglik).abs() < 1e-7;
        m = next;
        if done {
            break;
        }
    }
    if m.p[1] < m.p[0] {
        m = Hmm {
            p: [m.p[1], m.p[0]],
            a: [[m.a[1][1], m.a[1][0]], [m.a[0][1], m.a[0][0]]],
            start: [m.start[1], m.start[0]],
            loglik: m.loglik,
        };
    }
    m
}

/// One Baum–Welch step with scaled forward–backward passes; the log-likelihood is `m`'s.
fn em_step(m: &Hmm, sequences: &[Vec<(f64, f64)>]) -> Hmm {
    let mut num_p = [0.0; 2];
    let mut den_p = [0.0; 2];
    let mut trans = [[0.0; 2]; 2];
    let mut start = [0.0; 2];
    let mut loglik = 0.0;
    let emit = |s: usize, (k, x): (f64, f64)| binomial_ll(k, x, m.p[s]).exp();
    for seq in sequences.iter().filter(|s| !s.is_empty()) {
        let t_len = seq.len();
        let mut alpha = vec![[0.0; 2]; t_len];
        let mut scale = vec![0.0; t_len];
        for t in 0..t_len {
            for s in 0..2 {
                let prior = if t == 0 {
                    m.start[s]
                } else {
                    alpha[t - 1][0] * m.a[0][s] + alpha[t - 1][1] * m.a[1][s]
                };
                alpha[t][s] = prior * emit(s, seq[t]);
            }
            scale[t] = (alpha[t][0] + alpha[t][1]).max(1e-300);
            alpha[t][0] /= scale[t];
            alpha[t][1] /= scale[t];
            loglik += scale[t].ln();
        }
        let mut beta = vec![[1.0; 2]; t_len];
        for t in (0..t_len - 1).rev() {
            for s in 0..2 {
                beta[t][s] = (0..2)
                    .map(|r| m.a[s][r] * emit(r, seq[t + 1]) * beta[t + 1][r])
                    .sum::<f64>()
                    / scale[t + 1];
            }
        }
        for t in 0..t_len {
            let g0 = alpha[t][0] * beta[t][0];
            let g1 = alpha[t][1] * beta[t][1];
            let total = (g0 + g1).max(1e-300);
            let gamma = [g0 / total, g1 / total];
            if t == 0 {
                start[0] += gamma[0];
                start[1] += gamma[1];
            }
            for s in 0..2 {
                num_p[s] += gamma[s] * seq[t].1;
                den_p[s] += gamma[s] * seq[t].0;
            }
            if t + 1 < t_len {
                let mut xi = [[0.0; 2]; 2];
                let mut sum = 0.0;
                for (s, row) in xi.iter_mut().enumerate() {
                    for (r, cell) in row.iter_mut().enumerate() {
                        *cell = alpha[t][s] * m.a[s][r] * emit(r, seq[t + 1]) * beta[t + 1][r];
                        sum += *cell;
                    }
                }
                for s in 0..2 {
                    for r in 0..2 {
                        trans[s][r] += xi[s][r] / sum.max(1e-300);
                    }
                }
            }
        }
    }
    let row = |r: [f64; 2]| {
        let total = (r[0] + r[1]).max(1e-300);
        [r[0] / total, r[1] / total]
    };
    let p = |s: usize| (num_p[s] / den_p[s].max(1e-300)).clamp(1e-9, 1.0 - 1e-9);
    Hmm {
        p: [p(0), p(1)],
        a: [row(trans[0]), row(trans[1])],
        start: row(start),
        loglik,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Native, RandomSource, Stream};

    /// Whether `t` is in a storm as the provider makes them: a start with probability `q` at
    /// every check, each lasting `d`.
    fn in_storm(rng: &Native, q: f64, d: f64, t: f64) -> bool {
        let k_hi = (t / CHECK_S).floor() as u64;
        let k_lo = ((t - d) / CHECK_S).floor().max(0.0) as u64;
        (k_lo..=k_hi).any(|k| {
            let s = k as f64 * CHECK_S;
            s <= t && t < s + d && rng.storm(0, k).uniform() < q
        })
    }

    /// Requests every 0.1 s over two hours; storms as the provider makes them.
    #[test]
    fn storms_are_told_from_background_errors() {
        let rng = Native::new(9, ["a"]);
        let (q, d, p0, p1) = (0.08, 30.0, 0.03, 0.6);
        let storm_at = |t| in_storm(&rng, q, d, t);
        let requests: Vec<(f64, bool)> = (0..72_000u64)
            .map(|i| {
                let t = i as f64 * 0.1;
                let p = if storm_at(t) { p1 } else { p0 };
                (t, rng.request(0, i).uniform() < p)
            })
            .collect();
        let fit = fit(&[requests]);
        let storms = fit.storms.clone().expect("storms found");
        assert!((fit.error_rate / p0 - 1.0).abs() < 0.1, "{fit:?}");
        assert!((storms.error_rate / p1 - 1.0).abs() < 0.1, "{fit:?}");
        let share = 1.0 - (1.0 - q).powf(d / CHECK_S);
        assert!((storms.share / share - 1.0).abs() < 0.2, "{fit:?}");
    }

    /// A client that stops calling for 40 s after two failures in a row (a breaker), so
    /// storms show only their first seconds: the true timing is not contradicted, a wrong one
    /// is.
    #[test]
    fn a_prior_stands_where_the_client_left_the_storms() {
        let rng = Native::new(5, ["a"]);
        let (q, d, p0, p1) = (0.08, 30.0, 0.03, 0.6);
        let storm_at = |t| in_storm(&rng, q, d, t);
        let (mut requests, mut t, mut streak, mut i) = (Vec::new(), 0.0, 0, 0u64);
        while t < 7200.0 {
            let failed = rng.request(0, i).uniform() < if storm_at(t) { p1 } else { p0 };
            requests.push((t, failed));
            streak = if failed { streak + 1 } else { 0 };
            t += if streak >= 2 { 40.0 } else { 0.1 };
            streak = if streak >= 2 { 0 } else { streak };
            i += 1;
        }
        let segments = [requests];
        let fitted = fit(&segments);
        let own = fitted.storms.clone().expect("storms found");
        // The client's absence hides how long the storms last.
        assert!(own.duration_s < 0.8 * d, "{fitted:?}");
        let truth = StormPrior {
            storm_rate: q,
            check_s: CHECK_S,
            duration_s: d,
        };
        let kept = with_prior(&segments, &fitted, truth).expect("not contradicted");
        let storms = kept.storms.expect("storms");
        assert!(storms.from_prior && storms.duration_s == d);
        assert!((storms.error_rate / p1 - 1.0).abs() < 0.1, "{storms:?}");
        let wrong = StormPrior {
            storm_rate: 0.5,
            check_s: CHECK_S,
            duration_s: 120.0,
        };
        assert!(with_prior(&segments, &fitted, wrong).is_none());
    }

    #[test]
    fn independent_errors_are_not_storms() {
        let rng = Native::new(4, ["a"]);
        let requests: Vec<(f64, bool)> = (0..50_000u64)
            .map(|i| (i as f64 * 0.1, rng.request(0, i).uniform() < 0.05))
            .collect();
        let fit = fit(&[requests]);
        assert!(fit.storms.is_none(), "{fit:?}");
        assert!((fit.error_rate - 0.05).abs() < 0.005);
    }
}
