//! The Prometheus side: the process-wide recorder the engine's `metrics::counter!` and
//! `metrics::histogram!` calls land in, and the gauges computed from a node's mirror at scrape time.
//!
//! `metrics` allows one global recorder per process, so the first node that asks for metrics
//! installs it and later nodes reuse its handle. The counters and histograms are therefore the
//! process's (they carry a `job` label, not an instance); the gauges appended by
//! [`render_node_gauges`] are the scraped node's own and carry its `instance`.

use std::fmt::Write as _;
use std::sync::OnceLock;

use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};

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
    describe();
    Ok(handle)
}

/// The `# HELP` lines of the engine's counters and histograms. Kept here rather than beside each
/// `counter!` call so that the one list of what a scrape shows lives in one place, next to
/// the README (section "Metrics and health endpoints").
fn describe() {
    use metrics::{describe_counter, describe_histogram, Unit};
    describe_counter!(
        "shardcron_executions_total",
        "Item executions that ended, by job, item, outcome (success, failure) and source \
         (normal, misfire, failover, manual)."
    );
    describe_histogram!(
        "shardcron_trigger_delay_seconds",
        Unit::Seconds,
        "Delay from a fire's scheduled instant to the start of its run, by job."
    );
    describe_histogram!(
        "shardcron_execution_duration_seconds",
        Unit::Seconds,
        "Duration of a run (all of this instance's items of one fire), by job."
    );
    describe_counter!(
        "shardcron_elections_total",
        "Leader elections this instance won, by job."
    );
    describe_counter!(
        "shardcron_reshardings_total",
        "Sharding plans this instance committed as leader, by job."
    );
    describe_counter!(
        "shardcron_misfires_total",
        "Items flagged misfire because they still ran at a fire, by job."
    );
    describe_counter!(
        "shardcron_failovers_total",
        "Items of crashed instances this instance claimed, by job."
    );
    describe_counter!(
        "shardcron_events_dropped_total",
        "Engine events dropped because a subscriber's queue was full, by subscriber."
    );
    describe_counter!(
        "shardcron_registry_operations_total",
        "Registry calls that finished, by backend (zookeeper, embedded), kind and outcome \
         (ok, error); a multi-op counts once."
    );
}

/// Appends this node's gauges, in the Prometheus text format, computed from its mirror now:
/// `shardcron_items_owned{job,instance}`, `shardcron_leader{job,instance}`,
/// `shardcron_session_connected{instance}` and `shardcron_mirror_nodes{instance}`.
pub fn render_node_gauges(out: &mut String, mirror: &Mirror, me: &InstanceId, jobs: &[JobName]) {
    let instance = escape(me.as_str());
    let views: Vec<(String, JobView)> = jobs
        .iter()
        .map(|j| (escape(j.as_str()), JobView::read(mirror, j)))
        .collect();
    family(
        out,
        "shardcron_items_owned",
        "Sharding items this instance owns, per job, as its mirror holds them.",
    );
    for (job, view) in &views {
        let n = view.items_owned_by(me).len();
        let _ = writeln!(
            out,
            "shardcron_items_owned{{job=\"{job}\",instance=\"{instance}\"}} {n}"
        );
    }
    family(
        out,
        "shardcron_leader",
        "1 while this instance is the job's elected leader, else 0.",
    );
    for (job, view) in &views {
        let leading = u8::from(view.leader.as_ref() == Some(me));
        let _ = writeln!(
            out,
            "shardcron_leader{{job=\"{job}\",instance=\"{instance}\"}} {leading}"
        );
    }
    family(
        out,
        "shardcron_session_connected",
        "1 while the registry session is connected and the mirror in sync with it, else 0.",
    );
    let connected = u8::from(mirror.is_synced());
    let _ = writeln!(
        out,
        "shardcron_session_connected{{instance=\"{instance}\"}} {connected}"
    );
    family(
        out,
        "shardcron_mirror_nodes",
        "Registry nodes held in this instance's mirror of the namespace.",
    );
    let _ = writeln!(
        out,
        "shardcron_mirror_nodes{{instance=\"{instance}\"}} {}",
        mirror.len()
    );
}

fn family(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
}

/// Escapes a label value for the text format (backslash, double quote, newline).
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped_for_the_text_format() {
        assert_eq!(escape(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape("x\ny"), "x\\ny");
    }

    #[test]
    fn an_empty_mirror_renders_zero_gauges_for_each_job() {
        let me = InstanceId::parse("10.0.0.1@-@1").unwrap();
        let mut out = String::new();
        render_node_gauges(
            &mut out,
            &Mirror::new(),
            &me,
            &[JobName::new("orders").unwrap()],
        );
        for line in [
            "# TYPE shardcron_items_owned gauge",
            "shardcron_items_owned{job=\"orders\",instance=\"10.0.0.1@-@1\"} 0",
            "shardcron_leader{job=\"orders\",instance=\"10.0.0.1@-@1\"} 0",
            "shardcron_session_connected{instance=\"10.0.0.1@-@1\"} 0",
            "shardcron_mirror_nodes{instance=\"10.0.0.1@-@1\"} 0",
        ] {
            assert!(out.lines().any(|l| l == line), "missing {line:?} in\n{out}");
        }
    }
}
