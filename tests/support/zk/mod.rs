//! A real ZooKeeper for tests: one [`ZkServer`] per test binary ([`server`]), a [`TcpProxy`] per
//! session that a test wants to cut, and [`ZkBackend`], the conformance [`Backend`] over both.
//!
//! ```text
//!   test ── ZkConnector ───────────────────────────┐
//!   test ── ZkConnector ── TcpProxy (one session) ─┴── ZkServer (java, 127.0.0.1:port)
//! ```
//!
//! Expiry uses the standard trick: a second client attaches to the session with its id and password
//! and closes it, which ends the session on the server as a timeout would.

pub mod proxied;
pub mod proxy;
pub mod server;
pub mod tls;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use shardcron::registry::zookeeper::{ZkConfig, ZkConnector};
use shardcron::registry::{Connector, Registry, SessionState};
use tokio::sync::watch;
use zookeeper_client as zk;

pub use self::proxied::ProxiedSession;
pub use self::proxy::TcpProxy;
pub use self::server::ZkServer;
use super::backend::{Backend, SessionControl, TestSession};
use super::wait::wait_until_changed;

/// How long a fault control may wait for the session to notice before the test fails.
const NOTICE: Duration = Duration::from_secs(30);

/// The server shared by every test of this binary, started on first use.
///
/// It is started from a plain thread, so that nothing of it depends on the runtime of the test that
/// happened to come first. Each test uses its own namespace.
pub fn server() -> &'static ZkServer {
    static SERVER: OnceLock<ZkServer> = OnceLock::new();
    SERVER.get_or_init(|| match std::thread::spawn(ZkServer::start).join() {
        Ok(server) => server,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// The shared server as a conformance backend, with short sessions.
pub fn backend() -> ZkBackend {
    ZkBackend {
        server: server(),
        session_timeout: Duration::from_secs(5),
        call_timeout: Duration::from_secs(5),
    }
}

/// A ZooKeeper server under test. Sessions from [`Backend::open`] go through a proxy of their own.
#[derive(Debug, Clone, Copy)]
pub struct ZkBackend {
    server: &'static ZkServer,
    session_timeout: Duration,
    call_timeout: Duration,
}

impl ZkBackend {
    /// The server.
    pub fn server(&self) -> &'static ZkServer {
        self.server
    }

    /// Sessions ask for this timeout (the server allows 400 ms to 60 s).
    pub fn with_session_timeout(self, timeout: Duration) -> Self {
        Self {
            session_timeout: timeout,
            ..self
        }
    }

    /// Every call is bounded by this.
    pub fn with_call_timeout(self, timeout: Duration) -> Self {
        Self {
            call_timeout: timeout,
            ..self
        }
    }

    /// A config that reaches the server directly.
    pub fn config(&self, namespace: &str) -> ZkConfig {
        self.config_via(&self.server.connect_string(), namespace)
    }

    /// A config that reaches the server through `connect` (a proxy, or a list of hosts).
    pub fn config_via(&self, connect: &str, namespace: &str) -> ZkConfig {
        ZkConfig::new(connect, namespace)
            .expect("test connect string and namespace are valid")
            .with_session_timeout(self.session_timeout)
            .with_connection_timeout(self.session_timeout / 2)
            .with_call_timeout(self.call_timeout)
            .expect("test call timeout is not zero")
    }

    /// Opens a session through a fresh proxy and keeps the concrete types.
    pub async fn open_zk(&self, namespace: &str) -> ZkTestSession {
        let proxy = Arc::new(TcpProxy::start(self.server.addr()));
        let connector = ZkConnector::new(self.config_via(&proxy.addr().to_string(), namespace));
        let session = connector
            .connect_session()
            .await
            .unwrap_or_else(|e| panic!("opening a session through proxy {proxy:?}: {e}"));
        let control = ZkSessionControl {
            server: self.server.addr(),
            zk_session: session.zookeeper_session(),
            state: session.session_state(),
            proxy,
        };
        ZkTestSession {
            session: Arc::new(ProxiedSession {
                session: Arc::new(session),
                proxy: control.proxy.clone(),
            }),
            control,
        }
    }
}

/// A session opened through its own proxy, with its controls.
#[derive(Debug)]
pub struct ZkTestSession {
    /// The session (`.session` for the [`ZkSession`] itself); it keeps its proxy alive.
    pub session: Arc<ProxiedSession>,
    /// Its fault controls.
    pub control: ZkSessionControl,
}

/// Fault controls of one proxied session.
#[derive(Debug)]
pub struct ZkSessionControl {
    proxy: Arc<TcpProxy>,
    server: SocketAddr,
    zk_session: zk::SessionInfo,
    state: watch::Receiver<SessionState>,
}

impl ZkSessionControl {
    /// The session's proxy.
    pub fn proxy(&self) -> &TcpProxy {
        &self.proxy
    }

    /// Waits until the session reports `expected`, failing with what it reported instead.
    pub async fn wait_state(&self, expected: SessionState) {
        let mut state = self.state.clone();
        let check = |s: &SessionState| {
            assert!(
                *s == expected || !s.is_terminal(),
                "waiting for session state {expected:?}, it became {s:?}"
            );
            if *s == expected {
                Ok(())
            } else {
                Err(*s)
            }
        };
        let what = format!("session state {expected:?}");
        wait_until_changed(&mut state, check, &what, NOTICE).await;
    }
}

#[async_trait]
impl SessionControl for ZkSessionControl {
    async fn expire(&self) {
        // Hold the session's own connection down meanwhile, so that it cannot re-attach between
        // the second client's attach and its close.
        let was_cut = self.proxy.is_disconnected();
        self.proxy.disconnect().await;
        expire_session(self.server, self.zk_session.clone()).await;
        if !was_cut {
            self.proxy.reconnect();
            self.wait_state(SessionState::Expired).await;
        }
    }

    async fn disconnect(&self) {
        self.proxy.disconnect().await;
    }

    async fn reconnect(&self) {
        self.proxy.reconnect();
    }
}

/// A connector on namespace `ns` of the shared server.
pub fn connector(ns: &str) -> Arc<dyn Connector> {
    Arc::new(ZkConnector::new(backend().config(ns)))
}

#[async_trait]
impl Backend for ZkBackend {
    fn name(&self) -> &'static str {
        "zookeeper"
    }

    async fn connector(&self, namespace: &str) -> Arc<dyn Connector> {
        Arc::new(ZkConnector::new(self.config(namespace)))
    }

    async fn open(&self, namespace: &str) -> TestSession {
        let ZkTestSession { session, control } = self.open_zk(namespace).await;
        TestSession {
            registry: session as Arc<dyn Registry>,
            control: Box::new(control),
        }
    }
}

/// Ends `session` on the server at `server`: attaches a second client to it and closes that client.
/// A session that is already gone is fine.
pub async fn expire_session(server: SocketAddr, session: zk::SessionInfo) {
    let target = server.to_string();
    let attach = zk::Client::connector()
        .with_session(session)
        .with_fail_eagerly()
        .connect(&target);
    let client = match tokio::time::timeout(NOTICE, attach).await {
        Ok(Ok(client)) => client,
        Ok(Err(zk::Error::SessionExpired)) => return,
        Ok(Err(e)) => panic!("attaching to the session to expire it: {e}"),
        Err(_) => panic!("attaching to the session to expire it took over {NOTICE:?}"),
    };
    let mut state = client.state_watcher();
    drop(client);
    let closed = async {
        let mut s = state.state();
        while !s.is_terminated() {
            s = state.changed().await;
        }
    };
    tokio::time::timeout(NOTICE, closed)
        .await
        .unwrap_or_else(|_| panic!("the server did not close the session within {NOTICE:?}"));
}
