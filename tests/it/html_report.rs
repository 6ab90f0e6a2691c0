//! `--html`: one self-contained page per comparison or sweep. Headless Chromium loads the pages
//! of bursty and multi_vendor with the network off and checks what it drew
//! (tests/browser/check_html.py); the page is the same bytes on any thread count, fetches
//! nothing, and plots one dot per (strategy, seed) per metric.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{scratch_dir, simbench};

/// Runs `simbench` and returns the file it wrote at `path`.
fn written(args: &[&str], path: &Path) -> String {
    let out = simbench(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(path).expect("the page was written")
}

/// The markup of the first `figure` whose opening tag has `attribute`.
fn figure<'a>(html: &'a str, attribute: &str) -> &'a str {
    let start = html
        .find(&format!("<figure class=\"metric\" {attribute}>"))
        .unwrap_or_else(|| panic!("no figure {attribute}"));
    let rest = &html[start..];
    &rest[..rest.find("</figure>").expect("closed")]
}

/// The browser that the test drives: `SIMBENCH_CHROMIUM`, else `chromium` on the PATH.
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("SIMBENCH_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("chromium"))
        .find(|p| p.is_file())
}

#[test]
fn headless_chromium_renders_the_reports_of_bursty_and_multi_vendor() {
    let Some(browser) = chromium() else {
        // .ci/run installs Debian's chromium and sets SIMBENCH_REAL_COMPONENTS=required.
        assert_ne!(
            std::env::var("SIMBENCH_REAL_COMPONENTS").as_deref(),
            Ok("required"),
            "no chromium on the PATH (apt-get install chromium)"
        );
        eprintln!("skipped: no chromium on the PATH (apt-get install chromium to run it)");
        return;
    };
    let dir = scratch_dir("html-browser");
    let shots = std::env::var_os("SIMBENCH_SCREENSHOTS").map_or_else(|| dir.clone(), PathBuf::from);
    let mut args: Vec<PathBuf> = Vec::new();
    for (name, world) in [
        ("bursty", None),
        ("multi_vendor", Some("scenarios/multi_vendor.toml")),
    ] {
        let html = dir.join(format!("{name}.html"));
        let json = dir.join(format!("{name}.json"));
        let mut run = vec!["run", "--quiet", "--seeds", "3"];
        run.extend(world);
        let (h, j) = (html.to_str().unwrap(), json.to_str().unwrap());
        run.extend(["--html", h, "--json", j]);
        written(&run, &html);
        args.extend([html, json]);
    }
    let out = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/check_html.py"))
        .arg(&browser)
        .arg(&shots)
        .args(&args)
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in ["bursty", "multi_vendor"] {
        let png = std::fs::read(shots.join(format!("{name}.png"))).expect("a screenshot");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000);
    }
}

#[test]
fn the_page_fetches_nothing_and_is_the_same_on_any_thread_count() {
    let dir = scratch_dir("html-determinism");
    let mut pages = Vec::new();
    for threads in ["1", "2"] {
        let path = dir.join(format!("t{threads}.html"));
        let p = path.to_str().unwrap();
        let args = [
            "run",
            "--quiet",
            "--seeds",
            "2",
            "--threads",
            threads,
            "--html",
            p,
        ];
        pages.push(written(&args, &path));
    }
    assert_eq!(pages[0], pages[1]);
    let html = &pages[0];
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("<script") && !html.contains("<link") && !html.contains("url("));
    let urls = html.matches("http://").count() + html.matches("https://").count();
    let namespaces = html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(urls, namespaces, "only SVG namespaces name a URL");
    // 18 strategies × 2 seeds on the built-in world.
    let jobs = figure(html, "data-metric=\"jobs_done\"");
    let strategies = html.matches("<section class=\"timeline\"").count();
    assert!(strategies >= 5);
    assert_eq!(jobs.matches("class=\"pt\"").count(), 2 * strategies);
    assert!(!html.contains("data-metric=\"wall_s\""));
}

#[test]
fn the_window_width_needs_a_recording_output() {
    let out = simbench(&["run", "--quiet", "--window-s", "2"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--timeseries") && stderr.contains("--html"),
        "{stderr}"
    );
}

#[test]
fn a_sweep_page_charts_every_seed_at_every_level_and_marks_the_knee() {
    let dir = scratch_dir("html-sweep");
    let path = dir.join("sweep.html");
    let p = path.to_str().unwrap();
    let args = [
        "sweep",
        "--quiet",
        "--concurrency",
        "2,4,8",
        "--seeds",
        "2",
        "--html",
        p,
    ];
    let html = written(&args, &path);
    for metric in ["throughput_rps", "refusal_timeout_ratio", "service_p99_ms"] {
        let panel = figure(&html, &format!("data-metric=\"{metric}\""));
        assert_eq!(panel.matches("class=\"pt\"").count(), 3 * 2, "{metric}");
        assert_eq!(panel.matches("class=\"ci\"").count(), 3, "{metric}");
        assert!(panel.contains(">knee"), "{metric}");
    }
    assert!(html.contains("knee: concurrency"));
}

/// A run's series that end early say why, and the errors panel keeps client timeouts apart.
#[test]
fn a_series_of_a_run_that_ended_early_says_so() {
    let dir = scratch_dir("html-early");
    let world = dir.join("doomed.toml");
    std::fs::write(&world, crate::support::DOOMED).unwrap();
    let page = dir.join("doomed.html");
    let html = written(
        &[
            "run",
            world.to_str().unwrap(),
            "--algorithms",
            "wait",
            "--seeds",
            "1",
            "--quiet",
            "--html",
            page.to_str().unwrap(),
        ],
        &page,
    );
    assert!(
        html.contains("<p class=\"caption early\">This run ended early (stalled): stalled at t = "),
        "no note of the stall"
    );
    assert!(html.contains("Its series stop there.</p>"));
    // The built-in world's runs finish: no such note.
    let fine = dir.join("fine.html");
    let html = written(
        &[
            "run",
            "--algorithms",
            "wait",
            "--seeds",
            "1",
            "--quiet",
            "--html",
            fine.to_str().unwrap(),
        ],
        &fine,
    );
    assert!(!html.contains("caption early"));
    // Drawn, or named in the caption as zero throughout.
    assert!(html.contains("client timeouts"));
}
