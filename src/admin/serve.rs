//! Serving an axum [`Router`] over HTTP/1.1 with hyper, within bounds, so that no client, slow or
//! greedy, can keep the others (or a health probe) out.
//!
//! `axum::serve` takes no limits, so connections are accepted here, always (a full server does
//! not leave new connections in the listener's backlog, where a probe would time out), and each
//! goes through two stages:
//!
//! 1. **Waiting for its request head**, which must arrive within [`HEAD_TIMEOUT`] and fit in
//!    [`MAX_HEAD_BYTES`] (`408` or `431` otherwise). A waiting connection holds no slot, only a
//!    place among [`MAX_WAITING`] (at most [`MAX_WAITING_PER_CLIENT`] from one IP address);
//!    beyond them a new connection is closed at once.
//! 2. **Served**, once its head is complete. A health probe (`GET` or `HEAD` of a path the server
//!    was given as a probe path, the admin server's `/healthz` and `/readyz`) takes a free slot if
//!    there is one, and is otherwise answered at once, that one request, without a slot: probes
//!    keep answering while slow or greedy clients hold every slot. Any other request needs one
//!    of [`MAX_CONNECTIONS`] slots, at most
//!    [`MAX_CONNECTIONS_PER_CLIENT`] of them for one IP address, waited for up to [`SLOT_WAIT`]
//!    (`503` then). A slot's connection is kept alive: each further request head must arrive
//!    within [`HEAD_TIMEOUT`] too (an idle connection is closed after that long).
//!
//! Every request is answered within [`REQUEST_TIMEOUT`] (`503` otherwise); a request announcing a
//! body larger than [`MAX_BODY_BYTES`] gets `413` unread (axum's extractors bound any body they
//! read, 2 MB). A connection lives at most [`MAX_CONNECTION_AGE`] before it is asked to close
//! after its current response (which then has [`DRAIN_TIMEOUT`] to be written). Malformed requests
//! get hyper's `400`; keep-alive and `HEAD` are HTTP/1.1 as hyper implements it.

mod conn;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::http::{header, HeaderValue, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::Service as _;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use conn::{bounded, is_probe, read_head, refuse, Prefixed};

/// The largest request head (request line and headers); hyper's smallest allowed read buffer.
pub(crate) const MAX_HEAD_BYTES: usize = 8 * 1024;
/// How long a client may take to send a request head, and how long a connection may sit idle
/// between requests.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a request may take to be answered (its response head).
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest request body announced with `Content-Length`.
pub(crate) const MAX_BODY_BYTES: u64 = 1024 * 1024;
/// How long one connection may be kept alive in all.
pub(crate) const MAX_CONNECTION_AGE: Duration = Duration::from_secs(120);
/// How long a connection asked to close (age, shutdown) has to finish its response.
pub(crate) const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once (slots).
pub(crate) const MAX_CONNECTIONS: usize = 32;
/// Slots one IP address may hold at once.
pub(crate) const MAX_CONNECTIONS_PER_CLIENT: usize = 8;
/// Connections waiting for their request head (or answering a probe) at once.
pub(crate) const MAX_WAITING: usize = 1024;
/// Waiting connections from one IP address.
pub(crate) const MAX_WAITING_PER_CLIENT: usize = 512;
/// How long a complete request waits for a slot.
pub(crate) const SLOT_WAIT: Duration = Duration::from_secs(5);

/// The admin server's probe paths, answered without a slot.
pub(crate) const HEALTH_PROBES: &[&str] = &["/healthz", "/readyz"];

/// Accepts connections on `listener` until `stop` fires, answering each with `router`; no path is
/// a probe. Open connections are asked to close when `stop` fires.
pub(crate) async fn serve(listener: TcpListener, router: Router, stop: CancellationToken) {
    serve_with_probes(listener, router, &[], stop).await;
}

/// As [`serve`], answering `GET`/`HEAD` of the `probes` paths without a slot.
pub(crate) async fn serve_with_probes(
    listener: TcpListener,
    router: Router,
    probes: &'static [&'static str],
    stop: CancellationToken,
) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES)
        .keep_alive(true);
    let server = Arc::new(Server {
        builder,
        router,
        probes,
        stop,
        slots: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
        waiting: Arc::new(Semaphore::new(MAX_WAITING)),
        clients: Mutex::new(HashMap::new()),
        freed: Notify::new(),
    });
    loop {
        let accepted = tokio::select! {
            _ = server.stop.cancelled() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, peer)) => {
                // Over the bounds: closed at once, so that it does not wait in the backlog.
                let Some(waiting) = server.admit(peer.ip()) else {
                    drop(stream);
                    continue;
                };
                tokio::spawn(server.clone().handle(stream, peer, waiting));
            }
            // Accept errors (out of file descriptors, a reset before accept) concern one
            // connection; keep listening, after a breath if the process is out of descriptors.
            Err(e) => {
                tracing::debug!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// What every connection of one server shares.
struct Server {
    builder: http1::Builder,
    router: Router,
    probes: &'static [&'static str],
    stop: CancellationToken,
    slots: Arc<Semaphore>,
    waiting: Arc<Semaphore>,
    /// Waiting connections and slots per IP address (entries removed at zero).
    clients: Mutex<HashMap<IpAddr, Held>>,
    /// Woken whenever a slot is given back.
    freed: Notify,
}

/// What one IP address holds.
#[derive(Debug, Default, Clone, Copy)]
struct Held {
    waiting: usize,
    slots: usize,
}

/// Which of an IP address's bounds a place counts against.
#[derive(Debug, Clone, Copy)]
enum Bound {
    /// Connections waiting for a slot ([`MAX_WAITING_PER_CLIENT`]).
    Waiting,
    /// Connections being served ([`MAX_CONNECTIONS_PER_CLIENT`]).
    Slot,
}

impl Held {
    fn count(&mut self, bound: Bound) -> &mut usize {
        match bound {
            Bound::Waiting => &mut self.waiting,
            Bound::Slot => &mut self.slots,
        }
    }
}

/// A place one IP address holds (a waiting place or a slot): given back when dropped, and a
/// freed slot wakes the connections waiting for one.
struct Place {
    server: Arc<Server>,
    ip: IpAddr,
    bound: Bound,
    _permit: OwnedSemaphorePermit,
}

/// A waiting place.
type Waiting = Place;

/// A slot.
type Slot = Place;

impl Drop for Place {
    fn drop(&mut self) {
        let bound = self.bound;
        self.server.release(self.ip, |h| *h.count(bound) -= 1);
        if let Bound::Slot = bound {
            self.server.freed.notify_waiters();
        }
    }
}

impl Server {
    fn clients(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Held>> {
        self.clients.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn release(&self, ip: IpAddr, change: impl FnOnce(&mut Held)) {
        let mut clients = self.clients();
        if let Some(held) = clients.get_mut(&ip) {
            change(held);
            if held.waiting == 0 && held.slots == 0 {
                clients.remove(&ip);
            }
        }
    }

    /// A place of `ip` against `bound`, if neither its share nor the whole pool is full.
    fn take(self: &Arc<Self>, ip: IpAddr, bound: Bound) -> Option<Place> {
        let (max, pool) = match bound {
            Bound::Waiting => (MAX_WAITING_PER_CLIENT, &self.waiting),
            Bound::Slot => (MAX_CONNECTIONS_PER_CLIENT, &self.slots),
        };
        let mut clients = self.clients();
        let held = clients.entry(ip).or_default().count(bound);
        if *held >= max {
            return None;
        }
        let permit = pool.clone().try_acquire_owned().ok()?;
        *held += 1;
        Some(Place {
            server: self.clone(),
            ip,
            bound,
            _permit: permit,
        })
    }

    /// A waiting place for a connection from `ip`, if the bounds allow one.
    fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Waiting> {
        self.take(ip, Bound::Waiting)
    }

    /// A slot for `ip` within its share, waiting up to [`SLOT_WAIT`].
    async fn slot(self: &Arc<Self>, ip: IpAddr) -> Option<Slot> {
        let deadline = tokio::time::Instant::now() + SLOT_WAIT;
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Some(slot) = self.try_slot(ip) {
                return Some(slot);
            }
            tokio::select! {
                () = freed => {}
                () = tokio::time::sleep_until(deadline) => return None,
            }
        }
    }

    fn try_slot(self: &Arc<Self>, ip: IpAddr) -> Option<Slot> {
        self.take(ip, Bound::Slot)
    }

    /// One connection: its head, then a probe's answer or a slot's service.
    async fn handle(self: Arc<Self>, mut stream: TcpStream, peer: SocketAddr, waiting: Waiting) {
        let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await {
            Ok(Ok(Some(head))) => head,
            Ok(Ok(None)) => {
                let _ = refuse(&mut stream, "431 Request Header Fields Too Large").await;
                return;
            }
            // Closed or reset before a whole head: nothing to answer.
            Ok(Err(_)) => return,
            Err(_) => {
                let _ = refuse(&mut stream, "408 Request Timeout").await;
                return;
            }
        };
        let probe = is_probe(&head, self.probes);
        let stream = Prefixed {
            prefix: head,
            at: 0,
            inner: stream,
        };
        let ip = waiting.ip;
        // A probe takes a free slot if there is one (and may then go on as any connection); in a
        // full server it is answered, that one request, without one.
        let slot = if probe {
            self.try_slot(ip)
        } else {
            self.slot(ip).await
        };
        let Some(slot) = slot else {
            if probe {
                let mut builder = self.builder.clone();
                builder.keep_alive(false);
                self.serve_connection(builder, stream, peer).await;
                return;
            }
            let mut stream = stream.inner;
            let _ = refuse(&mut stream, "503 Service Unavailable").await;
            return;
        };
        drop(waiting);
        self.serve_connection(self.builder.clone(), stream, peer)
            .await;
        drop(slot);
    }

    async fn serve_connection(&self, builder: http1::Builder, stream: Prefixed, peer: SocketAddr) {
        let inner = TowerToHyperService::new(self.router.clone());
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            // Handlers that care who asks (the console slows a client guessing tokens) read the
            // peer as axum's `ConnectInfo`.
            request.extensions_mut().insert(ConnectInfo(peer));
            let answer = bounded(&inner, request);
            async move { Ok::<_, std::convert::Infallible>(answer.await) }
        });
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        tokio::pin!(conn);
        tokio::select! {
            // A client that goes away mid-request is no error of ours.
            done = conn.as_mut() => {
                if let Err(e) = done {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            _ = self.stop.cancelled() => {}
            _ = tokio::time::sleep(MAX_CONNECTION_AGE) => {}
        }
        conn.as_mut().graceful_shutdown();
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, conn).await;
    }
}
