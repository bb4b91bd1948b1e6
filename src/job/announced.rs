//! Finding the child of a spawn the node announced to its keeper but did not live to report.
//!
//! A script child is spawned through posix_spawn (a vfork-like clone: its cost does not grow with
//! the node's memory), so the node learns its pid only once it runs. Before the spawn the node
//! announces it to the keeper and puts `SHARDCRON_SPAWN={node pid}.{seq}` in the child's
//! environment; after it, the node reports the pid. A node killed between the two leaves the
//! keeper an announcement without a pid: when its pipe closes, the keeper reads every process's
//! `/proc/{pid}/environ` for that entry and kills the group of the process that has it.
//!
//! The pipe closes only once every process holding its write end is gone or has exec'd (the end
//! is close-on-exec, and a spawned child holds a copy until its exec), so by then an announced
//! child shows its own environment. Async-signal-safe: only `open`, `getdents64`, `read` and
//! `close` on stack buffers, as the keeper (a fork of a threaded process) requires.

/// The environment variable that names a spawn.
pub(super) const SPAWN_ENV: &str = "SHARDCRON_SPAWN";

/// The longest entry compared: `SHARDCRON_SPAWN=` and two decimal u32s with a dot.
const ENTRY_MAX: usize = 48;

/// Calls `found(pid)` for every process whose environment names a spawn of node `node` whose
/// sequence number is in `pending` (zeros are free slots). Linux only; async-signal-safe.
#[cfg(target_os = "linux")]
pub(super) fn find(node: i32, pending: &[u32], mut found: impl FnMut(i32)) {
    if pending.iter().all(|s| *s == 0) {
        return;
    }
    // SAFETY: open, getdents64 and close on a buffer of ours.
    let dir = unsafe {
        libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir < 0 {
        return;
    }
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: getdents64 writes at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len()) };
        let Ok(n) = usize::try_from(n) else { break };
        if n == 0 {
            break;
        }
        let mut at = 0;
        while at + 19 < n {
            // struct linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name.
            let reclen = usize::from(u16::from_ne_bytes([buf[at + 16], buf[at + 17]]));
            if reclen == 0 || at + reclen > n {
                break;
            }
            if let Some(pid) = pid_of(&buf[at + 19..at + reclen]) {
                if names_pending(pid, node, pending) {
                    found(pid);
                }
            }
            at += reclen;
        }
    }
    // SAFETY: our descriptor.
    unsafe { libc::close(dir) };
}

/// The pid a `/proc` entry's NUL-terminated name spells, when it is all digits.
fn pid_of(name: &[u8]) -> Option<i32> {
    let mut pid: i32 = 0;
    let mut digits = 0;
    for &b in name.iter().take_while(|b| **b != 0) {
        if !b.is_ascii_digit() {
            return None;
        }
        pid = pid.checked_mul(10)?.checked_add(i32::from(b - b'0'))?;
        digits += 1;
    }
    (digits > 0).then_some(pid)
}

/// Whether `/proc/{pid}/environ` holds `SHARDCRON_SPAWN={node}.{seq}` with `seq` in `pending`.
#[cfg(target_os = "linux")]
fn names_pending(pid: i32, node: i32, pending: &[u32]) -> bool {
    let mut path = [0u8; 32];
    let mut len = 0;
    for part in [
        &b"/proc/"[..],
        itoa(pid as u32, &mut [0u8; 10]),
        b"/environ",
    ] {
        path[len..len + part.len()].copy_from_slice(part);
        len += part.len();
    }
    // SAFETY: `path` is NUL-terminated (zeroed past `len`); open, read, close on our buffers.
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return false;
    }
    let mut entry = [0u8; ENTRY_MAX];
    let mut entry_len = 0usize; // past ENTRY_MAX: too long to be ours
    let mut chunk = [0u8; 4096];
    let mut hit = false;
    'read: loop {
        // SAFETY: read writes at most `chunk.len()` bytes into `chunk`.
        let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len()) };
        let Ok(n) = usize::try_from(n) else { break };
        if n == 0 {
            break;
        }
        for &b in &chunk[..n] {
            if b == 0 {
                if entry_len <= ENTRY_MAX && is_pending(&entry[..entry_len], node, pending) {
                    hit = true;
                    break 'read;
                }
                entry_len = 0;
            } else {
                if entry_len < ENTRY_MAX {
                    entry[entry_len] = b;
                }
                entry_len = entry_len.saturating_add(1);
            }
        }
    }
    // SAFETY: our descriptor.
    unsafe { libc::close(fd) };
    hit
}

/// Whether one environment entry is `SHARDCRON_SPAWN={node}.{seq}` with `seq` in `pending`.
fn is_pending(entry: &[u8], node: i32, pending: &[u32]) -> bool {
    let Some(value) = entry
        .strip_prefix(SPAWN_ENV.as_bytes())
        .and_then(|rest| rest.strip_prefix(b"="))
    else {
        return false;
    };
    let mut digits = [0u8; 10];
    let node_digits = itoa(node as u32, &mut digits);
    let Some(seq) = value
        .strip_prefix(node_digits)
        .and_then(|rest| rest.strip_prefix(b"."))
    else {
        return false;
    };
    let mut n: u32 = 0;
    for &b in seq {
        if !b.is_ascii_digit() {
            return false;
        }
        let Some(next) = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u32::from(b - b'0')))
        else {
            return false;
        };
        n = next;
    }
    !seq.is_empty() && n != 0 && pending.contains(&n)
}

/// `n` in decimal, written into the end of `buf`; the digits' slice.
fn itoa(mut n: u32, buf: &mut [u8; 10]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn an_entry_names_a_pending_spawn_only_with_this_nodes_pid_and_a_pending_sequence_number() {
        assert!(is_pending(b"SHARDCRON_SPAWN=42.7", 42, &[0, 7]));
        assert!(!is_pending(b"SHARDCRON_SPAWN=42.7", 43, &[7]));
        assert!(!is_pending(b"SHARDCRON_SPAWN=42.8", 42, &[7]));
        assert!(!is_pending(b"SHARDCRON_SPAWN=42.", 42, &[7]));
        assert!(!is_pending(b"SHARDCRON_SPAWN=42.0", 42, &[0]));
        assert!(!is_pending(b"SHARDCRON_SPAWN=42.7x", 42, &[7]));
        assert!(!is_pending(b"SHARDCRON_SPAWNX=42.7", 42, &[7]));
        assert!(!is_pending(b"SHARDCRON_SPAWN=42.99999999999", 42, &[7]));
    }

    #[test]
    fn a_running_child_is_found_by_the_spawn_its_environment_names_and_no_other() {
        let me = std::process::id() as i32;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env(SPAWN_ENV, format!("{me}.{}", 9_000_001))
            .spawn()
            .expect("spawning sleep");
        let pid = child.id() as i32;
        let mut seen = Vec::new();
        find(me, &[0, 9_000_001], |p| seen.push(p));
        let mut other = Vec::new();
        find(me, &[9_000_002], |p| other.push(p));
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(seen, vec![pid]);
        assert!(other.is_empty(), "{other:?}");
    }
}
