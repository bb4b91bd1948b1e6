//! Jobs files and scripts for tests that start nodes as processes (`--jobs jobs.yaml`): one way
//! to write an executable script, and one way to spell a `SCRIPT` job of the jobs file.
//!
//! ```text
//! script_job("ticks", 4, "'/tmp/x/run.sh'").cron("* * * * * ?").prop("shardcron.output", "4")
//!   →   - type: SCRIPT
//!         jobName: ticks
//!         cron: '* * * * * ?'
//!         timeZone: GMT
//!         shardingTotalCount: 4
//!         props:
//!           script.command.line: '/tmp/x/run.sh'
//!           shardcron.output: 4
//! ```

use std::path::{Path, PathBuf};

/// Writes `text` to `path` and makes it executable.
pub fn write_script(path: &Path, text: &str) {
    std::fs::write(path, text).expect("writing a script");
    let mut permissions = std::fs::metadata(path)
        .expect("a script just written")
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(path, permissions).expect("making a script executable");
}

/// One `SCRIPT` entry of a jobs file (time zone GMT), built with the methods below.
#[derive(Debug, Clone)]
pub struct ScriptEntry {
    name: String,
    items: u32,
    cron: Option<String>,
    /// Top-level `key: value` lines after `shardingTotalCount`, in order.
    keys: Vec<(String, String)>,
    /// `props` lines after `script.command.line`, in order.
    props: Vec<(String, String)>,
    command: String,
}

/// A job `name` of `items` items running `command`: the YAML value as written, quotes included
/// where the value needs them (`'{track} 2 0.1'`, `/bin/true`).
pub fn script_job(name: &str, items: u32, command: &str) -> ScriptEntry {
    ScriptEntry {
        name: name.to_owned(),
        items,
        cron: None,
        keys: Vec::new(),
        props: Vec::new(),
        command: command.to_owned(),
    }
}

impl ScriptEntry {
    /// Fires on `cron` (without one, the job runs when triggered or after its upstream).
    pub fn cron(mut self, cron: &str) -> Self {
        self.cron = Some(cron.to_owned());
        self
    }

    /// Runs `command` instead (for a script written after the entry was planned).
    pub fn command(mut self, command: &str) -> Self {
        self.command = command.to_owned();
        self
    }

    /// A top-level key, such as `failover: true` or `jobListenerTypes: [ONCE_LOG]`.
    pub fn key(mut self, key: &str, value: &str) -> Self {
        self.keys.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Failover on, misfire off, and the file's config written over the registry's: the shape of
    /// the chaos and soak jobs.
    pub fn resilient(self) -> Self {
        self.key("failover", "true")
            .key("misfire", "false")
            .key("overwrite", "true")
    }

    /// A `props` entry after the command line, such as `shardcron.after: flow`.
    pub fn prop(mut self, key: &str, value: &str) -> Self {
        self.props.push((key.to_owned(), value.to_owned()));
        self
    }

    /// The entry as YAML list item (`  - type: SCRIPT ...`), ending with a newline.
    pub fn yaml(&self) -> String {
        let mut out = format!("  - type: SCRIPT\n    jobName: {}\n", self.name);
        if let Some(cron) = &self.cron {
            out.push_str(&format!("    cron: '{cron}'\n"));
        }
        out.push_str(&format!(
            "    timeZone: GMT\n    shardingTotalCount: {}\n",
            self.items
        ));
        for (key, value) in &self.keys {
            out.push_str(&format!("    {key}: {value}\n"));
        }
        out.push_str(&format!(
            "    props:\n      script.command.line: {}\n",
            self.command
        ));
        for (key, value) in &self.props {
            out.push_str(&format!("      {key}: {value}\n"));
        }
        out
    }
}

/// The entries one after another (the `jobs:` list's items, without the `jobs:` line).
pub fn entries(jobs: &[ScriptEntry]) -> String {
    jobs.iter().map(ScriptEntry::yaml).collect()
}

/// Writes `dir/jobs.yaml` holding `jobs` and returns its path.
pub fn write_jobs(dir: &Path, jobs: &[ScriptEntry]) -> PathBuf {
    let path = dir.join("jobs.yaml");
    std::fs::write(&path, format!("jobs:\n{}", entries(jobs))).expect("writing the jobs file");
    path
}
