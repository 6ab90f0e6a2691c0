//! Grid sweeps: every combination of some keys' values, on one or more worlds, as a fixed list
//! of cells that shards of a cluster job can split and `simbench merge` can put back together.
//!
//! A grid axis is a scenario key and its values, written as `--set` writes them
//! (`retry.max_attempts=3,5,8`); a grid point picks one value per axis and becomes overrides
//! applied after the file's. The plan is the list of cells (world, point, algorithm, seed) in
//! that order, last fastest; shard `I/N` runs the cells whose index is `I − 1` modulo `N`, so
//! neighbouring cells — which cost about the same — spread evenly. A part names its plan by a
//! hash over everything that decides the runs (each point's world hash, the algorithms, the
//! seeds, the random-number scheme) and the objective that judges them, so parts of different
//! plans, or of a world edited in between, are refused rather than mixed. Merging checks that
//! every cell is there exactly once and hands the runs back in plan order, so the merged result
//! is the one a single machine computes. Never reads a file or a clock.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::compile::Override;
use crate::metrics::{CATALOGUE, MetricValues, N_METRICS};
use crate::report::{ErrorCounts, Outcome, Run};

/// The most cells one plan may hold: past this a plan is a typo, not a tuning job.
pub const MAX_CELLS: u64 = 100_000_000;

/// One grid axis: a scenario key and the values it takes, as typed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Axis {
    /// The dotted key, e.g. `retry.max_attempts`.
    pub key: String,
    /// Each value as TOML text, e.g. `3` or `{ median_s = 0.3, sigma = 0.5 }`.
    pub values: Vec<String>,
}

impl Axis {
    /// Parses `key=v1,v2,…`: commas inside brackets, braces or quotes belong to the value.
    ///
    /// # Errors
    /// A one-line message for a missing `=` or key, an empty value, unbalanced brackets or a
    /// value given twice.
    pub fn parse(text: &str) -> Result<Axis, String> {
        let Some((key, list)) = text.split_once('=') else {
            return Err("expected `dotted.key=v1,v2,…`, found no `=`".into());
        };
        let key = key.trim();
        if key.is_empty() {
            return Err("expected `dotted.key=v1,v2,…`, found nothing before `=`".into());
        }
        let values = split_values(list)?;
        let meant: Vec<Option<toml::Value>> = values.iter().map(|v| meaning(v)).collect();
        for (i, v) in values.iter().enumerate() {
            let same = |j: usize| {
                values[j] == *v
                    || matches!((&meant[i], &meant[j]), (Some(a), Some(b)) if same_value(a, b))
            };
            if let Some(j) = (0..i).find(|&j| same(j)) {
                return Err(if values[j] == *v {
                    format!("the value `{v}` is given twice")
                } else {
                    format!("the values `{}` and `{v}` are the same", values[j])
                });
            }
        }
        Ok(Axis {
            key: key.to_owned(),
            values,
        })
    }
}

/// What a value's TOML text means (a bare word is a string, as `--set` reads it), so `3` and
/// `+3`, or `full` and `"full"`, are one value; `None` for text that is not a value.
fn meaning(text: &str) -> Option<toml::Value> {
    match toml::from_str::<toml::Table>(&format!("v = {text}")) {
        Ok(mut table) => table.remove("v"),
        Err(_) if crate::compose::bare_word(text) => Some(toml::Value::String(text.to_owned())),
        Err(_) => None,
    }
}

/// Whether two TOML values mean the same setting: equal, with an integer equal to a float of
/// the same number (`600` and `600.0` set a duration alike), at any depth.
fn same_value(a: &toml::Value, b: &toml::Value) -> bool {
    use toml::Value as V;
    let exact = |i: i64, f: f64| f.fract() == 0.0 && (i as f64) == f && f as i64 == i;
    match (a, b) {
        (V::Integer(i), V::Float(f)) | (V::Float(f), V::Integer(i)) => exact(*i, *f),
        (V::Array(x), V::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q))
        }
        (V::Table(x), V::Table(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| same_value(p, q)))
        }
        _ => a == b,
    }
}

/// Splits on the commas that are not inside `[]`, `{}` or a string.
fn split_values(list: &str) -> Result<Vec<String>, String> {
    let mut values = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0);
    let mut escaped = false;
    for (i, c) in list.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q == '"' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '"' | '\'' => quote = Some(c),
                '[' | '{' => depth += 1,
                ']' | '}' => {
                    depth -= 1;
                    if depth < 0 {
                        return Err(format!("an unmatched `{c}` in `{list}`"));
                    }
                }
                ',' if depth == 0 => {
                    values.push(list[start..i].trim().to_owned());
                    start = i + 1;
                }
                _ => {}
            },
        }
    }
    if quote.is_some() || depth != 0 {
        return Err(format!("an unclosed string or bracket in `{list}`"));
    }
    values.push(list[start..].trim().to_owned());
    if values.iter().any(String::is_empty) {
        return Err("an empty value in the list".into());
    }
    Ok(values)
}

/// Every grid point, as one value index per axis, the last axis fastest; one empty point when
/// there are no axes.
pub fn points(axes: &[Axis]) -> Vec<Vec<usize>> {
    let mut points = vec![Vec::new()];
    for axis in axes {
        points = points
            .into_iter()
            .flat_map(|p| {
                (0..axis.values.len()).map(move |v| {
                    let mut next = p.clone();
                    next.push(v);
                    next
                })
            })
            .collect();
    }
    points
}

/// The overrides a point applies, one per axis, named `--grid KEY`.
pub fn overrides(axes: &[Axis], point: &[usize]) -> Vec<Override> {
    axes.iter()
        .zip(point)
        .map(|(axis, &v)| Override {
            origin: format!("--grid {}", axis.key),
            text: format!("{}={}", axis.key, axis.values[v]),
        })
        .collect()
}

/// A point as people read it: `retry.max_attempts=5 algorithms.aimd.factor=0.7`, or `(base)`
/// when there are no axes.
pub fn label(axes: &[Axis], point: &[usize]) -> String {
    if axes.is_empty() {
        return "(base)".into();
    }
    let parts: Vec<String> = axes
        .iter()
        .zip(point)
        .map(|(a, &v)| format!("{}={}", a.key, a.values[v]))
        .collect();
    parts.join(" ")
}

/// One cell of the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    /// World index.
    pub world: usize,
    /// Point index.
    pub point: usize,
    /// Algorithm index in that world's list.
    pub algorithm: usize,
    /// Seed index.
    pub seed: usize,
}

/// The cells of a plan in order: world, point, algorithm, seed, the last fastest.
/// `algorithms[w]` is world `w`'s algorithm count.
pub fn cells(algorithms: &[usize], points: usize, seeds: usize) -> Vec<Cell> {
    let mut cells = Vec::new();
    for (world, &n) in algorithms.iter().enumerate() {
        for point in 0..points {
            for algorithm in 0..n {
                for seed in 0..seeds {
                    cells.push(Cell {
                        world,
                        point,
                        algorithm,
                        seed,
                    });
                }
            }
        }
    }
    cells
}

/// The number of grid points, or `None` when it overflows: counted, not listed.
pub fn point_count(axes: &[Axis]) -> Option<u64> {
    axes.iter()
        .try_fold(1u64, |n, a| n.checked_mul(a.values.len() as u64))
}

/// The number of cells [`cells`] would make, or `None` past [`MAX_CELLS`].
pub fn cell_count(algorithms: &[usize], points: usize, seeds: usize) -> Option<u64> {
    let per_point: u64 = algorithms.iter().map(|&n| n as u64).sum();
    per_point
        .checked_mul(points as u64)?
        .checked_mul(seeds as u64)
        .filter(|&n| n <= MAX_CELLS)
}

/// Shard `index` of `count` (1-based, as people and `--shard 2/8` count).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// 1 to `count`.
    pub index: u32,
    /// Shards in all.
    pub count: u32,
}

/// A shard number or count: "is not a whole number", or "is too large" for digits past `u32`.
pub fn whole(text: &str) -> Result<u32, String> {
    let digits = text.trim();
    digits.parse::<u32>().map_err(|_| {
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            format!("is too large (at most {})", u32::MAX)
        } else {
            "is not a whole number".into()
        }
    })
}

impl Shard {
    /// The whole plan.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// Parses `I/N` with 1 ≤ I ≤ N.
    ///
    /// # Errors
    /// A one-line message saying what is wrong.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| format!("expected `I/N`, e.g. `2/8`, or `auto`; got `{text}`"))?;
        let number = |s: &str| whole(s).map_err(|why| format!("`{s}` in `{text}` {why}"));
        Shard::new(number(i)?, number(n)?)
    }

    /// Shard `index` of `count`.
    ///
    /// # Errors
    /// When `count` is 0 or `index` is outside 1..=`count`.
    pub fn new(index: u32, count: u32) -> Result<Shard, String> {
        if count == 0 {
            return Err("a plan splits into at least 1 shard".into());
        }
        if !(1..=count).contains(&index) {
            return Err(format!(
                "shard {index} of {count}: shards are numbered 1 to {count}"
            ));
        }
        Ok(Shard { index, count })
    }

    /// The shard a scheduler's environment names: a Slurm job array
    /// (`SLURM_ARRAY_TASK_ID` − `SLURM_ARRAY_TASK_MIN` + 1 of `SLURM_ARRAY_TASK_COUNT`) or a
    /// Kubernetes Indexed Job (`JOB_COMPLETION_INDEX` + 1 of `count`, which Kubernetes does not
    /// put in the environment). `var` reads a variable.
    ///
    /// # Errors
    /// When neither scheduler's variables are set, or both are, or they are not numbers, or
    /// they disagree with `count`.
    pub fn from_env(
        count: Option<u32>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Shard, String> {
        let number = |name: &str| -> Result<Option<u32>, String> {
            var(name)
                .map(|v| whole(&v).map_err(|why| format!("{name}=`{v}` {why}")))
                .transpose()
        };
        let (slurm, kubernetes) = (
            var("SLURM_ARRAY_TASK_ID").is_some(),
            var("JOB_COMPLETION_INDEX").is_some(),
        );
        if slurm && kubernetes {
            return Err("--shard auto found both a Slurm job array (SLURM_ARRAY_TASK_ID) and a Kubernetes Indexed Job (JOB_COMPLETION_INDEX) in the environment, so it cannot tell which one numbers the shards; give the shard as --shard I/N".into());
        }
        if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
            let total = number("SLURM_ARRAY_TASK_COUNT")?.ok_or(
                "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not (Slurm sets both for a job array)",
            )?;
            let min = number("SLURM_ARRAY_TASK_MIN")?.ok_or(
                "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_MIN is not (Slurm sets both for a job array)",
            )?;
            if total == 0 {
                return Err(
                    "SLURM_ARRAY_TASK_COUNT=0, but a job array has at least one task".into(),
                );
            }
            if let Some(n) = count.filter(|&n| n != total) {
                return Err(format!(
                    "--shard auto/{n} but the job array has {total} tasks (SLURM_ARRAY_TASK_COUNT)"
                ));
            }
            let index = id.checked_sub(min).ok_or_else(|| {
                format!("SLURM_ARRAY_TASK_ID {id} is below SLURM_ARRAY_TASK_MIN {min}")
            })?;
            return Shard::new(index + 1, total).map_err(|e| {
                format!(
                    "{e} (a job array's tasks must be consecutive, e.g. --array={min}-{}; got task {id} from {min})",
                    u64::from(min) + u64::from(total) - 1
                )
            });
        }
        if let Some(index) = number("JOB_COMPLETION_INDEX")? {
            let n = count.ok_or(
                "JOB_COMPLETION_INDEX is set, but Kubernetes does not give the number of completions: use --shard auto/N with N = the Job's .spec.completions",
            )?;
            return Shard::new(index.saturating_add(1), n).map_err(|_| {
                format!(
                    "JOB_COMPLETION_INDEX={index} but --shard auto/{n} numbers the completions 0 to {}: N must be the Job's .spec.completions",
                    n - 1
                )
            });
        }
        Err("--shard auto found neither a Slurm job array (SLURM_ARRAY_TASK_ID) nor a Kubernetes Indexed Job (JOB_COMPLETION_INDEX) in the environment; give the shard as --shard I/N".into())
    }

    /// Whether cell `k` (0-based, in plan order) is this shard's.
    pub fn owns(&self, k: usize) -> bool {
        k as u64 % u64::from(self.count) == u64::from(self.index - 1)
    }
}

/// What decides a plan, as canonical text hashed into its name: every point's world hash (which
/// covers the world after the point's overrides, its first seed among them), the algorithms per
/// world, the number of seeds, the random-number scheme, the axes and the objective.
pub struct PlanText {
    text: String,
}

impl PlanText {
    /// Starts the text with the settings every world shares.
    pub fn new(axes: &[Axis], seeds: u32, rng: &str) -> PlanText {
        let mut text = String::from("simbench-plan/1\n");
        for axis in axes {
            let _ = writeln!(text, "axis={}:{}", axis.key, axis.values.join("\u{1f}"));
        }
        let _ = writeln!(text, "seeds={seeds}\nrng={rng}");
        PlanText { text }
    }

    /// Adds a world: its label, algorithms, the objective (canonical text) and each point's
    /// world hash, in point order.
    pub fn world(
        &mut self,
        label: &str,
        algorithms: &[String],
        objective: &str,
        hashes: &[String],
    ) {
        let _ = writeln!(
            self.text,
            "world={label}\nalgorithms={}\nobjective={objective}\npoints={}",
            algorithms.join("\u{1f}"),
            hashes.join(",")
        );
    }

    /// The plan's name: 16 hex digits of FNV-1a over the text.
    pub fn hash(&self) -> String {
        crate::report::fingerprint::hash_text(&self.text)
    }
}

/// Format tag of a part file.
pub const PART_FORMAT: &str = "simbench-part/2";

/// A shard's result: the runs of its cells, and what is needed to rebuild the plan.
///
/// A part is written with its runs as stored ([`PartRun`]) and read back by `merge` as
/// [`ReadRuns`], each run converted as it is parsed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part<R = Vec<PartRun>> {
    /// [`PART_FORMAT`].
    pub format: String,
    /// The plan's hash.
    pub plan: String,
    /// Cells in the whole plan.
    pub cells: usize,
    /// Which shard this is.
    pub shard: Shard,
    /// How to rebuild the plan: the command's inputs (see [`Spec`]).
    pub spec: Spec,
    /// The runs of this shard's cells, in plan order.
    pub runs: R,
    /// [`run_checksum`] over the runs as written, which `merge` checks; `None` only in a part
    /// that lost it, which is refused.
    #[serde(default)]
    pub checksum: Option<String>,
}

/// Feeds one stored run to a part's checksum: its compact JSON and a line break. The JSON of a
/// run read back is the JSON written (finite numbers round-trip exactly), so reader and writer
/// agree unless the text was changed.
pub fn run_checksum(hash: &mut crate::report::fingerprint::Fnv1a, stored: &PartRun) {
    // Writing into a hasher cannot fail, and a run always serializes.
    let _ = serde_json::to_writer(&mut *hash, stored);
    hash.feed(b"\n");
}

/// A part's runs as `sweep` writes them: each run is put in its stored form ([`PartRun`]) only
/// as it is written, so a shard (or a whole plan written as a part) never holds its runs twice.
pub struct StoredRuns<'a> {
    /// Each run's cell in the plan and the run, in plan order.
    pub runs: Vec<(usize, &'a Run)>,
}

impl StoredRuns<'_> {
    /// The part's checksum over these runs ([`run_checksum`]); each run is put in its stored
    /// form one at a time, as when it is written.
    pub fn checksum(&self) -> String {
        let mut hash = crate::report::fingerprint::Fnv1a::default();
        for &(cell, run) in &self.runs {
            run_checksum(&mut hash, &PartRun::of(cell, run));
        }
        hash.hex()
    }
}

impl Serialize for StoredRuns<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.runs.iter().map(|&(cell, run)| PartRun::of(cell, run)))
    }
}

/// A part's runs as `merge` reads them: each stored run is turned back into a [`Run`] as soon
/// as it is parsed, so a large merge holds its runs about once, not as text, stored runs and
/// runs at the same time.
#[derive(Debug, Default)]
pub struct ReadRuns {
    /// The runs, in the part's order.
    pub runs: Vec<ReadRun>,
    /// [`run_checksum`] over them as read, to hold against the part's own.
    pub checksum: String,
}

/// One run read back from a part: its cell and the run, or why it could not be read.
#[derive(Debug)]
pub struct ReadRun {
    /// The cell's index in the plan.
    pub cell: usize,
    /// Which of the merged parts it came from, in the order they were given.
    pub part: u32,
    /// The run, or what the part says it was and why it is not a run.
    pub run: Result<Run, Unreadable>,
}

/// A stored run that does not convert back: its algorithm and seed, and the reason.
#[derive(Debug)]
pub struct Unreadable {
    /// Algorithm the part names.
    pub algorithm: String,
    /// Seed the part names.
    pub seed: u64,
    /// Why it is not a run.
    pub error: String,
}

impl From<PartRun> for ReadRun {
    fn from(stored: PartRun) -> ReadRun {
        let run = stored.run().map_err(|error| Unreadable {
            algorithm: stored.algorithm.clone(),
            seed: stored.seed,
            error,
        });
        ReadRun {
            cell: stored.cell,
            part: 0,
            run,
        }
    }
}

impl From<Vec<PartRun>> for ReadRuns {
    fn from(stored: Vec<PartRun>) -> ReadRuns {
        let mut hash = crate::report::fingerprint::Fnv1a::default();
        let runs = stored
            .into_iter()
            .map(|run| {
                run_checksum(&mut hash, &run);
                ReadRun::from(run)
            })
            .collect();
        ReadRuns {
            runs,
            checksum: hash.hex(),
        }
    }
}

impl<'de> Deserialize<'de> for ReadRuns {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EachRun;
        impl<'de> serde::de::Visitor<'de> for EachRun {
            type Value = ReadRuns;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of runs")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<ReadRuns, A::Error> {
                // Not shrunk to fit: a merge moves these runs into its own buffer at once.
                let mut runs = Vec::new();
                let mut hash = crate::report::fingerprint::Fnv1a::default();
                while let Some(stored) = seq.next_element::<PartRun>()? {
                    run_checksum(&mut hash, &stored);
                    runs.push(ReadRun::from(stored));
                }
                Ok(ReadRuns {
                    runs,
                    checksum: hash.hex(),
                })
            }
        }
        deserializer.deserialize_seq(EachRun)
    }
}

/// The inputs that define a plan, as the command got them, so that `merge` rebuilds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// The world files as given (`None`: the built-in bursty world).
    pub worlds: Vec<Option<String>>,
    /// The `--set` overrides and objective flags, in order: `(origin, text)`.
    pub overrides: Vec<(String, String)>,
    /// The grid axes.
    pub axes: Vec<Axis>,
    /// `--algorithms`, or `None` for each world's default comparison.
    pub algorithms: Option<Vec<String>>,
    /// Seeds per cell.
    pub seeds: u32,
    /// `native` or `reference`.
    pub rng: String,
}

impl Spec {
    /// The first input in which `self` (part `name`'s) differs from `other` (part `other_name`'s),
    /// as a sentence naming both values; `None` when the specs are equal.
    pub fn difference(&self, name: &str, other: &Spec, other_name: &str) -> Option<String> {
        if self == other {
            return None;
        }
        let (mine, theirs) = (self.described(), other.described());
        let found = mine.iter().zip(&theirs).find(|(a, b)| a.1 != b.1);
        let Some(((what, mine), (_, theirs))) = found else {
            return Some(format!(
                "{name} and {other_name} come from different sweeps (their command lines differ)"
            ));
        };
        let mut line = format!(
            "{name} and {other_name} come from different sweeps: their {what} differ ({mine} in {name}, {theirs} in {other_name})"
        );
        if *what == "world files" && self.same_files_named_apart(other) {
            line.push_str(
                "; the same files named two ways still make two plans: run every shard with the same command line",
            );
        }
        Some(line)
    }

    /// Each input as the command line gave it, named, in the order [`Spec::difference`] compares.
    fn described(&self) -> [(&'static str, String); 6] {
        let listed = |items: Vec<String>, none: &str| {
            if items.is_empty() {
                none.to_owned()
            } else {
                items.join(", ")
            }
        };
        let worlds = self.worlds.iter().map(|w| {
            w.as_deref()
                .map_or("the built-in world".into(), |f| format!("`{f}`"))
        });
        let overrides = self.overrides.iter().map(|(origin, text)| {
            let flag = origin.split(" #").next().unwrap_or(origin);
            format!("`{flag} {text}`")
        });
        let axes = self
            .axes
            .iter()
            .map(|a| format!("`{}={}`", a.key, a.values.join(",")));
        let algorithms = self.algorithms.as_ref().map_or_else(
            || "each world's default comparison".to_owned(),
            |a| format!("`{}`", a.join(",")),
        );
        [
            ("world files", listed(worlds.collect(), "none")),
            ("overrides", listed(overrides.collect(), "none")),
            ("grid axes", listed(axes.collect(), "none")),
            ("algorithms", algorithms),
            ("seeds per cell", self.seeds.to_string()),
            ("random numbers", format!("`{}`", self.rng)),
        ]
    }

    /// Whether the world files differ only in how their paths are written (`./x.toml`, `x.toml`).
    fn same_files_named_apart(&self, other: &Spec) -> bool {
        let clean = |w: &Option<String>| {
            w.as_deref().map(|f| {
                std::path::Path::new(f)
                    .components()
                    .filter(|c| !matches!(c, std::path::Component::CurDir))
                    .collect::<std::path::PathBuf>()
            })
        };
        self.worlds.len() == other.worlds.len()
            && self
                .worlds
                .iter()
                .zip(&other.worlds)
                .all(|(a, b)| clean(a) == clean(b))
    }
}

/// One run in a part.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartRun {
    /// The cell's index in the plan.
    pub cell: usize,
    /// Algorithm (checked against the plan when merged).
    pub algorithm: String,
    /// Seed (checked against the plan when merged).
    pub seed: u64,
    /// `finished`, or the harness's outcome name.
    pub outcome: String,
    /// Why a run stalled or did not finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Every metric in catalogue order (`null` where undefined); absent when unfinished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Vec<Number>>,
    /// Failed attempts per error class.
    pub error_classes: BTreeMap<String, u64>,
    /// Admitted requests per endpoint.
    pub endpoint_admitted: Vec<u64>,
    /// Real seconds the run took.
    pub wall_s: f64,
}

/// A metric value: a JSON number when finite, else `"inf"`, `"-inf"` or `"nan"`; `null` when
/// undefined. Finite values round-trip exactly (shortest representation, parsed back exactly).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Number {
    /// A finite value.
    Finite(f64),
    /// A non-finite value or an undefined one.
    Other(Option<NonFinite>),
}

/// The values JSON has no number for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NonFinite {
    /// +∞.
    #[serde(rename = "inf")]
    Inf,
    /// −∞.
    #[serde(rename = "-inf")]
    NegInf,
    /// Not a number.
    #[serde(rename = "nan")]
    Nan,
}

/// The outcome names a run can end with, besides `finished`.
const ENDINGS: [&str; 4] = ["stalled", "livelock", "timeout", "out_of_memory"];

impl PartRun {
    /// The run as a part stores it.
    pub fn of(cell: usize, run: &Run) -> PartRun {
        let (outcome, reason) = match &run.outcome {
            Outcome::Finished(_) => ("finished".to_owned(), None),
            Outcome::Stalled { kind, reason, .. } | Outcome::Unfinished { kind, reason } => {
                ((*kind).to_owned(), Some(reason.clone()))
            }
        };
        PartRun {
            cell,
            algorithm: run.algorithm.clone(),
            seed: run.seed,
            outcome,
            reason,
            metrics: run.metrics().map(numbers),
            error_classes: run.error_classes.to_map(),
            endpoint_admitted: run.endpoint_admitted.clone(),
            wall_s: run.wall_s,
        }
    }

    /// The run back.
    ///
    /// # Errors
    /// An unknown outcome or error class, or metrics missing, extra or of the wrong count.
    pub fn run(&self) -> Result<Run, String> {
        let values = self.metrics.as_deref().map(values).transpose()?;
        let kind = || {
            ENDINGS
                .iter()
                .find(|k| **k == self.outcome)
                .copied()
                .ok_or_else(|| format!("unknown outcome `{}`", self.outcome))
        };
        let reason = || self.reason.clone().unwrap_or_default();
        let outcome = match (self.outcome.as_str(), values) {
            ("finished", Some(v)) => Outcome::Finished(v),
            ("finished", None) => return Err("a finished run without metrics".into()),
            (_, Some(metrics)) => Outcome::Stalled {
                metrics,
                kind: kind()?,
                reason: reason(),
            },
            (_, None) => Outcome::Unfinished {
                kind: kind()?,
                reason: reason(),
            },
        };
        Ok(Run {
            algorithm: self.algorithm.clone(),
            seed: self.seed,
            outcome,
            error_classes: ErrorCounts::parse(&self.error_classes)?,
            endpoint_admitted: self.endpoint_admitted.clone(),
            wall_s: self.wall_s,
            timeseries: None,
        })
    }
}

fn numbers(values: &MetricValues) -> Vec<Number> {
    values
        .iter_defined()
        .map(|(_, v)| match v {
            None => Number::Other(None),
            Some(x) if x.is_finite() => Number::Finite(x),
            Some(x) if x.is_nan() => Number::Other(Some(NonFinite::Nan)),
            Some(x) if x > 0.0 => Number::Other(Some(NonFinite::Inf)),
            Some(_) => Number::Other(Some(NonFinite::NegInf)),
        })
        .collect()
}

fn values(numbers: &[Number]) -> Result<MetricValues, String> {
    if numbers.len() != N_METRICS {
        return Err(format!(
            "{} metric values where this simbench has {N_METRICS}: the part was written by another version",
            numbers.len()
        ));
    }
    let mut values = MetricValues::all_undefined();
    for (info, n) in CATALOGUE.iter().zip(numbers) {
        let x = match n {
            Number::Finite(x) => *x,
            Number::Other(None) => continue,
            Number::Other(Some(NonFinite::Inf)) => f64::INFINITY,
            Number::Other(Some(NonFinite::NegInf)) => f64::NEG_INFINITY,
            Number::Other(Some(NonFinite::Nan)) => f64::NAN,
        };
        values.set(info.metric, x);
    }
    Ok(values)
}

/// The runs of a plan's parts, gathered as each part is read into one buffer sized for the
/// plan, then sorted into plan order in place: a merge holds each run once, and a part's runs
/// twice only while they move in.
pub struct Assembly {
    plan: String,
    cells: usize,
    /// The shard count of the first part (the split the missing cells are named in).
    count: u32,
    names: Vec<String>,
    runs: Vec<ReadRun>,
}

impl Assembly {
    /// An empty assembly of the plan `plan` of `cells` cells.
    pub fn new(plan: &str, cells: usize) -> Assembly {
        Assembly {
            plan: plan.to_owned(),
            cells,
            count: 1,
            names: Vec::new(),
            runs: Vec::with_capacity(cells),
        }
    }

    /// Adds the part read from `name`.
    ///
    /// # Errors
    /// A part of another plan.
    pub fn add(&mut self, name: String, part: Part<ReadRuns>) -> Result<(), String> {
        if part.plan == self.plan && part.cells != self.cells {
            return Err(format!(
                "{name} names plan {} with {} cells, but that plan has {}: its header was changed or damaged after it was written; run its shard again (--shard {}/{})",
                part.plan, part.cells, self.cells, part.shard.index, part.shard.count
            ));
        }
        if part.plan != self.plan || part.cells != self.cells {
            return Err(format!(
                "{name} is a part of plan {} ({} cells), not of plan {} ({} cells) that the others and the world files make: \
                 merge the parts of one sweep, run on unchanged worlds",
                part.plan, part.cells, self.plan, self.cells
            ));
        }
        if self.names.is_empty() {
            self.count = part.shard.count;
        }
        let index = self.names.len() as u32;
        self.names.push(name);
        let mut runs = part.runs.runs;
        for run in &mut runs {
            run.part = index;
        }
        self.runs.append(&mut runs);
        Ok(())
    }

    /// The runs in plan order.
    ///
    /// # Errors
    /// One message naming the parts and cells at fault (the lowest such cell): a cell outside
    /// the plan or in two parts (or twice in one), a run that is not its cell's or that does
    /// not read back, cells no part holds.
    pub fn finish(self, expected: &[(&str, u64, usize)]) -> Result<Vec<Run>, String> {
        let Assembly {
            names,
            mut runs,
            count,
            ..
        } = self;
        // In place: a stable sort would take a buffer of half the runs.
        runs.sort_unstable_by_key(|r| (r.cell, r.part));
        for (i, stored) in runs.iter().enumerate() {
            let (cell, name) = (stored.cell, &names[stored.part as usize]);
            let Some(&(algorithm, seed, endpoints)) = expected.get(cell) else {
                return Err(format!(
                    "{name}: cell {cell} is outside the plan's {} cells",
                    expected.len()
                ));
            };
            let (named, named_seed) = match &stored.run {
                Ok(run) => (run.algorithm.as_str(), run.seed),
                Err(u) => (u.algorithm.as_str(), u.seed),
            };
            if named != algorithm || named_seed != seed {
                return Err(format!(
                    "{name}: cell {cell} holds `{named}` on seed {named_seed}, where the plan runs `{algorithm}` on seed {seed}"
                ));
            }
            let run = stored
                .run
                .as_ref()
                .map_err(|u| format!("{name}: cell {cell}: {}", u.error))?;
            if run.endpoint_admitted.len() != endpoints {
                return Err(format!(
                    "{name}: cell {cell} ({algorithm}, seed {seed}) counts admitted requests of {} \
                     where its world has {}: the part was edited or written from another world",
                    crate::text::plural(run.endpoint_admitted.len(), "endpoint"),
                    endpoints
                ));
            }
            if let Some(before) = i.checked_sub(1).map(|b| &runs[b])
                && before.cell == cell
            {
                return Err(format!(
                    "cell {cell} ({algorithm}, seed {seed}) is in {} and again in {name}: a shard was run or given twice",
                    names[before.part as usize]
                ));
            }
        }
        // Every run is now a distinct cell of the plan: the missing ones are the gaps.
        if runs.len() < expected.len() {
            let mut present = runs.iter().map(|r| r.cell).peekable();
            let missing: Vec<usize> = (0..expected.len())
                .filter(|&k| present.next_if_eq(&k).is_none())
                .collect();
            let shards: std::collections::BTreeSet<u32> = missing
                .iter()
                .map(|&k| (k as u64 % u64::from(count)) as u32 + 1)
                .collect();
            let (which, run) = match shards.len() {
                1 => ("shard", "run it"),
                _ => ("shards", "run them"),
            };
            let shards: Vec<String> = shards.iter().map(u32::to_string).collect();
            return Err(format!(
                "{} of {} cells are in no part (the first: cell {}); with {count} shards they belong to {which} {} of {count}: {run} and merge again",
                missing.len(),
                expected.len(),
                missing[0],
                shards.join(", ")
            ));
        }
        // In place too: a run is no larger than the read run that held it.
        Ok(runs
            .into_iter()
            .map(|stored| match stored.run {
                Ok(run) => run,
                Err(_) => unreachable!("unreadable runs were refused above"),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_split_on_top_level_commas_only() {
        let a = Axis::parse("endpoints.a.latency={ median_s = 0.3, sigma = 0.5 },{ median_s = 1 }")
            .unwrap();
        assert_eq!(a.key, "endpoints.a.latency");
        assert_eq!(
            a.values,
            ["{ median_s = 0.3, sigma = 0.5 }", "{ median_s = 1 }"]
        );
        let b = Axis::parse(r#"name="a,b","c\"d,e""#).unwrap();
        assert_eq!(b.values, [r#""a,b""#, r#""c\"d,e""#]);
        assert_eq!(Axis::parse("k= 3 ,5").unwrap().values, ["3", "5"]);
        let err = |t: &str| Axis::parse(t).unwrap_err();
        assert!(err("k").contains("no `=`"));
        assert!(err("=1,2").contains("nothing before"));
        assert!(err("k=1,,2").contains("empty value"));
        assert!(err("k=[1,2").contains("unclosed"));
        assert!(err("k=1],2").contains("unmatched"));
        assert!(err("k=3,3").contains("twice"));
        assert!(err("k=3,+3").contains("`3` and `+3` are the same"));
        assert!(err("horizon_s=600,6e2").contains("`600` and `6e2` are the same"));
        assert!(err("k={ a = 1 },{ a = 1.0 }").contains("are the same"));
        assert_eq!(Axis::parse("k=1,1.5").unwrap().values, ["1", "1.5"]);
        assert_eq!(
            Axis::parse("k=9007199254740993,9007199254740992.0")
                .unwrap()
                .values
                .len(),
            2
        );
        assert!(err("k=full,\"full\"").contains("are the same"));
        assert!(err("k={ a = 1, b = 2 },{b=2,a=1}").contains("are the same"));
        // A float key reads both as the same number; an integer key refuses `3.0` anyway.
        assert!(err("k=3,3.0").contains("are the same"));
    }

    #[test]
    fn points_are_row_major_and_cells_world_point_algorithm_seed() {
        let axes = [
            Axis::parse("a=1,2").unwrap(),
            Axis::parse("b=x,y,z").unwrap(),
        ];
        let p = points(&axes);
        assert_eq!(p.len(), 6);
        assert_eq!(p[1], [0, 1]);
        assert_eq!(p[3], [1, 0]);
        assert_eq!(label(&axes, &p[5]), "a=2 b=z");
        assert_eq!(overrides(&axes, &p[5])[1].text, "b=z");
        assert_eq!(points(&[]), vec![Vec::<usize>::new()]);
        let c = cells(&[2, 1], 3, 2);
        assert_eq!(c.len(), 2 * 3 * 2 + 3 * 2);
        assert_eq!(
            c[1],
            Cell {
                world: 0,
                point: 0,
                algorithm: 0,
                seed: 1
            }
        );
        assert_eq!(
            c[2],
            Cell {
                world: 0,
                point: 0,
                algorithm: 1,
                seed: 0
            }
        );
        assert_eq!(
            c[12],
            Cell {
                world: 1,
                point: 0,
                algorithm: 0,
                seed: 0
            }
        );
        assert_eq!(cell_count(&[2, 1], 3, 2), Some(18));
        assert_eq!(cell_count(&[usize::MAX], 2, 1), None);
    }

    #[test]
    fn shards_cover_every_cell_once() {
        for count in 1..6 {
            let mut seen = [0; 23];
            for index in 1..=count {
                let shard = Shard::new(index, count).unwrap();
                (0..23)
                    .filter(|&k| shard.owns(k))
                    .for_each(|k| seen[k] += 1);
            }
            assert!(seen.iter().all(|&n| n == 1));
        }
        assert_eq!(Shard::parse("2/8").unwrap(), Shard { index: 2, count: 8 });
        assert!(Shard::parse("0/8").unwrap_err().contains("1 to 8"));
        assert!(Shard::parse("9/8").unwrap_err().contains("1 to 8"));
        assert!(Shard::parse("1/0").unwrap_err().contains("at least 1"));
        assert!(Shard::parse("a/2").unwrap_err().contains("whole number"));
        assert_eq!(
            Shard::parse("1/99999999999999999999").unwrap_err(),
            "`99999999999999999999` in `1/99999999999999999999` is too large (at most 4294967295)"
        );
        assert!(Shard::parse("-1/2").unwrap_err().contains("whole number"));
        assert!(Shard::parse("3").unwrap_err().contains("I/N"));
    }

    #[test]
    fn the_environment_names_the_shard() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let slurm = env(&[
            ("SLURM_ARRAY_TASK_ID", "4"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
        ]);
        assert_eq!(
            Shard::from_env(None, slurm).unwrap(),
            Shard { index: 4, count: 4 }
        );
        assert!(
            Shard::from_env(Some(5), slurm)
                .unwrap_err()
                .contains("4 tasks")
        );
        let zero = env(&[
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
        ]);
        assert_eq!(
            Shard::from_env(None, zero).unwrap(),
            Shard { index: 1, count: 3 }
        );
        let gaps = env(&[
            ("SLURM_ARRAY_TASK_ID", "9"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
        ]);
        let why = Shard::from_env(None, gaps).unwrap_err();
        assert!(
            why.contains("consecutive") && why.contains("--array=1-3"),
            "{why}"
        );
        let no_tasks = env(&[
            ("SLURM_ARRAY_TASK_ID", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "0"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
        ]);
        let why = Shard::from_env(None, no_tasks).unwrap_err();
        assert_eq!(
            why,
            "SLURM_ARRAY_TASK_COUNT=0, but a job array has at least one task"
        );
        let huge = env(&[
            ("SLURM_ARRAY_TASK_ID", "99999999999999999999"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
        ]);
        let why = Shard::from_env(None, huge).unwrap_err();
        assert!(why.ends_with("is too large (at most 4294967295)"), "{why}");
        let no_min = env(&[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]);
        assert!(
            Shard::from_env(None, no_min)
                .unwrap_err()
                .contains("SLURM_ARRAY_TASK_MIN is not")
        );
        let past = env(&[("JOB_COMPLETION_INDEX", "4")]);
        assert!(
            Shard::from_env(Some(4), past)
                .unwrap_err()
                .contains("JOB_COMPLETION_INDEX=4 but --shard auto/4")
        );
        let k8s = env(&[("JOB_COMPLETION_INDEX", "2")]);
        assert_eq!(
            Shard::from_env(Some(3), k8s).unwrap(),
            Shard { index: 3, count: 3 }
        );
        assert!(
            Shard::from_env(None, k8s)
                .unwrap_err()
                .contains("completions")
        );
        assert!(
            Shard::from_env(None, env(&[]))
                .unwrap_err()
                .contains("neither")
        );
        let both = env(&[
            ("SLURM_ARRAY_TASK_ID", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("JOB_COMPLETION_INDEX", "0"),
        ]);
        assert!(
            Shard::from_env(Some(3), both)
                .unwrap_err()
                .contains("found both a Slurm job array")
        );
        let bad = env(&[("JOB_COMPLETION_INDEX", "x")]);
        assert!(
            Shard::from_env(Some(3), bad)
                .unwrap_err()
                .contains("not a whole")
        );
    }

    fn run(algorithm: &str, seed: u64, x: f64) -> Run {
        let mut values = MetricValues::all_undefined();
        values.set(crate::metrics::Metric::JobsDone, x);
        values.set(crate::metrics::Metric::RefusalRate, f64::INFINITY);
        Run {
            algorithm: algorithm.into(),
            seed,
            outcome: Outcome::Finished(values),
            error_classes: ErrorCounts::of(&BTreeMap::from([("rate_limit", 1), ("timeout", 3)])),
            endpoint_admitted: vec![4, 5],
            wall_s: 0.25,
            timeseries: None,
        }
    }

    #[test]
    fn runs_round_trip_exactly_through_json() {
        let stalled = Run {
            outcome: Outcome::Stalled {
                metrics: MetricValues::all_undefined(),
                kind: "livelock",
                reason: "why".into(),
            },
            ..run("a", 1, 0.0)
        };
        let unfinished = Run {
            outcome: Outcome::Unfinished {
                kind: "timeout",
                reason: "slow".into(),
            },
            ..run("a", 2, 0.0)
        };
        for original in [
            run("a", 3, 0.1 + 0.2),
            run("b", 4, 1e-300),
            stalled,
            unfinished,
        ] {
            let text = serde_json::to_string(&PartRun::of(7, &original)).unwrap();
            let back: PartRun = serde_json::from_str(&text).unwrap();
            assert_eq!(back.run().unwrap(), original, "{text}");
        }
        let mut odd = PartRun::of(0, &run("a", 0, 1.0));
        odd.error_classes.insert("gremlins".into(), 1);
        let unknown = odd.run().unwrap_err();
        assert!(
            unknown.contains("`gremlins`") && unknown.contains("rate_limit"),
            "{unknown}"
        );
        odd.error_classes.remove("gremlins");
        odd.outcome = "exploded".into();
        assert!(odd.run().unwrap_err().contains("exploded"));
        odd.metrics = Some(vec![Number::Finite(1.0)]);
        assert!(odd.run().unwrap_err().contains("another version"));
    }

    fn part(shard: Shard, runs: Vec<PartRun>) -> Part {
        Part {
            format: PART_FORMAT.into(),
            plan: "p".into(),
            cells: 4,
            shard,
            spec: Spec {
                worlds: vec![None],
                overrides: vec![],
                axes: vec![],
                algorithms: None,
                seeds: 2,
                rng: "native".into(),
            },
            runs,
            checksum: None,
        }
    }

    fn assemble(
        parts: Vec<(String, Part<ReadRuns>)>,
        plan: &str,
        expected: &[(&str, u64, usize)],
    ) -> Result<Vec<Run>, String> {
        let mut assembly = Assembly::new(plan, expected.len());
        for (name, part) in parts {
            assembly.add(name, part)?;
        }
        assembly.finish(expected)
    }

    #[test]
    fn assembling_refuses_other_plans_duplicates_and_gaps() {
        let expected = [("a", 1, 2), ("a", 2, 2), ("b", 1, 2), ("b", 2, 2)];
        let stored = |k: usize| PartRun::of(k, &run(expected[k].0, expected[k].1, k as f64));
        let one = part(Shard::new(1, 2).unwrap(), vec![stored(0), stored(2)]);
        let two = part(Shard::new(2, 2).unwrap(), vec![stored(1), stored(3)]);
        let parts = [
            ("p1".to_owned(), one.clone()),
            ("p2".to_owned(), two.clone()),
        ];
        let read = |parts: &[(String, Part)]| -> Vec<(String, Part<ReadRuns>)> {
            parts
                .iter()
                .map(|(name, p)| {
                    let part = Part {
                        format: p.format.clone(),
                        plan: p.plan.clone(),
                        cells: p.cells,
                        shard: p.shard,
                        spec: p.spec.clone(),
                        runs: ReadRuns::from(p.runs.clone()),
                        checksum: None,
                    };
                    (name.clone(), part)
                })
                .collect()
        };
        let runs = assemble(read(&parts), "p", &expected).unwrap();
        let order: Vec<(&str, u64, usize)> = runs
            .iter()
            .map(|r| (r.algorithm.as_str(), r.seed, r.endpoint_admitted.len()))
            .collect();
        assert_eq!(order, expected);
        let mut reversed = [parts[1].clone(), parts[0].clone()];
        reversed[0].1.runs.reverse();
        let runs_reversed = assemble(read(&reversed), "p", &expected).unwrap();
        assert_eq!(
            runs_reversed, runs,
            "the order of parts and of their runs does not matter"
        );
        let err = |parts: &[(String, Part)]| assemble(read(parts), "p", &expected).unwrap_err();
        assert!(err(&parts[..1]).contains("shard 2 of 2"));
        let twice = [
            parts[0].clone(),
            parts[1].clone(),
            ("p3".into(), two.clone()),
        ];
        assert!(err(&twice).contains("in p2 and again in p3"));
        let other = Part {
            plan: "q".into(),
            ..two.clone()
        };
        assert!(err(&[parts[0].clone(), ("q".into(), other)]).contains("plan q"));
        let mut wrong = two.clone();
        wrong.runs[0].seed = 9;
        assert!(err(&[parts[0].clone(), ("w".into(), wrong)]).contains("seed 9"));
        for admitted in [vec![], vec![1, 2, 3]] {
            let mut edited = two.clone();
            edited.runs[1].endpoint_admitted = admitted;
            let message = err(&[parts[0].clone(), ("e".into(), edited)]);
            assert!(
                message.contains("e: cell 3 (b, seed 2) counts"),
                "{message}"
            );
        }
    }

    #[test]
    fn specs_apart_name_their_first_difference_with_both_values() {
        let a = part(Shard::ALL, vec![]).spec;
        assert_eq!(a.difference("x", &a, "y"), None);
        let mut b = a.clone();
        b.seeds = 3;
        b.rng = "reference".into();
        let line = b.difference("b.json", &a, "a.json").unwrap();
        assert!(
            line.ends_with("their seeds per cell differ (3 in b.json, 2 in a.json)"),
            "{line}"
        );
        let named = |w: &str| Spec {
            worlds: vec![Some(w.into())],
            ..a.clone()
        };
        let line = named("./w.toml")
            .difference("b", &named("w.toml"), "a")
            .unwrap();
        assert!(line.contains("(`./w.toml` in b, `w.toml` in a); the same files named two ways"));
        let line = named("v.toml")
            .difference("b", &named("w.toml"), "a")
            .unwrap();
        assert!(!line.contains("named two ways"), "{line}");
        let mut c = a.clone();
        c.overrides = vec![("--set #1".into(), "jobs=5".into())];
        let line = c.difference("c", &a, "a").unwrap();
        assert!(line.contains("(`--set jobs=5` in c, none in a)"), "{line}");
        // Inputs that differ only where no description shows still are not one sweep.
        let mut d = c.clone();
        d.overrides[0].0 = "--set #2".into();
        assert!(
            d.difference("d", &c, "c")
                .unwrap()
                .ends_with("(their command lines differ)")
        );
    }

    #[test]
    fn a_parts_checksum_reads_back_and_catches_an_edited_number() {
        let (one, two) = (run("a", 1, 0.1 + 0.2), run("b", 2, 1e-300));
        let stored = StoredRuns {
            runs: vec![(0, &one), (3, &two)],
        };
        let text = serde_json::to_string(&stored).unwrap();
        let read: ReadRuns = serde_json::from_str(&text).unwrap();
        assert_eq!(read.checksum, stored.checksum());
        assert_eq!(read.runs.len(), 2);
        let edited = text.replacen("\"seed\":2", "\"seed\":3", 1);
        assert_ne!(edited, text);
        let read: ReadRuns = serde_json::from_str(&edited).unwrap();
        assert_ne!(read.checksum, stored.checksum());
        // Layout is not content: the same runs pretty-printed keep their checksum.
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        let read: ReadRuns = serde_json::from_str(&pretty).unwrap();
        assert_eq!(read.checksum, stored.checksum());
    }
}
