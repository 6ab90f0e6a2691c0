//! `simbench init` and `simbench show` as a user who installed only the binary runs them.

use crate::support::{scratch_dir, simbench};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn init_writes_a_starter_world_that_validates_and_runs_and_never_overwrites() {
    let dir = scratch_dir("init");
    let world = dir.join("new/world.toml");
    let path = world.to_string_lossy().into_owned();
    let out = simbench(&["init", &path]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&world).unwrap();
    assert!(
        written.starts_with("#:schema scenario.schema.json\n"),
        "{written}"
    );
    assert!(written.contains("[objective]"), "{written}");
    assert!(
        !written.contains("compiled into the binary"),
        "the copy's header speaks of the copy: {written}"
    );
    let schema = std::fs::read_to_string(dir.join("new/scenario.schema.json")).unwrap();
    assert_eq!(
        schema,
        text(&simbench(&["schema"]).stdout),
        "the schema beside it is current"
    );
    let valid = simbench(&["validate", &path]);
    assert_eq!(valid.status.code(), Some(0), "{}", text(&valid.stderr));
    let run = simbench(&[
        "run", &path, "--seeds", "2", "--jobs", "200", "--quiet", "--json", "-",
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    // Named for its file, so two starters in one folder are told apart.
    assert_eq!(doc["scenario"], "world");
    assert_eq!(doc["objective"]["source"], "world");
    let again = simbench(&["init", &path]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        text(&again.stderr).contains("already exists"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&world).unwrap(),
        written,
        "left as it was"
    );
    // A world named as the schema beside it would be overwritten by it.
    for name in ["scenario.schema.json", "Scenario.Schema.JSON"] {
        let clash = dir.join("clash").join(name);
        let out = simbench(&["init", clash.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        assert!(
            text(&out.stderr).contains("name the world otherwise"),
            "{name}"
        );
        assert!(!clash.exists(), "{name}");
    }
}

/// Another schema beside the world is kept with a warning; one that cannot be read (a link to
/// nowhere) stops `init` before it writes the world.
#[test]
fn init_keeps_another_schema_and_writes_nothing_when_it_cannot_read_one() {
    let dir = scratch_dir("init_schema");
    std::fs::write(dir.join("scenario.schema.json"), "{}").unwrap();
    let path = dir.join("a.toml").to_string_lossy().into_owned();
    let out = simbench(&["init", &path]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("warning: kept"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("scenario.schema.json")).unwrap(),
        "{}"
    );
    let linked = dir.join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    std::os::unix::fs::symlink(dir.join("nowhere"), linked.join("scenario.schema.json")).unwrap();
    let path = linked.join("b.toml");
    let out = simbench(&["init", &path.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(!path.exists(), "no half-written starter");
}

/// `init -` prints the world (standard output, as `-` is everywhere), a spaced path is quoted
/// in the hint so it can be pasted, and a file where a folder must go is named as such.
#[test]
fn init_prints_on_a_dash_quotes_its_hint_and_names_a_file_in_the_way() {
    let dir = scratch_dir("init_edges");
    let out = crate::support::simbench_in(&dir, &["init", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("#:schema scenario.schema.json\n"));
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing written"
    );
    let spaced = dir.join("a dir/my world.toml");
    let out = simbench(&["init", &spaced.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!("simbench validate '{}'", spaced.display())),
        "{}",
        text(&out.stderr)
    );
    let file = dir.join("f.toml");
    std::fs::write(&file, "").unwrap();
    let out = simbench(&["init", &file.join("x.toml").to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("a part of the path is not a folder"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn show_prints_the_built_in_world_and_refuses_unknown_names() {
    let out = simbench(&["show", "bursty"]);
    assert_eq!(out.status.code(), Some(0));
    let shipped = std::fs::read_to_string("scenarios/bursty.toml").unwrap();
    assert_eq!(text(&out.stdout), shipped);
    let out = simbench(&["show", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("built in: bursty"));
}

#[test]
fn completions_are_generated_for_every_shell_and_bash_parses_its_script() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = simbench(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = text(&out.stdout);
        // fish spells an option `-l seeds`, the others `--seeds`.
        for word in ["run", "sweep", "seeds", "color", "objective"] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
    }
    let dir = scratch_dir("completions");
    let file = dir.join("simbench.bash");
    std::fs::write(&file, simbench(&["completions", "bash"]).stdout).unwrap();
    let syntax = std::process::Command::new("bash")
        .arg("-n")
        .arg(&file)
        .output()
        .expect("bash runs");
    assert!(syntax.status.success(), "{}", text(&syntax.stderr));
    // The values `show` and `man` take are offered: complete `simbench show ` and `man s`.
    let complete = |words: &str, current: &str, previous: &str| {
        let cword = words.split(' ').count() - 1;
        let script = format!(
            "source '{}'; COMP_WORDS=({words}); COMP_CWORD={cword}; _simbench simbench \
             '{current}' {previous}; echo \"${{COMPREPLY[*]}}\"",
            file.display()
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &script])
            .output()
            .expect("bash runs");
        text(&out.stdout).trim().to_owned()
    };
    let shown = complete("simbench show ''", "", "show");
    assert!(shown.split(' ').any(|w| w == "bursty"), "{shown}");
    assert_eq!(
        complete("simbench man s", "s", "man"),
        "schema sweep serve show"
    );
    // Algorithm options offer the registry's names, not the folder's files.
    assert_eq!(
        complete("simbench trace --algorithm ro", "ro", "--algorithm"),
        "router router_least_busy router_usage_based router_latency_based"
    );
    assert_eq!(
        complete("simbench run --algorithms ai", "ai", "--algorithms"),
        "aimd"
    );
    assert_eq!(
        complete("simbench sweep --algorithm sdk", "sdk", "--algorithm"),
        "sdk_retry"
    );
    let unknown = simbench(&["completions", "tcsh"]);
    assert_eq!(unknown.status.code(), Some(2));
}

#[test]
fn man_pages_are_generated_for_simbench_and_each_command() {
    let main = text(&simbench(&["man"]).stdout);
    assert!(main.contains(".TH simbench 1"), "{main}");
    assert!(main.contains(".SH SUBCOMMANDS"), "{main}");
    let run = simbench(&["man", "run"]);
    assert_eq!(run.status.code(), Some(0));
    let run = text(&run.stdout);
    assert!(run.contains(".TH simbench-run 1"), "{run}");
    assert!(run.contains("\"simbench 0."), "{run}");
    assert!(run.contains("\\-\\-seeds"), "{run}");
    assert!(run.contains("\\-\\-objective"), "{run}");
    let unknown = simbench(&["man", "rnu"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown.stderr).contains("the commands are validate, schema, run"));
}

#[test]
fn colour_follows_the_flag_then_no_color_clicolor_force_and_term() {
    use crate::support::simbench_with;
    let table = |flag: &str, env: &[(&str, &str)]| {
        let args = [
            "run",
            "--seeds",
            "1",
            "--algorithms",
            "wait,backoff",
            "--color",
            flag,
        ];
        let out = simbench_with(&args, env);
        assert_eq!(out.status.code(), Some(0));
        text(&out.stdout).contains('\x1b')
    };
    // The flag wins over the environment.
    assert!(table("always", &[("NO_COLOR", "1")]));
    assert!(!table(
        "never",
        &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "1")]
    ));
    // `auto` into a pipe: no colour, unless forced; NO_COLOR beats the force.
    assert!(!table("auto", &[("NO_COLOR", "")]));
    assert!(table("auto", &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "1")]));
    assert!(!table("auto", &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "0")]));
    assert!(!table(
        "auto",
        &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")]
    ));
    assert!(!table("auto", &[("NO_COLOR", ""), ("TERM", "dumb")]));
    // Diagnostics on standard error too.
    let out = simbench_with(
        &[
            "validate",
            "tests/data/invalid/unknown_key.toml",
            "--color",
            "always",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains('\x1b'), "{}", text(&out.stderr));
    // And clap's own usage errors and help, before or after the command.
    let forced = [("NO_COLOR", ""), ("CLICOLOR_FORCE", "1")];
    for args in [
        &["--color", "never", "run", "--bogus"][..],
        &["run", "--bogus", "--color=never"],
    ] {
        let out = simbench_with(args, &forced);
        assert_eq!(out.status.code(), Some(2));
        assert!(!text(&out.stderr).contains('\x1b'), "{args:?}");
    }
    let help = simbench_with(&["--color", "always", "--help"], &[("NO_COLOR", "")]);
    assert!(text(&help.stdout).contains('\x1b'));
    // Under auto, clap's messages follow the same conventions: forced by CLICOLOR_FORCE=1, not
    // by CLICOLOR_FORCE=0.
    for (force, coloured) in [("1", true), ("0", false)] {
        let env = [("NO_COLOR", ""), ("CLICOLOR_FORCE", force)];
        let out = simbench_with(&["run", "--bogus"], &env);
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(text(&out.stderr).contains('\x1b'), coloured, "{force}");
        let help = simbench_with(&["run", "--help"], &env);
        assert_eq!(text(&help.stdout).contains('\x1b'), coloured, "{force}");
    }
}

#[test]
fn a_default_comparison_says_which_unsuited_strategies_it_left_out_and_why() {
    let out = simbench(&["run", "--seeds", "1", "--json", "-"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let not_run = json["not_run"].as_object().unwrap();
    assert!(
        not_run["failover"]
            .as_str()
            .unwrap()
            .contains("single pool")
    );
    assert!(json["unsuited"].as_object().unwrap().is_empty());
    let table = text(&out.stderr);
    assert!(
        table.contains("not run: failover is unsuited to this world (single pool"),
        "{table}"
    );
    // Named, it runs and is shown, and no longer listed as not run.
    let named = simbench(&[
        "run",
        "--seeds",
        "1",
        "--algorithms",
        "wait,failover",
        "--json",
        "-",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&named.stdout).unwrap();
    assert!(json["not_run"].get("failover").is_none());
    assert!(json["unsuited"]["failover"].is_string());
}

#[test]
fn a_long_comparison_shows_a_progress_bar_on_a_terminal_also_with_the_reference_rng() {
    // `script` gives the command a pseudo-terminal, as a user's shell would.
    let command = format!(
        "{} run --rng reference --seeds 40 --algorithms wait,backoff,sticky --threads 1",
        env!("CARGO_BIN_EXE_simbench")
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .expect("script (util-linux) runs; .ci/run installs it");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("/120 runs ·"), "no progress bar:\n{shown}");
    // Into a pipe, never.
    let piped = simbench(&[
        "run",
        "--rng",
        "reference",
        "--seeds",
        "40",
        "--algorithms",
        "wait,backoff,sticky",
        "--threads",
        "1",
    ]);
    assert!(!text(&piped.stderr).contains("runs ·"));
}
