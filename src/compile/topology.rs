//! Pools, incidents and reuse caches: the rules that tie them to endpoints (a name must exist,
//! a pool needs an endpoint, an incident's keys must fit its kind) and their compiled form.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Blame, Written, key, number, string_at};
use crate::diagnostics::Seg;
use crate::scenario::{self as spec, Scenario};
use crate::schema::{self, Problem, Target};
use crate::world::{Cache, Effect, Incident, PoolSpec, Selection};

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
    let ids = names(json, "endpoints", "id");
    check_pools(json, &pools, out);
    let incidents = json.get("incidents").and_then(Value::as_array);
    let mut slowdowns = Vec::new();
    for (i, incident) in incidents.into_iter().flatten().enumerate() {
        let targets = check_incident(json, i, incident, &pools, &ids, written, blame, out);
        let number = |name: &str| incident.get(name).and_then(Value::as_f64);
        if incident.get("kind").and_then(Value::as_str) == Some("latency")
            && let (Some(start), Some(factor)) = (number("start_s"), number("factor"))
        {
            let end = number("end_s").unwrap_or(f64::INFINITY);
            slowdowns.push(Slowdown {
                i,
                targets,
                start,
                end,
                factor,
            });
        }
    }
    check_slowdowns(&slowdowns, &ids, out);
}

/// A `latency` incident, as the overlap rule reads it.
struct Slowdown {
    i: usize,
    targets: Vec<usize>,
    start: f64,
    end: f64,
    factor: f64,
}

/// Most one endpoint's service time may be multiplied by at once (the largest single factor).
const MAX_SLOWDOWN: f64 = 1e6;

/// Overlapping latency incidents multiply: their product on one endpoint may not exceed
/// [`MAX_SLOWDOWN`], or service times (up to 1e55 s before any incident) would overflow to
/// infinity and the simulated clock with them. The product peaks at some incident's start.
fn check_slowdowns(slowdowns: &[Slowdown], ids: &[&str], out: &mut Vec<Problem>) {
    for (e, id) in ids.iter().enumerate() {
        let mine: Vec<&Slowdown> = slowdowns
            .iter()
            .filter(|s| s.targets.contains(&e))
            .collect();
        let worst = mine.iter().find_map(|at| {
            let active = mine
                .iter()
                .filter(|s| s.start <= at.start && at.start < s.end);
            let product: f64 = active.map(|s| s.factor).product();
            (product > MAX_SLOWDOWN).then_some((at, product))
        });
        if let Some((at, product)) = worst {
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
fn check_incident(
    json: &Value,
    i: usize,
    incident: &Value,
    pools: &[&str],
    ids: &[&str],
    written: &Written<'_>,
    blame: &Blame<'_>,
    out: &mut Vec<Problem>,
) -> Vec<usize> {
    let at = |name: &str| vec![key("incidents"), Seg::Index(i), key(name)];
    let Some(kind) = string_at(json, &at("kind")) else {
        return Vec::new(); // The schema reports a missing or unknown kind.
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
    let targets = check_targets(json, i, incident, pools, ids, written, out);
    if kind == "rate_limit" {
        check_metered(json, i, &targets, out);
    }
    targets
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

/// Checks `endpoints` / `pool` of incident `i` and returns the indices of the endpoints it
/// affects (those that exist).
#[allow(clippy::too_many_arguments)]
fn check_targets(
    json: &Value,
    i: usize,
    incident: &Value,
    pools: &[&str],
    ids: &[&str],
    written: &Written<'_>,
    out: &mut Vec<Problem>,
) -> Vec<usize> {
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
        return Vec::new();
    }
    if let Some(list) = incident.get("endpoints").and_then(Value::as_array) {
        let mut found = Vec::new();
        for (j, id) in list.iter().enumerate() {
            let Some(id) = id.as_str() else { continue };
            match ids.iter().position(|known| *known == id) {
                // Named twice, an endpoint would take the incident twice (a latency factor
                // squared, past the overlap guard).
                Some(e) if found.contains(&e) => out.push(Problem {
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
                    help: Some(unknown_help(id, "endpoint id", ids)),
                }),
            }
        }
        return found;
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
            return Vec::new();
        }
        return members_of(json, pool, pools);
    }
    (0..ids.len()).collect()
}

/// Indices of the endpoints of pool `pool` (endpoints without `pool` join the first).
fn members_of(json: &Value, pool: &str, pools: &[&str]) -> Vec<usize> {
    let endpoints = json.get("endpoints").and_then(Value::as_array);
    endpoints
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, e)| {
            e.get("pool")
                .and_then(Value::as_str)
                .or(pools.first().copied())
                == Some(pool)
        })
        .map(|(e, _)| e)
        .collect()
}

/// A `rate_limit` incident must reach a metered endpoint, or it would silently do nothing.
fn check_metered(json: &Value, i: usize, targets: &[usize], out: &mut Vec<Problem>) {
    let endpoints = json.get("endpoints").and_then(Value::as_array);
    let metered = |e: usize| {
        endpoints
            .and_then(|list| list.get(e))
            .and_then(|endpoint| endpoint.get("rate_limit"))
            .is_some()
    };
    if targets.is_empty() || targets.iter().any(|&e| metered(e)) {
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
    s.incidents
        .iter()
        .map(|i| {
            let endpoints = match (&i.endpoints, &i.pool) {
                (Some(ids), _) => ids
                    .iter()
                    .filter_map(|id| s.endpoints.iter().position(|e| &e.id == id))
                    .collect(),
                (None, Some(pool)) => pools
                    .iter()
                    .find(|p| &p.name == pool)
                    .map(|p| p.members.clone())
                    .unwrap_or_default(),
                (None, None) => (0..s.endpoints.len()).collect(),
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
                endpoints,
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
