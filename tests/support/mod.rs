//! The test kit, the one way into the support code: a crate of its own (`tests/support/Cargo.toml`,
//! compiled once for every test binary and the bench), which each test file uses as `support`
//! (`#[macro_use] extern crate support;` where it calls `require!` or a test-table macro).
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`wait`] | `wait_until`: every wait on state, one failure message |
//! | [`namespace`], [`prelude`] | a registry namespace of a test's own; with tracing on and a temporary folder |
//! | [`peer`] | `require!(Peer::X)`: a missing peer is `skipped: <why>` outside CI, a failure under `CI=true` |
//! | [`cluster`] | in-process nodes whose handler records every item run ([`cluster::Recorder`]) |
//! | [`backend`], [`embedded`], [`zk`], [`conformance`] | the registry backends and the suite every one passes |
//! | [`events`] | engine events as a node emits them, fed to a history directly |
//! | [`policy_node`] | a node on ZooKeeper running one script job, with a SQLite history |
//! | [`script_runs`] | script jobs on ZooKeeper whose runs are read back as their scripts saw them |
//! | [`jobs_file`] | executable scripts and `SCRIPT` entries of a jobs file, for nodes as processes |
//! | [`chaos`], [`example_bin`] | example nodes as processes, faults, and the verdict on their log |
//! | [`step_log`] | workflow steps' scripts for node processes: start and end lines by workflow run, hold files |
//! | [`imports`] | `module_imports`: a directory's module import graph, read from its `use` lines and paths |
//! | [`java`], [`mixed`] | the Java ElasticJob peer, and scenarios shared with it |
//! | [`console`] | the console started on a test's registry, with its base URL |
//! | [`browser`], [`http`], [`smtp`], [`prometheus`], [`postgres`] | Chromium, a recording HTTP server, an SMTP sink, Prometheus, PostgreSQL |

pub mod backend;
pub mod browser;
pub mod chaos;
pub mod cluster;
pub mod conformance;
pub mod console;
pub mod embedded;
pub mod events;
pub mod example_bin;
pub mod gate;
pub mod http;
pub mod imports;
pub mod java;
pub mod jobs_file;
pub mod mirror;
pub mod mixed;
pub mod node_proc;
pub mod peer;
pub mod policy_node;
pub mod postgres;
pub mod prometheus;
pub mod script_runs;
pub mod smtp;
pub mod step_log;
pub mod wait;
pub mod zk;

pub use peer::Peer;

/// The repository's root (the shardcron package), for the files tests read and the programs they
/// build.
pub fn repo_root() -> &'static std::path::Path {
    let kit = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // tests/support -> the repository
    kit.parent()
        .and_then(std::path::Path::parent)
        .expect("the kit lies in <repository>/tests/support")
}

/// A registry namespace no other test of this process (or of a concurrent test binary) uses:
/// `{kind}-{test}-{pid}-{n}`.
pub fn namespace(kind: &str, test: &str) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{kind}-{test}-{}-{n}", std::process::id())
}

/// The prelude of a test on a registry with files of its own: tracing on, a temporary folder (gone
/// with the value) and a [`namespace`] of the test's own.
pub fn prelude(kind: &str, test: &str) -> (tempfile::TempDir, String) {
    cluster::init_tracing();
    let dir = tempfile::tempdir().expect("a temporary folder");
    (dir, namespace(kind, test))
}
