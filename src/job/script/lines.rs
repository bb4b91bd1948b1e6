//! A script's output lines: each pipe read until it closes, a line held up to a bound (the rest
//! skipped as it arrives, the line marked as cut), logged and captured when the job asks for it.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use super::{MAX_LINE_BYTES, TRUNCATED};
use crate::job::output::Stream;
use crate::job::ShardingContext;

/// Which of the child's pipes a line came from.
#[derive(Debug, Clone, Copy)]
pub(super) enum Pipe {
    Stdout,
    Stderr,
}

impl Pipe {
    fn stream(self) -> Stream {
        match self {
            Self::Stdout => Stream::Stdout,
            Self::Stderr => Stream::Stderr,
        }
    }
}

/// Logs every line of `pipe` until it closes (see [`read_lines`]), and captures it when the job
/// asks for its output ([`super::output`]).
pub(super) async fn log_lines(
    pipe: impl AsyncRead + Unpin,
    which: Pipe,
    ctx: &ShardingContext,
) -> std::io::Result<()> {
    read_lines(pipe, MAX_LINE_BYTES, |text| {
        match which {
            Pipe::Stdout => {
                tracing::info!(job = %ctx.job_name, item = %ctx.sharding_item, "{text}")
            }
            Pipe::Stderr => {
                tracing::warn!(job = %ctx.job_name, item = %ctx.sharding_item, "{text}")
            }
        }
        // Off (`None`) unless the job asks for capture: one branch per line.
        if let Some(output) = &ctx.output {
            output.line(which.stream(), text);
        }
    })
    .await
}

/// Hands every line of `pipe` to `line` until the pipe closes, holding at most `max` bytes of a
/// line: the rest of a longer line is skipped as it arrives and the line ends with a marker
/// saying how much was cut ([`TRUNCATED`]). Bytes that are not UTF-8 are replaced, not refused:
/// a script's output is for people to read.
pub async fn read_lines(
    pipe: impl AsyncRead + Unpin,
    max: usize,
    mut line: impl FnMut(&str),
) -> std::io::Result<()> {
    let mut reader = BufReader::new(pipe);
    let mut held = Vec::new();
    let mut skipped = 0usize;
    let mut emit = |held: &mut Vec<u8>, skipped: &mut usize| {
        let text = String::from_utf8_lossy(held);
        let text = text.trim_end_matches(['\n', '\r']);
        if *skipped == 0 {
            line(text);
        } else {
            line(&format!("{text}{TRUNCATED}{skipped} more bytes]"));
        }
        held.clear();
        *skipped = 0;
    };
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            if !held.is_empty() || skipped > 0 {
                emit(&mut held, &mut skipped);
            }
            return Ok(());
        }
        let (chunk, ends) = match buf.iter().position(|b| *b == b'\n') {
            Some(at) => (&buf[..=at], true),
            None => (buf, false),
        };
        let taken = chunk.len().min(max.saturating_sub(held.len()));
        held.extend_from_slice(&chunk[..taken]);
        // The newline ends the line; it is no content cut from it.
        skipped += (chunk.len() - taken).saturating_sub(usize::from(ends && taken < chunk.len()));
        let used = chunk.len();
        reader.consume(used);
        if ends {
            emit(&mut held, &mut skipped);
        }
    }
}
