//! Round trips (`simbench fit`, docs/calibration.md): simulate a world with `--request-log`,
//! fit a world to the logs, then compare the two — the parameters the logs can identify, and
//! the decisive check, the ranking of the strategies on the world's headline metric.
//!
//! Rankings are compared pair by pair. Two strategies whose paired difference on the true
//! world is significant (95 %, ten seeds) must come in the same order on the fitted world; a
//! pair the true world itself cannot separate has no order to keep.

use std::path::{Path, PathBuf};

use simbench::world::{Distribution, World};

use crate::request_log::{all_worlds, load};
use crate::support::{scratch_dir, simbench};

/// Logs fitted per world and strategy (one run each, consecutive seeds).
const LOGS: u32 = 3;
/// Seeds of each comparison.
const SEEDS: &str = "10";

/// The JSON report of `simbench run ARGS --quiet --json -`.
fn report(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--quiet", "--json", "-"]);
    let out = simbench(&all);
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 3),
        "{all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// Per algorithm, its per-seed values of `metric`, in seed order.
fn per_seed(report: &serde_json::Value, metric: &str) -> Vec<(String, Vec<f64>)> {
    let mut out: Vec<(String, Vec<f64>)> = Vec::new();
    for run in report["runs"].as_array().expect("runs") {
        let Some(value) = run["metrics"][metric].as_f64() else {
            continue;
        };
        let name = run["algorithm"].as_str().unwrap().to_owned();
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, values)) => values.push(value),
            None => out.push((name, vec![value])),
        }
    }
    out
}

/// Whether `a − b` is significantly positive or negative (paired t, 95 %).
fn separated(a: &[f64], b: &[f64]) -> Option<bool> {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let n = d.len() as f64;
    let mean = d.iter().sum::<f64>() / n;
    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    // t(0.975, 9).
    let half = 2.262 * (var / n).sqrt();
    (mean.abs() > half && half.is_finite()).then_some(mean > 0.0)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// What one round trip found.
#[derive(Debug)]
struct Trip {
    world: String,
    metric: String,
    separated_pairs: usize,
    inverted: Vec<String>,
    /// Both worlds' verdicts agree: the same pick, or no decision between the same leaders.
    same_verdict: bool,
    /// The two verdicts (true, fitted) when they differ.
    verdicts: Option<(Vec<String>, Vec<String>)>,
    params: Vec<String>,
    /// Identifiable parameters outside the tolerances.
    out_of_tolerance: Vec<String>,
    error_rates: Vec<ErrorRate>,
}

/// One round trip per entry of `modes`, all from the same logs: `true` fits with
/// `--logs-only`, so nothing the logs cannot identify comes from the true world (which is also
/// the `--client` world here).
fn round_trips(path: &Path, dir: &Path, modes: &[bool]) -> Vec<Trip> {
    let file = path.to_str().unwrap();
    let truth = report(&[file, "--seeds", SEEDS]);
    let metric = truth["objective"]["metric"].as_str().unwrap().to_owned();
    let algorithms: Vec<String> = per_seed(&truth, &metric).into_iter().map(|a| a.0).collect();
    let first_seed = truth["seeds"][0].as_u64().unwrap();
    // What a team would log: the client it runs (the leader) and a load test (the strategy
    // that sent the most requests, which meets the provider's limits).
    let logged = leader(&truth).unwrap_or_else(|| algorithms[0].clone());
    let busiest = per_seed(&truth, "requests")
        .into_iter()
        .max_by(|a, b| mean(&a.1).total_cmp(&mean(&b.1)))
        .map(|a| a.0)
        .unwrap();
    let mut logs: Vec<PathBuf> = Vec::new();
    // The leader may be the busiest too: its logs are then given once (each file is one run).
    let mut names = vec![&logged, &busiest];
    names.dedup();
    for name in names {
        for k in 0..u64::from(LOGS) {
            let log = dir.join(format!("{name}-{k}.jsonl"));
            let out = simbench(&[
                "run",
                file,
                "--algorithms",
                name,
                "--seeds",
                &LOGS.to_string(),
                "--request-log",
                log.to_str().unwrap(),
                "--log-run",
                &format!("{name}:{}", first_seed + k),
                "--quiet",
            ]);
            assert!(
                out.status.code().is_some_and(|c| c == 0 || c == 3),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            logs.push(log);
        }
    }
    modes
        .iter()
        .map(|&logs_only| {
            compare(
                path,
                &dir.join(format!("fitted-{logs_only}.toml")),
                &truth,
                &logs,
                logs_only,
            )
        })
        .collect()
}

/// Fits `logs` to `fitted` and compares it with the true world's report.
fn compare(
    path: &Path,
    fitted: &Path,
    truth: &serde_json::Value,
    logs: &[PathBuf],
    logs_only: bool,
) -> Trip {
    let file = path.to_str().unwrap();
    let metric = truth["objective"]["metric"].as_str().unwrap().to_owned();
    let algorithms: Vec<String> = per_seed(truth, &metric).into_iter().map(|a| a.0).collect();
    let mut args = vec![
        "fit",
        "-o",
        fitted.to_str().unwrap(),
        "--quiet",
        "--client",
        file,
    ];
    if logs_only {
        args.push("--logs-only");
    }
    args.extend(logs.iter().map(|l| l.to_str().unwrap()));
    let out = simbench(&args);
    assert!(
        out.status.success(),
        "{file}: fit: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fitted_file = fitted.to_str().unwrap();
    // A world's named variants are client configuration, which no log holds: compared are
    // the strategies both worlds know.
    let fitted_world = load(fitted);
    let known: Vec<&String> = algorithms
        .iter()
        .filter(|a| simbench::sweep::strategy(&fitted_world, a).is_some())
        .collect();
    let list = known
        .iter()
        .map(|a| a.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let model = report(&[fitted_file, "--seeds", SEEDS, "--algorithms", &list]);
    let a: Vec<_> = per_seed(truth, &metric)
        .into_iter()
        .filter(|(n, _)| known.contains(&n))
        .collect();
    let b = per_seed(&model, &metric);
    let mut separated_pairs = 0;
    let mut inverted = Vec::new();
    for i in 0..a.len() {
        for j in i + 1..a.len() {
            let Some(order) = separated(&a[i].1, &a[j].1) else {
                continue;
            };
            separated_pairs += 1;
            let fitted_order = mean(&b[i].1) > mean(&b[j].1);
            if fitted_order != order {
                inverted.push(format!(
                    "{} vs {}: true {:.1} vs {:.1}, fitted {:.1} vs {:.1}",
                    a[i].0,
                    a[j].0,
                    mean(&a[i].1),
                    mean(&a[j].1),
                    mean(&b[i].1),
                    mean(&b[j].1)
                ));
            }
        }
    }
    Trip {
        world: path.file_name().unwrap().to_string_lossy().into_owned(),
        metric,
        separated_pairs,
        inverted,
        same_verdict: verdict(&model) == verdict(truth),
        verdicts: (verdict(&model) != verdict(truth)).then(|| (verdict(truth), verdict(&model))),
        params: compare_params(&load(path), &load(fitted)),
        out_of_tolerance: tolerances(&load(path), &load(fitted)),
        error_rates: error_rates(&load(path), &std::fs::read_to_string(fitted).unwrap()),
    }
}

/// How far one endpoint's fitted background error rate is from the true one.
#[derive(Debug)]
struct ErrorRate {
    endpoint: String,
    want: f64,
    got: f64,
    /// The failures it rests on (the rate times the requests served there).
    failures: f64,
}

impl ErrorRate {
    /// The relative error in standard errors of a Poisson count of `failures`.
    fn z(&self) -> f64 {
        (self.got / self.want - 1.0) * self.failures.sqrt()
    }

    /// Whether it misses the 10 %, where the logs hold enough failures for 10 % to be
    /// three standard errors (900); a rate of 0 must be fitted as 0. Fewer failures are
    /// printed with their `z`, not judged: their own Poisson error is above 10 %, and where
    /// storms make most of the failures, telling calm from storm adds to it.
    fn misses(&self) -> bool {
        if self.want == 0.0 {
            return self.got > 0.0;
        }
        self.failures >= 900.0 && (self.got / self.want - 1.0).abs() > 0.1
    }
}

/// Every endpoint's fitted `error_rate` with the served requests its comment names
/// (`# N failed of M served`).
fn error_rates(truth: &World, fitted: &str) -> Vec<ErrorRate> {
    let mut out = Vec::new();
    for t in truth.endpoints() {
        let Some(at) = fitted.find(&format!("id = \"{}\"", t.id)) else {
            continue;
        };
        let Some(line) = fitted[at..].lines().find(|l| l.starts_with("error_rate =")) else {
            continue;
        };
        let got: f64 = line["error_rate =".len()..]
            .split('#')
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let served: f64 = line
            .split(" of ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0.0);
        if served == 0.0 {
            continue;
        }
        out.push(ErrorRate {
            endpoint: t.id.clone(),
            want: t.failures.error_rate,
            got,
            failures: got.max(t.failures.error_rate) * served,
        });
    }
    out
}

/// The pick, or when there is none the strategies tied at the top of the headline metric.
fn verdict(report: &serde_json::Value) -> Vec<String> {
    let verdict = &report["verdict"];
    if let Some(pick) = verdict["pick"].as_str() {
        return vec![pick.to_owned()];
    }
    let first = &verdict["comparisons"][0];
    let mut top: Vec<String> = first["tied"]
        .as_array()
        .into_iter()
        .flatten()
        .chain([&first["first"]])
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    top.sort();
    top
}

fn leader(report: &serde_json::Value) -> Option<String> {
    let verdict = &report["verdict"];
    verdict["pick"]
        .as_str()
        .or_else(|| verdict["comparisons"][0]["first"].as_str())
        .map(str::to_owned)
}

/// The identifiable parameters, true against fitted, as `key: true → fitted (error)`.
fn compare_params(truth: &World, fitted: &World) -> Vec<String> {
    let mut out = Vec::new();
    for t in truth.endpoints() {
        let Some(f) = fitted.endpoints().iter().find(|f| f.id == t.id) else {
            out.push(format!("{}: never served in the logs", t.id));
            continue;
        };
        let mut row = |key: &str, want: f64, got: f64| {
            out.push(format!(
                "{}.{key}: {want:.4} → {got:.4} ({:+.1} %)",
                t.id,
                (got / want - 1.0) * 100.0
            ));
        };
        if t.latency.distribution == Distribution::Lognormal
            && f.latency.distribution == Distribution::Lognormal
        {
            row("median_s", t.latency.median_s, f.latency.median_s);
            row("sigma", t.latency.sigma, f.latency.sigma);
        }
        if let (Some(tt), Some(ft)) = (&t.latency.tokens, &f.latency.tokens) {
            row("ttft_s", tt.ttft_s, ft.ttft_s);
            row(
                "decode_tokens_per_s",
                tt.decode_tokens_per_s,
                ft.decode_tokens_per_s,
            );
        }
        row("error_rate", t.failures.error_rate, f.failures.error_rate);
        let cap = |e: &simbench::world::Endpoint, w: &World| {
            (f64::from(e.capacity) * e.weight * w.cycle().peak).round()
        };
        row("peak_capacity", cap(t, truth), cap(f, fitted));
        if let (Some(tb), Some(fb)) = (&t.rate_limit, &f.rate_limit) {
            row("refill_per_s", tb.refill_per_s, fb.refill_per_s);
        }
        for (tl, fl) in t.limits.iter().zip(&f.limits) {
            row(&format!("limit.{}", tl.unit.name()), tl.limit, fl.limit);
        }
        if let (Some(tc), Some(fc)) = (&t.cache, &f.cache) {
            row("cache.latency_factor", tc.latency_factor, fc.latency_factor);
        }
    }
    out
}

/// The identifiable parameters outside the tolerances: latency median 5 %, σ 10 %, the
/// peak capacity ±1 (where the load could fill it), a bucket's refill, every published
/// limit and a reuse cache's latency factor 10 % (a cache must be found where the logs mark
/// hits). Error rates are judged apart ([`ErrorRate::misses`]): on these logs an endpoint's
/// background failures often number in the tens, so their own Poisson error passes 10 %.
fn tolerances(truth: &World, fitted: &World) -> Vec<String> {
    let mut out = Vec::new();
    let check = |out: &mut Vec<String>, what: String, want: f64, got: f64, tolerance: f64| {
        if (got / want - 1.0).abs() > tolerance {
            out.push(format!("{what}: {want} → {got}"));
        }
    };
    for t in truth.endpoints() {
        let Some(f) = fitted.endpoints().iter().find(|f| f.id == t.id) else {
            continue;
        };
        if t.latency.distribution == Distribution::Lognormal
            && f.latency.distribution == Distribution::Lognormal
        {
            let (tl, fl) = (&t.latency, &f.latency);
            check(
                &mut out,
                format!("{} median_s", t.id),
                tl.median_s,
                fl.median_s,
                0.05,
            );
            check(
                &mut out,
                format!("{} sigma", t.id),
                tl.sigma,
                fl.sigma,
                0.10,
            );
        }
        let cap = |e: &simbench::world::Endpoint, w: &World| {
            (f64::from(e.capacity) * e.weight * w.cycle().peak).round()
        };
        // Identifiable only if the load could fill it.
        let fillable = cap(t, truth) <= f64::from(truth.concurrency());
        if fillable && (cap(t, truth) - cap(f, fitted)).abs() > 1.0 {
            out.push(format!(
                "{} capacity: {} → {}",
                t.id,
                cap(t, truth),
                cap(f, fitted)
            ));
        }
        if let (Some(tb), Some(fb)) = (&t.rate_limit, &f.rate_limit) {
            let what = format!("{} refill_per_s", t.id);
            check(&mut out, what, tb.refill_per_s, fb.refill_per_s, 0.10);
        }
        for tl in &t.limits {
            match f
                .limits
                .iter()
                .find(|fl| fl.unit == tl.unit && fl.window_s == tl.window_s)
            {
                Some(fl) => {
                    let what = format!("{} limit {}", t.id, tl.unit.name());
                    check(&mut out, what, tl.limit, fl.limit, 0.10);
                }
                None => out.push(format!(
                    "{} limit {} per {} s not found",
                    t.id,
                    tl.unit.name(),
                    tl.window_s
                )),
            }
        }
        match (&t.cache, &f.cache) {
            (Some(tc), Some(fc)) => {
                let what = format!("{} cache latency_factor", t.id);
                check(&mut out, what, tc.latency_factor, fc.latency_factor, 0.10);
            }
            (Some(_), None) => out.push(format!("{} cache not found", t.id)),
            _ => {}
        }
    }
    out
}

/// Every world, fitted twice from the same logs with its own file as `--client`.
///
/// - With `--logs-only`, so that nothing the logs cannot show comes from the true world: the
///   identifiable parameters must be within their tolerances.
/// - As a team runs it, with its world as the prior where the logs cannot tell: every pair of
///   strategies the true world separates must keep its order on the fitted world.
///
/// Two worlds separate no pair (`harness_knee`: every strategy finishes every job;
/// `serve_tokens`: so do its few). One tolerance is left out: `serve_incidents`' `flaky`
/// serves 34 requests in its logs, so its σ has a standard error of about 12 % of itself
/// (σ/√(2n)), beyond the 10 % asked. Background error rates are held to 10 % where the logs
/// hold 900 failures or more ([`ErrorRate::misses`]).
///
/// The ranking with `--logs-only` is measured by the test below, not asserted.
#[test]
fn fit_round_trip_keeps_the_ranking_on_every_world() {
    let no_pairs = ["harness_knee.toml", "serve_tokens.toml"];
    let too_few = ["flaky sigma"];
    for path in all_worlds() {
        let dir = scratch_dir("fit-round-trip");
        let mut trips = round_trips(&path, &dir, &[true, false]);
        let (trip, own) = (trips.pop().unwrap(), trips.pop().unwrap());
        std::fs::remove_dir_all(dir).ok();
        assert!(
            trip.separated_pairs > 0 || no_pairs.contains(&trip.world.as_str()),
            "{}: nothing to compare",
            trip.world
        );
        assert!(
            trip.inverted.is_empty(),
            "{}: {:#?}",
            trip.world,
            trip.inverted
        );
        let off: Vec<&String> = own
            .out_of_tolerance
            .iter()
            .filter(|o| {
                own.world != "serve_incidents.toml" || !too_few.iter().any(|t| o.starts_with(t))
            })
            .collect();
        assert!(off.is_empty(), "{} (--logs-only): {off:#?}", own.world);
        let missed: Vec<&ErrorRate> = own.error_rates.iter().filter(|e| e.misses()).collect();
        assert!(
            missed.is_empty(),
            "{} (--logs-only): {missed:#?}",
            own.world
        );
    }
}

/// Measures every round trip and prints what it found; see the module doc for what is
/// asserted.
#[test]
#[ignore = "measurement: run with --ignored --nocapture"]
fn fit_round_trip_on_every_world() {
    let mut trips = Vec::new();
    // `SIMBENCH_FIT_WORLDS=bursty,llm` measures only the worlds whose names contain one.
    let only = std::env::var("SIMBENCH_FIT_WORLDS").ok();
    let wanted = |p: &Path| {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|w| name.contains(w)))
    };
    // `SIMBENCH_FIT_LOGS_ONLY=1` fits with `--logs-only`.
    let logs_only = std::env::var("SIMBENCH_FIT_LOGS_ONLY").is_ok_and(|v| v == "1");
    for path in all_worlds().into_iter().filter(|p| wanted(p)) {
        let dir = scratch_dir("fit-round-trip");
        let trip = round_trips(&path, &dir, &[logs_only]).pop().unwrap();
        eprintln!(
            "{}{}: {} — {} separated pairs, {} inverted, same verdict {}",
            trip.world,
            if logs_only { " (--logs-only)" } else { "" },
            trip.metric,
            trip.separated_pairs,
            trip.inverted.len(),
            trip.same_verdict
        );
        if let Some((t, f)) = &trip.verdicts {
            eprintln!("    verdict: true {t:?}, fitted {f:?}");
        }
        for line in trip.inverted.iter().chain(&trip.params) {
            eprintln!("    {line}");
        }
        for line in &trip.out_of_tolerance {
            eprintln!("    out of tolerance: {line}");
        }
        for e in &trip.error_rates {
            eprintln!(
                "    error rate {}: {} → {} on {:.0} failures ({:+.1} %, z {:+.2}){}",
                e.endpoint,
                e.want,
                e.got,
                e.failures,
                (e.got / e.want - 1.0) * 100.0,
                e.z(),
                if e.misses() {
                    " MISSES"
                } else if e.want > 0.0 && e.z().abs() > 3.0 {
                    " (beyond 3 standard errors)"
                } else {
                    ""
                }
            );
        }
        std::fs::remove_dir_all(dir).ok();
        trips.push(trip);
    }
    let inverted: usize = trips.iter().map(|t| t.inverted.len()).sum();
    eprintln!("total inverted pairs: {inverted}");
}
