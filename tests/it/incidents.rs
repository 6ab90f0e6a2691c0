//! Scripted incidents: each kind pinned at the edges of its window `[start_s, end_s)`, on the
//! provider directly (so the numbers are the world's, not a strategy's), plus what the client
//! does with a revoked key.

use simbench::compile;
use simbench::harness::{self, RngScheme, RunConfig};
use simbench::provider::timeline::Timeline;
use simbench::provider::{Arrival, FailureKind, Provider, Rejection};
use simbench::rng::Native;
use simbench::world::World;

/// One endpoint, constant 1 s latency, no errors, no storms, flat cycle, plus `extra` TOML
/// (an `[[incidents]]` table, a rate limit).
fn world(endpoint_extra: &str, incidents: &str) -> World {
    let text = format!(
        r#"
name = "incident_probe"
summary = "One endpoint with a scripted incident."
jobs = 10
concurrency = 2
[cycle]
period_s = 0.0
[[endpoints]]
id = "only"
capacity = 4
latency = {{ distribution = "constant", mean_s = 1.0, tail_rate = 0.0 }}
failures = {{ error_rate = 0.0, storm_rate = 0.0 }}
{endpoint_extra}
{incidents}
"#
    );
    compile::load("probe.toml", text.as_bytes()).unwrap_or_else(|e| panic!("{}", e.render_plain()))
}

/// The provider's answer to one request at `t` on a fresh provider.
fn answer(world: &World, t: f64) -> Arrival {
    let rng = Native::new(1, ["only"]);
    Provider::new(world).arrive(0, t, &rng, false, None)
}

const EDGES: [(f64, bool); 4] = [(9.999, false), (10.0, true), (19.999, true), (20.0, false)];

#[test]
fn incident_outage_refuses_inside_its_window_only() {
    let w = world(
        "",
        "[[incidents]]\nkind = \"outage\"\nstart_s = 10.0\nend_s = 20.0",
    );
    for (t, inside) in EDGES {
        let a = answer(&w, t);
        assert_eq!(
            a == Arrival::Rejected(Rejection::Outage),
            inside,
            "t = {t}: {a:?}"
        );
        if !inside {
            assert!(
                matches!(a, Arrival::Admitted { failure: None, .. }),
                "{a:?}"
            );
        }
    }
}

#[test]
fn incident_failing_outage_admits_then_fails_inside_its_window_only() {
    let w = world(
        "",
        "[[incidents]]\nkind = \"outage\"\neffect = \"error\"\nstart_s = 10.0\nend_s = 20.0",
    );
    for (t, inside) in EDGES {
        let Arrival::Admitted {
            failure, latency_s, ..
        } = answer(&w, t)
        else {
            panic!("t = {t}: a failing outage still admits");
        };
        assert_eq!(latency_s, 1.0);
        assert_eq!(failure, inside.then_some(FailureKind::Upstream), "t = {t}");
    }
}

#[test]
fn incident_capacity_factor_applies_inside_its_window_and_overlaps_multiply() {
    let w = world(
        "",
        "[[incidents]]\nkind = \"capacity\"\nstart_s = 10.0\nend_s = 20.0\nfactor = 0.5\n\
         [[incidents]]\nkind = \"capacity\"\nstart_s = 15.0\nend_s = 25.0\nfactor = 0.5",
    );
    let p = Provider::new(&w);
    let at = |t| p.effective_capacity(0, t);
    assert_eq!([at(9.999), at(10.0), at(14.999)], [4, 2, 2]);
    assert_eq!([at(15.0), at(19.999)], [1, 1], "0.5 × 0.5 × 4");
    assert_eq!([at(20.0), at(24.999), at(25.0)], [2, 2, 4]);
}

#[test]
fn incident_latency_factor_applies_to_requests_sent_inside_its_window() {
    let w = world(
        "",
        "[[incidents]]\nkind = \"latency\"\nstart_s = 10.0\nend_s = 20.0\nfactor = 3.0",
    );
    for (t, inside) in EDGES {
        let Arrival::Admitted { latency_s, .. } = answer(&w, t) else {
            panic!("admitted");
        };
        assert_eq!(latency_s, if inside { 3.0 } else { 1.0 }, "t = {t}");
    }
}

#[test]
fn incident_forced_storm_fails_requests_inside_its_window_only() {
    let w = world(
        "",
        "[[incidents]]\nkind = \"storm\"\nstart_s = 10.0\nend_s = 20.0\nerror_rate = 1.0",
    );
    for (t, inside) in EDGES {
        let Arrival::Admitted { failure, .. } = answer(&w, t) else {
            panic!("admitted");
        };
        assert_eq!(failure.is_some(), inside, "t = {t}");
    }
}

#[test]
fn incident_rate_limit_scales_the_refill_inside_its_window_only() {
    let w = world(
        "rate_limit = { per_window = 60, window_s = 60.0, burst = 1.0 }",
        "[[incidents]]\nkind = \"rate_limit\"\nstart_s = 10.0\nend_s = 20.0\nfactor = 0.25",
    );
    let t = Timeline::new(&w);
    assert_eq!(t.refill_seconds(0, 0.0, 10.0), 10.0);
    assert_eq!(t.refill_seconds(0, 10.0, 20.0), 2.5);
    assert_eq!(t.refill_seconds(0, 20.0, 30.0), 10.0);
    assert_eq!(t.refill_seconds(0, 5.0, 25.0), 5.0 + 2.5 + 5.0);
    // Through the provider: a drained bucket (60 requests at t = 0, 1 token/s) has refilled
    // 2.5 tokens by t = 20 instead of 10, so the third request at t = 20 is refused.
    let rng = Native::new(1, ["only"]);
    let mut p = Provider::new(&w);
    let admitted = |p: &mut Provider, t: f64| {
        let a = p.arrive(0, t, &rng, false, None);
        if let Arrival::Admitted { .. } = a {
            p.finish(0, false);
            true
        } else {
            false
        }
    };
    assert!(
        (0..60).all(|_| admitted(&mut p, 0.0)),
        "the full bucket admits 60"
    );
    assert!(!admitted(&mut p, 0.0), "then it is empty");
    let mut q = Provider::new(&w);
    (0..60).for_each(|_| {
        admitted(&mut q, 10.0);
    });
    let served = (0..5).filter(|_| admitted(&mut q, 20.0)).count();
    assert_eq!(served, 2, "2.5 tokens refilled over the incident");
}

#[test]
fn incident_revoke_rejects_from_its_start_for_good() {
    let w = world("", "[[incidents]]\nkind = \"revoke\"\nstart_s = 10.0");
    assert!(matches!(answer(&w, 9.999), Arrival::Admitted { .. }));
    for t in [10.0, 20.0, 1e9] {
        assert_eq!(
            answer(&w, t),
            Arrival::Rejected(Rejection::Revoked),
            "t = {t}"
        );
    }
}

#[test]
fn incident_revoked_key_is_dropped_by_the_client_and_its_errors_are_fatal() {
    let text = r#"
name = "revoked"
summary = "Two endpoints; the first key is revoked at 5 s."
jobs = 400
concurrency = 4
steps_per_job = 1
calls_per_step = 1
[cycle]
period_s = 0.0
[[incidents]]
kind = "revoke"
endpoints = ["a"]
start_s = 5.0
[[endpoints]]
id = "a"
capacity = 4
latency = { distribution = "constant", mean_s = 0.5, tail_rate = 0.0 }
failures = { error_rate = 0.0, storm_rate = 0.0 }
[[endpoints]]
id = "b"
capacity = 4
latency = { distribution = "constant", mean_s = 0.5, tail_rate = 0.0 }
failures = { error_rate = 0.0, storm_rate = 0.0 }
"#;
    let w = compile::load("revoked.toml", text.as_bytes()).expect("valid");
    let strategy = simbench::sweep::strategy(&w, "wait").expect("registered");
    let config = RunConfig {
        seed: 1,
        rng: RngScheme::Native,
        trace: false,
        window_s: None,
        out_of_time: &|| false,
    };
    let run = harness::run(&w, strategy.as_ref(), &config);
    assert_eq!(run.outcome, harness::Outcome::Ok);
    let fatal = run.error_classes.get("fatal").copied().unwrap_or(0);
    assert_eq!(
        fatal, 1,
        "one 401 is enough for the client to stop using the key"
    );
    assert_eq!(run.endpoints[0].provider.rejected, 1);
    assert_eq!(
        run.endpoints[0].pool.final_state,
        simbench::client::pool::State::Revoked
    );
    let m = run.metrics.expect("metrics");
    assert_eq!(
        m.get(simbench::metrics::Metric::JobsDone) + m.get(simbench::metrics::Metric::JobsFailed),
        400.0
    );
    assert_eq!(m.get(simbench::metrics::Metric::JobsFailed), 1.0);
}
