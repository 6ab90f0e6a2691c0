//! `simbench sweep --grid` and `simbench merge`: grid sweeps over any keys, split into shards
//! for a cluster scheduler, and put back together.
//!
//! Both commands build the plan the same way ([`Built::from_spec`]): load each world file with
//! the `--set` overrides, then once per grid point with the point's overrides, and hash what
//! decides the runs ([`grid::PlanText`]). A sweep runs the cells of its shard; the whole plan
//! is analysed and rendered at once, a shard writes a part (`--part`). `merge` reads parts,
//! rebuilds the plan from the spec they carry — reading the world files again, at the paths the
//! sweep was given, so it runs where the sweep ran (or anywhere the same files are) — refuses
//! parts that do not make up exactly that plan, and renders what the single-machine sweep
//! renders. Exit codes: 0 done, 1 invalid scenario (at any point), 2 usage, I/O, or parts that
//! do not fit.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::compile::Override;
use crate::grid::{self, Axis, Part, ReadRuns, Shard, Spec, StoredRuns};
use crate::report::Run;
use crate::report::fingerprint::world_hash;
use crate::report::grid::{self as render, GridReport, GridWorld};
use crate::sweep::{self, SweepConfig};
use crate::text::plural;
use crate::world::World;

use super::console::errln;
use super::output::{Inputs, Plan, Request};
use super::sweep::{Source, SweepArgs, invalid, rng_name, rng_scheme, usage_error};

/// `--shard`: a given shard, or the scheduler's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardArg {
    /// `I/N`.
    Given(Shard),
    /// `auto` or `auto/N`.
    Auto(Option<u32>),
}

/// Parses `I/N`, `auto` or `auto/N`.
pub fn parse_shard(text: &str) -> Result<ShardArg, String> {
    match text.strip_prefix("auto") {
        Some("") => Ok(ShardArg::Auto(None)),
        Some(rest) => {
            let shape = || format!("expected `auto` or `auto/N` with N ≥ 1; got `{text}`");
            let n = rest.strip_prefix('/').ok_or_else(shape)?;
            match crate::grid::whole(n) {
                Ok(0) => Err(shape()),
                Ok(n) => Ok(ShardArg::Auto(Some(n))),
                Err(why) if why.starts_with("is too large") => {
                    Err(format!("`{n}` in `{text}` {why}"))
                }
                Err(_) => Err(shape()),
            }
        }
        None => Shard::parse(text).map(ShardArg::Given),
    }
}

/// Parses `KEY=V1,V2,…` and refuses keys a grid cannot vary.
pub fn parse_axis(text: &str) -> Result<Axis, String> {
    let axis = Axis::parse(text)?;
    // The first key, quoted or not (`"seed"` is `seed`): a usage error like the others, not a
    // problem of the world.
    let head = axis.key.split('.').next().unwrap_or_default().trim();
    let head = head.trim_matches(['"', '\'']);
    if head == "seed" && axis.key.trim().trim_matches(['"', '\'']) == "seed" {
        return Err("the seeds are the plan's own axis; give them with --seeds".into());
    }
    if head == "objective" {
        return Err(
            "the objective judges the cells, so it cannot vary across them; set it with --set or --objective".into(),
        );
    }
    if head == "extends" {
        return Err("`extends` is read before any override; sweep several files instead".into());
    }
    Ok(axis)
}

/// Arguments of `simbench merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Part files written by `simbench sweep --grid … --shard I/N --part PATH`.
    #[arg(required = true, value_name = "PART")]
    pub parts: Vec<PathBuf>,
    /// Write the grid report as JSON to PATH (`-` for standard output).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write one CSV row per run to PATH (`-` for standard output).
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    /// No "wrote" lines; no summary when a file output is requested.
    #[arg(long)]
    pub quiet: bool,
    /// Memory the merge may use, e.g. `2G` or `500M` [default: half the machine's available
    /// memory]: a merge whose estimate (every run and a report per cell, until the report is
    /// written) exceeds it is refused after reading the first part.
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true, value_parser = crate::memory::parse_size)]
    pub memory_budget: Option<u64>,
}

/// The plan, with every world it runs.
struct Built {
    spec: Spec,
    hash: String,
    labels: Vec<String>,
    bases: Vec<World>,
    /// Per world, per point.
    at: Vec<Vec<World>>,
    algorithms: Vec<Vec<String>>,
}

impl Built {
    /// The estimate of the grid's cell reports, which a whole sweep and a merge keep until the
    /// report is written.
    fn reports_bytes(&self) -> u64 {
        let points = grid::points(&self.spec.axes).len() as u64;
        let columns: u64 = self.algorithms.iter().map(|a| a.len() as u64).sum();
        crate::memory::grid_reports_bytes(points * self.bases.len() as u64, points * columns)
    }

    /// The estimate of the compiled worlds, one per world and point, held by every command:
    /// each with its own copy of the trace a trace world replays, and its endpoints and
    /// incidents.
    fn worlds_bytes(&self) -> u64 {
        self.at
            .iter()
            .flatten()
            .map(|w| {
                crate::memory::GRID_POINT_BYTES
                    .saturating_add(w.trace_bytes())
                    .saturating_add(crate::memory::world_bytes(w))
            })
            .fold(0, u64::saturating_add)
    }

    /// Loads every world at every point; the error is the exit code, its message printed
    /// (after "PART: its plan: " when the plan is read from the part `from`, for `merge`).
    /// A plan past the caps is refused before any world is compiled or any cell listed.
    fn from_spec(
        spec: Spec,
        inputs: &Inputs,
        from: Option<&str>,
        budget: u64,
    ) -> Result<Built, u8> {
        let usage_error = |message: &str| match from {
            Some(part) => usage_error(&format!("{part}: its plan: {message}")),
            None => usage_error(message),
        };
        if spec.seeds == 0 || spec.seeds > super::run::MAX_SEEDS {
            return Err(usage_error(&format!(
                "{} seeds: a plan has 1 to {} seeds",
                spec.seeds,
                super::run::MAX_SEEDS
            )));
        }
        let least_cells = grid::point_count(&spec.axes)
            .and_then(|p| p.checked_mul(spec.worlds.len() as u64))
            .and_then(|n| n.checked_mul(u64::from(spec.seeds)));
        if least_cells.is_none_or(|n| n > grid::MAX_CELLS) {
            return Err(usage_error(&too_many_cells()));
        }
        if let Err(message) = points_fit(&spec, budget) {
            return Err(usage_error(&message));
        }
        let user: Vec<Override> = spec
            .overrides
            .iter()
            .map(|(origin, text)| Override {
                origin: origin.clone(),
                text: text.clone(),
            })
            .collect();
        let points = grid::points(&spec.axes);
        let mut built = Built {
            hash: String::new(),
            labels: Vec::new(),
            bases: Vec::new(),
            at: Vec::new(),
            algorithms: Vec::new(),
            spec,
        };
        let mut text = grid::PlanText::new(&built.spec.axes, built.spec.seeds, &built.spec.rng);
        for file in &built.spec.worlds {
            let source = Source::read(file.as_deref().map(Path::new), inputs).map_err(|m| {
                let relative = file.as_deref().is_some_and(|f| Path::new(f).is_relative());
                match (from, relative) {
                    // A merge re-reads the files at the paths the sweep was given.
                    (Some(_), true) => usage_error(&format!(
                        "{m}\n  hint: the part names its world files as the sweep was given \
                         them, relative to the folder the sweep ran in, and this merge runs \
                         in {}: run it from the sweep's folder",
                        std::env::current_dir()
                            .map_or_else(|_| "unknown".into(), |d| d.display().to_string())
                    )),
                    _ => usage_error(&m),
                }
            })?;
            let base = source.load(&user, inputs).map_err(|e| invalid(&e))?;
            if from.is_none() {
                super::sweep::warn_thresholds(&base, &source.origin);
            }
            let mut worlds = Vec::with_capacity(points.len());
            for point in &points {
                let mut all = user.clone();
                all.extend(grid::overrides(&built.spec.axes, point));
                worlds.push(source.load(&all, inputs).map_err(|e| invalid(&e))?);
            }
            let requested = built.spec.algorithms.as_deref();
            let algorithms = match super::run::pick_algorithms(&base, requested) {
                Ok(list) => list,
                // A variant the axes define at every point (`--grid algorithms.x={kind=…},…`).
                Err(_) if requested.is_some() && runs_everywhere(&worlds, requested) => {
                    super::run::pick_algorithms(&worlds[0], requested)
                        .map_err(|m| usage_error(&m))?
                }
                Err(m) => {
                    return Err(match built.spec.worlds.len() {
                        1 => usage_error(&m),
                        _ => usage_error(&format!(
                            "{}: {m}\n  hint: every world of a sweep runs every --algorithms name, \
                             so a variant ([algorithms.NAME]) must be in each of them",
                            crate::text::escape(&source.origin)
                        )),
                    });
                }
            };
            if from.is_none() && requested.is_some() {
                warn_unsuited(&built.spec.axes, &points, &worlds, &algorithms);
            }
            if let Some(message) =
                missing_at_a_point(&built.spec.axes, &points, &worlds, &algorithms)
            {
                return Err(usage_error(&format!(
                    "{}: {message}",
                    crate::text::escape(&source.origin)
                )));
            }
            for world in &worlds {
                let n = built.spec.seeds;
                sweep::check_seeds(world, n, &n.to_string()).map_err(|m| usage_error(&m))?;
            }
            let hashes: Vec<String> = worlds.iter().map(world_hash).collect();
            let objective = format!("{:?}", base.objective());
            let label = source.origin.clone();
            text.world(&label, &algorithms, &objective, &hashes);
            built.labels.push(label);
            built.bases.push(base);
            built.at.push(worlds);
            built.algorithms.push(algorithms);
        }
        if from.is_none() {
            for warning in idle_axes(&built.spec.axes, &built.algorithms) {
                errln!("warning: {warning}");
            }
        }
        built.hash = text.hash();
        Ok(built)
    }

    /// The number of cells (checked against [`grid::MAX_CELLS`] when the plan was built).
    fn cell_total(&self) -> usize {
        let per_point: usize = self.algorithms.iter().map(Vec::len).sum();
        per_point * grid::points(&self.spec.axes).len() * self.spec.seeds as usize
    }

    /// Cell `k` in plan order (world, point, algorithm, seed, the last fastest): its world,
    /// algorithm and seed. Computed, not listed, so a shard holds only its own cells.
    fn cell(&self, k: usize) -> (&World, &str, u64) {
        let seeds = self.spec.seeds as usize;
        let mut rest = k;
        for (w, algorithms) in self.algorithms.iter().enumerate() {
            let per_point = algorithms.len() * seeds;
            let block = per_point * self.at[w].len();
            if rest < block {
                let world = &self.at[w][rest / per_point];
                let algorithm = algorithms[rest % per_point / seeds].as_str();
                return (world, algorithm, world.seed() + (rest % seeds) as u64);
            }
            rest -= block;
        }
        panic!("cell {k} is past the plan's {}", self.cell_total());
    }

    fn report(&self, runs: Vec<Run>, wall_s: f64) -> GridReport {
        let worlds: Vec<GridWorld<'_>> = (0..self.bases.len())
            .map(|w| GridWorld {
                file: self.labels[w].clone(),
                base: &self.bases[w],
                at: self.at[w].iter().collect(),
                algorithms: self.algorithms[w].clone(),
            })
            .collect();
        let rng = if self.spec.rng == "reference" {
            "reference"
        } else {
            "native"
        };
        render::analyse_grid(
            &self.hash,
            (&self.spec.axes, self.spec.seeds, rng),
            &worlds,
            runs,
            wall_s,
        )
    }
}

/// Which rendering an output gets.
#[derive(Clone, Copy)]
enum Rendering {
    Json,
    Csv,
    Part,
}

/// Runs `simbench sweep --grid`.
pub fn sweep(args: &SweepArgs) -> u8 {
    let inputs = Inputs::default();
    let fixed = match super::sweep::fixed_seeds(args.exec.seeds) {
        Ok(n) => n,
        Err(message) => return usage_error(&message),
    };
    let mut overrides: Vec<(String, String)> = super::load::overrides(&args.exec.set)
        .into_iter()
        .map(|o| (o.origin, o.text))
        .collect();
    overrides.extend(
        args.exec
            .objective
            .overrides()
            .into_iter()
            .map(|o| (o.origin, o.text)),
    );
    if let Some(file) = repeated_file(&args.files) {
        return usage_error(&format!(
            "{} is given twice; a world runs once in a sweep",
            crate::text::escape(&file.display().to_string())
        ));
    }
    if let Some(repeat) = repeated_key(&args.grid) {
        return usage_error(&format!(
            "--grid {repeat} is given twice; give all its values in one"
        ));
    }
    // A part names its worlds as text (JSON), and a merge re-reads them by that name.
    if let Some(file) = args.files.iter().find(|f| f.to_str().is_none()) {
        return usage_error(&format!(
            "{}: a grid sweep names its world files in its plan and parts as text, and this \
             name is not UTF-8; rename the file (or link to it under a UTF-8 name)",
            crate::text::escape(&file.display().to_string())
        ));
    }
    let algorithms = match (&args.algorithms, &args.algorithm) {
        (Some(list), _) => Some(list.clone()),
        (None, Some(one)) => Some(vec![one.clone()]),
        (None, None) => None,
    };
    let spec = Spec {
        worlds: if args.files.is_empty() {
            vec![None]
        } else {
            args.files
                .iter()
                .map(|f| Some(f.display().to_string()))
                .collect()
        },
        overrides,
        axes: args.grid.clone(),
        algorithms,
        seeds: fixed,
        rng: rng_name(args.exec.rng).to_owned(),
    };
    let budget = super::memory::budget(args.exec.memory_budget);
    let built = match Built::from_spec(spec, &inputs, None, budget) {
        Ok(built) => built,
        Err(code) => return code,
    };
    let shard = match resolve_shard(args.shard) {
        Ok(shard) => shard,
        Err(message) => return usage_error(&message),
    };
    if shard != Shard::ALL && args.part.is_none() && !args.dry_run {
        return usage_error(&format!(
            "--shard {}/{} runs part of the plan: name the part file with --part PATH, and merge the parts with `simbench merge`",
            shard.index, shard.count
        ));
    }
    if shard != Shard::ALL && (args.json.is_some() || args.csv.is_some()) {
        return usage_error(
            "a shard writes a part (--part); the report comes from `simbench merge PARTS… --json/--csv`",
        );
    }
    let counts: Vec<usize> = built.algorithms.iter().map(Vec::len).collect();
    if grid::cell_count(
        &counts,
        grid::points(&built.spec.axes).len(),
        fixed as usize,
    )
    .is_none()
    {
        return usage_error(&too_many_cells());
    }
    let total = built.cell_total();
    // This shard's cells, counted before they are listed: the list itself may not fit.
    let my_count = total
        .saturating_sub(shard.index as usize - 1)
        .div_ceil(shard.count as usize);
    let threads = args
        .exec
        .threads
        .map_or_else(super::sweep::default_threads, |t| t as usize)
        .min(my_count.max(1));
    // Only a whole plan (and its merge) keeps every run for the analysis, and a report per
    // cell; a shard keeps its own runs. Every command lists its cells and their worlds.
    let listed = my_count as u64 * CELL_LIST_BYTES;
    let reports = if shard == Shard::ALL {
        built.reports_bytes()
    } else {
        0
    } + built.worlds_bytes()
        + listed;
    let run_bytes = match super::memory::check_each(
        built.at.iter().flatten(),
        my_count as u64,
        threads as u64,
        budget,
        rng_scheme(args.exec.rng),
        reports,
        None,
    ) {
        Ok(share) => share,
        Err(message) => {
            return usage_error(&format!(
                "{message}; for a grid, fewer points, or shards (each --shard I/N keeps only \
                 its own runs and no report)"
            ));
        }
    };
    let mine: Vec<usize> = (shard.index as usize - 1..total)
        .step_by(shard.count as usize)
        .collect();
    let jobs: Vec<(&World, &str, u64)> = mine.iter().map(|&k| built.cell(k)).collect();
    let requests = Request::named([
        ("--json", args.json.as_ref(), Rendering::Json),
        ("--csv", args.csv.as_ref(), Rendering::Csv),
        ("--part", args.part.as_ref(), Rendering::Part),
    ]);
    if args.dry_run {
        if let Err(message) = Plan::check(&requests, &inputs) {
            return usage_error(&message);
        }
        let need = built
            .at
            .iter()
            .flatten()
            .map(|world| {
                let runs = jobs.len() as u64;
                let rng = rng_scheme(args.exec.rng);
                crate::memory::estimate(world, runs, threads as u64, rng, reports, None).total()
            })
            .max()
            .unwrap_or(crate::memory::BASE_BYTES);
        let memory = Memory {
            need,
            budget,
            merge: (shard != Shard::ALL).then(|| merge_need(&built, total, shard)),
        };
        let outputs: Vec<String> = requests
            .iter()
            .map(|r| {
                format!(
                    "{} {}",
                    r.flag,
                    crate::text::escape(&r.path.display().to_string())
                )
            })
            .collect();
        return dry_run(&built, (total, shard, jobs.len()), &memory, &outputs);
    }
    let plan = match Plan::prepare(requests, &inputs) {
        Ok(plan) => plan,
        Err(message) => return usage_error(&message),
    };
    if !args.exec.quiet {
        errln!(
            "simbench: grid sweep, plan {}: {} × {}, {}; shard {}/{} runs {} ({} thread{})",
            built.hash,
            plural(built.bases.len(), "world"),
            plural(grid::points(&built.spec.axes).len(), "point"),
            plural(total, "cell"),
            shard.index,
            shard.count,
            jobs.len(),
            threads,
            if threads == 1 { "" } else { "s" }
        );
    }
    let origin = super::run::now();
    let clock = move || origin.elapsed().as_secs_f64();
    // The bar `run` draws, once the shard has taken a second, on a terminal only.
    let show_progress = !args.exec.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let progress = super::run::progress::Progress::new(jobs.len(), show_progress);
    let runs = progress.around(|on_run| {
        let config = SweepConfig {
            rng: rng_scheme(args.exec.rng),
            threads,
            wall_budget_s: args.exec.wall_budget,
            clock: &clock,
            on_run,
            window_s: None,
        };
        sweep::sweep_runs(&jobs, &config, run_bytes)
    });
    let part_of = |runs| stored_part(&built, total, shard, runs);
    if shard != Shard::ALL {
        let part = part_of(mine.iter().copied().zip(&runs).collect());
        let summary = format!(
            "shard {}/{} of plan {}: {} of {} cells run in {:.1} s\n",
            shard.index,
            shard.count,
            built.hash,
            jobs.len(),
            total,
            clock()
        );
        let unfinished = runs.iter().filter(|r| r.metrics().is_none()).count();
        if unfinished > 0 {
            // The part still records them: the merge reports them, or fails if none finished.
            errln!(
                "warning: {unfinished} of {} runs of this shard did not finish (the part records them as they ended)",
                runs.len()
            );
        }
        let write = |_: Rendering, out: &mut dyn Write| write_part(&part, out);
        return plan.finish(write, || summary, args.exec.quiet);
    }
    let report = built.report(runs, clock());
    // `--part` of a whole plan: the report's runs, which are the plan's in its order.
    let part = args.part.is_some().then(|| {
        let held = report
            .worlds
            .iter()
            .flat_map(|w| w.cells.iter().flat_map(|cell| &cell.runs));
        part_of(mine.iter().copied().zip(held).collect())
    });
    emit(&report, part.as_ref(), plan, args.exec.quiet)
}

/// The part of `shard` holding `runs` (each with its cell), written as it is serialized.
fn stored_part<'a>(
    built: &Built,
    cells: usize,
    shard: Shard,
    runs: Vec<(usize, &'a Run)>,
) -> Part<StoredRuns<'a>> {
    let runs = StoredRuns { runs };
    Part {
        format: grid::PART_FORMAT.to_owned(),
        plan: built.hash.clone(),
        cells,
        shard,
        spec: built.spec.clone(),
        checksum: Some(runs.checksum()),
        runs,
    }
}

/// What a dry run says about memory: the estimate of this command and its budget, and for a
/// shard the estimate of the merge that puts the shards together.
struct Memory {
    need: u64,
    budget: u64,
    merge: Option<u64>,
}

/// `--dry-run`: the plan on standard output (its cells, and the shard's `mine` of them), then
/// the memory it needs and the outputs it checked (`--flag path` each); nothing run.
fn dry_run(
    built: &Built,
    (cells, shard, mine): (usize, Shard, usize),
    memory: &Memory,
    outputs: &[String],
) -> u8 {
    let worlds = built.bases.len();
    let mut line = format!(
        "plan {}: {} ({} × {} × their algorithms × {})",
        built.hash,
        plural(cells, "cell"),
        plural(worlds, "world"),
        plural(grid::points(&built.spec.axes).len(), "point"),
        plural(built.spec.seeds as usize, "seed")
    );
    if shard != Shard::ALL {
        line.push_str(&format!(
            "; shard {}/{} runs {mine}",
            shard.index, shard.count
        ));
    }
    let show = crate::memory::show;
    line.push_str(&format!(
        "\nmemory: about {} for this {} (budget {})",
        show(memory.need),
        if shard == Shard::ALL {
            "sweep"
        } else {
            "shard"
        },
        show(memory.budget)
    ));
    if let Some(merge) = memory.merge {
        line.push_str(&format!(", about {} for the merge", show(merge)));
    }
    if !outputs.is_empty() {
        line.push_str(&format!(
            "\noutputs: {} (checked; a dry run writes nothing)",
            outputs.join(", ")
        ));
    }
    line.push('\n');
    super::console::exit_code(0, super::console::print(&line))
}

/// Runs `simbench merge`.
pub fn merge(args: &MergeArgs) -> u8 {
    let origin = super::run::now();
    let inputs = Inputs::default();
    let read = |path: &PathBuf| {
        inputs.record(path, super::output::Role::Part);
        read_part(path).map(|part| (path.display().to_string(), part))
    };
    let first = match read(&args.parts[0]) {
        Ok(first) => first,
        Err(message) => return usage_error(&message),
    };
    let budget = super::memory::budget(args.memory_budget);
    let built = match Built::from_spec(first.1.spec.clone(), &inputs, Some(&first.0), budget) {
        Ok(built) => built,
        Err(code) => return code,
    };
    let total = built.cell_total();
    if let Err(message) = merge_fits(&built, total, first.1.shard, args.memory_budget) {
        return usage_error(&message);
    }
    let expected: Vec<(&str, u64, usize)> = (0..total)
        .map(|k| {
            let (world, a, s) = built.cell(k);
            (a, s, world.endpoints().len())
        })
        .collect();
    // Each part's runs join the plan's buffer as soon as the part is read.
    let mut assembly = grid::Assembly::new(&built.hash, expected.len());
    let (first_name, first) = first;
    let (spec, shard, first_plan) = (first.spec.clone(), first.shard, first.plan.clone());
    if first.plan != built.hash {
        return usage_error(&format!(
            "{first_name} was run on other world files than the ones here now, or its header was edited (its plan is {first_plan}, these files and its `spec` make {}): a world file, a base it extends or a trace it replays changed since the shards ran, or the part's `spec` was changed by hand; merge with the files the shards read, or run the shards again",
            built.hash
        ));
    }
    // Which part brought each shard: one given twice is refused even when it holds no cell.
    let mut shards = vec![(first.shard.index, first_name.clone())];
    if let Err(message) = assembly.add(first_name.clone(), first) {
        return usage_error(&message);
    }
    for path in &args.parts[1..] {
        let (name, part) = match read(path) {
            Ok(read) => read,
            Err(message) => return usage_error(&message),
        };

        if let Some(message) = part.spec.difference(&name, &spec, &first_name) {
            return usage_error(&message);
        }
        if part.plan != first_plan {
            return usage_error(&format!(
                "{name} and {first_name} ran the same command on different world files (plans {} and {}): a world file, a base it extends or a trace it replays changed between the shards; run every shard on the same files",
                part.plan, first_plan
            ));
        }
        if part.shard.count != shard.count {
            return usage_error(&format!(
                "{name} is shard {}/{} and {first_name} shard {}/{}: merge the shards of one split",
                part.shard.index, part.shard.count, shard.index, shard.count
            ));
        }
        if let Some((_, earlier)) = shards.iter().find(|(i, _)| *i == part.shard.index) {
            return usage_error(&format!(
                "{name} and {earlier} are both shard {}/{}: give each shard's part once",
                part.shard.index, part.shard.count
            ));
        }
        shards.push((part.shard.index, name.clone()));
        if let Err(message) = assembly.add(name, part) {
            return usage_error(&message);
        }
    }
    let runs = match assembly.finish(&expected) {
        Ok(runs) => runs,
        Err(message) => return usage_error(&message),
    };
    let requests = Request::named([
        ("--json", args.json.as_ref(), Rendering::Json),
        ("--csv", args.csv.as_ref(), Rendering::Csv),
    ]);
    let plan = match Plan::prepare(requests, &inputs) {
        Ok(plan) => plan,
        Err(message) => return usage_error(&message),
    };
    let report = built.report(runs, origin.elapsed().as_secs_f64());
    emit(&report, None, plan, args.quiet)
}

/// Refuses a merge of the `cells` cells of `built` whose estimate exceeds the budget: every
/// run and every cell's report until the report is written, and one part's runs as they are
/// read (a shard of `shard`'s split holds at most its share of the cells).
fn merge_fits(built: &Built, cells: usize, shard: Shard, flag: Option<u64>) -> Result<(), String> {
    let need = merge_need(built, cells, shard);
    let budget = super::memory::budget(flag);
    if need <= budget {
        return Ok(());
    }
    let (need, budget) = crate::memory::show_over(need, budget);
    Err(format!(
        "this merge would need about {need} of memory, over the memory budget of {budget} ({cells} runs and a report per cell, held until the report is written); hint: a larger --memory-budget, or the grid split into several sweeps",
    ))
}

/// The estimate of merging the `cells` cells of `built`, split as `shard`'s split is.
fn merge_need(built: &Built, cells: usize, shard: Shard) -> u64 {
    let largest = cells.div_ceil(shard.count as usize) as u64;
    let held = built.reports_bytes().saturating_add(built.worlds_bytes());
    crate::memory::merge_bytes(cells as u64, held, largest)
}

/// Writes the grid's outputs; a grid in which no run finished is an error (exit 2, as `run`'s
/// comparison is), so that a scheduler's "after success" step does not take it for a result.
fn emit(
    report: &GridReport,
    part: Option<&Part<StoredRuns<'_>>>,
    plan: Plan<Rendering>,
    quiet: bool,
) -> u8 {
    let write = |kind, out: &mut dyn Write| match kind {
        Rendering::Json => render::write_json(report, out),
        Rendering::Csv => render::write_csv(report, out),
        Rendering::Part => part.map_or(Ok(()), |p| write_part(p, out)),
    };
    let (runs, unfinished) = warn_unfinished(report);
    if runs > 0 && unfinished == runs {
        plan.abandon(write, || render::terminal(report), quiet);
        errln!(
            "error: no run of the grid finished with metrics (each was stopped by a budget, or stalled under --rng reference), so there is nothing to compare; hint: run the sweep (or its shards) with a larger --wall-budget or --memory-budget, or fewer jobs"
        );
        return super::EXIT_ERROR;
    }
    plan.finish(write, || render::terminal(report), quiet)
}

/// Says on standard error, even with --quiet, how many of the grid's runs did not finish or
/// stalled; returns the runs and the unfinished ones.
fn warn_unfinished(report: &GridReport) -> (usize, usize) {
    let cells = || report.worlds.iter().flat_map(|w| &w.cells);
    let runs: usize = cells().map(|c| c.runs.len()).sum();
    let unfinished: usize = cells().map(|c| c.unfinished_runs()).sum();
    let stalled = cells()
        .flat_map(|c| &c.runs)
        .filter(|r| r.stall().is_some())
        .count();
    if unfinished > 0 {
        errln!(
            "warning: {unfinished} of {runs} runs did not finish; their algorithms are left out of their points' rankings (the CSV's `outcome` column says which runs)"
        );
    }
    if stalled > 0 {
        errln!(
            "warning: {stalled} of {runs} runs stalled; each counts with what it did until the stall (stall_rate, jobs_stalled)"
        );
    }
    (runs, unfinished)
}

/// A part as compact JSON: a machine file, read back by `merge`.
fn write_part(part: &Part<StoredRuns<'_>>, out: &mut dyn Write) -> std::io::Result<()> {
    crate::report::json::write_compact(out, part)
}

/// Reads a part; a located message when it is not one.
fn read_part(path: &Path) -> Result<Part<ReadRuns>, String> {
    if path.as_os_str() == "-" {
        return Err(
            "`-`: merge reads each part from its file, not from standard input; name the part \
             files"
                .into(),
        );
    }
    let file = std::fs::File::open(path)
        .map_err(|e| format!("cannot read {}: {}", path.display(), super::io_reason(&e)))?;
    let reader = std::io::BufReader::with_capacity(1 << 16, file);
    // Parsed as it is read: a merge holds no part's text beside the runs it keeps.
    let part: Part<ReadRuns> = serde_json::from_reader(reader).map_err(|e| {
        if e.is_io() {
            let io = std::io::Error::from(e);
            return format!("cannot read {}: {}", path.display(), super::io_reason(&io));
        }
        // serde_json puts an error at the end of an empty file at column 0.
        format!(
            "{}:{}:{}: not a part: {e}; a part is what `simbench sweep --grid … --part PATH` writes",
            path.display(),
            e.line(),
            e.column().max(1)
        )
    })?;
    if let Err(why) = Shard::new(part.shard.index, part.shard.count) {
        return Err(format!(
            "{}: not a part: its shard {}/{} is not one ({why})",
            path.display(),
            part.shard.index,
            part.shard.count
        ));
    }
    if part.format != grid::PART_FORMAT {
        return Err(format!(
            "{}: a part of format `{}`, where this simbench reads `{}`",
            path.display(),
            part.format,
            grid::PART_FORMAT
        ));
    }
    let shard = format!("--shard {}/{}", part.shard.index, part.shard.count);
    // The header is not under the checksum: what it claims is checked against the runs.
    if part.cells > grid::MAX_CELLS as usize {
        return Err(format!(
            "{}: not a part: it claims {} cells, more than the {} a plan may have",
            path.display(),
            part.cells,
            grid::MAX_CELLS
        ));
    }
    let (index, count) = (part.shard.index as usize, part.shard.count as usize);
    if let Some(run) = part.runs.runs.iter().find(|r| r.cell % count != index - 1) {
        return Err(format!(
            "{}: it says it is shard {index}/{count} but holds cell {}, which is shard {}/{count}'s: its header was changed or damaged after it was written; run its shard again",
            path.display(),
            run.cell,
            run.cell % count + 1
        ));
    }
    match &part.checksum {
        None => Err(format!(
            "{}: a part without its checksum; run its shard again ({shard})",
            path.display()
        )),
        Some(written) if *written != part.runs.checksum => Err(format!(
            "{}: its runs do not match its checksum ({written} written, {} read): the part was changed or damaged after it was written; run its shard again ({shard})",
            path.display(),
            part.runs.checksum
        )),
        Some(_) => Ok(part),
    }
}

fn resolve_shard(arg: Option<ShardArg>) -> Result<Shard, String> {
    match arg {
        None => Ok(Shard::ALL),
        Some(ShardArg::Given(shard)) => Ok(shard),
        Some(ShardArg::Auto(count)) => Shard::from_env(count, |name| std::env::var(name).ok()),
    }
}

/// Whether every name `requested` is an algorithm at every point.
fn runs_everywhere(worlds: &[World], requested: Option<&[String]>) -> bool {
    let names = requested
        .into_iter()
        .flatten()
        .map(|n| n.trim())
        .filter(|n| !n.is_empty());
    names.clone().next().is_some()
        && worlds
            .iter()
            .all(|w| names.clone().all(|n| sweep::resolve(w, n).is_some()))
}

/// Warns that an algorithm the sweep runs is not ranked where a point's world marks it
/// unsuited: at every point as `run` says it, else naming the points.
fn warn_unsuited(axes: &[Axis], points: &[Vec<usize>], worlds: &[World], algorithms: &[String]) {
    for name in algorithms {
        let at: Vec<usize> = (0..worlds.len())
            .filter(|&p| worlds[p].unsuited().contains_key(name))
            .collect();
        match at.as_slice() {
            [] => {}
            _ if at.len() == worlds.len() => {
                super::run::warn_unsuited(&worlds[0], std::slice::from_ref(name));
            }
            [first, ..] => errln!(
                "warning: `{}` is marked unsuited at {} of the {} points (the first: {}) and is \
                 not ranked there; it is ranked at the others",
                crate::text::escape(name),
                at.len(),
                worlds.len(),
                crate::text::escape(&grid::label(axes, &points[*first]))
            ),
        }
    }
}

/// The first point whose world lacks one of `algorithms` (an axis removed or renamed a
/// variant the sweep runs), in words; `None` when every point has them all.
fn missing_at_a_point(
    axes: &[Axis],
    points: &[Vec<usize>],
    worlds: &[World],
    algorithms: &[String],
) -> Option<String> {
    points.iter().zip(worlds).find_map(|(point, world)| {
        let name = algorithms
            .iter()
            .find(|n| sweep::resolve(world, n).is_none())?;
        Some(format!(
            "at the grid point {}: {}\n  hint: every point runs every \
             algorithm of the sweep, so an axis may not remove a variant ([algorithms.NAME]) \
             that runs; name the algorithms with --algorithms, or keep the variant in every \
             value of the axis",
            crate::text::escape(&grid::label(axes, point)),
            super::run::unknown_algorithm(world, name)
        ))
    })
}

/// The axes that change no run: each tunes an algorithm (`algorithms.NAME.…`) that no world of
/// the sweep runs. They still run (the report folds their points into one contestant), but they
/// multiply the work for nothing, which is worth a warning.
fn idle_axes(axes: &[Axis], algorithms: &[Vec<String>]) -> Vec<String> {
    axes.iter()
        .filter_map(|axis| {
            let parts = crate::compose::key_parts(&axis.key)?;
            let [first, name, ..] = parts.as_slice() else {
                return None;
            };
            let run = algorithms.iter().any(|list| list.contains(name));
            if first != "algorithms" || run {
                return None;
            }
            let mut names: Vec<&str> = algorithms.iter().flatten().map(String::as_str).collect();
            names.sort_unstable();
            names.dedup();
            Some(format!(
                "--grid {}: `{}` is not among the algorithms this sweep runs ({}), so its {} \
             give the same runs; add `{}` to --algorithms, or drop the axis",
                crate::text::escape(&axis.key),
                crate::text::escape(name),
                names.join(", "),
                plural(axis.values.len(), "value"),
                crate::text::escape(name),
            ))
        })
        .collect()
}

/// A listed cell: its index, and its world, algorithm and seed.
const CELL_LIST_BYTES: u64 =
    (std::mem::size_of::<usize>() + std::mem::size_of::<(&World, &str, u64)>()) as u64;

/// Refuses, before any world is compiled, a plan whose compiled worlds alone (one per world
/// file and point, held by every shard: the plan's hash names them all) would not fit in
/// `budget`; the full estimate, runs and reports included, follows once they are built.
fn points_fit(spec: &Spec, budget: u64) -> Result<(), String> {
    let points = grid::point_count(&spec.axes).unwrap_or(u64::MAX);
    let worlds = points.saturating_mul(spec.worlds.len() as u64);
    // Each point's list of value indices besides its worlds.
    let index_bytes = 24 + 8 * spec.axes.len() as u64;
    let per_point = crate::memory::GRID_POINT_BYTES
        .saturating_mul(spec.worlds.len() as u64)
        .saturating_add(index_bytes);
    let need = points
        .saturating_mul(per_point)
        .saturating_add(crate::memory::BASE_BYTES);
    if need <= budget {
        return Ok(());
    }
    let (need, budget) = crate::memory::show_over(need, budget);
    Err(format!(
        "this grid would need about {need} of memory for its {points} point{} alone, over the \
         memory budget of {budget} (every shard and the merge compile each of the {worlds} \
         (world, point) pairs, about {} each, to name the plan, besides {} for the program \
         itself); hint: fewer values per axis \
         or fewer axes (split the grid by an axis into sweeps of their own), or a larger \
         --memory-budget",
        if points == 1 { "" } else { "s" },
        crate::memory::show(crate::memory::GRID_POINT_BYTES),
        crate::memory::show(crate::memory::BASE_BYTES),
    ))
}

fn too_many_cells() -> String {
    format!(
        "the plan has more than {} cells; shard a smaller grid, or fewer seeds",
        grid::MAX_CELLS
    )
}

/// A scenario file named twice (by the same or another path to it).
fn repeated_file(files: &[PathBuf]) -> Option<&PathBuf> {
    let id = |f: &PathBuf| std::fs::canonicalize(f).unwrap_or_else(|_| f.clone());
    let ids: Vec<PathBuf> = files.iter().map(id).collect();
    (1..files.len())
        .find(|&i| ids[..i].contains(&ids[i]))
        .map(|i| &files[i])
}

fn repeated_key(axes: &[Axis]) -> Option<&str> {
    axes.iter()
        .enumerate()
        .find(|(i, a)| axes[..*i].iter().any(|b| b.key == a.key))
        .map(|(_, a)| a.key.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_argument_says_what_is_wrong_with_it() {
        assert_eq!(parse_shard("auto"), Ok(ShardArg::Auto(None)));
        assert_eq!(parse_shard("auto/3"), Ok(ShardArg::Auto(Some(3))));
        let shape = "expected `auto` or `auto/N` with N ≥ 1";
        for bad in ["auto/0", "auto3", "auto/x", "auto/-1", "automatic"] {
            assert!(parse_shard(bad).unwrap_err().starts_with(shape), "{bad}");
        }
        assert_eq!(
            parse_shard("auto/4294967296").unwrap_err(),
            "`4294967296` in `auto/4294967296` is too large (at most 4294967295)"
        );
        assert!(
            parse_shard("5/4294967296")
                .unwrap_err()
                .contains("is too large")
        );
    }
}
