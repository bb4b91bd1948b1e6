//! The programs' binaries, for tests that run them as processes (`tests/node_process.rs`,
//! `tests/chaos.rs`, `tests/ctl.rs`, `tests/console.rs`): the example node, and `shardcronctl`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The `shardcronctl` binary. It is a binary target of the package, so cargo builds it before any
/// integration test and names it in `CARGO_BIN_EXE_shardcronctl`.
pub fn ctl_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_shardcronctl"))
}

/// The example node's binary.
pub fn example_binary() -> PathBuf {
    example("node")
}

/// The binary of example `name`, built once per test binary with `cargo build --example NAME`.
///
/// `cargo test --all-targets` builds examples only as test harnesses (`examples/node-<hash>`), not
/// the plain binary, and a binary left by an earlier build may be stale: building it here (a no-op
/// when it is fresh) runs the code under test. The nested cargo waits for the build lock like any
/// other; `cargo test` does not hold it while tests run.
pub fn example(name: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(path) = built.get(name) {
        return path.clone();
    }
    let exe = std::env::current_exe().expect("the test binary's own path");
    // target/<profile>/deps/<test>-<hash> -> target/<profile>/examples/<name>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary lies in target/<profile>/deps");
    let target_dir = profile_dir.parent().expect("target/<profile> has a parent");
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args(["build", "--example", name])
        .env("CARGO_TARGET_DIR", target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.file_name().is_some_and(|dir| dir == "release") {
        cargo.arg("--release");
    }
    let output = cargo.output().expect("running cargo build --example");
    assert!(
        output.status.success(),
        "cargo build --example {name} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let binary = profile_dir.join("examples").join(name);
    assert!(
        binary.is_file(),
        "cargo build --example {name} left no binary at {}",
        binary.display()
    );
    built.insert(name.to_owned(), binary.clone());
    binary
}
