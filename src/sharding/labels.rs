//! Instance labels: an instance carries labels, written in its `instances/{id}` node as ElasticJob's
//! `JobInstance` is (`{jobInstanceId, labels, serverIp}`), and a job with a `label` is sharded only
//! over the instances carrying it.
//!
//! ElasticJob's `JobInstance.labels` is one string; we write the labels as one comma-separated
//! string (`labels: eu,gpu`) so that a Java instance reading our node still parses it. A label is
//! made of ASCII letters, digits, `-`, `_` and `.`, which needs no YAML quoting and cannot hold the
//! separator.

use std::collections::BTreeSet;

use crate::untrusted::{check_yaml, UntrustedYamlError};
use crate::InstanceId;

/// Why a label was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// Checking a label: it is empty or holds a character other than letters, digits, `-`, `_`, `.`.
    #[error("label {0:?} must be non-empty and made of ASCII letters, digits, '-', '_' and '.'")]
    BadLabel(String),
}

/// Checks one label.
pub fn check_label(label: &str) -> Result<(), LabelError> {
    let ok = !label.is_empty()
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(LabelError::BadLabel(label.to_owned()))
    }
}

/// The data of this instance's `instances/{id}` node: the keys in the order SnakeYAML writes a
/// `JobInstance`, `labels` left out when there is none (as Java leaves out its null).
///
/// ```
/// use shardcron::{sharding::instance_node_data, InstanceId};
/// let me = InstanceId::parse("192.0.2.2@-@9526").unwrap();
/// assert_eq!(instance_node_data(&me, &[]), "jobInstanceId: 192.0.2.2@-@9526\nserverIp: 192.0.2.2\n");
/// assert_eq!(
///     instance_node_data(&me, &["gpu".into(), "eu".into()]),
///     "jobInstanceId: 192.0.2.2@-@9526\nlabels: gpu,eu\nserverIp: 192.0.2.2\n"
/// );
/// ```
pub fn instance_node_data(me: &InstanceId, labels: &[String]) -> String {
    if labels.is_empty() {
        format!("jobInstanceId: {me}\nserverIp: {}\n", me.ip())
    } else {
        format!(
            "jobInstanceId: {me}\nlabels: {}\nserverIp: {}\n",
            labels.join(","),
            me.ip()
        )
    }
}

/// The labels an `instances/{id}` node's YAML carries: its `labels` string split at commas, trimmed,
/// empty parts left out. Data without `labels`, or that is not a YAML mapping, carries none; so does
/// data refused by [`check_yaml`] (over 1 MiB, or holding an alias), which is logged once at WARN
/// with the node's `path` (computed only then).
pub fn parse_labels(data: &[u8], path: impl FnOnce() -> String) -> BTreeSet<String> {
    // Most instances carry no label: skip the YAML parse (this runs at every fire).
    if !data.windows(6).any(|w| w == b"labels") {
        return BTreeSet::new();
    }
    if let Err(e) = check_yaml(data) {
        warn_refused_once(path(), &e);
        return BTreeSet::new();
    }
    #[derive(serde::Deserialize)]
    struct Node {
        labels: Option<serde_yaml_ng::Value>,
    }
    let Ok(node) = serde_yaml_ng::from_slice::<Node>(data) else {
        return BTreeSet::new();
    };
    let text = match node.labels {
        Some(serde_yaml_ng::Value::String(s)) => s,
        Some(serde_yaml_ng::Value::Number(n)) => n.to_string(),
        Some(serde_yaml_ng::Value::Bool(b)) => b.to_string(),
        _ => return BTreeSet::new(),
    };
    text.split(',')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Logs a refused instance node at WARN, once per node and problem: [`parse_labels`] runs at every
/// fire.
fn warn_refused_once(path: String, error: &UntrustedYamlError) {
    use std::sync::Mutex;
    static SEEN: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
    let key = (path, error.to_string());
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if seen.contains(&key) {
        return;
    }
    // Bounded: a few distinct bad values are what an attack or an accident writes.
    if seen.len() >= 64 {
        seen.remove(0);
    }
    tracing::warn!(path = %key.0, error = %error,
        "an instance node's YAML is refused; the instance counts as carrying no label");
    seen.push(key);
}

/// Whether an instance with `labels` may run a job configured with `label` (`None` or empty: any).
pub fn carries(labels: Option<&BTreeSet<String>>, label: Option<&str>) -> bool {
    match label.map(str::trim).filter(|l| !l.is_empty()) {
        None => true,
        Some(label) => labels.is_some_and(|l| l.contains(label)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_read_from_the_instance_nodes_yaml_as_java_and_we_write_it() {
        let table: &[(&str, &[&str])] = &[
            ("jobInstanceId: 10.0.0.1@-@1\nserverIp: 10.0.0.1\n", &[]),
            (
                "jobInstanceId: 10.0.0.1@-@1\nlabels: gpu\nserverIp: 10.0.0.1\n",
                &["gpu"],
            ),
            (
                "jobInstanceId: x@-@1\nlabels: gpu, eu,,\nserverIp: x\n",
                &["eu", "gpu"],
            ),
            (
                "jobInstanceId: x@-@1\nlabels: '2024'\nserverIp: x\n",
                &["2024"],
            ),
            (
                "jobInstanceId: x@-@1\nlabels: 2024\nserverIp: x\n",
                &["2024"],
            ),
            ("jobInstanceId: x@-@1\nlabels: null\nserverIp: x\n", &[]),
            ("labels: [not, a, string]", &[]),
            ("not yaml: [labels", &[]),
            ("", &[]),
        ];
        for &(data, expected) in table {
            let expected: BTreeSet<String> = expected.iter().map(|s| s.to_string()).collect();
            assert_eq!(
                parse_labels(data.as_bytes(), String::new),
                expected,
                "{data:?}"
            );
        }
        let me = InstanceId::parse("10.0.0.1@-@1").unwrap();
        let ours = instance_node_data(&me, &["gpu".into(), "eu".into()]);
        assert_eq!(parse_labels(ours.as_bytes(), String::new).len(), 2);
    }

    #[test]
    fn a_job_label_admits_only_instances_carrying_it() {
        let gpu: BTreeSet<String> = ["gpu".to_owned()].into();
        assert!(carries(None, None));
        assert!(carries(None, Some("")));
        assert!(carries(Some(&gpu), None));
        assert!(carries(Some(&gpu), Some("gpu")));
        assert!(!carries(Some(&gpu), Some("eu")));
        assert!(!carries(None, Some("gpu")));
    }

    #[test]
    fn labels_with_separators_or_yaml_syntax_are_refused() {
        for good in ["gpu", "eu-west-1", "tier_2", "v1.2"] {
            assert_eq!(check_label(good), Ok(()), "{good}");
        }
        for bad in ["", "a,b", "a b", "k: v", "#x", "é"] {
            assert!(check_label(bad).is_err(), "{bad:?}");
        }
    }
}
