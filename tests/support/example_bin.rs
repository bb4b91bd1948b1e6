//! The example node's binary for tests that run it as a process (`tests/node_process.rs`,
//! `tests/chaos.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The example binary, built once per test binary with `cargo build --example node`.
///
/// `cargo test --all-targets` builds examples only as test harnesses (`examples/node-<hash>`), not
/// the plain binary, and a binary left by an earlier build may be stale: building it here (a no-op
/// when it is fresh) runs the code under test. The nested cargo waits for the build lock like any
/// other; `cargo test` does not hold it while tests run.
pub fn example_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test binary's own path");
        // target/<profile>/deps/node_process-<hash> -> target/<profile>/examples/node
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test binary lies in target/<profile>/deps");
        let target_dir = profile_dir.parent().expect("target/<profile> has a parent");
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .args(["build", "--example", "node"])
            .env("CARGO_TARGET_DIR", target_dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if profile_dir
            .file_name()
            .is_some_and(|name| name == "release")
        {
            cargo.arg("--release");
        }
        let built = cargo.output().expect("running cargo build --example node");
        assert!(
            built.status.success(),
            "cargo build --example node failed:\n{}",
            String::from_utf8_lossy(&built.stderr)
        );
        let binary = profile_dir.join("examples").join("node");
        assert!(
            binary.is_file(),
            "cargo build --example node left no binary at {}",
            binary.display()
        );
        binary
    })
}
