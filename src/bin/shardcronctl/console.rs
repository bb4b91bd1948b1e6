//! `console`: its options from the flags (tokens from files or the environment, never argv) and
//! the signals that stop it.

use shardcron::console::ConsoleOptions;
use shardcron::secret::Secret;

use crate::{cli, CtlError};

/// The console's options from its flags: tokens from files or the environment, never argv.
pub(crate) fn console_options(
    args: cli::ConsoleArgs,
    namespace: &str,
) -> Result<ConsoleOptions, CtlError> {
    if args.token.is_some() {
        return Err(CtlError::BadToken {
            option: "--token",
            reason: "is removed: a token in argv is visible to every user in `ps`; put it in a \
                     file (--token-file FILE) or in $SHARDCRON_CONSOLE_TOKEN"
                .to_owned(),
        });
    }
    let token = read_token(
        "--token-file",
        args.token_file.as_deref(),
        "SHARDCRON_CONSOLE_TOKEN",
    )?;
    let viewer_token = read_token(
        "--viewer-token-file",
        args.viewer_token_file.as_deref(),
        "SHARDCRON_CONSOLE_VIEWER_TOKEN",
    )?;
    Ok(ConsoleOptions {
        listen: args.listen,
        token,
        viewer_token,
        allowed_hosts: args.allowed_host,
        history: args
            .history
            .or_else(|| std::env::var(shardcron::history::HISTORY_ENV).ok()),
        namespace: namespace.to_owned(),
    })
}

/// The largest token file read.
const MAX_TOKEN_FILE: u64 = 4096;

/// A token from `file` (its first line, trimmed), else from the environment variable `env`.
fn read_token(
    option: &'static str,
    file: Option<&std::path::Path>,
    env: &str,
) -> Result<Option<Secret<String>>, CtlError> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = file else {
        return Ok(std::env::var(env)
            .ok()
            .map(|t| Secret::new(t.trim().to_owned())));
    };
    let bad = |reason: String| CtlError::BadToken { option, reason };
    let f = std::fs::File::open(path)
        .map_err(|e| bad(format!("{}: cannot be read: {e}", path.display())))?;
    let meta = f
        .metadata()
        .map_err(|e| bad(format!("{}: cannot be read: {e}", path.display())))?;
    if meta.len() > MAX_TOKEN_FILE {
        return Err(bad(format!(
            "{}: {} bytes, more than a token ({MAX_TOKEN_FILE} bytes at most)",
            path.display(),
            meta.len()
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        eprintln!(
            "shardcronctl: warning: {} can be read by other users (chmod 600 it)",
            path.display()
        );
    }
    let mut text = String::new();
    f.take(MAX_TOKEN_FILE)
        .read_to_string(&mut text)
        .map_err(|e| bad(format!("{}: cannot be read: {e}", path.display())))?;
    let token = text.lines().next().unwrap_or("").trim().to_owned();
    Ok(Some(Secret::new(token)))
}

/// SIGINT and SIGTERM, watched from the moment this is called (so a signal sent as soon as the
/// console says where it listens is not lost to the default action).
pub(crate) fn stop_signals() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let interrupt = signal(SignalKind::interrupt());
    let terminate = signal(SignalKind::terminate());
    async move {
        match (interrupt, terminate) {
            (Ok(mut interrupt), Ok(mut terminate)) => tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            },
            (interrupt, terminate) => {
                let e = interrupt.err().or(terminate.err());
                eprintln!("shardcronctl: cannot watch signals ({e:?}); stopping on Ctrl-C only");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}
