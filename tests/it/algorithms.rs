//! Strategy parameters and named variants from `[algorithms]`: they change what runs, a written
//! default changes nothing, `--set` reaches them, the CLI accepts variant names and lists
//! parameters, and the generated parameter tables in the docs are fresh.
//!
//! Diagnostics for bad tables are snapshots under `tests/data/invalid/algorithm_*`.

use crate::support::simbench;
use std::path::Path;

use simbench::compile::{self, BUILTIN_BURSTY_TOML, LoadOptions, Override};
use simbench::harness::RngScheme;
use simbench::report::Run;
use simbench::report::fingerprint::world_hash;
use simbench::sweep::{self, SweepConfig};
use simbench::world::World;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The bursty world, smaller, with `extra` TOML appended (new top-level tables).
fn bursty_with(extra: &str) -> World {
    let text = format!("{BUILTIN_BURSTY_TOML}\n{extra}");
    let options = LoadOptions {
        read: &|_: &Path| Err("no files".to_owned()),
        read_data: &|_: &Path| Err("no files".to_owned()),
        overrides: &[Override {
            origin: "--jobs".into(),
            text: "jobs=150".into(),
        }],
    };
    compile::load_with("bursty+.toml", text.as_bytes(), &options)
        .unwrap_or_else(|e| panic!("{}", e.render_plain()))
}

/// One run per (algorithm, seed) on two seeds, with a frozen clock so runs compare exactly.
fn runs(world: &World, algorithms: &[&str]) -> Vec<Run> {
    let names: Vec<String> = algorithms.iter().map(|a| a.to_string()).collect();
    let seeds = sweep::seeds(world, 2);
    let plan = sweep::plan(&names, &seeds);
    let frozen = || 0.0;
    let config = SweepConfig {
        rng: RngScheme::Native,
        threads: 2,
        wall_budget_s: 600.0,
        clock: &frozen,
        on_run: &|_| {},
        window_s: None,
    };
    sweep::sweep(world, &plan, &config)
}

/// The runs of `algorithm`, with the name taken out so two names can be compared.
fn results_of(runs: &[Run], algorithm: &str) -> Vec<Run> {
    runs.iter()
        .filter(|r| r.algorithm == algorithm)
        .map(|r| Run {
            algorithm: String::new(),
            ..r.clone()
        })
        .collect()
}

#[test]
fn algorithms_a_variant_runs_beside_its_kind_and_differs() {
    let world = bursty_with("[algorithms.backoff_slow]\nkind = \"backoff\"\nbase = 1.0\n");
    let default_list = sweep::default_algorithms(&world);
    assert_eq!(
        default_list.last().map(String::as_str),
        Some("backoff_slow")
    );
    assert!(default_list.iter().any(|a| a == "backoff"));
    let runs = runs(&world, &["backoff", "backoff_slow"]);
    assert_eq!(runs.len(), 4);
    assert!(
        runs.iter().all(|r| r.metrics().is_some()),
        "every run finished"
    );
    assert_ne!(
        results_of(&runs, "backoff"),
        results_of(&runs, "backoff_slow"),
        "base = 1.0 must change backoff's behaviour"
    );
}

#[test]
fn algorithms_a_written_default_changes_nothing() {
    let plain = bursty_with("");
    let written = bursty_with("[algorithms.backoff]\nbase = 0.2\nfactor = 2\n");
    assert_eq!(world_hash(&plain), world_hash(&written));
    assert!(
        written.algorithms().is_empty(),
        "{:?}",
        written.algorithms()
    );
    let names = ["backoff", "quota_aware"];
    assert_eq!(runs(&plain, &names), runs(&written, &names));
}

#[test]
fn algorithms_a_registered_name_takes_the_files_values() {
    let plain = bursty_with("");
    let tuned = bursty_with("[algorithms.backoff]\nbase = 1.0\n");
    assert_ne!(world_hash(&plain), world_hash(&tuned));
    let variant = tuned
        .variant("backoff")
        .expect("kept: differs from the default");
    assert_eq!(
        (variant.kind.as_str(), variant.params.as_slice()),
        ("backoff", &[("base".to_owned(), 1.0)][..])
    );
    assert_ne!(runs(&plain, &["backoff"]), runs(&tuned, &["backoff"]));
    assert_eq!(
        sweep::default_algorithms(&plain),
        sweep::default_algorithms(&tuned)
    );
}

/// Loads the (smaller) bursty world with `--set` arguments.
fn bursty_set(sets: &[&str]) -> World {
    let mut overrides = vec![Override {
        origin: "--jobs".into(),
        text: "jobs=150".into(),
    }];
    overrides.extend(sets.iter().enumerate().map(|(i, text)| Override {
        origin: format!("--set #{}", i + 1),
        text: (*text).to_owned(),
    }));
    let options = LoadOptions {
        read: &|_: &Path| Err("no files".to_owned()),
        read_data: &|_: &Path| Err("no files".to_owned()),
        overrides: &overrides,
    };
    compile::load_with("bursty.toml", BUILTIN_BURSTY_TOML.as_bytes(), &options)
        .unwrap_or_else(|e| panic!("{}", e.render_plain()))
}

/// `--set algorithms.<name>.<param>` reaches the strategy. (quota_aware's `reserve` is checked
/// to arrive; its effect is not asserted, because every bursty endpoint declares a quota and
/// `reserve` never reorders those: see
/// `algorithms_quota_reserve_and_penalty_act_only_beside_an_endpoint_without_a_quota`.)
#[test]
fn algorithms_set_reaches_a_parameter() {
    let plain = bursty_set(&[]);
    let reserve = bursty_set(&["algorithms.quota_aware.reserve=0.2"]);
    assert_eq!(
        reserve.variant("quota_aware").map(|v| v.params.clone()),
        Some(vec![("reserve".to_owned(), 0.2)])
    );
    assert_ne!(world_hash(&plain), world_hash(&reserve));
    let base = bursty_set(&["algorithms.backoff.base=1.0"]);
    assert_ne!(runs(&plain, &["backoff"]), runs(&base, &["backoff"]));
    let variant = bursty_set(&["algorithms.slow={ kind = \"backoff\", base = 1.0 }"]);
    assert_eq!(
        sweep::default_algorithms(&variant)
            .last()
            .map(String::as_str),
        Some("slow")
    );
}

#[test]
fn algorithms_set_errors_point_into_the_override() {
    let options = LoadOptions {
        read: &|_: &Path| Err("no files".to_owned()),
        read_data: &|_: &Path| Err("no files".to_owned()),
        overrides: &[Override {
            origin: "--set #1".into(),
            text: "algorithms.quota_aware.reserv=0.2".into(),
        }],
    };
    let errors = compile::load_with("bursty.toml", BUILTIN_BURSTY_TOML.as_bytes(), &options)
        .expect_err("a misspelt parameter");
    let f = &errors.findings()[0];
    assert_eq!(f.key_path, "algorithms.quota_aware.reserv");
    assert_eq!(
        f.help.as_deref(),
        Some("did you mean `reserve`? parameters of `quota_aware`: `reserve`, `penalty`")
    );
}

#[test]
fn algorithms_cli_runs_a_variant_by_name_and_rejects_unknown_names() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let bursty = root().join("scenarios/bursty.toml");
    let file = dir.join("variant.toml");
    let text = format!(
        "extends = {:?}\nname = \"variant\"\n\n[algorithms.backoff_slow]\nkind = \"backoff\"\n\
         base = 1.0\n",
        bursty.display().to_string()
    );
    std::fs::write(&file, text).expect("temp file");
    let shown = file.display().to_string();
    let args = [
        "run",
        &shown,
        "--algorithms",
        "backoff,backoff_slow",
        "--seeds",
        "1",
        "--jobs",
        "60",
        "--quiet",
        "--csv",
        "-",
    ];
    let out = simbench(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.lines().any(|l| l.contains(",native,backoff_slow,")),
        "{stdout}"
    );
    let out = simbench(&[
        "run",
        &shown,
        "--algorithms",
        "backoff_fast",
        "--seeds",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown algorithm `backoff_fast`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("backoff_slow"),
        "the variant is listed as known: {stderr}"
    );
    let listed = simbench(&["list", &shown]);
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(
        stdout.contains("variant: backoff_slow = backoff (base = 1)"),
        "{stdout}"
    );
}

#[test]
fn algorithms_list_shows_every_parameter() {
    let out = simbench(&["list"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for info in simbench::client::registry::ALGORITHMS {
        for p in info.params {
            let line = stdout
                .lines()
                .find(|l| {
                    l.trim_start()
                        .starts_with(&format!("{}.{} ", info.name, p.name))
                })
                .unwrap_or_else(|| panic!("no line for {}.{}:\n{stdout}", info.name, p.name));
            assert!(line.contains(&format!("default {}", p.default)), "{line}");
            assert!(line.contains(p.unit), "{line}");
        }
    }
}

#[test]
fn algorithms_docs_parameter_tables_are_fresh() {
    const BEGIN: &str =
        "<!-- BEGIN GENERATED: algorithm parameters (SIMBENCH_BLESS=1 cargo test) -->\n";
    const END: &str = "<!-- END GENERATED: algorithm parameters -->\n";
    let path = root().join("docs/scenario-format.md");
    let doc = std::fs::read_to_string(&path).expect("docs/scenario-format.md exists");
    let (Some(start), Some(end)) = (doc.find(BEGIN), doc.find(END)) else {
        panic!("docs/scenario-format.md lacks the algorithm-parameter markers");
    };
    let fresh = format!(
        "{}{BEGIN}{}{}",
        &doc[..start],
        simbench::schema::algorithm_tables(),
        &doc[end..]
    );
    if fresh == doc {
        return;
    }
    if std::env::var_os("SIMBENCH_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, fresh).expect("docs are writable");
    } else {
        panic!(
            "the parameter tables in docs/scenario-format.md are stale; regenerate them with \
             `SIMBENCH_BLESS=1 cargo test --release --test it algorithms_docs`"
        );
    }
}

/// Runs `algorithm` as the world configures it (its `[algorithms.*]` values).
fn run_configured(world: &World, algorithm: &str) -> simbench::harness::RunResult {
    let strategy = sweep::strategy(world, algorithm).expect("registered");
    let config = simbench::harness::RunConfig {
        seed: 1,
        rng: RngScheme::Native,
        trace: false,
        window_s: None,
        out_of_time: &|| false,
    };
    simbench::harness::run(world, strategy.as_ref(), &config)
}

/// One endpoint of capacity 1 with 4 s requests, three workers: two of them always wait.
fn one_slot_world(extra: &str) -> World {
    let text = format!(
        "name = \"one_slot\"\nsummary = \"One slot, slow requests.\"\njobs = 12\nconcurrency = 3\n\
         steps_per_job = 1\ncalls_per_step = 1\n[cycle]\nperiod_s = 0.0\n{extra}\n\
         [[endpoints]]\nid = \"only\"\ncapacity = 1\n\
         latency = {{ distribution = \"constant\", mean_s = 4.0, tail_rate = 0.0 }}\n\
         failures = {{ error_rate = 0.0, storm_rate = 0.0 }}\n"
    );
    compile::load("one_slot.toml", text.as_bytes()).expect("valid")
}

#[test]
fn algorithms_wait_timeout_gives_up_a_wait_at_its_deadline() {
    use simbench::metrics::Metric;
    let forever = run_configured(&one_slot_world(""), "wait");
    let bounded = run_configured(
        &one_slot_world("[algorithms.wait]\ntimeout_s = 1.0"),
        "wait",
    );
    let m = |r: &simbench::harness::RunResult, metric| r.metrics.as_ref().unwrap().get(metric);
    assert_eq!(m(&forever, Metric::JobsFailed), 0.0);
    assert_eq!(m(&forever, Metric::JobsDone), 12.0);
    // With a 1 s timeout the waiting workers give up (class unknown, not retried): jobs fail,
    // and no successful acquire waited longer than the timeout.
    let failed = m(&bounded, Metric::JobsFailed);
    assert!(failed > 0.0);
    assert_eq!(
        bounded.error_classes.get("unknown").copied(),
        Some(failed as u64)
    );
    assert_eq!(
        m(&bounded, Metric::JobsDone) + failed + m(&bounded, Metric::JobsUnstarted),
        12.0
    );
    assert!(m(&bounded, Metric::AcquireWaitP99Ms) <= 1000.0);
}

#[test]
fn algorithms_a_timed_wait_on_a_dead_world_ends_instead_of_stalling() {
    // Every request fails with a 503 and the breaker retires the endpoint: plain `wait` stalls,
    // a wait with a timeout fails the remaining jobs one timeout at a time and finishes.
    let dead = "[[incidents]]\nkind = \"outage\"\neffect = \"error\"\nstart_s = 0.0\n\
                [breaker]\ndegrade_after = 1\ndead_after = 1";
    let plain = run_configured(&one_slot_world(dead), "wait");
    assert!(
        matches!(plain.outcome, simbench::harness::Outcome::Stalled { .. }),
        "{:?}",
        plain.outcome
    );
    let text = format!("{dead}\n[algorithms.wait]\ntimeout_s = 2.0");
    let timed = run_configured(&one_slot_world(&text), "wait");
    assert_eq!(timed.outcome, simbench::harness::Outcome::Ok);
}

/// `sticky.fallback_after_s` changes no run, however contended the world: an attempt's next
/// call acquires at the instant its previous call's success released the preferred resource, so
/// that resource is always READY with a free slot and the fallback wait is never reached. (Two
/// endpoints of one slot each, 40 workers, four calls a step, 20 % errors: QA's probe.) If this
/// fails, the engine now lets the preferred resource be taken between calls, and the parameter's
/// `meaning` in the registry must say when it acts.
#[test]
fn algorithms_sticky_fallback_delay_never_changes_a_run() {
    let world = |fallback_after_s: f64| {
        let endpoint = |id: &str| {
            format!(
                "[[endpoints]]\nid = \"{id}\"\ncapacity = 1\n\
                 latency = {{ median_s = 0.5, sigma = 0.5 }}\n\
                 failures = {{ error_rate = 0.2, storm_rate = 0.0 }}\n"
            )
        };
        let text = format!(
            "name = \"sticky_probe\"\nsummary = \"Two one-slot endpoints, 40 workers.\"\n\
             jobs = 200\nconcurrency = 40\nsteps_per_job = 2\ncalls_per_step = 4\n\
             [cycle]\nperiod_s = 0.0\n[algorithms.sticky]\nfallback_after_s = {fallback_after_s}\n\
             {}{}",
            endpoint("a"),
            endpoint("b")
        );
        compile::load("sticky_probe.toml", text.as_bytes()).expect("valid")
    };
    let at_once = run_configured(&world(0.0), "sticky");
    let metrics = at_once.metrics.as_ref().expect("finished");
    // The world is contended: calls do wait for a lease, and calls fail.
    assert!(metrics.get(simbench::metrics::Metric::AcquireWaitP99Ms) > 0.0);
    assert!(at_once.endpoints.iter().all(|e| e.pool.failed > 0));
    for fallback_after_s in [1.0, 30.0, 1e6] {
        let patient = run_configured(&world(fallback_after_s), "sticky");
        assert_eq!(patient.metrics, at_once.metrics, "{fallback_after_s}");
        assert_eq!(patient.endpoints, at_once.endpoints, "{fallback_after_s}");
        assert_eq!(patient.events, at_once.events, "{fallback_after_s}");
    }
}

/// One worker sends `jobs` one-call jobs, one at a time, to a metered endpoint declaring
/// `quota_units` beside one declaring `free_quota` (none when empty); `quota_aware` with `params`.
/// Returns the leases each endpoint took.
fn quota_leases(jobs: u32, quota_units: u32, free_quota: &str, params: &str) -> [u64; 2] {
    let constant = "latency = { distribution = \"constant\", mean_s = 1.0, tail_rate = 0.0 }\n\
                    failures = { error_rate = 0.0, storm_rate = 0.0 }\n";
    let text = format!(
        "name = \"quota_mixed\"\nsummary = \"A declared quota beside none.\"\njobs = {jobs}\n\
         concurrency = 1\nsteps_per_job = 1\ncalls_per_step = 1\n[cycle]\nperiod_s = 0.0\n\
         [algorithms.quota_aware]\n{params}\n\
         [[endpoints]]\nid = \"metered\"\ncapacity = 1\nquota_units = {quota_units}\n{constant}\
         rate_limit = {{ per_window = 1000000, window_s = 60.0 }}\n\
         [[endpoints]]\nid = \"free\"\ncapacity = 1\n{free_quota}\n{constant}\
         rate_limit = {{ per_window = 1000000, window_s = 60.0 }}\n"
    );
    let world = compile::load("quota_mixed.toml", text.as_bytes()).expect("valid");
    let result = run_configured(&world, "quota_aware");
    assert_eq!(result.outcome, simbench::harness::Outcome::Ok);
    [
        result.endpoints[0].pool.leases,
        result.endpoints[1].pool.leases,
    ]
}

/// `quota_aware`'s `reserve` and `penalty` only ever move a resource with a quota against one
/// without (score −100): among resources with quotas the ranking is by share whatever they are.
#[test]
fn algorithms_quota_reserve_and_penalty_act_only_beside_an_endpoint_without_a_quota() {
    // Both declare a quota: the most extreme values run as the defaults do.
    let both = |params| quota_leases(100, 20, "quota_units = 200", params);
    assert_eq!(both(""), both("reserve = 1.0\npenalty = 1000.0"));
    assert_eq!(both(""), both("reserve = 0.0\npenalty = 0.0"));
    // Beside one without a quota, the reference's penalty of 10 never sends a call there while
    // the quota is not overspent, with or without the penalty ...
    let mixed = |params| quota_leases(100, 20, "", params);
    assert_eq!(mixed(""), [100, 0]);
    assert_eq!(mixed("penalty = 0.0"), [100, 0]);
    // ... a penalty above 100 leaves the metered endpoint once its share left is at or below
    // the reserve: after 19 of its 20 units at 5 %, 10 at 50 %, 20 (all) at 0. A larger reserve
    // uses it less.
    assert_eq!(mixed("penalty = 200.0"), [19, 81]);
    assert_eq!(mixed("reserve = 0.5\npenalty = 200.0"), [10, 90]);
    assert_eq!(mixed("reserve = 0.0\npenalty = 200.0"), [20, 80]);
    // Overspent (usage is counted, the provider does not hold the client to `quota_units`): a
    // share of 1 − k after k successes on a quota of 1 falls under −100 + penalty, so the
    // reference's penalty of 10 leaves after 91 successes, none after 101. A larger penalty
    // uses it less.
    let overspent = |params| quota_leases(200, 1, "", params);
    assert_eq!(overspent("penalty = 0.0"), [101, 99]);
    assert_eq!(overspent(""), [91, 109]);
}

/// A shared report says what each configured algorithm was: the table's notes and the JSON name
/// the strategy behind a variant and every parameter set off its default.
#[test]
fn algorithms_reports_say_how_the_file_configures_what_ran() {
    let dir = crate::support::scratch_dir("settings");
    let file = dir.join("variants.toml");
    std::fs::write(
        &file,
        format!(
            "extends = \"{}\"\n[algorithms.backoff_slow]\nkind = \"backoff\"\nbase = 1.0\n\
             [algorithms.wait]\ntimeout_s = 30\n[algorithms.sticky]\nfallback_after_s = 0\n",
            root().join("scenarios/bursty.toml").display()
        ),
    )
    .unwrap();
    let json_path = dir.join("report.json");
    let out = simbench(&[
        "run",
        file.to_str().unwrap(),
        "--seeds",
        "1",
        "--jobs",
        "60",
        "--algorithms",
        "wait,backoff_slow",
        "--json",
        json_path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(
        json["settings"],
        serde_json::json!({
            "backoff_slow": { "kind": "backoff", "params": { "base": 1.0 } },
            "wait": { "kind": "wait", "params": { "timeout_s": 30.0 } }
        }),
        "only what ran and differs from the defaults"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "as configured by the file: backoff_slow = backoff (base = 1); wait (timeout_s = 30)."
        ),
        "{stdout}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
