//! Output: aligned tables for people, one JSON document for scripts (`--json`). Status names are
//! the same in both (`OK`, `SHARDING_FLAG`, ...), taken from the reports' serde names.

use serde::Serialize;
use shardcron::ops::{JobBrief, JobDetail, ServerBrief, StoredConfig};

/// Prints `value` as pretty JSON.
pub(crate) fn json(value: &impl Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => println!("{text}"),
        // Every report is plain data; a failure here is a bug worth seeing.
        Err(e) => eprintln!("shardcronctl: cannot print JSON: {e}"),
    }
}

/// The serde name of a unit variant (`JobStatus::ShardingFlag` => `SHARDING_FLAG`).
fn name(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".to_owned(),
    }
}

fn or_dash(value: Option<impl ToString>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// Prints rows under headers, each column as wide as its widest cell.
fn table(headers: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(headers.iter().map(|h| h.to_string()).collect());
    for row in rows {
        line(row.clone());
    }
}

/// The `jobs` table.
pub(crate) fn jobs(jobs: &[JobBrief]) {
    let rows: Vec<Vec<String>> = jobs
        .iter()
        .map(|j| {
            vec![
                shardcron::ops::quote_name(j.job_name.as_str()),
                name(&j.status),
                or_dash(j.cron.as_deref()),
                j.instance_count.to_string(),
                or_dash(j.sharding_total_count),
                j.description.clone().unwrap_or_default(),
            ]
        })
        .collect();
    table(
        &["JOB", "STATUS", "CRON", "INSTANCES", "ITEMS", "DESCRIPTION"],
        &rows,
    );
}

/// The `job NAME` report.
pub(crate) fn job(d: &JobDetail) {
    println!("job:       {} ({})", d.job_name, d.job_type);
    println!("status:    {}", name(&d.status));
    match (&d.config, &d.config_error) {
        (Some(c), _) => {
            println!("cron:      {}", c.cron_expr().unwrap_or("- (one-off)"));
            println!("items:     {}", c.sharding_total_count);
        }
        (None, error) => println!("config:    unreadable: {}", or_dash(error.as_deref())),
    }
    println!("leader:    {}", or_dash(d.leader.as_ref()));
    let servers: Vec<String> = d
        .servers
        .iter()
        .map(|s| format!("{} {}", s.ip, name(&s.status)))
        .collect();
    println!("servers:   {}", servers.join(", "));
    let instances: Vec<&str> = d.instances.iter().map(|i| i.as_str()).collect();
    println!("instances: {}", instances.join(", "));
    println!();
    let rows: Vec<Vec<String>> = d
        .items
        .iter()
        .map(|i| {
            vec![
                i.item.to_string(),
                name(&i.status),
                or_dash(i.owner.as_ref()),
                or_dash(i.failover.as_ref()),
                if i.misfire { "yes" } else { "no" }.to_owned(),
            ]
        })
        .collect();
    table(&["ITEM", "STATUS", "OWNER", "FAILOVER", "MISFIRE"], &rows);
}

/// The `servers` table.
pub(crate) fn servers(servers: &[ServerBrief]) {
    let rows: Vec<Vec<String>> = servers
        .iter()
        .map(|s| {
            let instances: Vec<&str> = s.instances.iter().map(|i| i.as_str()).collect();
            let jobs: Vec<String> = s
                .jobs
                .iter()
                .map(|j| shardcron::ops::quote_name(j.as_str()))
                .collect();
            vec![
                s.ip.clone(),
                instances.join(","),
                jobs.join(","),
                s.disabled_jobs.to_string(),
            ]
        })
        .collect();
    table(&["IP", "INSTANCES", "JOBS", "DISABLED JOBS"], &rows);
}

/// `config get`: the YAML as stored, its version on stderr so that stdout can be edited and set.
pub(crate) fn config(c: &StoredConfig) {
    print!("{}", c.yaml);
    if !c.yaml.ends_with('\n') {
        println!();
    }
    eprintln!("# version {}", c.version);
}
