//! A job's nodes as the node's mirror holds them beside the registry's, with the differences marked
//! (ElasticJob's `dump` command, plus the comparison that tells whether the mirror is behind).
//!
//! [`diff`] is pure: two listings in, one entry per path out. The admin endpoint reads the mirror
//! and the registry, calls it, redacts every entry ([`redact`]: secrets never leave the node) and
//! renders the result as text ([`JobDump::to_text`]) or JSON.

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};

/// One copy of a node: its data and the stat fields that identify its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeCopy {
    /// The node's data (shown as UTF-8, invalid bytes replaced).
    #[serde(serialize_with = "lossy")]
    pub data: Vec<u8>,
    /// The data version.
    pub version: i32,
    /// The transaction that created the node: a new incarnation has a new one.
    pub czxid: i64,
    /// The owning session of an ephemeral node, 0 otherwise.
    pub ephemeral_owner: i64,
}

impl NodeCopy {
    /// A copy from data and the stat fields the mirror keeps.
    pub fn new(data: &[u8], stat: &crate::registry::mirror::MirrorStat) -> Self {
        Self {
            data: data.to_vec(),
            version: stat.version,
            czxid: stat.czxid,
            ephemeral_owner: stat.ephemeral_owner,
        }
    }

    /// Whether two copies are the same node at the same version. The mirror keeps no current
    /// child counts (no event reports them), so only data, version and incarnation are compared.
    fn same_as(&self, other: &NodeCopy) -> bool {
        self.data == other.data && self.version == other.version && self.czxid == other.czxid
    }
}

fn lossy<S: Serializer>(data: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(data))
}

/// How the mirror's copy of a node compares with the registry's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Difference {
    /// Both hold the node at the same version.
    Same,
    /// Both hold the node, with other data, version or incarnation.
    Differs,
    /// Only the mirror holds it: deleted in the registry, the event not applied yet (or lost).
    MirrorOnly,
    /// Only the registry holds it: created there, the event not applied yet (or lost).
    RegistryOnly,
    /// The registry could not be read: only the mirror's copy is shown.
    Unread,
}

impl Difference {
    /// The one-character mark of the text dump.
    pub fn mark(self) -> char {
        match self {
            Self::Same => '=',
            Self::Differs => '~',
            Self::MirrorOnly => '-',
            Self::RegistryOnly => '+',
            Self::Unread => '?',
        }
    }
}

/// One path of a dump.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DumpEntry {
    /// The node's path within the namespace.
    pub path: String,
    /// How the two copies compare.
    pub status: Difference,
    /// The mirror's copy.
    pub mirror: Option<NodeCopy>,
    /// The registry's copy.
    pub registry: Option<NodeCopy>,
}

/// Compares the mirror's listing of a subtree with the registry's: one entry per path in either,
/// parents before children (ordered segment by segment, so `/a/b` follows `/a` directly).
///
/// ```
/// use shardcron::admin::dump::{diff, Difference, NodeCopy};
/// let copy = |data: &str, version| NodeCopy { data: data.into(), version, czxid: 1, ephemeral_owner: 0 };
/// let entries = diff(
///     [("/j".to_owned(), copy("", 0)), ("/j/config".to_owned(), copy("a", 0))],
///     [("/j".to_owned(), copy("", 0)), ("/j/config".to_owned(), copy("b", 1))],
/// );
/// assert_eq!(entries[1].status, Difference::Differs);
/// ```
pub fn diff(
    mirror: impl IntoIterator<Item = (String, NodeCopy)>,
    registry: impl IntoIterator<Item = (String, NodeCopy)>,
) -> Vec<DumpEntry> {
    let mut both: BTreeMap<Vec<String>, DumpEntry> = BTreeMap::new();
    for (path, copy) in mirror {
        slot(&mut both, path).mirror = Some(copy);
    }
    for (path, copy) in registry {
        slot(&mut both, path).registry = Some(copy);
    }
    both.into_values()
        .map(|mut e| {
            e.status = match (&e.mirror, &e.registry) {
                (Some(m), Some(r)) if m.same_as(r) => Difference::Same,
                (Some(_), Some(_)) => Difference::Differs,
                (Some(_), None) => Difference::MirrorOnly,
                (None, _) => Difference::RegistryOnly,
            };
            e
        })
        .collect()
}

/// The mirror's listing alone, every entry [`Difference::Unread`]: the registry could not be read.
pub fn mirror_only(mirror: impl IntoIterator<Item = (String, NodeCopy)>) -> Vec<DumpEntry> {
    let mut entries = diff(mirror, []);
    for e in &mut entries {
        e.status = Difference::Unread;
    }
    entries
}

/// The entry of `path`, keyed segment by segment so that children follow their parent.
fn slot(both: &mut BTreeMap<Vec<String>, DumpEntry>, path: String) -> &mut DumpEntry {
    let key = path.split('/').map(str::to_owned).collect();
    both.entry(key).or_insert_with(|| DumpEntry {
        path,
        status: Difference::Same,
        mirror: None,
        registry: None,
    })
}

/// A job's dump: every node in the mirror or the registry, compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobDump {
    /// The job.
    pub job: String,
    /// The instance whose mirror was compared.
    pub instance: String,
    /// Whether that mirror claimed to be in sync when it was read.
    pub mirror_synced: bool,
    /// How many entries differ (neither [`Difference::Same`] nor [`Difference::Unread`]).
    pub differences: usize,
    /// Why the registry was not read (only the mirror is shown), when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry_error: Option<String>,
    /// The entries, parents first.
    pub nodes: Vec<DumpEntry>,
}

impl JobDump {
    /// A dump of `entries`, counting the differences.
    pub fn new(job: String, instance: String, mirror_synced: bool, nodes: Vec<DumpEntry>) -> Self {
        let differences = nodes
            .iter()
            .filter(|e| !matches!(e.status, Difference::Same | Difference::Unread))
            .count();
        Self {
            job,
            instance,
            mirror_synced,
            differences,
            registry_error: None,
            nodes,
        }
    }

    /// The dump of a mirror whose registry could not be read, saying why.
    pub fn registry_unread(mut self, why: String) -> Self {
        self.registry_error = Some(why);
        self
    }

    /// The text form: a header, then one line per node, `{mark} {path} {data}`; a node that
    /// differs shows both copies. Data is quoted and escaped, so every node is one line.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "# job {} as instance {} mirrors it (mirror {}) and as the registry holds it: \
             {} nodes, {} differences\n\
             # '=' same, '~' differs, '-' only in the mirror, '+' only in the registry\n",
            self.job,
            self.instance,
            if self.mirror_synced {
                "in sync"
            } else {
                "NOT in sync"
            },
            self.nodes.len(),
            self.differences,
        );
        if let Some(why) = &self.registry_error {
            out.push_str(&format!(
                "# '?' the registry was not read ({why}): the mirror's copy only\n"
            ));
        }
        let show = |c: &NodeCopy| {
            let mut s = format!("{:?}", String::from_utf8_lossy(&c.data));
            if c.version != 0 {
                s.push_str(&format!(" v{}", c.version));
            }
            if c.ephemeral_owner != 0 {
                s.push_str(&format!(" ephemeral:{:#x}", c.ephemeral_owner));
            }
            s
        };
        for e in &self.nodes {
            let copies = match (&e.mirror, &e.registry) {
                (Some(m), Some(r)) if e.status == Difference::Differs => {
                    format!("mirror {} | registry {}", show(m), show(r))
                }
                (_, Some(c)) | (Some(c), None) => show(c),
                (None, None) => String::new(),
            };
            out.push_str(&format!("{} {} {}\n", e.status.mark(), e.path, copies));
        }
        out
    }
}

/// The largest `config` node shown (redacted); a larger one is shown as its size only.
const MAX_SHOWN_CONFIG_BYTES: usize = 1024 * 1024;

/// `entry` with the secrets of both copies redacted, compared before: the `config` node (the path
/// `config`) shown with its secret `props` as `***` and the password and query values of every URL
/// redacted ([`crate::secret`]), any other node's URLs redacted. A `config` node that does not
/// read as a job config is shown as its size only: it may hold secrets the redaction cannot find.
pub fn redact(mut entry: DumpEntry, config: &str) -> DumpEntry {
    let is_config = entry.path == config;
    for copy in entry.mirror.iter_mut().chain(entry.registry.iter_mut()) {
        copy.data = if is_config {
            redact_config(&copy.data)
        } else {
            crate::secret::redact_text(&String::from_utf8_lossy(&copy.data)).into_bytes()
        };
    }
    entry
}

fn redact_config(data: &[u8]) -> Vec<u8> {
    let unreadable = || {
        format!(
            "<{} bytes that do not read as a job config, not shown: they may hold secrets>",
            data.len()
        )
        .into_bytes()
    };
    if data.len() > MAX_SHOWN_CONFIG_BYTES {
        return unreadable();
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return unreadable();
    };
    // The same parse (and the same bounds) as the node's own reading of the node.
    let Ok(mut config) = crate::config::JobConfig::from_yaml(text) else {
        return unreadable();
    };
    crate::secret::redact_props(&mut config.props);
    for (key, value) in config.unknown_fields.iter_mut() {
        if crate::secret::is_secret_key(key) {
            *value = serde_yaml_ng::Value::String(crate::secret::REDACTED.to_owned());
        }
    }
    match config.to_yaml() {
        Ok(yaml) => crate::secret::redact_text(&yaml).into_bytes(),
        Err(_) => unreadable(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_shows_no_secret_of_the_config_or_of_any_url() {
        let config = "jobName: j\nshardingTotalCount: 1\ncron: 0 * * * * ?\n\
                      jobErrorHandlerType: DINGTALK\nprops:\n  dingtalk.secret: s3cr3t\n  \
                      dingtalk.webhook: https://oapi.example/robot?access_token=t0k3n\n  \
                      email.password: hunter2\n  script.command.line: echo hi\n";
        let entry = |path: &str, data: &str| DumpEntry {
            path: path.to_owned(),
            status: Difference::Same,
            mirror: Some(copy(data, 1, 1)),
            registry: Some(copy(data, 1, 1)),
        };
        for entry in [
            redact(entry("/j/config", config), "/j/config"),
            redact(
                entry("/j/other", "see https://h/x?token=t0k3n"),
                "/j/config",
            ),
        ] {
            for copy in [&entry.mirror, &entry.registry].into_iter().flatten() {
                let shown = String::from_utf8_lossy(&copy.data);
                for secret in ["s3cr3t", "t0k3n", "hunter2"] {
                    assert!(!shown.contains(secret), "{secret} in {shown}");
                }
            }
        }
        let shown = redact(entry("/j/config", config), "/j/config");
        let shown = String::from_utf8_lossy(&shown.registry.unwrap().data).into_owned();
        assert!(shown.contains("echo hi"), "the rest is kept: {shown}");
        let odd = redact(entry("/j/config", "props: {password: [x"), "/j/config");
        assert!(String::from_utf8_lossy(&odd.mirror.unwrap().data).starts_with("<20 bytes"));
    }

    fn copy(data: &str, version: i32, czxid: i64) -> NodeCopy {
        NodeCopy {
            data: data.as_bytes().to_vec(),
            version,
            czxid,
            ephemeral_owner: 0,
        }
    }

    #[test]
    fn each_kind_of_difference_is_told_apart() {
        use Difference::{Differs, MirrorOnly, RegistryOnly, Same};
        // Each side: (data, version, czxid) of the node, or no node.
        type Side = Option<(&'static str, i32, i64)>;
        let cases: [(&str, Side, Side, Difference); 6] = [
            ("same", Some(("a", 1, 5)), Some(("a", 1, 5)), Same),
            ("data", Some(("a", 1, 5)), Some(("b", 1, 5)), Differs),
            ("version", Some(("a", 1, 5)), Some(("a", 2, 5)), Differs),
            ("reborn", Some(("a", 0, 5)), Some(("a", 0, 9)), Differs),
            ("deleted", Some(("a", 0, 5)), None, MirrorOnly),
            ("created", None, Some(("a", 0, 5)), RegistryOnly),
        ];
        for (name, mirror, registry, want) in cases {
            let path = format!("/j/{name}");
            let side = |s: Side| {
                s.map(|(data, version, czxid)| (path.clone(), copy(data, version, czxid)))
            };
            let entries = diff(side(mirror), side(registry));
            assert_eq!(entries.len(), 1, "{name}");
            assert_eq!(entries[0].status, want, "{name}");
        }
    }

    #[test]
    fn entries_are_ordered_parents_first_segment_by_segment() {
        let paths = ["/j/a-b", "/j/a/b", "/j", "/j/a"];
        let entries = diff(paths.map(|p| (p.to_owned(), copy("", 0, 1))), []);
        let got: Vec<&str> = entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(got, ["/j", "/j/a", "/j/a/b", "/j/a-b"]);
    }

    #[test]
    fn the_text_dump_marks_each_line_and_counts_differences() {
        let entries = diff(
            [
                ("/j".to_owned(), copy("T", 0, 1)),
                ("/j/config".to_owned(), copy("cron: x\nitems: 2", 1, 2)),
                ("/j/gone".to_owned(), copy("", 0, 3)),
            ],
            [
                ("/j".to_owned(), copy("T", 0, 1)),
                ("/j/config".to_owned(), copy("cron: y", 2, 2)),
                ("/j/new".to_owned(), copy("x", 0, 4)),
            ],
        );
        let dump = JobDump::new("j".into(), "10.0.0.1@-@1".into(), true, entries);
        assert_eq!(dump.differences, 3);
        let text = dump.to_text();
        let lines: Vec<&str> = text.lines().skip(2).collect();
        assert_eq!(
            lines,
            [
                "= /j \"T\"",
                "~ /j/config mirror \"cron: x\\nitems: 2\" v1 | registry \"cron: y\" v2",
                "- /j/gone \"\"",
                "+ /j/new \"x\"",
            ]
        );
        let json = serde_json::to_value(&dump).unwrap();
        assert_eq!(json["nodes"][3]["status"], "registry_only");
        assert_eq!(json["nodes"][1]["mirror"]["data"], "cron: x\nitems: 2");
    }
}
