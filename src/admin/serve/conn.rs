//! One connection below hyper: its first request head read within bounds and told apart as a
//! probe, a refusal written raw, the bytes already read handed back to hyper ([`Prefixed`]), and
//! each request answered within bounds ([`bounded`]).

use super::*;

/// The router's answer to `request` within [`REQUEST_TIMEOUT`], `413` for a body announced too
/// large.
pub(super) fn bounded(
    router: &TowerToHyperService<Router>,
    request: Request<Incoming>,
) -> impl std::future::Future<Output = Response> + Send + 'static {
    let too_large = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok())
        .is_some_and(|n| n > MAX_BODY_BYTES);
    let answer = (!too_large).then(|| router.call(request));
    async move {
        let Some(answer) = answer else {
            let mut response = (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request body larger than {MAX_BODY_BYTES} bytes\n"),
            )
                .into_response();
            // The body is left unread: the connection cannot carry another request.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        };
        match tokio::time::timeout(REQUEST_TIMEOUT, answer).await {
            Ok(Ok(response)) => response,
            Ok(Err(never)) => match never {},
            Err(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("no answer within {} s\n", REQUEST_TIMEOUT.as_secs()),
            )
                .into_response(),
        }
    }
}

/// Reads until the end of the first request head (`\r\n\r\n`): the bytes read (the head, and
/// whatever followed it in the same reads), `None` when no head ends within [`MAX_HEAD_BYTES`].
pub(super) async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut data = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        // Only the last few bytes before this read can start the terminator.
        let from = data.len().saturating_sub(3);
        data.extend_from_slice(&chunk[..n]);
        if data[from..].windows(4).any(|w| w == b"\r\n\r\n") {
            return Ok(Some(data));
        }
        if data.len() >= MAX_HEAD_BYTES {
            return Ok(None);
        }
    }
}

/// Whether `head` asks `GET` or `HEAD` of one of `probes` (the query ignored).
pub(super) fn is_probe(head: &[u8], probes: &[&str]) -> bool {
    if probes.is_empty() {
        return false;
    }
    let line = head.split(|b| *b == b'\r').next().unwrap_or_default();
    let mut words = line.split(|b| *b == b' ');
    let (Some(method), Some(target)) = (words.next(), words.next()) else {
        return false;
    };
    let path = target.split(|b| *b == b'?').next().unwrap_or_default();
    matches!(method, b"GET" | b"HEAD") && probes.iter().any(|p| p.as_bytes() == path)
}

/// Answers `status` and closes, within a second (the client may not be reading).
pub(super) async fn refuse(stream: &mut TcpStream, status: &str) -> std::io::Result<()> {
    let body = format!("{status}\n");
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    );
    tokio::time::timeout(
        Duration::from_secs(1),
        stream.write_all(response.as_bytes()),
    )
    .await
    .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))?
}

/// A stream whose first bytes were already read: they are read again first.
pub(super) struct Prefixed {
    pub(super) prefix: Vec<u8>,
    pub(super) at: usize,
    pub(super) inner: TcpStream,
}

impl AsyncRead for Prefixed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.at < self.prefix.len() {
            let n = buf.remaining().min(self.prefix.len() - self.at);
            let at = self.at;
            buf.put_slice(&self.prefix[at..at + n]);
            self.at += n;
            if self.at == self.prefix.len() {
                self.prefix = Vec::new();
                self.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_get_or_head_of_a_probe_path_is_a_probe() {
        let probe = |head: &str| is_probe(head.as_bytes(), HEALTH_PROBES);
        assert!(probe("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
        assert!(probe("HEAD /readyz?verbose=1 HTTP/1.1\r\n\r\n"));
        assert!(!probe("POST /healthz HTTP/1.1\r\n\r\n"));
        assert!(!probe("GET /dump/orders HTTP/1.1\r\n\r\n"));
        assert!(!probe("GET /healthzz HTTP/1.1\r\n\r\n"));
        assert!(!is_probe(b"GET /healthz HTTP/1.1\r\n\r\n", &[]));
    }
}
