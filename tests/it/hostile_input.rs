//! Hostile input through the binary: `extends` and the scenario file read only regular files
//! without blocking (FIFOs, devices, folders are refused), bases resolve as the operating
//! system resolves `..` and links, cycles are found by file identity, control characters from a
//! file never reach the terminal raw, the problem count is capped, and the `run` shorthands are
//! checked like the file.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::support::{scratch_dir, simbench};

/// A small valid world named `name`.
fn world(name: &str) -> String {
    format!(
        "name = \"{name}\"\nsummary = \"A small world.\"\njobs = 20\n\n[[endpoints]]\n\
         id = \"only\"\ncapacity = 4\nlatency = {{ median_s = 0.2 }}\n"
    )
}

/// Runs the binary in `dir` and fails (killing it) if it has not ended within 20 s: a command
/// that would block on a FIFO shows up as a failure, never as a hung test.
fn simbench_in(dir: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_simbench"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        // A pipe, so `/dev/stdin` is never a regular file (whatever `/dev/null` has become).
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the simbench binary runs");
    // 1,000 polls 20 ms apart: at least 20 s (no clock reading, which clippy.toml forbids).
    let mut polls = 0;
    while child.try_wait().expect("wait").is_none() {
        polls += 1;
        if polls > 1000 {
            let _ = child.kill();
            let _ = child.wait();
            panic!("simbench {args:?} did not end within 20 s (blocked?)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

// ---------------------------------------------------------------------------------------------
// Only regular files, without blocking.

#[test]
fn hostile_a_fifo_as_base_is_refused_at_once() {
    let dir = scratch_dir("fifo-base");
    mkfifo(&dir.join("base.fifo"));
    std::fs::write(dir.join("main.toml"), "extends = \"base.fifo\"\n").unwrap();
    let out = simbench_in(&dir, &["validate", "main.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "cannot read the base file `base.fifo`: it is a named pipe (FIFO), not a regular file"
        ),
        "{err}"
    );
}

#[test]
fn hostile_a_fifo_named_on_the_command_line_is_refused_at_once() {
    let dir = scratch_dir("fifo-main");
    mkfifo(&dir.join("main.toml"));
    for args in [
        &["validate", "main.toml"][..],
        &["run", "main.toml"],
        &["sweep", "main.toml", "--concurrency", "1,2"],
    ] {
        let out = simbench_in(&dir, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("named pipe (FIFO)"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn hostile_devices_and_folders_are_not_scenario_files() {
    let dir = scratch_dir("devices");
    std::fs::write(dir.join("stdin.toml"), "extends = \"/dev/stdin\"\n").unwrap();
    let out = simbench_in(&dir, &["validate", "stdin.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a regular file"),
        "{}",
        stderr(&out)
    );

    let out = simbench_in(&dir, &["validate", "/dev/stdin"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a regular file"),
        "{}",
        stderr(&out)
    );

    // `-` is a file named `-`, not standard input.
    let out = simbench_in(&dir, &["validate", "-"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no such file or folder"),
        "{}",
        stderr(&out)
    );

    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(dir.join("folder.toml"), "extends = \"sub\"\n").unwrap();
    let out = simbench_in(&dir, &["validate", "folder.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot read the base file `sub`: it is a folder, not a file"),
        "{}",
        stderr(&out)
    );
}

// ---------------------------------------------------------------------------------------------
// Resolution as the operating system resolves.

#[test]
fn hostile_dot_dot_through_a_linked_folder_is_resolved_by_the_os() {
    // comp/lnk -> d1/d2, so comp/lnk/../../base.toml is comp/base.toml; `..` cancelled on the
    // text would give base.toml in the working folder.
    let dir = scratch_dir("linked-folder");
    let comp = dir.join("comp");
    std::fs::create_dir_all(comp.join("d1/d2")).unwrap();
    symlink("d1/d2", comp.join("lnk")).unwrap();
    std::fs::write(comp.join("base.toml"), world("from_comp")).unwrap();
    std::fs::write(dir.join("base.toml"), world("from_the_working_folder")).unwrap();
    std::fs::write(
        comp.join("d1/d2/deep.toml"),
        "extends = \"../../base.toml\"\n",
    )
    .unwrap();
    let out = simbench_in(&dir, &["list", "comp/lnk/deep.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("deep.toml: from_comp ("),
        "{}",
        stdout(&out)
    );
}

#[test]
fn hostile_a_linked_file_finds_its_base_next_to_the_link() {
    let dir = scratch_dir("linked-file");
    std::fs::create_dir_all(dir.join("top")).unwrap();
    std::fs::create_dir_all(dir.join("other")).unwrap();
    std::fs::write(dir.join("other/real.toml"), "extends = \"base.toml\"\n").unwrap();
    std::fs::write(dir.join("other/base.toml"), world("next_to_the_target")).unwrap();
    std::fs::write(dir.join("top/base.toml"), world("next_to_the_link")).unwrap();
    symlink("../other/real.toml", dir.join("top/link.toml")).unwrap();
    let out = simbench_in(&dir, &["list", "top/link.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("link.toml: next_to_the_link ("),
        "{}",
        stdout(&out)
    );
}

#[test]
fn hostile_cycles_are_found_by_file_identity() {
    let dir = scratch_dir("cycles");
    std::fs::create_dir(dir.join("sub")).unwrap();
    // Spelled differently, the same file: through `..` ...
    std::fs::write(dir.join("a.toml"), "extends = \"sub/../a.toml\"\n").unwrap();
    // ... and through a link.
    std::fs::write(dir.join("b.toml"), "extends = \"link.toml\"\n").unwrap();
    symlink("b.toml", dir.join("link.toml")).unwrap();
    for (file, again) in [("a.toml", "sub/../a.toml"), ("b.toml", "link.toml")] {
        let out = simbench_in(&dir, &["validate", "--format", "json", file]);
        assert_eq!(out.status.code(), Some(1), "{file}: {}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let expected = format!(
            "cannot read the base file `{again}`: it is `{file}` again, which is already in this chain: `extends` makes a cycle"
        );
        assert_eq!(doc["findings"][0]["message"], expected.as_str(), "{file}");
    }
}

// ---------------------------------------------------------------------------------------------
// Untrusted text stays text.

/// Whether any byte a terminal would act on (C0 but newline, DEL) is in `bytes`.
fn has_control_bytes(bytes: &[u8]) -> bool {
    bytes.iter().any(|&b| (b < 0x20 && b != b'\n') || b == 0x7f)
}

#[test]
fn hostile_names_with_escape_codes_are_printed_escaped() {
    let dir = scratch_dir("escapes");
    let text = world("evil\\u001b[31mred\\u0007\\u202e")
        .replace("A small world.", "Rings\\u0007 the bell.")
        + "\n[unsuited]\nfailover = \"why\\u001b[2J\"\n";
    std::fs::write(dir.join("evil.toml"), text).unwrap();
    let run = simbench_in(
        &dir,
        &[
            "run",
            "evil.toml",
            "--seeds",
            "1",
            "--algorithms",
            "wait,failover",
            "--csv",
            "runs.csv",
            "--timeseries",
            "series.csv",
            "--html",
            "report.html",
            "--markdown",
            "report.md",
        ],
    );
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    // The files too: a CSV printed with `cat` must not recolour the terminal.
    for file in ["runs.csv", "series.csv", "report.html", "report.md"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let controls = text.bytes().any(|b| (b < 0x20 && b != b'\n') || b == 0x7f);
        assert!(!controls && !text.contains('\u{202e}'), "{file}: {text}");
        assert!(text.contains("evil\\u{1b}[31mred\\u{7}\\u{202e}"), "{file}");
    }
    let list = simbench_in(&dir, &["list", "evil.toml"]);
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    for (what, bytes) in [
        ("run stdout", &run.stdout),
        ("run stderr", &run.stderr),
        ("list stdout", &list.stdout),
    ] {
        assert!(
            !has_control_bytes(bytes),
            "{what}: {:?}",
            String::from_utf8_lossy(bytes)
        );
    }
    assert!(
        stderr(&run).contains("`evil\\u{1b}[31mred\\u{7}\\u{202e}`"),
        "{}",
        stderr(&run)
    );
    assert!(
        stdout(&run).contains("evil\\u{1b}[31mred\\u{7}"),
        "{}",
        stdout(&run)
    );
    assert!(stdout(&run).contains("why\\u{1b}[2J"), "{}", stdout(&run));
    assert!(
        stdout(&list).contains("Rings\\u{7} the bell."),
        "{}",
        stdout(&list)
    );
    assert!(
        stdout(&list).contains("unsuited: failover: why\\u{1b}[2J"),
        "{}",
        stdout(&list)
    );
}

#[test]
fn hostile_snippets_never_echo_control_bytes_or_endless_lines() {
    for file in [
        "tests/data/invalid/control_bytes_in_syntax_error.toml",
        "tests/data/invalid/name_with_escape_codes.toml",
        "tests/data/invalid/long_line_syntax_error.toml",
        "tests/data/invalid/deep_nesting.toml",
    ] {
        let out = simbench(&["validate", file]);
        assert_eq!(out.status.code(), Some(1), "{file}");
        assert!(!has_control_bytes(&out.stderr), "{file}: {}", stderr(&out));
        let widest = stderr(&out).lines().map(|l| l.chars().count()).max();
        assert!(widest.is_some_and(|w| w <= 200), "{file}: {widest:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// The problem cap.

#[test]
fn hostile_many_problems_are_capped_at_100_and_counted() {
    let dir = scratch_dir("many");
    let mut text = world("many");
    text.insert_str(
        0,
        &(0..250)
            .map(|i| format!("unknown_{i} = 1\n"))
            .collect::<String>(),
    );
    std::fs::write(dir.join("many.toml"), text).unwrap();
    let human = simbench_in(&dir, &["validate", "many.toml"]);
    assert_eq!(human.status.code(), Some(1));
    let err = stderr(&human);
    assert!(err.starts_with("error: 250 problems in many.toml"), "{err}");
    assert_eq!(err.matches("× unknown key").count(), 100, "{err}");
    assert!(
        err.contains("\nand 150 more problems (only the first 100 are shown)\n"),
        "{err}"
    );
    let json = simbench_in(&dir, &["validate", "--format", "json", "many.toml"]);
    assert_eq!(json.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(doc["findings"].as_array().map(Vec::len), Some(100));
    assert_eq!(doc["files"][0]["problems"], 250);
    assert_eq!(doc["files"][0]["omitted"], 150);
    assert_eq!(doc["summary"]["problems"], 250);
}

// ---------------------------------------------------------------------------------------------
// One rule for the shorthands.

#[test]
fn hostile_run_shorthands_are_checked_like_the_file() {
    for (flag, value, set) in [
        ("--jobs", "0", "jobs=0"),
        ("--concurrency", "0", "concurrency=0"),
        ("--horizon", "-1", "horizon_s=-1"),
        ("--jobs", "many", "jobs=many"),
    ] {
        let short = simbench(&["run", "--seeds", "1", flag, value]);
        let long = simbench(&["run", "--seeds", "1", "--set", set]);
        assert_eq!(
            short.status.code(),
            Some(1),
            "{flag} {value}: {}",
            stderr(&short)
        );
        assert_eq!(
            long.status.code(),
            Some(1),
            "--set {set}: {}",
            stderr(&long)
        );
        let located = format!("╭─[{flag}:1:");
        assert!(stderr(&short).contains(&located), "{}", stderr(&short));
        // The same message as `--set`, only the origin differs.
        assert_eq!(
            stderr(&short).replace(flag, "--set #1"),
            stderr(&long),
            "{flag} {value}"
        );
    }
    let ok = simbench(&[
        "run",
        "--seeds",
        "1",
        "--jobs",
        "30",
        "--horizon",
        "100",
        "--quiet",
    ]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
}

/// A quantile table one point over the limit gets a message of a line or two naming the limit,
/// not the table quoted whole (it was 2.4 MB of standard error for 100,001 points).
#[test]
fn hostile_a_table_too_long_is_refused_in_a_few_lines() {
    let dir = scratch_dir("long-table");
    let n = 100_001;
    let mut csv = String::from("quantile,value\n");
    for i in 0..n {
        csv.push_str(&format!(
            "{},{}\n",
            i as f64 / (n - 1) as f64,
            0.1 + i as f64 * 1e-5
        ));
    }
    std::fs::write(dir.join("big.csv"), csv).unwrap();
    let file = dir.join("w.toml");
    std::fs::write(
        &file,
        "name = \"long\"\nsummary = \"x\"\n[[endpoints]]\nid = \"a\"\ncapacity = 4\n\
         latency = { distribution = \"empirical\", quantiles_csv = \"big.csv\" }\n",
    )
    .unwrap();
    let out = simbench(&["validate", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.len() < 2_000, "{} bytes", err.len());
    assert!(
        err.contains("has 100001 entries; at most 100000 are allowed"),
        "{err}"
    );
}
