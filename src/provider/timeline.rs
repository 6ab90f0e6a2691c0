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
    /// When the lists are not spelled out: the index by time of `everywhere` and of each
    /// pool's list, for an endpoint whose incidents all come from one of them.
    everywhere_index: Option<Segments>,
    pool_index: Vec<Option<Segments>>,
    /// Whether any list has an index: a world without one asks nothing more.
    indexed: bool,
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
            everywhere_index: None,
            pool_index: Vec::new(),
            indexed: false,
        };
        let incidents = world.incidents();
        timeline.spelled =
            spelled_entries(world).map(|total| Spelled::of(&timeline, total, incidents));
        if timeline.spelled.is_none() {
            timeline.everywhere_index = Segments::of(&timeline.everywhere, incidents);
            timeline.pool_index = (timeline.by_pool.iter())
                .map(|list| Segments::of(list, incidents))
                .collect();
        }
        timeline.indexed = timeline
            .spelled
            .as_ref()
            .is_some_and(|s| !s.index.is_empty())
            || timeline.everywhere_index.is_some()
            || timeline.pool_index.iter().any(Option::is_some);
        timeline
    }

    /// Whether endpoint `e` has any incident at all (the fast path skips everything else).
    pub fn touches(&self, e: usize) -> bool {
        self.touched[e]
    }

    /// Which scope's list alone holds the incidents on `e` when they are not spelled out
    /// endpoint by endpoint (0 for every endpoint, `1 + p` for pool `p`): endpoints with the
    /// same answer meet the same incidents, so whatever depends on those alone is the same.
    pub fn shared_scope(&self, e: usize) -> Option<usize> {
        if self.spelled.is_some() || !self.listed[e].is_empty() {
            return None;
        }
        let pool = self.pool_of[e];
        match (self.everywhere.is_empty(), self.by_pool[pool].is_empty()) {
            (false, true) => Some(0),
            (true, false) => Some(1 + pool),
            _ => None,
        }
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
        if self.indexed
            && let Some(index) = self.index(e)
        {
            // Exactly those active at `t`, in file order.
            return index
                .active_at(t)
                .iter()
                .fold(init, |acc, &i| f(acc, &incidents[i as usize].effect));
        }
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

    /// The index by time of `e`'s incidents, when it has one: its own spelled-out list's, or
    /// that of the one scope all its incidents come from.
    #[inline]
    fn index(&self, e: usize) -> Option<&Segments> {
        match &self.spelled {
            // Empty when no endpoint has a list long enough: one length check.
            Some(spelled) => spelled.index.get(e).and_then(Option::as_ref),
            None => {
                let pool = self.pool_of[e];
                match (
                    self.everywhere.is_empty(),
                    self.by_pool[pool].is_empty(),
                    self.listed[e].is_empty(),
                ) {
                    (false, true, true) => self.everywhere_index.as_ref(),
                    (true, false, true) => self.pool_index[pool].as_ref(),
                    _ => None,
                }
            }
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
        let weigh = |(lo, hi, factor): (f64, f64, f64)| {
            if factor == 0.0 {
                0.0
            } else {
                factor * base(lo, hi)
            }
        };
        if self.indexed
            && let Some(index) = self.index(e)
        {
            // The same stretches and products as the sweep below, without walking every
            // incident of the list: this runs at every refill of a metered endpoint.
            return index
                .stretches(a, b, self.incidents, &pick)
                .map(weigh)
                .sum();
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
        // Swept in time order: the incidents active at each window's start are kept (by rank,
        // which is file order) as the sweep passes their starts and ends, rather than every
        // incident tested at every window, which cost incidents² an endpoint.
        let mut edges: Vec<(f64, bool, usize)> = relevant
            .iter()
            .enumerate()
            .flat_map(|(k, incident)| [(incident.start_s, true, k), (incident.end_s, false, k)])
            .filter(|(at, ..)| at.is_finite())
            .collect();
        edges.sort_by(|x, y| x.0.total_cmp(&y.0));
        let mut active: Vec<usize> = Vec::new();
        let mut next = 0;
        cuts.windows(2)
            .map(|w| {
                // `start ≤ t < end` at `t = w[0]`: what starts by then is on, what ends by
                // then is off.
                let upto = next + edges[next..].partition_point(|x| x.0 <= w[0]);
                for &(_, start, k) in &edges[next..upto] {
                    if start {
                        let at = active.partition_point(|&x| x < k);
                        active.insert(at, k);
                    }
                }
                for &(_, start, k) in &edges[next..upto] {
                    if !start && let Ok(at) = active.binary_search(&k) {
                        active.remove(at);
                    }
                }
                next = upto;
                let factor: f64 = active
                    .iter()
                    .filter_map(|&k| pick(&relevant[k].effect))
                    .product();
                weigh((w[0], w[1], factor))
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
    /// Each endpoint's index by time, for a list long enough to need one; empty when none is.
    index: Vec<Option<Segments>>,
}

impl Spelled {
    /// The spelled-out lists of `timeline`, `total` entries long.
    fn of(timeline: &Timeline, total: usize, incidents: &[Incident]) -> Spelled {
        let n = timeline.touched.len();
        let mut starts = Vec::with_capacity(n + 1);
        let mut indices = Vec::with_capacity(total);
        let mut index = Vec::with_capacity(n);
        starts.push(0);
        for e in 0..n {
            // The sum of a few per item stays far below `u32::MAX`.
            let from = indices.len();
            indices.extend(timeline.scoped(e).map(|i| i as u32));
            starts.push(indices.len() as u32);
            let list = &indices[from..];
            index.push((list.len() >= INDEX_FROM).then(|| {
                let list: Vec<usize> = list.iter().map(|&i| i as usize).collect();
                Segments::of(&list, incidents)
            }));
        }
        if index.iter().all(|i| matches!(i, None | Some(None))) {
            index.clear();
        }
        let index = index.into_iter().map(Option::flatten).collect();
        Spelled {
            starts,
            indices,
            index,
        }
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

/// A list of incidents indexed by time: the instants where one starts or ends cut time into
/// segments, and each segment keeps the incidents active throughout it, in file order. A query
/// is a binary search and a walk over what is active, not over every incident of the list: a
/// world of thousands of short incidents pays for those at hand.
#[derive(Clone, Debug)]
struct Segments {
    /// Every finite start and end, sorted, without repeats.
    cuts: Vec<f64>,
    /// Segment `k` (before `cuts[0]` for 0, else `[cuts[k - 1], cuts[k])`) holds
    /// `items[starts[k]..starts[k + 1]]`.
    starts: Vec<u32>,
    items: Vec<u32>,
}

impl Segments {
    /// The index of `list` (incident indices in file order), or `None` for a list short
    /// enough to walk ([`INDEX_FROM`]) or whose incidents overlap so much that the segments
    /// would hold more than [`index_cap`] entries.
    fn of(list: &[usize], incidents: &[Incident]) -> Option<Segments> {
        if list.len() < INDEX_FROM {
            return None;
        }
        let mut cuts: Vec<f64> = list
            .iter()
            .flat_map(|&i| [incidents[i].start_s, incidents[i].end_s])
            .filter(|c| c.is_finite())
            .collect();
        cuts.sort_by(f64::total_cmp);
        cuts.dedup();
        // Starts and ends in time order, each with its incident (its rank in the list keeps
        // file order within the active set).
        let mut edges: Vec<(f64, bool, u32)> = list
            .iter()
            .flat_map(|&i| {
                let incident = &incidents[i];
                [
                    (incident.start_s, true, i as u32),
                    (incident.end_s, false, i as u32),
                ]
            })
            .filter(|(at, ..)| at.is_finite())
            .collect();
        edges.sort_by(|a, b| a.0.total_cmp(&b.0));
        let cap = index_cap(list.len());
        let (mut starts, mut items) = (vec![0, 0], Vec::new());
        let mut active: Vec<u32> = Vec::new();
        let mut next = 0;
        for &cut in &cuts {
            // At `cut`, what starts there is on and what ends there is off (`start ≤ t < end`).
            let upto = next + edges[next..].partition_point(|e| e.0 <= cut);
            for &(_, start, i) in &edges[next..upto] {
                if start {
                    let at = active.partition_point(|&a| a < i);
                    active.insert(at, i);
                }
            }
            for &(_, start, i) in &edges[next..upto] {
                if !start && let Ok(at) = active.binary_search(&i) {
                    active.remove(at);
                }
            }
            next = upto;
            items.extend_from_slice(&active);
            if items.len() > cap {
                return None;
            }
            starts.push(items.len() as u32);
        }
        Some(Segments {
            cuts,
            starts,
            items,
        })
    }

    /// The incidents active at `t`, in file order.
    #[inline]
    fn active_at(&self, t: f64) -> &[u32] {
        self.segment(self.cuts.partition_point(|&c| c <= t))
    }

    /// The incidents active throughout segment `k`, in file order.
    #[inline]
    fn segment(&self, k: usize) -> &[u32] {
        &self.items[self.starts[k] as usize..self.starts[k + 1] as usize]
    }

    /// The stretches of `[a, b]` (`a < b`) over which the incidents `pick` reads a factor from
    /// stay the same, in time order, each with the product of those factors in file order:
    /// segments are joined where no such incident starts or ends, so the cuts are those a sweep
    /// over the picked incidents alone makes.
    fn stretches<'s>(
        &'s self,
        a: f64,
        b: f64,
        incidents: &'s [Incident],
        pick: &'s impl Fn(&Effect) -> Option<f64>,
    ) -> impl Iterator<Item = (f64, f64, f64)> + 's {
        let picked = move |k: usize| {
            (self.segment(k).iter())
                .filter(move |&&i| pick(&incidents[i as usize].effect).is_some())
        };
        let mut k = self.cuts.partition_point(|&c| c <= a);
        let mut lo = a;
        std::iter::from_fn(move || {
            if lo >= b {
                return None;
            }
            let first = k;
            let hi = loop {
                match self.cuts.get(k) {
                    Some(&cut) if cut < b => {
                        k += 1;
                        // A picked incident starts or ends at `cut` exactly when the picked
                        // sets on either side differ (no incident is empty).
                        if !picked(k - 1).eq(picked(k)) {
                            break cut;
                        }
                    }
                    _ => break b,
                }
            };
            let factor: f64 = (self.segment(first).iter())
                .filter_map(|&i| pick(&incidents[i as usize].effect))
                .product();
            let stretch = (lo, hi, factor);
            lo = hi;
            Some(stretch)
        })
    }
}

/// Lists shorter than this are walked: a binary search buys nothing over a few incidents.
const INDEX_FROM: usize = 16;

/// The most entries the segments of a list of `n` incidents may hold: a few per incident, so
/// that incidents overlapping in bulk (every segment holding most of them) are walked instead.
fn index_cap(n: usize) -> usize {
    16 * n + 1024
}

/// What the indexes by time of one run's timeline may hold at most \[bytes\]: for each list
/// indexed (every endpoint's when spelled out, else every scope's), its cuts, its segments'
/// starts and [`index_cap`] entries.
pub fn index_bytes(world: &World) -> u64 {
    let bound = |n: usize| -> u64 {
        if n < INDEX_FROM {
            0
        } else {
            let cuts = 2 * n * size_of::<f64>();
            let starts = (2 * n + 2) * size_of::<u32>();
            (cuts + starts + index_cap(n) * size_of::<u32>() + size_of::<Segments>()) as u64
        }
    };
    let mut pools = vec![0usize; world.pools().len()];
    let mut listed = vec![0usize; world.endpoints().len()];
    let mut everywhere = 0;
    for incident in world.incidents() {
        match &incident.scope {
            Scope::Everywhere => everywhere += 1,
            Scope::Pool(p) => pools[*p] += 1,
            Scope::Listed(list) => list.iter().for_each(|&e| listed[e] += 1),
        }
    }
    if spelled_entries(world).is_some() {
        let endpoints = world.endpoints().iter().zip(&listed);
        endpoints
            .map(|(e, listed)| bound(everywhere + pools[e.pool] + listed))
            .sum()
    } else {
        bound(everywhere) + pools.iter().map(|&n| bound(n)).sum::<u64>()
    }
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

    /// Random worlds of many overlapping incidents, some endless, on every endpoint, a pool or
    /// a list: the index by time answers as the walk over every incident does, at random
    /// instants and at every start and end, spelled out or filed by scope.
    #[test]
    fn the_index_by_time_answers_as_the_walk_does() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..20 {
            let mut text = String::from(
                "name = \"t\"\nsummary = \"t\"\n[[pools]]\nname = \"a\"\n[[pools]]\nname = \"b\"\n",
            );
            for e in 0..5 {
                let pool = if e < 2 { "b" } else { "a" };
                text += &format!(
                    "[[endpoints]]\nid = \"e{e}\"\npool = \"{pool}\"\ncapacity = 4\nlatency = {{}}\n\
                     rate_limit = {{ per_window = 60, burst = 1.2, retry_after_s = 3.0 }}\n"
                );
            }
            let mut instants = vec![0.0, 1e9];
            for _ in 0..(48 + next(60)) {
                let start = next(400) as f64 * 0.5;
                let end = start + 0.5 + next(100) as f64 * 0.25;
                instants.extend([start, end, (start + end) / 2.0]);
                let scope = match next(4) {
                    0 => String::new(),
                    1 => "pool = \"a\"\n".to_owned(),
                    2 => "pool = \"b\"\n".to_owned(),
                    _ => format!("endpoints = [\"e{}\"]\n", next(5)),
                };
                let (kind, rest) = match next(5) {
                    0 => (
                        "capacity",
                        format!("factor = {}\n", 0.1 + next(9) as f64 * 0.1),
                    ),
                    1 => (
                        "latency",
                        format!("factor = {}\n", 1.5 + next(9) as f64 * 0.5),
                    ),
                    2 => ("storm", format!("error_rate = {}\n", next(9) as f64 * 0.1)),
                    3 => (
                        "outage",
                        ["effect = \"error\"\n", ""][next(2) as usize].to_owned(),
                    ),
                    _ => ("rate_limit", "factor = 0.5\n".to_owned()),
                };
                let end = if kind == "outage" && next(8) == 0 {
                    String::new()
                } else {
                    format!("end_s = {end}\n")
                };
                text += &format!(
                    "[[incidents]]\nkind = \"{kind}\"\nstart_s = {start}\n{end}{rest}{scope}"
                );
            }
            let world = crate::compile::load("t.toml", text.as_bytes())
                .unwrap_or_else(|e| panic!("{e:?}\n{text}"));
            let indexed = Timeline::new(&world);
            let spelled = indexed.spelled.as_ref().expect("a small world");
            assert!(spelled.index.iter().any(Option::is_some), "{text}");
            let walked = Timeline {
                spelled: Some(Spelled {
                    index: vec![None; 5],
                    ..spelled.clone()
                }),
                ..indexed.clone()
            };
            let mut scoped = Timeline {
                spelled: None,
                ..indexed.clone()
            };
            scoped.everywhere_index = Segments::of(&scoped.everywhere, world.incidents());
            scoped.pool_index = (scoped.by_pool.iter())
                .map(|l| Segments::of(l, world.incidents()))
                .collect();
            for _ in 0..200 {
                instants.push(next(30_000) as f64 * 0.01 - 10.0);
            }
            // The integrals against the scan of every incident at every window they replace.
            for _ in 0..40 {
                let a = next(2200) as f64 * 0.1 - 10.0;
                let b = a + next(1000) as f64 * 0.25;
                for e in 0..5 {
                    let base = |x: f64, y: f64| y * y - x * x + (y - x).sqrt();
                    let offered = indexed.offered(e, a, b, base);
                    assert_eq!(
                        offered.to_bits(),
                        scan_offered(&world, e, a, b, base).to_bits()
                    );
                    let refill = indexed.refill_seconds(e, a, b);
                    let by_scan = scan_integral(&world, e, a, b, rate_limit, |x, y| y - x);
                    assert_eq!(refill.to_bits(), by_scan.to_bits(), "e{e} over [{a}, {b}]");
                }
            }
            for &t in &instants {
                for e in 0..5 {
                    let answers = |tl: &Timeline| {
                        (
                            tl.capacity_factor(e, t).to_bits(),
                            tl.latency_factor(e, t).to_bits(),
                            tl.revoked_or_outage(e, t),
                            tl.storm(e, t, 0.3).map(f64::to_bits),
                            tl.outage(e, t),
                        )
                    };
                    let want = answers(&walked);
                    assert_eq!(answers(&indexed), want, "e{e} at {t}");
                    assert_eq!(answers(&scoped), want, "e{e} at {t} by scope");
                }
            }
        }
    }

    fn rate_limit(effect: &Effect) -> Option<f64> {
        match effect {
            Effect::RateLimit(f) => Some(*f),
            _ => None,
        }
    }

    fn scan_offered(
        world: &World,
        e: usize,
        a: f64,
        b: f64,
        base: impl Fn(f64, f64) -> f64,
    ) -> f64 {
        let pick = |effect: &Effect| match effect {
            Effect::Capacity(f) => Some(*f),
            Effect::Outage { .. } | Effect::Revoke => Some(0.0),
            _ => None,
        };
        scan_integral(world, e, a, b, pick, base)
    }

    /// The integral as it was first written: every incident tested at every window.
    fn scan_integral(
        world: &World,
        e: usize,
        a: f64,
        b: f64,
        pick: impl Fn(&Effect) -> Option<f64>,
        base: impl Fn(f64, f64) -> f64,
    ) -> f64 {
        if b <= a {
            return 0.0;
        }
        let relevant: Vec<&Incident> = world
            .incidents()
            .iter()
            .filter(|i| world.reach(i).any(|x| x == e) && pick(&i.effect).is_some())
            .collect();
        if relevant.is_empty() {
            return base(a, b);
        }
        let mut cuts: Vec<f64> = relevant
            .iter()
            .flat_map(|i| [i.start_s, i.end_s])
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
                    .filter(|i| i.active(w[0]))
                    .filter_map(|i| pick(&i.effect))
                    .product();
                if factor == 0.0 {
                    0.0
                } else {
                    factor * base(w[0], w[1])
                }
            })
            .sum()
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
