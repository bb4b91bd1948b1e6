//! Finding the child of a spawn the node announced to its keeper but did not live to report.
//!
//! A script child is spawned through posix_spawn (a vfork-like clone: its cost does not grow with
//! the node's memory), so the node learns its pid only once it runs. Before the spawn the node
//! announces it to the keeper and puts `SHARDCRON_SPAWN={node pid}.{seq}` in the child's
//! environment; after it, the node reports the pid. A node killed between the two leaves the
//! keeper an announcement without a pid: when its pipe closes, the keeper reads every process's
//! `/proc/{pid}/environ` for that entry and kills the group of the process that has it.
//!
//! The pipe closes only once every process holding its write end is gone or inside its exec (the
//! end is close-on-exec, and a spawned child holds a copy until its exec); a child caught between
//! that close and the layout of its new environment shows an empty one, so the search looks
//! again, a few ms apart, until every pending spawn's child was found or 200 ms went by.
//! Async-signal-safe: only `open`, `getdents64`, `read`, `close` and `poll` on stack buffers, as
//! the keeper (a fork of a threaded process) requires.

/// The environment variable that names a spawn.
pub(super) const SPAWN_ENV: &str = "SHARDCRON_SPAWN";

/// The longest entry compared: `SHARDCRON_SPAWN=` and two decimal u32s with a dot.
const ENTRY_MAX: usize = 48;

/// The most spawns [`find_all`] looks for at once.
const MAX_PENDING: usize = 256;

/// Calls `found(pid)` for every process whose environment names a spawn of node `node` whose
/// sequence number is in `pending` (zeros are free slots; at most [`MAX_PENDING`] are read), and
/// searches again, `pause_ms` apart and at most `tries` times in all, while a pending spawn's
/// child was not found: a child caught inside its exec (its old memory released, which is when
/// its descriptors close, and its new environment not yet laid out) shows an empty environment
/// for a moment. Linux only; async-signal-safe.
#[cfg(target_os = "linux")]
pub(super) fn find_all(
    node: i32,
    pending: &[u32],
    tries: u32,
    pause_ms: i32,
    mut found: impl FnMut(i32),
) {
    let mut left = [0u32; MAX_PENDING];
    for (slot, seq) in left.iter_mut().zip(pending) {
        *slot = *seq;
    }
    for attempt in 0..tries {
        let mut hit = [0u32; MAX_PENDING];
        let mut hits = 0;
        find(node, &left, |pid, seq| {
            found(pid);
            if hits < MAX_PENDING {
                hit[hits] = seq;
                hits += 1;
            }
        });
        for seq in &hit[..hits] {
            for slot in left.iter_mut().filter(|s| *s == seq) {
                *slot = 0;
            }
        }
        if left.iter().all(|s| *s == 0) || attempt + 1 == tries {
            return;
        }
        // SAFETY: poll with no descriptors only waits; async-signal-safe.
        unsafe { libc::poll(std::ptr::null_mut(), 0, pause_ms) };
    }
}

/// One pass of [`find_all`]: `found(pid, seq)` for every process naming a pending spawn.
#[cfg(target_os = "linux")]
fn find(node: i32, pending: &[u32], mut found: impl FnMut(i32, u32)) {
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
                if let Some(seq) = names_pending(pid, node, pending) {
                    found(pid, seq);
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

/// The `seq` of `SHARDCRON_SPAWN={node}.{seq}` in `/proc/{pid}/environ`, when it is in `pending`.
#[cfg(target_os = "linux")]
fn names_pending(pid: i32, node: i32, pending: &[u32]) -> Option<u32> {
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
        return None;
    }
    let mut entry = [0u8; ENTRY_MAX];
    let mut entry_len = 0usize; // past ENTRY_MAX: too long to be ours
    let mut chunk = [0u8; 4096];
    let mut hit = None;
    'read: loop {
        // SAFETY: read writes at most `chunk.len()` bytes into `chunk`.
        let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len()) };
        let Ok(n) = usize::try_from(n) else { break };
        if n == 0 {
            break;
        }
        for &b in &chunk[..n] {
            if b == 0 {
                if entry_len <= ENTRY_MAX {
                    hit = pending_seq(&entry[..entry_len], node, pending);
                    if hit.is_some() {
                        break 'read;
                    }
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

/// The `seq` of one environment entry `SHARDCRON_SPAWN={node}.{seq}`, when it is in `pending`.
fn pending_seq(entry: &[u8], node: i32, pending: &[u32]) -> Option<u32> {
    let value = entry
        .strip_prefix(SPAWN_ENV.as_bytes())
        .and_then(|rest| rest.strip_prefix(b"="))?;
    let mut digits = [0u8; 10];
    let node_digits = itoa(node as u32, &mut digits);
    let seq = value
        .strip_prefix(node_digits)
        .and_then(|rest| rest.strip_prefix(b"."))?;
    let mut n: u32 = 0;
    for &b in seq {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u32::from(b - b'0'))?;
    }
    (!seq.is_empty() && n != 0 && pending.contains(&n)).then_some(n)
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
        assert_eq!(pending_seq(b"SHARDCRON_SPAWN=42.7", 42, &[0, 7]), Some(7));
        assert_eq!(pending_seq(b"SHARDCRON_SPAWN=42.7", 43, &[7]), None);
        assert_eq!(pending_seq(b"SHARDCRON_SPAWN=42.8", 42, &[7]), None);
        assert_eq!(pending_seq(b"SHARDCRON_SPAWN=42.", 42, &[7]), None);
        assert_eq!(pending_seq(b"SHARDCRON_SPAWN=42.0", 42, &[0]), None);
        assert_eq!(pending_seq(b"SHARDCRON_SPAWN=42.7x", 42, &[7]), None);
        assert_eq!(pending_seq(b"SHARDCRON_SPAWNX=42.7", 42, &[7]), None);
        assert_eq!(
            pending_seq(b"SHARDCRON_SPAWN=42.99999999999", 42, &[7]),
            None
        );
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
        // Searched for as the keeper does: a child caught inside its exec is looked for again.
        find_all(me, &[0, 9_000_001], 40, 5, |p| seen.push(p));
        let mut other = Vec::new();
        find_all(me, &[9_000_002], 2, 5, |p| other.push(p));
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(seen, vec![pid]);
        assert!(other.is_empty(), "{other:?}");
    }
}
