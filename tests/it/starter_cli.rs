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
    assert_eq!(doc["scenario"], "my_world");
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
