//! The scripted incidents as seen from one endpoint: pure functions of simulated time.
//!
//! Every answer depends only on `t` (and the world), never on who asks or what happened before,
//! so every algorithm and seed meets the same incidents at the same instants. Overlapping
//! factors multiply; an outage or a revocation wins over everything else.

use crate::world::{Effect, InFileOrder, Incident, Scope, World, in_file_order};

/// The incidents that touch each endpoint. An incident on every endpoint or on a pool is filed
/// once under its scope, not once per endpoint, so the timeline grows with the file, not with
/// endpoints × incidents. Where spelling every endpoint's incidents out stays small (as in
/// nearly every world), it is spelled out too: one contiguous list an endpoint is the cheapest
/// walk, and the walk runs on every request that meets an incident.
#[derive(Clone, Debug)]
pub struct Timeline<'w> {
    incidents: &'w [Incident],
    /// Each endpoint's incidents in file order, spelled out, when that stays small.
    spelled: Option<Spelled>,
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
        let mut timeline = Timeline {
            incidents: world.incidents(),
            spelled: None,
            everywhere,
            by_pool,
            pool_of,
            listed,
            touched,
        };
        timeline.spelled = spelled_entries(world).map(|total| Spelled::of(&timeline, total));
        timeline
    }

    /// Whether endpoint `e` has any incident at all (the fast path skips everything else).
    pub fn touches(&self, e: usize) -> bool {
        self.touched[e]
    }

    /// The incidents on `e`, in file order (so that products of factors are taken in one
    /// order whatever the scopes).
    #[inline]
    fn on(&self, e: usize) -> impl Iterator<Item = &'w Incident> + '_ {
        let indices = match &self.spelled {
            Some(spelled) => On::Spelled(spelled.of_endpoint(e).iter()),
            None => self.scoped(e),
        };
        indices.map(|i| &self.incidents[i])
    }

    /// The incidents on `e` read from the scopes' lists.
    fn scoped(&self, e: usize) -> On<'_> {
        let lists = [
            self.everywhere.as_slice(),
            self.by_pool[self.pool_of[e]].as_slice(),
            self.listed[e].as_slice(),
        ];
        // Most endpoints meet incidents of one scope only: walk that list as it is.
        match lists {
            [one, [], []] | [[], one, []] | [[], [], one] => On::One(one.iter()),
            _ => On::Merged(in_file_order(lists)),
        }
    }

    /// Folds `f` over the effects of the incidents on `e` active at `t`, in file order. The
    /// kind of list is chosen once, and the walk over a spelled-out list is a plain loop: this
    /// runs several times for every request that meets an incident.
    #[inline]
    fn fold_active<B>(
        &self,
        e: usize,
        t: f64,
        init: B,
        mut f: impl FnMut(B, &'w Effect) -> B,
    ) -> B {
        let incidents = self.incidents;
        let mut step = move |acc: B, i: usize| {
            let incident = &incidents[i];
            if incident.active(t) {
                f(acc, &incident.effect)
            } else {
                acc
            }
        };
        match &self.spelled {
            Some(spelled) => spelled
                .of_endpoint(e)
                .iter()
                .fold(init, |acc, &i| step(acc, i as usize)),
            None => self.scoped(e).fold(init, step),
        }
    }

    /// Whether the key of endpoint `e` is revoked at `t`, and its outage then, if any (see
    /// [`Timeline::outage`]), in one walk.
    #[inline]
    pub fn revoked_or_outage(&self, e: usize, t: f64) -> (bool, Option<bool>) {
        self.fold_active(
            e,
            t,
            (false, None),
            |(revoked, outage), effect| match effect {
                Effect::Revoke => (true, outage),
                Effect::Outage { error } => (
                    revoked,
                    Some(outage.map_or(*error, |o: bool| o.min(*error))),
                ),
                _ => (revoked, outage),
            },
        )
    }

    /// The outage on endpoint `e` at `t`, if any: `Some(true)` fails admitted requests,
    /// `Some(false)` refuses them at once (a refusing outage wins over a failing one).
    #[inline]
    pub fn outage(&self, e: usize, t: f64) -> Option<bool> {
        self.fold_active(e, t, None, |outage: Option<bool>, effect| match effect {
            Effect::Outage { error } => Some(outage.map_or(*error, |o| o.min(*error))),
            _ => outage,
        })
    }

    /// Product of the capacity factors on `e` at `t` (1 when none).
    #[inline]
    pub fn capacity_factor(&self, e: usize, t: f64) -> f64 {
        self.product(e, t, |effect| match effect {
            Effect::Capacity(f) => Some(*f),
            _ => None,
        })
    }

    /// Product of the latency factors on `e` at `t` (1 when none).
    #[inline]
    pub fn latency_factor(&self, e: usize, t: f64) -> f64 {
        self.product(e, t, |effect| match effect {
            Effect::Latency(f) => Some(*f),
            _ => None,
        })
    }

    /// The error rate of a forced storm on `e` at `t` (`default` when the storm names none;
    /// the largest when several overlap), or `None`.
    #[inline]
    pub fn storm(&self, e: usize, t: f64, default: f64) -> Option<f64> {
        self.fold_active(e, t, None, |storm: Option<f64>, effect| match effect {
            Effect::Storm(rate) => {
                let rate = rate.unwrap_or(default);
                Some(storm.map_or(rate, |s| f64::max(s, rate)))
            }
            _ => storm,
        })
    }

    /// The product, in file order, of the factors `pick` reads from the incidents on `e`
    /// active at `t`.
    #[inline]
    fn product(&self, e: usize, t: f64, pick: impl Fn(&Effect) -> Option<f64>) -> f64 {
        self.fold_active(e, t, 1.0, |product, effect| {
            pick(effect).map_or(product, |f| product * f)
        })
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

/// Every endpoint's incident indices in file order, one list after another.
#[derive(Clone, Debug)]
struct Spelled {
    /// Where endpoint `e`'s list starts in `indices`; `starts[e + 1]` is where it ends.
    starts: Vec<u32>,
    indices: Vec<u32>,
}

impl Spelled {
    /// The spelled-out lists of `timeline`, `total` entries long.
    fn of(timeline: &Timeline, total: usize) -> Spelled {
        let n = timeline.touched.len();
        let mut starts = Vec::with_capacity(n + 1);
        let mut indices = Vec::with_capacity(total);
        starts.push(0);
        for e in 0..n {
            // The sum of a few per item stays far below `u32::MAX`.
            indices.extend(timeline.scoped(e).map(|i| i as u32));
            starts.push(indices.len() as u32);
        }
        Spelled { starts, indices }
    }

    #[inline]
    fn of_endpoint(&self, e: usize) -> &[u32] {
        &self.indices[self.starts[e] as usize..self.starts[e + 1] as usize]
    }
}

/// How many entries `world`'s incidents spelled out endpoint by endpoint hold, or `None` when
/// there are none or more than a few for each incident and endpoint (say 5,000 endpoints under 3,000
/// incidents on every one): those stay filed by scope only.
fn spelled_entries(world: &World) -> Option<usize> {
    let total: usize = world.incidents().iter().map(|i| world.reach_len(i)).sum();
    let items = world.endpoints().len() + world.incidents().len();
    (total > 0 && total <= SPELLED_MIN.max(SPELLED_PER_ITEM * items)).then_some(total)
}

/// What the spelled-out lists of one run's timeline hold \[bytes\] (0 when they are not
/// spelled out).
pub fn spelled_bytes(world: &World) -> u64 {
    spelled_entries(world).map_or(0, |total| {
        (std::mem::size_of::<u32>() * (total + world.endpoints().len() + 1)) as u64
    })
}

/// Spelled-out entries allowed for each incident and endpoint of the world…
const SPELLED_PER_ITEM: usize = 8;
/// …and at least this many, whatever the world's size.
const SPELLED_MIN: usize = 1 << 16;

/// The incident indices on one endpoint: its spelled-out list, one scope's list, or several
/// merged.
enum On<'a> {
    Spelled(std::slice::Iter<'a, u32>),
    One(std::slice::Iter<'a, usize>),
    Merged(InFileOrder<'a, 3>),
}

impl Iterator for On<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        match self {
            On::Spelled(list) => list.next().map(|&i| i as usize),
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
        text += "[[incidents]]\nkind = \"revoke\"\nstart_s = 6\nendpoints = [\"e4\"]\n";
        let world = crate::compile::load("t.toml", text.as_bytes()).expect("valid");
        let spelled = Timeline::new(&world);
        assert!(spelled.spelled.is_some());
        let scoped = Timeline {
            spelled: None,
            ..spelled.clone()
        };
        for (timeline, e) in [&spelled, &scoped]
            .into_iter()
            .flat_map(|t| (0..11).map(move |e| (t, e)))
        {
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
                let revoked = e == 4 && t >= 6.0;
                assert_eq!(timeline.outage(e, t).is_some(), down, "e{e} at {t}");
                assert_eq!(
                    timeline.revoked_or_outage(e, t),
                    (revoked, down.then_some(false)),
                    "e{e} at {t}"
                );
            }
        }
    }

    /// Spelling out 1,000 endpoints under 80 incidents on every one would hold 80,000 entries,
    /// more than the cap: they stay filed by scope, and the estimate counts nothing for them.
    #[test]
    fn many_endpoints_under_many_incidents_stay_filed_by_scope() {
        let world_of = |incidents: usize| {
            let mut text = String::from("name = \"t\"\nsummary = \"t\"\n");
            for e in 0..1000 {
                text += &format!("[[endpoints]]\nid = \"e{e}\"\ncapacity = 4\nlatency = {{}}\n");
            }
            for k in 0..incidents {
                text += &format!(
                    "[[incidents]]\nkind = \"capacity\"\nfactor = 0.5\nstart_s = {k}\nend_s = {}\n",
                    k + 1
                );
            }
            crate::compile::load("t.toml", text.as_bytes()).expect("valid")
        };
        let few = world_of(60);
        assert!(Timeline::new(&few).spelled.is_some());
        assert_eq!(spelled_bytes(&few), 4 * (60_000 + 1001));
        let many = world_of(80);
        let timeline = Timeline::new(&many);
        assert!(timeline.spelled.is_none());
        assert_eq!(spelled_bytes(&many), 0);
        assert_eq!(timeline.capacity_factor(999, 79.5), 0.5);
        assert_eq!(timeline.capacity_factor(999, 80.5), 1.0);
    }
}
