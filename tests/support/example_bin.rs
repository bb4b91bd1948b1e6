//! The programs' binaries, for tests that run them as processes (`tests/node_process.rs`,
//! `tests/chaos.rs`, `tests/ctl.rs`, `tests/console.rs`): the example node, and `shardcronctl`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The `shardcronctl` binary. It is a binary target of the package, so cargo builds it before any
/// integration test, beside the test binaries' folder: `target/<profile>/shardcronctl`.
pub fn ctl_binary() -> PathBuf {
    let binary = profile_dir().join("shardcronctl");
    assert!(
        binary.is_file(),
        "no shardcronctl at {} (cargo builds it with the integration tests)",
        binary.display()
    );
    binary
}

/// `target/<profile>`: the folder of the running test binary's `deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's own path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test binary lies in target/<profile>/deps")
        .to_path_buf()
}

/// What a `shardcronctl` run printed and how it exited.
#[derive(Debug)]
pub struct CtlOutput {
    /// The exit code; -1 when a signal ended it.
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl CtlOutput {
    /// The output of a finished run.
    pub fn from_output(out: std::process::Output) -> CtlOutput {
        CtlOutput {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Asserts exit code `code`, showing the output otherwise.
    pub fn expect(self, code: i32) -> Self {
        assert_eq!(self.code, code, "ctl exited with {}: {self:#?}", self.code);
        self
    }

    /// Asserts exit code `code` and a stderr naming every one of `words`.
    pub fn refused_naming(self, code: i32, words: &[&str]) -> Self {
        assert_eq!(self.code, code, "ctl exited with {}: {self:#?}", self.code);
        for word in words {
            assert!(self.stderr.contains(word), "stderr names {word}: {self:#?}");
        }
        self
    }

    /// Stdout as JSON (after `--json`).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("ctl printed no JSON ({e}): {self:#?}"))
    }
}

/// `shardcronctl ARGS` with `env` added; the registry credentials, console token and audit
/// database of the test's own environment removed.
pub fn ctl_command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(ctl_binary());
    command
        .args(args)
        .env_remove("SHARDCRON_ZK_AUTH")
        .env_remove("SHARDCRON_ZK_AUTH_FILE")
        .env_remove("SHARDCRON_AUDIT_DB")
        .env_remove("SHARDCRON_CONSOLE_TOKEN")
        .envs(env.iter().copied());
    command
}

/// Runs [`ctl_command`] to its end, blocking.
pub fn run_ctl_blocking(args: &[&str], env: &[(&str, &str)]) -> CtlOutput {
    CtlOutput::from_output(ctl_command(args, env).output().expect("shardcronctl runs"))
}

/// Runs [`ctl_command`] to its end.
pub async fn run_ctl(args: &[&str]) -> CtlOutput {
    let out = tokio::process::Command::from(ctl_command(args, &[]))
        .output()
        .await
        .expect("shardcronctl runs");
    CtlOutput::from_output(out)
}

/// `["--zk", connect, "--namespace", namespace, args...]`.
pub fn on_zk<'a>(connect: &'a str, namespace: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["--zk", connect, "--namespace", namespace];
    all.extend_from_slice(args);
    all
}

/// The example node's binary.
pub fn example_binary() -> PathBuf {
    example("node")
}

/// The variables cargo sets for a test process besides `CARGO_PKG_*` and `CARGO_BIN_EXE_*`.
const SET_FOR_A_TEST: [&str; 8] = [
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "LD_LIBRARY_PATH",
    "RUST_RECURSION_COUNT",
];

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
    // target/<profile>/deps/<test>-<hash> -> target/<profile>/examples/<name>
    let profile_dir = profile_dir();
    let target_dir = profile_dir.parent().expect("target/<profile> has a parent");
    let mut cargo = Command::new(env!("CARGO"));
    // Without what cargo set for this test process (its package's `CARGO_*`, the library path),
    // so that the nested build sees the environment the outer one saw and finds its work fresh.
    // The caller's own settings (`CARGO_INCREMENTAL`, `CARGO_PROFILE_*`, ...) stay.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        let set_by_cargo = key.starts_with("CARGO_PKG_")
            || key.starts_with("CARGO_BIN_EXE_")
            || SET_FOR_A_TEST.contains(&key.as_ref());
        if set_by_cargo {
            cargo.env_remove(key.as_ref());
        }
    }
    cargo
        .args(["build", "--example", name])
        .env("CARGO_TARGET_DIR", target_dir)
        .current_dir(crate::repo_root());
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
