//! Serving an axum [`Router`] over HTTP/1.1 with hyper, within bounds.
//!
//! `axum::serve` takes no limits, so connections are accepted here and handed to hyper's HTTP/1
//! connection builder configured with them: a request head of at most [`MAX_HEAD_BYTES`] (larger
//! gets `431`), a head that must arrive within [`HEAD_TIMEOUT`] (an idle keep-alive connection is
//! closed after that long too), at most [`MAX_CONNECTIONS`] connections at once (further ones wait
//! in the listener's backlog), and a connection lives at most [`MAX_CONNECTION_AGE`] before it is
//! asked to close after its current response (which then has [`DRAIN_TIMEOUT`] to be written).
//! Malformed requests get hyper's `400`; keep-alive and `HEAD` are HTTP/1.1 as hyper implements it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The largest request head (request line and headers); hyper's smallest allowed read buffer.
pub(crate) const MAX_HEAD_BYTES: usize = 8 * 1024;
/// How long a client may take to send a request head, and how long a connection may sit idle
/// between requests.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one connection may be kept alive in all.
pub(crate) const MAX_CONNECTION_AGE: Duration = Duration::from_secs(120);
/// How long a connection asked to close (age, shutdown) has to finish its response.
pub(crate) const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once.
pub(crate) const MAX_CONNECTIONS: usize = 32;

/// Accepts connections on `listener` until `stop` fires, answering each with `router`. Open
/// connections are asked to close when `stop` fires.
pub(crate) async fn serve(listener: TcpListener, router: Router, stop: CancellationToken) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES)
        .keep_alive(true);
    loop {
        let permit = tokio::select! {
            _ = stop.cancelled() => return,
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
        };
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, peer)) => {
                let (builder, router, stop) = (builder.clone(), router.clone(), stop.clone());
                tokio::spawn(async move {
                    serve_connection(builder, stream, peer, router, stop).await;
                    drop(permit);
                });
            }
            // Accept errors (out of file descriptors, a reset before accept) concern one
            // connection; keep listening.
            Err(e) => tracing::debug!(error = %e, "accept failed"),
        }
    }
}

async fn serve_connection(
    builder: http1::Builder,
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    stop: CancellationToken,
) {
    // Handlers that care who asks (the console slows a client guessing tokens) read the peer
    // as axum's `ConnectInfo`.
    let service = TowerToHyperService::new(router);
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        hyper::service::Service::call(&service, request)
    });
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        // A client that goes away mid-request is no error of ours.
        done = conn.as_mut() => {
            if let Err(e) = done {
                tracing::debug!(error = %e, "operations connection ended with an error");
            }
            return;
        }
        _ = stop.cancelled() => {}
        _ = tokio::time::sleep(MAX_CONNECTION_AGE) => {}
    }
    conn.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, conn).await;
}
