//! The scripted incidents as seen from one endpoint: pure functions of simulated time.
//!
//! Every answer depends only on `t` (and the world), never on who asks or what happened before,
//! so every algorithm and seed meets the same incidents at the same instants. Overlapping
//! factors multiply; an outage or a revocation wins over everything else.

use crate::world::{Effect, InFileOrder, Incident, Scope, World, in_file_order};

/// The incidents that touch each endpoint. An incident on every endpoint or on a pool is filed
/// once under its scope, not once per endpoint, so the timeline grows with the file, not with
/// endpoints × incidents.
#[derive(Clone, Debug)]
pub struct Timeline<'w> {
    incidents: &'w [Incident],
    /// Indices into `incidents` of those on every endpoint, in file order.
    everywhere: Vec<usize>,
    /// Indices of those on each pool, in file order, by pool index.
    by_pool: Vec<Vec<usize>>,
    /// Each endpoint's pool.
    pool_of: Vec<usize>,
    /// Indices of those that list each endpoint, in file order, by endpoint index.
    listed: Vec<Vec<usize>>,
    /// Whether any incident touches each endpoint.
    touched: Vec<bool>,
}

impl<'w> Timeline<'w> {
    /// The timeline of `world`.
    pub fn new(world: &'w World) -> Timeline<'w> {
        let n = world.endpoints().len();
        let mut everywhere = Vec::new();
        let mut by_pool = vec![Vec::new(); world.pools().len()];
        let mut listed = vec![Vec::new(); n];
        for (i, incident) in world.incidents().iter().enumerate() {
            match &incident.scope {
                Scope::Everywhere => everywhere.push(i),
                Scope::Pool(p) => by_pool[*p].push(i),
                Scope::Listed(list) => list.iter().for_each(|&e| listed[e].push(i)),
            }
        }
        let pool_of: Vec<usize> = world.endpoints().iter().map(|e| e.pool).collect();
        let touched = (0..n)
            .map(|e| {
                !(everywhere.is_empty() && by_pool[pool_of[e]].is_empty() && listed[e].is_empty())
            })
            .collect();
        Timeline {
            incidents: world.incidents(),
            everywhere,
            by_pool,
            pool_of,
            listed,
            touched,
        }
    }

    /// Whether endpoint `e` has any incident at all (the fast path skips everything else).
    pub fn touches(&self, e: usize) -> bool {
        self.touched[e]
    }

    /// The incidents on `e`, in file order (so that products of factors are taken in one
    /// order whatever the scopes).
    #[inline]
    fn on(&self, e: usize) -> impl Iterator<Item = &'w Incident> + '_ {
        let lists = [
            self.everywhere.as_slice(),
            self.by_pool[self.pool_of[e]].as_slice(),
            self.listed[e].as_slice(),
        ];
        // Most endpoints meet incidents of one scope only: walk that list as it is.
        let indices = match lists {
            [one, [], []] | [[], one, []] | [[], [], one] => On::One(one.iter()),
            _ => On::Merged(in_file_order(lists)),
        };
        indices.map(|i| &self.incidents[i])
    }

    #[inline]
    fn active(&self, e: usize, t: f64) -> impl Iterator<Item = &'w Effect> + '_ {
        self.on(e)
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
        let relevant: Vec<&Incident> = self
            .on(e)
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

/// The incident indices on one endpoint: one scope's list, or several merged.
enum On<'a> {
    One(std::slice::Iter<'a, usize>),
    Merged(InFileOrder<'a, 3>),
}

impl Iterator for On<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        match self {
            On::One(list) => list.next().copied(),
            On::Merged(lists) => lists.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eleven endpoints in two pools, incidents on every endpoint, on a pool and on a list,
    /// overlapping: each answer is the one a scan of every incident in file order gives.
    #[test]
    fn scopes_answer_as_a_scan_of_every_incident_would() {
        let mut text = String::from(
            "name = \"t\"\nsummary = \"t\"\n[[pools]]\nname = \"a\"\n[[pools]]\nname = \"b\"\n",
        );
        for e in 0..11 {
            let pool = if e % 3 == 0 { "b" } else { "a" };
            text += &format!(
                "[[endpoints]]\nid = \"e{e}\"\npool = \"{pool}\"\ncapacity = 4\nlatency = {{}}\n"
            );
        }
        let scopes = [
            "",
            "pool = \"b\"\n",
            "endpoints = [\"e1\", \"e3\"]\n",
            "pool = \"a\"\n",
        ];
        for k in 0..12 {
            text += &format!(
                "[[incidents]]\nkind = \"{}\"\nfactor = {}\nstart_s = {}\nend_s = {}\n{}",
                if k % 2 == 0 { "capacity" } else { "latency" },
                1.1 + 0.37 * k as f64,
                k,
                k + 5,
                scopes[k % 4]
            );
        }
        text += "[[incidents]]\nkind = \"outage\"\nstart_s = 3\nend_s = 4\nendpoints = [\"e2\"]\n";
        let world = crate::compile::load("t.toml", text.as_bytes()).expect("valid");
        let timeline = Timeline::new(&world);
        for e in 0..11 {
            let mine: Vec<&Incident> = world
                .incidents()
                .iter()
                .filter(|i| world.reach(i).any(|x| x == e))
                .collect();
            assert!(timeline.touches(e), "e{e}");
            for step in 0..40 {
                let t = f64::from(step) * 0.45;
                let scan = |pick: fn(&Effect) -> Option<f64>| -> f64 {
                    mine.iter()
                        .filter(|i| i.active(t))
                        .filter_map(|i| pick(&i.effect))
                        .product()
                };
                let capacity = scan(|x| match x {
                    Effect::Capacity(f) => Some(*f),
                    _ => None,
                });
                let latency = scan(|x| match x {
                    Effect::Latency(f) => Some(*f),
                    _ => None,
                });
                assert_eq!(timeline.capacity_factor(e, t), capacity, "e{e} at {t}");
                assert_eq!(timeline.latency_factor(e, t), latency, "e{e} at {t}");
                let down = e == 2 && (3.0..4.0).contains(&t);
                assert_eq!(timeline.outage(e, t).is_some(), down, "e{e} at {t}");
            }
        }
    }
}
