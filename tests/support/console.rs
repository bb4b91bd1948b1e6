//! The console on a test's registry: started, its base URL at hand.

use std::sync::Arc;

use shardcron::console::{Console, ConsoleOptions};
use shardcron::registry::Connector;

/// A console on `conn` with `options`, and its base URL (`http://127.0.0.1:PORT`).
pub async fn start_console(conn: Arc<dyn Connector>, options: ConsoleOptions) -> (Console, String) {
    let console = Console::start(conn, options)
        .await
        .expect("the console starts");
    let base = format!("http://{}", console.local_addr());
    (console, base)
}

/// On loopback for namespace `ns`, without a token, reading the history `db`.
pub fn with_history(ns: &str, db: &str) -> ConsoleOptions {
    ConsoleOptions {
        history: Some(db.to_owned()),
        ..ConsoleOptions::loopback(ns)
    }
}
