//! A PostgreSQL server started by a test (the Debian `postgresql` package; `scripts/test` installs
//! it). The server runs as the `postgres` user when the tests run as root (PostgreSQL refuses
//! root), on a free loopback port with its socket in a temporary directory, and dies with the test
//! process (`PR_SET_PDEATHSIG`) or when the test drops it.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::zk::server::{free_port, spawn_dying_with_process};

/// How long PostgreSQL may take to initialise and start on a loaded 2-core machine.
const PG_START_TIMEOUT: Duration = Duration::from_secs(120);

/// A PostgreSQL server for one test: a fresh cluster in a temporary directory, trust
/// authentication for the `shardcron` role on loopback. Killed on drop.
#[derive(Debug)]
pub struct PgServer {
    port: u16,
    child: Child,
    log: Arc<Mutex<String>>,
    _dir: tempfile::TempDir,
}

impl PgServer {
    /// Initialises a cluster in a temporary directory and starts it from `bin` (the directory
    /// `require!(Peer::PostgreSql)` found); waits until it accepts connections.
    pub fn start(bin: &Path) -> PgServer {
        let dir = tempfile::Builder::new()
            .prefix("shardcron-pg-")
            .tempdir()
            .expect("creating the PostgreSQL directory");
        let owner = server_user();
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                .expect("handing the PostgreSQL directory to the postgres user");
        }
        let data = dir.path().join("data");
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args(["-U", "shardcron", "--auth=trust", "--no-sync", "-E", "UTF8"])
            .args(["--locale=C"]);
        as_server_user(&mut initdb, owner, dir.path());
        let out = initdb.output().expect("running initdb");
        assert!(
            out.status.success(),
            "initdb failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );

        let port = free_port();
        let mut postgres = Command::new(bin.join("postgres"));
        postgres
            .arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(dir.path())
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-F"])
            .args(["-c", "logging_collector=off", "-c", "max_connections=30"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        as_server_user(&mut postgres, owner, dir.path());
        let mut child = spawn_dying_with_process(postgres).expect("spawning the PostgreSQL server");

        // The server says when it accepts connections: wait for that line, not for a timer.
        let log = Arc::new(Mutex::new(String::new()));
        let (ready_tx, ready_rx) = mpsc::channel();
        let stderr = child.stderr.take().expect("stderr is piped");
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.contains("ready to accept connections") {
                    let _ = ready_tx.send(());
                }
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let server = PgServer {
            port,
            child,
            log,
            _dir: dir,
        };
        if ready_rx.recv_timeout(PG_START_TIMEOUT).is_err() {
            panic!(
                "PostgreSQL did not start on port {port}:\n{}",
                server.log.lock().unwrap()
            );
        }
        server
    }

    /// The URL of its `postgres` database as the `shardcron` role.
    pub fn url(&self) -> String {
        format!("postgres://shardcron@127.0.0.1:{}/postgres", self.port)
    }

    /// A server started from `bin` (as [`PgServer::start`]) and a history on it, its tables made.
    pub async fn with_history(bin: &Path) -> (PgServer, shardcron::history::History) {
        let server = PgServer::start(bin);
        let history = shardcron::history::History::postgres(&server.url())
            .await
            .expect("the PostgreSQL history connects");
        (server, history)
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        // SIGQUIT is PostgreSQL's immediate shutdown: unlike SIGKILL, the postmaster still removes
        // its shared memory segment on the way out.
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid fits pid_t");
        // SAFETY: signalling our own child, which has not been reaped yet.
        if unsafe { libc::kill(pid, libc::SIGQUIT) } != 0 {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// The `postgres` user's ids when running as root (PostgreSQL refuses to run as root); `None`
/// otherwise: the server then runs as the current user.
fn server_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").expect("reading /etc/passwd");
    let ids = passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&"postgres") && fields.len() > 3)
            .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
            .flatten()
    });
    match ids {
        Some(ids) => Some(ids),
        None => panic!(
            "running as root and there is no `postgres` user to run PostgreSQL as; the Debian \
             `postgresql` package creates it (run `scripts/test`)"
        ),
    }
}

fn as_server_user(cmd: &mut Command, owner: Option<(u32, u32)>, home: &Path) {
    if let Some((uid, gid)) = owner {
        cmd.uid(uid).gid(gid);
    }
    // Root's home and the caller's locale are not the server user's business.
    cmd.current_dir(home).env("HOME", home).env("LC_ALL", "C");
}
