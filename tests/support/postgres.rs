//! A PostgreSQL server started by a test (the Debian `postgresql` package; `scripts/test` installs
//! it). The server runs as the `postgres` user when the tests run as root (PostgreSQL refuses
//! root), on a free loopback port with its socket in a temporary directory, and dies with the test
//! process (`PR_SET_PDEATHSIG`) or when the test drops it.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

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
    /// Initialises a cluster in a temporary directory and starts it; waits until it accepts
    /// connections.
    pub fn start() -> PgServer {
        let bin = pg_bin_dir();
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
        let mut child = spawn_from_spawner(postgres);

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

/// The newest `/usr/lib/postgresql/{version}/bin` holding a server. Panics, saying how to fix it,
/// when there is none: the tests never skip.
fn pg_bin_dir() -> PathBuf {
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
    match found.pop() {
        Some((_, bin)) => bin,
        None => panic!(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres); run \
             `scripts/test`, which installs the Debian `postgresql` package"
        ),
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

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("binding a free loopback port")
}

type SpawnRequest = (Command, Sender<std::io::Result<Child>>);

/// Spawns `cmd` from a thread that lives as long as the test process, with `PDEATHSIG = SIGKILL`:
/// the kernel sends the signal when the thread that forked the child ends, so a test's own thread
/// would take the server down with it as soon as that test finished.
fn spawn_from_spawner(mut cmd: Command) -> Child {
    static SPAWNER: OnceLock<Mutex<Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("pg-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("starting the PostgreSQL spawner thread");
        Mutex::new(tx)
    });
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent. std runs this after
    // switching to the server user, and a credential change would clear the signal.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let (reply_tx, reply_rx) = mpsc::channel();
    spawner
        .lock()
        .unwrap()
        .send((cmd, reply_tx))
        .expect("the spawner thread lives as long as the process");
    reply_rx
        .recv()
        .expect("the spawner thread answers")
        .expect("spawning the PostgreSQL server")
}
