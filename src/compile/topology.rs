//! Pools, incidents and reuse caches: the rules that tie them to endpoints (a name must exist,
//! a pool needs an endpoint, an incident's keys must fit its kind) and their compiled form.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{Blame, Written, key, number, string_at};
use crate::diagnostics::Seg;
use crate::scenario::{self as spec, Scenario};
use crate::schema::{self, Problem, Target};
use crate::world::{Cache, Effect, Incident, PoolSpec, Scope, Selection};

/// The name the implicit pool of a file without `[[pools]]` carries in reports.
pub const DEFAULT_POOL: &str = "default";

/// Which keys each incident kind reads besides the common ones.
fn kind_keys(kind: &str) -> &'static [&'static str] {
    match kind {
        "outage" => &["effect"],
        "capacity" | "latency" | "rate_limit" => &["factor"],
        "storm" => &["error_rate"],
        _ => &[],
    }
}

/// Every rule between `[[pools]]`, `endpoints[].pool` and `[[incidents]]`.
pub(super) fn check(
    json: &Value,
    written: &Written<'_>,
    blame: &Blame<'_>,
    out: &mut Vec<Problem>,
) {
    let pools = names(json, "pools", "name");
    let roster = Roster::of(json, &pools);
    check_pools(json, &pools, out);
    let incidents = json.get("incidents").and_then(Value::as_array);
    let mut slowdowns = Vec::new();
    for (i, incident) in incidents.into_iter().flatten().enumerate() {
        let reach = check_incident(json, i, incident, &pools, &roster, written, blame, out);
        let number = |name: &str| incident.get(name).and_then(Value::as_f64);
        if incident.get("kind").and_then(Value::as_str) == Some("latency")
            && let (Some(start), Some(factor)) = (number("start_s"), number("factor"))
        {
            let end = number("end_s").unwrap_or(f64::INFINITY);
            slowdowns.push(Slowdown {
                i,
                reach,
                start,
                end,
                factor,
            });
        }
    }
    check_slowdowns(&slowdowns, &roster, out);
}

/// The endpoints as the incident rules read them.
struct Roster<'j> {
    /// Ids in file order.
    ids: Vec<&'j str>,
    /// Each id's first index.
    index: BTreeMap<&'j str, usize>,
    /// Each endpoint's pool as written, else the first pool's name.
    pool_of: Vec<Option<&'j str>>,
    /// Whether each endpoint has a rate limit.
    metered: Vec<bool>,
}

impl<'j> Roster<'j> {
    fn of(json: &'j Value, pools: &[&'j str]) -> Roster<'j> {
        let endpoints = json.get("endpoints").and_then(Value::as_array);
        let list = || endpoints.into_iter().flatten();
        let ids = names(json, "endpoints", "id");
        let mut index = BTreeMap::new();
        for (e, id) in ids.iter().enumerate() {
            index.entry(*id).or_insert(e);
        }
        Roster {
            ids,
            index,
            pool_of: list()
                .map(|e| {
                    e.get("pool")
                        .and_then(Value::as_str)
                        .or(pools.first().copied())
                })
                .collect(),
            metered: list().map(|e| e.get("rate_limit").is_some()).collect(),
        }
    }

    /// The endpoints `reach` covers, in file order for a scope and as listed for a list.
    fn members<'r>(&'r self, reach: &'r Reach<'j>) -> impl Iterator<Item = usize> + 'r {
        let pool = match reach {
            Reach::Pool(name) => Some(*name),
            _ => None,
        };
        let every = match reach {
            Reach::Every | Reach::Pool(_) => self.pool_of.len(),
            Reach::Nothing | Reach::Listed(_) => 0,
        };
        let listed = match reach {
            Reach::Listed(list) => list.as_slice(),
            _ => &[],
        };
        (0..every)
            .filter(move |&e| pool.is_none() || self.pool_of[e] == pool)
            .chain(listed.iter().copied())
    }
}

/// The endpoints an incident reaches, by scope as the file names them (`world::Scope`), so
/// that the rules cost no more per endpoint than the file does.
enum Reach<'j> {
    /// None known (an error was reported).
    Nothing,
    Every,
    Pool(&'j str),
    /// The indices of the endpoints listed, in the file's order.
    Listed(Vec<usize>),
}

/// A `latency` incident, as the overlap rule reads it.
struct Slowdown<'j> {
    i: usize,
    reach: Reach<'j>,
    start: f64,
    end: f64,
    factor: f64,
}

/// Most one endpoint's service time may be multiplied by at once (the largest single factor).
const MAX_SLOWDOWN: f64 = 1e6;

/// Overlapping latency incidents multiply: their product on one endpoint may not exceed
/// [`MAX_SLOWDOWN`], or service times (up to 1e55 s before any incident) would overflow to
/// infinity and the simulated clock with them. The product peaks at some incident's start.
/// Endpoints of one pool that no incident lists meet the same incidents, so only the first of
/// them is checked.
fn check_slowdowns(slowdowns: &[Slowdown], roster: &Roster, out: &mut Vec<Problem>) {
    let mut every = Vec::new();
    let mut by_pool: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut listed = vec![Vec::new(); roster.ids.len()];
    for (k, slowdown) in slowdowns.iter().enumerate() {
        match &slowdown.reach {
            Reach::Nothing => {}
            Reach::Every => every.push(k),
            Reach::Pool(name) => by_pool.entry(name).or_default().push(k),
            Reach::Listed(list) => list.iter().for_each(|&e| listed[e].push(k)),
        }
    }
    let mut clean = BTreeSet::new();
    for (e, id) in roster.ids.iter().enumerate() {
        let pool = roster.pool_of[e];
        if listed[e].is_empty() && clean.contains(&pool) {
            continue;
        }
        let of_pool = pool
            .and_then(|p| by_pool.get(p))
            .map_or(&[][..], Vec::as_slice);
        let mine: Vec<&Slowdown> = crate::world::in_file_order([&every, of_pool, &listed[e]])
            .map(|k| &slowdowns[k])
            .collect();
        let Some((at, product)) = worst_slowdown(&mine) else {
            if listed[e].is_empty() {
                clean.insert(pool);
            }
            continue;
        };
        {
            let product = if product.is_finite() {
                format!("{product:e}")
            } else {
                "more than 1e308".to_string()
            };
            out.push(Problem {
                path: vec![key("incidents"), Seg::Index(at.i), key("factor")],
                target: Target::Value,
                message: format!(
                    "latency incidents overlap on endpoint `{id}` to multiply its service time \
                     by {product} at t = {} s",
                    at.start
                ),
                label: format!("the product may be at most {MAX_SLOWDOWN:e}"),
                help: Some(format!(
                    "factors of overlapping latency incidents multiply; together they may slow \
                     an endpoint down by at most {MAX_SLOWDOWN:e} (one factor's range), or its \
                     service times would overflow the simulated clock"
                )),
            });
            return;
        }
    }
}

/// The first of `mine` (in file order) at whose start the product of the factors then active
/// passes [`MAX_SLOWDOWN`], with that product. A sweep over the starts and ends finds the
/// instants where the sum of the factors' logarithms comes near the limit; the product is then
/// taken exactly, in file order, at those instants only.
fn worst_slowdown<'s, 'j>(mine: &[&'s Slowdown<'j>]) -> Option<(&'s Slowdown<'j>, f64)> {
    // Far above the rounding of a sum of 10^5 logarithms, far below any factor's own size.
    const SLACK: f64 = 1e-6;
    let limit = MAX_SLOWDOWN.ln() - SLACK;
    let mut events: Vec<(f64, f64)> = Vec::with_capacity(2 * mine.len());
    for s in mine {
        events.push((s.start + 0.0, s.factor.ln()));
        if s.end.is_finite() {
            events.push((s.end + 0.0, -s.factor.ln()));
        }
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut near = BTreeSet::new();
    let (mut sum, mut k) = (0.0, 0);
    while k < events.len() {
        let t = events[k].0;
        sum += events[k].1;
        k += 1;
        while k < events.len() && events[k].0.to_bits() == t.to_bits() {
            sum += events[k].1;
            k += 1;
        }
        if sum > limit {
            near.insert(t.to_bits());
        }
    }
    let mut exact = BTreeMap::new();
    mine.iter().find_map(|at| {
        let key = (at.start + 0.0).to_bits();
        if !near.contains(&key) {
            return None;
        }
        let product = *exact.entry(key).or_insert_with(|| {
            mine.iter()
                .filter(|s| s.start <= at.start && at.start < s.end)
                .map(|s| s.factor)
                .product::<f64>()
        });
        (product > MAX_SLOWDOWN).then_some((*at, product))
    })
}

/// The string at `table[].field` of every element of the array `table`, in order.
fn names<'j>(json: &'j Value, table: &str, field: &str) -> Vec<&'j str> {
    json.get(table)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|item| item.get(field).and_then(Value::as_str))
        .collect()
}

fn unknown_help(word: &str, what: &str, known: &[&str]) -> String {
    match schema::did_you_mean(word, known.iter().copied()) {
        Some(best) => format!("did you mean `{best}`?"),
        None if known.is_empty() => format!("no {what} is declared"),
        None => format!(
            "declared {what}s: {}",
            known
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn check_pools(json: &Value, pools: &[&str], out: &mut Vec<Problem>) {
    let mut seen = BTreeSet::new();
    for (i, name) in pools.iter().enumerate() {
        if !seen.insert(*name) {
            out.push(Problem {
                path: vec![key("pools"), Seg::Index(i), key("name")],
                target: Target::Value,
                message: format!("duplicate pool name `{name}`"),
                label: "already used".into(),
                help: Some("pool names must be unique; endpoints refer to them by name".into()),
            });
        }
    }
    let endpoints = json.get("endpoints").and_then(Value::as_array);
    let mut used = BTreeSet::new();
    for (i, endpoint) in endpoints.into_iter().flatten().enumerate() {
        let Some(pool) = endpoint.get("pool").and_then(Value::as_str) else {
            if let Some(first) = pools.first() {
                used.insert(*first);
            }
            continue;
        };
        let path = vec![key("endpoints"), Seg::Index(i), key("pool")];
        if pools.is_empty() {
            out.push(Problem {
                path,
                target: Target::Key,
                message: format!("`pool = \"{pool}\"` but the file declares no `[[pools]]`"),
                label: "no such pool".into(),
                help: Some(format!(
                    "declare the pool first: `[[pools]]` with `name = \"{pool}\"` (the first \
                     pool declared is the primary), or remove `pool` for the single default pool"
                )),
            });
        } else if pools.contains(&pool) {
            used.insert(pool);
        } else {
            out.push(Problem {
                path,
                target: Target::Value,
                message: format!("unknown pool `{pool}`"),
                label: "not a declared pool".into(),
                help: Some(unknown_help(pool, "pool", pools)),
            });
        }
    }
    for (i, name) in pools.iter().enumerate() {
        if !used.contains(name) && seen.contains(name) {
            out.push(Problem {
                path: vec![key("pools"), Seg::Index(i), key("name")],
                target: Target::Value,
                message: format!("pool `{name}` has no endpoints"),
                label: "empty pool".into(),
                help: Some(format!(
                    "put an endpoint in it with `pool = \"{name}\"` (endpoints without `pool` \
                     join the first pool), or remove the pool"
                )),
            });
        }
    }
}

/// The rules of incident `i`; returns the endpoints it reaches (as far as they are known).
#[allow(clippy::too_many_arguments)]
fn check_incident<'j>(
    json: &'j Value,
    i: usize,
    incident: &'j Value,
    pools: &[&'j str],
    roster: &Roster<'j>,
    written: &Written<'_>,
    blame: &Blame<'_>,
    out: &mut Vec<Problem>,
) -> Reach<'j> {
    let at = |name: &str| vec![key("incidents"), Seg::Index(i), key(name)];
    let Some(kind) = string_at(json, &at("kind")) else {
        return Reach::Nothing; // The schema reports a missing or unknown kind.
    };
    for name in ["effect", "factor", "error_rate"] {
        if written(&at(name)) && !kind_keys(kind).contains(&name) {
            out.push(Problem {
                path: at(name),
                target: Target::Key,
                message: format!("`{name}` does not apply to an incident of kind `{kind}`"),
                label: format!("not used by `{kind}`"),
                help: Some(format!(
                    "`effect` belongs to outage, `factor` to capacity, latency and rate_limit, \
                     `error_rate` to storm{}",
                    match kind_keys(kind) {
                        [] => format!("; a `{kind}` incident takes no extra key"),
                        keys => format!("; a `{kind}` incident reads `{}`", keys.join("`, `")),
                    }
                )),
            });
        }
    }
    if kind_keys(kind) == ["factor"] && !written(&at("factor")) {
        out.push(Problem {
            path: vec![key("incidents"), Seg::Index(i)],
            target: Target::Value,
            message: format!("a `{kind}` incident needs `factor`"),
            label: "this incident needs `factor`".into(),
            help: Some(format!(
                "`factor` is the multiplier applied to the endpoint's {} while the incident \
                 lasts (> 0; e.g. 0.5 halves it)",
                match kind {
                    "capacity" => "concurrency limit",
                    "latency" => "service time",
                    _ => "token refill rate",
                }
            )),
        });
    }
    check_window(json, i, kind, written, blame, out);
    let reach = check_targets(i, incident, pools, roster, written, out);
    if kind == "rate_limit" {
        check_metered(i, roster, &reach, out);
    }
    reach
}

fn check_window(
    json: &Value,
    i: usize,
    kind: &str,
    written: &Written<'_>,
    blame: &Blame<'_>,
    out: &mut Vec<Problem>,
) {
    let at = |name: &str| vec![key("incidents"), Seg::Index(i), key(name)];
    if kind == "revoke" && written(&at("end_s")) {
        out.push(Problem {
            path: at("end_s"),
            target: Target::Key,
            message: "a `revoke` incident has no end".into(),
            label: "a revoked key stays revoked".into(),
            help: Some(
                "the client stops using a key once it is told the key is revoked, so the \
                 incident lasts for good; for a temporary failure use `kind = \"outage\"`"
                    .into(),
            ),
        });
        return;
    }
    if !written(&at("end_s")) {
        if !matches!(kind, "revoke" | "outage") {
            out.push(Problem {
                path: vec![key("incidents"), Seg::Index(i)],
                target: Target::Value,
                message: format!("a `{kind}` incident needs `end_s`"),
                label: "this incident needs `end_s`".into(),
                help: Some(
                    "incidents last for [start_s, end_s); only an `outage` (a dead endpoint) or \
                     a `revoke` may last for good"
                        .into(),
                ),
            });
        }
        return;
    }
    if let (Some(start), Some(end)) = (number(json, &at("start_s")), number(json, &at("end_s")))
        && end <= start
    {
        out.push(Problem {
            path: blame(&[at("end_s"), at("start_s")]),
            target: Target::Value,
            message: format!(
                "`end_s` ({}) is not after `start_s` ({})",
                crate::diagnostics::show_number(end),
                crate::diagnostics::show_number(start)
            ),
            label: "ends before it starts".into(),
            help: Some("an incident lasts for [start_s, end_s): end_s > start_s".into()),
        });
    }
}

/// Checks `endpoints` / `pool` of incident `i` and returns the endpoints it affects (those
/// that exist).
fn check_targets<'j>(
    i: usize,
    incident: &'j Value,
    pools: &[&'j str],
    roster: &Roster<'j>,
    written: &Written<'_>,
    out: &mut Vec<Problem>,
) -> Reach<'j> {
    let at = |name: &str| vec![key("incidents"), Seg::Index(i), key(name)];
    if written(&at("endpoints")) && written(&at("pool")) {
        out.push(Problem {
            path: at("pool"),
            target: Target::Key,
            message: "an incident names either `endpoints` or `pool`, not both".into(),
            label: "remove one".into(),
            help: Some(
                "`endpoints = [\"a\", \"b\"]` picks endpoints by id; `pool = \"x\"` picks every \
                 endpoint of a pool"
                    .into(),
            ),
        });
        return Reach::Nothing;
    }
    if let Some(list) = incident.get("endpoints").and_then(Value::as_array) {
        let mut found = Vec::new();
        let mut seen = BTreeSet::new();
        for (j, id) in list.iter().enumerate() {
            let Some(id) = id.as_str() else { continue };
            match roster.index.get(id).copied() {
                // Named twice, an endpoint would take the incident twice (a latency factor
                // squared, past the overlap guard).
                Some(e) if !seen.insert(e) => out.push(Problem {
                    path: vec![
                        key("incidents"),
                        Seg::Index(i),
                        key("endpoints"),
                        Seg::Index(j),
                    ],
                    target: Target::Value,
                    message: format!("endpoint `{id}` is listed twice"),
                    label: "already listed".into(),
                    help: Some("name each endpoint once".into()),
                }),
                Some(e) => found.push(e),
                None => out.push(Problem {
                    path: vec![
                        key("incidents"),
                        Seg::Index(i),
                        key("endpoints"),
                        Seg::Index(j),
                    ],
                    target: Target::Value,
                    message: format!("unknown endpoint `{id}`"),
                    label: "not an endpoint id".into(),
                    help: Some(unknown_help(id, "endpoint id", &roster.ids)),
                }),
            }
        }
        return Reach::Listed(found);
    }
    if let Some(pool) = incident.get("pool").and_then(Value::as_str) {
        if !pools.contains(&pool) {
            out.push(Problem {
                path: at("pool"),
                target: Target::Value,
                message: format!("unknown pool `{pool}`"),
                label: "not a declared pool".into(),
                help: Some(unknown_help(pool, "pool", pools)),
            });
            return Reach::Nothing;
        }
        return Reach::Pool(pool);
    }
    Reach::Every
}

/// A `rate_limit` incident must reach a metered endpoint, or it would silently do nothing.
fn check_metered(i: usize, roster: &Roster, reach: &Reach, out: &mut Vec<Problem>) {
    let mut members = roster.members(reach).peekable();
    if members.peek().is_none() || members.any(|e| roster.metered[e]) {
        return;
    }
    out.push(Problem {
        path: vec![key("incidents"), Seg::Index(i), key("kind")],
        target: Target::Value,
        message: "a `rate_limit` incident on endpoints without a rate limit".into(),
        label: "nothing to change".into(),
        help: Some(
            "none of the endpoints it affects has `[endpoints.rate_limit]`; give one a rate \
             limit, or pick metered endpoints"
                .into(),
        ),
    });
}

/// The compiled pools, and each endpoint's pool index in world order.
pub(super) fn build_pools(s: &Scenario) -> (Vec<PoolSpec>, Vec<usize>) {
    let mut pools: Vec<PoolSpec> = if s.pools.is_empty() {
        vec![PoolSpec {
            name: DEFAULT_POOL.into(),
            selection: Selection::LeastBusy,
            members: Vec::new(),
        }]
    } else {
        s.pools
            .iter()
            .map(|p| PoolSpec {
                name: p.name.clone(),
                selection: match p.selection {
                    spec::Selection::LeastBusy => Selection::LeastBusy,
                    spec::Selection::RoundRobin => Selection::RoundRobin,
                    spec::Selection::InOrder => Selection::InOrder,
                },
                members: Vec::new(),
            })
            .collect()
    };
    let of_endpoint: Vec<usize> = s
        .endpoints
        .iter()
        .map(|e| {
            e.pool
                .as_ref()
                .and_then(|name| pools.iter().position(|p| &p.name == name))
                .unwrap_or(0)
        })
        .collect();
    for (e, &p) in of_endpoint.iter().enumerate() {
        pools[p].members.push(e);
    }
    (pools, of_endpoint)
}

/// The compiled incidents, endpoints resolved to indices.
pub(super) fn build_incidents(s: &Scenario, pools: &[PoolSpec]) -> Vec<Incident> {
    let mut index = BTreeMap::new();
    for (e, endpoint) in s.endpoints.iter().enumerate() {
        index.entry(endpoint.id.as_str()).or_insert(e);
    }
    s.incidents
        .iter()
        .map(|i| {
            let scope = match (&i.endpoints, &i.pool) {
                (Some(ids), _) => Scope::Listed(
                    ids.iter()
                        .filter_map(|id| index.get(id.as_str()).copied())
                        .collect(),
                ),
                (None, Some(pool)) => pools
                    .iter()
                    .position(|p| &p.name == pool)
                    .map_or(Scope::Listed(Vec::new()), Scope::Pool),
                (None, None) => Scope::Everywhere,
            };
            let factor = i.factor.unwrap_or(1.0);
            let effect = match i.kind {
                spec::IncidentKind::Outage => Effect::Outage {
                    error: i.effect.unwrap_or_default() == spec::OutageEffect::Error,
                },
                spec::IncidentKind::Capacity => Effect::Capacity(factor),
                spec::IncidentKind::Latency => Effect::Latency(factor),
                spec::IncidentKind::Storm => Effect::Storm(i.error_rate),
                spec::IncidentKind::RateLimit => Effect::RateLimit(factor),
                spec::IncidentKind::Revoke => Effect::Revoke,
            };
            Incident {
                effect,
                scope,
                start_s: i.start_s,
                end_s: i.end_s.unwrap_or(f64::INFINITY),
            }
        })
        .collect()
}

/// The compiled reuse cache of an endpoint.
pub(super) fn build_cache(c: &spec::Cache) -> Cache {
    Cache {
        ttl_s: c.ttl_s,
        latency_factor: c.latency_factor,
        token_cost: c.token_cost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep finds the same first slowdown, and the same product, as taking the product at
    /// every start: over random overlapping sets, many of them close to the limit.
    #[test]
    fn the_sweep_finds_what_every_product_finds() {
        let mut x = 5u64;
        let mut unit = || {
            x = crate::rng::mix64(x);
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut found, mut clean) = (0, 0);
        for _ in 0..3_000 {
            let n = 1 + (unit() * 30.0) as usize;
            let set: Vec<Slowdown> = (0..n)
                .map(|i| {
                    let start = (unit() * 20.0).floor() * 0.5;
                    Slowdown {
                        i,
                        reach: Reach::Nothing,
                        start,
                        end: if unit() < 0.1 {
                            f64::INFINITY
                        } else {
                            start + 0.5 + (unit() * 8.0).floor()
                        },
                        factor: [0.5, 2.0, 10.0, 100.0, 1e3, 1e6, 0.001][(unit() * 7.0) as usize],
                    }
                })
                .collect();
            let mine: Vec<&Slowdown> = set.iter().collect();
            let every = mine.iter().find_map(|at| {
                let product: f64 = mine
                    .iter()
                    .filter(|s| s.start <= at.start && at.start < s.end)
                    .map(|s| s.factor)
                    .product();
                (product > MAX_SLOWDOWN).then_some((at.i, product))
            });
            let swept = worst_slowdown(&mine).map(|(at, product)| (at.i, product));
            assert_eq!(swept, every);
            if every.is_some() {
                found += 1;
            } else {
                clean += 1;
            }
        }
        assert!(found > 300 && clean > 300, "{found} found, {clean} clean");
    }
}
