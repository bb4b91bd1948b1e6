//! An item run's output, captured for the history: the stdout and stderr lines of a script, an
//! HTTP job's status and the start of its answer, and the lines a Rust handler prints through
//! [`ShardingContext::print`](super::ShardingContext::print).
//!
//! Only a job whose `props` ask for it (`shardcron.output`, [`OutputLimit`]) gets a capture: the
//! run's [`ShardingContext::output`](super::ShardingContext::output) is `None` otherwise, and
//! every feeding point is one `if let` on it, so a job that does not ask pays nothing.
//!
//! The capture is a ring of lines bounded in bytes: the newest lines are kept, the oldest are
//! evicted as new ones come, and the bytes evicted are counted ([`OutputSnapshot::dropped`]). A
//! line longer than the whole bound is cut to it. Adding a line takes a short lock and never
//! waits on a reader, so a script is never slowed by whoever reads its output.
//!
//! Readers (the history's chunks while the item runs, `shardcronctl logs --follow`, the console's
//! live tail) see the output as a stream of bytes numbered from the run's start:
//! [`OutputSnapshot::written`] bytes were written in all, of which the last
//! [`OutputSnapshot::text`] are still held. A reader that remembers how far it has read takes the
//! rest with [`OutputSnapshot::since`]; one that fell behind the ring loses what was evicted, and
//! is told how many bytes ([`Since::lost`]).
//!
//! A URL in a line is stored with its password and query values redacted
//! ([`crate::secret::redact_text`]); anything else a job prints is stored as printed, so the
//! history's readers (an authenticated console viewer, whoever can read the database) see it.
//!
//! The text is stored one line per captured line, each opened by its stream's tag (`out`, `err`,
//! `log`, `http`) and a space, so a reader can tell stderr from stdout.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use crate::config::OutputLimit;

/// How often a running item's output is handed on (to the history) while it changes.
pub const CHUNK_EVERY: Duration = Duration::from_secs(1);

/// Where a captured line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// A script's standard output.
    Stdout,
    /// A script's standard error.
    Stderr,
    /// A line a Rust handler printed through the sharding context.
    Log,
    /// An HTTP job's answer: its status, then the start of its body.
    Http,
}

impl Stream {
    /// The tag that opens the stream's lines in the stored text.
    pub fn tag(self) -> &'static str {
        match self {
            Self::Stdout => "out",
            Self::Stderr => "err",
            Self::Log => "log",
            Self::Http => "http",
        }
    }

    /// The stream a stored line's tag names.
    pub fn from_tag(tag: &str) -> Option<Self> {
        [Self::Stdout, Self::Stderr, Self::Log, Self::Http]
            .into_iter()
            .find(|s| s.tag() == tag)
    }
}

/// One item run's captured output (see the module's documentation).
#[derive(Debug)]
pub struct OutputCapture {
    limit: usize,
    ring: Mutex<Ring>,
    /// Bumped at every line, read without the lock by the history's chunk writer.
    version: AtomicU64,
}

#[derive(Debug, Default)]
struct Ring {
    /// Encoded lines (`{tag} {text}\n`), oldest first.
    lines: VecDeque<String>,
    held: usize,
    written: u64,
    dropped: u64,
}

impl OutputCapture {
    /// An empty capture keeping the last `limit` of the output.
    pub fn new(limit: OutputLimit) -> Self {
        Self {
            limit: limit.bytes(),
            ring: Mutex::new(Ring::default()),
            version: AtomicU64::new(0),
        }
    }

    /// Adds a line (or several, when `text` holds newlines) of `stream`.
    pub fn line(&self, stream: Stream, text: &str) {
        for part in text.lines() {
            self.push(stream, part);
        }
        if text.is_empty() {
            self.push(stream, "");
        }
    }

    fn push(&self, stream: Stream, text: &str) {
        // A URL's password and query values never reach the history (as in failure causes).
        let redacted;
        let text = if text.contains("://") {
            redacted = crate::secret::redact_text(text);
            redacted.as_str()
        } else {
            text
        };
        let mut line = String::with_capacity(stream.tag().len() + 2 + text.len());
        line.push_str(stream.tag());
        line.push(' ');
        line.push_str(text);
        if line.len() + 1 > self.limit {
            let mut end = self.limit.saturating_sub(1);
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            line.truncate(end);
        }
        line.push('\n');
        let mut ring = self.ring.lock();
        ring.written += line.len() as u64;
        ring.held += line.len();
        ring.lines.push_back(line);
        while ring.held > self.limit {
            let Some(old) = ring.lines.pop_front() else {
                break;
            };
            ring.held -= old.len();
            ring.dropped += old.len() as u64;
        }
        drop(ring);
        self.version.fetch_add(1, Ordering::Release);
    }

    /// A number that changes whenever a line is added.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// What is held now.
    pub fn snapshot(&self) -> OutputSnapshot {
        let ring = self.ring.lock();
        let mut text = String::with_capacity(ring.held);
        for line in &ring.lines {
            text.push_str(line);
        }
        OutputSnapshot {
            text,
            written: ring.written,
            dropped: ring.dropped,
        }
    }
}

/// An item run's output at one moment: the held text and where it sits in the whole stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputSnapshot {
    /// The lines held, each `{tag} {text}\n`.
    pub text: String,
    /// Bytes written since the run started (held and evicted).
    pub written: u64,
    /// Bytes evicted from the ring (the oldest lines), `written - text.len()`.
    pub dropped: u64,
}

/// What a reader that had read `from` bytes gets next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Since<'a> {
    /// Bytes written after `from` that are no longer held.
    pub lost: u64,
    /// The held text after `from` (whole lines).
    pub text: &'a str,
    /// How far the reader has read after this.
    pub next: u64,
}

impl OutputSnapshot {
    /// What is new to a reader that has read the first `from` bytes of the stream.
    pub fn since(&self, from: u64) -> Since<'_> {
        let lost = self.dropped.saturating_sub(from);
        let skip = usize::try_from(from.saturating_sub(self.dropped))
            .unwrap_or(usize::MAX)
            .min(self.text.len());
        // A reader's offset always sits on a line boundary; a forged one is moved to the next.
        let skip = match self.text.get(skip..) {
            Some(_) if skip == 0 || self.text.as_bytes()[skip - 1] == b'\n' => skip,
            _ => self.text.as_bytes()[skip..]
                .iter()
                .position(|b| *b == b'\n')
                .map_or(self.text.len(), |at| skip + at + 1),
        };
        Since {
            lost,
            text: &self.text[skip..],
            next: self.written,
        }
    }

    /// The held lines, each with its stream (a line whose tag is unknown is kept as `out`).
    pub fn lines(&self) -> impl Iterator<Item = (Stream, &str)> {
        split_lines(&self.text)
    }
}

/// The lines of stored text, each with its stream.
pub fn split_lines(text: &str) -> impl Iterator<Item = (Stream, &str)> {
    text.lines().map(|line| match line.split_once(' ') {
        Some((tag, rest)) => match Stream::from_tag(tag) {
            Some(stream) => (stream, rest),
            None => (Stream::Stdout, line),
        },
        None => (Stream::from_tag(line).unwrap_or(Stream::Stdout), ""),
    })
}

/// Runs `item` to its end, handing `chunk` a snapshot of `capture` every [`CHUNK_EVERY`] while
/// it changed (`complete` false), then a last one (`complete` true). The item is polled first at
/// every wake-up: the chunks never hold it back.
pub async fn chunked<T>(
    item: impl Future<Output = T>,
    capture: &OutputCapture,
    mut chunk: impl FnMut(OutputSnapshot, bool),
) -> T {
    tokio::pin!(item);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + CHUNK_EVERY, CHUNK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut sent = capture.version();
    let result = loop {
        tokio::select! {
            biased;
            result = &mut item => break result,
            _ = tick.tick() => {
                let now = capture.version();
                if now != sent {
                    sent = now;
                    chunk(capture.snapshot(), false);
                }
            }
        }
    };
    chunk(capture.snapshot(), true);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(kib: u32) -> OutputCapture {
        OutputCapture::new(OutputLimit::kib(kib).unwrap())
    }

    #[test]
    fn lines_are_kept_in_order_with_their_stream() {
        let out = capture(1);
        out.line(Stream::Stdout, "hello");
        out.line(Stream::Stderr, "oops");
        out.line(Stream::Log, "a\nb");
        let snap = out.snapshot();
        assert_eq!(snap.text, "out hello\nerr oops\nlog a\nlog b\n");
        assert_eq!((snap.written, snap.dropped), (snap.text.len() as u64, 0));
        let lines: Vec<_> = snap.lines().collect();
        assert_eq!(lines[1], (Stream::Stderr, "oops"));
    }

    #[test]
    fn the_oldest_lines_are_evicted_beyond_the_bound_and_counted() {
        let out = capture(1);
        let line = "x".repeat(95); // 100 bytes with its tag, space and newline
        for _ in 0..30 {
            out.line(Stream::Stdout, &line);
        }
        let snap = out.snapshot();
        assert!(snap.text.len() <= 1024, "{}", snap.text.len());
        assert_eq!(snap.text.len(), 1000);
        assert_eq!(snap.written, 3000);
        assert_eq!(snap.dropped, 2000);
    }

    #[test]
    fn a_line_longer_than_the_bound_is_cut_on_a_character_boundary() {
        let out = capture(1);
        out.line(Stream::Stdout, &"é".repeat(2000));
        let snap = out.snapshot();
        assert!(snap.text.len() <= 1024);
        assert!(snap.text.ends_with("é\n"));
    }

    #[test]
    fn a_reader_gets_what_is_new_and_is_told_what_it_lost() {
        let out = capture(1);
        out.line(Stream::Stdout, "first");
        let snap = out.snapshot();
        let read = snap.since(0);
        assert_eq!((read.lost, read.text), (0, "out first\n"));
        let at = read.next;
        out.line(Stream::Stderr, "second");
        let snap = out.snapshot();
        assert_eq!(snap.since(at).text, "err second\n");
        // A slow reader: far more than the ring was written since it last read.
        for i in 0..200 {
            out.line(Stream::Stdout, &format!("line {i}"));
        }
        let snap = out.snapshot();
        let late = snap.since(at);
        assert!(late.lost > 0);
        assert_eq!(late.lost, snap.dropped - at);
        assert!(late.text.ends_with("out line 199\n"));
        assert_eq!(late.next, snap.written);
    }

    #[tokio::test(start_paused = true)]
    async fn a_running_item_hands_on_chunks_while_its_output_changes_then_a_last_one() {
        let out = std::sync::Arc::new(capture(1));
        let writer = out.clone();
        let item = async move {
            writer.line(Stream::Stdout, "one");
            tokio::time::sleep(CHUNK_EVERY * 3 + CHUNK_EVERY / 4).await;
            writer.line(Stream::Stdout, "two");
            tokio::time::sleep(CHUNK_EVERY / 2).await;
            7
        };
        let mut chunks = Vec::new();
        let result = chunked(item, &out, |snap, complete| {
            chunks.push((snap.text, complete))
        })
        .await;
        assert_eq!(result, 7);
        assert_eq!(
            chunks,
            [
                ("out one\n".to_owned(), false),
                ("out one\nout two\n".to_owned(), true),
            ],
            "one chunk while `one` stood unchanged for three ticks, the last at the end"
        );
    }

    #[test]
    fn an_offset_inside_a_line_moves_to_the_next_line() {
        let out = capture(1);
        out.line(Stream::Stdout, "abc");
        out.line(Stream::Stdout, "def");
        let snap = out.snapshot();
        assert_eq!(snap.since(3).text, "out def\n");
        assert_eq!(snap.since(1_000).text, "");
    }
}
