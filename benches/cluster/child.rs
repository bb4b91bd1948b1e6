//! Child processes: scenarios whose memory, threads or death must be their own re-run this bench
//! binary as `--child KIND key=value...`; a child prints one `result key=value ...` line.

use std::collections::BTreeMap;
use std::process::Command;

/// Figures a child reports, by name.
#[derive(Debug, Default)]
pub(crate) struct Results(BTreeMap<String, u64>);

impl Results {
    /// Sets a figure.
    pub(crate) fn put(&mut self, key: &str, value: u64) {
        self.0.insert(key.to_owned(), value);
    }

    /// A figure; panics naming it when the child did not report it.
    pub(crate) fn get(&self, key: &str) -> u64 {
        *self
            .0
            .get(key)
            .unwrap_or_else(|| panic!("the child reported no {key}: {:?}", self.0))
    }

    /// Prints the `result` line the parent parses.
    pub(crate) fn print(&self) {
        let fields: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!("result {}", fields.join(" "));
    }

    /// The figures of a `result` line; `None` for any other line.
    pub(crate) fn parse(line: &str) -> Option<Results> {
        let rest = line.strip_prefix("result ")?;
        Some(Results(
            rest.split_whitespace()
                .filter_map(|f| {
                    let (k, v) = f.split_once('=')?;
                    Some((k.to_owned(), v.parse().ok()?))
                })
                .collect(),
        ))
    }
}

/// Runs `cluster --child ARGS...` to completion and returns its results; panics with its output
/// when it fails.
pub(crate) fn run(args: &[&str]) -> Results {
    let exe = std::env::current_exe().expect("the bench binary's own path");
    let out = Command::new(exe)
        .arg("--child")
        .args(args)
        .output()
        .expect("re-running the bench binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    match stdout.lines().find_map(Results::parse) {
        Some(r) if out.status.success() => r,
        _ => panic!(
            "child {args:?} failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// Parses `key=value` arguments.
pub(crate) fn args(raw: &[String]) -> BTreeMap<&str, &str> {
    raw.iter().filter_map(|a| a.split_once('=')).collect()
}
