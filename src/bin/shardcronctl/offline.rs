//! The commands answered from the history database, with no registry involved: `stats`,
//! `history`, `audit`.

use shardcron::history::{
    render_audits, render_executions, render_stats, AuditQuery, Granularity, HistoryQuery,
    RetentionRecord, MAX_STATS_ROWS,
};

use crate::{cli, logs, print, CtlError};

/// `stats`: statistics from the execution history; no registry is involved.
pub(crate) async fn stats(args: cli::StatsArgs, json: bool) -> Result<(), CtlError> {
    let since = args.since.unwrap_or_else(|| {
        let back = match args.by {
            Granularity::Hour => chrono::Duration::hours(24),
            Granularity::Day => chrono::Duration::days(30),
        };
        chrono::Utc::now() - back
    });
    let history = logs::open_to_read::<CtlError>(args.db).await?;
    let stats = history.stats(&args.job, since, args.by).await?;
    let retention = history.retention_of(args.job.as_str()).await?;
    history.close().await;
    if json {
        print::json(&stats);
    } else {
        print!("{}", render_stats(&stats.buckets, args.by));
    }
    eprintln!(
        "stats of {} since {}{}; history {}",
        args.job,
        since.format("%Y-%m-%d %H:%M:%S UTC"),
        if stats.truncated {
            format!(" (the newest {MAX_STATS_ROWS} executions only)")
        } else {
            String::new()
        },
        RetentionRecord::describe(retention.as_ref())
    );
    Ok(())
}

/// `history`: reads the execution history directly; no registry is involved.
pub(crate) async fn history(args: cli::HistoryArgs, json: bool) -> Result<(), CtlError> {
    let mut query = HistoryQuery::job(args.job);
    query.item = args.item;
    query.since = args.since;
    query.failed_only = args.failed;
    query.workflow_run = args.workflow_run;
    let history = logs::open_to_read::<CtlError>(args.db).await?;
    let records = history.query(&query).await?;
    let retention = history.retention_of(query.job.as_str()).await?;
    history.close().await;
    if json {
        print::json(&records);
    } else {
        print!("{}", render_executions(&records));
    }
    // Which window the rows were kept for, on stderr so that the table (or JSON) stays as it is.
    eprintln!(
        "history of {}: {}",
        query.job,
        RetentionRecord::describe(retention.as_ref())
    );
    Ok(())
}

/// `audit`: reads the audit log directly; no registry is involved.
pub(crate) async fn audit(args: cli::AuditArgs, json: bool) -> Result<(), CtlError> {
    let history = logs::open_to_read::<CtlError>(args.db).await?;
    let query = AuditQuery {
        job: args.job,
        limit: args.limit,
    };
    let records = history.audits(&query).await?;
    history.close().await;
    if json {
        print::json(&records);
    } else {
        print!("{}", render_audits(&records));
    }
    Ok(())
}
