//! The scripted incidents as seen from one endpoint: pure functions of simulated time.
//!
//! Every answer depends only on `t` (and the world), never on who asks or what happened before,
//! so every algorithm and seed meets the same incidents at the same instants. Overlapping
//! factors multiply; an outage or a revocation wins over everything else.

use crate::world::{Effect, Incident, World};

/// The incidents that touch each endpoint, by endpoint index.
#[derive(Clone, Debug)]
pub struct Timeline<'w> {
    incidents: &'w [Incident],
    /// For each endpoint, indices into `incidents` of those that affect it.
    by_endpoint: Vec<Vec<usize>>,
}

impl<'w> Timeline<'w> {
    /// The timeline of `world`.
    pub fn new(world: &'w World) -> Timeline<'w> {
        let mut by_endpoint = vec![Vec::new(); world.endpoints().len()];
        for (i, incident) in world.incidents().iter().enumerate() {
            for &e in &incident.endpoints {
                by_endpoint[e].push(i);
            }
        }
        Timeline {
            incidents: world.incidents(),
            by_endpoint,
        }
    }

    /// Whether endpoint `e` has any incident at all (the fast path skips everything else).
    pub fn touches(&self, e: usize) -> bool {
        !self.by_endpoint[e].is_empty()
    }

    fn active(&self, e: usize, t: f64) -> impl Iterator<Item = &'w Effect> + '_ {
        self.by_endpoint[e]
            .iter()
            .map(|&i| &self.incidents[i])
            .filter(move |incident| incident.active(t))
            .map(|incident| &incident.effect)
    }

    /// Whether the key of endpoint `e` is revoked at `t`.
    pub fn revoked(&self, e: usize, t: f64) -> bool {
        self.active(e, t).any(|effect| *effect == Effect::Revoke)
    }

    /// The outage on endpoint `e` at `t`, if any: `Some(true)` fails admitted requests,
    /// `Some(false)` refuses them at once (a refusing outage wins over a failing one).
    pub fn outage(&self, e: usize, t: f64) -> Option<bool> {
        self.active(e, t)
            .filter_map(|effect| match effect {
                Effect::Outage { error } => Some(*error),
                _ => None,
            })
            .min()
    }

    /// Product of the capacity factors on `e` at `t` (1 when none).
    pub fn capacity_factor(&self, e: usize, t: f64) -> f64 {
        self.product(e, t, |effect| match effect {
            Effect::Capacity(f) => Some(*f),
            _ => None,
        })
    }

    /// Product of the latency factors on `e` at `t` (1 when none).
    pub fn latency_factor(&self, e: usize, t: f64) -> f64 {
        self.product(e, t, |effect| match effect {
            Effect::Latency(f) => Some(*f),
            _ => None,
        })
    }

    /// The error rate of a forced storm on `e` at `t` (`default` when the storm names none;
    /// the largest when several overlap), or `None`.
    pub fn storm(&self, e: usize, t: f64, default: f64) -> Option<f64> {
        self.active(e, t)
            .filter_map(|effect| match effect {
                Effect::Storm(rate) => Some(rate.unwrap_or(default)),
                _ => None,
            })
            .reduce(f64::max)
    }

    fn product(&self, e: usize, t: f64, pick: impl Fn(&Effect) -> Option<f64>) -> f64 {
        self.active(e, t).filter_map(pick).product()
    }

    /// `∫ g(t) dt` over `[a, b]`, where `g` is the product of the factors `pick` reads from
    /// the incidents on `e` and `base(a, b)` integrates the rest of the integrand over a stretch
    /// where `g` is constant.
    fn integrate(
        &self,
        e: usize,
        a: f64,
        b: f64,
        pick: impl Fn(&Effect) -> Option<f64>,
        base: impl Fn(f64, f64) -> f64,
    ) -> f64 {
        if b <= a {
            return 0.0;
        }
        let relevant: Vec<&Incident> = self.by_endpoint[e]
            .iter()
            .map(|&i| &self.incidents[i])
            .filter(|incident| pick(&incident.effect).is_some())
            .collect();
        if relevant.is_empty() {
            return base(a, b);
        }
        let mut cuts: Vec<f64> = relevant
            .iter()
            .flat_map(|incident| [incident.start_s, incident.end_s])
            .filter(|&c| a < c && c < b)
            .collect();
        cuts.push(a);
        cuts.push(b);
        cuts.sort_by(f64::total_cmp);
        cuts.dedup();
        cuts.windows(2)
            .map(|w| {
                let factor: f64 = relevant
                    .iter()
                    .filter(|incident| incident.active(w[0]))
                    .filter_map(|incident| pick(&incident.effect))
                    .product();
                if factor == 0.0 {
                    0.0
                } else {
                    factor * base(w[0], w[1])
                }
            })
            .sum()
    }

    /// `∫ refill factor dt` over `[a, b]`: the seconds of full-rate refill the interval is
    /// worth.
    pub fn refill_seconds(&self, e: usize, a: f64, b: f64) -> f64 {
        let pick = |effect: &Effect| match effect {
            Effect::RateLimit(f) => Some(*f),
            _ => None,
        };
        self.integrate(e, a, b, pick, |x, y| y - x)
    }

    /// `∫ capacity factor · cycle dt` over `[a, b]`, where an outage or a revocation offers
    /// nothing; `cycle(a, b)` is the cycle's own integral.
    pub fn offered(&self, e: usize, a: f64, b: f64, cycle: impl Fn(f64, f64) -> f64) -> f64 {
        let pick = |effect: &Effect| match effect {
            Effect::Capacity(f) => Some(*f),
            Effect::Outage { .. } | Effect::Revoke => Some(0.0),
            _ => None,
        };
        self.integrate(e, a, b, pick, cycle)
    }
}
