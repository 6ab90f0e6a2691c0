//! Helpers shared by the command-line tests: run the built binary, compare JSON without the
//! wall times that are allowed to differ.

use std::process::{Command, Output};

/// Runs the `simbench` binary from the crate root, without colour.
pub fn simbench(args: &[&str]) -> Output {
    simbench_with(args, &[])
}

/// [`simbench`] run in the folder `dir`.
pub fn simbench_in(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_simbench"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("the simbench binary runs")
}

/// [`simbench`] with extra environment variables (`COLUMNS` is otherwise unset, so the table's
/// width never depends on the shell the tests run in).
pub fn simbench_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_simbench"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("COLUMNS")
        .envs(env.iter().copied())
        .output()
        .expect("the simbench binary runs")
}

/// Makes the children this test process starts begin with SIGINT, SIGTERM and SIGHUP at
/// their default actions, for the tests that send them. simbench leaves a stop signal it was
/// started with ignored as it is (as `nohup` asks), and an ignored signal is inherited
/// through `exec`; a caught one is reset to the default. So when these tests themselves run
/// with them ignored (`nohup .ci/run &`), catching them here (with a flag nobody reads)
/// gives the children the defaults a terminal would.
pub fn default_stop_signals_for_children() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let ignored = status
            .lines()
            .find_map(|l| l.strip_prefix("SigIgn:"))
            .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
            .unwrap_or(0);
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            if ignored >> (signal - 1) & 1 == 1 {
                signal_hook::flag::register(signal, flag.clone()).expect("a handler");
            }
        }
    });
}

/// A fresh, empty folder for one test: unique per `tag` and call, inside this process's own
/// folder under the system's temporary folder ([`scratch_root`]).
pub fn scratch_dir(tag: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let dir = scratch_root().join(format!("{tag}-{}", CALLS.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// This process's folder for scratch folders, `simbench-tests/PID` under the system's temporary
/// folder. The test harness runs no code at exit, so each run cannot remove its own; the first
/// call removes the folders of earlier runs whose process is gone instead, so runs leave at
/// most one folder behind, never a growing pile (where `/proc` does not list processes, none
/// is removed).
fn scratch_root() -> std::path::PathBuf {
    static ROOT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let parent = std::env::temp_dir().join("simbench-tests");
        if std::path::Path::new("/proc/self").exists() {
            for entry in std::fs::read_dir(&parent).into_iter().flatten().flatten() {
                let name = entry.file_name();
                let gone = name
                    .to_str()
                    .and_then(|n| n.parse::<u32>().ok())
                    .is_some_and(|pid| {
                        !std::path::Path::new("/proc").join(pid.to_string()).exists()
                    });
                if gone {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let root = parent.join(std::process::id().to_string());
        std::fs::create_dir_all(&root).expect("temp dir");
        root
    })
    .clone()
}

/// A property test's configuration: `default_cases` cases, or `PROPTEST_CASES` when set (the
/// variable proptest itself reads, which an explicit case count would otherwise override), and
/// no failure files written into the source tree.
pub fn proptest_config(default_cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default_cases),
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    }
}

/// The JSON with every `wall_s` key removed: the only thing allowed to differ between runs.
pub fn without_wall_times(text: &str) -> serde_json::Value {
    fn blank(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                map.remove("wall_s");
                map.values_mut().for_each(blank);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(blank),
            _ => {}
        }
    }
    let mut value: serde_json::Value = serde_json::from_str(text).expect("valid JSON");
    blank(&mut value);
    value
}

/// A world in which every request fails: `wait` queues on its DEAD endpoint and stalls, while
/// `immediate` fails its jobs and finishes.
pub const DOOMED: &str = r#"
name = "doomed"
summary = "Every request fails."
jobs = 50
concurrency = 3
[[endpoints]]
id = "only"
capacity = 3
latency = { median_s = 0.05, sigma = 0.0 }
failures = { error_rate = 1.0, storm_rate = 0.0 }
"#;
