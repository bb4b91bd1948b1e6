//! The child keeper: a script's child process must not outlive its node's hold on the item.
//!
//! A node cancels its items before its session can expire (fencing by time), but only while it
//! runs. A node frozen by SIGSTOP (or killed with kill -9) cannot kill its children: they would run
//! on beside the survivor that fails their items over. So the first script child of a process
//! forks a *keeper*, a small process that only watches: the node sends it a heartbeat every
//! [`BEAT`] from a thread of its own, and announces every child's spawn before it and its pid and
//! lease after it ([`announce`]): a node that dies between the two leaves an announced spawn,
//! whose child the keeper finds by the name in its environment ([`announced`](super::announced)).
//! When no heartbeat came for a child's lease (the node is frozen), or the node is gone (the
//! keeper's pipe closed), the keeper kills the child's whole process group (SIGKILL; the child
//! leads a group of its own, see [`group`](super::group)).
//!
//! The lease is the session's ([`FenceBudget::frozen_node_lease`]): the server cannot expire a
//! session sooner than a ping interval plus two margins after the keeper's deadline, and only then
//! may a survivor start. A process frozen with its children (a VM pause, SIGSTOP of the whole
//! tree) freezes the keeper too: nothing runs on, and on resume the node's own fencing cancels.
//!
//! Forked without exec: the keeper runs only async-signal-safe calls (poll, read, kill,
//! clock_gettime, close, _exit) on stack data, as POSIX requires of a child of a threaded
//! process. It closes every descriptor but its pipe, so it holds no socket or port of the node.
//! Linux only; elsewhere, or when the fork fails (logged once), children are not kept.
//!
//! [`FenceBudget::frozen_node_lease`]: crate::decide::lifecycle::FenceBudget::frozen_node_lease

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How often the node tells its keeper that it runs.
pub const BEAT: Duration = Duration::from_millis(200);

/// How often the keeper looks at its leases when nothing arrives: well under the smallest margin
/// of a lease (100 ms).
const POLL_MS: i32 = 50;

/// The most children watched at once; a child past it is not kept (logged).
const SLOTS: usize = 4096;

const BEAT_RECORD: u32 = 1;
const WATCH_RECORD: u32 = 2;
const RELEASE_RECORD: u32 = 3;
const ANNOUNCE_RECORD: u32 = 4;
const WITHDRAW_RECORD: u32 = 5;

/// How many times, 5 ms apart, the keeper searches `/proc` for an announced spawn's child that it
/// did not find yet (a child inside its exec, or a spawn that never happened: 200 ms at most).
const FIND_TRIES: u32 = 40;

/// The most spawns announced and not yet reported at once; a spawn past it is not announced
/// (its child is kept from its report on, as before announcements).
const ANNOUNCED_SLOTS: usize = 256;

/// One message to the keeper: kind, pid, lease in ms, and a spawn's sequence number, all
/// native-endian. Sixteen bytes is below `PIPE_BUF`, so writes are atomic and records never
/// interleave.
type Record = [u8; 16];

fn record(kind: u32, pid: i32, lease_ms: u32, seq: u32) -> Record {
    let mut r = [0u8; 16];
    r[0..4].copy_from_slice(&kind.to_ne_bytes());
    r[4..8].copy_from_slice(&pid.to_ne_bytes());
    r[8..12].copy_from_slice(&lease_ms.to_ne_bytes());
    r[12..16].copy_from_slice(&seq.to_ne_bytes());
    r
}

/// A child under the keeper's watch: released when dropped (after the child was reaped, or
/// killed and reaped).
#[derive(Debug)]
pub struct Watched {
    pid: i32,
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(keeper) = keeper() {
            keeper.send(&record(RELEASE_RECORD, self.pid, 0, 0));
        }
    }
}

/// A spawn announced to the keeper ([`announce`]): reported with [`Announced::watch`] once the
/// child runs; dropped unreported (the spawn failed), it is withdrawn.
#[derive(Debug)]
pub struct Announced {
    seq: u32,
}

/// Announces to the keeper the spawn `command` is about to make, kept for `lease`, and names it
/// in the child's environment ([`SPAWN_ENV`](super::announced::SPAWN_ENV)): should the node die
/// (or freeze past the lease) before it reports the child's pid, the keeper finds the child by
/// that name. `None` when there is no keeper.
pub fn announce(command: &mut tokio::process::Command, lease: Duration) -> Option<Announced> {
    static SEQ: AtomicU32 = AtomicU32::new(1);
    let keeper = keeper()?;
    // Never 0 (a free slot in the keeper): skipped at the wrap.
    let seq = match SEQ.fetch_add(1, Ordering::Relaxed) {
        0 => SEQ.fetch_add(1, Ordering::Relaxed),
        seq => seq,
    };
    command.env(
        super::announced::SPAWN_ENV,
        format!("{}.{seq}", std::process::id()),
    );
    let lease_ms = u32::try_from(lease.as_millis()).unwrap_or(u32::MAX);
    keeper.send(&record(ANNOUNCE_RECORD, 0, lease_ms, seq));
    Some(Announced { seq })
}

impl Announced {
    /// Puts the announced child `pid` under the keeper's watch for `lease`: killed if its node
    /// sends no heartbeat for that long, or ends. `None` when the pid does not fit a `pid_t`
    /// (the announcement is then withdrawn).
    pub fn watch(self, pid: u32, lease: Duration) -> Option<Watched> {
        let pid = i32::try_from(pid).ok()?;
        let lease_ms = u32::try_from(lease.as_millis()).unwrap_or(u32::MAX);
        if let Some(keeper) = keeper() {
            keeper.send(&record(WATCH_RECORD, pid, lease_ms, self.seq));
        }
        std::mem::forget(self);
        Some(Watched { pid })
    }
}

impl Drop for Announced {
    fn drop(&mut self) {
        if let Some(keeper) = keeper() {
            keeper.send(&record(WITHDRAW_RECORD, 0, 0, self.seq));
        }
    }
}

/// The node's end of the keeper's pipe.
#[derive(Debug)]
struct Keeper {
    pipe: Mutex<std::fs::File>,
}

impl Keeper {
    /// Sends one record without ever blocking the caller (a runtime worker): the pipe is
    /// non-blocking, and a keeper so far behind that its pipe is full loses the record (logged
    /// once). A lost watch leaves that child unkept; a lost release leaves its slot taken, and
    /// should the node later freeze past the lease, a kill sent to that pid (by then reaped, and
    /// reused only if the system went through its whole pid space meanwhile).
    fn send(&self, r: &Record) {
        use std::io::Write;
        let mut pipe = self
            .pipe
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match pipe.write(r) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                static BEHIND: AtomicBool = AtomicBool::new(false);
                warn_once(
                    &BEHIND,
                    "the child keeper is behind (its pipe is full); a child is not kept",
                );
            }
            Err(e) => {
                static GONE: AtomicBool = AtomicBool::new(false);
                warn_once(
                    &GONE,
                    &format!("the child keeper does not listen ({e}); children are not kept"),
                );
            }
        }
    }
}

/// Logs `what` the first time `flag` is raised: a keeper's trouble repeats at every child.
fn warn_once(flag: &AtomicBool, what: &str) {
    if !flag.swap(true, Ordering::Relaxed) {
        tracing::warn!("{what}");
    }
}

/// The process's keeper, forked on first use with its heartbeat thread.
fn keeper() -> Option<&'static Keeper> {
    static KEEPER: OnceLock<Option<Keeper>> = OnceLock::new();
    KEEPER
        .get_or_init(|| match start() {
            Ok(keeper) => Some(keeper),
            Err(e) => {
                // Logged once: the cell is initialised once.
                tracing::warn!("cannot start the child keeper ({e}); children are not kept");
                None
            }
        })
        .as_ref()
}

#[cfg(target_os = "linux")]
fn start() -> std::io::Result<Keeper> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`, which has room for them.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let (read_end, write_end) = (fds[0], fds[1]);
    // SAFETY: the child runs `serve` only, which makes async-signal-safe calls on stack data and
    // never returns; the parent goes on as usual.
    match unsafe { libc::fork() } {
        -1 => {
            let e = std::io::Error::last_os_error();
            // SAFETY: both descriptors are ours and open.
            unsafe {
                libc::close(read_end);
                libc::close(write_end);
            }
            Err(e)
        }
        0 => serve(read_end),
        _ => {
            // SAFETY: the read end is the keeper's now; ours is closed so that the keeper sees
            // the end of the pipe when this process ends.
            unsafe { libc::close(read_end) };
            // SAFETY: `write_end` is an open descriptor owned by nothing else; making it
            // non-blocking only changes how writes fail.
            let pipe = unsafe {
                libc::fcntl(write_end, libc::F_SETFL, libc::O_NONBLOCK);
                std::fs::File::from_raw_fd(write_end)
            };
            let beat = pipe.try_clone()?;
            std::thread::Builder::new()
                .name("shardcron-keeper-beat".into())
                .spawn(move || beat_loop(beat))?;
            Ok(Keeper {
                pipe: Mutex::new(pipe),
            })
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn start() -> std::io::Result<Keeper> {
    Err(std::io::Error::other("the child keeper runs on Linux only"))
}

/// The heartbeat thread: a thread of its own, so that a busy runtime does not look frozen; it
/// stops only with the whole process.
fn beat_loop(mut pipe: std::fs::File) {
    use std::io::Write;
    let beat = record(BEAT_RECORD, 0, 0, 0);
    loop {
        match pipe.write(&beat) {
            // A full pipe holds beats enough: the keeper is behind, not the node.
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
        std::thread::sleep(BEAT);
    }
}

/// The keeper's life: never returns.
#[cfg(target_os = "linux")]
fn serve(read_end: libc::c_int) -> ! {
    // SAFETY (whole function): async-signal-safe calls only, on stack data.
    unsafe {
        // Fd 3 is the pipe; every other descriptor of the node is closed.
        if read_end != 3 {
            libc::dup2(read_end, 3);
        }
        if libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32) != 0 {
            for fd in 4..4096 {
                libc::close(fd);
            }
        }
        for fd in 0..3 {
            libc::close(fd);
        }
        // A Ctrl-C or SIGTERM meant for the node: the node stops its children itself, and the
        // keeper sees the pipe close after it.
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        libc::fcntl(3, libc::F_SETFL, libc::O_NONBLOCK);
        let node = libc::getppid();
        let mut pids = [0i32; SLOTS];
        let mut leases = [0u64; SLOTS];
        // Spawns announced and not yet reported: their sequence numbers and leases.
        let mut announced = [0u32; ANNOUNCED_SLOTS];
        let mut announced_leases = [0u64; ANNOUNCED_SLOTS];
        let mut last_beat = now_ms();
        let mut buf = [0u8; 16 * 256];
        loop {
            let mut pfd = libc::pollfd {
                fd: 3,
                events: libc::POLLIN,
                revents: 0,
            };
            libc::poll(&mut pfd, 1, POLL_MS);
            // Everything queued is read before any lease is judged: a keeper that was not
            // scheduled for a while must not take the node's queued heartbeats for silence.
            loop {
                let n = libc::read(3, buf.as_mut_ptr().cast(), buf.len());
                if n == 0 {
                    // The node is gone: nothing will stop its children now, those it spawned
                    // and did not live to report included.
                    for pid in pids.iter().filter(|p| **p > 0) {
                        libc::kill(-*pid, libc::SIGKILL);
                    }
                    super::announced::find_all(node, &announced, FIND_TRIES, 5, kill_group);
                    libc::_exit(0);
                }
                if n < 0 {
                    break;
                }
                let n = usize::try_from(n).unwrap_or(0);
                for r in buf[..n].chunks_exact(16) {
                    let word = |i: usize| [r[i], r[i + 1], r[i + 2], r[i + 3]];
                    let kind = u32::from_ne_bytes(word(0));
                    let pid = i32::from_ne_bytes(word(4));
                    let lease = u64::from(u32::from_ne_bytes(word(8)));
                    let seq = u32::from_ne_bytes(word(12));
                    match kind {
                        BEAT_RECORD => last_beat = now_ms(),
                        ANNOUNCE_RECORD => {
                            if let Some(slot) = announced.iter().position(|s| *s == 0) {
                                announced[slot] = seq;
                                announced_leases[slot] = lease;
                            }
                        }
                        WATCH_RECORD | WITHDRAW_RECORD => {
                            if let Some(slot) = announced.iter().position(|s| *s == seq) {
                                announced[slot] = 0;
                            }
                            if kind == WATCH_RECORD {
                                if let Some(slot) = pids.iter().position(|p| *p == 0) {
                                    pids[slot] = pid;
                                    leases[slot] = lease;
                                }
                            }
                        }
                        RELEASE_RECORD => {
                            if let Some(slot) = pids.iter().position(|p| *p == pid) {
                                pids[slot] = 0;
                            }
                        }
                        _ => {}
                    }
                }
            }
            let silent = now_ms().saturating_sub(last_beat);
            for slot in 0..SLOTS {
                if pids[slot] > 0 && silent > leases[slot] {
                    libc::kill(-pids[slot], libc::SIGKILL);
                    pids[slot] = 0;
                }
            }
            // A node frozen between a spawn and its report: the child is found by its name. One
            // search: a lease after the node's last beat, a child it spawned has long exec'd,
            // and the watched children's leases must not wait on a search that finds nothing.
            let mut overdue = [0u32; ANNOUNCED_SLOTS];
            for slot in 0..ANNOUNCED_SLOTS {
                if announced[slot] != 0 && silent > announced_leases[slot] {
                    overdue[slot] = announced[slot];
                    announced[slot] = 0;
                }
            }
            super::announced::find_all(node, &overdue, 1, 0, kill_group);
        }
    }
}

/// Kills the group `pid` leads, and `pid` itself should it not lead one yet.
#[cfg(target_os = "linux")]
fn kill_group(pid: i32) {
    // SAFETY: kill(2) touches no memory.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
        libc::kill(pid, libc::SIGKILL);
    }
}

/// Milliseconds of the monotonic clock (async-signal-safe).
#[cfg(target_os = "linux")]
fn now_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    u64::try_from(ts.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1000)
        .saturating_add(u64::try_from(ts.tv_nsec).unwrap_or(0) / 1_000_000)
}
