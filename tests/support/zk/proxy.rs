//! [`TcpProxy`]: a loopback TCP proxy in front of one server, so that a test can cut *one* session's
//! connection (and refuse its reconnects) without touching any other session.
//!
//! It runs on its own thread and runtime: it outlives any one test's runtime when shared, and a
//! test's paused clock cannot stall it.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How long a cut may take before the test fails.
const CUT_TIMEOUT: Duration = Duration::from_secs(10);

/// A proxy from a loopback port to `target`. Stops (and cuts everything) on drop.
#[derive(Debug)]
pub struct TcpProxy {
    addr: SocketAddr,
    target: SocketAddr,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
}

#[derive(Debug)]
struct Shared {
    gate: Mutex<Gate>,
    /// Connections accepted and not yet closed.
    active: watch::Sender<usize>,
}

#[derive(Debug)]
struct Gate {
    refusing: bool,
    /// Cancelled to cut every connection that exists now; replaced after each cut.
    cut: CancellationToken,
}

impl TcpProxy {
    /// Starts a proxy to `target` on a free loopback port.
    pub fn start(target: SocketAddr) -> TcpProxy {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").expect("binding the proxy's loopback port");
        listener
            .set_nonblocking(true)
            .expect("non-blocking proxy listener");
        let addr = listener.local_addr().expect("proxy address");
        let shared = Arc::new(Shared {
            gate: Mutex::new(Gate {
                refusing: false,
                cut: CancellationToken::new(),
            }),
            active: watch::Sender::new(0),
        });
        let shutdown = CancellationToken::new();
        let (s, stop) = (shared.clone(), shutdown.clone());
        std::thread::Builder::new()
            .name(format!("zk-proxy-{}", addr.port()))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("building the proxy runtime");
                runtime.block_on(serve(listener, target, s, stop));
            })
            .expect("starting the proxy thread");
        TcpProxy {
            addr,
            target,
            shared,
            shutdown,
        }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where the proxy forwards to.
    pub fn target(&self) -> SocketAddr {
        self.target
    }

    /// Closes every connection and refuses new ones (they are accepted and closed at once, as a
    /// dead server behind a live load balancer would). Returns once every connection is closed.
    pub async fn disconnect(&self) {
        {
            let mut gate = self.shared.gate.lock().unwrap();
            gate.refusing = true;
            gate.cut.cancel();
            gate.cut = CancellationToken::new();
        }
        let mut active = self.shared.active.subscribe();
        let closed = async { active.wait_for(|n| *n == 0).await.map(|_| ()) };
        match tokio::time::timeout(CUT_TIMEOUT, closed).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => panic!("proxy {} stopped while cutting connections", self.addr),
            Err(_) => panic!(
                "proxy {}: connections still open {CUT_TIMEOUT:?} after the cut",
                self.addr
            ),
        }
    }

    /// Accepts and forwards new connections again.
    pub fn reconnect(&self) {
        self.shared.gate.lock().unwrap().refusing = false;
    }

    /// Whether new connections are refused.
    pub fn is_disconnected(&self) -> bool {
        self.shared.gate.lock().unwrap().refusing
    }

    /// Connections open now.
    pub fn active_connections(&self) -> usize {
        *self.shared.active.borrow()
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn serve(
    listener: std::net::TcpListener,
    target: SocketAddr,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
) {
    let listener = TcpListener::from_std(listener).expect("registering the proxy listener");
    loop {
        let inbound = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of descriptors or similar: the client will retry, as it would after any
                // connection failure.
                Err(_) => continue,
            },
        };
        let cut = {
            let gate = shared.gate.lock().unwrap();
            if gate.refusing {
                drop(inbound);
                continue;
            }
            // Counted under the lock, so that a concurrent `disconnect` waits for this one too.
            shared.active.send_modify(|n| *n += 1);
            gate.cut.clone()
        };
        let (shared, shutdown) = (shared.clone(), shutdown.clone());
        tokio::spawn(async move {
            forward(inbound, target, cut, shutdown).await;
            shared.active.send_modify(|n| *n -= 1);
        });
    }
}

/// Copies bytes both ways until either side closes, the cut, or the proxy's shutdown.
async fn forward(
    mut inbound: TcpStream,
    target: SocketAddr,
    cut: CancellationToken,
    shutdown: CancellationToken,
) {
    let Ok(mut outbound) = TcpStream::connect(target).await else {
        // The server is down: the client sees its connection close, as it would without a proxy.
        return;
    };
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
        () = cut.cancelled() => {}
        () = shutdown.cancelled() => {}
    }
}
