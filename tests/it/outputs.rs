//! Where outputs go, through the binary: outputs never destroy inputs or each other, only
//! regular files are replaced (FIFOs, devices, `/dev/stdout` are written through), a failed
//! command or a signal leaves every existing file as it was, and every write to standard output
//! is checked (a closed pipe ends quietly, a full disk is exit 2) while a failing standard error
//! never makes simbench panic.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::Duration;

use crate::support::DOOMED;
use crate::support::scratch_dir;

/// A world whose every run finishes quickly, and lasts minutes with `--jobs 1000000 --seeds 20`.
const CALM: &str = r#"
name = "calm"
summary = "One endpoint that never fails."
jobs = 50
concurrency = 8
horizon_s = 1e9
[[endpoints]]
id = "only"
capacity = 8
latency = { median_s = 0.05, sigma = 0.0 }
failures = { error_rate = 0.0, storm_rate = 0.0 }
"#;

/// A quick `run` of the calm world, for tests about where its outputs go.
const QUICK: [&str; 6] = ["--seeds", "1", "--algorithms", "wait", "--jobs", "40"];

/// The binary, run in `dir`, without colour.
fn command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_simbench"));
    cmd.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE");
    cmd
}

fn simbench_in(dir: &Path, args: &[&str]) -> Output {
    command(dir, args).output().expect("the binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A scratch folder holding `calm.toml`, `base.toml` and `v.toml` (which extends `base.toml`).
fn world_dir(tag: &str) -> PathBuf {
    let dir = scratch_dir(tag);
    std::fs::write(dir.join("calm.toml"), CALM).unwrap();
    std::fs::write(dir.join("base.toml"), CALM).unwrap();
    std::fs::write(
        dir.join("v.toml"),
        "extends = \"base.toml\"\nname = \"v\"\n",
    )
    .unwrap();
    dir
}

/// Every name in `dir` with its contents (empty for what is not a readable file), sorted.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut entries: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            let bytes = if meta.is_file() {
                std::fs::read(e.path()).unwrap()
            } else {
                Vec::new()
            };
            (name, bytes)
        })
        .collect();
    entries.sort();
    entries
}

fn temporaries(dir: &Path) -> Vec<String> {
    snapshot(dir)
        .into_iter()
        .map(|(name, _)| name)
        .filter(|n| n.starts_with(".simbench-"))
        .collect()
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
}

/// Waits for the child at most `limit`, killing it if it is still running then.
fn wait_at_most(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let step = Duration::from_millis(20);
    let mut waited = Duration::ZERO;
    while waited < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(step);
        waited += step;
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn outputs_that_are_inputs_or_each_other_are_refused_before_any_run() {
    let dir = world_dir("conflict");
    std::os::unix::fs::symlink("v.toml", dir.join("link.toml")).unwrap();
    std::fs::hard_link(dir.join("base.toml"), dir.join("hard.toml")).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    let before = snapshot(&dir);
    let run = |extra: &[&'static str]| [&["run", "v.toml"], &QUICK[..], extra].concat();
    let sweep = |extra: &[&'static str]| -> Vec<&'static str> {
        [
            &["sweep", "v.toml", "--concurrency", "1,2", "--seeds", "1"][..],
            extra,
        ]
        .concat()
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            run(&["--json", "v.toml"]),
            "--json v.toml is the scenario file",
        ),
        (
            run(&["--csv", "v.toml"]),
            "--csv v.toml is the scenario file",
        ),
        (
            run(&["--markdown", "./sub/../v.toml"]),
            "--markdown ./sub/../v.toml is the scenario file",
        ),
        (
            run(&["--json", "link.toml"]),
            "--json link.toml is the scenario file",
        ),
        (
            run(&["--json", "base.toml"]),
            "--json base.toml is a base that the scenario extends",
        ),
        (
            run(&["--csv", "hard.toml"]),
            "--csv hard.toml is a base that the scenario extends",
        ),
        (
            run(&["--json", "o.out", "--csv", "o.out"]),
            "--json o.out and --csv o.out are the same file",
        ),
        (
            run(&["--json", "new/o.out", "--markdown", "new/../new/o.out"]),
            "--json new/o.out and --markdown new/../new/o.out are the same file",
        ),
        (
            run(&["--json", "-", "--csv", "-"]),
            "--json - and --csv - both write to standard output",
        ),
        // The test's standard output is a pipe: /dev/stdout is that same pipe.
        (
            run(&["--json", "-", "--csv", "/dev/stdout"]),
            "--json - and --csv /dev/stdout both write to standard output",
        ),
        (
            sweep(&["--csv", "v.toml"]),
            "--csv v.toml is the scenario file",
        ),
        (
            sweep(&["--json", "base.toml"]),
            "--json base.toml is a base that the scenario extends",
        ),
        (
            sweep(&["--json", "s.out", "--csv", "./s.out"]),
            "--json s.out and --csv ./s.out are the same file",
        ),
    ];
    for (args, expected) in cases {
        let out = simbench_in(&dir, &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(err.contains("nothing was written"), "{err}");
        // Refused before any run: the header that announces the runs never appeared.
        assert!(!err.contains("simbench:"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(snapshot(&dir), before, "{args:?}");
    }
}

#[test]
fn outputs_that_are_folders_or_sockets_are_refused_before_any_run() {
    let dir = world_dir("kinds");
    std::fs::create_dir(dir.join("folder")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(dir.join("sock")).unwrap();
    let before = snapshot(&dir);
    for (path, expected) in [
        ("folder", "cannot write folder: it is a folder, not a file"),
        ("sock", "cannot write sock: it is a socket"),
    ] {
        let out = simbench_in(
            &dir,
            &[
                &["run", "calm.toml", "--csv", "new/ok.csv", "--json", path][..],
                &QUICK[..],
            ]
            .concat(),
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(expected), "{err}");
        assert!(!err.contains("simbench:"), "refused before any run: {err}");
        assert_eq!(snapshot(&dir), before, "no temporary, no new folder");
    }
}

#[test]
fn outputs_to_a_fifo_are_written_through() {
    let dir = world_dir("fifo");
    let fifo = dir.join("runs.csv");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let out = simbench_in(
        &dir,
        &[
            &["run", "calm.toml", "--quiet", "--csv", "runs.csv"],
            &QUICK[..],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = reader.join().unwrap();
    assert!(
        text.starts_with("scenario,world_hash,rng,algorithm,seed,outcome,valid,"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 2, "{text}");
    let meta = std::fs::symlink_metadata(&fifo).unwrap();
    assert!(meta.file_type().is_fifo(), "still a FIFO");
    assert!(temporaries(&dir).is_empty());
}

#[test]
fn outputs_through_symlinks_replace_the_final_target_and_keep_the_links() {
    let dir = world_dir("links");
    let real = dir.join("real.json");
    std::fs::write(&real, "old").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::os::unix::fs::symlink("real.json", dir.join("l1")).unwrap();
    std::os::unix::fs::symlink("l1", dir.join("l2")).unwrap();
    for link in ["l1", "l2"] {
        std::fs::write(&real, "old").unwrap();
        let inode = std::fs::metadata(&real).unwrap().ino();
        let out = simbench_in(
            &dir,
            &[&["run", "calm.toml", "--quiet", "--json", link], &QUICK[..]].concat(),
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        for l in ["l1", "l2"] {
            let meta = std::fs::symlink_metadata(dir.join(l)).unwrap();
            assert!(meta.file_type().is_symlink(), "{l} is still a link");
        }
        let meta = std::fs::symlink_metadata(&real).unwrap();
        assert!(meta.is_file());
        assert_ne!(
            meta.ino(),
            inode,
            "replaced by a rename, not rewritten in place"
        );
        assert_eq!(meta.permissions().mode() & 0o777, 0o640, "permissions kept");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&real).unwrap()).unwrap();
        assert_eq!(json["scenario"], "calm");
        assert!(temporaries(&dir).is_empty());
    }
}

#[test]
fn outputs_to_dev_stdout_and_dev_fd_write_into_whatever_standard_output_is() {
    let dir = world_dir("stdout");
    // Standard output a pipe: /dev/stdout is written through.
    let out = simbench_in(
        &dir,
        &[
            &["run", "calm.toml", "--quiet", "--csv", "/dev/stdout"],
            &QUICK[..],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("scenario,world_hash,rng,algorithm,seed,outcome,valid,"),
        "{text}"
    );
    // Standard output a regular file: written into it, as `cat > /dev/fd/1` would, and the
    // file stays the very file the caller opened (not replaced by a rename).
    for path in ["/dev/stdout", "/dev/fd/1"] {
        let target = dir.join("redirected.json");
        let file = File::create(&target).unwrap();
        let inode = file.metadata().unwrap().ino();
        let out = command(
            &dir,
            &[&["run", "calm.toml", "--quiet", "--json", path], &QUICK[..]].concat(),
        )
        .stdout(file)
        .output()
        .unwrap();
        assert_eq!(out.status.code(), Some(0), "{path}: {}", stderr(&out));
        assert_eq!(std::fs::metadata(&target).unwrap().ino(), inode);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
        assert_eq!(json["scenario"], "calm", "{path}");
    }
    let meta = std::fs::symlink_metadata("/dev/stdout").unwrap();
    assert!(meta.file_type().is_symlink(), "/dev/stdout is still a link");
}

#[test]
fn outputs_to_the_null_device_leave_it_a_character_device() {
    let dir = world_dir("null");
    // Built at run time so that no command line in this file names the machine's null device.
    let null = ["", "dev", "null"].join("/");
    let out = simbench_in(
        &dir,
        &[
            &["run", "calm.toml", "--json", &null, "--csv", &null][..],
            &QUICK[..],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("wrote {null}")));
    let meta = std::fs::symlink_metadata(&null).unwrap();
    assert!(
        meta.file_type().is_char_device(),
        "{null} is still a device"
    );
}

#[test]
fn a_full_device_as_output_is_exit_2_and_every_other_output_is_kept() {
    let dir = world_dir("full");
    std::fs::write(dir.join("keep.json"), "old json").unwrap();
    let out = simbench_in(
        &dir,
        &[
            &[
                "run",
                "calm.toml",
                "--json",
                "keep.json",
                "--csv",
                "/dev/full",
            ][..],
            &QUICK[..],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("error: cannot write /dev/full: no space left on the device"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(dir.join("keep.json")).unwrap(), b"old json");
    assert!(temporaries(&dir).is_empty());
    let meta = std::fs::symlink_metadata("/dev/full").unwrap();
    assert!(
        meta.file_type().is_char_device(),
        "/dev/full is still a device"
    );
}

#[test]
fn an_output_name_of_250_characters_is_written() {
    let dir = world_dir("long");
    let name = format!("{}.json", "n".repeat(245));
    assert_eq!(name.len(), 250);
    let out = simbench_in(
        &dir,
        &[
            &["run", "calm.toml", "--quiet", "--json", &name],
            &QUICK[..],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(&name)).unwrap()).unwrap();
    assert_eq!(json["scenario"], "calm");
    assert!(temporaries(&dir).is_empty());
}

#[test]
fn a_failed_command_leaves_every_existing_output_untouched() {
    let dir = world_dir("failed");
    std::fs::write(dir.join("doomed.toml"), DOOMED).unwrap();
    std::fs::write(dir.join("keep.json"), "old json").unwrap();
    std::fs::write(dir.join("keep.csv"), "old csv").unwrap();
    let before = snapshot(&dir);
    // No run finishes (under the reference's random numbers a stall has no result): exit 2,
    // and neither the files nor a new folder appear; standard output still gets its report,
    // which says why.
    let out = simbench_in(
        &dir,
        &[
            "run",
            "doomed.toml",
            "--algorithms",
            "wait",
            "--seeds",
            "1",
            "--rng",
            "reference",
            "--json",
            "keep.json",
            "--markdown",
            "new/report.md",
            "--csv",
            "-",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("error: no run finished"));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("scenario,world_hash,rng,algorithm,seed")
    );
    assert_eq!(snapshot(&dir), before);
    // A sweep without a baseline: the same.
    let out = simbench_in(
        &dir,
        &[
            "sweep",
            "doomed.toml",
            "--concurrency",
            "1,2",
            "--seeds",
            "1",
            "--rng",
            "reference",
            "--json",
            "keep.json",
            "--csv",
            "new/deep/s.csv",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(snapshot(&dir), before);
    // Standard output cannot be written: exit 2, and the file outputs are not replaced either.
    let full = File::options().write(true).open("/dev/full").unwrap();
    let out = command(
        &dir,
        &[
            &[
                "run",
                "calm.toml",
                "--json",
                "keep.json",
                "--csv",
                "keep.csv",
            ][..],
            &QUICK[..],
        ]
        .concat(),
    )
    .stdout(full)
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(snapshot(&dir), before);
}

/// Starts `args` in `dir`, waits until its temporaries exist (they are made before the runs
/// start, and the runs last minutes), sends `signal`, and returns how it ended.
fn interrupted(dir: &Path, args: &[&str], signal: &str) -> ExitStatus {
    crate::support::default_stop_signals_for_children();
    let mut child = command(dir, args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Names only, and a folder not made yet holds none: the command makes, fills and renames
    // its files while this looks.
    let staged = |d: &Path| {
        std::fs::read_dir(d).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(".simbench-"))
        })
    };
    wait_until(&mut child, || staged(dir) && staged(&dir.join("out/new")));
    let pid = child.id().to_string();
    let sent = Command::new("kill").args([signal, &pid]).status().unwrap();
    assert!(sent.success());
    wait_at_most(&mut child, Duration::from_secs(60)).expect("the signal ends it")
}

/// Waits (60 s at most) until `staged` says the running `child` has made its temporaries.
fn wait_until(child: &mut std::process::Child, staged: impl Fn() -> bool) {
    let mut waited = 0;
    while !staged() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "ended before the signal"
        );
        assert!(waited < 3000, "no temporary appeared in 60 s");
        std::thread::sleep(Duration::from_millis(20));
        waited += 1;
    }
}

#[test]
fn a_signal_while_writing_removes_the_temporaries_and_keeps_the_old_files() {
    let dir = world_dir("signal");
    std::fs::write(dir.join("keep.json"), "old json").unwrap();
    std::fs::create_dir(dir.join("out")).unwrap();
    let long = [
        "--jobs",
        "1000000",
        "--seeds",
        "20",
        "--threads",
        "1",
        "--json",
        "keep.json",
        "--csv",
        "out/new/runs.csv",
    ];
    let status = interrupted(
        &dir,
        &[&["run", "calm.toml", "--algorithms", "wait"][..], &long[..]].concat(),
        "-TERM",
    );
    assert_eq!(status.signal(), Some(15), "{status:?}");
    assert!(temporaries(&dir).is_empty());
    assert!(
        !dir.join("out/new").exists(),
        "the folder made for it is gone"
    );
    assert_eq!(std::fs::read(dir.join("keep.json")).unwrap(), b"old json");

    let sweep = [
        "sweep",
        "calm.toml",
        "--concurrency",
        "1,2",
        "--set",
        "jobs=1000000",
        "--seeds",
        "20",
        "--threads",
        "1",
        "--json",
        "keep.json",
        "--csv",
        "out/new/levels.csv",
    ];
    let status = interrupted(&dir, &sweep, "-INT");
    assert_eq!(status.signal(), Some(2), "{status:?}");
    assert!(temporaries(&dir).is_empty());
    assert!(!dir.join("out/new").exists());
    assert_eq!(std::fs::read(dir.join("keep.json")).unwrap(), b"old json");
}

/// Under `nohup` a hangup does not stop a run that writes files: the ignore it was started
/// with is kept, and the outputs are written as if nothing had happened.
#[test]
fn a_nohup_run_outlives_a_hangup() {
    let dir = world_dir("nohup");
    let args = [
        "run",
        "calm.toml",
        "--algorithms",
        "wait",
        "--jobs",
        "1000000",
        "--seeds",
        "4",
        "--threads",
        "1",
        "--quiet",
        "--json",
        "out.json",
    ];
    let mut child = Command::new("nohup")
        .arg(env!("CARGO_BIN_EXE_simbench"))
        .args(args)
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nohup runs");
    wait_until(&mut child, || !temporaries(&dir).is_empty());
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = wait_at_most(&mut child, Duration::from_secs(300)).expect("the run ends");
    assert!(status.success(), "{status:?}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("out.json")).unwrap()).unwrap();
    assert_eq!(
        report["runs"].as_array().map(Vec::len),
        Some(4),
        "every seed ran"
    );
}

/// One invocation of every command that writes to standard output.
fn every_command() -> Vec<Vec<&'static str>> {
    let run = [&["run", "calm.toml"][..], &QUICK[..]].concat();
    vec![
        vec!["list"],
        vec!["list", "."],
        vec!["schema"],
        vec!["validate", "--format", "json", "calm.toml"],
        run.clone(),
        [&run[..], &["--quiet", "--json", "-"]].concat(),
        [&run[..], &["--quiet", "--csv", "-"]].concat(),
        vec![
            "sweep",
            "calm.toml",
            "--concurrency",
            "1,2",
            "--seeds",
            "1",
            "--set",
            "jobs=40",
        ],
        vec!["--help"],
    ]
}

#[test]
fn a_closed_pipe_on_standard_output_ends_quietly() {
    let dir = world_dir("pipe");
    for args in every_command() {
        let mut child = command(&dir, &args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before simbench writes anything: its writes meet a closed pipe.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("error"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // The file outputs of a command whose table met a closed pipe are still written.
    let mut child = command(
        &dir,
        &[&["run", "calm.toml", "--json", "r.json"][..], &QUICK[..]].concat(),
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    drop(child.stdout.take());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    assert_eq!(json["scenario"], "calm");
}

#[test]
fn a_full_standard_output_is_exit_2_with_a_message() {
    let dir = world_dir("stdout-full");
    for args in every_command() {
        let full = File::options().write(true).open("/dev/full").unwrap();
        let out = command(&dir, &args).stdout(full).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("error: cannot write to standard output: no space left on the device"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn a_full_or_closed_standard_error_never_panics() {
    let dir = world_dir("stderr");
    std::fs::write(dir.join("bad.toml"), "name = 3\n").unwrap();
    let cases: Vec<(Vec<&str>, i32)> = vec![
        ([&["run", "calm.toml"][..], &QUICK[..]].concat(), 0),
        (vec!["run", "bad.toml"], 1),
        (vec!["validate", "bad.toml"], 1),
        (vec!["run", "calm.toml", "--json", "calm.toml"], 2),
        (vec!["run", "missing.toml"], 2),
        (vec!["run", "--no-such-flag"], 2),
        (
            vec![
                "sweep",
                "calm.toml",
                "--rate",
                "1,2",
                "--seeds",
                "1",
                "--set",
                "jobs=40",
            ],
            2,
        ),
    ];
    for (args, code) in &cases {
        let full = File::options().write(true).open("/dev/full").unwrap();
        let out = command(&dir, args).stderr(full).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(*code),
            "{args:?} with a full stderr"
        );
        // Closed, not redirected: the shell closes descriptor 2 before simbench starts.
        let out = Command::new("sh")
            .arg("-c")
            .arg("exec \"$0\" \"$@\" 2>&-")
            .arg(env!("CARGO_BIN_EXE_simbench"))
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(*code),
            "{args:?} with a closed stderr"
        );
    }
}

#[test]
fn list_says_what_it_skipped_and_never_blocks_on_a_fifo() {
    let dir = world_dir("list");
    mkfifo(&dir.join("pipe.toml"));
    std::fs::create_dir(dir.join("folder.toml")).unwrap();
    std::os::unix::fs::symlink("loop-b.toml", dir.join("loop-a.toml")).unwrap();
    std::os::unix::fs::symlink("loop-a.toml", dir.join("loop-b.toml")).unwrap();
    std::os::unix::fs::symlink("gone.toml", dir.join("dangling.toml")).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a scenario").unwrap();
    let mut child = command(&dir, &["list", "."])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
        text
    });
    let status = wait_at_most(&mut child, Duration::from_secs(60)).expect("list never blocks");
    assert_eq!(status.code(), Some(0));
    let text = reader.join().unwrap();
    for line in [
        "  calm.toml: calm (",
        "  dangling.toml: skipped: a symbolic link whose target does not exist\n",
        "  folder.toml: skipped: a folder, not a scenario file\n",
        "  loop-a.toml: skipped: a loop of symbolic links\n",
        "  loop-b.toml: skipped: a loop of symbolic links\n",
        "  pipe.toml: skipped: a FIFO, not a regular file",
    ] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
    assert!(!text.contains("notes.txt"));
    // Named directly, a FIFO is refused with the same reason, without being opened.
    let out = simbench_in(&dir, &["list", "pipe.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot list pipe.toml: a FIFO"),
        "{}",
        stderr(&out)
    );
}
