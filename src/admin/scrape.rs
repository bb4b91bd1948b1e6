//! The Prometheus side: the process-wide recorder the engine's metrics (all emitted by
//! [`crate::metrics`]) land in, the share of it each node's endpoint serves, and the gauges
//! computed from a node's mirror at scrape time.
//!
//! `metrics` allows one global recorder per process, so the first node that asks for metrics
//! installs it and later nodes reuse its handle. A node's endpoint serves the series labelled with
//! its `instance_id` ([`NodeSeries`]); the process series (no `instance_id`) are served by the
//! oldest metrics endpoint still running ([`ProcessSeriesTurn`]), so scraping every node of a
//! process counts nothing twice.

use std::fmt::{self, Write as _};
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};

use super::ready;
use crate::registry::mirror::Mirror;
use crate::types::{InstanceId, JobName};
use crate::view::JobView;

/// Buckets of every `*_seconds` histogram: half a millisecond to ten seconds, because trigger
/// delays and most item runs take milliseconds, and the default buckets start at 5 ms.
pub const SECONDS_BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

static HANDLE: OnceLock<Result<PrometheusHandle, String>> = OnceLock::new();

/// Why the Prometheus recorder could not be installed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("installing the Prometheus recorder failed (another metrics recorder may be installed in this process): {reason}")]
pub struct RecorderError {
    /// The exporter's reason.
    pub reason: String,
}

/// The process's Prometheus handle, installing the global recorder on first use. A failed
/// install is remembered: a second attempt could not succeed either.
pub fn prometheus_handle() -> Result<PrometheusHandle, RecorderError> {
    HANDLE
        .get_or_init(|| install().map_err(|e| e.to_string()))
        .clone()
        .map_err(|reason| RecorderError { reason })
}

fn install() -> Result<PrometheusHandle, BuildError> {
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &SECONDS_BUCKETS)?
        .install_recorder()?;
    crate::metrics::describe();
    Ok(handle)
}

/// The metrics endpoints of a process now serving, oldest first: the oldest serves the process
/// series (see [`crate::metrics`]).
#[derive(Debug)]
pub(crate) struct EndpointLine {
    serving: Mutex<Vec<u64>>,
    next: AtomicU64,
}

/// The process's line.
static LINE: EndpointLine = EndpointLine::new();

impl EndpointLine {
    const fn new() -> Self {
        Self {
            serving: Mutex::new(Vec::new()),
            next: AtomicU64::new(1),
        }
    }

    fn serving(&self) -> std::sync::MutexGuard<'_, Vec<u64>> {
        self.serving.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A metrics endpoint's place in the line of endpoints that may serve the process series. Leaves
/// the line when dropped, handing the process series to the next oldest.
#[derive(Debug)]
pub(crate) struct ProcessSeriesTurn {
    line: &'static EndpointLine,
    id: u64,
}

impl ProcessSeriesTurn {
    /// Joins the process's line.
    pub(crate) fn join() -> Self {
        Self::join_line(&LINE)
    }

    fn join_line(line: &'static EndpointLine) -> Self {
        let id = line.next.fetch_add(1, Ordering::Relaxed);
        line.serving().push(id);
        Self { line, id }
    }

    /// Whether this endpoint is the oldest still serving, so it serves the process series.
    pub(crate) fn serves_process_series(&self) -> bool {
        self.line.serving().first() == Some(&self.id)
    }
}

impl Drop for ProcessSeriesTurn {
    fn drop(&mut self) {
        self.line.serving().retain(|id| *id != self.id);
    }
}

/// The part of the recorder's rendering `me`'s endpoint serves, as a filter the rendering is
/// written through line by line ([`PrometheusHandle::render_to_write`]), so that neither the whole
/// rendering nor a filtered copy of it is ever held: the series labelled with `me`'s
/// `instance_id`, and, when `process` is set, the series that have no `instance_id`. A family's
/// `# HELP`/`# TYPE` lines are kept only when one of its samples is.
#[derive(Debug)]
pub struct NodeSeries<'a, W: Write> {
    out: W,
    me: &'a InstanceId,
    process: bool,
    /// The rendering's unfinished last line.
    partial: Vec<u8>,
    /// The family's header lines, until one of its samples is kept.
    header: Vec<u8>,
    family_shown: bool,
}

impl<'a, W: Write> NodeSeries<'a, W> {
    /// A filter writing what `me`'s endpoint serves to `out`.
    pub fn new(out: W, me: &'a InstanceId, process: bool) -> Self {
        Self {
            out,
            me,
            process,
            partial: Vec::new(),
            header: Vec::new(),
            family_shown: false,
        }
    }

    /// Filters a last line without its newline, and hands back the output.
    pub fn finish(mut self) -> io::Result<W> {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line)?;
        }
        Ok(self.out)
    }

    fn line(&mut self, line: &[u8]) -> io::Result<()> {
        if line.is_empty() {
            if self.family_shown {
                self.out.write_all(b"\n")?;
            }
            self.header.clear();
            self.family_shown = false;
        } else if line.starts_with(b"#") {
            if line.starts_with(b"# HELP ") {
                self.header.clear();
                self.family_shown = false;
            }
            self.header.extend_from_slice(line);
            self.header.push(b'\n');
        } else {
            let text = std::str::from_utf8(line)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            let keep = match label_value(text, crate::metrics::INSTANCE_LABEL) {
                Some(id) => id == self.me.as_str(),
                None => self.process,
            };
            if keep {
                self.out.write_all(&self.header)?;
                self.header.clear();
                self.out.write_all(line)?;
                self.out.write_all(b"\n")?;
                self.family_shown = true;
            }
        }
        Ok(())
    }
}

impl<W: Write> Write for NodeSeries<'_, W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut rest = data;
        while let Some(end) = rest.iter().position(|b| *b == b'\n') {
            if self.partial.is_empty() {
                self.line(&rest[..end])?;
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&rest[..end]);
                self.line(&line)?;
                line.clear();
                self.partial = line;
            }
            rest = &rest[end + 1..];
        }
        self.partial.extend_from_slice(rest);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The (unescaped) value of label `name` in a text-format sample line, if it has that label.
fn label_value(sample: &str, name: &str) -> Option<String> {
    let (_, mut rest) = sample.split_once('{')?;
    loop {
        rest = rest.trim_start_matches([',', ' ']);
        if rest.starts_with('}') || rest.is_empty() {
            return None;
        }
        let (label, after) = rest.split_once('=')?;
        let mut chars = after.strip_prefix('"')?.char_indices();
        let mut value = String::new();
        let end = loop {
            match chars.next()? {
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (i, '"') => break i,
                (_, c) => value.push(c),
            }
        };
        if label.trim() == name {
            return Some(value);
        }
        rest = &after[end + 2..];
    }
}

/// Writes this node's gauges, in the Prometheus text format, computed from its mirror now:
/// `shardcron_items_owned{job_name,instance_id}`, `shardcron_leader{job_name,instance_id}`,
/// `shardcron_job_registered{job_name,instance_id}`, `shardcron_session_connected{instance_id}`
/// and `shardcron_mirror_nodes{instance_id}`. `session` is the id of the connected session whose
/// mirror is synced, if any (as for `/readyz`). Each job's view of the mirror is read once and
/// only its three values kept (eight bytes a job), so a scrape of many jobs holds no view of
/// every job at once.
pub fn render_node_gauges(
    out: &mut impl Write,
    mirror: &Mirror,
    me: &InstanceId,
    jobs: &[JobName],
    session: Option<i64>,
) -> io::Result<()> {
    let instance = Escaped(me.as_str());
    let values: Vec<JobGauges> = jobs
        .iter()
        .map(|job| {
            let view = JobView::read(mirror, job);
            let ready = ready::read(mirror, me, session, std::slice::from_ref(job));
            JobGauges {
                owned: u32::try_from(view.items_owned_by(me).len()).unwrap_or(u32::MAX),
                leader: view.leader.as_ref() == Some(me),
                registered: ready.is_ready(),
            }
        })
        .collect();
    let mut per_job = |name: &str, help: &str, value: fn(&JobGauges) -> u32| -> io::Result<()> {
        family(out, name, help)?;
        for (job, gauges) in jobs.iter().zip(&values) {
            writeln!(
                out,
                "{name}{{job_name=\"{}\",instance_id=\"{instance}\"}} {}",
                Escaped(job.as_str()),
                value(gauges)
            )?;
        }
        Ok(())
    };
    per_job(
        "shardcron_items_owned",
        "Sharding items this instance owns, per job, as its mirror holds them.",
        |g| g.owned,
    )?;
    per_job(
        "shardcron_leader",
        "1 while this instance is the job's elected leader, else 0.",
        |g| u32::from(g.leader),
    )?;
    per_job(
        "shardcron_job_registered",
        "1 while the job's instances/{id} node of this instance belongs to its current session \
         (what /readyz requires), else 0.",
        |g| u32::from(g.registered),
    )?;
    family(
        out,
        "shardcron_session_connected",
        "1 while the registry session is connected and the mirror in sync with it, else 0.",
    )?;
    let connected = u8::from(session.is_some() && mirror.is_synced());
    writeln!(
        out,
        "shardcron_session_connected{{instance_id=\"{instance}\"}} {connected}"
    )?;
    family(
        out,
        "shardcron_mirror_nodes",
        "Registry nodes held in this instance's mirror of the namespace.",
    )?;
    writeln!(
        out,
        "shardcron_mirror_nodes{{instance_id=\"{instance}\"}} {}",
        mirror.len()
    )
}

/// One job's gauges, as [`render_node_gauges`] keeps them between its families.
struct JobGauges {
    owned: u32,
    leader: bool,
    registered: bool,
}

fn family(out: &mut impl Write, name: &str, help: &str) -> io::Result<()> {
    writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge")
}

/// A label value escaped for the text format as it is written (backslash, double quote, newline).
struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '\\' => f.write_str("\\\\")?,
                '"' => f.write_str("\\\"")?,
                '\n' => f.write_str("\\n")?,
                c => f.write_char(c)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
