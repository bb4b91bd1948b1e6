//! A response body rendered by a blocking task and sent in chunks as it is written, so that a large
//! answer (a scrape of ten thousand jobs' series) never exists whole in memory: at most
//! [`CHUNKS_AHEAD`] chunks of [`CHUNK`] bytes wait for the client, and the renderer waits while
//! they do. A client that goes away stops the rendering at its next chunk.

use std::io::{self, Write};

use axum::body::{Body, Bytes};
use tokio::sync::mpsc;

/// The bytes gathered before a chunk is handed to the response.
pub(crate) const CHUNK: usize = 64 * 1024;

/// The chunks that may wait for the client before the renderer waits too.
const CHUNKS_AHEAD: usize = 2;

/// The writer a renderer writes the body into: it hands each full chunk to the response, waiting
/// (it runs on a blocking thread) while [`CHUNKS_AHEAD`] chunks are already waiting.
#[derive(Debug)]
pub(crate) struct ChunkSender {
    tx: mpsc::Sender<io::Result<Bytes>>,
    buf: Vec<u8>,
}

impl ChunkSender {
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        self.tx
            .blocking_send(Ok(Bytes::from(chunk)))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))
    }
}

impl Write for ChunkSender {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

/// A body that `render` writes on a blocking thread, streamed to the client as it is written. A
/// rendering that fails (other than by the client leaving) ends the body with its error, which
/// aborts the response rather than passing a truncated answer off as whole.
pub(crate) fn streamed<F>(what: &'static str, render: F) -> Body
where
    F: FnOnce(&mut ChunkSender) -> io::Result<()> + Send + 'static,
{
    let (tx, mut rx) = mpsc::channel(CHUNKS_AHEAD);
    tokio::task::spawn_blocking(move || {
        let mut out = ChunkSender {
            tx: tx.clone(),
            buf: Vec::with_capacity(CHUNK),
        };
        let Err(e) = render(&mut out).and_then(|()| out.flush()) else {
            return;
        };
        if e.kind() != io::ErrorKind::BrokenPipe {
            tracing::warn!(error = %e, what, "rendering a response body failed");
            // The client may be gone as well: then nobody is left to tell.
            let _ = tx.blocking_send(Err(e));
        }
    });
    Body::from_stream(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_body_of_many_chunks_arrives_whole_and_in_order() {
        let lines = 3 * CHUNK / 10;
        let body = streamed("test", move |out| {
            for i in 0..lines {
                writeln!(out, "{i:09}")?;
            }
            Ok(())
        });
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        let expected: String = (0..lines).map(|i| format!("{i:09}\n")).collect();
        assert_eq!(bytes.len(), expected.len());
        assert!(bytes == expected.as_bytes());
    }

    #[tokio::test]
    async fn a_client_that_goes_away_stops_the_rendering() {
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let body = streamed("test", move |out| {
            let mut written = 0usize;
            let outcome = loop {
                if let Err(e) = out.write_all(&[b'x'; 1024]) {
                    break e.kind();
                }
                written += 1024;
                if written > 1024 * CHUNK {
                    break io::ErrorKind::Other;
                }
            };
            done_tx.send((outcome, written)).unwrap();
            Ok(())
        });
        drop(body);
        let (outcome, written) = tokio::task::spawn_blocking(move || done_rx.recv().unwrap())
            .await
            .unwrap();
        assert_eq!(outcome, io::ErrorKind::BrokenPipe);
        assert!(
            written <= (CHUNKS_AHEAD + 1) * CHUNK,
            "{written} bytes written"
        );
    }

    #[tokio::test]
    async fn a_rendering_that_fails_ends_the_body_with_its_error() {
        let body = streamed("test", |out| {
            out.write_all(b"partial")?;
            Err(io::Error::other("the recorder broke"))
        });
        let err = axum::body::to_bytes(body, usize::MAX).await.unwrap_err();
        assert!(err.to_string().contains("the recorder broke"), "{err}");
    }
}
