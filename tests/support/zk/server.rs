//! [`ZkServer`]: a real ZooKeeper 3.8 standalone server for tests, on a free loopback port with a
//! temporary data directory, that can be stopped and started again on the same port and data.
//!
//! The JVM is spawned from one long-lived "spawner" thread with `PR_SET_PDEATHSIG = SIGKILL`: the
//! kernel sends that signal when the *thread* that forked the child ends, so spawning from a test's
//! own thread would kill the server as soon as that test finished. The spawner lives as long as the
//! process, so the server dies with the test binary even when it panics or is killed.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::wait::wait_until_blocking;

/// Where Debian's `zookeeper` package puts the server jar; its manifest names its dependencies.
const DEBIAN_JAR: &str = "/usr/share/java/zookeeper.jar";
/// A logging binding, so that a server that fails to start says why in its log.
const SLF4J_SIMPLE: &str = "/usr/share/java/slf4j-simple.jar";
/// Netty jars that Debian's manifest leaves out and a TLS server needs.
const NETTY_EXTRA: [&str; 2] = [
    "/usr/share/java/netty-codec.jar",
    "/usr/share/java/netty-resolver.jar",
];
/// Sessions may be as short as 2 ticks: 400 ms.
const TICK_MS: u32 = 200;
/// How long a JVM may take to start serving on a loaded 2-core machine.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A ZooKeeper server process. Killed on drop.
#[derive(Debug)]
pub struct ZkServer {
    port: u16,
    secure_port: Option<u16>,
    dir: tempfile::TempDir,
    child: Mutex<Option<Child>>,
}

/// The TLS side of a server: its `secureClientPort` on Netty, with PEM key store and trust store.
#[derive(Debug, Clone)]
pub struct ServerTls {
    /// PEM holding the server's private key and certificate.
    pub key_store: PathBuf,
    /// PEM CA certificates that sign the clients' certificates.
    pub trust_store: PathBuf,
    /// Whether clients must present a certificate (`ssl.clientAuth=need`) or need not (`none`).
    pub client_auth: bool,
}

impl ZkServer {
    /// Starts a server and waits until it serves. Panics, saying how to fix it, when ZooKeeper is
    /// not installed: tests never skip.
    pub fn start() -> ZkServer {
        Self::start_with(None)
    }

    /// Starts a server that also serves TLS clients on a `secureClientPort` of its own (Netty, as
    /// ZooKeeper requires for TLS); the plain port stays for four-letter commands.
    pub fn start_tls(tls: &ServerTls) -> ZkServer {
        Self::start_with(Some(tls))
    }

    fn start_with(tls: Option<&ServerTls>) -> ZkServer {
        let mut classpath = classpath();
        if tls.is_some() {
            // Debian's jar manifest names netty's buffer, handler and transport, not the codec and
            // resolver jars the Netty connection factory needs as well.
            for jar in NETTY_EXTRA {
                if Path::new(jar).exists() {
                    classpath.push(':');
                    classpath.push_str(jar);
                }
            }
        }
        let dir = tempfile::Builder::new()
            .prefix("shardcron-zk-")
            .tempdir()
            .expect("creating the ZooKeeper data directory");
        let port = free_port();
        let secure_port = tls.map(|_| free_port());
        std::fs::create_dir_all(dir.path().join("data")).expect("creating dataDir");
        let mut config = format!(
            "tickTime={TICK_MS}\ninitLimit=10\nsyncLimit=5\ndataDir={data}\nclientPort={port}\n\
             clientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\n\
             maxClientCnxns=0\nminSessionTimeout={min}\nmaxSessionTimeout=60000\nforceSync=no\n",
            data = dir.path().join("data").display(),
            min = 2 * TICK_MS,
        );
        if let (Some(tls), Some(secure)) = (tls, secure_port) {
            config.push_str(&format!(
                "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
                 secureClientPort={secure}\nsecureClientPortAddress=127.0.0.1\n\
                 ssl.keyStore.location={key}\nssl.keyStore.type=PEM\n\
                 ssl.trustStore.location={trust}\nssl.trustStore.type=PEM\n\
                 ssl.clientAuth={auth}\n",
                key = tls.key_store.display(),
                trust = tls.trust_store.display(),
                auth = if tls.client_auth { "need" } else { "none" },
            ));
        }
        std::fs::write(dir.path().join("zoo.cfg"), config).expect("writing zoo.cfg");
        std::fs::write(dir.path().join("classpath"), classpath).expect("writing classpath");
        let server = ZkServer {
            port,
            secure_port,
            dir,
            child: Mutex::new(None),
        };
        server.resume();
        server
    }

    /// The client port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The client address.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// `127.0.0.1:{port}`.
    pub fn connect_string(&self) -> String {
        self.addr().to_string()
    }

    /// `tcp+tls://127.0.0.1:{secureClientPort}`, for a server started with [`ZkServer::start_tls`].
    pub fn tls_connect_string(&self) -> String {
        let port = self
            .secure_port
            .expect("the server was started with start_tls");
        format!("tcp+tls://127.0.0.1:{port}")
    }

    /// The data directory, kept across [`ZkServer::stop`] and [`ZkServer::resume`].
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Kills the server (SIGKILL, as a crash would) and waits for it to exit. Sessions stay alive
    /// in the data directory's view until they time out after a [`ZkServer::resume`].
    pub fn stop(&self) {
        if let Some(mut child) = self.child.lock().unwrap().take() {
            // Already gone is fine: the point is that it is not running.
            let _ = child.kill();
            child
                .wait()
                .expect("waiting for the killed ZooKeeper server");
        }
    }

    /// Starts the server again on the same port and data, and waits until it serves. Does nothing
    /// when it is running.
    pub fn resume(&self) {
        let mut slot = self.child.lock().unwrap();
        if slot.is_some() {
            return;
        }
        let log = std::fs::File::create(self.log_path()).expect("creating the server log");
        let main = "org.apache.zookeeper.server.ZooKeeperServerMain";
        *slot = Some(spawn_from_spawner(zookeeper_java(
            "256m",
            self.dir.path(),
            main,
            log,
        )));
        drop(slot);
        self.wait_serving();
    }

    /// [`ZkServer::stop`] then [`ZkServer::resume`].
    pub fn restart(&self) {
        self.stop();
        self.resume();
    }

    /// The server process's id while it runs (for its CPU time).
    pub fn pid(&self) -> Option<u32> {
        self.child.lock().unwrap().as_ref().map(Child::id)
    }

    /// Whether the process is running.
    pub fn is_running(&self) -> bool {
        let mut slot = self.child.lock().unwrap();
        match slot.as_mut().map(|c| c.try_wait()) {
            Some(Ok(None)) => true,
            Some(_) => {
                *slot = None;
                false
            }
            None => false,
        }
    }

    /// Sends a four-letter command (`srvr`, `cons`, `dump`, ...) and returns the answer.
    pub fn four_letter(&self, command: &str) -> std::io::Result<String> {
        let mut stream = TcpStream::connect_timeout(&self.addr(), Duration::from_secs(2))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.write_all(command.as_bytes())?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        Ok(answer)
    }

    /// The server's log so far (JVM output and warnings).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// Polls `srvr` until the server answers as a standalone server: the server is another process,
    /// so asking it is the only way to know.
    fn wait_serving(&self) {
        let check = || {
            let answer = self.four_letter("srvr");
            if answer
                .as_ref()
                .is_ok_and(|a| a.contains("Mode: standalone"))
            {
                return Ok(());
            }
            assert!(
                self.is_running(),
                "ZooKeeper server on port {} exited while starting; its log:\n{}",
                self.port,
                self.log()
            );
            Err(format!("srvr answers {answer:?}; the log:\n{}", self.log()))
        };
        let what = format!("the ZooKeeper server on port {} to serve", self.port);
        wait_until_blocking(check, &what, START_TIMEOUT);
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The server's classpath: `ZOOKEEPER_CLASSPATH` when set, else Debian's jar (whose manifest lists
/// its dependencies) plus a logging binding when one is installed.
fn classpath() -> String {
    if let Ok(cp) = std::env::var("ZOOKEEPER_CLASSPATH") {
        return cp;
    }
    if !Path::new(DEBIAN_JAR).exists() {
        panic!(
            "ZooKeeper is not installed ({DEBIAN_JAR} is missing): run `scripts/test`, which \
             installs the Debian `zookeeper` package, or set ZOOKEEPER_CLASSPATH"
        );
    }
    let mut cp = DEBIAN_JAR.to_owned();
    if Path::new(SLF4J_SIMPLE).exists() {
        cp.push(':');
        cp.push_str(SLF4J_SIMPLE);
    }
    cp
}

/// A port that was free a moment ago (the kernel picks it; the listener is closed at once).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("finding a free loopback port")
        .port()
}

type SpawnRequest = (Command, Sender<std::io::Result<Child>>);

/// Spawns `cmd` from the process-long spawner thread, with `PDEATHSIG = SIGKILL`.
fn spawn_from_spawner(cmd: Command) -> Child {
    match spawn_dying_with_process(cmd) {
        Ok(child) => child,
        Err(e) => panic!(
            "cannot run `java` for the ZooKeeper server ({e}); run `scripts/test`, which installs \
             the Debian `zookeeper` package and its Java runtime"
        ),
    }
}

/// Spawns `cmd` so that it dies with the test process (`PDEATHSIG = SIGKILL`, set from a
/// spawner thread that lives as long as the process), for every server a test starts.
pub fn spawn_dying_with_process(mut cmd: Command) -> std::io::Result<Child> {
    static SPAWNER: OnceLock<Mutex<Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("server-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("starting the server spawner thread");
        Mutex::new(tx)
    });
    die_with_spawning_thread(&mut cmd);
    let (reply_tx, reply_rx) = mpsc::channel();
    spawner
        .lock()
        .unwrap()
        .send((cmd, reply_tx))
        .expect("the spawner thread lives as long as the process");
    reply_rx.recv().expect("the spawner thread answers")
}

/// Makes the kernel kill `cmd`'s process (SIGKILL) when the thread that spawns it ends
/// (`PR_SET_PDEATHSIG`), so that a test's processes never outlive it.
pub fn die_with_spawning_thread(cmd: &mut Command) {
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A three-server ZooKeeper ensemble on loopback, each server with its own client, quorum and
/// election ports and data directory, so that a test can kill its leader and watch clients move.
///
/// Every server is spawned like [`ZkServer`] (from the spawner thread, with `PDEATHSIG`), and all
/// are killed on drop.
#[derive(Debug)]
pub struct ZkEnsemble {
    dir: tempfile::TempDir,
    members: Vec<EnsembleMember>,
}

/// One server of a [`ZkEnsemble`].
#[derive(Debug)]
struct EnsembleMember {
    client_port: u16,
    child: Mutex<Option<Child>>,
}

impl ZkEnsemble {
    /// How many servers an ensemble has.
    pub const SIZE: usize = 3;

    /// Starts three servers and waits until each serves as leader or follower.
    pub fn start() -> ZkEnsemble {
        let classpath = classpath();
        let dir = tempfile::Builder::new()
            .prefix("shardcron-zk-ensemble-")
            .tempdir()
            .expect("creating the ensemble's directory");
        // Ports are taken while every listener is still open, so that no two are the same.
        let listeners: Vec<TcpListener> = (0..3 * Self::SIZE)
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("finding a free loopback port"))
            .collect();
        let ports: Vec<u16> = listeners
            .iter()
            .map(|l| l.local_addr().expect("a bound listener's address").port())
            .collect();
        drop(listeners);
        let peers: String = (0..Self::SIZE)
            .map(|i| {
                format!(
                    "server.{}=127.0.0.1:{}:{}\n",
                    i + 1,
                    ports[3 * i + 1],
                    ports[3 * i + 2]
                )
            })
            .collect();
        let mut members = Vec::new();
        for i in 0..Self::SIZE {
            let home = dir.path().join(format!("server-{}", i + 1));
            let data = home.join("data");
            std::fs::create_dir_all(&data).expect("creating a member's dataDir");
            std::fs::write(data.join("myid"), format!("{}\n", i + 1)).expect("writing myid");
            let config = format!(
                "tickTime={TICK_MS}\ninitLimit=10\nsyncLimit=5\ndataDir={data}\nclientPort={port}\n\
                 clientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\n\
                 maxClientCnxns=0\nminSessionTimeout={min}\nmaxSessionTimeout=60000\nforceSync=no\n\
                 {peers}",
                data = data.display(),
                port = ports[3 * i],
                min = 2 * TICK_MS,
            );
            std::fs::write(home.join("zoo.cfg"), config).expect("writing a member's zoo.cfg");
            std::fs::write(home.join("classpath"), &classpath).expect("writing classpath");
            members.push(EnsembleMember {
                client_port: ports[3 * i],
                child: Mutex::new(None),
            });
        }
        let ensemble = ZkEnsemble { dir, members };
        for i in 0..Self::SIZE {
            ensemble.spawn(i);
        }
        for i in 0..Self::SIZE {
            ensemble.wait_serving(i);
        }
        ensemble
    }

    /// `127.0.0.1:{p1},127.0.0.1:{p2},127.0.0.1:{p3}`: every server, for clients.
    pub fn connect_string(&self) -> String {
        let hosts: Vec<String> = (0..Self::SIZE).map(|i| self.addr(i).to_string()).collect();
        hosts.join(",")
    }

    /// The client address of server `i` (0-based).
    pub fn addr(&self, i: usize) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.members[i].client_port))
    }

    /// Sends a four-letter command to server `i`.
    pub fn four_letter(&self, i: usize, command: &str) -> std::io::Result<String> {
        let mut stream = TcpStream::connect_timeout(&self.addr(i), Duration::from_secs(2))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.write_all(command.as_bytes())?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        Ok(answer)
    }

    /// The server's `Mode:` as `srvr` reports it (`leader`, `follower`), `None` when it does not
    /// answer or serves no clients yet.
    pub fn mode(&self, i: usize) -> Option<String> {
        let answer = self.four_letter(i, "srvr").ok()?;
        answer
            .lines()
            .find_map(|l| l.strip_prefix("Mode: "))
            .map(str::to_owned)
    }

    /// The index of the server that is the leader now, if one is.
    pub fn leader(&self) -> Option<usize> {
        (0..Self::SIZE).find(|&i| self.mode(i).as_deref() == Some("leader"))
    }

    /// The process id of server `i`, while it runs.
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.members[i]
            .child
            .lock()
            .unwrap()
            .as_ref()
            .map(Child::id)
    }

    /// Kills server `i` (SIGKILL) and waits for it to exit.
    pub fn kill(&self, i: usize) {
        if let Some(mut child) = self.members[i].child.lock().unwrap().take() {
            // Already gone is fine: the point is that it is not running.
            let _ = child.kill();
            child.wait().expect("waiting for a killed ensemble server");
        }
    }

    /// Starts server `i` again (after [`ZkEnsemble::kill`]) on its ports and data, and waits until
    /// it serves in the quorum. Does nothing when it is running.
    pub fn restart(&self, i: usize) {
        if self.is_running(i) {
            return;
        }
        self.spawn(i);
        self.wait_serving(i);
    }

    /// Whether server `i`'s process is running (stopped by SIGSTOP counts as running).
    pub fn is_running(&self, i: usize) -> bool {
        let mut slot = self.members[i].child.lock().unwrap();
        match slot.as_mut().map(|c| c.try_wait()) {
            Some(Ok(None)) => true,
            Some(_) => {
                *slot = None;
                false
            }
            None => false,
        }
    }

    /// Sends `signal` to every running server (SIGSTOP then SIGCONT pauses the whole ensemble, as
    /// a frozen VM host or a long stop-the-world would).
    pub fn signal_all(&self, signal: libc::c_int) {
        for member in &self.members {
            if let Some(child) = member.child.lock().unwrap().as_ref() {
                let pid = libc::pid_t::try_from(child.id()).expect("a pid fits pid_t");
                // SAFETY: kill(2) has no memory effects; the child is not reaped while it runs.
                unsafe { libc::kill(pid, signal) };
            }
        }
    }

    /// Waits until every running server serves in a quorum again (after a pause or a restart).
    pub fn wait_quorum(&self) {
        for i in 0..Self::SIZE {
            if self.is_running(i) {
                self.wait_serving(i);
            }
        }
    }

    /// The log of server `i` so far.
    pub fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.home(i).join("server.log")).unwrap_or_default()
    }

    fn home(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("server-{}", i + 1))
    }

    fn spawn(&self, i: usize) {
        let home = self.home(i);
        let log = std::fs::File::create(home.join("server.log")).expect("creating a member's log");
        let main = "org.apache.zookeeper.server.quorum.QuorumPeerMain";
        let cmd = zookeeper_java("192m", &home, main, log);
        *self.members[i].child.lock().unwrap() = Some(spawn_from_spawner(cmd));
    }

    /// Polls `srvr` until server `i` serves as a member of a quorum.
    fn wait_serving(&self, i: usize) {
        let check = || match self.mode(i) {
            Some(mode) if mode == "leader" || mode == "follower" => Ok(()),
            mode => Err(format!("mode {mode:?}; its log:\n{}", self.log(i))),
        };
        let what = format!(
            "ensemble server {} (port {}) to join a quorum",
            i + 1,
            self.members[i].client_port
        );
        wait_until_blocking(check, &what, START_TIMEOUT);
    }
}

impl Drop for ZkEnsemble {
    fn drop(&mut self) {
        for i in 0..Self::SIZE {
            self.kill(i);
        }
    }
}

/// Whether servers started from now on run as in production ([`compile_as_in_production`]).
static PRODUCTION: AtomicBool = AtomicBool::new(false);

/// Servers started from now on run as a production server does: their code compiled by both of
/// the JVM's JIT tiers (C1, then C2 for the hot paths), on a heap of 1 GiB (room for the data),
/// their garbage collections in their log. The benches ask for it; the tests do not: the first
/// tier alone starts a server sooner, while a server under sustained load runs its code two to
/// three times slower so.
pub fn compile_as_in_production() {
    PRODUCTION.store(true, Ordering::Relaxed);
}

/// The `java` command running ZooKeeper's `main` class with a heap of `heap` (of 1 GiB in
/// production, [`compile_as_in_production`]), on the classpath and `zoo.cfg` of `home`, its
/// output to `log`.
fn zookeeper_java(heap: &str, home: &Path, main: &str, log: std::fs::File) -> Command {
    let mut cmd = Command::new("java");
    cmd.arg("-XX:+UseSerialGC");
    if PRODUCTION.load(Ordering::Relaxed) {
        // A heap with room for the data, and its collections in the server's log.
        cmd.args(["-Xmx1g", "-Xlog:gc:stdout"]);
    } else {
        cmd.arg(format!("-Xmx{heap}"))
            .arg("-XX:TieredStopAtLevel=1");
    }
    cmd.arg("-Djava.net.preferIPv4Stack=true")
        .arg("-Dzookeeper.admin.enableServer=false")
        .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
        .arg("-cp")
        .arg(std::fs::read_to_string(home.join("classpath")).unwrap())
        .arg(main)
        .arg(home.join("zoo.cfg"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    cmd
}
