//! The commands run over one registry session: reads of jobs, servers and configs, and the writes
//! (config, trigger, disable/enable, shutdown, backfill, create, remove), each answered as a line
//! of text or, with `--json`, as JSON.

use serde_json::json;
use shardcron::ops::{JobForm, Ops, OpsError, RemoveMode, ShutdownScope, Target};

use crate::cli::{self, Command, ConfigCommand};
use crate::{print, CtlError};

pub(crate) async fn execute(
    ops: &Ops,
    command: Command,
    new_config: Option<String>,
    json: bool,
) -> Result<(), CtlError> {
    match command {
        Command::Jobs => {
            let (jobs, not_jobs) = ops.job_roots().await?;
            for n in &not_jobs {
                eprintln!(
                    "shardcronctl: root {} is not a job: {}",
                    shardcron::ops::quote_name(&n.root),
                    n.reason
                );
            }
            if json {
                print::json(&jobs)
            } else {
                print::jobs(&jobs)
            }
        }
        Command::Job(arg) => {
            let mut detail = ops.job(&arg.job).await?;
            detail.config = detail.config.map(|c| c.redacted());
            if json {
                print::json(&detail)
            } else {
                print::job(&detail)
            }
        }
        Command::Servers => {
            let servers = ops.servers().await?;
            if json {
                print::json(&servers)
            } else {
                print::servers(&servers)
            }
        }
        Command::Config(ConfigCommand::Get(arg)) => {
            // Shown redacted: `config set` of the edited text keeps the secrets left as `***`.
            let config = ops.config_get(&arg.job).await?.redacted();
            if json {
                print::json(&config)
            } else {
                print::config(&config)
            }
        }
        Command::Config(ConfigCommand::Set(set)) => {
            let (job, yaml) = (set.job, new_config.unwrap_or_default());
            let written = match set.version {
                Some(v) => ops.config_set_at(&job, &yaml, v).await?,
                None => ops.config_set(&job, &yaml).await?,
            };
            report(
                json,
                json!({ "jobName": job, "version": written }),
                format!("config of job {job} written (version {written})"),
            );
        }
        Command::Trigger(args) => {
            let job = args.job;
            let params = shardcron::ops::TriggerParams {
                job_parameter: args.param,
                items: args.items,
                workflow_run: None,
            };
            let asked = ops.trigger_with(&job, &params).await?;
            let names: Vec<&str> = asked.iter().map(|i| i.as_str()).collect();
            report(
                json,
                json!({ "jobName": job, "triggered": asked }),
                format!("job {job} triggered on {}", names.join(", ")),
            );
        }
        Command::Disable(args) => switch(ops, args, false, json).await?,
        Command::Enable(args) => switch(ops, args, true, json).await?,
        Command::Shutdown(args) => {
            let scope = match args.instance {
                Some(id) => ShutdownScope::Instance(id),
                None => ShutdownScope::AllInstances,
            };
            let stopped = ops.shutdown(&args.job, scope).await?;
            let names: Vec<&str> = stopped.iter().map(|i| i.as_str()).collect();
            report(
                json,
                json!({ "jobName": args.job, "shutdown": stopped }),
                format!("job {} shut down on {}", args.job, or_none(&names)),
            );
        }
        Command::Backfill(args) => backfill(ops, args, json).await?,
        Command::Workflow(cli::WorkflowCommand::Show(args)) => {
            let graph = ops.workflow_graph(args.job.as_ref()).await?;
            if json {
                print::json(&graph)
            } else {
                print!("{}", shardcron::ops::render_graph(&graph))
            }
        }
        Command::Workflow(cli::WorkflowCommand::Runs(args)) => {
            let runs = ops
                .workflow_runs(&args.job, usize::from(args.limit))
                .await?;
            if json {
                print::json(&runs)
            } else {
                print!("{}", shardcron::ops::render_runs(&runs))
            }
        }
        Command::Create(args) => {
            let form = JobForm {
                job_name: args.job.to_string(),
                job_type: args.job_type,
                cron: args.cron,
                items: args.items,
                command: args.command,
                url: args.url,
                method: args.method,
                data: args.data,
                content_type: args.content_type,
                time_zone: args.time_zone,
                item_parameters: args.item_parameters,
                job_parameter: args.job_parameter,
                label: args.label,
                description: args.description,
                failover: args.failover,
                props: args.props.into_iter().collect(),
            };
            let new = form.to_new_job()?;
            let job_type = new.job_type;
            ops.create(new).await?;
            report(
                json,
                json!({ "jobName": args.job, "type": job_type.root_data(), "created": true }),
                format!(
                    "job {} created ({job_type}); nodes started with --adopt run it from its next fire",
                    args.job
                ),
            );
        }
        Command::Remove(args) => {
            let mode = if args.force {
                RemoveMode::Force
            } else {
                RemoveMode::RefuseWhileRunning
            };
            let stopped = ops.remove(&args.job, mode).await?;
            let names: Vec<&str> = stopped.iter().map(|i| i.as_str()).collect();
            report(
                json,
                json!({ "jobName": args.job, "removed": true, "shutdown": stopped }),
                format!(
                    "job {} removed (shut down on {})",
                    args.job,
                    or_none(&names)
                ),
            );
        }
        Command::History(_)
        | Command::Logs(_)
        | Command::Stats(_)
        | Command::Audit(_)
        | Command::Cron(_)
        | Command::Console(_)
        | Command::Completions(_) => {
            unreachable!("answered before connecting")
        }
    }
    Ok(())
}

fn target(server: Option<String>, item: Option<shardcron::ShardItem>) -> Target {
    match (server, item) {
        (Some(ip), _) => Target::Server(ip),
        (None, Some(item)) => Target::Item(item),
        (None, None) => Target::AllServers,
    }
}

/// `disable` (`on` false) or `enable` (`on` true) a server or an item of a job.
async fn switch(ops: &Ops, args: cli::SwitchArgs, on: bool, json: bool) -> Result<(), OpsError> {
    let target = target(args.server, args.item);
    let (done, word) = if on {
        (ops.enable(&args.job, target).await?, "enabled")
    } else {
        (ops.disable(&args.job, target).await?, "disabled")
    };
    let mut answer = json!({ "jobName": args.job });
    answer[word] = json!(done);
    report(
        json,
        answer,
        format!("job {}: {word} {}", args.job, describe(&done)),
    );
    Ok(())
}

/// `backfill`: the instants listed (a dry run) or requested, or the backfill cancelled.
async fn backfill(ops: &Ops, args: cli::BackfillArgs, json: bool) -> Result<(), OpsError> {
    let job = args.job;
    if args.status {
        return backfill_status(ops, &job, json).await;
    }
    let (Some(from), Some(to)) = (args.from, args.to) else {
        let cancelled = ops.cancel_backfill(&job).await?;
        let text = if cancelled {
            format!("backfill of job {job} cancelled")
        } else {
            format!("job {job} has no backfill")
        };
        report(
            json,
            json!({ "jobName": job, "cancelled": cancelled }),
            text,
        );
        return Ok(());
    };
    let plan = ops.backfill(&job, from, to, args.dry_run).await?;
    let instants: Vec<String> = plan.instants.iter().map(|t| t.to_rfc3339()).collect();
    let text = if args.dry_run {
        format!(
            "job {job}: {} instants would run, in order:\n{}",
            instants.len(),
            instants.join("\n")
        )
    } else {
        format!(
            "job {job}: backfill of {} instants requested, from {} to {} (cancel with \
             `shardcronctl backfill {job} --cancel`)",
            instants.len(),
            instants.first().map_or("", String::as_str),
            instants.last().map_or("", String::as_str)
        )
    };
    report(json, serde_json::to_value(&plan).unwrap_or_default(), text);
    Ok(())
}

/// `backfill NAME --status`: the request and each item's progress.
async fn backfill_status(
    ops: &Ops,
    job: &shardcron::types::JobName,
    json: bool,
) -> Result<(), OpsError> {
    let Some(status) = ops.backfill_status(job).await? else {
        report(
            json,
            serde_json::Value::Null,
            format!("job {job} has no backfill"),
        );
        return Ok(());
    };
    let at =
        |t: Option<chrono::DateTime<chrono::Utc>>| t.map_or_else(String::new, |t| t.to_rfc3339());
    let mut text = format!(
        "job {job}: backfill {} of {} instants, from {} to {}: {}\n",
        status.id,
        status.instants,
        at(status.first),
        at(status.last),
        match status.left {
            0 => "finished".to_owned(),
            n => format!("{n} item instants left"),
        }
    );
    for i in &status.items {
        text.push_str(&format!(
            "  item {}: {}/{}\n",
            i.item, i.done, status.instants
        ));
    }
    report(
        json,
        serde_json::to_value(&status).unwrap_or_default(),
        text.trim_end().to_owned(),
    );
    Ok(())
}

fn report(json: bool, value: serde_json::Value, text: String) {
    if json {
        print::json(&value)
    } else {
        println!("{text}")
    }
}

fn describe(targets: &[Target]) -> String {
    let parts: Vec<String> = targets
        .iter()
        .map(|t| match t {
            Target::AllServers => "every server".to_owned(),
            Target::Server(ip) => format!("server {ip}"),
            Target::Item(i) => format!("item {i}"),
        })
        .collect();
    or_none(&parts.iter().map(String::as_str).collect::<Vec<_>>())
}

fn or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "nothing".to_owned()
    } else {
        names.join(", ")
    }
}
