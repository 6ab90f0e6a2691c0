//! The world hash: a short content hash of a compiled [`World`], so that a shared result names
//! exactly the world it came from.
//!
//! The hash covers every value the simulation reads — the world after `--jobs`, `--concurrency`
//! and `--horizon` overrides, every endpoint, the cycle, the retry policy, the breaker, the failure
//! split, the unsuited list and the `[algorithms]` parameters and variants — and nothing about the
//! file it came from: key order, comments, whitespace, number spelling (`1.0` vs `1`) and
//! defaulted-versus-written values do not change it. It does not cover which algorithms ran, the
//! seeds, the random-number scheme or the `[objective]` (which judges runs and never changes
//! one); the JSON names those separately. Never reads a file.
//!
//! Method: a canonical text (one `key=value` line per field; floats by their exact bit pattern)
//! hashed with 64-bit FNV-1a and printed as 16 hex digits. FNV-1a is not collision-resistant
//! against an adversary; it identifies, it does not authenticate.

use std::fmt::Write;

use crate::tokens::{Charge, Limit, Price, Saturation, Size, TokenLatency, Tokens};
use crate::world::{
    Backoff, Breaker, Cache, Cycle, Effect, Endpoint, FailureKinds, Failures, Incident, Latency,
    Load, PoolSpec, RateLimit, Recovery, RetryBudget, RetryPolicy, Selection, Throttle, Validity,
    Variant, World,
};

/// The world hash: 16 lowercase hex digits.
pub fn world_hash(world: &World) -> String {
    let mut hash = Fnv1a::default();
    canonical(world, &mut Text(&mut hash));
    hash.hex()
}

/// The text the hash is taken over.
pub fn canonical_text(world: &World) -> String {
    let mut text = String::new();
    canonical(world, &mut Text(&mut text));
    text
}

/// Writes the canonical text into `out` (the hash takes it piece by piece: a world of many
/// incidents on many endpoints has a long text). Every struct is destructured without `..`
/// where its fields are visible, so adding a field to the world fails to compile until it is
/// hashed here.
fn canonical(world: &World, out: &mut Text) {
    let World {
        name,
        summary,
        seed,
        jobs,
        concurrency,
        horizon_s,
        steps_per_job,
        calls_per_step,
        cycle,
        retry,
        breaker,
        capacity_retry_after_s,
        failure_kinds,
        endpoints,
        unsuited,
        algorithms,
        load,
        validity,
        pools,
        incidents,
        recovery,
        tokens,
        // The objective judges runs and never changes one; the JSON states it separately.
        objective: _,
        thresholds: _,
    } = world;
    out.str("name", name);
    out.str("summary", summary);
    out.int("seed", *seed);
    out.int("jobs", *jobs);
    // Only a closed loop has workers; an open loop's or a trace's leftover value (from a base
    // file) is not read, so it does not name the world.
    if matches!(load, Load::Closed { .. }) {
        out.int("concurrency", *concurrency);
    }
    out.float("horizon_s", *horizon_s);
    out.int("steps_per_job", *steps_per_job);
    out.int("calls_per_step", *calls_per_step);
    cycle_text(out, cycle);
    retry_text(out, retry);
    let Breaker {
        degrade_after,
        dead_after,
        cooldown_s,
    } = breaker;
    out.int("breaker.degrade_after", *degrade_after);
    out.int("breaker.dead_after", *dead_after);
    out.float("breaker.cooldown_s", *cooldown_s);
    out.float("capacity_retry_after_s", *capacity_retry_after_s);
    let FailureKinds {
        http_503,
        connection,
        timeout,
    } = failure_kinds;
    out.float("failure_kinds.http_503", *http_503);
    out.float("failure_kinds.connection", *connection);
    out.float("failure_kinds.timeout", *timeout);
    out.int("endpoints", endpoints.len() as u64);
    for endpoint in endpoints {
        endpoint_text(out, endpoint);
    }
    match load {
        Load::Closed { think } => {
            out.str("load.model", "closed");
            // Absent without a pause, so a world without one keeps its fingerprint.
            if let Some(think) = think {
                out.float("load.think_s", think.mean_s);
                let spread = if think.exponential {
                    "exponential"
                } else {
                    "fixed"
                };
                out.str("load.think", spread);
            }
        }
        Load::Open {
            rate_per_s,
            poisson,
            max_in_flight,
        } => {
            out.str("load.model", "open");
            out.float("load.rate_per_s", *rate_per_s);
            out.str(
                "load.arrivals",
                if *poisson { "poisson" } else { "uniform" },
            );
            out.int("load.max_in_flight", max_in_flight.map_or(0, u64::from));
        }
        Load::Trace {
            replay,
            max_in_flight,
        } => {
            out.str("load.model", "trace");
            out.int("load.trace.jobs", replay.jobs() as u64);
            out.int("load.trace.digest", replay.digest);
            out.int("load.max_in_flight", max_in_flight.map_or(0, u64::from));
        }
    }
    let Validity {
        max_queue_share,
        knee_concurrency,
    } = validity;
    out.float("validity.max_queue_share", *max_queue_share);
    out.int(
        "validity.knee_concurrency",
        knee_concurrency.map_or(0, u64::from),
    );
    for (algorithm, reason) in unsuited {
        out.str(&format!("unsuited.{algorithm}"), reason);
    }
    variants_text(out, algorithms);
    topology_text(out, world, pools, incidents, recovery);
    if let Some(tokens) = tokens {
        tokens_text(out, tokens);
    }
}

/// `[tokens]`; a world without it adds no line, so older worlds keep their hashes.
fn tokens_text(out: &mut Text, tokens: &Tokens) {
    let Tokens {
        input,
        output,
        max_tokens,
        context_grows,
        request_timeout_s,
    } = tokens;
    size_text(out, "tokens.input", input);
    size_text(out, "tokens.output", output);
    out.float("tokens.max_tokens", *max_tokens);
    out.str(
        "tokens.context",
        if *context_grows { "grows" } else { "fixed" },
    );
    out.opt_float("tokens.request_timeout_s", *request_timeout_s);
}

fn size_text(out: &mut Text, key: &str, size: &Size) {
    match size {
        Size::Constant(n) => out.float(&format!("{key}.constant"), *n),
        Size::Uniform { min, max } => {
            out.float(&format!("{key}.uniform.min"), *min);
            out.float(&format!("{key}.uniform.max"), *max);
        }
        Size::Lognormal { median, sigma } => {
            out.float(&format!("{key}.lognormal.median"), *median);
            out.float(&format!("{key}.lognormal.sigma"), *sigma);
        }
        Size::Empirical(points) => {
            for (q, v) in points {
                out.float(&format!("{key}.empirical.q"), *q);
                out.float(&format!("{key}.empirical.v"), *v);
            }
        }
    }
}

/// An endpoint's LLM keys; an endpoint without any adds no line.
fn llm_endpoint_text(
    out: &mut Text,
    limits: &[Limit],
    charge: Charge,
    price: Option<&Price>,
    saturation: Saturation,
    client_cap: Option<u32>,
) {
    for Limit {
        unit,
        limit,
        window_s,
        reset,
    } in limits
    {
        out.str("limit.unit", unit.name());
        out.float("limit.limit", *limit);
        out.float("limit.window_s", *window_s);
        out.str("limit.reset", &format!("{reset:?}"));
    }
    if !limits.is_empty() || price.is_some() {
        out.str("endpoint.token_charge", &format!("{charge:?}"));
    }
    if let Some(Price {
        input_per_mtok,
        output_per_mtok,
        cached_input_per_mtok,
    }) = price
    {
        out.float("price.input_per_mtok", *input_per_mtok);
        out.float("price.output_per_mtok", *output_per_mtok);
        out.float("price.cached_input_per_mtok", *cached_input_per_mtok);
    }
    if saturation != Saturation::RateLimit {
        out.str("endpoint.saturated", &format!("{saturation:?}"));
    }
    if let Some(cap) = client_cap {
        out.int("endpoint.client_cap", cap);
    }
}

/// Pools, incidents and the recovery measure. A world with the implicit single pool and no
/// incident adds no line, so the hashes of worlds written before pools existed do not change.
fn topology_text(
    out: &mut Text,
    world: &World,
    pools: &[PoolSpec],
    incidents: &[Incident],
    recovery: &Recovery,
) {
    let implicit = matches!(pools, [only] if only.name == crate::compile::DEFAULT_POOL
        && only.selection == Selection::LeastBusy);
    if !implicit {
        for pool in pools {
            let PoolSpec {
                name,
                selection,
                members,
            } = pool;
            out.str("pool.name", name);
            out.str("pool.selection", selection.name());
            out.str("pool.members", &format!("{members:?}"));
        }
    }
    for incident in incidents {
        let Incident {
            effect,
            scope: _, // as the endpoints it reaches, below
            start_s,
            end_s,
        } = incident;
        let (kind, value) = match *effect {
            Effect::Outage { error } => ("outage", f64::from(u8::from(error))),
            Effect::Capacity(f) => ("capacity", f),
            Effect::Latency(f) => ("latency", f),
            // A rate equal to the `storm_error_rate` of every endpoint it reaches is that
            // default written out: hashed as the default (−1).
            Effect::Storm(rate) => {
                let written = rate.filter(|&r| {
                    world
                        .reach(incident)
                        .any(|e| world.endpoints()[e].failures.storm_error_rate != r)
                });
                ("storm", written.unwrap_or(-1.0))
            }
            Effect::RateLimit(f) => ("rate_limit", f),
            Effect::Revoke => ("revoke", 0.0),
        };
        out.str("incident.kind", kind);
        out.float("incident.value", value);
        out.list("incident.endpoints", world.reach(incident));
        out.float("incident.start_s", *start_s);
        out.float("incident.end_s", *end_s);
    }
    if !incidents.is_empty() {
        let Recovery {
            window_s,
            threshold,
        } = recovery;
        out.float("recovery.window_s", *window_s);
        out.float("recovery.threshold", *threshold);
    }
}

/// `[algorithms]` tables by name (file order does not change the hash); each with its kind and
/// the non-default parameter values the world keeps.
fn variants_text(out: &mut Text, variants: &[Variant]) {
    let mut sorted: Vec<&Variant> = variants.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for variant in sorted {
        let Variant { name, kind, params } = variant;
        out.str(&format!("algorithms.{name}.kind"), kind);
        for (param, value) in params {
            out.float(&format!("algorithms.{name}.{param}"), *value);
        }
    }
}

/// Cycle keeps derived constants private; they follow from the four fields hashed here.
fn cycle_text(out: &mut Text, cycle: &Cycle) {
    out.float("cycle.period_s", cycle.period_s);
    out.float("cycle.trough", cycle.trough);
    out.float("cycle.peak", cycle.peak);
    out.float("cycle.phase_s", cycle.phase_s);
}

fn retry_text(out: &mut Text, retry: &RetryPolicy) {
    let RetryPolicy {
        max_attempts,
        backoff,
        retry_classified,
        retry_unknown,
        retry_after_spread,
        max_total_s,
        budget,
        throttle,
    } = retry;
    let Backoff {
        base,
        factor,
        cap,
        jitter,
    } = backoff;
    out.int("retry.max_attempts", *max_attempts);
    out.float("retry.base", *base);
    out.float("retry.factor", *factor);
    out.float("retry.cap", *cap);
    out.str("retry.jitter", jitter.name());
    out.int("retry.retry_classified", u8::from(*retry_classified));
    out.int("retry.retry_unknown", u8::from(*retry_unknown));
    out.opt_float("retry.max_total_s", *max_total_s);
    // Hashed only when set, so worlds written before the option keep their hash.
    if *retry_after_spread != 0.0 {
        out.float("retry.retry_after_spread", *retry_after_spread);
    }
    // Absent options add no line, so worlds without them keep their hash.
    if let Some(RetryBudget {
        ratio,
        min_per_s,
        window_s,
    }) = budget
    {
        out.float("retry.budget.ratio", *ratio);
        out.float("retry.budget.min_per_s", *min_per_s);
        out.float("retry.budget.window_s", *window_s);
    }
    if let Some(Throttle { k, window_s }) = throttle {
        out.float("retry.throttle.k", *k);
        out.float("retry.throttle.window_s", *window_s);
    }
}

fn endpoint_text(out: &mut Text, endpoint: &Endpoint) {
    let Endpoint {
        id,
        capacity,
        weight,
        quota_units,
        latency,
        failures,
        rate_limit,
        pool: _, // Hashed with the pools' member lists.
        cache,
        limits,
        charge,
        price,
        saturation,
        client_cap,
    } = endpoint;
    out.str("endpoint.id", id);
    out.int("endpoint.capacity", *capacity);
    out.float("endpoint.weight", *weight);
    out.opt_float("endpoint.quota_units", *quota_units);
    let Latency {
        distribution,
        mean_s,
        median_s,
        sigma,
        tail_rate,
        tail_factor,
        tokens,
        quantiles,
    } = latency;
    out.str("latency.distribution", &format!("{distribution:?}"));
    out.float("latency.mean_s", *mean_s);
    out.float("latency.median_s", *median_s);
    out.float("latency.sigma", *sigma);
    out.float("latency.tail_rate", *tail_rate);
    out.float("latency.tail_factor", *tail_factor);
    if let Some(TokenLatency {
        ttft_s,
        ttft_per_1k_input_s,
        ttft_load,
        decode_tokens_per_s,
        load_slowdown,
    }) = tokens
    {
        out.float("latency.ttft_s", *ttft_s);
        out.float("latency.ttft_per_1k_input_s", *ttft_per_1k_input_s);
        out.float("latency.ttft_load", *ttft_load);
        out.float("latency.decode_tokens_per_s", *decode_tokens_per_s);
        out.float("latency.load_slowdown", *load_slowdown);
    }
    // Only an empirical latency has points, so other worlds keep their hashes.
    for (q, v) in quantiles {
        out.float("latency.empirical.q", *q);
        out.float("latency.empirical.v", *v);
    }
    let Failures {
        error_rate,
        storm_rate,
        storm_check_s,
        storm_duration_s,
        storm_error_rate,
    } = failures;
    out.float("failures.error_rate", *error_rate);
    out.float("failures.storm_rate", *storm_rate);
    out.float("failures.storm_check_s", *storm_check_s);
    out.float("failures.storm_duration_s", *storm_duration_s);
    out.float("failures.storm_error_rate", *storm_error_rate);
    match rate_limit {
        None => out.str("rate_limit", "none"),
        Some(limit) => rate_limit_text(out, limit),
    }
    if let Some(Cache {
        ttl_s,
        latency_factor,
        token_cost,
    }) = cache
    {
        out.float("cache.ttl_s", *ttl_s);
        out.float("cache.latency_factor", *latency_factor);
        out.float("cache.token_cost", *token_cost);
    }
    // A cap equal to the pool capacity it would default to is that default written out.
    let cap = client_cap.filter(|&c| c != (*capacity).max(1));
    llm_endpoint_text(out, limits, *charge, price.as_ref(), *saturation, cap);
}

fn rate_limit_text(out: &mut Text, limit: &RateLimit) {
    let RateLimit {
        per_window,
        window_s,
        burst,
        retry_after_s,
        tightening,
        tightening_floor,
        recovery_per_window,
        refill_per_s: _, // Derived from per_window and window_s.
        burst_size: _,   // Derived from per_window and burst.
    } = limit;
    out.int("rate_limit.per_window", *per_window);
    out.float("rate_limit.window_s", *window_s);
    out.float("rate_limit.burst", *burst);
    out.float("rate_limit.retry_after_s", *retry_after_s);
    out.float("rate_limit.tightening", *tightening);
    out.float("rate_limit.tightening_floor", *tightening_floor);
    out.float("rate_limit.recovery_per_window", *recovery_per_window);
}

/// Builder of the canonical text; strings are `{:?}`-quoted so no value can forge a line break.
/// Where the canonical text goes: a string, or the hash.
struct Text<'a>(&'a mut dyn Write);

impl Text<'_> {
    /// `key="[0, 1, 2]"`, as `str` writes the `Debug` text of the list, without building it.
    fn list(&mut self, key: &str, items: impl Iterator<Item = usize>) {
        let _ = write!(self.0, "{key}=\"[");
        for (k, item) in items.enumerate() {
            let _ = write!(self.0, "{}{item}", if k == 0 { "" } else { ", " });
        }
        let _ = writeln!(self.0, "]\"");
    }
    fn str(&mut self, key: &str, value: &str) {
        let _ = writeln!(self.0, "{key}={value:?}");
    }
    fn int(&mut self, key: &str, value: impl Into<u64>) {
        let _ = writeln!(self.0, "{key}={}", value.into());
    }
    /// Floats by bit pattern (with `-0.0` folded into `0.0`), so the text is exact and does not
    /// depend on how Rust prints floats.
    fn float(&mut self, key: &str, value: f64) {
        let value = if value == 0.0 { 0.0 } else { value };
        let _ = writeln!(self.0, "{key}=f{:016x}", value.to_bits());
    }
    fn opt_float(&mut self, key: &str, value: Option<f64>) {
        match value {
            Some(v) => self.float(key, v),
            None => self.str(key, "none"),
        }
    }
}

/// 16 hex digits of FNV-1a over `text`: the name of a canonical text other than a world's (a
/// grid plan's).
pub fn hash_text(text: &str) -> String {
    format!("{:016x}", fnv1a64(text.as_bytes()))
}

/// 64-bit FNV-1a.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash = Fnv1a::default();
    hash.feed(bytes);
    hash.0
}

/// 64-bit FNV-1a fed piece by piece, e.g. by a serializer writing into it: a checksum against
/// damage and hand edits, not against forgery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Fnv1a {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    /// Adds `bytes`.
    pub fn feed(&mut self, bytes: &[u8]) {
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        self.0 = bytes
            .iter()
            .fold(self.0, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME));
    }

    /// 16 hex digits of what was fed.
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

impl Write for Fnv1a {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.feed(text.as_bytes());
        Ok(())
    }
}

impl std::io::Write for Fnv1a {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.feed(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile;
    use crate::world::Overrides;

    #[test]
    fn fnv_matches_the_published_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn formatting_does_not_change_the_hash_but_values_do() {
        let base = compile::builtin_bursty();
        let reformatted = compile::BUILTIN_BURSTY_TOML
            .replace("horizon_s = 600.0", "# a comment\nhorizon_s   =   600")
            .replace("tail_factor = 5.0", "tail_factor = 5.000");
        let same = compile::load("other.toml", reformatted.as_bytes()).expect("still valid");
        assert_eq!(world_hash(&base), world_hash(&same));
        let more_jobs = base.with_overrides(&Overrides {
            jobs: Some(3001),
            ..Overrides::default()
        });
        assert_ne!(world_hash(&base), world_hash(&more_jobs));
        let tweaked =
            compile::BUILTIN_BURSTY_TOML.replace("tail_factor = 5.0", "tail_factor = 5.01");
        let tweaked = compile::load("t.toml", tweaked.as_bytes()).expect("valid");
        assert_ne!(world_hash(&base), world_hash(&tweaked));
        assert_eq!(world_hash(&base).len(), 16);
    }

    #[test]
    fn a_default_written_out_hashes_as_the_default() {
        let hash = |endpoint_extra: &str, storm: &str| {
            let text = format!(
                "name = \"d\"\nsummary = \"defaults\"\n[[endpoints]]\nid = \"a\"\ncapacity = 4\n\
                 latency = {{ median_s = 0.1 }}\n\
                 failures = {{ storm_error_rate = 0.5 }}\n{endpoint_extra}\n\
                 [[incidents]]\nkind = \"storm\"\nstart_s = 10\nend_s = 20\n{storm}\n"
            );
            world_hash(&compile::load("d.toml", text.as_bytes()).expect("valid"))
        };
        let base = hash("", "");
        assert_eq!(hash("client_cap = 4", ""), base, "the cap is the capacity");
        assert_eq!(
            hash("", "error_rate = 0.5"),
            base,
            "the endpoint's storm rate"
        );
        assert_ne!(hash("client_cap = 3", ""), base);
        assert_ne!(hash("", "error_rate = 0.6"), base);
    }
}
