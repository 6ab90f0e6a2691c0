//! The simulation core has no networking crate and opens no socket: built without the `serve`
//! feature (`simbench serve`, the one part allowed on the network) the dependency tree has no
//! networking crate — jsonschema's default features would pull in an HTTP/TLS stack (see
//! `Cargo.toml`) — and no source file outside the server's own names a socket or its stack.

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
        .args([
            "tree",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--offline",
            "--no-default-features",
        ])
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

/// The server's files: the only ones allowed to name sockets, tokio or hyper.
const SERVER_FILES: &[&str] = &["src/serve.rs", "src/serve/", "src/cli/serve.rs"];

/// What only the server may name.
const NETWORK_WORDS: &[&str] = &[
    "std::net",
    "TcpStream",
    "TcpListener",
    "UdpSocket",
    "tokio",
    "hyper",
];

#[test]
fn no_source_outside_the_server_names_a_socket() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("src is readable") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    walk(&root.join("src"), &mut files);
    assert!(files.len() > 50);
    let mut found = Vec::new();
    for path in files {
        let relative = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if SERVER_FILES.iter().any(|f| relative.starts_with(f)) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a source file");
        for word in NETWORK_WORDS {
            if text.contains(word) {
                found.push(format!("{relative}: {word}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "network code outside the server: {found:?}"
    );
}
