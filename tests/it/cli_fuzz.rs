//! A command-line fuzz over hostile paths and overrides, through the binary.
//!
//! Every case is one `simbench` command built from pools of awkward inputs (folders, FIFOs,
//! symlink loops, empty and binary files, missing files, `-`), outputs (the inputs themselves,
//! the same file twice, devices, links, very long names, missing folders) and `--set` overrides
//! with extreme values. Each must end on its own with an exit code from the documented table,
//! never panic, never change an input, leave no temporary file behind, leave every existing
//! output untouched when it fails, and leave the machine's devices devices. The cases come from
//! a fixed seed, so a failure names a command that reproduces it; `CLI_FUZZ_CASES` and
//! `CLI_FUZZ_SEED` change how many and which.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Cases per shard by default; four shards run in parallel, so CI runs 2,000 cases.
const DEFAULT_CASES_PER_SHARD: u64 = 500;
/// A case that has not ended by then counts as a hang.
const HANG_AFTER: Duration = Duration::from_secs(60);
/// How often a running case is checked (sleeps are counted: tests read no clock).
const POLL: Duration = Duration::from_millis(2);

const BASE: &str = r#"
name = "fuzz_base"
summary = "A small world for the command-line fuzz."
seed = 7
jobs = 20
concurrency = 3

[[endpoints]]
id = "a"
capacity = 2
latency = { median_s = 0.2 }
rate_limit = { per_window = 30, window_s = 10.0 }

[[endpoints]]
id = "b"
capacity = 3
latency = { median_s = 0.5 }
"#;

const WORLD: &str = "extends = \"base.toml\"\nname = \"fuzz_world\"\n";

/// Scenario paths given as the command's file argument (relative to the scratch folder).
const INPUTS: &[&str] = &[
    "w/world.toml",
    "w/world.toml",
    "w/base.toml",
    "w/link.toml",
    "w/dir.toml",
    "w/empty.toml",
    "w/garbage.toml",
    "w/loop.toml",
    "w/fifo.toml",
    "w/missing.toml",
    "w/../w/world.toml",
    "w/lnkdir/world.toml",
    "w/extends_fifo.toml",
    "w/extends_dir.toml",
    "w/extends_self.toml",
    "-",
    "",
];

/// Paths given to `--json`, `--csv` and `--markdown`.
const OUTPUTS: &[&str] = &[
    "out/a.json",
    "out/b.csv",
    "out/c.md",
    "out/new/deep/d.json",
    "out/link.json",
    "out/dangling.json",
    "-",
    "w/world.toml",
    "w/base.toml",
    "w/link.toml",
    "w/dir.toml",
    "out",
    "out/",
    "",
    "/dev/stdout",
    "/dev/full",
    "LONG",
];

const KEYS: &[&str] = &[
    "jobs",
    "concurrency",
    "horizon_s",
    "seed",
    "name",
    "extends",
    "cycle.period_s",
    "cycle.trough",
    "retry.max_attempts",
    "retry.base",
    "retry.cap",
    "retry.factor",
    "algorithms.backoff.base",
    "algorithms.backoff.cap",
    "algorithms.aimd.factor",
    "endpoints.0.capacity",
    "endpoints.a.latency.median_s",
    "endpoints.b.rate_limit.per_window",
    "endpoints.7.capacity",
    "incidents.0.start_s",
    "load.rate_per_s",
    "no.such.key",
];

const VALUES: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "0.5",
    "5e-324",
    "1e-300",
    "1e308",
    "nan",
    "inf",
    "-inf",
    "9223372036854775807",
    "-9223372036854775808",
    "0x10",
    "1_000",
    "\"x\"",
    "\"\\u001b[31mred\"",
    "\"base.toml\"",
    "\"dir.toml\"",
    "\"fifo.toml\"",
    "[]",
    "{}",
    "{ kind = \"open\", rate_per_s = 1e9 }",
    "true",
    "",
    "=",
];

const ALGORITHMS: &[&str] = &["wait", "backoff", "immediate", "aimd", "sticky", "nope", ""];

/// A small deterministic generator (64-bit LCG, high bits), so a case list never depends on a
/// crate's algorithm.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// The scratch folder a shard works in, with its inputs and existing outputs.
struct Fixture {
    root: PathBuf,
    long_name: String,
}

impl Fixture {
    fn new(shard: u64) -> Fixture {
        let root = crate::support::scratch_dir(&format!("cli-fuzz-{shard}"));
        let w = root.join("w");
        std::fs::create_dir_all(w.join("dir.toml")).unwrap();
        std::fs::create_dir_all(w.join("real")).unwrap();
        std::fs::write(w.join("base.toml"), BASE).unwrap();
        std::fs::write(w.join("world.toml"), WORLD).unwrap();
        std::fs::write(w.join("real/world.toml"), WORLD.replace("base", "../base")).unwrap();
        std::fs::write(w.join("empty.toml"), "").unwrap();
        std::fs::write(
            w.join("garbage.toml"),
            b"\x00\x1b[31m\x07name = \xff\xfe[[[\n",
        )
        .unwrap();
        std::fs::write(w.join("extends_fifo.toml"), "extends = \"fifo.toml\"\n").unwrap();
        std::fs::write(w.join("extends_dir.toml"), "extends = \"dir.toml\"\n").unwrap();
        std::fs::write(
            w.join("extends_self.toml"),
            "extends = \"./extends_self.toml\"\n",
        )
        .unwrap();
        std::os::unix::fs::symlink("world.toml", w.join("link.toml")).unwrap();
        std::os::unix::fs::symlink("loop.toml", w.join("loop.toml")).unwrap();
        std::os::unix::fs::symlink("real", w.join("lnkdir")).unwrap();
        let made = Command::new("mkfifo")
            .arg(w.join("fifo.toml"))
            .status()
            .expect("mkfifo runs");
        assert!(made.success(), "mkfifo failed");
        let fixture = Fixture {
            root,
            long_name: format!("out/{}.json", "l".repeat(245)),
        };
        fixture.reset_outputs();
        fixture
    }

    /// Puts the scenarios that an output may legitimately replace back as they were.
    fn reset_scenarios(&self) {
        let w = self.root.join("w");
        std::fs::write(w.join("base.toml"), BASE).unwrap();
        std::fs::write(w.join("world.toml"), WORLD).unwrap();
    }

    /// Puts every existing output back to its sentinel content and removes new ones.
    fn reset_outputs(&self) {
        let out = self.root.join("out");
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        for name in ["a.json", "b.csv", "c.md"] {
            std::fs::write(out.join(name), sentinel(name)).unwrap();
        }
        std::os::unix::fs::symlink("a.json", out.join("link.json")).unwrap();
        std::os::unix::fs::symlink("gone/x.json", out.join("dangling.json")).unwrap();
    }

    /// Every entry under `dir` (relative path → what it is and holds), without following links.
    fn snapshot(&self, dir: &str) -> BTreeMap<String, String> {
        let mut seen = BTreeMap::new();
        walk(&self.root.join(dir), &self.root, &mut seen);
        seen
    }

    fn output_arg(&self, picked: &str) -> String {
        if picked == "LONG" {
            self.long_name.clone()
        } else {
            picked.to_owned()
        }
    }
}

fn sentinel(name: &str) -> String {
    format!("existing {name}, must survive a failed command\n")
}

fn walk(dir: &Path, root: &Path, seen: &mut BTreeMap<String, String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let rel = path.strip_prefix(root).unwrap().display().to_string();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let kind = meta.file_type();
        let what = if kind.is_symlink() {
            format!("link -> {}", std::fs::read_link(&path).unwrap().display())
        } else if kind.is_dir() {
            walk(&path, root, seen);
            "folder".to_owned()
        } else if kind.is_fifo() {
            "fifo".to_owned()
        } else {
            let bytes = std::fs::read(&path).unwrap();
            format!(
                "file of {} bytes, FNV-1a {:016x}",
                bytes.len(),
                fnv1a(&bytes)
            )
        };
        seen.insert(rel, what);
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One generated command line, with what it may change.
struct Case {
    args: Vec<String>,
    /// The scenario files it reads (`run` and `sweep`): these must never change.
    reads: &'static [&'static str],
    /// The files under `w/` it asks to replace; only these may change, and only on success.
    writes: Vec<&'static str>,
}

/// The files a scenario path reads: itself (through links) and its `extends` chain. Paths that
/// do not load read nothing that may be written (the command fails before any output).
fn chain(file: &str) -> &'static [&'static str] {
    match file {
        "w/world.toml" | "w/../w/world.toml" | "w/link.toml" => &["w/world.toml", "w/base.toml"],
        "w/base.toml" => &["w/base.toml"],
        "w/lnkdir/world.toml" => &["w/real/world.toml", "w/base.toml"],
        _ => &[],
    }
}

/// The file under `w/` that an output path replaces, if any (a link's target, not the link).
fn replaced(output: &str) -> Option<&'static str> {
    match output {
        "w/world.toml" | "w/link.toml" => Some("w/world.toml"),
        "w/base.toml" => Some("w/base.toml"),
        _ => None,
    }
}

fn case(rng: &mut Lcg, fixture: &Fixture) -> Case {
    let mut reads: &'static [&'static str] = &[];
    let mut writes = Vec::new();
    let command = rng.pick(&["validate", "run", "run", "run", "sweep", "list", "schema"]);
    let mut args = vec![command.to_owned()];
    let file = |rng: &mut Lcg, args: &mut Vec<String>| {
        if rng.chance(90) {
            args.push(rng.pick(INPUTS).to_owned());
        }
    };
    match command {
        "validate" => {
            file(rng, &mut args);
            if rng.chance(30) {
                file(rng, &mut args);
            }
            if rng.chance(40) {
                args.extend([
                    "--format".into(),
                    rng.pick(&["json", "human", "xml"]).into(),
                ]);
            }
        }
        "list" => {
            if rng.chance(80) {
                args.push(
                    rng.pick(&[
                        "w",
                        "w/lnkdir",
                        "out",
                        "w/world.toml",
                        "w/fifo.toml",
                        "nowhere",
                    ])
                    .into(),
                );
            }
        }
        "schema" => {}
        _ => {
            file(rng, &mut args);
            if args.len() == 2 {
                reads = chain(&args[1]);
            }
            let flags: &[&str] = if command == "run" {
                &["--json", "--csv", "--markdown"]
            } else {
                &["--json", "--csv"]
            };
            for flag in flags {
                if rng.chance(35) {
                    let output = rng.pick(OUTPUTS);
                    writes.extend(replaced(output));
                    args.extend([(*flag).to_owned(), fixture.output_arg(output)]);
                }
            }
            if command == "run" {
                let first = rng.pick(ALGORITHMS);
                let second = rng.pick(ALGORITHMS);
                args.extend(["--algorithms".into(), format!("{first},{second}")]);
                if rng.chance(15) {
                    args.extend([
                        "--jobs".into(),
                        rng.pick(&["0", "1", "5", "10000001", "x"]).into(),
                    ]);
                }
            } else {
                args.extend([
                    "--concurrency".into(),
                    rng.pick(&["1,2", "2,4", "0,1", "2,1", "1"]).into(),
                ]);
            }
            for _ in 0..rng.below(4) {
                let set = format!("{}={}", rng.pick(KEYS), rng.pick(VALUES));
                args.extend(["--set".into(), set]);
            }
            args.extend(["--seeds".into(), rng.pick(&["1", "1", "2", "0"]).into()]);
            args.extend([
                "--wall-budget".into(),
                "1".into(),
                "--threads".into(),
                "1".into(),
            ]);
            if rng.chance(50) {
                args.push("--quiet".into());
            }
        }
    }
    Case {
        args,
        reads,
        writes,
    }
}

/// What one command did.
struct Ran {
    code: Option<i32>,
    stderr: String,
}

fn run(fixture: &Fixture, args: &[String]) -> Ran {
    let mut child = Command::new(env!("CARGO_BIN_EXE_simbench"))
        .args(args)
        .current_dir(&fixture.root)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the simbench binary starts");
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut waited = Duration::ZERO;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if waited > HANG_AFTER {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hang: simbench {}", shell(args));
        }
        std::thread::sleep(POLL);
        waited += POLL;
    };
    Ran {
        code: status.code(),
        stderr: reader.join().unwrap(),
    }
}

fn shell(args: &[String]) -> String {
    args.iter()
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_char_device(path: &str) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device())
}

fn fuzz_shard(shard: u64) {
    let cases = std::env::var("CLI_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(DEFAULT_CASES_PER_SHARD, |total| total.div_ceil(4));
    let seed = std::env::var("CLI_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(20_261_201);
    let fixture = Fixture::new(shard);
    let inputs = fixture.snapshot("w");
    let outputs = fixture.snapshot("out");
    let mut rng = Lcg(seed ^ (shard.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
    let mut codes = [0u32; 3];
    for _ in 0..cases {
        let Case {
            args,
            reads,
            writes,
        } = case(&mut rng, &fixture);
        let ran = run(&fixture, &args);
        let shown = format!("simbench {}\n{}", shell(&args), ran.stderr);
        assert!(
            matches!(ran.code, Some(0..=2)),
            "exit {:?} (not in the documented table) from {shown}",
            ran.code
        );
        assert!(!ran.stderr.contains("panicked"), "panic from {shown}");
        codes[ran.code.unwrap_or_default() as usize] += 1;
        let now = fixture.snapshot("w");
        for (path, was) in &inputs {
            if now.get(path) == Some(was) {
                continue;
            }
            let asked = ran.code == Some(0) && writes.contains(&path.as_str());
            let read = reads.contains(&path.as_str());
            assert!(
                asked && !read,
                "{path} changed (an input, or not asked): {shown}"
            );
        }
        let added: Vec<&String> = now.keys().filter(|k| !inputs.contains_key(*k)).collect();
        assert!(
            added.is_empty(),
            "{added:?} appeared among the inputs: {shown}"
        );
        let now = fixture.snapshot("out");
        let leftovers: Vec<&String> = now.keys().filter(|k| k.contains(".tmp")).collect();
        assert!(
            leftovers.is_empty(),
            "temporaries {leftovers:?} left by {shown}"
        );
        if ran.code != Some(0) {
            assert_eq!(now, outputs, "a failed command changed an output: {shown}");
        }
        for device in ["/dev/null", "/dev/full"] {
            assert!(
                is_char_device(device),
                "{device} is no longer a device after {shown}"
            );
        }
        fixture.reset_outputs();
        if now != inputs {
            fixture.reset_scenarios();
        }
    }
    // Shown with --nocapture: a fuzz whose cases all fail early would test little.
    println!("cli fuzz shard {shard}: {cases} cases, exit 0/1/2: {codes:?}");
    let _ = std::fs::remove_dir_all(&fixture.root);
}

#[test]
fn cli_fuzz_shard_0() {
    fuzz_shard(0);
}

#[test]
fn cli_fuzz_shard_1() {
    fuzz_shard(1);
}

#[test]
fn cli_fuzz_shard_2() {
    fuzz_shard(2);
}

#[test]
fn cli_fuzz_shard_3() {
    fuzz_shard(3);
}
