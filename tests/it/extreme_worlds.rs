//! Worlds drawn from the full range of every scenario key — bounds, the smallest doubles,
//! subnormals, 1e-300 and the largest allowed values included — either fail to compile with
//! diagnostics or run every strategy to an end (under an event budget) and render every output
//! without a NaN or an infinity.
//!
//! The default is 16 worlds (seconds in release; a `hedged` window of 1e5 latencies costs a
//! selection over the window per answer, the slowest corner); for a longer hunt set
//! `PROPTEST_CASES`, e.g. `PROPTEST_CASES=2000 cargo test --release --test it extreme_worlds`.

use std::sync::atomic::{AtomicU64, Ordering};

use proptest::prelude::*;

use simbench::client::registry::ALGORITHMS;
use simbench::compile;
use simbench::harness::RngScheme;
use simbench::report::terminal::TerminalOptions;
use simbench::report::{self, Outcome, SweepInfo};
use simbench::sweep::{self, SweepConfig};
use simbench::world::Overrides;

/// The ways a run may end; `out_of_memory` is accepted where the engine has it.
const OUTCOMES: [&str; 5] = ["ok", "stalled", "timeout", "livelock", "out_of_memory"];

/// A SplitMix64 stream: each case's world is a pure function of one proptest-drawn seed.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
    /// A value of `[lo, hi]` (`(lo, hi]` when `open`), most often an extreme: a bound, the
    /// next double inside it, the smallest subnormal, 1e-300, just below the top, or a
    /// log-uniform or uniform draw.
    fn float(&mut self, lo: f64, hi: f64, open: bool) -> f64 {
        let inside = |x: f64| (if open { x > lo } else { x >= lo }) && x <= hi;
        let candidate = match self.below(10) {
            0 => lo,
            1 => next_up(lo),
            2 => 5e-324,
            3 => 1e-300,
            4 => hi,
            5 => -next_up(-hi),
            6 => f64::from_bits(1 + self.below(1 << 52)), // a subnormal
            7 | 8 => {
                let (a, b) = (lo.max(1e-300).ln(), hi.max(1e-300).ln());
                (a + self.unit() * (b - a)).exp()
            }
            _ => lo + self.unit() * (hi - lo),
        };
        if inside(candidate) { candidate } else { hi }
    }
    fn int(&mut self, lo: u64, hi: u64) -> u64 {
        match self.below(4) {
            0 => lo,
            1 => hi,
            _ => lo + self.below(hi - lo + 1),
        }
    }
}

/// The next double above a finite `x` (`f64::next_up` is newer than the crate's MSRV).
fn next_up(x: f64) -> f64 {
    if x == 0.0 {
        f64::from_bits(1)
    } else if x > 0.0 {
        f64::from_bits(x.to_bits() + 1)
    } else {
        f64::from_bits(x.to_bits() - 1)
    }
}

/// `key = value` lines written in the order they are added.
struct Toml(String);

impl Toml {
    fn num(&mut self, key: &str, x: f64) {
        self.0 += &format!("{key} = {x:e}\n");
    }
    fn int(&mut self, key: &str, n: u64) {
        self.0 += &format!("{key} = {n}\n");
    }
    fn line(&mut self, text: &str) {
        self.0 += text;
        self.0 += "\n";
    }
}

/// A world with every key drawn by `d` (some combinations break cross-field rules; those fail
/// to compile, which is a result too).
fn world_text(d: &mut Dice) -> String {
    let mut t = Toml(String::from(
        "name = \"extreme\"\nsummary = \"drawn at the edges\"\n",
    ));
    t.int("seed", d.int(0, i64::MAX as u64));
    t.int("jobs", d.int(1, 10_000_000));
    // Drawn in the order it always was, so each generator seed still draws the same world;
    // written only for a closed loop, the only one with workers.
    let workers = d.int(1, 100_000);
    t.num("horizon_s", d.float(0.0, 1e12, true));
    t.int("steps_per_job", d.int(1, 1000));
    t.int("calls_per_step", d.int(1, 1000));
    let open = d.coin();
    if !open {
        t.int("concurrency", workers);
    }
    if open {
        t.line("[load]\nmodel = \"open\"");
        t.num("rate_per_s", d.float(0.0, 1e9, true));
        t.line(["arrivals = \"poisson\"", "arrivals = \"uniform\""][d.below(2) as usize]);
        if d.coin() {
            t.int("max_in_flight", d.int(1, 1_000_000));
        }
    }
    t.line("[cycle]");
    // The whole schema range sometimes (below 0.001 s the compiler refuses it), else 0 or the
    // accepted range, so that most worlds run.
    let period = match d.below(4) {
        0 => d.float(0.0, 1e12, false),
        1 => 0.0,
        _ => d.float(1e-3, 1e12, false),
    };
    t.num("period_s", period);
    let (a, b) = (d.float(0.0, 1e6, false), d.float(0.0, 1e6, true));
    let phase = d.float(-1e12, 1e12, false);
    // A flat cycle takes neither a trough nor a phase.
    if period != 0.0 {
        t.num("trough", a.min(b));
        t.num("phase_s", phase);
    }
    t.num("peak", a.max(b));
    t.line("[retry]");
    t.int("max_attempts", d.int(1, 1000));
    let (base, cap) = (d.float(0.0, 1e9, false), d.float(0.0, 1e9, false));
    t.num("base", base.min(cap));
    t.num("factor", d.float(1.0, 1e6, false));
    t.num("cap", base.max(cap));
    t.line(
        [
            "jitter = \"none\"",
            "jitter = \"full\"",
            "jitter = \"equal\"",
        ][d.below(3) as usize],
    );
    t.line(&format!("retry_classified = {}", d.coin()));
    t.line(&format!("retry_unknown = {}", d.coin()));
    t.num("retry_after_spread", d.float(0.0, 100.0, false));
    if d.coin() {
        t.num("max_total_s", d.float(0.0, 1e12, true));
    }
    if d.coin() {
        t.line("[retry.budget]");
        t.num("ratio", d.float(0.0, 1000.0, false));
        t.num("min_per_s", d.float(0.0, 1e6, false));
        t.num("window_s", d.float(0.0, 1e9, true));
    }
    if d.coin() {
        t.line("[retry.throttle]");
        t.num("k", d.float(1.0, 1000.0, false));
        t.num("window_s", d.float(0.0, 1e9, true));
    }
    t.line("[breaker]");
    let degrade = d.int(1, 20);
    t.int("degrade_after", degrade);
    t.int("dead_after", degrade + d.int(0, 20));
    t.num("cooldown_s", d.float(0.0, 1e9, false));
    t.line("[provider]");
    t.num("capacity_retry_after_s", d.float(0.0, 1e9, false));
    t.line("[provider.failure_kinds]");
    let (x, y) = (d.unit(), d.unit());
    let (lo, hi) = (x.min(y), x.max(y));
    t.num("http_503", lo);
    t.num("connection", hi - lo);
    t.num("timeout", 1.0 - hi);
    t.line("[validity]");
    t.num("max_queue_share", d.float(0.0, 1.0, false));
    if d.coin() {
        t.int("knee_concurrency", d.int(1, 1_000_000));
    }
    t.line("[recovery]");
    t.num("window_s", d.float(0.0, 1e9, true));
    t.num("threshold", d.float(0.0, 1.0, true));
    for info in ALGORITHMS {
        if d.below(3) != 0 {
            continue;
        }
        t.line(&format!("[algorithms.{}]", info.name));
        let mut drawn: Vec<(&str, f64)> = info
            .params
            .iter()
            .map(|p| {
                let v = d.float(p.min, p.max, false);
                (p.name, if p.integer { v.round() } else { v })
            })
            .collect();
        // Draw ordered pairs (min <= initial <= max) in order most of the time.
        if !info.ordered.is_empty() && d.below(4) != 0 {
            let mut bounds: Vec<f64> = ["min", "initial", "max"]
                .iter()
                .filter_map(|n| drawn.iter().find(|(p, _)| p == n).map(|(_, v)| *v))
                .collect();
            bounds.sort_by(f64::total_cmp);
            for (name, v) in ["min", "initial", "max"].iter().zip(bounds) {
                if let Some(slot) = drawn.iter_mut().find(|(p, _)| p == name) {
                    slot.1 = v;
                }
            }
        }
        for (name, v) in drawn {
            t.num(name, v);
        }
    }
    let endpoints = 1 + d.below(3);
    let pools = d.coin() && endpoints > 1;
    if pools {
        t.line("[[pools]]\nname = \"p\"\n[[pools]]\nname = \"q\"\nselection = \"in_order\"");
    }
    for _ in 0..d.below(3) {
        let kinds = [
            "outage",
            "capacity",
            "latency",
            "storm",
            "rate_limit",
            "revoke",
        ];
        let kind = kinds[d.below(6) as usize];
        t.line(&format!(
            "[[incidents]]\nkind = \"{kind}\"\nendpoints = [\"e0\"]"
        ));
        let start = d.float(0.0, 1e12, false);
        t.num("start_s", start);
        if kind != "revoke" && (kind != "outage" || d.coin()) {
            t.num("end_s", d.float(start, 1e12, true));
        }
        match kind {
            "capacity" | "latency" | "rate_limit" => t.num("factor", d.float(0.0, 1e6, true)),
            "storm" if d.coin() => t.num("error_rate", d.float(0.0, 1.0, false)),
            "outage" if d.coin() => t.line("effect = \"error\""),
            _ => {}
        }
    }
    for e in 0..endpoints {
        t.line(&format!("[[endpoints]]\nid = \"e{e}\""));
        t.int("capacity", d.int(1, 1_000_000));
        t.num("weight", d.float(0.0, 1e6, true));
        if d.coin() {
            t.num("quota_units", d.float(0.0, 1e15, false));
        }
        if pools {
            t.line(&format!("pool = \"{}\"", ["p", "q"][(e % 2) as usize]));
        }
        t.line("[endpoints.latency]");
        match d.below(3) {
            0 => {
                t.num("median_s", d.float(0.0, 1e6, true));
                t.num("sigma", d.float(0.0, 10.0, false));
            }
            k => {
                let shape = ["exponential", "constant"][k as usize - 1];
                t.line(&format!("distribution = \"{shape}\""));
                t.num("mean_s", d.float(0.0, 1e6, true));
            }
        }
        t.num("tail_rate", d.float(0.0, 1.0, false));
        t.num("tail_factor", d.float(0.0, 1e6, true));
        t.line("[endpoints.failures]");
        t.num("error_rate", d.float(0.0, 1.0, false));
        t.num("storm_rate", d.float(0.0, 1.0, false));
        let check = d.float(0.0, 1e9, true);
        t.num("storm_check_s", check);
        // At most 1000 storm windows overlap (a compile rule); draw under it most of the time.
        let duration = d.float(0.0, 1e9, false);
        t.num(
            "storm_duration_s",
            if d.below(4) == 0 {
                duration
            } else {
                duration.min(check * 1000.0)
            },
        );
        t.num("storm_error_rate", d.float(0.0, 1.0, false));
        if d.coin() {
            t.line("[endpoints.rate_limit]");
            let per_window = d.int(1, u64::MAX >> 12);
            t.int("per_window", per_window);
            t.num("window_s", d.float(0.0, 1e9, true));
            // The bucket holds at least one request: per_window * burst >= 1.
            let least = next_up(1.0 / per_window as f64);
            t.num("burst", d.float(0.0, 1e6, true).max(least));
            t.num("retry_after_s", d.float(0.0, 1e9, false));
            t.num("tightening", d.float(0.0, 1.0, true));
            t.num("tightening_floor", d.float(0.0, 1.0, true));
            t.num("recovery_per_window", d.float(0.0, 1e6, false));
        }
        if d.coin() {
            t.line("[endpoints.cache]");
            t.num("ttl_s", d.float(0.0, 1e9, true));
            t.num("latency_factor", d.float(0.0, 1e6, true));
            t.num("token_cost", d.float(0.0, 1.0, false));
        }
    }
    t.0
}

/// Every word of `text` that spells a non-number.
fn non_numbers(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
        .filter(|w| {
            let w = w.to_ascii_lowercase();
            w == "nan" || w == "inf" || w == "infinity" || w.ends_with("e309")
        })
        .collect()
}

/// Every number in `value` is finite, and no metric or aggregate is `null`.
fn check_json(value: &serde_json::Value, in_metrics: bool, path: &str) {
    match value {
        serde_json::Value::Number(n) => {
            assert!(n.as_f64().is_some_and(f64::is_finite), "{path} = {n}")
        }
        serde_json::Value::Null => assert!(!in_metrics, "{path} is null"),
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                check_json(item, in_metrics, &format!("{path}[{i}]"));
            }
        }
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let metrics = in_metrics || k == "metrics" || k == "aggregates";
                check_json(v, metrics, &format!("{path}.{k}"));
            }
        }
        _ => {}
    }
}

/// Runs every strategy on the world (12 jobs at most, and an event budget: the harness asks
/// whether time is up every 16 384 events, and the third question says yes, so a run ends after
/// about 33 000 events) and checks every output. Returns whether the text compiled.
fn run_and_render(text: &str) -> bool {
    let world = match compile::load("extreme.toml", text.as_bytes()) {
        Ok(world) => world,
        Err(errors) => {
            assert!(!errors.findings().is_empty());
            return false;
        }
    };
    let world = world.with_overrides(&Overrides {
        jobs: Some(world.jobs().min(12)),
        ..Overrides::default()
    });
    let names: Vec<String> = ALGORITHMS.iter().map(|a| a.name.to_string()).collect();
    let seeds = sweep::seeds(&world, 1);
    let plan = sweep::plan(&names, &seeds);
    // A clock that ticks once per look: the wall budget becomes an event budget.
    let ticks = AtomicU64::new(0);
    let clock = || ticks.fetch_add(1, Ordering::Relaxed) as f64;
    let config = SweepConfig {
        rng: RngScheme::Native,
        threads: 1,
        wall_budget_s: 2.0,
        clock: &clock,
        on_run: &|_| {},
        window_s: None,
    };
    let runs = sweep::sweep(&world, &plan, &config);
    for run in &runs {
        let name = match &run.outcome {
            Outcome::Finished(values)
            | Outcome::Stalled {
                metrics: values, ..
            } => {
                for (info, v) in values.iter() {
                    assert!(
                        v.is_finite(),
                        "{} {} = {v}\n{text}",
                        run.algorithm,
                        info.name
                    );
                }
                run.stall().map_or("ok", |(kind, _)| kind)
            }
            Outcome::Unfinished { kind, .. } => kind,
        };
        assert!(OUTCOMES.contains(&name), "{name}");
    }
    let sweep_info = SweepInfo {
        seeds,
        rng: "native",
        wall_s: 0.0,
    };
    let report = report::analyse(&world, sweep_info, runs);
    let json = report::json::render(&report);
    let value: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    check_json(&value, false, "");
    let csv = report::csv::render(&report);
    // The world's hash is text, though one such as `633e713253578530` parses as a number.
    let header: Vec<&str> = csv.lines().next().unwrap_or_default().split(',').collect();
    let hash = header.iter().position(|h| *h == "world_hash");
    for line in csv.lines().skip(1) {
        let cells = line.split(',').enumerate();
        for (_, cell) in cells.filter(|(i, _)| Some(*i) != hash) {
            if let Ok(x) = cell.parse::<f64>() {
                assert!(x.is_finite(), "CSV cell {cell}\n{text}");
            }
        }
    }
    let markdown = report::markdown::render(&report);
    let table = report::terminal::render(&report, &TerminalOptions::full(false));
    for (name, out) in [("csv", &csv), ("markdown", &markdown), ("table", &table)] {
        assert!(
            non_numbers(out).is_empty(),
            "{name}: {:?}\n{text}",
            non_numbers(out)
        );
    }
    assert!(non_numbers(&json).is_empty());
    true
}

proptest! {
    #![proptest_config(crate::support::proptest_config(16))]
    #[test]
    fn extreme_worlds_run_and_render_without_panic_nan_or_infinity(seed in any::<u64>()) {
        let text = world_text(&mut Dice(seed));
        run_and_render(&text);
    }
}

/// The generator is worth its cases only if many of its worlds compile (and so run).
#[test]
fn extreme_worlds_often_compile() {
    let compiled = (0..400u64)
        .filter(|&k| compile::load("x.toml", world_text(&mut Dice(k)).as_bytes()).is_ok())
        .count();
    assert!(
        compiled > 100,
        "only {compiled} of 400 drawn worlds compiled"
    );
}

/// Worlds (by generator seed) that once broke an invariant, kept as fixed cases.
const REGRESSIONS: &[u64] = &[5_503_663_027_727_284_163];

#[test]
fn extreme_worlds_that_once_failed_still_pass() {
    for &seed in REGRESSIONS {
        run_and_render(&world_text(&mut Dice(seed)));
    }
}
