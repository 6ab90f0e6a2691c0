//! The dependency tree has no networking crate: simbench is an offline simulator, and
//! jsonschema's default features would pull in an HTTP/TLS stack (see `Cargo.toml`).

use std::process::Command;

const FORBIDDEN: &[&str] = &[
    "reqwest",
    "hyper",
    "ureq",
    "tokio",
    "socket2",
    "mio",
    "rustls",
    "native-tls",
    "openssl",
    "curl",
    "h2",
    "isahc",
    "surf",
];

#[test]
fn no_network_crates_in_the_dependency_tree() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["tree", "-e", "normal", "--prefix", "none", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    let Ok(out) = out else {
        eprintln!("cargo is not available; skipping the dependency check");
        return;
    };
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let found: Vec<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| FORBIDDEN.contains(name))
        .collect();
    assert!(
        tree.lines().count() > 10,
        "unexpectedly small tree:\n{tree}"
    );
    assert!(found.is_empty(), "networking crates in the tree: {found:?}");
}
