//! The real programs some tests run beside shardcron ([`Peer`]), and the one rule for a missing
//! one: outside CI the test prints `skipped: <reason>` and returns; under `CI=true` it fails.
//!
//! ```text
//!   #[test] fn t() { let zk = require!(Peer::ZooKeeper); ... }
//!              │
//!              ├─ found ─────────────► the peer's path, the test runs
//!              ├─ missing, CI=true ──► panic naming the peer and the fix
//!              └─ missing, else ─────► "skipped: t: <why>" on stderr (past the test harness's
//!                                      capture, so scripts/test counts it), test returns
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

/// A program a test needs that the crate does not build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// The Java ElasticJob-Lite 3.x peer (`$SHARDCRON_ELASTICJOB_PEER`, else
    /// `../shared/elasticjob-peer` beside the repository): its directory.
    ElasticJob,
    /// Java, javac and Debian's Quartz 2 jar: the jar.
    Quartz,
    /// Debian's ZooKeeper server jar and a Java runtime (or `$ZOOKEEPER_CLASSPATH`): the jar.
    ZooKeeper,
    /// A PostgreSQL server under `/usr/lib/postgresql/*/bin`: that directory (the newest).
    PostgreSql,
    /// Prometheus and promtool: the server's binary.
    Prometheus,
    /// Chromium and chromedriver on `PATH`: chromedriver.
    Chromium,
}

impl Peer {
    /// Where the peer is, or why it is not usable and how to get it.
    pub fn locate(self) -> Result<PathBuf, String> {
        const APT: &str = "scripts/test installs it with apt-get";
        match self {
            Peer::ElasticJob => {
                let dir = std::env::var_os("SHARDCRON_ELASTICJOB_PEER")
                    .filter(|d| !d.is_empty())
                    .map(PathBuf::from)
                    .unwrap_or_else(|| {
                        crate::repo_root().join("../shared/elasticjob-peer")
                    });
                let usable = dir.join("run-instance").is_file()
                    && dir.join("elasticjob-peer.jar").is_file();
                usable.then_some(dir.clone()).ok_or_else(|| {
                    format!(
                        "no Java ElasticJob peer at {} (set SHARDCRON_ELASTICJOB_PEER to its \
                         directory)",
                        dir.display()
                    )
                })
            }
            Peer::Quartz => {
                let jar = ["/usr/share/java/quartz2.jar", "/usr/share/java/quartz.jar"]
                    .iter()
                    .map(PathBuf::from)
                    .find(|p| p.is_file());
                match (jar, which("java"), which("javac")) {
                    (Some(jar), Some(_), Some(_)) => Ok(jar),
                    _ => Err(format!(
                        "no java, javac or /usr/share/java/quartz2.jar (Debian packages \
                         default-jdk-headless, libquartz2-java; {APT})"
                    )),
                }
            }
            Peer::ZooKeeper => {
                if std::env::var_os("ZOOKEEPER_CLASSPATH").is_some() && which("java").is_some() {
                    return Ok(PathBuf::from("ZOOKEEPER_CLASSPATH"));
                }
                let jar = Path::new("/usr/share/java/zookeeper.jar");
                match (jar.is_file(), which("java")) {
                    (true, Some(_)) => Ok(jar.to_owned()),
                    _ => Err(format!(
                        "no ZooKeeper ({} or java is missing; Debian package zookeeper; {APT}; \
                         or set ZOOKEEPER_CLASSPATH)",
                        jar.display()
                    )),
                }
            }
            Peer::PostgreSql => postgres_bin_dir().ok_or_else(|| {
                format!("no PostgreSQL (/usr/lib/postgresql/*/bin/postgres; Debian package postgresql; {APT})")
            }),
            Peer::Prometheus => match (which("prometheus"), which("promtool")) {
                (Some(server), Some(_)) => Ok(server),
                _ => Err(format!(
                    "no prometheus or promtool on PATH (Debian package prometheus; {APT})"
                )),
            },
            Peer::Chromium => match (which("chromium"), which("chromedriver")) {
                (Some(_), Some(driver)) => Ok(driver),
                _ => Err(format!(
                    "no chromium or chromedriver on PATH (Debian packages chromium, \
                     chromium-driver; {APT})"
                )),
            },
        }
    }
}

/// Whether this run is CI's: `CI=true`, where a missing peer fails the test.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The peer's path ([`Peer::locate`]); when it is missing, `None` after printing
/// `skipped: <test>: <why>` outside CI, and a panic under `CI=true`. Tests use [`require!`],
/// which returns from the test on `None`.
pub fn require(peer: Peer) -> Option<PathBuf> {
    match peer.locate() {
        Ok(path) => Some(path),
        Err(why) => {
            skip(&why);
            None
        }
    }
}

/// Outside CI: prints `skipped: <test>: <why>`, past the harness's output capture (one write, so
/// lines of tests running in parallel do not mix). Under `CI=true`: fails the test with `why`.
pub fn skip(why: &str) {
    assert!(
        !under_ci(),
        "CI=true, so a missing peer fails the test: {why}"
    );
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    // `eprintln!` would be captured by the test harness and shown only on failure.
    let line = format!("\nskipped: {test}: {why}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// The peer's path, or a return from the calling test (after [`require`] said why).
#[macro_export]
macro_rules! require {
    ($peer:expr) => {
        match $crate::peer::require($peer) {
            Some(path) => path,
            None => return,
        }
    };
}

/// Finds a program on `PATH`.
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

/// The newest `/usr/lib/postgresql/{version}/bin` holding a server and `initdb`.
fn postgres_bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            (bin.join("postgres").is_file() && bin.join("initdb").is_file())
                .then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}
