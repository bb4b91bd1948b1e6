//! The ZooKeeper client's IO runs on a runtime of its own: one thread, started on first use, that
//! only serves sessions (reads and writes on their sockets, pings, state changes).
//!
//! The client sends its pings from the task that owns the connection. On the engine's runtime
//! that task would queue behind whatever the jobs make runnable (ten thousand item tasks a second,
//! forks of script children) and the server would expire a session whose node is merely busy.
//! Here it shares its thread with nothing but other sessions: keep-alive does not depend on the
//! job load. Calls from the engine still go through the client's channels and are awaited on the
//! caller's runtime.

use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle};

/// The IO runtime's handle, starting its thread on first use.
///
/// # Panics
///
/// When the thread or its runtime cannot be created (out of threads or file descriptors at
/// startup): no session could be opened either.
pub(super) fn handle() -> &'static Handle {
    static IO: OnceLock<Handle> = OnceLock::new();
    IO.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("shardcron-zk-io".into())
            .spawn(move || {
                let runtime = Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("building the ZooKeeper IO runtime");
                // The receiver waits for this handle; it cannot be gone.
                let _ = tx.send(runtime.handle().clone());
                // Serves sessions for as long as the process lives.
                runtime.block_on(std::future::pending::<()>());
            })
            .expect("starting the ZooKeeper IO thread");
        rx.recv().expect("the ZooKeeper IO thread sends its handle")
    })
}
