//! [`TcpProxy`]: a loopback TCP proxy in front of one server, so that a test can cut *one* session's
//! connection (and refuse its reconnects) without touching any other session.
//!
//! Three faults: [`TcpProxy::disconnect`] (every connection closed, new ones refused: a dead server
//! behind a live balancer), [`TcpProxy::reset`] (every connection reset with an RST, new ones
//! served), and [`TcpProxy::black_hole`] (nothing forwarded either way and nothing closed, new
//! connections accepted and held: a partition, where only timeouts tell), ended by
//! [`TcpProxy::restore`].
//!
//! It runs on its own thread and runtime: it outlives any one test's runtime when shared, and a
//! test's paused clock cannot stall it.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
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
    /// While true, no byte is forwarded either way and no connection is closed or opened.
    holes: watch::Sender<bool>,
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
            holes: watch::Sender::new(false),
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

    /// Resets every connection (RST, as a crashed middlebox or a rebooted peer would); new
    /// connections are served as before.
    pub fn reset(&self) {
        let mut gate = self.shared.gate.lock().unwrap();
        gate.cut.cancel();
        gate.cut = CancellationToken::new();
    }

    /// Stops forwarding without closing anything: bytes already read are held, nothing more is
    /// read, new connections are accepted and held too. Clients only notice by their timeouts.
    pub fn black_hole(&self) {
        self.shared.holes.send_replace(true);
    }

    /// Ends a [`TcpProxy::black_hole`]: what was held is forwarded, as after a healed partition.
    pub fn restore(&self) {
        self.shared.holes.send_replace(false);
    }

    /// Whether the proxy is a black hole now.
    pub fn is_black_hole(&self) -> bool {
        *self.shared.holes.borrow()
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
            let holes = shared.holes.subscribe();
            forward(inbound, target, cut, shutdown, holes).await;
            shared.active.send_modify(|n| *n -= 1);
        });
    }
}

/// Copies bytes both ways until either side closes, the cut (which resets the client's side), or
/// the proxy's shutdown; holds everything while the proxy is a black hole.
async fn forward(
    mut inbound: TcpStream,
    target: SocketAddr,
    cut: CancellationToken,
    shutdown: CancellationToken,
    holes: watch::Receiver<bool>,
) {
    let copied = async {
        // A connection that arrives in a black hole is held, not refused: it opens when it ends.
        open(holes.clone()).await;
        let Ok(outbound) = TcpStream::connect(target).await else {
            // The server is down: the client sees its connection close, as without a proxy.
            return;
        };
        let (mut in_read, mut in_write) = inbound.split();
        let (mut out_read, mut out_write) = outbound.into_split();
        tokio::select! {
            _ = pump(&mut in_read, &mut out_write, holes.clone()) => {}
            _ = pump(&mut out_read, &mut in_write, holes.clone()) => {}
        }
    };
    let was_cut = tokio::select! {
        () = copied => false,
        () = cut.cancelled() => true,
        () = shutdown.cancelled() => false,
    };
    if was_cut {
        // An RST rather than a FIN, as when a peer or a middlebox forgets the connection.
        zero_linger(&inbound);
    }
}

/// Makes closing `stream` send an RST. Best effort: the socket is closed either way.
fn zero_linger(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt reads `linger` for the call only; the descriptor is open (owned by
    // `stream`, which outlives the call).
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            std::ptr::addr_of!(linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// Returns once the proxy is not a black hole.
async fn open(mut holes: watch::Receiver<bool>) {
    // The sender lives as long as the proxy; if it is gone, so is the proxy.
    let _ = holes.wait_for(|hole| !*hole).await;
}

/// Copies `from` to `to`, each chunk only once the proxy is not a black hole.
async fn pump(
    from: &mut (impl AsyncReadExt + Unpin),
    to: &mut (impl AsyncWriteExt + Unpin),
    holes: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        open(holes.clone()).await;
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        open(holes.clone()).await;
        to.write_all(&buf[..n]).await?;
    }
}
