//! A tiny HTTP/1.1 server for the operations endpoints: one `GET` per connection, answered with
//! `Connection: close`.
//!
//! Hand-rolled because the endpoints need a request line and nothing else: a full HTTP stack
//! (hyper and its companions) would cost more compile time on a small build machine than the
//! whole admin layer. The request head is bounded ([`MAX_HEAD_BYTES`]) and must arrive within
//! [`READ_TIMEOUT`], so a slow or hostile client holds one task for a bounded time; at most
//! [`MAX_CONNECTIONS`] connections are served at once.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The largest request head (request line and headers) read; a larger one gets 431.
pub(crate) const MAX_HEAD_BYTES: usize = 8 * 1024;
/// How long a client may take to send its request head.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long writing a response may take before the connection is dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long, and how many bytes, a closing connection waits for the client's leftover input.
const LINGER_TIME: Duration = Duration::from_secs(1);
/// See [`LINGER_TIME`].
const LINGER_BYTES: usize = 64 * 1024;
/// Connections served at once; further ones wait in the listener's backlog.
pub(crate) const MAX_CONNECTIONS: usize = 32;

/// A parsed `GET` request: the path and the query string, nothing else is needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    /// The method, as sent.
    pub(crate) method: String,
    /// The path, without the query.
    pub(crate) path: String,
    /// The query string after `?`, empty when there is none.
    pub(crate) query: String,
}

impl Request {
    /// The value of query parameter `name` (first occurrence), undecoded.
    pub(crate) fn query_param(&self, name: &str) -> Option<&str> {
        self.query
            .split('&')
            .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    }
}

/// A response: status, content type and a body sent whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Response {
    /// The status code.
    pub(crate) status: u16,
    /// The `Content-Type`.
    pub(crate) content_type: &'static str,
    /// The body.
    pub(crate) body: String,
}

impl Response {
    /// A `text/plain` response.
    pub(crate) fn text(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into(),
        }
    }

    /// An `application/json` response.
    pub(crate) fn json(status: u16, body: String) -> Self {
        Self {
            status,
            content_type: "application/json",
            body,
        }
    }

    fn head(&self) -> String {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        );
        if self.status == 405 {
            head.push_str("Allow: GET\r\n");
        }
        head.push_str("\r\n");
        head
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

/// Answers requests; one implementation per endpoint set.
#[async_trait]
pub(crate) trait Handler: Send + Sync + 'static {
    /// Answers a well-formed `GET`.
    async fn get(&self, req: Request) -> Response;
}

/// Why a request head was refused, each with the status it earns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HeadError {
    /// The request line or a header line does not parse.
    #[error("malformed request: {0}")]
    Malformed(&'static str),
    /// The head exceeds [`MAX_HEAD_BYTES`].
    #[error("request head larger than {MAX_HEAD_BYTES} bytes")]
    TooLarge,
}

impl HeadError {
    fn status(&self) -> u16 {
        match self {
            Self::Malformed(_) => 400,
            Self::TooLarge => 431,
        }
    }
}

/// Parses a complete request head (up to, not including, the blank line).
pub(crate) fn parse_head(head: &[u8]) -> Result<Request, HeadError> {
    let text = std::str::from_utf8(head).map_err(|_| HeadError::Malformed("not UTF-8"))?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let line = lines.next().ok_or(HeadError::Malformed("empty"))?;
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::Malformed(
            "request line is not METHOD TARGET VERSION",
        ));
    };
    if method.is_empty() || !method.bytes().all(is_token_byte) {
        return Err(HeadError::Malformed("bad method"));
    }
    if !target.starts_with('/') || target.bytes().any(|b| b.is_ascii_control()) {
        return Err(HeadError::Malformed("target is not an absolute path"));
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(HeadError::Malformed("not HTTP/1.0 or HTTP/1.1"));
    }
    for header in lines {
        // Headers are checked for shape only: no endpoint reads one.
        let Some((name, _value)) = header.split_once(':') else {
            return Err(HeadError::Malformed("header line without ':'"));
        };
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(HeadError::Malformed("bad header name"));
        }
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Ok(Request {
        method: method.to_owned(),
        path: path.to_owned(),
        query: query.to_owned(),
    })
}

/// RFC 9110 `tchar`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Where the head ends in `buf`: the index of the blank line's start and the head's full length.
fn head_end(buf: &[u8]) -> Option<(usize, usize)> {
    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
        return Some((i, i + 4));
    }
    // Bare LF line ends, as some hand-written clients send.
    buf.windows(2)
        .position(|w| w == b"\n\n")
        .map(|i| (i, i + 2))
}

/// Reads a request head from `stream`, bounded in size.
async fn read_head(stream: &mut TcpStream) -> Result<Request, HeadError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        if let Some((end, _)) = head_end(&buf) {
            return parse_head(&buf[..end]);
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(HeadError::TooLarge);
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err(HeadError::Malformed("connection closed mid-request")),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Serves one connection: read the head, answer, close.
async fn serve_connection(mut stream: TcpStream, handler: Arc<dyn Handler>) {
    let response = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await {
        Err(_) => Response::text(408, "request head not received in time\n"),
        Ok(Err(e)) => Response::text(e.status(), format!("{e}\n")),
        Ok(Ok(req)) if req.method != "GET" => Response::text(
            405,
            format!("method {} not allowed: GET only\n", req.method),
        ),
        Ok(Ok(req)) => handler.get(req).await,
    };
    let write = async {
        stream.write_all(response.head().as_bytes()).await?;
        stream.write_all(response.body.as_bytes()).await?;
        stream.shutdown().await
    };
    // The client may have gone; nothing to tell it then.
    if let Ok(Ok(())) = tokio::time::timeout(WRITE_TIMEOUT, write).await {
        linger(&mut stream).await;
    }
}

/// Reads and drops what the client still sends (a body, the rest of an oversized head) until it
/// closes, within bounds: closing a socket with unread input makes the kernel reset the
/// connection, and the client could lose the answer it has not read yet.
async fn linger(stream: &mut TcpStream) {
    let drain = async {
        let mut sink = [0u8; 1024];
        let mut left = LINGER_BYTES;
        while left > 0 {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(LINGER_TIME, drain).await;
}

/// Accepts connections on `listener` until `stop` fires, answering each with `handler`.
pub(crate) async fn serve(
    listener: TcpListener,
    handler: Arc<dyn Handler>,
    stop: CancellationToken,
) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
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
            Ok((stream, _peer)) => {
                let handler = handler.clone();
                tokio::spawn(async move {
                    serve_connection(stream, handler).await;
                    drop(permit);
                });
            }
            // Accept errors (out of file descriptors, a reset before accept) concern one
            // connection; keep listening.
            Err(e) => tracing::debug!(error = %e, "accept failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_heads_parse_or_are_refused_with_their_reason() {
        let ok = |s: &str| parse_head(s.as_bytes()).unwrap();
        let bad = |s: &str| parse_head(s.as_bytes()).unwrap_err();
        let r = ok("GET /dump/orders?format=json HTTP/1.1\r\nHost: x\r\nAccept: */*");
        assert_eq!(
            (r.method.as_str(), r.path.as_str(), r.query.as_str()),
            ("GET", "/dump/orders", "format=json")
        );
        assert_eq!(r.query_param("format"), Some("json"));
        assert_eq!(r.query_param("other"), None);
        assert_eq!(ok("POST /metrics HTTP/1.0").method, "POST");
        assert_eq!(ok("GET / HTTP/1.1\nHost: x").path, "/");
        for garbage in [
            "",
            "GET",
            "GET /",
            "GET / HTTP/2",
            "GET metrics HTTP/1.1",
            "GET  / HTTP/1.1",
            "G\u{e9}T / HTTP/1.1",
            "GET / HTTP/1.1\r\nno colon here",
            "GET / HTTP/1.1\r\n: empty name",
        ] {
            assert!(
                matches!(bad(garbage), HeadError::Malformed(_)),
                "{garbage:?} should be refused"
            );
        }
    }

    #[test]
    fn the_head_ends_at_the_first_blank_line_with_either_line_ending() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nbody"), Some((14, 18)));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\n"), Some((14, 16)));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n"), None);
    }

    #[test]
    fn responses_close_the_connection_and_name_their_length() {
        let head = Response::text(405, "no\n").head();
        assert!(head.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"));
        assert!(head.contains("Content-Length: 3\r\n"));
        assert!(head.contains("Connection: close\r\n"));
        assert!(head.contains("Allow: GET\r\n"));
        assert!(head.ends_with("\r\n\r\n"));
    }
}
