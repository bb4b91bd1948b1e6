//! `shardcronctl logs NAME [--db TARGET] [--item N] [--run ID] [--follow]`: the captured output
//! of one item run, read from the history (`SHARDCRON_EXECUTION_OUTPUT`); no registry involved.
//!
//! A script's stdout lines go to stdout and its stderr lines to stderr, as the script wrote them;
//! a handler's lines and an HTTP job's answer go to stdout. What the ring evicted before it was
//! read is said on stderr (`... N bytes of output dropped`). `--json` prints the row instead.
//!
//! `--follow` reads the row again every [`FOLLOW_EVERY`] while the item runs (its node rewrites
//! it at most once a second while the output changes) and prints what is new, until the row or
//! the execution says the item has ended. Each read is one row of at most the job's bound.

use std::io::Write;
use std::time::Duration;

use shardcron::history::{
    ExecutionRecord, History, HistoryError, HistoryLookupError, HistoryTarget, OutputQuery,
    OutputRecord, HISTORY_ENV,
};
use shardcron::job::output::{split_lines, Stream};

use crate::cli::LogsArgs;

/// How often `--follow` reads the row again.
pub(crate) const FOLLOW_EVERY: Duration = Duration::from_millis(500);

/// Why `logs` printed nothing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LogsError {
    /// Reading the history.
    #[error("history: {0}")]
    History(#[from] HistoryError),
    /// Opening the history: it does not exist.
    #[error(transparent)]
    NoHistory(#[from] HistoryLookupError),
    /// Finding the execution: none matches.
    #[error("no execution of {job}{which} in the history")]
    NoExecution {
        /// The job.
        job: String,
        /// The item and run asked for, as ` item 1 run 42`.
        which: String,
    },
    /// Reading the output: the execution has none.
    #[error(
        "execution {id} has no captured output (the job captures it with props \
         shardcron.output, a number of KiB)"
    )]
    NoOutput {
        /// The execution.
        id: String,
    },
}

/// Opens the history `db` (else `$SHARDCRON_HISTORY`) to read it. Reading never creates a
/// database: a missing file or folder is said, not made.
pub(crate) async fn open_to_read<E>(db: Option<String>) -> Result<History, E>
where
    E: From<HistoryError> + From<HistoryLookupError>,
{
    let db = db
        .or_else(|| std::env::var(HISTORY_ENV).ok())
        .unwrap_or_default();
    HistoryTarget::parse(&db).require_existing()?;
    Ok(History::open(&db).await?)
}

/// Runs `logs`.
pub(crate) async fn logs(args: LogsArgs, json: bool) -> Result<(), LogsError> {
    let history = open_to_read::<LogsError>(args.db.clone()).await?;
    let result = print_output(&history, &args, json).await;
    history.close().await;
    result
}

async fn print_output(history: &History, args: &LogsArgs, json: bool) -> Result<(), LogsError> {
    let query = OutputQuery {
        job: args.job.clone(),
        item: args.item,
        run: args.run.clone(),
    };
    let execution =
        history
            .find_execution(&query)
            .await?
            .ok_or_else(|| LogsError::NoExecution {
                job: args.job.to_string(),
                which: describe(&query),
            })?;
    let mut read = 0;
    let mut announced = false;
    loop {
        let row = history.output(&execution.id).await?;
        let ended = match &row {
            Some(row) if row.complete => true,
            _ => ended(history, &execution).await?,
        };
        match row {
            Some(row) if json => {
                if ended || !args.follow {
                    println!("{}", serde_json::to_string_pretty(&row).unwrap_or_default());
                    return Ok(());
                }
            }
            Some(row) => {
                if !announced {
                    eprintln!("{}", heading(&execution));
                    announced = true;
                }
                read = print_new(&row, read);
            }
            // Still running: its first chunk may not be written yet.
            None if args.follow && !ended => {}
            None => {
                return Err(LogsError::NoOutput {
                    id: execution.id.clone(),
                })
            }
        }
        if ended || !args.follow {
            return Ok(());
        }
        tokio::time::sleep(FOLLOW_EVERY).await;
    }
}

/// Whether the execution's row says it has ended (a row gone meanwhile, purged: ended too).
async fn ended(history: &History, execution: &ExecutionRecord) -> Result<bool, LogsError> {
    if execution.complete_time.is_some() {
        return Ok(true);
    }
    Ok(history
        .execution(&execution.id)
        .await?
        .is_none_or(|e| e.complete_time.is_some()))
}

/// Prints what of `row` comes after the first `from` bytes; returns how far has been read.
fn print_new(row: &OutputRecord, from: u64) -> u64 {
    let snapshot = row.snapshot();
    let new = snapshot.since(from);
    if new.lost > 0 {
        eprintln!("... {} bytes of output dropped", new.lost);
    }
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    for (stream, line) in split_lines(new.text) {
        // A closed pipe (`| head`) ends the output, not the command.
        let _ = match stream {
            Stream::Stderr => writeln!(err, "{line}"),
            Stream::Stdout | Stream::Log | Stream::Http => writeln!(out, "{line}"),
        };
    }
    let _ = out.flush();
    new.next
}

/// `execution ID (item 1, started ..., OK)`, on stderr before the output.
fn heading(e: &ExecutionRecord) -> String {
    let state = match (e.complete_time, e.is_success) {
        (None, _) => "RUNNING",
        (Some(_), true) => "OK",
        (Some(_), false) => "FAILED",
    };
    format!(
        "execution {} (item {}, started {}, {state})",
        e.id,
        e.sharding_item,
        e.start_time.format("%Y-%m-%d %H:%M:%S%.3f UTC")
    )
}

fn describe(query: &OutputQuery) -> String {
    let mut which = String::new();
    if let Some(item) = query.item {
        which += &format!(" item {item}");
    }
    if let Some(run) = &query.run {
        which += &format!(" run {run:?}");
    }
    which
}
