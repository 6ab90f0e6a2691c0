//! The terminal table as a user sees it: compact by default (the objective's metrics and a few
//! key ones), every metric with `--all-metrics`, a choice with `--metrics`, the wall time in
//! the footer and never as a row, and blocks of columns that fit `COLUMNS`.

use crate::support::{simbench, simbench_with};

fn out(args: &[&str], env: &[(&str, &str)]) -> (String, String, Option<i32>) {
    let o = simbench_with(args, env);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (text(&o.stdout), text(&o.stderr), o.status.code())
}

/// The metric rows of a table, by name.
fn rows(table: &str) -> Vec<String> {
    table
        .lines()
        .filter(|l| l.starts_with("│ ") && l.contains(" [") && !l.contains("metric [unit]"))
        .map(|l| l[4..].split(' ').next().unwrap_or("").to_owned())
        .collect()
}

const RUN: [&str; 6] = [
    "run",
    "--seeds",
    "2",
    "--algorithms",
    "backoff,wait,aimd",
    "--jobs",
];

#[test]
fn table_is_compact_by_default_and_whole_on_request() {
    let (compact, _, code) = out(&[&RUN[..], &["300"]].concat(), &[]);
    assert_eq!(code, Some(0));
    let shown = rows(&compact);
    for metric in ["jobs_done", "successful_job_latency_p99_ms", "refusal_rate"] {
        assert!(shown.iter().any(|r| r == metric), "{metric} in {shown:?}");
    }
    assert!(!shown.iter().any(|r| r == "retry_requests"), "{shown:?}");
    assert!(
        compact.contains(&format!("showing {} of ", shown.len())),
        "{compact}"
    );
    let (all, _, _) = out(&[&RUN[..], &["300", "--all-metrics"]].concat(), &[]);
    let every = rows(&all);
    assert!(every.len() > shown.len() + 20, "{every:?}");
    assert!(every.iter().any(|r| r == "retry_requests"));
    assert!(
        !every.iter().any(|r| r == "wall_s"),
        "wall time is in the footer"
    );
    assert!(all.contains(" · wall "), "{all}");
    assert!(!all.contains("showing "), "{all}");
}

#[test]
fn table_shows_the_chosen_metrics_and_refuses_unknown_ones() {
    let (text, err, _) = out(
        &[
            &RUN[..],
            &["300", "--metrics", "cost,retry_rate, jobs_done"],
        ]
        .concat(),
        &[],
    );
    // Catalogue order; `cost` does not apply to this world, and a warning says so.
    assert_eq!(rows(&text), ["jobs_done", "retry_rate"]);
    assert!(
        err.contains(
            "warning: --metrics: `cost` does not apply to this world (no endpoint has a price)"
        ),
        "{err}"
    );
    let (_, err, code) = out(
        &[&RUN[..], &["300", "--metrics", "refusal_rat"]].concat(),
        &[],
    );
    assert_eq!(code, Some(2));
    assert!(
        err.contains("unknown metric `refusal_rat` (did you mean `refusal_rate`?)"),
        "{err}"
    );
    let both = simbench(&["run", "--metrics", "jobs_done", "--all-metrics"]);
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn table_fits_the_width_it_is_given() {
    let args = ["run", "--seeds", "2", "--jobs", "300"];
    for width in ["80", "120"] {
        let (text, _, code) = out(&args, &[("COLUMNS", width)]);
        assert_eq!(code, Some(0));
        let limit: usize = width.parse().unwrap();
        for line in text.lines() {
            assert!(line.chars().count() <= limit, "{width}: {line}");
        }
        // Every algorithm still has its column, in some block.
        for name in ["immediate", "backoff", "router_latency_based"] {
            assert!(text.contains(name), "{name}");
        }
    }
    let (wide, _, _) = out(&args, &[]);
    assert!(
        wide.lines().any(|l| l.chars().count() > 200),
        "no limit without COLUMNS"
    );
}
